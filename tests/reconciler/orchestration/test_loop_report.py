"""What one cycle reports, in-process (the command's runs in test_reconciler.py and test_modes.py are
subprocesses): the cycle's summary line and exit code (loop.py), and the metrics one outcome counts
(metrics.py), for a cycle that writes and for a dry run that only says what it would write."""

from __future__ import annotations

import logging
import os
import signal
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.orchestration.loop import run_once
from memcached_gitops.reconciler.orchestration.metrics import Metrics

from fakeapi.server import FakeAPIServer
from tests.support.fakecluster import make_cr, reconciler_for

CORRECTED = "memcached_gitops_drift_corrections_total"
DETECTED = "memcached_gitops_drift_detected_total"


@pytest.mark.parametrize(("dry_run", "code", "counted"), [(False, 0, "1 corrected"), (True, 1, "1 to correct (dry run)")])
def test_the_cycle_line_and_exit_code_say_what_was_written(cluster: FakeAPIServer, caplog, dry_run: bool, code: int,
                                                          counted: str) -> None:
    caplog.set_level(logging.INFO)
    make_cr(cluster, "a", size=1)
    assert run_once(reconciler_for(cluster, dry_run=dry_run)) == code
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("cycle done")]
    assert line.endswith(f": 1 CRs, {counted}, 0 failed"), line
    said = [r.getMessage() for r in caplog.records]
    assert ("default/a: not written (dry run): created the Deployment" in said) is dry_run, said
    assert ("default/a: created the Deployment" in said) is not dry_run, said


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_outcomes_drift_is_counted_as_corrected_only_when_written(cluster: FakeAPIServer, dry_run: bool) -> None:
    make_cr(cluster, "a", size=1)
    [outcome] = reconciler_for(cluster, dry_run=dry_run).run_cycle().outcomes
    metrics = Metrics()
    metrics.observe_outcome(outcome, dry_run)
    found = {"field": "<object>"}
    assert (metrics.value(CORRECTED, found), metrics.value(DETECTED, found)) == ((0, 1) if dry_run else (1, 0))
    assert metrics.value("controller_runtime_reconcile_total", {"controller": "memcached", "result": "success"}) == 1


def test_a_companions_drift_and_a_refused_write_are_counted_by_kind(cluster: FakeAPIServer, caplog) -> None:
    """A Service's drift is counted under "Service <field>", each refused write by its kind and HTTP
    status, and the cycle's log names the CR that failed and why."""
    from fakeapi.server import Fault
    from tests.support.fakecluster import patch

    caplog.set_level(logging.INFO)
    make_cr(cluster, "a", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    patch(cluster, "/api/v1/namespaces/default/services/a-memcached", {"metadata": {"labels": {"app.kubernetes.io/part-of": "x"}}},
          "application/merge-patch+json")
    patch(cluster, "/apis/apps/v1/namespaces/default/deployments/a", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=422, times=1))
    report = rec.run_cycle()
    metrics = Metrics()
    for outcome in report.outcomes:
        metrics.observe_outcome(outcome)
    service_fields = [labels["field"] for name, labels in _samples(metrics, CORRECTED) if labels["field"].startswith("Service ")]
    assert service_fields == ["Service .metadata.labels.app.kubernetes.io/part-of"], service_fields
    assert metrics.value("memcached_gitops_write_failures_total", {"kind": "Deployment", "code": "422"}) == 1
    caplog.clear()
    from memcached_gitops.reconciler.orchestration.loop import log_report

    log_report(report)
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("failed default/a: Deployment default/a: apply refused: HTTP 422") for m in said), said


def _samples(metrics: Metrics, name: str) -> list[tuple[str, dict[str, str]]]:
    return [(s.name, s.labels) for family in metrics.registry.collect() for s in family.samples if s.name == name]


def test_a_cycle_that_could_not_read_the_crs_says_it_is_incomplete(cluster: FakeAPIServer, caplog) -> None:
    from fakeapi.server import Fault

    caplog.set_level(logging.INFO)
    make_cr(cluster, "a", size=1)
    cluster.faults.append(Fault(method="GET", path_contains="/memcacheds", status=403, times=50))
    assert run_once(reconciler_for(cluster)) == 2
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("cycle done")]
    assert ", 0 failed (incomplete: " in line and "403" in line, line


@pytest.mark.parametrize(("complete", "drifted", "failed", "dry_run", "code"), [
    (True, False, False, False, 0), (True, True, False, False, 0), (True, True, True, False, 1), (False, False, False, False, 2),
    (True, False, False, True, 0), (True, True, False, True, 1), (False, True, False, True, 2),
    (True, False, True, True, 2), (True, True, True, True, 2)])
def test_the_exit_code_of_a_cycle(complete: bool, drifted: bool, failed: bool, dry_run: bool, code: int) -> None:
    """0 nothing failed (a dry run: nothing to correct), 1 a failure (a dry run: drift), 2 the cycle did
    not look at every CR (a dry run: or a CR it could not judge, which is not "no drift"): what a
    CronJob's and CI's check reads."""
    from types import SimpleNamespace

    from memcached_gitops.reconciler.orchestration.loop import exit_code

    report = SimpleNamespace(complete=complete, drifted=["a"] if drifted else [], failed=["a"] if failed else [])
    assert exit_code(report, dry_run) == code  # type: ignore[arg-type]
    if not dry_run:
        assert exit_code(report) == code, "a cycle that may write is the default"  # type: ignore[arg-type]


def test_the_cycle_logs_each_drift_it_corrected_and_a_missing_companion_counts_as_its_object(cluster: FakeAPIServer,
                                                                                              caplog) -> None:
    from memcached_gitops.reconciler.orchestration.loop import log_report

    from tests.support.fakecluster import patch

    make_cr(cluster, "a", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    patch(cluster, "/apis/apps/v1/namespaces/default/deployments/a", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    cluster.handle("DELETE", "/api/v1/namespaces/default/services/a-memcached", {}, b"")
    caplog.set_level(logging.INFO)
    report = rec.run_cycle()
    caplog.clear()
    log_report(report)
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("drift default/a .spec.replicas: live 3, desired 1") for m in said), said
    assert any(m.startswith("cycle done") and ": 1 CRs, 1 corrected, 0 failed" in m for m in said), "a cycle that wrote is the default"
    metrics = Metrics()
    metrics.observe_outcome(report.outcomes[0])
    assert metrics.value(CORRECTED, {"field": "Service <object>"}) == 1


def test_a_detect_only_cycle_logs_each_drift_it_left(cluster: FakeAPIServer, caplog) -> None:
    """The cycle's lines of a CR whose drift ``--detect-only`` left name each drifted field, as a
    correcting cycle's do, said as left uncorrected (not an empty "drifted default/a: ")."""
    from tests.support.fakecluster import scale

    make_cr(cluster, "a", size=1)
    reconciler_for(cluster).run_cycle()
    scale(cluster, "a", 3)
    caplog.set_level(logging.INFO)
    assert run_once(reconciler_for(cluster, detect_only=True)) == 0
    said = [f"{r.levelname} {r.getMessage()}" for r in caplog.records]
    left = "WARNING drift default/a .spec.replicas: live 3, desired 1 (set by kubectl (scale)) (left uncorrected: --detect-only)"
    assert left in said, said
    assert not [line for line in said if line.endswith(": ")], said


def test_a_dry_run_counts_a_companions_drift_as_a_correction_it_would_make(cluster: FakeAPIServer, caplog) -> None:
    """A Service a person edited is corrected by the cycle ("1 corrected"): the dry run of that
    cycle says it would correct it, with what, and exits 1 (drift), not 0."""
    from tests.support.fakecluster import patch

    make_cr(cluster, "a", size=1)
    reconciler_for(cluster).run_cycle()
    patch(cluster, "/api/v1/namespaces/default/services/a-memcached", [{"op": "replace", "path": "/spec/ports/0/port", "value": 1}],
          "application/json-patch+json", "?fieldManager=kubectl-edit")
    caplog.set_level(logging.INFO)
    assert run_once(reconciler_for(cluster, dry_run=True)) == 1
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("default/a: Service a-memcached correct (not written: dry run): .spec.ports[port=11211") for m in said), said
    assert any(m.endswith(": 1 CRs, 1 to correct (dry run), 0 failed") for m in said), said


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_cr_being_deleted_gets_nothing_created_or_corrected(cluster: FakeAPIServer, caplog, dry_run: bool) -> None:
    """A CR a finalizer of another controller holds after ``kubectl delete`` (its deletionTimestamp
    set): its Deployment and companions go with it, so none is created (with
    ``--cascade=foreground`` the garbage collector deletes them first: a new one would undo it)."""
    from tests.support.fakecluster import CR_PATH, patch

    make_cr(cluster, "a", size=2)
    patch(cluster, CR_PATH.format(ns="default") + "/a", {"metadata": {"finalizers": ["example.com/hold"]}},
          "application/merge-patch+json")
    code, _, body = cluster.handle("DELETE", CR_PATH.format(ns="default") + "/a", {"User-Agent": "kubectl/v1.37.1"}, b"")
    assert code == 200, body
    cluster.reset_log()
    caplog.set_level(logging.INFO)
    assert run_once(reconciler_for(cluster, dry_run=dry_run)) == 0
    assert [f"{r.method} {r.path}" for r in cluster.writes()] == []
    assert "default/a: being deleted: nothing created or corrected" in [r.getMessage() for r in caplog.records]


def test_every_event_names_its_cr_as_kubectl_describe_finds_it(cluster: FakeAPIServer) -> None:
    """``kubectl describe memcached`` lists the Events whose involvedObject has the CR's uid (its
    field selector is kind, name, namespace and uid): every Event of ours carries all of them."""
    import json

    cr = make_cr(cluster, "a", size=1)
    reconciler_for(cluster).run_cycle()
    _, _, body = cluster.handle("GET", "/api/v1/namespaces/default/events", {}, b"")
    events = json.loads(body)["items"]
    assert events
    for e in events:
        assert e["involvedObject"] == {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "a",
                                       "namespace": "default", "uid": cr["metadata"]["uid"]}, e["involvedObject"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_kubelets_sigterm_and_a_terminals_sigint_each_ask_for_a_stop(signum: signal.Signals) -> None:
    """The kubelet stops a container with SIGTERM, a terminal's Ctrl-C (and ``kill -INT``) sends
    SIGINT: either sets the stop event (the cycle ends after its current CR, the controller drains
    and releases its Lease) rather than killing the process or raising KeyboardInterrupt mid-write."""
    from memcached_gitops.reconciler.orchestration.loop import install_stop_handlers

    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    stop = threading.Event()
    try:
        for s in saved:
            signal.signal(s, signal.SIG_IGN)  # what was there before is replaced, not relied on
        install_stop_handlers(stop)
        os.kill(os.getpid(), signum)
        assert stop.wait(0.5), f"{signum.name} did not set the stop event"
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


@pytest.mark.parametrize("action", ["unchanged", "observed", "suspended"])
def test_a_cr_served_as_asked_is_no_warning_in_the_cycles_log(caplog, action: str) -> None:
    """An unchanged CR, one left to GitOps (observed: the cycle logged what differs) and one whose
    reconcile annotation says disabled (suspended) are not problems: nothing above INFO about them,
    so that every cycle of a namespace with a paused CR is not a warning line."""
    from memcached_gitops.reconciler.decisions.vocabulary import Action
    from memcached_gitops.reconciler.orchestration.cycle import CROutcome, CycleReport
    from memcached_gitops.reconciler.orchestration.loop import exit_code, log_report

    caplog.set_level(logging.INFO)
    report = CycleReport([CROutcome("default", "a", Action(action))])
    log_report(report)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert exit_code(report) == 0 and exit_code(report, dry_run=True) == 0


@settings(max_examples=60, deadline=None)
@given(complete=st.booleans(), drifted=st.integers(0, 3), failed=st.integers(0, 3), dry_run=st.booleans())
def test_the_exit_code_is_the_worst_thing_the_cycle_saw(complete: bool, drifted: int, failed: int, dry_run: bool) -> None:
    """Any number of drifted and failed CRs, complete or not, dry run or not: 2 when the cycle did not
    look at every CR (or a dry run could not judge one), else 1 for a failure (a dry run: for drift),
    else 0; one more drifted or failed CR never lowers the code."""
    from types import SimpleNamespace

    from memcached_gitops.reconciler.orchestration.loop import exit_code

    def code(complete: bool, drifted: int, failed: int) -> int:
        return exit_code(SimpleNamespace(complete=complete, drifted=["d"] * drifted, failed=["f"] * failed), dry_run)  # type: ignore[arg-type]

    worst = 2 if not complete or (dry_run and failed) else 1 if (failed if not dry_run else drifted) else 0
    assert code(complete, drifted, failed) == worst
    assert code(complete, drifted + 1, failed) >= worst and code(complete, drifted, failed + 1) >= worst
    assert code(False, drifted, failed) == 2
