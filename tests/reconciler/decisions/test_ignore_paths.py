"""The ``cache.example.com/ignore-paths`` annotation (reconciler/decisions/ignore.py): Flux's ``.spec.ignore``
semantics for fields of a Memcached's Deployment, Service and PodDisruptionBudget that people or other tools set."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.decisions.ignore import (
    ANNOTATION,
    IDENTITY,
    KINDS,
    PROTECTED,
    IgnoreError,
    follow,
    ignored_paths,
    pointers_of,
)

from fakeapi.server import FakeAPIServer
from tests.support.controller import running, settle, wait_for
from tests.support.fakecluster import DEP_PATH, annotate, condition, deployment, make_cr, patch, reconciler_for, scale

SERVICE = "/api/v1/namespaces/default/services/{name}-memcached"
BUDGET = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/{name}-memcached"


# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default", "shop")


def set_memory(api: FakeAPIServer, name: str, memory: str) -> None:
    body = {"spec": {"template": {"spec": {"containers": [{"name": "memcached", "resources": {"limits": {"memory": memory}}}]}}}}
    patch(api, DEP_PATH.format(ns="default", name=name), body, "application/strategic-merge-patch+json", "?fieldManager=kubectl-set")


def rename_port(api: FakeAPIServer, name: str) -> None:
    """A person renames the Service's port (a field we set): drift the next reconcile would correct."""
    body = {"spec": {"ports": [{"name": "mc", "port": 11211, "protocol": "TCP", "targetPort": "memcached"}]}}
    patch(api, SERVICE.format(name=name), body, "application/merge-patch+json", "?fieldManager=kubectl-edit")


def deployment_writes(api: FakeAPIServer) -> list:
    return [r for r in api.writes() if "/deployments/" in r.path and r.user_agent.startswith("memcached-gitops")]


def companion_writes(api: FakeAPIServer) -> list:
    return [r for r in api.writes() if ("/services/" in r.path or "/poddisruptionbudgets/" in r.path)
            and r.user_agent.startswith("memcached-gitops")]


def test_a_manual_scale_on_an_ignored_path_stays_and_is_not_reported(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "m", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    annotate(cluster, "m", "/spec/replicas")
    scale(cluster, "m", 3)
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "unchanged" and outcome.drift == []
    assert [d.field for d in outcome.ignored] == [".spec.replicas"]
    assert deployment(cluster, "m")["spec"]["replicas"] == 3 and deployment_writes(cluster) == []
    annotate(cluster, "m", None)  # the rule removed: spec.size rules again
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and deployment(cluster, "m")["spec"]["replicas"] == 1


def test_an_apply_for_other_reasons_leaves_the_ignored_field_to_its_owner(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "m", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    annotate(cluster, "m", "/spec/template/spec/containers/0/resources/limits/memory, /spec/replicas")
    set_memory(cluster, "m", "256Mi")
    scale(cluster, "m", 2)
    cr = cluster.objects[("cache.example.com", "memcacheds", "default", "m")]
    cr["spec"]["containerPort"], cr["metadata"]["generation"] = 11311, cr["metadata"]["generation"] + 1  # a real change
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected"
    assert {d.field for d in outcome.ignored} == {'.spec.template.spec.containers[name="memcached"].resources.limits.memory',
                                                  ".spec.replicas"}
    live = deployment(cluster, "m")
    assert live["spec"]["replicas"] == 2, "another manager's: left out of our apply, so it stays"
    assert live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "256Mi"
    assert live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 11311
    [apply] = [w for w in deployment_writes(cluster) if w.content_type == "application/apply-patch+yaml"]
    assert "replicas" not in json.loads(apply.body)["spec"]


def test_a_companions_ignored_field_survives_the_taking_back_of_a_replaced_port(cluster: FakeAPIServer) -> None:
    """A person replaces the Service's port with one of their own and, in the same edit, sets a label the
    CR's ignore-paths leaves to people (``Service:/metadata/labels/team``). Our port is missing, so the
    reconciler takes the person's fields back before its apply (revoke.py), all but the ignored ones:
    our port returns, theirs goes, and the label stays theirs."""
    make_cr(cluster, "m", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    annotate(cluster, "m", "Service:/metadata/labels/team")
    body = {"metadata": {"labels": {"team": "payments"}},
            "spec": {"ports": [{"name": "theirs", "port": 11311, "protocol": "TCP", "targetPort": 11311}]}}
    patch(cluster, SERVICE.format(name="m"), body, "application/merge-patch+json", "?fieldManager=kubectl-edit")
    [outcome] = rec.run_cycle().outcomes
    assert outcome.error == "", outcome.error
    service = cluster.get("", "services", "default", "m-memcached")
    assert [p["port"] for p in service["spec"]["ports"]] == [11211], service["spec"]["ports"]
    assert service["metadata"]["labels"].get("team") == "payments", service["metadata"]["labels"]


def test_a_companions_ignored_field_stays_and_is_left_out_of_its_apply(cluster: FakeAPIServer) -> None:
    """``PodDisruptionBudget:/spec/maxUnavailable``: a platform team's budget stays, is not drift (no
    write, no Event) but is listed as ignored; an apply of the budget for another field leaves it out
    (another manager owns it); the rule removed, ours comes back. The Deployment's pointers are not its."""
    make_cr(cluster, "m", size=3)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    annotate(cluster, "m", "PodDisruptionBudget:/spec/maxUnavailable, /spec/replicas")
    patch(cluster, BUDGET.format(name="m"), {"spec": {"maxUnavailable": 2}}, "application/merge-patch+json", "?fieldManager=platform")
    rename_port(cluster, "m")
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert [(where, d.field) for where, d in outcome.companions.ignored] == [("PodDisruptionBudget m-memcached", ".spec.maxUnavailable")]
    port_name = '.spec.ports[port=11211,protocol="TCP"].name'
    assert [(where, d.field) for where, d in outcome.companions.drift] == [("Service m-memcached", port_name)]
    assert [w.path.rsplit("/", 2)[-2] for w in companion_writes(cluster)] == ["services"], "the Service's drift only"
    assert budget(cluster, "m")["spec"]["maxUnavailable"] == 2
    patch(cluster, BUDGET.format(name="m"), {"metadata": {"labels": {"app.kubernetes.io/name": "x"}}}, "application/merge-patch+json",
          "?fieldManager=kubectl-label")
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and [d.field for _, d in outcome.companions.ignored] == [".spec.maxUnavailable"]
    [apply] = [w for w in companion_writes(cluster) if w.content_type == "application/apply-patch+yaml"]
    assert "maxUnavailable" not in json.loads(apply.body)["spec"], "another manager's: left out of our apply"
    live = budget(cluster, "m")
    assert live["spec"]["maxUnavailable"] == 2 and live["metadata"]["labels"]["app.kubernetes.io/name"] == "memcached"
    annotate(cluster, "m", None)  # the rule removed: the rendering rules again
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and budget(cluster, "m")["spec"]["maxUnavailable"] == 1


def budget(api: FakeAPIServer, name: str) -> dict:
    return api.get("policy", "poddisruptionbudgets", "default", f"{name}-memcached")


def test_detect_only_lists_ignored_drift_apart(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "m", size=1)
    reconciler_for(cluster).run_cycle()
    annotate(cluster, "m", "/spec/replicas")
    scale(cluster, "m", 3)
    set_memory(cluster, "m", "256Mi")
    [outcome] = reconciler_for(cluster, detect_only=True).run_cycle().outcomes
    assert outcome.action == "drifted"
    message = condition(cluster, "m", "Degraded")["message"]
    assert message.startswith("drift left uncorrected (--detect-only): .spec.template.spec.containers")
    assert f"; ignored ({ANNOTATION}): .spec.replicas" in message


@pytest.mark.parametrize("value", ["spec/replicas", "/spec/a~2b", "/spec/selector", "/spec/selector/matchLabels",
                                   "/metadata/name", "/metadata/ownerReferences/0", "/spec", "/", "Service:/spec/selector",
                                   "PodDisruptionBudget:/spec/selector/matchLabels", "Service:/metadata/name", "ConfigMap:/data",
                                   "/spec/replicas, PodDisruptionBudget:/spec"])
def test_a_bad_pointer_is_an_error_on_the_cr_and_nothing_is_written(cluster: FakeAPIServer, value: str) -> None:
    make_cr(cluster, "m", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    annotate(cluster, "m", value)
    scale(cluster, "m", 3)
    rename_port(cluster, "m")
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    rec.run_cycle()
    assert outcome.action == "invalid" and deployment_writes(cluster) == [] and companion_writes(cluster) == []
    degraded = condition(cluster, "m", "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "InvalidIgnorePaths") and ANNOTATION in degraded["message"]
    assert [e["reason"] for k, e in cluster.objects.items() if k[1] == "events"].count("InvalidIgnorePaths") == 1


def test_the_event_driven_mode_follows_the_annotation(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "m", size=1)
    with running(cluster):
        wait_for(lambda: deployment(cluster, "m"), what="the Deployment")
        annotate(cluster, "m", "/spec/replicas")
        settle(cluster)
        scale(cluster, "m", 3)
        settle(cluster)
        assert deployment(cluster, "m")["spec"]["replicas"] == 3, "a person's scale, on an ignored path, stays"
        annotate(cluster, "m", None)
        wait_for(lambda: deployment(cluster, "m")["spec"]["replicas"] == 1, what="spec.size to rule again")


def scaled_by_kubectl_with_replicas_ignored(cluster: FakeAPIServer, replicas: int) -> None:
    """A CR of size 3 whose ignore-paths leaves ``/spec/replicas`` to others, scaled by kubectl to
    ``replicas``, rolled out and reconciled."""
    from fakeapi.server import DeploymentController

    make_cr(cluster, "m", size=3)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    annotate(cluster, "m", "/spec/replicas")
    scale(cluster, "m", replicas)
    DeploymentController(cluster).sync()
    rec.run_cycle()


def test_with_replicas_ignored_the_status_counts_the_deployments_own_replicas(cluster: FakeAPIServer) -> None:
    """With ``/spec/replicas`` ignored the replicas are someone else's, as under an HPA: the rollout is
    complete when the Deployment's own replicas are (``kubectl rollout status`` compares with the
    Deployment's spec.replicas), not a rollout waiting for spec.size forever."""
    scaled_by_kubectl_with_replicas_ignored(cluster, 1)
    assert (condition(cluster, "m", "Available")["status"], condition(cluster, "m", "Progressing")["reason"]) == (
        "True", "ReconcileComplete")
    # Who sets them, as the Replicas-By column shows it: the manager of spec.replicas (kubectl scale's
    # merge patch to /scale), never spec.size.
    status = cluster.get("cache.example.com", "memcacheds", "default", "m")["status"]
    managers = [e for e in deployment(cluster, "m")["metadata"]["managedFields"] if "f:replicas" in e["fieldsV1"].get("f:spec", {})]
    assert [(e["manager"], e.get("subresource")) for e in managers] == [("kubectl", "scale")], managers
    assert status["replicasOwner"] == "kubectl (scale)", status
    assert condition(cluster, "m", "Available")["message"] == (
        "1 of 1 replicas available; replicas set by kubectl (scale), not spec.size (ignore-paths)")


def test_drift_left_alone_keeps_naming_the_replicas_setters_and_the_pods(cluster: FakeAPIServer) -> None:
    """Under --detect-only the columns and status.nodes say what the cluster runs, as a served CR's do:
    REPLICAS-BY the managers the CR's ignore-paths leaves the replicas to, READY the Deployment's own
    replicas, ``nodes`` its Pods; only the Degraded condition tells the drift left alone."""
    from fakeapi.server import DeploymentController

    scaled_by_kubectl_with_replicas_ignored(cluster, 2)
    served = cluster.get("cache.example.com", "memcacheds", "default", "m")["status"]
    assert len(served["nodes"]) == 2, served
    set_memory(cluster, "m", "1Gi")
    DeploymentController(cluster).sync()  # the drifted template rolled out
    [outcome] = reconciler_for(cluster, detect_only=True).run_cycle().outcomes
    assert outcome.action == "drifted", outcome
    status = cluster.get("cache.example.com", "memcacheds", "default", "m")["status"]
    assert condition(cluster, "m", "Degraded")["reason"] == "DriftDetected"
    assert (status["replicasOwner"], status["ready"], status["nodes"]) == ("kubectl (scale)", "2/2", served["nodes"]), status


# ---- the pure rules
def test_pointers_are_rfc_6901_separated_by_commas_or_lines() -> None:
    cr = {"metadata": {"annotations": {ANNOTATION: " /spec/replicas ,\n/spec/template/metadata/annotations/a~1b~0c,, "}}}
    assert pointers_of(cr) == (("spec", "replicas"), ("spec", "template", "metadata", "annotations", "a/b~c"))
    assert pointers_of({"metadata": {}}) == ()
    with pytest.raises(IgnoreError, match=ANNOTATION):
        pointers_of({"metadata": {"annotations": {ANNOTATION: "/spec/replicas,replicas"}}})


def test_a_pointer_step_is_unescaped_tilde_one_first_then_tilde_zero() -> None:
    """RFC 6901 section 4: a reference token is decoded by turning every ``~1`` into ``/`` first, then every
    ``~0`` into ``~``, so that ``~01`` is the two characters ``~1`` and never a ``/`` (the RFC's own example:
    ``/m~0n`` is the member ``m~n``). An annotation key holding ``~1`` literally is named as ``~01``."""
    cr = {"metadata": {"annotations": {ANNOTATION: "/spec/template/metadata/annotations/a~01b,/m~0n,/x~10y"}}}
    assert pointers_of(cr) == (("spec", "template", "metadata", "annotations", "a~1b"), ("m~n",), ("x/0y",))


def test_a_pointer_may_name_the_service_or_the_budget_by_kind_and_a_bare_one_names_the_deployment() -> None:
    text = ("/spec/replicas, Service:/spec/ports/0/targetPort,\nPodDisruptionBudget: /spec/maxUnavailable, "
            "/metadata/annotations/a:b, Deployment:/spec/paused")
    cr = {"metadata": {"annotations": {ANNOTATION: text}}}
    assert ignored_paths(cr) == {"Deployment": (("spec", "replicas"), ("metadata", "annotations", "a:b"), ("spec", "paused")),
                                 "Service": (("spec", "ports", "0", "targetPort"),),
                                 "PodDisruptionBudget": (("spec", "maxUnavailable"),)}
    assert pointers_of(cr) == ignored_paths(cr)["Deployment"], "a bare pointer, and one after the first '/', names the Deployment"
    assert pointers_of(cr, "Service") == (("spec", "ports", "0", "targetPort"),)
    assert pointers_of({"metadata": {"annotations": {ANNOTATION: "/spec/replicas"}}}, "Service") == ()
    assert ignored_paths({"metadata": {}}) == {}
    with pytest.raises(IgnoreError, match="Service"):  # one bad entry refuses the annotation, the Deployment's pointers too
        pointers_of({"metadata": {"annotations": {ANNOTATION: "/spec/replicas, Service:/spec/selector"}}})


#: What makes any object a Memcached owns its own: its identity, the maps that hold it, its owner and
#: its selector, each named whole and reached into.
NEVER_IGNORED = ("/apiVersion", "/kind", "/metadata", "/metadata/name", "/metadata/namespace", "/spec",
                 "/metadata/ownerReferences", "/metadata/ownerReferences/0/uid", "/spec/selector", "/spec/selector/x")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pointer", NEVER_IGNORED)
def test_no_kind_lets_its_identity_owner_or_selector_be_ignored(kind: str, pointer: str) -> None:
    """Left out of our apply, an object's namespace, kind or owner would be whatever someone else
    wrote, and its selector would serve or guard another CR's Pods: each of the Deployment's, the
    Service's and the budget's is refused, the annotation with it, while a label beside them is not."""
    with pytest.raises(IgnoreError, match="it cannot be ignored"):
        pointers_of({"metadata": {"annotations": {ANNOTATION: f"{kind}:{pointer}"}}}, kind)
    beside = {"metadata": {"annotations": {ANNOTATION: f"{kind}:/metadata/labels/team"}}}
    assert pointers_of(beside, kind) == (("metadata", "labels", "team"),)
    named = {"/" + "/".join(p) for p in (*IDENTITY, *PROTECTED[kind])}
    assert named <= set(NEVER_IGNORED), f"a {kind} field the table protects and this test does not try: {named - set(NEVER_IGNORED)}"


def test_follow_drops_keeps_or_copies_and_never_changes_its_input() -> None:
    desired = {"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "memcached", "image": "memcached:1"}]}}}}
    hpa = {"manager": "kubectl", "operation": "Update", "subresource": "scale", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    ours = {"manager": "memcached-gitops", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    live = {"metadata": {"managedFields": [hpa]},
            "spec": {"replicas": 4, "template": {"spec": {"containers": [{"name": "memcached", "image": "memcached:2"}]}}}}
    image = ("spec", "template", "spec", "containers", "0", "image")
    out = follow(desired, live, (("spec", "replicas"), image), "memcached-gitops")
    assert "replicas" not in out["spec"], "another manager owns it: left out"
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "memcached:2", "through a list: the live value"
    alone = {**live, "metadata": {"managedFields": [ours]}}
    assert follow(desired, alone, (("spec", "replicas"),), "memcached-gitops")["spec"]["replicas"] == 4, "ours alone: the live value"
    absent = {"metadata": {}, "spec": {"template": {}}}
    assert "replicas" not in follow(desired, absent, (("spec", "replicas"),), "memcached-gitops")["spec"], "absent stays absent"
    assert follow(desired, None, (("spec", "replicas"),), "memcached-gitops") is desired, "created whole"
    assert desired["spec"]["replicas"] == 1 and desired["spec"]["template"]["spec"]["containers"][0]["image"] == "memcached:1"


@pytest.mark.parametrize(("value", "message"), [
    ("spec/replicas", 'annotation cache.example.com/ignore-paths: "spec/replicas" is not a JSON Pointer (RFC 6901: '
                      "/spec/replicas, with ~0 for ~ and ~1 for /; Service:/... or PodDisruptionBudget:/... for those objects)"),
    ("Service:spec/type", 'annotation cache.example.com/ignore-paths: "Service:spec/type" is not a JSON Pointer (RFC 6901: '
                          "/spec/replicas, with ~0 for ~ and ~1 for /; Service:/... or PodDisruptionBudget:/... for those objects)"),
    ("Ingress:/spec/rules", 'annotation cache.example.com/ignore-paths: "Ingress:/spec/rules" names kind "Ingress": a '
                            "Memcached's objects are Deployment, Service, PodDisruptionBudget (a bare pointer names the Deployment)"),
    ("service:/spec/type", 'annotation cache.example.com/ignore-paths: "service:/spec/type" names kind "service": a '
                           "Memcached's objects are Deployment, Service, PodDisruptionBudget (a bare pointer names the Deployment)"),
    ("Service:/spec//type", 'annotation cache.example.com/ignore-paths: "Service:/spec//type" has an empty step: no field of '
                            "a Service has an empty name"),
    ("Service:/spec/selector/app.kubernetes.io~1instance", 'annotation cache.example.com/ignore-paths: '
     '"Service:/spec/selector/app.kubernetes.io~1instance" names what makes the Service this Memcached\'s (its name, owner '
     "or selector); it cannot be ignored"),
    ("PodDisruptionBudget:/metadata/ownerReferences", 'annotation cache.example.com/ignore-paths: '
     '"PodDisruptionBudget:/metadata/ownerReferences" names what makes the PodDisruptionBudget this Memcached\'s (its name, '
     "owner or selector); it cannot be ignored"),
    ("/spec//replicas", 'annotation cache.example.com/ignore-paths: "/spec//replicas" has an empty step: no field of a '
                        "Deployment has an empty name"),
    ("/spec/selector", 'annotation cache.example.com/ignore-paths: "/spec/selector" names what makes the Deployment this '
                       "Memcached's (its name, owner or selector); it cannot be ignored"),
])
def test_each_bad_pointer_says_why(value: str, message: str) -> None:
    with pytest.raises(IgnoreError) as caught:
        pointers_of({"metadata": {"annotations": {ANNOTATION: value}}})
    assert str(caught.value) == message


@pytest.mark.parametrize("value", ["/spec/replicas~", "Service:/spec/type~", "/spec/template/metadata/annotations/a~"])
def test_a_tilde_is_followed_by_0_or_1_even_at_the_end_of_a_json_pointer(value: str) -> None:
    """RFC 6901 section 3: ``escaped = "~" ( "0" / "1" )``; a ``~`` with nothing after it is no more a
    JSON Pointer than ``~2`` is, refused as the other bad entries are, naming the annotation and the entry."""
    with pytest.raises(IgnoreError) as caught:
        pointers_of({"metadata": {"annotations": {ANNOTATION: value}}})
    assert str(caught.value).startswith(f'annotation {ANNOTATION}: "{value}" is not a JSON Pointer (RFC 6901: ')


def test_a_pointer_through_a_list_carries_the_live_value_and_one_at_a_list_item_is_not_followed() -> None:
    desired = {"spec": {"template": {"spec": {"containers": [{"name": "memcached", "image": "memcached:1", "args": ["-v"]}]}}}}
    owner = {"manager": "kubectl-set", "operation": "Update",
             "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"memcached"}': {"f:image": {}}}}}}}}
    live = {"metadata": {"managedFields": [owner]},
            "spec": {"template": {"spec": {"containers": [{"name": "memcached", "image": "memcached:2", "args": ["-vv"]}]}}}}
    containers = ("spec", "template", "spec", "containers")
    out = follow(desired, live, (containers + ("0", "image"), containers + ("0", "args", "0"), containers + ("7", "image")),
                 "memcached-gitops")
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "memcached", "image": "memcached:2", "args": ["-v"]}]


@pytest.mark.parametrize("index", ["\u00b2", "\u0660", "\uff10"])
def test_a_list_index_is_ascii_digits_and_any_other_step_through_a_list_is_not_followed(index: str) -> None:
    """A step through a list is an array index (RFC 6901: ASCII digits). Another script's digit, which
    str.isdigit takes and int() refuses or reads as a number, names no item: the pointer is not
    followed, and the rest of the CR is served."""
    desired = {"spec": {"template": {"spec": {"containers": [{"name": "memcached", "image": "memcached:1"}]}}}}
    live = {"metadata": {"managedFields": []},
            "spec": {"template": {"spec": {"containers": [{"name": "memcached", "image": "memcached:2"}]}}}}
    containers = ("spec", "template", "spec", "containers")
    out = follow(desired, live, (containers + (index, "image"), ("spec", "replicas")), "memcached-gitops")
    assert out == desired and out is not desired


def test_follow_handles_every_pointer_past_one_it_cannot_follow_and_never_aliases_the_live_object() -> None:
    """The live object is the informers' cache, shared and compacted: what our apply carries is a copy."""
    desired = {"metadata": {"labels": {"x": "ours"}},
               "spec": {"template": {"metadata": {"labels": {"app": "m"}},
                                     "spec": {"containers": [{"name": "memcached", "resources": {"limits": {"memory": "1"}}}]}}}}
    other = {"manager": "kubectl-label", "operation": "Update",
             "fieldsV1": {"f:spec": {"f:template": {"f:metadata": {"f:labels": {"f:app": {}}}}}}}
    live = {"metadata": {"managedFields": [other], "labels": {"x": "theirs"}},
            "spec": {"template": {"metadata": {"labels": {"app": "n"}},
                                  "spec": {"containers": [{"name": "memcached", "resources": {"limits": {"memory": "2"}}}]}}}}
    containers = ("spec", "template", "spec", "containers")
    pointers = (containers + ("0",),  # a list item: not followed
                containers + ("1", "image"),  # past the end of the live list
                ("spec", "template", "metadata", "annotations"),  # absent on both sides
                ("spec", "template", "metadata", "labels", "app"),  # another manager's: left out
                containers + ("0", "resources"),  # through a list: the live value
                ("metadata", "labels", "x"))  # nobody else's: the live value
    out = follow(desired, live, pointers, "memcached-gitops")
    assert out["spec"]["template"]["metadata"]["labels"] == {}
    assert out["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"memory": "2"}}
    assert out["metadata"]["labels"] == {"x": "theirs"}
    carried, cached = out["spec"]["template"]["spec"]["containers"][0], live["spec"]["template"]["spec"]["containers"][0]
    assert carried["resources"]["limits"] is not cached["resources"]["limits"]


@pytest.mark.parametrize("namespace", ["", "shop"])
def test_diff_lists_drift_at_ignored_paths_as_ignored_and_exits_0(cluster: FakeAPIServer, tmp_path, namespace: str) -> None:
    """A CR with no namespace is --namespace's (default); one that names its own is compared in it, with its
    own ignored paths."""
    import subprocess
    import sys

    from tests.support.fakecluster import write_kubeconfig

    ns = namespace or "default"
    make_cr(cluster, "m", ns=ns, size=1)
    reconciler_for(cluster).run_cycle()
    scale(cluster, "m", 3, ns=ns)
    kubeconfig = write_kubeconfig(tmp_path, cluster.url)
    cr = tmp_path / "m.yaml"
    cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: m\n"
                  + (f"  namespace: {namespace}\n" if namespace else "")
                  + f"  annotations: {{{ANNOTATION}: /spec/replicas}}\nspec: {{size: 1}}\n")
    cmd = [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(kubeconfig), str(cr)]
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert diff.stdout == (f"{ns}/m: ignored ({ANNOTATION}): .spec.replicas: live 3, desired 1 (set by kubectl (scale))\n")
    cr.write_text(cr.read_text().replace("/spec/replicas", "spec/replicas"))
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and f"{ns}/m: annotation {ANNOTATION}" in bad.stderr and "Traceback" not in bad.stderr


def test_plan_carries_a_field_we_alone_own_on_an_ignored_path_and_our_replicas_under_an_hpa() -> None:
    """plan() with our field manager: an ignored path whose only owner is us keeps the live value in the
    apply (dropping it would hand the field to no one); under an HPA that has not written replicas
    yet, our apply keeps the live replicas instead of releasing them."""
    from memcached_gitops.reconciler.decisions.plan import plan

    ours = "memcached-gitops"
    managed = [{"manager": ours, "operation": "Apply", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}}]
    live = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "managedFields": managed},
            "spec": {"replicas": 4, "paused": True}}
    desired = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}, "spec": {"replicas": 1, "paused": False}}
    followed = plan(desired, live, ours, "", (("spec", "paused"),))
    assert followed.desired["spec"]["paused"] is True, "ours alone: the live value is carried, not released"
    handed = plan(desired, live, ours, "hpa-a")
    assert handed.desired["spec"]["replicas"] == 4, "ours alone under an HPA: the live replicas are kept"


def test_pointers_are_separated_by_commas_or_new_lines() -> None:
    """A block scalar (``|``) of one pointer a line is the documented form: split on commas only, its
    second line became part of the first pointer, and the fields it names were corrected again."""
    cr = {"metadata": {"annotations": {ANNOTATION: "/spec/replicas\nService:/spec/ports/0/appProtocol\n"}}}
    assert ignored_paths(cr) == {"Deployment": (("spec", "replicas"),), "Service": (("spec", "ports", "0", "appProtocol"),)}


def test_a_cr_refused_before_its_plan_keeps_naming_the_replicas_setters(cluster: FakeAPIServer) -> None:
    """A refused annotation changes nothing of who sets the replicas: REPLICAS-BY stays the managers the
    CR's ignore-paths leaves them to, and READY counts the Deployment's own replicas."""
    from tests.support.fakecluster import cr_status

    scaled_by_kubectl_with_replicas_ignored(cluster, 2)
    patch(cluster, "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/m",
          {"metadata": {"annotations": {"cache.example.com/reconcile": "bogus"}}}, "application/merge-patch+json")
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    assert outcome.action == "invalid", outcome
    status = cr_status(cluster, "m")
    assert (status["replicasOwner"], status["ready"], status["reason"]) == ("kubectl (scale)", "2/2", "InvalidAnnotation")


# ---- properties: every pointer RFC 6901 can spell, with or without a kind, among others
_STEP = st.text(st.sampled_from("ab~/:0é1-._"), min_size=1, max_size=6)
#: what makes each object this Memcached's (the module's docstring): never ignorable, nor anything below it
_PROTECTED = {"Deployment": (("metadata", "ownerReferences"), ("spec", "selector")),
              "Service": (("metadata", "ownerReferences"), ("spec", "selector")),
              "PodDisruptionBudget": (("metadata", "ownerReferences"), ("spec", "selector"))}
_IDENTITY = {("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace"), ("spec",)}


def _encode(steps: tuple[str, ...]) -> str:
    """RFC 6901 section 3: ``~`` is written ``~0`` and ``/`` is written ``~1`` in a reference token."""
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in steps)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("", "Deployment", "Service", "PodDisruptionBudget")),
                          st.tuples(st.sampled_from(("spec", "metadata", "kind", "x:y")),
                                    st.sampled_from(("selector", "ownerReferences", "annotations", "replicas", "name")))
                          .flatmap(lambda head: st.lists(_STEP, max_size=3).map(lambda rest: (*head, *rest))),
                          st.sampled_from(("", " ")), st.sampled_from((",", "\n", " ,\n"))), min_size=1, max_size=5))
def test_every_pointer_reads_back_as_written_under_its_kind_in_order(entries: list) -> None:
    """Each entry is ``[<Kind>:]<RFC 6901 pointer>``: read back, each pointer is the steps it encodes,
    under its kind (the Deployment when bare), in the annotation's order, whatever separates them; the
    whole annotation is refused when one entry names what makes its object this Memcached's."""
    text = "".join(f"{pad}{kind + ':' + pad if kind else ''}{_encode(steps)}{pad}{sep}" for kind, steps, pad, sep in entries)
    cr = {"metadata": {"annotations": {ANNOTATION: text}}}
    refused = [steps for kind, steps, _, _ in entries
               if steps in _IDENTITY or any(steps[:len(p)] == p for p in _PROTECTED[kind or "Deployment"])]
    if refused:
        with pytest.raises(IgnoreError, match=ANNOTATION):
            ignored_paths(cr)
        return
    expected: dict[str, tuple] = {}
    for kind, steps, _, _ in entries:
        expected[kind or "Deployment"] = expected.get(kind or "Deployment", ()) + (steps,)
    assert ignored_paths(cr) == expected


def test_ignored_replicas_only_we_set_stay_after_a_rollout_restart_when_an_apply_goes_out(cluster: FakeAPIServer) -> None:
    """ignore-paths ``/spec/replicas`` leaves the replicas to whoever else sets them; while only we have
    set them, each apply carries the live value (dropping a field we alone own makes the API server
    delete it, and the Deployment falls to 1 replica: transcript 21). Another manager owning some other
    field under ``spec`` (``kubectl rollout restart``'s Pod template annotation) does not make the
    replicas theirs: owners are looked up at the field, not at the map that holds it."""
    make_cr(cluster, "m", size=3)
    annotate(cluster, "m", "/spec/replicas")
    rec = reconciler_for(cluster)
    [created] = rec.run_cycle().outcomes
    assert created.action == "created" and deployment(cluster, "m")["spec"]["replicas"] == 3, created.error
    # kubectl rollout restart: a strategic merge patch of the Pod template's annotations
    restart = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-29T23:00:00Z"}}}}}
    patch(cluster, DEP_PATH.format(ns="default", name="m"), restart, "application/strategic-merge-patch+json",
          "?fieldManager=kubectl-rollout")
    cr = cluster.objects[("cache.example.com", "memcacheds", "default", "m")]
    cr["spec"]["containerPort"], cr["metadata"]["generation"] = 11311, cr["metadata"]["generation"] + 1  # a change to apply
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and len(deployment_writes(cluster)) >= 1, outcome.error
    live = deployment(cluster, "m")
    assert live["spec"]["replicas"] == 3, "the replicas we alone set are kept, not released to the default"
    assert live["spec"]["template"]["metadata"]["annotations"] == restart["spec"]["template"]["metadata"]["annotations"]
    assert condition(cluster, "m", "Degraded")["status"] == "False"
