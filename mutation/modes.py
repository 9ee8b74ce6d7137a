"""Mutation testing of the modes and outputs: bugs that show only in a mode or an output a test starts.

Each mutant is a small plausible edit between components (a standby's scrapes, the order of a
shutdown, a clock mixed into a metric, a path form of a client, a certificate's reload, an
option's form), planted alone in the work tree; the tests named beside it are run, and the file is
restored from the text read:

    python mutation/modes.py            # every mutant; prints each verdict and the score
    python mutation/modes.py NAME ...   # the named ones

It refuses to run when a file it would edit has uncommitted changes.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAIN = "reconciler/orchestration/main.py"
CONTROLLER = "reconciler/orchestration/controller.py"
CYCLE = "reconciler/orchestration/cycle.py"
METRICS = "reconciler/orchestration/metrics.py"
SHARDS = "reconciler/client/shards.py"
MODES = "tests/test_modes.py"

#: name -> (file, text, its replacement, the tests that must catch it)
MUTANTS: dict[str, tuple[str, str, str, list[str]]] = {
    "standby: the metrics reviews through the client gated by leadership or the shard hold": (
        MAIN, "guard=bearer_guard(AccessReviews(reviewer))", "guard=bearer_guard(AccessReviews(api))",
        [MODES, "-k", "leader_and or three_shards"]),
    "shutdown: the Lease released before the workers drain": (
        CONTROLLER, "        self.queue.shut_down()\n        self.queue.wait_idle(timeout=30)",
        "        if self.elector is not None:\n            self.elector.release()\n"
        "        self.queue.shut_down()\n        self.queue.wait_idle(timeout=30)",
        [MODES, "-k", "leader_and"]),
    "shutdown: the process returns without draining the workers": (
        CONTROLLER, "        self.queue.wait_idle(timeout=30)  # the current CR of each worker is finished", "        pass",
        [MODES, "-k", "single"]),
    "shards: a reconcile in flight at SIGTERM refused its remaining writes": (
        SHARDS, "            if self.stopping:  # leaving", "            if False:  # leaving",
        [MODES, "-k", "three_shards"]),
    "metric: the correction's finish time from the wall clock": (
        CYCLE, "result.deployment, result.applied_at = live, time.monotonic()", "result.deployment, result.applied_at = live, time.time()",
        [MODES, "-k", "single"]),
    "metric: a shard hand-over's time from the wall clock": (
        SHARDS, "took = self.monotonic() - self.changed_at", "took = time.time() - self.changed_at",
        [MODES, "-k", "three_shards"]),
    "metric: the reconcile error counter not started at 0": (
        METRICS, "        self.reconcile_errors.labels(CONTROLLER)\n", "",
        [MODES, "-k", "single"]),
    "hook: a root kustomization named alone built in the directory ''": (
        "foundation/files.py", 'folder = os.path.dirname(f.path) or "."', "folder = os.path.dirname(f.path)",
        ["tests/test_path_forms.py"]),
    "certificate: the files' times recorded before the pair loads": (
        "reconciler/orchestration/tls.py",
        "        stamp = (cert.stat().st_mtime, key.stat().st_mtime)\n"
        "        context = server_context(cert.read_bytes(), key.read_bytes())\n        self.stamp = stamp",
        "        self.stamp = (cert.stat().st_mtime, key.stat().st_mtime)\n"
        "        context = server_context(cert.read_bytes(), key.read_bytes())",
        ["tests/test_tls_reload.py"]),
    "options: only --options checked against the allow-list": (
        "foundation/kustomize.py", 'takes = ALLOWED_FLAGS.get(flag) if arg.startswith("--") else None',
        'takes = ALLOWED_FLAGS.get(flag) if arg.startswith("--") else False',
        ["tests/test_option_forms.py"]),
}


def run(name: str) -> bool:
    """Plant one mutant, run its tests; True when they caught it."""
    path, old, new, tests = MUTANTS[name]
    file = ROOT / path
    text = file.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{name}: the text to mutate is not in {path} once; update mutation/modes.py")
    file.write_text(text.replace(old, new))
    try:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                              capture_output=True, text=True, timeout=1800)
        failed = [line.split("::", 1)[1].split(" ")[0] for line in proc.stdout.splitlines() if line.startswith("FAILED")]
        caught = proc.returncode != 0
        print(f"{'caught ' if caught else 'SURVIVED'}  {name}  ({time.monotonic() - started:.0f} s)"
              + (f": {', '.join(failed)}" if failed else ""), flush=True)
        return caught
    finally:
        file.write_text(text)


def main(names: list[str]) -> int:
    names = names or list(MUTANTS)
    dirty = subprocess.run(["git", "diff", "--quiet", "--", *{MUTANTS[n][0] for n in names}], cwd=ROOT).returncode
    if dirty:
        raise SystemExit("mutation/modes.py: commit or stash the changes of the files it mutates first")
    caught = sum(run(n) for n in names)
    print(f"modes: {caught} of {len(names)} mutants caught ({100 * caught / len(names):.0f}%)")
    return 0 if caught == len(names) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
