"""Mutation testing across modules: plausible edits at the seams where components meet.

mutmut (mutation/run.py) mutates one expression at a time inside one module; the bugs that survive
a module's own tests are of another kind: two statements of one thread in the other order, a time
or a version exchanged between two modules from the wrong source. Each mutant here is such an edit,
planted alone in the work tree, the seam tests run, and the file restored:

    python mutation/seams.py            # every mutant; prints each verdict and the score
    python mutation/seams.py NAME ...   # the named ones

It refuses to run when a file it would edit has uncommitted changes (it restores from the text it
read, never from git).
"""

from __future__ import annotations

import pathlib
import sys

CONTROLLER = "reconciler/orchestration/controller.py"
SHARE = "reconciler/orchestration/share.py"
INFORMER = "reconciler/client/informer.py"
QUEUE = "reconciler/client/workqueue.py"
TESTS = ["tests/reconciler/orchestration/test_interleavings.py", "tests/reconciler/orchestration/test_seams.py",
         "tests/reconciler/orchestration/test_controller_in_process.py", "tests/reconciler/orchestration/test_controller.py",
         "tests/reconciler/orchestration/test_shards_controller.py"]

WATCH_STORE_THEN_TELL = """            if type_ == "DELETED":
                old = self.store.remove(key_of(obj))
            else:
                old = self.store.put(obj)
            self.resource_version = version or self.resource_version
            self._failures = 0
            if self.store.keep is None or old is not None or self.store.holds(key_of(obj)):
                self._emit(type_, obj, old, arrived)  # (another replica's share: nothing to tell)
"""

#: name -> (file, text, its replacement): each a statement order or a clock/version source changed.
MUTANTS: dict[str, tuple[str, str, str]] = {
    "leadership: queue the cache before saying we lead": (
        CONTROLLER,
        "        self.leading.set()\n        for key in self.caches.cr_keys():\n            self.queue.add(key)\n",
        "        for key in self.caches.cr_keys():\n            self.queue.add(key)\n        self.leading.set()\n"),
    "leadership: a worker reads leadership before it takes a key": (
        CONTROLLER,
        "            item = self.queue.get()\n            if item is None:\n                return\n"
        "            key, arrived = item\n            started = self.clock.monotonic()\n"
        "            self.metrics.busy(1)\n            try:\n                if not self.leading.is_set():",
        "            leading = self.leading.is_set()\n            item = self.queue.get()\n"
        "            if item is None:\n                return\n            key, arrived = item\n"
        "            started = self.clock.monotonic()\n            self.metrics.busy(1)\n"
        "            try:\n                if not leading:"),
    "clocks: a fight's instants from the wall clock": (
        CONTROLLER,
        "        key = key_of(cr)\n        now = self.clock.monotonic()",
        "        key = key_of(cr)\n        now = type(self.clock.monotonic())(self.clock.wall().seconds)"),
    "clocks: a delayed key's deadline from the wall clock": (
        QUEUE,
        "heapq.heappush(self._delayed, (self.clock() + delay,",
        "heapq.heappush(self._delayed, (__import__(\"time\").time() + delay,"),
    "clocks: the next servedBy slot from the wall clock, its delay from the monotonic one": (
        SHARE,
        "            self.next_served_by = max(now + 1.0,",
        "            self.next_served_by = max(Monotonic(self.clock.wall().seconds) + 1.0,"),
    "start-up: workers before the caches have synced": (
        CONTROLLER,
        "        all_informers = self.caches.all()\n",
        "        all_informers = self.caches.all()\n"
        "        for n in range(self.settings.workers):\n"
        "            threading.Thread(target=self._work, daemon=True, name=f\"early-worker-{n}\").start()\n"),
    "start-up: the sync waits for the CRs and Deployments only": (
        CONTROLLER,
        "        all_informers = self.caches.all()\n        deadline",
        "        all_informers = [i for k in (\"Memcached\", \"Deployment\") for i in self.informers[k]]\n        deadline"),
    "informer: the handler told before the store holds the event": (
        INFORMER, WATCH_STORE_THEN_TELL,
        """            previous = self.store.get(key_of(obj))
            self._emit(type_, obj, previous, arrived)
            if type_ == "DELETED":
                old = self.store.remove(key_of(obj))
            else:
                old = self.store.put(obj)
            self.resource_version = version or self.resource_version
            self._failures = 0
"""),
    "informer: a deletion told before it is removed": (
        INFORMER, WATCH_STORE_THEN_TELL,
        """            if type_ == "DELETED":
                self._emit(type_, obj, self.store.get(key_of(obj)), arrived)
                self.store.remove(key_of(obj))
                continue
            old = self.store.put(obj)
            self.resource_version = version or self.resource_version
            self._failures = 0
            if self.store.keep is None or old is not None or self.store.holds(key_of(obj)):
                self._emit(type_, obj, old, arrived)  # (another replica's share: nothing to tell)
"""),
    "write-through: our apply's answer not put into the cache": (
        CONTROLLER,
        "        if outcome.deployment is not None:\n            caches.put(DEPLOYMENTS.kind, outcome.deployment)\n",
        "        if outcome.deployment is not None:\n"),
}


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from planted import main

    sys.exit(main(sys.argv[1:], {n: (*m, TESTS) for n, m in MUTANTS.items()}, "mutation/seams.py", "seams"))
