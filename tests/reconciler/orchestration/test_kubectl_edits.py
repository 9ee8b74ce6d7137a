"""A person's kubectl edit of any object a Memcached owns is corrected in one cycle, and every refused
write is visible (issue: the Service port edit that looped on 422, silently, and blocked the budget).

In the fake API server; the same matrix runs on a real cluster in test_kubectl_edits_real_cluster.py
(WITH_KCM=1). docs/reference/kubectl-edits.md holds the table this file computes.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.decisions.revoke import revocation, revoked, split, union
from memcached_gitops.render import render

from fakeapi.server import FakeAPIServer, Fault
from tests.kubectl_edits import FAMILIES, IGNORED, METHODS, TABLE, change, documented, value_at
from tests.support.fakecluster import condition, make_cr, patch, reconciler_for

API_VERSIONS = {"Deployment": "apps/v1", "Service": "v1", "PodDisruptionBudget": "policy/v1"}
GROUPS = {"Deployment": ("apps", "deployments"), "Service": ("", "services"), "PodDisruptionBudget": ("policy", "poddisruptionbudgets")}


# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default",)


def events(api: FakeAPIServer, reason: str) -> list[dict[str, Any]]:
    return [o for k, o in api.objects.items() if k[1] == "events" and o.get("reason") == reason]


# ---- the findings 1 and 2, in the fake


def test_a_service_port_replaced_with_kubectl_patch_is_put_back_in_one_cycle(cluster: FakeAPIServer) -> None:
    """Finding 1: ports are keyed by port and protocol, so the person's 11299 stayed beside our 11211
    and the API server refused the Service (422 Duplicate value). kubectl-patch's fields are taken
    back first (revoke.py, as Flux does), so our apply removes their port."""
    make_cr(cluster, "m", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    svc = "/api/v1/namespaces/default/services/m-memcached"
    patch(cluster, svc, [{"op": "replace", "path": "/spec/ports/0/port", "value": 11299}], "application/json-patch+json",
          "?fieldManager=kubectl-patch")
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and outcome.failures == []
    service = cluster.get("", "services", "default", "m-memcached")
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("memcached", 11211)]
    assert [e["manager"] for e in service["metadata"]["managedFields"]] == ["memcached-gitops"], "kubectl-patch's fields are ours again"
    assert condition(cluster, "m", "Degraded")["status"] == "False"
    [event] = [e for e in events(cluster, "DriftCorrected") if "Service" in e["message"]]
    assert "kubectl-patch" in event["message"], "the correction names who changed it"


def test_a_refused_write_is_degraded_with_its_object_and_message_and_the_budget_still_comes_back(cluster: FakeAPIServer) -> None:
    """Finding 2 and 'every failed write visible': the Service's apply refused, the deleted budget is
    still recreated; Degraded=True ApplyFailed names the Service and carries the server's message; a
    Warning Event says it; the outcome records each companion's result apart."""
    make_cr(cluster, "m", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    patch(cluster, "/api/v1/namespaces/default/services/m-memcached", {"spec": {"selector": {"app.kubernetes.io/instance": "x"}}},
          "application/merge-patch+json")
    cluster.handle("DELETE", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/m-memcached", {}, b"")
    cluster.faults.append(Fault(method="PATCH", path_contains="/services/m-memcached", status=422, times=100))
    [outcome] = rec.run_cycle().outcomes
    assert cluster.get("policy", "poddisruptionbudgets", "default", "m-memcached") is not None, "one failure never blocks the others"
    assert outcome.action == "failed" and outcome.permanent
    assert [(f.kind, f.name, f.verb, f.status) for f in outcome.failures] == [("Service", "default/m-memcached", "apply", 422)]
    assert [c["kind"] for c in outcome.companions.applied] == ["PodDisruptionBudget"]
    degraded = condition(cluster, "m", "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "ApplyFailed"
    assert degraded["message"].startswith("Service default/m-memcached: apply refused: HTTP 422: injected fault 422")
    assert condition(cluster, "m", "Ready")["status"] == "False"
    [warning] = events(cluster, "ApplyFailed")
    assert warning["type"] == "Warning" and warning["message"] == degraded["message"]
    cluster.faults.clear()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and condition(cluster, "m", "Degraded")["status"] == "False", "the next success clears it"


def test_a_refused_deployment_apply_does_not_stop_the_companions(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "m", size=2)
    cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/m", status=403, times=100))
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    assert [(f.kind, f.status) for f in outcome.failures] == [("Deployment", 403)] and outcome.permanent
    assert cluster.get("", "services", "default", "m-memcached") is not None
    assert cluster.get("policy", "poddisruptionbudgets", "default", "m-memcached") is not None
    assert condition(cluster, "m", "Degraded")["message"].startswith("Deployment default/m: apply refused: HTTP 403")


@pytest.mark.parametrize(("status", "permanent"), [(400, True), (403, True), (422, True), (409, False), (500, False)])
def test_a_refusal_the_same_request_would_get_again_waits_for_a_change(cluster: FakeAPIServer, status: int, permanent: bool) -> None:
    """A 400 (a body the API server cannot decode as sent), a 403 (RBAC, an admission policy) or a 422
    (invalid) comes back for the same apply until something changes: permanent, retried at the resync or
    on a change. A conflict or a server error may pass on its own: retried with backoff."""
    make_cr(cluster, "m", size=2)
    cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/m", status=status, times=100))
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    assert [(f.kind, f.status) for f in outcome.failures] == [("Deployment", status)]
    assert outcome.permanent is permanent



@pytest.mark.parametrize(("deployment_status", "service_status", "permanent"),
                         [(422, 403, True), (422, 500, False), (409, 403, False), (None, None, False)])
def test_a_reconcile_waits_for_a_change_only_when_every_refusal_would_come_again(
        cluster: FakeAPIServer, deployment_status: int | None, service_status: int | None, permanent: bool) -> None:
    """Two writes of one reconcile refused at once (the new Deployment's and its Service's): the
    reconcile waits for a change (permanent) only when each refusal is one the same request would get
    again; one that may pass on its own (a conflict, a server error) has the whole reconcile retried
    with backoff. A reconcile that nothing refused is not permanent."""
    make_cr(cluster, "m", size=2)
    for path, status in (("/deployments/m", deployment_status), ("/services/m-memcached", service_status)):
        if status is not None:
            cluster.faults.append(Fault(method="PATCH", path_contains=path, status=status, times=100))
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    refused = [status for status in (deployment_status, service_status) if status is not None]
    assert sorted(f.status for f in outcome.failures) == sorted(refused)
    assert outcome.permanent is permanent


# ---- revoke.py, pure


def test_only_a_persons_managers_are_revoked_and_ignored_paths_stay_with_their_owner() -> None:
    theirs = {"f:spec": {"f:ports": {'k:{"port":11299,"protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}}},
                         "f:maxUnavailable": {}}}
    live = {"metadata": {"resourceVersion": "7", "managedFields": [
        {"manager": "memcached-gitops", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:selector": {}}}},
        {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": theirs},
        {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "subresource": "scale", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:annotations": {}}}},
        {"manager": "platform", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:type": {}}}},
    ]}}
    [test, replace] = revocation(live, "memcached-gitops", unknown={"kube-controller-manager"}, pointers=(("spec", "maxUnavailable"),))
    assert test == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    entries = replace["value"]
    assert [(e["manager"], e.get("subresource", "")) for e in entries] == [
        ("memcached-gitops", ""), ("kubectl-edit", ""), ("kubectl", "scale"), ("kube-controller-manager", ""), ("platform", "")]
    assert entries[0]["fieldsV1"] == {"f:spec": {"f:selector": {}, "f:ports": theirs["f:spec"]["f:ports"]}}
    assert entries[1]["fieldsV1"] == {"f:spec": {"f:maxUnavailable": {}}}, "the ignored path stays theirs"
    assert revocation(live, "memcached-gitops", unknown={"platform"})[1]["value"][0]["fieldsV1"]["f:spec"]["f:type"] == {}
    nobody = {"metadata": {"managedFields": [e for e in live["metadata"]["managedFields"] if e["manager"] != "kubectl-edit"]}}
    assert revocation(nobody, "memcached-gitops") == [], "nothing to take back, no write"


def test_which_entries_are_a_persons() -> None:
    def entry(manager: str, operation: str = "Update", sub: str = "") -> dict[str, Any]:
        return {"manager": manager, "operation": operation, **({"subresource": sub} if sub else {})}

    ours = "memcached-gitops"
    for person in ("kubectl", "kubectl-edit", "kubectl-patch", "kubectl-client-side-apply", "kubectl-replace", "before-first-apply"):
        assert revoked(entry(person), ours), person
        assert not revoked(entry(person, sub="scale"), ours), "a subresource's entry is never taken (kubectl scale, an HPA)"
    assert revoked(entry("kubectl", "Apply"), ours), "kubectl apply --server-side --force-conflicts"
    for kept in (entry("argocd-controller", "Apply"), entry("kubectl-rollout"), entry("kubectl-set"), entry(ours, "Apply"),
                 entry(ours)):
        assert not revoked(kept, ours), kept
    assert revoked(entry("kubectl-set"), ours, unknown={"kubectl-set"}), "an unknown updater of a drifted field of ours"
    assert not revoked(entry("kube-controller-manager"), ours, unknown={"kube-controller-manager"})


def test_without_an_apply_entry_of_ours_the_first_persons_becomes_it() -> None:
    live = {"metadata": {"resourceVersion": "3", "managedFields": [
        {"manager": "before-first-apply", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:selector": {}}}},
        {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:selector": {"f:a": {}}}}}]}}
    [_, replace] = revocation(live, "memcached-gitops")
    assert replace["value"] == [{"manager": "memcached-gitops", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                                 "fieldsV1": {"f:spec": {"f:selector": {".": {}, "f:a": {}}}}}]


def test_an_index_in_an_ignored_pointer_keeps_that_field_in_every_item() -> None:
    tree = {"f:spec": {"f:ports": {'k:{"port":1}': {"f:appProtocol": {}, "f:name": {}}}}}
    assert split(tree, (("spec", "ports", "0", "appProtocol"),)) == (
        {"f:spec": {"f:ports": {'k:{"port":1}': {"f:appProtocol": {}}}}}, {"f:spec": {"f:ports": {'k:{"port":1}': {"f:name": {}}}}})
    assert split({"f:spec": {"f:selector": {}}}, (("spec", "selector", "matchLabels"),)) == ({"f:spec": {"f:selector": {}}}, None), \
        "an atomic value is kept whole"


#: fieldsV1 keys (Kubernetes docs, Server-Side Apply): a field, an item of a list keyed by merge key, an item of a set
_KEYS = ("f:spec", "f:ports", "f:appProtocol", "f:name", 'k:{"port":1}', 'k:{"port":2}', 'v:"a"')
_STEP_NAMES = ("spec", "ports", "appProtocol", "name", "0", "3")
_LEAF_PATHS = st.one_of(st.lists(st.sampled_from(_KEYS), min_size=1, max_size=4).map(tuple),
                        st.lists(st.sampled_from(_KEYS), max_size=2).map(lambda rest: ("f:spec", "f:ports", *rest)))  # siblings


def _tree(paths: list[tuple]) -> dict:
    tree: dict = {}
    for path in paths:
        node = tree
        for key in path:
            node = node.setdefault(key, {})
    return tree


def _leaves(tree: dict, path: tuple = ()) -> set[tuple]:
    return {leaf for k, v in tree.items() for leaf in (_leaves(v, path + (k,)) if v else {path + (k,)})}


@settings(max_examples=100, deadline=None)
@given(st.lists(_LEAF_PATHS, min_size=1, max_size=5),
       st.lists(st.one_of(st.lists(st.sampled_from(_STEP_NAMES), max_size=4).map(tuple),
                          st.lists(st.sampled_from(_STEP_NAMES), max_size=2).map(lambda rest: ("spec", "ports", *rest))), max_size=3))
def test_a_split_keeps_each_field_a_pointer_reaches_and_moves_every_other(paths: list, pointers: list) -> None:
    """Each owned field (a leaf of fieldsV1) stays when an ignored pointer reaches it or reaches into it
    (a pointer's index step stands for every keyed or set item: managedFields never index), and moves
    otherwise; what stays and what moves are the whole tree again, and nothing is in both."""
    tree = _tree(paths)

    def step_matches(step: str, key: str) -> bool:
        return key == f"f:{step}" or (key[:2] in ("k:", "v:") and step.isdigit())

    stays = {leaf for leaf in _leaves(tree) if any(all(map(step_matches, p, leaf)) for p in pointers)}
    kept, moved = split(tree, tuple(pointers))
    assert _leaves(kept or {}) == stays
    assert _leaves(moved or {}) == _leaves(tree) - stays
    assert union(kept or {}, moved or {}) == tree


# ---- the matrix: every field family of each owned kind x every way kubectl changes it


def _send(api: FakeAPIServer):
    def send(method: str, path: str, query: str, ctype: str, body: Any) -> tuple[int, Any]:
        code, _, data = api.handle(method, path + query, {"User-Agent": "kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722",
                                                           "Content-Type": ctype}, body.encode())
        return code, data
    return send


def rendered_value(kind: str, name: str, pointer: str) -> Any:
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": "default"},
          "spec": {"size": 2}}
    return value_at(next(m for m in render(cr) if m["kind"] == kind), pointer)


def outcome_of(api: FakeAPIServer, family: str, method: str, index: int, ignore: bool) -> str:
    """One cell: the person's change to a fresh CR's object; what one cycle then leaves."""
    kind, pointer, value = FAMILIES[family]
    name = f"e{index}"
    make_cr(api, name, size=2)
    if ignore:
        patch(api, f"/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/{name}",
              {"metadata": {"annotations": {"cache.example.com/ignore-paths": f"{kind}:{pointer}"}}}, "application/merge-patch+json")
    rec = reconciler_for(api)
    rec.run_cycle()
    obj_name = name if kind == "Deployment" else f"{name}-memcached"
    live = api.get(*GROUPS[kind][:1], GROUPS[kind][1], "default", obj_name)
    code = change(_send(api), kind, "default", obj_name, method, pointer, value, live, API_VERSIONS[kind])
    if code is None:
        return "n/a"
    if code != 200:
        return f"refused ({code})"
    assert value_at(api.get(GROUPS[kind][0], GROUPS[kind][1], "default", obj_name), pointer) != rendered_value(kind, name, pointer)
    outcomes = {o.name: o for o in rec.run_cycle().outcomes}
    now = value_at(api.get(GROUPS[kind][0], GROUPS[kind][1], "default", obj_name), pointer)
    assert outcomes[name].error == "", (family, method, outcomes[name].error)
    if now == rendered_value(kind, name, pointer):
        return "corrected"
    return "ignored by rule" if ignore and now == value else f"left at {json.dumps(now)}"


def matrix_row(family: str, ignore: bool = False) -> dict[str, str]:
    with FakeAPIServer(namespaces=("default",)) as api:
        return {method: outcome_of(api, family, method, i, ignore) for i, method in enumerate(METHODS)}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_kubectl_change_of_an_owned_field_is_corrected_in_one_cycle(family: str) -> None:
    row = matrix_row(family)
    assert set(row.values()) <= {"corrected", "n/a", "refused (422)"}, row
    assert documented()[family] == row, f"docs/reference/kubectl-edits.md's row for {family}"


@pytest.mark.parametrize("family", IGNORED)
def test_a_field_the_cr_ignores_stays_as_the_person_left_it(family: str) -> None:
    row = matrix_row(family, ignore=True)
    assert set(row.values()) <= {"ignored by rule", "n/a"}, row
    assert documented()[f"{family} (ignore-paths)"] == row


def test_the_documented_table_is_complete() -> None:
    assert set(documented()) == {*FAMILIES, *(f"{f} (ignore-paths)" for f in IGNORED)}
    assert re.search(r"fake API\s+server", TABLE.read_text()), "the table says where it was computed"


# ---- the event-driven controller: a refused write counted, and not retried at the backoff's pace


def test_a_permanently_refused_write_is_counted_and_waits_for_a_change_not_the_backoff(cluster: FakeAPIServer) -> None:
    from tests.support.controller import running, settle, wait_for

    svc = "/api/v1/namespaces/default/services/m-memcached"
    with running(cluster) as controller:
        make_cr(cluster, "m", size=2)
        wait_for(lambda: cluster.get("policy", "poddisruptionbudgets", "default", "m-memcached"), what="the budget")
        settle(cluster)
        cluster.faults.append(Fault(method="PATCH", path_contains="/services/m-memcached", status=422, times=1000, user_agent="memcached"))
        started = time.monotonic()
        patch(cluster, svc, {"spec": {"selector": {"app.kubernetes.io/instance": "x"}}}, "application/merge-patch+json")
        wait_for(lambda: condition(cluster, "m", "Degraded").get("reason") == "ApplyFailed", what="Degraded ApplyFailed")
        def applies() -> int:
            return len([r for r in cluster.log if r.method == "PATCH" and r.path == svc and r.received >= started
                        and r.user_agent.startswith("memcached")])

        settle(cluster)  # the status write's own event may bring one more try, no more
        tried = applies()
        time.sleep(1.5)  # the backoff (5 ms doubling) would have retried several times by now
        assert tried <= 2 and applies() == tried, f"a 422 waits for the resync or a change, not the backoff: {applies()} applies"
        metrics = controller.metrics
        assert metrics.value("controller_runtime_reconcile_errors_total", {"controller": "memcached"}) >= 1
        assert metrics.value("memcached_gitops_write_failures_total", {"kind": "Service", "code": "422"}) == tried
        assert [e["type"] for e in events(cluster, "ApplyFailed")] == ["Warning"]
        cluster.faults.clear()
        patch(cluster, "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/m", {"metadata": {"labels": {"team": "a"}}},
              "application/merge-patch+json")  # a change: retried now
        wait_for(lambda: cluster.get("", "services", "default", "m-memcached")["spec"]["selector"]["app.kubernetes.io/instance"] == "m",
                 what="the selector put back")
        wait_for(lambda: condition(cluster, "m", "Degraded").get("status") == "False", what="Degraded cleared")


def test_the_event_driven_mode_puts_the_service_port_back_from_its_watch_event(cluster: FakeAPIServer) -> None:
    """The same edit, corrected from the Service's event with the informer's cached managedFields."""
    from tests.support.controller import running, settle, wait_for

    svc = "/api/v1/namespaces/default/services/m-memcached"
    with running(cluster):
        make_cr(cluster, "m", size=2)
        wait_for(lambda: cluster.get("", "services", "default", "m-memcached"), what="the Service")
        settle(cluster)
        patch(cluster, svc, [{"op": "replace", "path": "/spec/ports/0/port", "value": 11299}], "application/json-patch+json",
              "?fieldManager=kubectl-patch")
        wait_for(lambda: [p["port"] for p in cluster.get("", "services", "default", "m-memcached")["spec"]["ports"]] == [11211],
                 what="our port back, theirs gone")
        settle(cluster)
        assert condition(cluster, "m", "Degraded")["status"] == "False"
