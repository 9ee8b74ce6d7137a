"""One LIST-based cycle (a CronJob, ``--once``), its log and exit code, and the stop signals.

``run_once`` exits 0 when every CR was handled, 1 when any failed, 2 when the cycle could not run.
SIGTERM/SIGINT set the stop event: a cycle ends after the current CR; the event-driven mode
(controller.py) drains its workers' current CRs and releases its Lease.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from ..decisions.vocabulary import WRITES, Action
from .cycle import CycleReport, Reconciler

log = logging.getLogger("memcached_gitops.reconciler")


def log_report(report: CycleReport, dry_run: bool = False) -> None:
    """The cycle's drift and failures, and its summary line; a dry run's corrections are the ones it would make."""
    for o in report.outcomes:
        if o.action in WRITES:
            for d in o.drift:
                log.info("drift %s/%s %s", o.namespace, o.name, d.describe())
        elif o.action is Action.DRIFTED:  # --detect-only: the same lines, said as left as they are
            for d in o.drift:
                log.warning("drift %s/%s %s (left uncorrected: --detect-only)", o.namespace, o.name, d.describe())
        elif o.action not in (Action.UNCHANGED, Action.OBSERVED, Action.SUSPENDED):  # observed: the cycle logged what differs
            log.warning("%s %s/%s: %s", o.action, o.namespace, o.name, o.error)
    log.info("cycle done in %.3fs: %d CRs, %d %s, %d failed%s", report.duration, len(report.outcomes),
             len(report.drifted), "to correct (dry run)" if dry_run else "corrected", len(report.failed),
             "" if report.complete else f" (incomplete: {report.error})")


def exit_code(report: CycleReport, dry_run: bool = False) -> int:
    if not report.complete:
        return 2
    if dry_run:  # a CR it could not judge is an error, not "no drift"
        return 2 if report.failed else 1 if report.drifted else 0
    return 1 if report.failed else 0


def install_stop_handlers(stop: threading.Event) -> None:
    def handler(signum: int, _frame: Any) -> None:
        log.info("received %s: finishing the current object", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run_once(reconciler: Reconciler) -> int:
    report = reconciler.run_cycle()
    log_report(report, reconciler.options.dry_run)
    return exit_code(report, reconciler.options.dry_run)
