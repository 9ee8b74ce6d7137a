"""The ValidatingAdmissionPolicy of kustomize/admission-policy, its CEL evaluated here by cel-python
(the same language the API server runs) over the writes the reconciler makes and the writes a
stolen token would try. tests/test_reconciler_real_cluster.py runs the same policy on a real
kube-apiserver, which is the judge; these cases say which rule is meant to let what through.

How the API server runs a policy (Kubernetes docs, "Validating Admission Policy"): the request must
match matchConstraints and every matchCondition, or the policy does not apply; then the variables
are computed in order, and each validation that is false denies with its message."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.render import render

from .conftest import REPO
from .test_adopt_go_operator import operator_sdk_labels

celpy = pytest.importorskip("celpy", reason="cel-python is in the test extra")
from celpy.adapter import json_to_cel  # noqa: E402

POLICY_FILE = REPO / "kustomize/admission-policy/policy.yaml"
OURS = "system:serviceaccount:memcached-gitops:memcached-gitops"
CR = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
      "metadata": {"name": "cache", "namespace": "shop", "uid": "0b7f"}, "spec": {"size": 2}}
OWNER = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "cache", "uid": "0b7f",
         "controller": True, "blockOwnerDeletion": True}
RESOURCES = {"Deployment": ("apps", "deployments"), "Service": ("", "services"), "PodDisruptionBudget": ("policy", "poddisruptionbudgets")}


def policy() -> dict[str, Any]:
    [vap] = [d.value for d in iter_documents(POLICY_FILE.read_text()) if d.value["kind"] == "ValidatingAdmissionPolicy"]
    return vap


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def admit(operation: str, obj: dict | None, old: dict | None = None, user: str = OURS, subresource: str = "") -> str | None:
    """None when the write is let through, else the denial's message."""
    spec = policy()["spec"]
    target = obj or old
    assert target is not None
    group, resource = RESOURCES[target["kind"]]
    rules = spec["matchConstraints"]["resourceRules"]
    full = resource + (f"/{subresource}" if subresource else "")
    if not any(group in r["apiGroups"] and full in r["resources"] and operation in r["operations"] for r in rules):
        return None
    request = {"operation": operation, "userInfo": {"username": user}, "namespace": target["metadata"].get("namespace", ""),
               "name": target["metadata"]["name"], "resource": {"group": group, "resource": resource}, "subResource": subresource}
    activation: dict[str, Any] = {"request": json_to_cel(request), "object": json_to_cel(obj), "oldObject": json_to_cel(old)}
    if not all(evaluate(c["expression"], activation) for c in spec.get("matchConditions", [])):
        return None
    variables: dict[str, Any] = {}
    for v in spec.get("variables", []):
        activation["variables"] = json_to_cel(variables)
        variables[v["name"]] = evaluate(v["expression"], activation)
    activation["variables"] = json_to_cel(variables)
    for check in spec["validations"]:
        result = evaluate(check["expression"], activation)
        assert not isinstance(result, Exception), (check["expression"], result)
        if not result:
            return str(evaluate(check["messageExpression"], activation)) if "messageExpression" in check else check["message"]
    return None


def rendered(kind: str = "Deployment", owned: bool = True) -> dict[str, Any]:
    [obj] = [o for o in render(copy.deepcopy(CR)) if o["kind"] == kind]
    if owned:
        obj["metadata"]["ownerReferences"] = [OWNER]
    return obj


def foreign() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "payments", "namespace": "shop", "labels": {"app": "pay"}},
            "spec": {"selector": {"matchLabels": {"app": "pay"}}, "template": {"metadata": {"labels": {"app": "pay"}},
                     "spec": {"containers": [{"name": "pay", "image": "pay:1"}]}}}}


def go_operators() -> dict[str, Any]:
    """The Deployment operator-sdk's memcached-operator made (tests/test_adopt_go_operator.py)."""
    obj = foreign()
    obj["metadata"].update(name="cache", labels=operator_sdk_labels(), ownerReferences=[OWNER])
    return obj


@pytest.mark.parametrize("kind", ["Deployment", "Service", "PodDisruptionBudget"])
def test_what_the_reconciler_renders_and_owns_is_created(kind: str) -> None:
    assert admit("CREATE", rendered(kind)) is None


def test_nothing_is_written_in_the_system_namespaces() -> None:
    obj = rendered()
    obj["metadata"]["namespace"] = "kube-system"
    assert admit("CREATE", obj) == "memcached-gitops writes no object in the namespace kube-system"


@pytest.mark.parametrize("case", ["foreign", "unowned", "owned-by-another-kind", "unlabelled"])
def test_a_new_object_must_be_labelled_ours_and_owned_by_a_memcached(case: str) -> None:
    obj = {"foreign": foreign, "unowned": lambda: rendered(owned=False)}.get(case, rendered)()
    if case == "owned-by-another-kind":
        obj["metadata"]["ownerReferences"] = [{**OWNER, "kind": "ReplicaSet", "apiVersion": "apps/v1"}]
    if case == "unlabelled":
        del obj["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    assert admit("CREATE", obj) == ("memcached-gitops creates only objects labelled app.kubernetes.io/managed-by=memcached-gitops "
                                    "and owned by a Memcached")


@pytest.mark.parametrize("field,value", [("automountServiceAccountToken", True), ("hostNetwork", True), ("hostPID", True),
                                         ("hostIPC", True), ("volumes", [{"name": "root", "hostPath": {"path": "/"}}])])
def test_a_new_deployments_pods_are_confined(field: str, value: Any) -> None:
    obj = rendered()
    obj["spec"]["template"]["spec"][field] = value
    assert admit("CREATE", obj).startswith("memcached-gitops creates only Deployments whose Pods mount no ServiceAccount token")


def test_changes_to_what_is_already_ours_argo_cds_copy_of_our_rendering_or_the_go_operators_pass() -> None:
    drifted = rendered()
    drifted["spec"]["replicas"] = 5
    assert admit("UPDATE", rendered(), drifted) is None  # a correction
    argo = rendered(owned=False)  # applied by Argo CD from our rendering: our label, no ownerReference
    assert admit("UPDATE", argo, argo) is None, "--adopt's first write (a removal patch) comes before the ownerReference"
    theirs = go_operators()
    taken = rendered()
    taken["spec"]["selector"] = theirs["spec"]["selector"]
    assert admit("UPDATE", taken, theirs) is None, "the Go operator's Deployment is taken over in place"
    assert admit("DELETE", None, rendered()) is None


def test_a_foreign_object_cannot_be_changed_deleted_or_relabelled_into_ours() -> None:
    message = ("memcached-gitops changes only its own objects (labelled app.kubernetes.io/managed-by=memcached-gitops, "
               "or controlled by a Memcached); deployments payments is neither")
    relabelled = foreign()
    relabelled["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "memcached-gitops"
    relabelled["metadata"]["ownerReferences"] = [OWNER]
    assert admit("UPDATE", relabelled, foreign()) == message
    assert admit("DELETE", None, foreign()) == message
    not_controller = foreign()
    not_controller["metadata"]["ownerReferences"] = [{**OWNER, "controller": False}]
    assert admit("UPDATE", not_controller, not_controller) is not None, "a non-controller reference makes nothing ours"


def test_scaling_through_the_scale_subresource_is_refused_and_other_users_are_not_concerned() -> None:
    # a Scale carries no labels: the reconciler never scales, so its token cannot either
    scale = {"apiVersion": "autoscaling/v1", "kind": "Deployment", "metadata": {"name": "payments", "namespace": "shop"},
             "spec": {"replicas": 0}}
    assert admit("UPDATE", scale, scale, subresource="scale") is not None
    assert admit("CREATE", foreign(), user="system:serviceaccount:argocd:argocd-application-controller") is None
    assert admit("CREATE", foreign(), user="system:serviceaccount:memcached-gitops:memcached-gitops-other") is None
    assert admit("CREATE", foreign(), user="system:serviceaccount:team-a:memcached-gitops") is not None, "any namespace's"
