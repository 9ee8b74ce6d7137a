"""The two ways to run: one cycle (a CronJob) or cycles on an interval (a Deployment).

``run_once`` exits 0 when every CR was handled, 1 when any failed, 2 when the cycle could not run.
``run_forever`` holds a Lease when asked (two replicas never both write), waits ``interval`` with
jitter between cycles, and on SIGTERM/SIGINT finishes the current CR and returns 0. A cycle never
runs twice at once: one thread runs them, in turn.
"""

from __future__ import annotations

import logging
import random
import signal
import threading
from typing import Any

from .cycle import CycleReport, Reconciler
from .leader import LeaderElector
from .metrics import Metrics

log = logging.getLogger("memcached_gitops.reconciler")


def log_report(report: CycleReport) -> None:
    for o in report.outcomes:
        if o.action in ("created", "corrected", "adopted"):
            for d in o.drift:
                log.info("drift %s/%s %s", o.namespace, o.name, d.describe())
        elif o.action not in ("unchanged", "observed"):  # observed: the cycle logged what differs
            log.warning("%s %s/%s: %s", o.action, o.namespace, o.name, o.error)
    log.info("cycle done in %.3fs: %d CRs, %d corrected, %d failed%s", report.duration, len(report.outcomes),
             len(report.drifted), len(report.failed), "" if report.complete else f" (incomplete: {report.error})")


def exit_code(report: CycleReport, dry_run: bool = False) -> int:
    if not report.complete:
        return 2
    if dry_run:
        return 1 if report.drifted else 0
    return 1 if report.failed else 0


def install_stop_handlers(stop: threading.Event) -> None:
    def handler(signum: int, _frame: Any) -> None:
        log.info("received %s: finishing the current object", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run_once(reconciler: Reconciler) -> int:
    report = reconciler.run_cycle()
    log_report(report)
    return exit_code(report, reconciler.options.dry_run)


def run_forever(reconciler: Reconciler, interval: float, metrics: Metrics, elector: LeaderElector | None = None,
                jitter: float = 0.1, max_cycles: int | None = None) -> int:
    """Cycles until ``reconciler.stop`` is set; returns 0."""
    stop = reconciler.stop
    cycles = 0
    try:
        while not stop.is_set():
            leading = elector.try_acquire_or_renew() if elector else True
            metrics.leader = leading
            if leading:
                report = reconciler.run_cycle()
                log_report(report)
                metrics.observe_cycle(report)
                metrics.ready = metrics.ready or report.complete
            else:
                metrics.ready = True  # a standby replica is healthy and ready to take over
            cycles += 1
            if max_cycles is not None and cycles >= max_cycles:
                break
            stop.wait(interval * (1 + random.uniform(-jitter, jitter)))
    finally:
        if elector:
            elector.release()
    return 0
