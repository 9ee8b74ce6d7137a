"""Reconciler scenarios over real HTTP: the official kubernetes client against the fake API server.

Each scenario asserts on the server's final state and on its request log. The fake follows the
recorded kube-apiserver behaviour (tests/fake_apiserver/test_fake_apiserver_replay.py).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from memcached_gitops.foundation.identities import IGNORE_PATHS_ANNOTATION, RECONCILE_ANNOTATION
from memcached_gitops.reconciler.client.api import APIError
from memcached_gitops.reconciler.client.leader import LeaderElector
from memcached_gitops.reconciler.orchestration.loop import exit_code

from fakeapi.server import DeploymentController, FakeAPIServer, Fault
from tests.conftest import REPO, transcript
from tests.support.clock import SteppingBack
from tests.support.fakecluster import (
    CR_PATH,
    DEP_PATH,
    call,
    condition,
    cr_status,
    deployment,
    drift_image,
    drift_port,
    foreign_service,
    make_cr,
    patch,
    post,
    reconciler_for,
    scale,
    write_kubeconfig,
    writes,
)


def test_create_from_nothing(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a", size=2)
    make_cr(cluster, "b", ns="shop", size=3, port=21211)
    rec = reconciler_for(cluster)
    cluster.reset_log()
    report = rec.run_cycle()
    assert [o.action for o in report.outcomes] == ["created", "created"]
    a, b = deployment(cluster, "a"), deployment(cluster, "b", "shop")
    assert a["spec"]["replicas"] == 2 and b["spec"]["replicas"] == 3
    assert b["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 21211
    cr_a = cluster.get("cache.example.com", "memcacheds", "default", "a")
    assert a["metadata"]["ownerReferences"] == [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "a",
                                                 "uid": cr_a["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert [e["manager"] for e in a["metadata"]["managedFields"]] == ["memcached-gitops"]
    applies = [r for r in cluster.log if r.method == "PATCH" and "/deployments/" in r.path]
    assert len(applies) == 2 and all(r.content_type == "application/apply-patch+yaml" for r in applies)
    assert all(r.query == {"fieldManager": "memcached-gitops", "force": "true"} for r in applies)
    assert condition(cluster, "a", "Available")["status"] == "False"
    assert condition(cluster, "a", "Reconciling")["status"] == "True", "kstatus must see InProgress"
    status_writes = [r for r in cluster.log if r.path.endswith("/status")]
    assert all(r.query["fieldManager"] == "memcached-gitops-status" for r in status_writes) and len(status_writes) == 2
    events = [o for k, o in cluster.objects.items() if k[1] == "events"]
    assert [e["reason"] for e in events] == ["DeploymentCreated"] * 2, "one Event per CR, as client-go's recorder aggregates"
    assert all("created the Deployment; Service" in e["message"] and "; PodDisruptionBudget" in e["message"] for e in events), \
        "it names every object the reconcile created"
    # beside each Deployment, its headless Service and (two Pods or more) its budget, owned by the CR
    for ns, name, budget in (("default", "a", True), ("shop", "b", True)):
        owner = deployment(cluster, name, ns)["metadata"]["ownerReferences"]
        service = cluster.get("", "services", ns, f"{name}-memcached")
        assert service["spec"]["clusterIP"] == "None" and service["metadata"]["ownerReferences"] == owner
        assert (cluster.get("policy", "poddisruptionbudgets", ns, f"{name}-memcached") is not None) == budget


def test_the_service_and_budget_are_corrected_and_the_budget_goes_when_one_pod_is_asked(cluster: FakeAPIServer) -> None:
    """Owned like the Deployment: a person's change to a field we set is put back by the same apply
    (the selector is an atomic map: taken back whole, their extra key too, transcript 42); a budget
    is deleted when the CR asks for one Pod, and comes back with two."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    svc = "/api/v1/namespaces/default/services/a-memcached"
    patch(cluster, svc, {"spec": {"selector": {"app.kubernetes.io/instance": "other", "team": "x"}}}, "application/merge-patch+json")
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected"
    assert [(where, d.field) for where, d in outcome.companions.drift] == [("Service a-memcached", ".spec.selector")]
    assert cluster.get("", "services", "default", "a-memcached")["spec"]["selector"] == {
        "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a"}
    assert [(r.method, r.path.rsplit("/", 2)[-2:]) for r in cluster.log if "/services/" in r.path and r.method != "GET"] == [
        ("PATCH", ["services", "a-memcached"])]
    cr_a = CR_PATH.format(ns="default") + "/a"
    patch(cluster, cr_a, {"spec": {"size": 1}}, "application/merge-patch+json")
    [outcome] = rec.run_cycle().outcomes
    assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is None, "no budget for one Pod"
    assert [(resource.kind, name) for resource, name in outcome.companions.removed] == [("PodDisruptionBudget", "a-memcached")]
    patch(cluster, cr_a, {"spec": {"size": 3}}, "application/merge-patch+json")
    rec.run_cycle()
    assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached")["spec"]["maxUnavailable"] == 1
    cluster.reset_log()
    assert [o.action for o in rec.run_cycle().outcomes] == ["unchanged"] and writes(cluster) == []


@pytest.mark.parametrize("companion", ["services", "poddisruptionbudgets"])
def test_a_companion_someone_deleted_is_created_again_and_the_cr_counts_as_corrected(cluster: FakeAPIServer, companion: str) -> None:
    """A Service or budget deleted under a CR whose Deployment is as rendered: the reconcile creates it
    again, and that is a correction of the CR like any other (its outcome, the cycle's count of corrected
    CRs, the report), not "unchanged"."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    group = "policy/v1" if companion == "poddisruptionbudgets" else "v1"
    call(cluster, "DELETE", f"/{'apis' if '/' in group else 'api'}/{group}/namespaces/default/{companion}/a-memcached")
    report = rec.run_cycle()
    assert [o.action for o in report.outcomes] == ["corrected"], report.outcomes
    assert cluster.get(group.partition("/")[0] if "/" in group else "", companion, "default", "a-memcached") is not None


def test_a_foreign_service_of_the_same_name_is_left_alone_and_reported(cluster: FakeAPIServer) -> None:
    theirs = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a-memcached"},
              "spec": {"selector": {"app": "theirs"}, "ports": [{"port": 80}]}}
    cluster.handle("POST", "/api/v1/namespaces/default/services", {"Content-Type": "application/json"}, json.dumps(theirs).encode())
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    assert cluster.get("", "services", "default", "a-memcached")["spec"]["selector"] == {"app": "theirs"}
    degraded = condition(cluster, "a", "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "ResourceNotOwned"
    assert degraded["message"] == "Service a-memcached exists and is not controlled by this Memcached; it is left alone"
    assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is not None, "the budget is still ours to make"


def test_available_then_steady_state_costs_seven_requests_and_no_writes(cluster: FakeAPIServer) -> None:
    for i in range(5):
        make_cr(cluster, f"m{i}", size=1 + i % 3)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    DeploymentController(cluster).sync(available=True)
    rec.run_cycle()  # sees availability: status write
    for i in range(5):
        avail = condition(cluster, f"m{i}", "Available")
        assert avail["status"] == "True" and avail["reason"] == "MinimumReplicasAvailable"
        assert not condition(cluster, f"m{i}", "Reconciling"), "kstatus: Current once available"
        assert len(cr_status(cluster, f"m{i}")["nodes"]) == 1 + i % 3
    before = {c["type"]: c["lastTransitionTime"] for c in cr_status(cluster, "m0")["conditions"]}
    cluster.reset_log()
    report = rec.run_cycle()
    assert [o.action for o in report.outcomes] == ["unchanged"] * 5
    assert writes(cluster) == []
    assert sorted(f"{r.method} {r.path.rsplit('/', 1)[-1]}" for r in cluster.log) == [
        "GET deployments", "GET horizontalpodautoscalers", "GET memcacheds", "GET memcacheds.cache.example.com",
        "GET poddisruptionbudgets", "GET pods", "GET services"]
    assert {c["type"]: c["lastTransitionTime"] for c in cr_status(cluster, "m0")["conditions"]} == before


def _drift_scale(api: FakeAPIServer) -> None:
    # kubectl scale: a merge patch to /scale without fieldManager (transcript 04)
    patch(api, DEP_PATH.format(ns="default", name="m") + "/scale", {"spec": {"replicas": 5}}, "application/merge-patch+json")


def _drift_label(api: FakeAPIServer) -> None:
    body = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "helm"}}}
    patch(api, DEP_PATH.format(ns="default", name="m"), body, "application/merge-patch+json", "?fieldManager=kubectl-label")


def _drift_security(api: FakeAPIServer) -> None:
    body = {"spec": {"template": {"spec": {"securityContext": {"runAsNonRoot": False}}}}}
    patch(api, DEP_PATH.format(ns="default", name="m"), body, "application/merge-patch+json", "?fieldManager=kubectl-edit")


@pytest.mark.parametrize(
    ("make_drift", "field", "culprit"),
    [
        (_drift_scale, ".spec.replicas", "kubectl (scale)"),
        (drift_image, '.spec.template.spec.containers[name="memcached"].image', "kubectl-set"),
        (drift_port, '.spec.template.spec.containers[name="memcached"]', "kubectl-patch"),
        (_drift_label, ".metadata.labels.app.kubernetes.io/managed-by", "kubectl-label"),
        (_drift_security, ".spec.template.spec.securityContext.runAsNonRoot", "kubectl-edit"),
    ],
    ids=["scale", "image", "port", "label", "securityContext"],
)
def test_drift_is_corrected_in_one_cycle_and_the_culprit_named(cluster: FakeAPIServer, make_drift, field: str, culprit: str) -> None:
    make_cr(cluster, "m", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    desired = deployment(cluster, "m")
    make_drift(cluster)
    cluster.reset_log()
    report = rec.run_cycle()
    [outcome] = report.outcomes
    assert outcome.action == "corrected"
    assert any(d.field.startswith(field) and culprit in d.managers for d in outcome.drift), [d.describe() for d in outcome.drift]
    applies = [r for r in cluster.log if r.content_type == "application/apply-patch+yaml" and r.path.endswith("/deployments/m")]
    assert len(applies) == 1
    after = deployment(cluster, "m")
    for key in ("replicas", "template"):
        assert after["spec"][key] == desired["spec"][key]
    assert after["metadata"]["labels"] == desired["metadata"]["labels"]
    event = next(o for k, o in cluster.objects.items() if k[1] == "events" and o["reason"] == "DriftCorrected")
    assert culprit in event["message"] and field.split("[")[0] in event["message"]
    cluster.reset_log()
    rec.run_cycle()
    assert not [w for w in writes(cluster) if "/deployments/" in w], "corrected drift must stay corrected"


def test_a_label_of_ours_a_person_deleted_comes_back_and_the_label_they_added_in_the_same_edit_stays(cluster: FakeAPIServer) -> None:
    """One ``kubectl edit`` that deletes a label we set and adds one of the person's own: our forced
    apply alone puts ours back. Taking the person's fields over first (revoke.py) is only for an item
    of ours missing from a keyed list; done for a plain field, their label would become ours, and the
    apply that follows, which does not carry it, would make the API server delete it."""
    make_cr(cluster, "m", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    desired = deployment(cluster, "m")
    labels = desired["metadata"]["labels"]
    selected = desired["spec"]["selector"]["matchLabels"]
    ours = sorted(k for k in labels if k not in selected and k != "app.kubernetes.io/managed-by")[0]  # one no selector reads
    patch(cluster, DEP_PATH.format(ns="default", name="m"), {"metadata": {"labels": {ours: None, "team": "payments"}}},
          "application/merge-patch+json", "?fieldManager=kubectl-edit")
    edited = deployment(cluster, "m")["metadata"]["labels"]
    assert ours not in edited and edited["team"] == "payments", edited
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and outcome.failures == [], outcome
    assert [d.field for d in outcome.drift] == [f".metadata.labels.{ours}"], [d.describe() for d in outcome.drift]
    after = deployment(cluster, "m")
    assert after["metadata"]["labels"] == {**labels, "team": "payments"}, "ours back, the person's label still there"
    owners = [e["manager"] for e in after["metadata"]["managedFields"]
              if "f:team" in e["fieldsV1"].get("f:metadata", {}).get("f:labels", {})]
    assert owners == ["kubectl-edit"], "the person's label stays theirs"
    rec.run_cycle()
    assert deployment(cluster, "m")["metadata"]["labels"]["team"] == "payments"


def test_a_deleted_deployment_comes_back(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "m")
    rec = reconciler_for(cluster)
    rec.run_cycle()
    code, _, _ = cluster.handle("DELETE", DEP_PATH.format(ns="default", name="m"), {"User-Agent": "kubectl/v1.37.1"}, b"")
    assert code == 200 and deployment(cluster, "m") is None
    report = rec.run_cycle()
    assert report.outcomes[0].action == "created"
    assert deployment(cluster, "m") is not None


def test_a_foreign_deployment_with_the_crs_name_is_never_touched(cluster: FakeAPIServer) -> None:
    foreign = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "default"},
               "spec": {"replicas": 7, "selector": {"matchLabels": {"app": "other"}},
                        "template": {"metadata": {"labels": {"app": "other"}},
                                     "spec": {"containers": [{"name": "x", "image": "nginx:1"}]}}}}
    post(cluster, "/apis/apps/v1/namespaces/default/deployments", foreign, "?fieldManager=someone")
    before = deployment(cluster, "m")
    make_cr(cluster, "m")
    rec = reconciler_for(cluster)
    cluster.reset_log()
    report = rec.run_cycle()
    assert report.outcomes[0].action == "not-owned"
    assert not [w for w in writes(cluster) if "/deployments/" in w]
    assert deployment(cluster, "m") == before
    degraded = condition(cluster, "m", "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "ResourceNotOwned"
    assert condition(cluster, "m", "Stalled")["status"] == "True"
    assert exit_code(report) == 1


def test_an_invalid_cr_does_not_stop_the_others() -> None:
    # The cluster's CRD is looser (size up to 5), like a CR stored before the CRD was tightened.
    from memcached_gitops.schemas.crd import builtin_crd_text

    looser = builtin_crd_text().replace("maximum: 3", "maximum: 5")
    assert looser != builtin_crd_text()
    with FakeAPIServer(crd_texts=[looser]) as api:
        make_cr(api, "a", size=5)
        make_cr(api, "b", size=2)
        report = reconciler_for(api).run_cycle()
        assert {o.name: o.action for o in report.outcomes} == {"a": "invalid", "b": "created"}
        assert deployment(api, "a") is None and deployment(api, "b") is not None
        degraded = condition(api, "a", "Degraded")
        assert degraded["reason"] == "InvalidSpec" and "spec.size" in degraded["message"]


def test_api_errors_and_429s_are_survived(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    make_cr(cluster, "b")
    cluster.faults += [
        Fault(method="GET", path_contains="/memcacheds", status=429, retry_after=0, times=2),
        Fault(method="PATCH", path_contains="/deployments/a", status=503, times=2),
        Fault(method="GET", path_contains="/pods", status=500, times=1),
        Fault(method="PATCH", path_contains="/deployments/b", drop_connection=True, times=1),
    ]
    report = reconciler_for(cluster).run_cycle()
    assert report.complete and [o.action for o in report.outcomes] == ["created", "created"]
    statuses = [r.status for r in cluster.log]
    assert statuses.count(429) == 2 and statuses.count(503) == 2 and statuses.count(500) == 1 and -1 in statuses


def test_a_failing_cr_is_reported_and_the_cycle_goes_on(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    make_cr(cluster, "b")
    cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=503, times=100))
    report = reconciler_for(cluster).run_cycle()
    assert {o.name: o.action for o in report.outcomes} == {"a": "failed", "b": "created"}
    assert exit_code(report) == 1
    assert condition(cluster, "a", "Degraded")["reason"] == "ApplyFailed"


def test_a_cr_deleted_before_its_status_is_written_is_no_failure(cluster: FakeAPIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kubectl delete memcached a`` lands between the cycle's LIST and the status write: the status
    apply answers 404 (a subresource never creates), and the CR is gone, not failed: the cycle says what
    it did, posts no Warning on a deleted object and exits 0 (a CronJob's run is not red for it)."""
    make_cr(cluster, "a")
    status_path = CR_PATH.format(ns="default") + "/a/status"
    handle = cluster.handle

    def deleted_meanwhile(method: str, raw_path: str, headers: dict[str, str], body: bytes):  # noqa: ANN202
        if method == "PATCH" and raw_path.startswith(status_path):
            assert handle("DELETE", CR_PATH.format(ns="default") + "/a", {}, b"")[0] == 200
        return handle(method, raw_path, headers, body)

    monkeypatch.setattr(cluster, "handle", deleted_meanwhile)
    report = reconciler_for(cluster).run_cycle()
    assert [(o.name, o.action, o.error) for o in report.outcomes] == [("a", "created", "")]
    assert exit_code(report) == 0
    assert [r.status for r in cluster.log if r.method == "PATCH" and r.path == status_path] == [404]
    events = [o for k, o in cluster.objects.items() if k[1] == "events"]
    assert [e["reason"] for e in events if e.get("type") == "Warning"] == []


def test_a_cycle_that_cannot_list_exits_2(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    cluster.faults.append(Fault(method="GET", path_contains="/memcacheds", status=503, times=100))
    report = reconciler_for(cluster).run_cycle()
    assert not report.complete and exit_code(report) == 2


def test_dry_run_writes_nothing_and_reports_drift(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    cluster.reset_log()
    report = reconciler_for(cluster, dry_run=True).run_cycle()
    assert writes(cluster) == [] and exit_code(report, dry_run=True) == 1


def test_an_older_crd_without_observed_generation_gets_no_500() -> None:
    """The tutorial CRD has no status.observedGeneration and an atomic conditions list (transcripts 23, 24)."""
    tutorial = transcript("00")["exchanges"][0]["request"]["body"]
    with FakeAPIServer(crd_texts=[tutorial]) as api:
        make_cr(api, "a")
        rec = reconciler_for(api)
        rec.run_cycle()
        DeploymentController(api).sync()
        rec.run_cycle()
        assert not [r for r in api.log if r.status == 500]
        status = cr_status(api, "a")
        assert "observedGeneration" not in status
        assert condition(api, "a", "Available")["status"] == "True"


def test_a_crd_that_cannot_be_read_gets_only_the_fields_every_crd_declares() -> None:
    """The served CRD cannot be read (an RBAC without get on customresourcedefinitions): the status
    carries only conditions and nodes, which every version of the CRD declares, so that an older one
    (the tutorial's: no status.observedGeneration, transcripts 23, 24) still gets its conditions, not
    an HTTP 500 for each status write and no status at all."""
    tutorial = transcript("00")["exchanges"][0]["request"]["body"]
    with FakeAPIServer(crd_texts=[tutorial]) as api:
        api.faults.append(Fault(method="GET", path_contains="/customresourcedefinitions/", status=403, times=100))
        make_cr(api, "a")
        rec = reconciler_for(api)
        rec.run_cycle()
        DeploymentController(api).sync()
        rec.run_cycle()
        assert not rec.schema_known
        assert not [r for r in api.log if r.status == 500]
        assert set(cr_status(api, "a")) == {"conditions", "nodes"}
        assert condition(api, "a", "Available")["status"] == "True"


def test_stop_ends_the_cycle_after_the_current_cr(cluster: FakeAPIServer) -> None:
    for name in ("a", "b", "c"):
        make_cr(cluster, name)
    """Stop set while the first CR's apply is on the wire (the fake holds it): that CR is finished, no other is
    begun. The stop follows the apply's arrival, never a timer, which a loaded machine outruns."""
    rec = reconciler_for(cluster)
    held = Fault(method="PATCH", path_contains="/deployments/a", status=0, delay=0.5, times=1)
    cluster.faults.append(held)

    def stop_once_the_apply_is_held() -> None:
        deadline = time.monotonic() + 60
        while held.times and time.monotonic() < deadline:
            time.sleep(0.005)
        rec.stop.set()

    threading.Thread(target=stop_once_the_apply_is_held, daemon=True).start()
    report = rec.run_cycle()
    assert [o.name for o in report.outcomes] == ["a"] and not report.complete
    assert deployment(cluster, "a") is not None and deployment(cluster, "b") is None


def test_the_lease_is_held_by_one_replica_and_released_to_the_next(cluster: FakeAPIServer) -> None:
    one, two = reconciler_for(cluster), reconciler_for(cluster)
    e1 = LeaderElector(one.api, "default", "replica-1", duration=15)
    e2 = LeaderElector(two.api, "default", "replica-2", duration=15)
    assert e1.try_acquire_or_renew() is True
    assert e2.try_acquire_or_renew() is False and e2.holder == "replica-1"
    cluster.reset_log()
    assert e1.try_acquire_or_renew() is True
    assert [r.method for r in cluster.log] == ["PUT"], "the leader renews with one PUT of the Lease it holds"
    e1.release()
    assert e2.try_acquire_or_renew() is True, "released on shutdown: the standby takes over at once"
    assert e1.try_acquire_or_renew() is False
    lease = cluster.get("coordination.k8s.io", "leases", "default", "memcached-gitops-leader")
    assert lease["spec"]["holderIdentity"] == "replica-2" and lease["spec"]["leaseTransitions"] == 1


def test_an_expired_lease_is_taken_over_once_seen_unchanged_for_its_duration(cluster: FakeAPIServer) -> None:
    """A renewTime five minutes old is another host's clock, not evidence: the new replica takes the
    Lease once it has itself seen the record unchanged for leaseDurationSeconds (client-go's
    observedTime), so a holder whose clock runs behind is never taken from while it renews."""
    import datetime as dt

    one = reconciler_for(cluster)
    past = lambda: dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # noqa: E731
    assert LeaderElector(one.api, "default", "old", clock=past).try_acquire_or_renew()
    seconds = [100.0]
    new = LeaderElector(one.api, "default", "new", monotonic=lambda: seconds[0])
    assert not new.try_acquire_or_renew() and new.holder == "old"
    seconds[0] += 14.999
    assert not new.try_acquire_or_renew()
    seconds[0] += 0.001
    assert new.try_acquire_or_renew()


def test_rbac_denial_is_a_clear_failure() -> None:
    with FakeAPIServer(rbac_rules=[{"apiGroups": ["cache.example.com"], "resources": ["memcacheds"], "verbs": ["list"]}]) as api:
        report = reconciler_for(api).run_cycle()
        assert not report.complete and "403" in report.error


def test_cli_once_and_diff_against_the_fake(cluster: FakeAPIServer, tmp_path: Path) -> None:
    make_cr(cluster, "memcached-sample")
    kubeconfig = write_kubeconfig(tmp_path, cluster.url)
    cmd = [sys.executable, "-m", "memcached_gitops"]
    sample = str(REPO / "examples" / "crs" / "memcached-sample.yaml")
    diff = subprocess.run(cmd + ["diff", "--kubeconfig", str(kubeconfig), sample], capture_output=True, timeout=60)
    assert diff.returncode == 1 and b"missing" in diff.stdout
    dry = subprocess.run(cmd + ["reconcile", "--once", "--dry-run", "--kubeconfig", str(kubeconfig)], capture_output=True, timeout=60)
    assert dry.returncode == 1, "a dry run that would correct exits 1, the CronJob's and CI's check"
    said = [json.loads(line)["msg"] for line in dry.stderr.decode().splitlines()]
    assert "default/memcached-sample: not written (dry run): created the Deployment" in said, said
    assert any(m.startswith("cycle done") and ", 1 to correct (dry run), 0 failed" in m for m in said), said
    assert deployment(cluster, "memcached-sample") is None, "and writes nothing"
    once = subprocess.run(cmd + ["reconcile", "--once", "--kubeconfig", str(kubeconfig)], capture_output=True, timeout=60)
    assert once.returncode == 0, once.stderr.decode()
    lines = [json.loads(line) for line in once.stderr.decode().splitlines()]
    assert any("cycle done" in line["msg"] for line in lines), "JSON logs when not on a terminal"
    diff = subprocess.run(cmd + ["diff", "--kubeconfig", str(kubeconfig), sample], capture_output=True, timeout=60)
    assert diff.returncode == 0, diff.stdout.decode()
    scale = DEP_PATH.format(ns="default", name="memcached-sample") + "/scale"
    patch(cluster, scale, {"spec": {"replicas": 3}}, "application/merge-patch+json")
    diff = subprocess.run(cmd + ["diff", "--kubeconfig", str(kubeconfig), sample], capture_output=True, timeout=60)
    assert diff.returncode == 1 and b".spec.replicas: live 3, desired 1 (set by kubectl (scale))" in diff.stdout


@pytest.mark.parametrize(("args", "resync", "workers", "lease"), [
    (["--interval", "45s", "--workers", "3", "--lease-namespace", "ops"], 45.0, 3, "ops"),
    ([], 600.0, 16, "from-env"),
])
def test_the_commands_event_driven_options_reach_the_controller(cluster: FakeAPIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                args: list[str], resync: float, workers: int, lease: str) -> None:
    """``reconcile --interval`` is the controller's resync period (10m when not given), ``--workers`` its
    workers, and the Lease is held in ``--lease-namespace`` or else POD_NAMESPACE (the shipped
    Deployment's env): the command as a person types it, the controller it builds."""
    from memcached_gitops.reconciler.orchestration import controller
    from typer.testing import CliRunner

    from memcached_gitops.cli import app

    built: list[tuple] = []

    class Recorded:
        error = None

        def __init__(self, reconciler, metrics, elector, settings, shards=None) -> None:  # noqa: ANN001
            built.append((settings, elector))

        def run(self) -> int:
            return 0

    monkeypatch.setattr(controller, "Controller", Recorded)
    monkeypatch.setenv("POD_NAMESPACE", "from-env")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        result = CliRunner().invoke(app, ["reconcile", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)),
                                          "--metrics-port", "0", "--health-probe-port", "0", *args])
    finally:
        root.handlers[:], root.level = handlers, level
    assert result.exit_code == 0, result.output
    [(settings, elector)] = built
    assert (settings.resync, settings.workers, elector.namespace) == (resync, workers, lease)


def test_without_pod_name_two_processes_on_one_host_are_two_identities(cluster: FakeAPIServer, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a Pod (no POD_NAME), the identity that holds the Lease names the host and the process: two
    reconcilers started on one machine (two terminals, two units) are two candidates, never one holder
    that both take for themselves."""
    from memcached_gitops.reconciler.orchestration import controller
    from typer.testing import CliRunner

    from memcached_gitops.cli import app

    identities: list[str] = []

    class Recorded:
        error = None

        def __init__(self, reconciler, metrics, elector, settings, shards=None) -> None:  # noqa: ANN001
            identities.append(elector.identity)

        def run(self) -> int:
            return 0

    monkeypatch.setattr(controller, "Controller", Recorded)
    monkeypatch.delenv("POD_NAME", raising=False)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        for pid in (4101, 4102):  # two processes of one host
            monkeypatch.setattr(os, "getpid", lambda pid=pid: pid)
            result = CliRunner().invoke(app, ["reconcile", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)),
                                              "--metrics-port", "0", "--health-probe-port", "0", "--lease-namespace", "default"])
            assert result.exit_code == 0, result.output
    finally:
        root.handlers[:], root.level = handlers, level
    assert len(set(identities)) == 2, identities
    assert all(i.startswith(socket.gethostname()) for i in identities), identities


def test_cli_interval_mode_stops_cleanly_on_sigterm(cluster: FakeAPIServer, tmp_path: Path) -> None:
    make_cr(cluster, "a")
    kubeconfig = write_kubeconfig(tmp_path, cluster.url)
    proc = subprocess.Popen([sys.executable, "-m", "memcached_gitops", "reconcile", "--interval", "0.2s", "--kubeconfig",
                             str(kubeconfig), "--metrics-port", "0", "--health-probe-port", "0", "--lease-namespace", "default"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while deployment(cluster, "a") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert deployment(cluster, "a") is not None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
    lease = cluster.get("coordination.k8s.io", "leases", "default", "memcached-gitops-leader")
    assert lease is not None and lease["spec"].get("holderIdentity") is None, "the Lease is released on shutdown"


def test_api_error_carries_status() -> None:
    err = APIError(409, "conflict", {"reason": "Conflict"})
    assert err.status == 409 and err.reason == "Conflict"


# ---- what the log says of an apply, and when
class _AtEmit(logging.Handler):
    """Each reconciler log record with the number of Deployment applies the server had accepted when it was written."""

    def __init__(self, api: FakeAPIServer) -> None:
        super().__init__(logging.DEBUG)
        self.api, self.seen = api, []

    def emit(self, record: logging.LogRecord) -> None:
        applies = [r for r in self.api.log if r.method == "PATCH" and "/deployments/" in r.path
                   and r.query.get("fieldManager") == "memcached-gitops" and 200 <= r.status < 300]
        self.seen.append((record.levelname, record.getMessage(), len(applies)))


@pytest.fixture
def at_emit(cluster: FakeAPIServer):
    handler = _AtEmit(cluster)
    logger = logging.getLogger("memcached_gitops.reconciler")
    logger.addHandler(handler)
    level, disabled = logger.level, logger.disabled
    logger.setLevel(logging.INFO)
    logger.disabled = False
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)
    logger.disabled = disabled


def test_a_correction_is_logged_once_its_apply_is_answered_never_before(cluster: FakeAPIServer, at_emit: _AtEmit) -> None:
    """The apply goes first (a drift's latency is the time to it) and the log tells what was done, not what
    is about to be tried (reconciler/orchestration/cycle.py _summary)."""
    make_cr(cluster, "a", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    patch(cluster, DEP_PATH.format(ns="default", name="a") + "/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json")
    rec.run_cycle()
    # a new Deployment and its Service are applied side by side: each logged as its own apply is answered
    # (the Service's line may come before or after the Deployment's apply: only the Deployment's is counted)
    assert sorted(message for _, message, _ in at_emit.seen[:2]) == ["default/a: Service a-memcached created",
                                                                    "default/a: created the Deployment"]
    assert ("INFO", "default/a: created the Deployment", 1) in at_emit.seen[:2]
    assert at_emit.seen[2:] == [("INFO", "default/a: corrected .spec.replicas: live 4, desired 1 (set by kubectl (scale))", 2)]


def test_a_failed_apply_is_a_warning_with_what_it_was_to_do_and_a_dry_run_says_what_it_would_do(
        cluster: FakeAPIServer, at_emit: _AtEmit) -> None:
    make_cr(cluster, "a", size=1)
    cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=422, times=1))
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    assert outcome.action == "failed"
    [(level, message, _)] = [seen for seen in at_emit.seen if seen[0] == "WARNING"]
    assert [seen[:2] for seen in at_emit.seen if seen[0] == "INFO"] == [("INFO", "default/a: Service a-memcached created")], \
        "the companions go on without the Deployment"
    assert level == "WARNING" and message.startswith("default/a: Deployment default/a: apply refused: HTTP 422")
    assert message.endswith("(to do: created the Deployment)")
    at_emit.seen.clear()
    [outcome] = reconciler_for(cluster, dry_run=True).run_cycle().outcomes
    assert at_emit.seen == [("INFO", "default/a: not written (dry run): created the Deployment", 0)], \
        "nothing sent, what would be done told"


def test_detect_only_reports_a_companions_drift_and_writes_nothing(cluster: FakeAPIServer) -> None:
    from memcached_gitops.reconciler.orchestration.metrics import Metrics

    make_cr(cluster, "a", size=2)
    reconciler_for(cluster).run_cycle()
    patch(cluster, "/api/v1/namespaces/default/services/a-memcached", {"spec": {"selector": {"app.kubernetes.io/name": "x"}}},
          "application/merge-patch+json")
    cluster.reset_log()
    [outcome] = reconciler_for(cluster, detect_only=True).run_cycle().outcomes
    assert outcome.action == "drifted"
    assert not [w for w in writes(cluster) if "/services/" in str(w)], "nothing written to the Service"
    assert [(where, d.field) for where, d in outcome.companions.drift] == [("Service a-memcached", ".spec.selector")]
    metrics = Metrics()
    metrics.observe_outcome(outcome)
    assert metrics.value("memcached_gitops_drift_detected_total", {"field": "Service .spec.selector"}) == 1
    assert cluster.get("", "services", "default", "a-memcached")["spec"]["selector"]["app.kubernetes.io/name"] == "x"
    degraded = condition(cluster, "a", "Degraded")
    assert degraded["reason"] == "DriftDetected" and degraded["status"] == "True"
    assert "Service a-memcached: .spec.selector" in degraded["message"], degraded["message"]


def test_a_crs_detect_only_annotation_holds_for_its_companions_too(cluster: FakeAPIServer) -> None:
    """The CR's own ``cache.example.com/reconcile: detect-only`` (no flag): with only its Service
    drifted, the drift is reported and nothing is written, as with ``--detect-only``."""
    make_cr(cluster, "a", size=2)
    reconciler_for(cluster).run_cycle()
    patch(cluster, CR_PATH.format(ns="default") + "/a", {"metadata": {"annotations": {RECONCILE_ANNOTATION: "detect-only"}}},
          "application/merge-patch+json")
    patch(cluster, "/api/v1/namespaces/default/services/a-memcached", {"spec": {"selector": {"app.kubernetes.io/name": "x"}}},
          "application/merge-patch+json")
    cluster.reset_log()
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    assert outcome.action == "drifted"
    assert not [w for w in writes(cluster) if "/services/" in str(w)], "nothing written to the Service"
    assert cluster.get("", "services", "default", "a-memcached")["spec"]["selector"]["app.kubernetes.io/name"] == "x"
    assert "Service a-memcached: .spec.selector" in condition(cluster, "a", "Degraded")["message"]


def test_detect_only_reports_the_deployments_and_the_budgets_drift_together(cluster: FakeAPIServer) -> None:
    """With the Deployment drifted too, the companions are still looked at: one message names both."""
    make_cr(cluster, "a", size=2)
    reconciler_for(cluster).run_cycle()
    patch(cluster, "/apis/apps/v1/namespaces/default/deployments/a", {"spec": {"replicas": 5}}, "application/merge-patch+json")
    cluster.handle("DELETE", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/a-memcached", {}, b"")
    cluster.reset_log()
    [outcome] = reconciler_for(cluster, detect_only=True).run_cycle().outcomes
    assert outcome.action == "drifted" and not [w for w in writes(cluster) if not w.endswith(("/status", "/events"))]
    message = condition(cluster, "a", "Degraded")["message"]
    assert ".spec.replicas" in message and "PodDisruptionBudget a-memcached would be created" in message, message


def test_with_an_rbac_from_before_the_companions_the_deployment_is_still_reconciled(cluster: FakeAPIServer, caplog) -> None:
    """An upgrade that kept the old ClusterRole: Services and budgets cannot be listed, so the cycle
    reconciles the Deployment as before and says once why it does no more."""
    caplog.set_level(logging.WARNING)
    make_cr(cluster, "a", size=2)
    cluster.rbac_rules = [{"apiGroups": ["*"], "resources": [r], "verbs": ["*"]}
                          for r in ("memcacheds", "memcacheds/status", "deployments", "pods", "horizontalpodautoscalers", "events",
                                    "customresourcedefinitions")]
    rec = reconciler_for(cluster)
    assert [o.action for o in rec.run_cycle().outcomes] == ["created"]
    assert [o.action for o in rec.run_cycle().outcomes] == ["unchanged"]
    assert cluster.get("", "services", "default", "a-memcached") is None
    assert sum("cannot list Services or PodDisruptionBudgets" in r.message for r in caplog.records) == 1


def test_placement_and_the_exporter_are_applied_and_a_pod_monitor_is_left_to_the_tool_that_applies_the_rendering(
        cluster: FakeAPIServer) -> None:
    """The scheduling fields and the sidecar travel in the Deployment; the reconciler writes no
    PodMonitor (its kind is served only with the prometheus-operator's CRDs) and sees no drift after."""
    post(cluster, CR_PATH.format(ns="default"), {
        "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m", "namespace": "default"},
        "spec": {"size": 2, "nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}],
                 "priorityClassName": "high", "metrics": {"enabled": True, "podMonitor": {"enabled": True}}}},
        "?fieldManager=kubectl-create&fieldValidation=Strict")
    rec = reconciler_for(cluster)
    assert [o.action for o in rec.run_cycle().outcomes] == ["created"]
    pod = deployment(cluster, "m")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"disk": "ssd"} and pod["tolerations"] == [{"key": "k", "operator": "Exists"}]
    assert pod["priorityClassName"] == "high" and [c["name"] for c in pod["containers"]] == ["memcached", "exporter"]
    assert not [r for r in cluster.log if "podmonitors" in r.path]
    cluster.reset_log()
    assert [o.action for o in rec.run_cycle().outcomes] == ["unchanged"]
    assert writes(cluster) == [] or all(w.endswith("/status") for w in writes(cluster))


#: The API server's 500 to a status apply carrying a field the served CRD does not declare
#: (transcript 23), and a 500 of another cause (the storage timing out).
UNDECLARED = "failed to create typed patch object (default/m; cache.example.com/v1alpha1, Kind=Memcached): " \
             ".status.observedGeneration: field not declared in schema"
TIMEOUT = "etcdserver: request timed out"


@pytest.mark.parametrize(("message", "code"), [(UNDECLARED, 0), (TIMEOUT, 1)])
def test_once_when_the_status_apply_is_answered_500(cluster: FakeAPIServer, tmp_path: Path, message: str, code: int) -> None:
    """A CronJob's ``--once`` whose status writes are answered 500: the undeclared-field 500 is the
    served CRD's doing (logged once, the CR otherwise done, exit 0); any other 500, once retried, is the
    CR failed: exit 1, the log naming it, never taken for the CRD's."""
    make_cr(cluster, "m")
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "InternalError", "code": 500}
    cluster.faults.append(Fault(method="PATCH", path_contains="/memcacheds/m/status", status=500, body=body, times=50))
    cmd = [sys.executable, "-m", "memcached_gitops", "reconcile", "--once", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url))]
    once = subprocess.run(cmd, capture_output=True, timeout=120)
    err = once.stderr.decode()
    assert once.returncode == code, err
    assert deployment(cluster, "m") is not None, "the Deployment is applied before the status"
    declared = [line for line in err.splitlines() if "does not declare a status field" in line]
    if code == 0:
        assert len(declared) == 1, err
    else:
        assert not declared and TIMEOUT in err, err


def test_a_deployment_created_again_beside_its_service_leaves_the_services_ignored_paths(cluster: FakeAPIServer) -> None:
    """A person deleted the Deployment and changed a Service field the CR's ignore-paths names: the
    Deployment is created again (beside its companions, cycle.py ``_create_beside``), and the Service's
    ignored field is left as the person set it, as it is when the Deployment exists."""
    make_cr(cluster, "a", size=1)
    annotation = {"cache.example.com/ignore-paths": "Service:/metadata/labels/app.kubernetes.io~1part-of"}
    patch(cluster, "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/a", {"metadata": {"annotations": annotation}},
          "application/merge-patch+json")
    rec = reconciler_for(cluster)
    assert [o.action for o in rec.run_cycle().outcomes] == ["created"]
    cluster.handle("DELETE", "/apis/apps/v1/namespaces/default/deployments/a", {}, b"")
    service = "/api/v1/namespaces/default/services/a-memcached"
    patch(cluster, service, {"metadata": {"labels": {"app.kubernetes.io/part-of": "checkout"}}}, "application/merge-patch+json")
    assert [o.action for o in rec.run_cycle().outcomes] == ["created"]
    assert deployment(cluster, "a") is not None
    assert cluster.get("", "services", "default", "a-memcached")["metadata"]["labels"]["app.kubernetes.io/part-of"] == "checkout"


def test_a_services_ignored_field_that_only_our_field_manager_set_is_kept_by_its_correction(cluster: FakeAPIServer) -> None:
    """Under --field-manager team-cache, a Service field the CR's ignore-paths names and that only
    team-cache has set is ours alone: a correction of another field of that Service carries its live
    value (leaving it out would remove it), as it does for the Deployment (ignore.follow)."""
    make_cr(cluster, "a", size=1)
    annotation = {"cache.example.com/ignore-paths": "Service:/metadata/labels/app.kubernetes.io~1part-of"}
    patch(cluster, "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/a", {"metadata": {"annotations": annotation}},
          "application/merge-patch+json")
    rec = reconciler_for(cluster, field_manager="team-cache")
    assert [o.action for o in rec.run_cycle().outcomes] == ["created"]
    service = "/api/v1/namespaces/default/services/a-memcached"
    patch(cluster, service, {"metadata": {"labels": {"app.kubernetes.io/name": "other"}}}, "application/merge-patch+json",
          "?fieldManager=kubectl-patch")
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected", outcome
    live = cluster.get("", "services", "default", "a-memcached")
    assert live["metadata"]["labels"].get("app.kubernetes.io/part-of") == "memcached", live["metadata"]["labels"]


@pytest.mark.parametrize("dry_run", [False, True])
def test_once_whose_list_of_crs_fails_exits_2_even_as_a_dry_run(cluster: FakeAPIServer, tmp_path: Path, dry_run: bool) -> None:
    """A CronJob's cycle that could not read the CRs (the LIST refused, once retried) did not look:
    exit 2, never 0 ("nothing to correct") and never 1 ("drift"), whether or not it may write."""
    make_cr(cluster, "m")
    cluster.faults.append(Fault(method="GET", path_contains="/memcacheds", status=500, times=50))
    cmd = [sys.executable, "-m", "memcached_gitops", "reconcile", "--once", *(["--dry-run"] if dry_run else []),
           "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url))]
    once = subprocess.run(cmd, capture_output=True, timeout=120)
    assert once.returncode == 2, once.stderr.decode()[-2000:]
    assert deployment(cluster, "m") is None


@pytest.mark.parametrize("service_first", [False, True])
def test_every_refused_write_of_a_reconcile_is_in_its_error_and_logged_once_as_it_was(cluster: FakeAPIServer, caplog,
                                                                                     service_first: bool) -> None:
    """The Deployment's apply and the Service's both refused: the CR's error names both, "; " between
    them (the status message and the Warning Event carry it); each is logged once, the Deployment's with
    what it was to do, the Service's as refused, nothing appended; the Deployment's to-do is its creation
    whichever refusal comes first (the Service's apply runs beside it)."""
    caplog.set_level(logging.WARNING)
    make_cr(cluster, "a", size=1)
    cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=422, times=1, delay=0.3 if service_first else 0))
    cluster.faults.append(Fault(method="PATCH", path_contains="/services/a-memcached", status=422, times=1))
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    assert outcome.action == "failed"
    parts = outcome.error.split("; ")
    assert sorted(p.split(":", 1)[0] for p in parts) == ["Deployment default/a", "Service default/a-memcached"], outcome.error
    assert all(": apply refused: HTTP 422" in p for p in parts), outcome.error
    logged = sorted(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.getMessage().startswith("default/a: "))
    assert len(logged) == 2, logged
    deployment_line, service_line = logged
    assert deployment_line.endswith("(to do: created the Deployment)"), deployment_line
    service_part = next(p for p in parts if p.startswith("Service"))
    assert service_line == f"default/a: {service_part}", (service_line, service_part)


def test_every_request_is_counted_under_its_method_as_client_go_names_it(cluster: FakeAPIServer) -> None:
    """rest_client_requests_total's ``method`` label is the HTTP method in upper case, as client-go's
    (the kubernetes client upper-cases what it sends, so a lower-case name would be sent right and
    counted wrong): a creation's cycle, with its GETs of the companions' names, counts none other."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    assert [o.action for o in rec.run_cycle().outcomes] == ["created"]
    methods = {method for (_, method, _) in rec.api.results}
    assert methods and methods <= {"GET", "POST", "PUT", "PATCH", "DELETE"}, methods
    assert {"GET", "PATCH"} <= methods, methods


def test_a_persisting_failure_is_one_warning_and_a_new_one_of_the_same_reason_is_another(cluster: FakeAPIServer) -> None:
    """The Deployment's apply refused (422) two cycles running: one Warning Event, the CR's Degraded
    already says it; then refused for another cause (400) under the same reason ApplyFailed: a new
    Warning, so that the Events say what the status says."""
    make_cr(cluster, "a", size=1)
    rec = reconciler_for(cluster)

    def warnings() -> list[str]:
        with cluster.lock:
            return [e["message"] for (g, p, _, _), e in list(cluster.objects.items())
                    if (g, p) == ("", "events") and e.get("type") == "Warning" and e.get("reason") == "ApplyFailed"]

    for status in (422, 422, 400):
        cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=status, times=1))
        assert [o.action for o in rec.run_cycle().outcomes] == ["failed"]
    said = warnings()
    assert len(said) == 2 and "HTTP 422" in said[0] and "HTTP 400" in said[1], said
    assert condition(cluster, "a", "Degraded")["reason"] == "ApplyFailed" and "HTTP 400" in condition(cluster, "a", "Degraded")["message"]


def test_diff_compares_the_service_and_budget_too(cluster: FakeAPIServer, tmp_path: Path) -> None:
    """A person's edit of the Service is drift the reconciler corrects: ``diff`` in the pull request
    says so (exit 1, the line named by the CR and the object), as it does for the Deployment."""
    make_cr(cluster, "a", size=2)
    reconciler_for(cluster).run_cycle()
    patch(cluster, "/api/v1/namespaces/default/services/a-memcached", [{"op": "replace", "path": "/spec/ports/0/port", "value": 1}],
          "application/json-patch+json", "?fieldManager=kubectl-edit")
    cr = tmp_path / "a.yaml"
    cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 2}\n")
    cmd = [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)), str(cr)]
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert diff.returncode == 1, diff.stdout + diff.stderr
    assert diff.stdout.startswith('default/a: Service a-memcached: .spec.ports[port=11211,protocol="TCP"]: live <absent>'), diff.stdout
    call(cluster, "DELETE", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/a-memcached")
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "default/a: missing: the PodDisruptionBudget a-memcached does not exist\n" in diff.stdout, diff.stdout


def test_diff_says_a_deployment_another_memcached_controls_is_left_alone_as_the_reconciler_does(cluster: FakeAPIServer,
                                                                                                  tmp_path: Path) -> None:
    """``diff`` reads no CR, so it takes for this CR's only a controller that is a Memcached of the CR's
    name. A Deployment of the CR's name controlled by another Memcached (its ownerReference moved to
    ``b`` by hand) is left alone by the reconciler (Degraded ResourceNotOwned): ``diff`` in the pull
    request says so too (one drift line, exit 1), not a comparison of its fields that finds nothing."""
    make_cr(cluster, "a", size=2)
    make_cr(cluster, "b", size=2)
    reconciler_for(cluster).run_cycle()
    b_controller = deployment(cluster, "b")["metadata"]["ownerReferences"]
    patch(cluster, DEP_PATH.format(ns="default", name="a"), {"metadata": {"ownerReferences": b_controller}},
          "application/merge-patch+json", "?fieldManager=kubectl-edit")
    assert deployment(cluster, "a")["metadata"]["ownerReferences"] == b_controller
    cr = tmp_path / "a.yaml"
    cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 2}\n")
    cmd = [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)), str(cr)]
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    said = "default/a: the Deployment exists and is not controlled by this Memcached; the reconciler leaves it alone\n"
    assert (diff.returncode, diff.stdout) == (1, said), f"exit {diff.returncode}, stdout {diff.stdout!r}, stderr {diff.stderr!r}"
    outcomes = {o.name: o.action for o in reconciler_for(cluster).run_cycle().outcomes}
    assert outcomes["a"] == "not-owned", outcomes
    assert condition(cluster, "a", "Degraded")["reason"] == "ResourceNotOwned"
    assert deployment(cluster, "a")["metadata"]["ownerReferences"] == b_controller, "the reconciler left it alone"


def test_every_printer_column_of_the_shipped_crd_reads_what_the_reconciler_writes(cluster: FakeAPIServer) -> None:
    """``kubectl get memcached -o wide`` prints each additionalPrinterColumn of the installed CRD
    (kustomize/base/crd.yaml) by its jsonPath from the stored CR: after a cycle, each has a value (a path
    to a field the status does not hold prints ``<none>``), and the status columns are exactly the
    fields the reconciler writes for them."""
    import yaml
    from memcached_gitops.reconciler.decisions.status import Observation, columns, desired_conditions

    make_cr(cluster, "a", size=2)
    reconciler_for(cluster).run_cycle()
    stored = call(cluster, "GET", CR_PATH.format(ns="default") + "/a")
    [version] = yaml.safe_load((REPO / "kustomize" / "base" / "crd.yaml").read_text())["spec"]["versions"]
    printed = {}
    for column in version["additionalPrinterColumns"]:
        value: object = stored
        for step in column["jsonPath"].lstrip(".").split("."):
            value = value.get(step) if isinstance(value, dict) else None
        printed[column["name"]] = value
    assert all(value not in (None, "") for value in printed.values()), printed
    written = columns(Observation(1, 2, None, ()), desired_conditions(Observation(1, 2, None, ())))
    status_paths = {c["jsonPath"] for c in version["additionalPrinterColumns"] if c["jsonPath"].startswith(".status.")}
    assert status_paths == {f".status.{field}" for field in written}


@pytest.mark.parametrize(("owner", "deleted"), [
    ("ours", True),
    ("applied-by-argocd", False),  # our labels, no owner: Argo CD prunes it, the reconciler does not
    ("another-controller", False),
    ("a-person", False),
])
def test_diff_and_a_dry_run_agree_on_a_budget_no_longer_wanted(cluster: FakeAPIServer, tmp_path: Path, owner: str,
                                                               deleted: bool) -> None:
    """Git's size goes to 1: the rendering has no budget. The reconciler deletes the budget only when
    the Memcached controls it; ``diff`` says so (one line, counted as drift) exactly when the dry run
    says it would delete it, and else says nothing of it."""
    make_cr(cluster, "a", size=2)
    reconciler_for(cluster).run_cycle()
    path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/a-memcached"
    ours = call(cluster, "GET", path)
    if owner != "ours":
        call(cluster, "DELETE", path)
        body = {k: ours[k] for k in ("apiVersion", "kind", "spec")} | {"metadata": {"name": "a-memcached", "namespace": "default"}}
        if owner != "a-person":
            body["metadata"]["labels"] = ours["metadata"]["labels"]
        if owner == "another-controller":
            body["metadata"]["ownerReferences"] = [{"apiVersion": "cache.other.io/v1", "kind": "MemcachedCluster", "name": "a",
                                                    "uid": "0b6c2f1e-3d4a-4e5f-8a9b-1c2d3e4f5a6b", "controller": True}]
        post(cluster, "/apis/policy/v1/namespaces/default/poddisruptionbudgets", body, "?fieldManager=someone")
    scale(cluster, "a", 1)
    patch(cluster, CR_PATH.format(ns="default") + "/a", {"spec": {"size": 1}}, "application/merge-patch+json")
    cr = tmp_path / "a.yaml"
    cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 1}\n")
    cmd = [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)), str(cr)]
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    said = "default/a: PodDisruptionBudget a-memcached: not in the rendering; the reconciler deletes it\n"
    assert (diff.returncode, diff.stdout) == ((1, said) if deleted else (0, "")), diff.stdout + diff.stderr
    dry = reconciler_for(cluster, dry_run=True).run_cycle()
    assert [o.action for o in dry.outcomes] == (["corrected"] if deleted else ["unchanged"])
    reconciler_for(cluster).run_cycle()
    assert (cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is None) is deleted


@pytest.mark.parametrize("mode", [{"dry_run": True}, {"detect_only": True}])
def test_a_dry_run_says_of_the_companions_what_the_run_does(cluster: FakeAPIServer, caplog, mode: dict) -> None:
    """A foreign Pod carries the labels a new CR's selector selects: the run creates the Deployment
    but not the Service and budget (they would send clients to, or count, that Pod). A dry run and
    detect-only look for such Pods too, and so do not say the two would be created."""
    post(cluster, "/api/v1/namespaces/default/pods",
         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "labels": {"app.kubernetes.io/name": "memcached",
                                                                                      "app.kubernetes.io/instance": "a"}},
          "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
    make_cr(cluster, "a", size=2)
    caplog.set_level(logging.INFO)
    reconciler_for(cluster, **mode).run_cycle()
    said = [r.getMessage() for r in caplog.records]
    assert not [m for m in said if "a-memcached create" in m], said
    reconciler_for(cluster).run_cycle()
    assert deployment(cluster, "a") is not None and condition(cluster, "a", "Degraded")["reason"] == "SelectorOverlap"
    assert cluster.get("", "services", "default", "a-memcached") is None


def test_a_fight_outranks_the_overlap_that_holds_the_companions_back(cluster: FakeAPIServer) -> None:
    """While the fight detector says a field is fought over (the event-driven mode's DegradedCheck), the CR
    says FieldManagerFight even when a foreign Pod holds its Service and budget back: the fight is what
    pauses its corrections, and the person must learn who is undoing them. The overlap is said again
    once the fight is over."""
    post(cluster, "/api/v1/namespaces/default/pods",
         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "labels": {"app.kubernetes.io/name": "memcached",
                                                                                      "app.kubernetes.io/instance": "a"}},
          "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    assert condition(cluster, "a", "Degraded")["reason"] == "SelectorOverlap"
    declared, condition_fields = rec.status_schema()
    fight = ("FieldManagerFight", ".spec.replicas of Deployment default/a was corrected 4 times in 120s and set back each "
                                  "time by field manager kubectl; corrections paused for 10s")

    def reconcile(degraded: tuple[str, str] | None) -> None:
        cr = cluster.get("cache.example.com", "memcacheds", "default", "a")
        rec.reconcile_cr(cr, deployment(cluster, "a"), (), declared, condition_fields, degraded=lambda _cr, _corrected: degraded,
                         companions=rec.companions())

    reconcile(fight)
    degraded = condition(cluster, "a", "Degraded")
    assert (degraded["status"], degraded["reason"], degraded["message"]) == ("True", *fight)
    assert cluster.get("", "services", "default", "a-memcached") is None, "the companions are still held back"
    reconcile(None)
    assert condition(cluster, "a", "Degraded")["reason"] == "SelectorOverlap"


def test_a_deployment_correction_counts_for_the_fight_check_even_when_a_companion_write_is_refused(cluster: FakeAPIServer) -> None:
    """A correction of the Deployment that went through is one, whatever else the reconcile failed: a Service whose
    write an admission policy refuses every time must not hide a fight over the Deployment, or the reconciler
    corrects it at every retry for ever, and the CR never names who undoes it."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    declared, condition_fields = rec.status_schema()
    scale(cluster, "a", 5)
    call(cluster, "DELETE", "/api/v1/namespaces/default/services/a-memcached")  # written again: an admission policy refuses it
    cluster.faults.append(Fault(method="PATCH", path_contains="/services/a-memcached", status=422, times=100))
    seen: list[Any] = []
    cr = cluster.get("cache.example.com", "memcacheds", "default", "a")
    outcome = rec.reconcile_cr(cr, deployment(cluster, "a"), (), declared, condition_fields,
                               degraded=lambda _cr, corrected: seen.extend(corrected), companions=rec.companions())
    assert outcome.action == "failed" and deployment(cluster, "a")["spec"]["replicas"] == 2, outcome
    replicas = ("Deployment", "default/a", (("f", "spec"), ("f", "replicas")))
    assert [(c.kind, c.name, c.drift.path) for c in seen if c.kind == "Deployment"] == [replicas], seen


@pytest.mark.parametrize("dry_run", [False, True])
def test_only_a_correction_written_is_a_fights_evidence(cluster: FakeAPIServer, dry_run: bool) -> None:
    """The fight check counts the corrections our apply wrote: a Deployment created for a new CR undoes nobody's
    change, and a dry run writes nothing, so the drift it finds again at each reconcile is not set back by anyone."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster, dry_run=dry_run)
    declared, condition_fields = rec.status_schema()
    seen: list[Any] = []

    def reconcile() -> Any:
        cr = cluster.get("cache.example.com", "memcacheds", "default", "a")
        return rec.reconcile_cr(cr, deployment(cluster, "a"), (), declared, condition_fields,
                                degraded=lambda _cr, corrected: seen.extend(corrected), companions=rec.companions())

    if dry_run:
        reconciler_for(cluster).run_cycle()
        scale(cluster, "a", 5)
    outcome = reconcile()
    assert outcome.action == ("corrected" if dry_run else "created"), outcome
    assert [c for c in seen if c.kind == "Deployment"] == [], seen


def test_a_companions_correction_is_a_fights_evidence_as_the_deployments_is(cluster: FakeAPIServer) -> None:
    """A script that keeps undoing our Service fights us as one that undoes the Deployment does: each
    correction of the Service written is handed to the fight check, by kind and name, with the field."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    declared, condition_fields = rec.status_schema()
    patch(cluster, "/api/v1/namespaces/default/services/a-memcached", {"spec": {"selector": {"app.kubernetes.io/instance": "x"}}},
          "application/merge-patch+json")
    seen: list[Any] = []
    cr = cluster.get("cache.example.com", "memcacheds", "default", "a")
    outcome = rec.reconcile_cr(cr, deployment(cluster, "a"), (), declared, condition_fields,
                               degraded=lambda _cr, corrected: seen.extend(corrected), companions=rec.companions())
    assert outcome.action == "corrected", outcome
    assert [(c.kind, c.name, c.drift.field) for c in seen] == [("Service", "default/a-memcached", ".spec.selector")], seen


def test_an_adoption_is_no_fights_evidence(cluster: FakeAPIServer) -> None:
    """``--adopt`` takes a GitOps-applied Deployment over with one apply that also sets back what differs
    from the CR: that undoes no change made against us (the fields were never ours), so it is not a
    correction the fight check counts; only the corrections after it are."""
    from tests.support.fakecluster import argocd_applies

    make_cr(cluster, "m", size=2)
    argocd_applies(cluster)
    patch(cluster, DEP_PATH.format(ns="default", name="m") + "/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    rec = reconciler_for(cluster, adopt=True)
    declared, condition_fields = rec.status_schema()
    seen: list[Any] = []
    cr = cluster.get("cache.example.com", "memcacheds", "default", "m")
    outcome = rec.reconcile_cr(cr, deployment(cluster, "m"), (), declared, condition_fields,
                               degraded=lambda _cr, corrected: seen.extend(corrected), companions=rec.companions())
    assert outcome.action == "adopted" and deployment(cluster, "m")["spec"]["replicas"] == 2, outcome
    assert [c for c in seen if c.kind == "Deployment"] == [], seen


def test_status_strings_taken_from_outside_fit_the_crds_max_length(cluster: FakeAPIServer) -> None:
    """The served CRD bounds ``status.servedBy`` (253: a Pod name, a DNS subdomain) and
    ``status.lastHandledReconcileAt`` (256) by maxLength, and the API server refuses a whole status
    apply that breaks one. The replica's identity is cut to the CRD's bound, and the longest
    reconcile-now request handled is the CRD's bound (schemas/memcached-crd.yaml)."""
    from memcached_gitops.reconciler.decisions.vocabulary import REQUESTED_AT_LIMIT
    from memcached_gitops.schemas import load_crd

    [version] = [v for v in load_crd().document["spec"]["versions"] if v["name"] == "v1alpha1"]
    declared = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert REQUESTED_AT_LIMIT == declared["lastHandledReconcileAt"]["maxLength"]
    make_cr(cluster, "a")
    reconciler_for(cluster, served_by="replica-" + "r" * 300).run_cycle()
    served_by = cr_status(cluster, "a")["servedBy"]
    assert served_by == ("replica-" + "r" * 300)[:declared["servedBy"]["maxLength"]]


def test_the_status_fields_written_are_those_the_served_crds_version_keeps() -> None:
    """An apply of a status field the served CRD does not declare is an HTTP 500 (transcript 23), so the
    status carries only the declared fields, read for the version served. A status schema with
    ``x-kubernetes-preserve-unknown-fields: true`` keeps every field (apiextensions' structural
    schemas: nothing under it is pruned), so it limits nothing; neither does a version not found.
    The CRD we ship declares every field the status is built with."""
    from memcached_gitops.reconciler.decisions.status import Observation, desired_status
    from memcached_gitops.reconciler.orchestration.write_status import declared_fields
    from memcached_gitops.schemas import load_crd

    def version(name: str, status: dict) -> dict:
        return {"name": name, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"status": status}}}}

    crd = {"spec": {"versions": [
        version("v1alpha1", {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        version("v1beta1", {"type": "object", "properties": {"nodes": {"type": "array"}, "conditions": {
            "type": "array", "items": {"type": "object", "properties": {"type": {}, "status": {}}}}}})]}}
    assert declared_fields(crd, "v1alpha1") == (None, None)
    assert declared_fields(crd, "v1beta1") == (frozenset({"nodes", "conditions"}), frozenset({"type", "status"}))
    assert declared_fields(crd, "v1") == (None, None)
    declared, condition_fields = declared_fields(load_crd().document, "v1alpha1")
    assert declared is not None and condition_fields is not None
    status = desired_status(Observation(1, 1, None, ("a-0",)), None, "2026-11-28T12:00:00Z")
    assert set(status) | {"servedBy", "lastHandledReconcileAt"} <= declared
    assert all(set(c) <= condition_fields for c in status["conditions"])


def test_a_budget_deleted_by_someone_else_before_our_delete_is_what_was_asked(cluster: FakeAPIServer) -> None:
    """A companion no longer wanted (the budget of a CR scaled to one Pod) is deleted; a 404 to that
    DELETE (someone, or the garbage collector, deleted it first: ``kubectl delete`` reports the same
    NotFound) is the outcome asked for, not a refused write: the CR is not failed and nothing is retried."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is not None
    patch(cluster, CR_PATH.format(ns="default") + "/a", {"spec": {"size": 1}}, "application/merge-patch+json")
    cluster.faults.append(Fault(method="DELETE", path_contains="/poddisruptionbudgets/a-memcached", status=404, times=10))
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action != "failed" and outcome.failures == [] and outcome.error == "", outcome
    assert condition(cluster, "a", "Degraded")["status"] == "False"


def test_replicas_ignored_from_the_start_begin_at_the_size_and_stay_while_only_we_set_them(cluster: FakeAPIServer) -> None:
    """A new CR whose ignore-paths names /spec/replicas: its Deployment starts at spec.size; while no one
    else has set them, the replicas are still ours (REPLICAS-BY spec.size) and an apply for another
    change carries them, since dropping a field we alone own would set it back to the default of 1
    (transcript 21)."""
    make_cr(cluster, "a", size=3)
    patch(cluster, CR_PATH.format(ns="default") + "/a", {"metadata": {"annotations": {IGNORE_PATHS_ANNOTATION: "/spec/replicas"}}},
          "application/merge-patch+json")
    rec = reconciler_for(cluster)
    [created] = rec.run_cycle().outcomes
    assert created.action == "created" and deployment(cluster, "a")["spec"]["replicas"] == 3, created.error
    patch(cluster, CR_PATH.format(ns="default") + "/a", {"spec": {"containerPort": 11311}}, "application/merge-patch+json")
    [changed] = rec.run_cycle().outcomes
    assert changed.action == "corrected", changed.error
    assert deployment(cluster, "a")["spec"]["replicas"] == 3
    assert cr_status(cluster, "a")["replicasOwner"] == "spec.size"


#: What can hold at once in one reconcile, highest first: drift left uncorrected (--detect-only: nothing
#: is written, so nothing of the rest can be done or fail), a refused write, a fight over a field, a
#: selector that takes in another owner's Pods (the companions held back), a foreign companion.
CYCLE_PRECEDENCE = ("detect", "failure", "fight", "shared", "foreign")


def _degraded_after(api: FakeAPIServer, recs: dict[bool, Any], name: str, states: tuple[str, ...]) -> tuple[str, ...]:
    """One reconcile of the CR ``name`` (two Pods, its objects created) with ``states`` holding together:
    its Degraded condition (status, reason, message) and its STATUS column, the CR's name said as NAME."""
    if "foreign" in states:  # a person's Service holds the name of ours
        call(api, "DELETE", f"/api/v1/namespaces/default/services/{name}-memcached")
        foreign_service(api, f"{name}-memcached")
    if "shared" in states:  # the budget to create again, and a Pod of no one's with the labels our selector selects
        call(api, "DELETE", f"/apis/policy/v1/namespaces/default/poddisruptionbudgets/{name}-memcached")
        post(api, "/api/v1/namespaces/default/pods",
             {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"stray-{name}", "labels": {
                 "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": name}},
              "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
    if "failure" in states or "detect" in states:  # the image set by a person
        patch(api, DEP_PATH.format(ns="default", name=name), {"spec": {"template": {"spec": {"containers": [
            {"image": "memcached:1.6.27-alpine3.19", "name": "memcached"}]}}}}, "application/strategic-merge-patch+json",
              "?fieldManager=kubectl-set")
    if "failure" in states:
        api.faults.append(Fault(method="PATCH", path_contains=f"/deployments/{name}", status=422, times=10))
    rec = recs["detect" in states]
    declared, condition_fields = rec.status_schema()
    fight = ("FieldManagerFight", f".spec.replicas of Deployment default/{name} was corrected 4 times in 120s and set back "
                                  "each time by field manager kubectl; corrections paused for 10s") if "fight" in states else None
    rec.reconcile_cr(api.get("cache.example.com", "memcacheds", "default", name), deployment(api, name), (), declared,
                     condition_fields, degraded=lambda _cr, _corrected: fight, companions=rec.companions())
    api.faults.clear()
    degraded = condition(api, name, "Degraded")
    told = (degraded["status"], degraded["reason"], degraded["message"], cr_status(api, name)["reason"])
    return tuple(str(said).replace(name, "NAME") for said in told)


def test_of_any_two_things_a_reconcile_meets_at_once_the_higher_is_the_crs_degraded_reason(cluster: FakeAPIServer) -> None:
    """Every pair of what one reconcile can meet together (CYCLE_PRECEDENCE): the CR is Degraded with the
    higher one's reason and message, word for word as that one alone says it, and so is its STATUS
    column; never the lower. (The Deployment-derived states are ordered in decisions/test_status.py.)"""
    recs = {False: reconciler_for(cluster), True: reconciler_for(cluster, detect_only=True)}
    cases = [(state,) for state in CYCLE_PRECEDENCE] + list(itertools.combinations(CYCLE_PRECEDENCE, 2))
    for i in range(len(cases)):
        make_cr(cluster, f"c{i:02d}", size=2)
    recs[False].run_cycle()
    told = {states: _degraded_after(cluster, recs, f"c{i:02d}", states) for i, states in enumerate(cases)}
    assert [told[(state,)][:2] for state in CYCLE_PRECEDENCE] == [
        ("True", "DriftDetected"), ("True", "ApplyFailed"), ("True", "FieldManagerFight"), ("True", "SelectorOverlap"),
        ("True", "ResourceNotOwned")], told
    for pair in itertools.combinations(CYCLE_PRECEDENCE, 2):
        assert told[pair] == told[pair[:1]], pair


#: Why a CR is not served as it asks, highest first: it is being deleted (nothing at all), a person
#: paused it (one condition says so), then what the reconciler refuses, in its order: the reconcile
#: annotation, the reconcile-now request, the spec, the ignore-paths.
REFUSAL_PRECEDENCE = ("deleting", "paused", "bad-mode", "long-request", "invalid-spec", "bad-ignore")


def test_of_any_two_reasons_not_to_serve_a_cr_the_higher_is_what_it_says(cluster: FakeAPIServer) -> None:
    """Every pair of reasons a new CR is not served as it asks (REFUSAL_PRECEDENCE) that can hold together
    (a pause and an unsupported mode are one annotation): the CR says the higher one, word for word as
    that one alone says it (its action, error, and Ready condition), and nothing of it is written but
    its status; never the lower, never a mix."""
    from memcached_gitops.reconciler.decisions.vocabulary import REQUESTED_AT_ANNOTATION

    rec = reconciler_for(cluster)
    declared, condition_fields = rec.status_schema()

    def refused(name: str, states: tuple[str, ...]) -> tuple[Any, ...]:
        make_cr(cluster, name, size=2)
        cr = cluster.get("cache.example.com", "memcacheds", "default", name)
        annotations = cr["metadata"].setdefault("annotations", {})
        if "deleting" in states:
            cr["metadata"] |= {"deletionTimestamp": "2026-11-28T12:00:00Z", "finalizers": ["example.com/hold"]}
        if "paused" in states or "bad-mode" in states:
            annotations[RECONCILE_ANNOTATION] = "disabled" if "paused" in states else "maybe"
        if "long-request" in states:
            annotations[REQUESTED_AT_ANNOTATION] = "r" * 300
        if "invalid-spec" in states:
            cr["spec"]["size"] = 7
        if "bad-ignore" in states:
            annotations[IGNORE_PATHS_ANNOTATION] = "spec/replicas"
        cluster.reset_log()
        outcome = rec.reconcile_cr(cr, None, (), declared, condition_fields, companions=rec.companions())
        ready = condition(cluster, name, "Ready")
        others = [w for w in writes(cluster) if not w.endswith("/status") and "/events" not in w]
        return outcome.action, outcome.error, ready.get("reason", ""), ready.get("message", ""), others

    cases = [(state,) for state in REFUSAL_PRECEDENCE] + [
        pair for pair in itertools.combinations(REFUSAL_PRECEDENCE, 2) if pair != ("paused", "bad-mode")]
    told = {states: refused(f"r{i:02d}", states) for i, states in enumerate(cases)}
    assert [told[(state,)][0::2][:2] for state in REFUSAL_PRECEDENCE] == [
        ("unchanged", ""), ("suspended", "ReconcileDisabled"), ("invalid", "InvalidAnnotation"), ("invalid", "InvalidAnnotation"),
        ("invalid", "InvalidSpec"), ("invalid", "InvalidIgnorePaths")], told
    assert all(said[4] == [] for said in told.values()), told
    for pair in cases[len(REFUSAL_PRECEDENCE):]:
        assert told[pair] == told[pair[:1]], pair


def test_a_cycles_duration_counts_its_lists_and_an_apply_is_stamped_when_its_answer_came() -> None:
    """The process clock is read before the work it measures and after the work it stamps: a cycle's
    duration includes its LISTs (a slow LIST of the CRs counts), and a correction's applied_at (the
    fight detector's and the drift latency's time) is when the API server's answer came, not before
    the apply was sent."""
    with FakeAPIServer(namespaces=("default",)) as api:
        make_cr(api, "m", size=2)
        rec = reconciler_for(api)
        rec.run_cycle()
        drift_image(api)
        api.faults += [Fault(method="GET", path_contains="/memcacheds", status=0, delay=0.2),
                       Fault(method="PATCH", path_contains="/deployments/m", status=0, delay=0.2)]
        sent = rec.process_clock.monotonic().seconds
        report = rec.run_cycle()
        [outcome] = report.outcomes
        assert outcome.action == "corrected", outcome.error
        assert report.duration >= 0.4, report.duration
        assert outcome.applied_at >= sent + 0.4, (sent, outcome.applied_at)


def test_a_cycles_duration_and_apply_stamps_are_the_monotonic_clocks_whatever_the_wall_clock_does() -> None:
    """An NTP step back of an hour at every reading of the wall clock during a cycle changes neither
    its duration (the "cycle done in" line, never negative nor the seconds since 1970) nor a correction's applied_at
    (the drift latency's and the fight detector's instant): both are read on the monotonic clock."""
    with FakeAPIServer(namespaces=("default",)) as api:
        make_cr(api, "m", size=2)
        rec = reconciler_for(api)
        rec.run_cycle()
        drift_image(api)
        rec.process_clock = clock = SteppingBack()
        report = rec.run_cycle()
        [outcome] = report.outcomes
        assert outcome.action == "corrected", outcome.error
        assert 0 < report.duration <= clock.latest - clock.start, report.duration
        assert clock.start < outcome.applied_at <= clock.latest, outcome.applied_at


def test_a_cycle_that_could_not_list_reports_its_duration_on_the_monotonic_clock() -> None:
    """The incomplete cycle's duration (its "cycle done in" line, exit 2) is the monotonic clock's
    too: the wall clock stepping back while the LIST failed makes it neither negative nor the seconds since 1970."""
    with FakeAPIServer(namespaces=("default",)) as api:
        api.faults.append(Fault(method="GET", path_contains="/memcacheds", status=403, times=100))
        rec = reconciler_for(api)
        rec.process_clock = clock = SteppingBack()
        report = rec.run_cycle()
        assert not report.complete and report.error.startswith("listing failed")
        assert 0 < report.duration <= clock.latest - clock.start, report.duration


def test_what_a_reconcile_wrote_is_told_even_when_a_later_step_fails() -> None:
    """A reconcile that created the Deployment and its companions and then failed (its status write
    refused after the retries) still posts its one Normal Event naming what it created, beside the
    Warning that says the reconcile failed: the objects exist whatever happened after."""
    with FakeAPIServer(namespaces=("default",)) as api:
        make_cr(api, "m", size=2)
        api.faults.append(Fault(method="PATCH", path_contains="/memcacheds/m/status", status=500, times=100))
        [outcome] = reconciler_for(api).run_cycle().outcomes
        assert outcome.action == "failed" and deployment(api, "m") is not None
        events = sorted((e["type"], e["reason"]) for k, e in api.objects.items() if k[1] == "events")
        assert events == [("Normal", "DeploymentCreated"), ("Warning", "ReconcileFailed")], events


@pytest.mark.parametrize(("moved", "other_change", "lazy", "written", "deferred"), [
    (True, False, True, False, True), (True, False, False, True, False), (False, False, True, False, False),
    (True, True, True, True, False), (False, True, True, True, False)])
def test_a_status_whose_only_change_is_served_by_waits_only_when_asked_to(
        moved: bool, other_change: bool, lazy: bool, written: bool, deferred: bool) -> None:
    """status.servedBy (the replica that serves the CR) is written with any other change of the status
    at once; alone, it waits when the caller asks for it (lazy_served_by: the outcome says it waits, and
    the caller writes it later), and is written at once otherwise. Nothing to write is not a wait."""
    with FakeAPIServer(namespaces=("default",)) as api:
        make_cr(api, "m", size=1)
        reconciler_for(api, served_by="replica-a").run_cycle()
        rec = reconciler_for(api, served_by="replica-b" if moved else "replica-a")
        declared, condition_fields = rec.status_schema()
        pods = ("m-5d4f-x",) if other_change else ()
        api.reset_log()
        outcome = rec.reconcile_cr(api.get("cache.example.com", "memcacheds", "default", "m"), deployment(api, "m"), pods,
                                   declared, condition_fields, lazy_served_by=lazy, companions=rec.companions())
        assert (bool([w for w in writes(api) if w.endswith("/status")]), outcome.served_by_deferred) == (written, deferred)
        status = cr_status(api, "m")
        assert status["servedBy"] == ("replica-b" if moved and written else "replica-a")
        assert status["nodes"] == (list(pods) if written else [])
