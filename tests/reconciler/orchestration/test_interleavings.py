"""Orders of the controller's threads explored by hypothesis, with a deterministic scheduler.

The real Controller runs with its real workers (``Controller._work``), its real queue and stores;
an informer thread delivers the CRs' events (the store first, then the handler, as informer.py does)
and a leadership thread makes the replica the leader (``started_leading``), loses it and takes it
again. Every thread stops at named points (before a queue add, a take, a done, saying we lead; inside
the per-CR step, between its read of the cache and its end; between an event's store write and its
handler) and waits there until the scheduler lets it go; hypothesis chooses, at each step, which
waiting thread goes next, so each example is one interleaving, seeded and reproducible
(``pytest --hypothesis-seed=N``), and a failure shrinks to a short one.

The invariant, checked when no thread can move any more (every worker waits on an empty queue):
**no update is lost**: for every CR, a reconcile that saw its latest version ran after that version
was stored, and nothing is still queued or held. A key dropped while leadership changes hands, a
worker that acts on leadership read before it took its key, a handler told before the store holds
its event, a key let go without being queued again after an event that came meanwhile: each is a
lost update in some order, which the search finds (mutation/seams.py plants such edits).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.decisions.vocabulary import Action
from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
from memcached_gitops.reconciler.orchestration.cycle import CROutcome

from tests.support.unwired import cr, make, store

KEYS = ("a", "b")
#: a step that does not come back within this is a deadlock or a thread stuck outside the points
BOUND = 10.0


class Scheduler:
    """Threads registered here run one at a time, each up to its next point, in the order ``choose`` gives."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.parked: dict[str, tuple[str, threading.Event]] = {}
        self.live: set[str] = set()
        self.trace: list[str] = []
        self.opened = False  # the end: every point lets every thread through

    def start(self, name: str, target: Any) -> threading.Thread:
        def body() -> None:
            try:
                self.point("start")
                target()
            finally:
                with self.cv:
                    self.live.discard(name)
                    self.cv.notify_all()

        with self.cv:
            self.live.add(name)
        thread = threading.Thread(target=body, name=name, daemon=True)
        thread.start()
        return thread

    def point(self, where: str) -> None:
        """Wait here until the scheduler lets this thread go (other threads pass through)."""
        me = threading.current_thread().name
        go = threading.Event()
        with self.cv:
            if me not in self.live or self.opened:
                return
            self.parked[me] = (where, go)
            self.cv.notify_all()
        if not go.wait(BOUND * 3):
            raise AssertionError(f"{me} was never let go from {where}")

    def settle(self) -> None:
        """Until every live thread waits at a point."""
        with self.cv:
            if not self.cv.wait_for(lambda: self.live <= set(self.parked), BOUND):
                raise AssertionError(f"threads neither at a point nor ended: {sorted(self.live - set(self.parked))}; "
                                     f"trace {self.trace[-20:]}")

    def open(self) -> None:
        """Let every thread run freely from now on (to end them)."""
        with self.cv:
            self.opened = True
            parked, self.parked = self.parked, {}
        for _, go in parked.values():
            go.set()

    def release(self, name: str) -> None:
        with self.cv:
            where, go = self.parked.pop(name)
        self.trace.append(f"{name}@{where}")
        go.set()


class PointedEvent(threading.Event):
    """``leading``: saying we lead is a point of its own."""

    def __init__(self, scheduler: Scheduler) -> None:
        super().__init__()
        self.scheduler = scheduler

    def set(self) -> None:
        self.scheduler.point("lead")
        super().set()


def instrumented(scheduler: Scheduler) -> tuple[Controller, list[tuple[str, str]]]:
    """The controller with points in its queue and its per-CR step; what each reconcile saw."""
    c = make(settings=Settings(workers=2))
    c.leading = PointedEvent(scheduler)  # not leading yet
    seen: list[tuple[str, str]] = []
    queue = c.queue
    real_add, real_get, real_done = queue.add, queue.get, queue.done

    def add(key: Any, arrived: float | None = None) -> None:
        scheduler.point("add")
        real_add(key, arrived)

    def get(timeout: float | None = None) -> Any:
        while True:
            scheduler.point("get")
            item = real_get(timeout=0)
            if item is not None or queue.shutting_down:
                return item

    def done(key: Any) -> None:
        scheduler.point("done")
        real_done(key)

    def step(cr: dict[str, Any], *args: Any, **kwargs: Any) -> CROutcome:
        meta = cr["metadata"]
        scheduler.point("reconciling")  # read, not finished: events may come now
        seen.append((meta["name"], meta["resourceVersion"]))
        return CROutcome(meta["namespace"], meta["name"], Action.UNCHANGED)

    queue.add, queue.get, queue.done = add, get, done  # type: ignore[method-assign]
    c.reconciler.reconcile_cr = step  # type: ignore[method-assign]
    return c, seen


def can_move(c: Controller, scheduler: Scheduler, name: str) -> bool:
    """A worker waiting to take a key can move only when one is queued (it would wait in the queue)."""
    where, _ = scheduler.parked[name]
    return not (where == "get" and len(c.queue) == 0 and not c.queue.shutting_down)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.lists(st.sampled_from(KEYS), min_size=1, max_size=4), st.booleans())
def test_no_update_is_lost_in_any_order_of_events_leadership_and_workers(data: st.DataObject, events: list[str],
                                                                         flap: bool) -> None:
    scheduler = Scheduler()
    c, seen = instrumented(scheduler)
    versions = dict.fromkeys(KEYS, 1)
    store(c, "Memcached", *(cr(k, rv="1") for k in KEYS))
    memcacheds = c.informers["Memcached"][0].store

    def informer() -> None:
        for key in events:
            old = memcacheds.get(("default", key))
            versions[key] += 1
            new = cr(key, rv=str(versions[key]))
            memcacheds.put(new)
            scheduler.point("tell")  # stored, the handler not told yet
            c.on_event("Memcached", "MODIFIED", new, old, time.monotonic())

    def leadership() -> None:
        c.started_leading()
        if flap:
            c.stopped_leading()
            scheduler.point("between terms")
            c.started_leading()

    threads = [scheduler.start(f"worker-{n}", c._work) for n in range(2)]
    threads += [scheduler.start("informer", informer), scheduler.start("leadership", leadership)]
    try:
        for _ in range(400):
            scheduler.settle()
            movable = sorted(name for name in scheduler.parked if can_move(c, scheduler, name))
            if not movable:
                break
            scheduler.release(data.draw(st.sampled_from(movable), label="next"))
        else:
            raise AssertionError(f"no quiet state after 400 steps: {scheduler.trace[-20:]}")
        assert c.leading.is_set()
        for key in KEYS:
            latest = str(versions[key])
            assert (key, latest) in seen, f"{key} at version {latest} was never reconciled: order {scheduler.trace}"
        assert len(c.queue) == 0 and c.queue.wait_idle(0), "nothing is left queued or held"
    finally:
        c.queue.shut_down()
        scheduler.open()
        for t in threads:
            t.join(BOUND)
            assert not t.is_alive(), f"{t.name} did not end"
