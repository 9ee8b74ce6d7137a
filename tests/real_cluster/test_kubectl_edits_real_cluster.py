"""tests/reconciler/orchestration/test_kubectl_edits.py's findings and edit matrix against a real cluster, when one is configured
(MEMCACHED_GITOPS_E2E_KUBECONFIG, as tests/real_cluster/test_reconciler_real_cluster.py; kube-controller-manager with
WITH_KCM=1 for what needs Pods). The matrix's rows must equal docs/reference/kubectl-edits.md, which was
computed in the fake: a row the real server answers otherwise fails here, and the table is then
re-recorded from the cluster.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qsl

import pytest
from memcached_gitops.reconciler.client.api import APIError, KubeAPI
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.render import render
from memcached_gitops.schemas import load_crd

from tests.conftest import REPO
from tests.kubectl_edits import FAMILIES, KINDS, METHODS, change, value_at
from tests.real_cluster.test_reconciler_real_cluster import KUBECONFIG, _token_kubeconfig, pytestmark  # noqa: F401  (pytestmark: skipped without a cluster)
from tests.real_cluster.test_reconciler_real_cluster import real as _cluster_namespace

KUBECTL_UA = "kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722"
API_VERSIONS = {"Deployment": "apps/v1", "Service": "v1", "PodDisruptionBudget": "policy/v1"}
CRS = "/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds"


@pytest.fixture
def real():
    """test_reconciler_real_cluster's: the CRD installed, a namespace of its own, deleted after."""
    yield from _cluster_namespace.__wrapped__()


def make_cr(api: KubeAPI, ns: str, name: str, size: int = 2, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} | ({"annotations": annotations} if annotations else {})
    created: dict[str, Any] = api.request("POST", CRS.format(ns=ns), body={"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                                                           "metadata": meta, "spec": {"size": size}})
    return created


def conditions(api: KubeAPI, ns: str, name: str) -> dict[str, dict[str, Any]]:
    status = api.request("GET", f"{CRS.format(ns=ns)}/{name}").get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or []}


def sender(person: KubeAPI):
    def send(method: str, path: str, query: str, ctype: str, body: Any) -> tuple[int, Any]:
        params = dict(parse_qsl(query.lstrip("?")))
        payload = body if ctype == "application/apply-patch+yaml" else json.loads(body)
        try:
            return 200, person.request(method, path, query=params or None, body=payload, content_type=ctype)
        except APIError as exc:
            return exc.status, exc.message
    return send


def test_the_service_port_edit_is_corrected_in_one_cycle_on_a_real_cluster(real) -> None:
    api, ns = real
    make_cr(api, ns, "m")
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    rec.run_cycle()
    person = KubeAPI.connect(KUBECONFIG, user_agent=KUBECTL_UA)
    person.request("PATCH", f"/api/v1/namespaces/{ns}/services/m-memcached", query={"fieldManager": "kubectl-patch"},
                   body=[{"op": "replace", "path": "/spec/ports/0/port", "value": 11299}], content_type="application/json-patch+json")
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and outcome.failures == [], outcome.error
    service = api.request("GET", f"/api/v1/namespaces/{ns}/services/m-memcached")
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("memcached", 11211)]


def test_a_refused_write_is_visible_and_blocks_nothing_on_a_real_cluster(real, tmp_path) -> None:
    """The reconciler's token may not patch Services (a Role without it): the Service's correction is
    a 403, reported on the CR with the object and the server's message, while the deleted budget is
    still recreated."""
    api, ns = real
    make_cr(api, ns, "m")
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    rec.run_cycle()
    rules = [
        {"apiGroups": ["cache.example.com"], "resources": ["memcacheds"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["cache.example.com"], "resources": ["memcacheds/status"], "verbs": ["patch", "update"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch", "create", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch", "create"]},  # no patch
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
        {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    api.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", body={"apiVersion": "v1", "kind": "ServiceAccount",
                                                                          "metadata": {"name": "narrow"}})
    api.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
                body={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "narrow"}, "rules": rules})
    api.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                body={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "narrow"},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "narrow"},
                      "subjects": [{"kind": "ServiceAccount", "name": "narrow", "namespace": ns}]})
    api.request("PATCH", f"/api/v1/namespaces/{ns}/services/m-memcached", body={"spec": {"selector": {"app.kubernetes.io/instance": "x"}}},
                content_type="application/merge-patch+json")
    api.request("DELETE", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/m-memcached")
    time.sleep(1)  # the RoleBinding reaches the authorizer's cache
    narrow = KubeAPI.connect(_token_kubeconfig(api, ns, "narrow", tmp_path))
    [outcome] = Reconciler(narrow, load_crd(), Options(namespaces=(ns,))).run_cycle().outcomes
    assert [(f.kind, f.status) for f in outcome.failures] == [("Service", 403)] and outcome.permanent
    api.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/m-memcached")  # recreated: no 404
    degraded = conditions(api, ns, "m")["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "ApplyFailed")
    assert degraded["message"].startswith(f"Service {ns}/m-memcached: apply refused: HTTP 403")
    events = api.request("GET", f"/api/v1/namespaces/{ns}/events", query={"fieldSelector": "reason=ApplyFailed"})["items"]
    assert [e["type"] for e in events] == ["Warning"]


def test_status_tells_the_truth_on_a_real_cluster(real) -> None:
    """reconcile: maybe is Stalled InvalidAnnotation with the asked size; disabled replaces the
    conditions with one; enabled brings them back."""
    api, ns = real
    make_cr(api, ns, "m", annotations={"cache.example.com/reconcile": "maybe"})
    rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    rec.run_cycle()
    status = api.request("GET", f"{CRS.format(ns=ns)}/m")["status"]
    assert conditions(api, ns, "m")["Stalled"]["reason"] == "InvalidAnnotation" and status["ready"].endswith("/2")
    for value, expected in (("disabled", {"Ready"}), ("enabled", {"Available", "Progressing", "Degraded", "Ready"})):
        api.request("PATCH", f"{CRS.format(ns=ns)}/m", body={"metadata": {"annotations": {"cache.example.com/reconcile": value}}},
                    content_type="application/merge-patch+json")
        rec.run_cycle()
        assert expected <= set(conditions(api, ns, "m")), value
    assert conditions(api, ns, "m")["Ready"]["reason"] != "ReconcileDisabled"


def test_a_shared_selector_is_reported_before_adopt_and_gets_no_service_on_a_real_cluster(real) -> None:
    """Needs Pods, so kube-controller-manager (WITH_KCM=1): two Deployments as the kubebuilder book's
    operator makes them (app.kubernetes.io/name: project for both)."""
    from tests.support.go_operator import MANAGER_UA

    api, ns = real
    go = KubeAPI.connect(KUBECONFIG, user_agent=MANAGER_UA)
    labels = {"app.kubernetes.io/name": "project"}
    for name in ("a", "b"):
        cr = make_cr(api, ns, name, size=1)
        go.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body={
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "ownerReferences": [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": name,
                                                            "uid": cr["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [{"name": "memcached", "image": "memcached:1.6.26-alpine3.19", "ports": [{"containerPort": 11211}]}]}}}})
    deadline = time.monotonic() + 20
    while len(api.request("GET", f"/api/v1/namespaces/{ns}/pods")["items"]) < 2:
        if time.monotonic() > deadline:
            pytest.skip("no Pods: start the kit with WITH_KCM=1")
        time.sleep(1)
    Reconciler(api, load_crd(), Options(namespaces=(ns,))).run_cycle()
    for name, other in (("a", "b"), ("b", "a")):
        degraded = conditions(api, ns, name)["Degraded"]
        assert (degraded["status"], degraded["reason"]) == ("False", "SelectorOverlap")
        assert f"Deployment {ns}/{other}" in degraded["message"]
    Reconciler(api, load_crd(), Options(namespaces=(ns,), adopt=True)).run_cycle()
    for name in ("a", "b"):
        assert conditions(api, ns, name)["Degraded"]["status"] == "True"
        with pytest.raises(APIError):
            api.request("GET", f"/api/v1/namespaces/{ns}/services/{name}-memcached")


def test_the_guides_finalizer_step_on_a_real_cluster(real) -> None:
    import re

    api, ns = real
    guide = (REPO / "docs" / "guides" / "migrate-from-go-operator.md").read_text()
    [body] = re.findall(r"--type=json \\\n\s+-p '(\[.*?\])'", guide)
    make_cr(api, ns, "m", size=1)
    path = f"{CRS.format(ns=ns)}/m"
    api.request("PATCH", path, body={"metadata": {"finalizers": ["cache.example.com/finalizer"]}},
                content_type="application/merge-patch+json")
    api.request("DELETE", path)
    assert api.request("GET", path)["metadata"]["deletionTimestamp"]
    api.request("PATCH", path, query={"fieldManager": "kubectl-patch"}, body=json.loads(body), content_type="application/json-patch+json")
    with pytest.raises(APIError) as gone:
        api.request("GET", path)
    assert gone.value.status == 404


def _documented() -> dict[str, dict[str, str]]:
    from tests.kubectl_edits import documented

    return documented()


def _row(api: KubeAPI, ns: str, family: str) -> dict[str, str]:
    kind, pointer, value = FAMILIES[family]
    person = KubeAPI.connect(KUBECONFIG, user_agent=KUBECTL_UA)
    row: dict[str, str] = {}
    for i, method in enumerate(METHODS):
        name = f"e{i}"
        make_cr(api, ns, name)
        rec = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
        rec.run_cycle()
        obj_name = name if kind == "Deployment" else f"{name}-memcached"
        path = KINDS[kind][0].format(ns=ns, name=obj_name)
        code = change(sender(person), kind, ns, obj_name, method, pointer, value, api.request("GET", path), API_VERSIONS[kind])
        if code is None or code != 200:
            row[method] = "n/a" if code is None else f"refused ({code})"
            continue
        outcome = next(o for o in rec.run_cycle().outcomes if o.name == name)
        cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": ns},
              "spec": {"size": 2}}
        wanted = value_at(next(m for m in render(cr) if m["kind"] == kind), pointer)
        now = value_at(api.request("GET", path), pointer)
        row[method] = "corrected" if now == wanted and not outcome.error else f"left at {json.dumps(now)} ({outcome.error})"
    return row


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_edit_matrix_on_a_real_cluster(real, family: str) -> None:
    api, ns = real
    assert _row(api, ns, family) == _documented()[family]
