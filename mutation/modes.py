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
import sys

MAIN = "reconciler/orchestration/main.py"
CONTROLLER = "reconciler/orchestration/controller.py"
CYCLE = "reconciler/orchestration/cycle.py"
METRICS = "reconciler/orchestration/metrics.py"
SHARDS = "reconciler/client/shards.py"
MODES = "tests/reconciler/orchestration/test_modes.py"

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
        CYCLE, "result.deployment, result.applied_at = live, self.process_clock.monotonic().seconds",
        "result.deployment, result.applied_at = live, self.process_clock.wall().seconds",
        [MODES, "-k", "single"]),
    "metric: a shard hand-over's time from the wall clock": (
        SHARDS, "took = self.monotonic() - self.changed_at", "took = time.time() - self.changed_at",
        [MODES, "-k", "three_shards"]),
    "metric: the reconcile error counter not started at 0": (
        METRICS, "        self.reconcile_errors.labels(CONTROLLER)\n", "",
        [MODES, "-k", "single"]),
    # (the earlier mutant of this seam, a root kustomization named alone built in the directory '', is
    # equivalent since builds take the folder's absolute path: abspath('') is the root)
    "hook: a folder named like a git URL handed to kustomize as written": (
        "foundation/kustomize.py", "command = kustomize_command() + [*options, os.path.abspath(path)]",
        "command = kustomize_command() + [*options, path]",
        ["tests/cli/test_path_forms.py", "tests/foundation/test_kustomize_confinement.py", "-k", "git_url or root"]),
    "certificate: the files' times recorded before the pair loads": (
        "reconciler/orchestration/tls.py",
        "        stamp = (cert.stat().st_mtime, key.stat().st_mtime)\n"
        "        context = server_context(cert.read_bytes(), key.read_bytes())\n        self.stamp = stamp",
        "        self.stamp = (cert.stat().st_mtime, key.stat().st_mtime)\n"
        "        context = server_context(cert.read_bytes(), key.read_bytes())",
        ["tests/reconciler/orchestration/test_tls_reload.py"]),
    "options: only --options checked against the allow-list": (
        "foundation/kustomize.py", 'takes = ALLOWED_FLAGS.get(flag) if arg.startswith("--") else None',
        'takes = ALLOWED_FLAGS.get(flag) if arg.startswith("--") else False',
        ["tests/cli/test_option_forms.py"]),
}


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from planted import main

    sys.exit(main(sys.argv[1:], MUTANTS, "mutation/modes.py", "modes"))
