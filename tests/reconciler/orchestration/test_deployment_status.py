"""The CR's conditions follow the Deployment controller's own verdict.

The fake runs no controllers: each test writes the Deployment's status through ``/status`` (a
merge patch, as the controller's writes look in transcript 16) with the statuses the real
kube-controller-manager v1.36.2 wrote in
tests/fixtures/apiserver-transcripts/35-deployment-controller-status.json: rolling out with Pending
Pods (exchange 2), the progress deadline exceeded (exchange 6, after the kubectl patch of
exchange 5) and a ResourceQuota that forbids Pods (exchange 9). The healthy status of the
recovery tests is transcript 16's (exchange 2).
"""

from __future__ import annotations

from memcached_gitops.reconciler.orchestration.loop import exit_code

from fakeapi.server import FakeAPIServer
from tests.support.fakecluster import (
    DEP_PATH,
    controller_writes,
    cr_status,
    make_cr,
    patch,
    reconciler_on_api_clock,
    recorded_status,
)


def conditions(api: FakeAPIServer, name: str) -> dict[str, dict]:
    return {c["type"]: c for c in cr_status(api, name)["conditions"]}


def kstatus(api: FakeAPIServer, name: str) -> str:
    """sigs.k8s.io/cli-utils kstatus for a CR with conditions: Reconciling=True first, then Stalled=True."""
    conds = conditions(api, name)
    if conds.get("Reconciling", {}).get("status") == "True":
        return "InProgress"
    if conds.get("Stalled", {}).get("status") == "True":
        return "Failed"
    return "Current"


# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default",)


def _deadline_exceeded(cluster: FakeAPIServer):
    """transcript 35, exchanges 1-6, with the reconciler reading the Deployment after each step."""
    make_cr(cluster, "memcached-sample", size=2)
    rec = reconciler_on_api_clock(cluster)
    rec.run_cycle()
    controller_writes(cluster, "memcached-sample", recorded_status("35", 2))
    rec.run_cycle()
    conds = conditions(cluster, "memcached-sample")
    assert conds["Progressing"]["status"] == "True" and conds["Degraded"]["status"] == "False"
    assert kstatus(cluster, "memcached-sample") == "InProgress" and "Stalled" not in conds
    # exchange 5: kubectl patch progressDeadlineSeconds=5 (generation 2, not yet observed)
    patch(cluster, DEP_PATH.format(ns="default", name="memcached-sample"), {"spec": {"progressDeadlineSeconds": 5}},
          "application/merge-patch+json", ua="kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722")
    rec.run_cycle()
    controller_writes(cluster, "memcached-sample", recorded_status("35", 6))
    report = rec.run_cycle()
    return rec, report


def test_before_the_controller_observes_a_generation_the_cr_is_waiting(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "memcached-sample", size=2)
    rec = reconciler_on_api_clock(cluster)
    rec.run_cycle()
    controller_writes(cluster, "memcached-sample", recorded_status("35", 2))
    patch(cluster, DEP_PATH.format(ns="default", name="memcached-sample"), {"spec": {"progressDeadlineSeconds": 5}},
          "application/merge-patch+json", ua="kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722")
    # exchange 6's status, but as if the controller had not caught up: observedGeneration 1 of 2
    stale = recorded_status("35", 6) | {"observedGeneration": 1}
    controller_writes(cluster, "memcached-sample", stale)
    rec.run_cycle()
    conds = conditions(cluster, "memcached-sample")
    assert conds["Progressing"]["status"] == "True"
    assert conds["Progressing"]["message"] == "waiting for the Deployment controller to observe generation 2"
    assert conds["Degraded"]["status"] == "False", "a verdict about an older generation is not trusted"
    assert "Stalled" not in conds and kstatus(cluster, "memcached-sample") == "InProgress"


def test_progress_deadline_exceeded_is_degraded_and_stalled(cluster: FakeAPIServer) -> None:
    _, report = _deadline_exceeded(cluster)
    recorded = recorded_status("35", 6)
    message = next(c for c in recorded["conditions"] if c["type"] == "Progressing")["message"]
    assert len(message) > 64
    conds = conditions(cluster, "memcached-sample")
    assert conds["Progressing"]["status"] == "False" and conds["Progressing"]["reason"] == "ProgressDeadlineExceeded"
    assert conds["Degraded"]["status"] == "True" and conds["Degraded"]["reason"] == "ProgressDeadlineExceeded"
    assert conds["Degraded"]["message"] == message[:64] + "…"
    assert conds["Stalled"]["status"] == "True" and conds["Stalled"]["reason"] == "ProgressDeadlineExceeded"
    assert "Reconciling" not in conds
    assert conds["Available"]["status"] == "False" and conds["Available"]["message"] == "0 of 2 replicas available"
    assert kstatus(cluster, "memcached-sample") == "Failed"
    assert exit_code(report) == 0, "the reconciler did its part; the CR's status carries the failure"


def test_replica_failure_is_degraded_within_the_deadline(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "memcached-quota", size=1)
    rec = reconciler_on_api_clock(cluster)
    rec.run_cycle()
    recorded = recorded_status("35", 9)
    controller_writes(cluster, "memcached-quota", recorded)
    rec.run_cycle()
    message = next(c for c in recorded["conditions"] if c["type"] == "ReplicaFailure")["message"]
    conds = conditions(cluster, "memcached-quota")
    assert conds["Degraded"]["status"] == "True" and conds["Degraded"]["reason"] == "FailedCreate"
    assert conds["Degraded"]["message"] == message[:64] + "…" and "forbidden" in conds["Degraded"]["message"]
    assert conds["Stalled"]["status"] == "True" and conds["Stalled"]["reason"] == "FailedCreate"
    assert conds["Progressing"]["status"] == "True", "the Deployment is still within its deadline"
    assert "Reconciling" not in conds and kstatus(cluster, "memcached-quota") == "Failed"


def _times(api: FakeAPIServer, name: str) -> dict[str, str]:
    return {t: c["lastTransitionTime"] for t, c in conditions(api, name).items()}


def test_recovery_after_a_fixed_spec(cluster: FakeAPIServer) -> None:
    rec, _ = _deadline_exceeded(cluster)
    failed = _times(cluster, "memcached-sample")
    # the spec is fixed (size 2 -> 1): the reconciler applies generation 3
    patch(cluster, "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/memcached-sample", {"spec": {"size": 1}},
          "application/merge-patch+json", "?fieldManager=kubectl-patch")
    rec.run_cycle()
    conds = conditions(cluster, "memcached-sample")
    assert conds["Progressing"]["status"] == "True"
    assert conds["Progressing"]["message"].startswith("waiting for the Deployment controller to observe generation 3")
    assert conds["Degraded"]["status"] == "False" and "Stalled" not in conds
    assert conds["Degraded"]["lastTransitionTime"] != failed["Degraded"]
    assert conds["Progressing"]["lastTransitionTime"] != failed["Progressing"]
    assert conds["Available"]["lastTransitionTime"] == failed["Available"], "Available stayed False"
    # the controller observes generation 3 and the new ReplicaSet becomes available (transcript 16's status)
    controller_writes(cluster, "memcached-sample", recorded_status("16", 2) | {"observedGeneration": 3})
    rec.run_cycle()
    conds = conditions(cluster, "memcached-sample")
    assert conds["Available"]["status"] == "True" and conds["Available"]["lastTransitionTime"] != failed["Available"]
    assert conds["Progressing"]["status"] == "False" and conds["Progressing"]["reason"] == "ReconcileComplete"
    assert conds["Degraded"]["status"] == "False" and conds["Degraded"]["reason"] == "AsExpected"
    assert set(conds) == {"Available", "Progressing", "Degraded", "Ready"} and kstatus(cluster, "memcached-sample") == "Current"
    assert conds["Ready"]["status"] == "True" and conds["Ready"]["reason"] == "Ready"


def test_recovery_after_the_quota_is_freed(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "memcached-quota", size=1)
    rec = reconciler_on_api_clock(cluster)
    rec.run_cycle()
    controller_writes(cluster, "memcached-quota", recorded_status("35", 9))
    rec.run_cycle()
    failed = _times(cluster, "memcached-quota")
    # the same generation, now with its Pod created and available: ReplicaFailure is gone (16)
    controller_writes(cluster, "memcached-quota", recorded_status("16", 2))
    rec.run_cycle()
    conds = conditions(cluster, "memcached-quota")
    assert conds["Degraded"]["status"] == "False" and conds["Degraded"]["lastTransitionTime"] != failed["Degraded"]
    assert conds["Available"]["status"] == "True" and "Stalled" not in conds and "Reconciling" not in conds
    assert kstatus(cluster, "memcached-quota") == "Current"


def test_verdict_and_excerpt_are_pure() -> None:
    from memcached_gitops.reconciler.decisions.status import deployment_verdict, one_line_excerpt

    assert one_line_excerpt("a" * 64) == "a" * 64 and one_line_excerpt("a" * 65) == "a" * 64 + "…"
    assert one_line_excerpt("two\nlines") == "two lines"
    unobserved = {"metadata": {"generation": 2}, "status": recorded_status("35", 6) | {"observedGeneration": 1}}
    assert deployment_verdict(unobserved).observed is False and deployment_verdict(unobserved).failure_reason == ""
    exceeded = {"metadata": {"generation": 2}, "status": recorded_status("35", 6)}
    assert deployment_verdict(exceeded).failure_reason == "ProgressDeadlineExceeded"
    quota = {"metadata": {"generation": 1}, "status": recorded_status("35", 9)}
    assert deployment_verdict(quota).failure_reason == "FailedCreate"
