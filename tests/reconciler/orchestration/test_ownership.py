"""Who owns a Deployment: owned, GitOps-applied (Argo CD applied our rendering) or foreign, and
what the reconciler does with each, with and without ``--adopt``."""

from __future__ import annotations

import json

import pytest
from memcached_gitops.reconciler.decisions.ownership import Ownership, classify, spec_manager
from memcached_gitops.reconciler.decisions.vocabulary import FIELD_MANAGER
from memcached_gitops.reconciler.orchestration.loop import exit_code

from fakeapi.server import DeploymentController, FakeAPIServer
from tests.support.fakecluster import (
    DEP_PATH,
    argocd_applies,
    condition,
    cr_status,
    deployment,
    make_cr,
    patch,
    post,
    reconciler_for,
    writes,
)

CR = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m", "namespace": "default", "uid": "u-1"}}


def _dep(labels: dict | None = None, owners: list | None = None, selector: dict | None = None, managers: tuple = ()) -> dict:
    dep: dict = {"metadata": {"name": "m", "labels": labels or {}, **({"ownerReferences": owners} if owners else {})}}
    if selector is not None:
        dep["spec"] = {"selector": {"matchLabels": selector}}
    if managers:
        dep["metadata"]["managedFields"] = [{"manager": m, "operation": op, **({"subresource": sub} if sub else {})}
                                            for m, op, sub in managers]
    return dep


OURS = {"app.kubernetes.io/managed-by": "memcached-gitops", "app.kubernetes.io/instance": "m"}


@pytest.mark.parametrize(("deployment_", "expected"), [
    (_dep(OURS, [{"uid": "u-1", "controller": True}]), Ownership.OWNED),
    (_dep({}, [{"uid": "u-1", "controller": True}]), Ownership.OWNED),
    (_dep(OURS), Ownership.GITOPS_APPLIED),
    (_dep(OURS, [{"uid": "u-1"}]), Ownership.GITOPS_APPLIED),  # an owner, but not the controller
    (_dep(OURS, [{"uid": "other", "controller": True}]), Ownership.FOREIGN),
    (_dep({"app.kubernetes.io/managed-by": "memcached-gitops", "app.kubernetes.io/instance": "n"}), Ownership.FOREIGN),
    (_dep({"app.kubernetes.io/managed-by": "helm", "app.kubernetes.io/instance": "m"}), Ownership.FOREIGN),
    (_dep({}), Ownership.FOREIGN),
    # the seeds' Go operators: a controller reference to this CR, a selector of their own
    (_dep({}, [{"uid": "u-1", "controller": True}], {"app.kubernetes.io/name": "project"}, (("manager", "Update", ""),)),
     Ownership.INHERITED),
    (_dep({}, [{"uid": "u-1", "controller": True}], {"app.kubernetes.io/name": "project"},
          (("manager", "Update", ""), ("memcached-gitops", "Update", ""), ("memcached-gitops", "Apply", "status"))),
     Ownership.INHERITED),  # neither an Update nor a status apply by our name is our apply of the Deployment
    (_dep(OURS, [{"uid": "u-1", "controller": True}], {"app.kubernetes.io/name": "project"},
          (("manager", "Update", ""), ("memcached-gitops", "Apply", ""))), Ownership.OWNED),  # adopted: ours from then on
    (_dep({}, [{"uid": "u-1", "controller": True}], {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "m"},
          (("manager", "Update", ""),)), Ownership.OWNED),  # our selector: nothing to keep, corrected as ours
], ids=["owned", "owned-unlabelled", "gitops", "gitops-non-controller-owner", "other-controller", "other-instance", "helm", "bare",
        "inherited", "inherited-no-apply-of-ours", "adopted", "their-controller-our-selector"])
def test_classify(deployment_: dict, expected: Ownership) -> None:
    assert classify(deployment_, CR, FIELD_MANAGER) is expected


@pytest.mark.parametrize("cr", [{"metadata": {"name": "m"}}, {"metadata": {"name": "m", "uid": None}},
                                {"metadata": {"name": "m", "uid": ""}}], ids=["no-uid", "uid-none", "uid-empty"])
def test_a_controlled_deployment_is_never_ours_for_a_cr_without_a_uid(cr: dict) -> None:
    """``diff`` reads no CR: it asks with no uid when the controller is not a Memcached of that name.
    A controller reference is ours only when its uid is the CR's, so no uid matches none."""
    other = _dep(OURS, [{"kind": "MemcachedCluster", "name": "m", "uid": "u-9", "controller": True}],
                 {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "m"})
    assert classify(other, cr, FIELD_MANAGER) is Ownership.FOREIGN


def test_spec_manager_is_who_applied_the_spec_not_who_scaled_it() -> None:
    managed = [
        {"manager": "kubectl", "operation": "Update", "subresource": "scale", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "argocd-controller", "operation": "Apply", "fieldsV1": {"f:spec": {"f:selector": {}, "f:template": {"f:spec": {}}}}},
        {"manager": "kubectl-label", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {"f:x": {}}}}},
    ]
    assert spec_manager({"metadata": {"managedFields": managed}}) == "argocd-controller"
    assert spec_manager({"metadata": {}}) == ""


# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default",)


def test_a_gitops_applied_deployment_is_observed_and_never_written(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "m", size=2)
    argocd_applies(cluster)
    rec = reconciler_for(cluster)
    cluster.reset_log()
    report = rec.run_cycle()
    assert [o.action for o in report.outcomes] == ["observed"] and exit_code(report) == 0
    assert not [w for w in writes(cluster) if "/deployments/" in w]
    degraded = condition(cluster, "m", "Degraded")
    assert degraded["status"] == "False" and degraded["reason"] == "GitOpsApplied"
    assert "argocd-controller" in degraded["message"]
    assert not condition(cluster, "m", "Stalled"), "kstatus must not read a GitOps-applied CR as failed"
    DeploymentController(cluster).sync(available=True)
    rec.run_cycle()
    assert condition(cluster, "m", "Available")["status"] == "True"
    assert condition(cluster, "m", "Progressing")["message"] == "the rollout is complete", "not ours to say it matches the CR"
    assert not condition(cluster, "m", "Reconciling")
    assert len(cr_status(cluster, "m")["nodes"]) == 2 and cr_status(cluster, "m")["observedGeneration"] == 1
    # someone scales it: information, not failure, and still no write
    patch(cluster, DEP_PATH.format(ns="default", name="m") + "/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    cluster.reset_log()
    report = rec.run_cycle()
    [outcome] = report.outcomes
    assert outcome.action == "observed" and [d.field for d in outcome.drift] == [".spec.replicas"]
    assert exit_code(report) == 0
    assert not [w for w in writes(cluster) if "/deployments/" in w]
    assert deployment(cluster, "m")["spec"]["replicas"] == 3
    degraded = condition(cluster, "m", "Degraded")
    assert degraded["status"] == "False" and ".spec.replicas" in degraded["message"]


def test_a_gitops_applied_deployment_whose_managed_fields_were_stripped_is_still_said_applied_by_another_tool(
        cluster: FakeAPIServer) -> None:
    """Stripping managedFields (``managedFields: [{}]``, the usual way out of an apply conflict:
    transcript 19) leaves no field manager to name, but the Deployment is still Argo CD's, observed and
    never written: the CR says GitOpsApplied (how to take it over), REPLICAS-BY is not spec.size, and
    ``--adopt`` takes it over as an adoption (Adopted Event), not as a correction of our own object."""
    make_cr(cluster, "m", size=2)
    argocd_applies(cluster)
    patch(cluster, DEP_PATH.format(ns="default", name="m"), {"metadata": {"managedFields": [{}]}}, "application/merge-patch+json")
    assert spec_manager(deployment(cluster, "m")) == "", "no manager left to name"
    cluster.reset_log()
    assert [o.action for o in reconciler_for(cluster).run_cycle().outcomes] == ["observed"]
    assert not [w for w in writes(cluster) if "/deployments/" in w]
    degraded = condition(cluster, "m", "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("False", "GitOpsApplied"), degraded
    assert "--adopt" in degraded["message"] and "applied by  " not in degraded["message"], degraded["message"]
    assert cr_status(cluster, "m")["replicasOwner"] not in ("", "spec.size"), cr_status(cluster, "m")
    assert [o.action for o in reconciler_for(cluster, adopt=True).run_cycle().outcomes] == ["adopted"]
    events = {o["reason"] for k, o in cluster.objects.items() if k[1] == "events"}
    assert events == {"Adopted"}, events


def test_an_observed_deployment_is_no_warning_in_the_cycle_log(cluster: FakeAPIServer, caplog) -> None:
    from memcached_gitops.reconciler.orchestration.loop import log_report

    make_cr(cluster, "m", size=2)
    argocd_applies(cluster)
    patch(cluster, DEP_PATH.format(ns="default", name="m") + "/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    with caplog.at_level("INFO", logger="memcached_gitops.reconciler"):
        log_report(reconciler_for(cluster).run_cycle())
    assert not [r for r in caplog.records if r.levelname == "WARNING"], caplog.text
    assert "applied by argocd-controller, not corrected: .spec.replicas: live 3, desired 2" in caplog.text


def test_adopt_takes_a_gitops_applied_deployment_over_then_corrects_drift(cluster: FakeAPIServer) -> None:
    cr = make_cr(cluster, "m", size=2)
    argocd_applies(cluster)
    patch(cluster, DEP_PATH.format(ns="default", name="m") + "/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    rec = reconciler_for(cluster, adopt=True)
    cluster.reset_log()
    report = rec.run_cycle()
    assert [o.action for o in report.outcomes] == ["adopted"] and exit_code(report) == 0
    applies = [r for r in cluster.log if r.content_type == "application/apply-patch+yaml" and r.path.endswith("/deployments/m")]
    assert len(applies) == 1, "one apply adds the ownerReference and corrects the drift"
    dep = deployment(cluster, "m")
    assert dep["metadata"]["ownerReferences"] == [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "m",
                                                   "uid": cr["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert dep["spec"]["replicas"] == 2
    events = {o["reason"]: o for k, o in cluster.objects.items() if k[1] == "events"}
    assert sorted(events) == ["Adopted"], "one Event names all the reconcile did"
    event = events["Adopted"]
    assert "Service m-memcached created; PodDisruptionBudget m-memcached created" in event["message"], "its Service and budget beside it"
    assert event["type"] == "Normal"
    assert "argocd-controller" in event["message"] and ".spec.replicas" in event["message"]
    assert condition(cluster, "m", "Degraded")["reason"] == "AsExpected"
    # from now on it is owned: drift is corrected
    patch(cluster, DEP_PATH.format(ns="default", name="m") + "/scale", {"spec": {"replicas": 1}}, "application/merge-patch+json")
    assert [o.action for o in rec.run_cycle().outcomes] == ["corrected"]
    assert deployment(cluster, "m")["spec"]["replicas"] == 2


@pytest.mark.parametrize("adopt", [False, True], ids=["without-adopt", "with-adopt"])
def test_foreign_deployments_stay_foreign_with_or_without_adopt(cluster: FakeAPIServer, adopt: bool) -> None:
    # one with our labels but controlled by another object, one without our labels at all
    make_cr(cluster, "m")
    make_cr(cluster, "bare")
    argocd_applies(cluster, "m", 1)
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "0000-other", "controller": True}
    patch(cluster, DEP_PATH.format(ns="default", name="m"), {"metadata": {"ownerReferences": [other]}},
          "application/merge-patch+json", "?fieldManager=someone")
    bare = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bare", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": {"containers": [{"name": "x", "image": "nginx:1"}]}}}}
    post(cluster, "/apis/apps/v1/namespaces/default/deployments", bare, "?fieldManager=someone")
    DeploymentController(cluster).sync()  # their Pods run: m's carry our labels, yet are no Pods of the CR's
    before = {n: deployment(cluster, n) for n in ("m", "bare")}
    cluster.reset_log()
    report = reconciler_for(cluster, adopt=adopt).run_cycle()
    assert [o.action for o in report.outcomes] == ["not-owned", "not-owned"] and exit_code(report) == 1
    assert not [w for w in writes(cluster) if "/deployments/" in w]
    assert {n: deployment(cluster, n) for n in ("m", "bare")} == before
    for name in ("m", "bare"):
        assert condition(cluster, name, "Degraded")["reason"] == "ResourceNotOwned"
        assert cluster.get("cache.example.com", "memcacheds", "default", name)["status"]["nodes"] == [], "another's Pods are not the CR's"


def test_cli_adopt_flag_and_its_environment_variable(cluster: FakeAPIServer, tmp_path) -> None:
    import os
    import subprocess
    import sys

    from tests.support.fakecluster import write_kubeconfig

    make_cr(cluster, "m")
    argocd_applies(cluster, "m", 1)
    cmd = [sys.executable, "-m", "memcached_gitops", "reconcile", "--once", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url))]
    env = {k: v for k, v in os.environ.items() if k != "MEMCACHED_GITOPS_ADOPT"}
    run = subprocess.run(cmd, capture_output=True, timeout=60, env=env | {"MEMCACHED_GITOPS_ADOPT": "false"})
    assert run.returncode == 0, run.stderr.decode()
    assert "ownerReferences" not in deployment(cluster, "m")["metadata"]
    run = subprocess.run(cmd, capture_output=True, timeout=60, env=env | {"MEMCACHED_GITOPS_ADOPT": "true"})
    assert run.returncode == 0, run.stderr.decode()
    assert deployment(cluster, "m")["metadata"]["ownerReferences"][0]["controller"] is True
    assert any(json.loads(line)["msg"].startswith("cycle done") for line in run.stderr.decode().splitlines())


@pytest.mark.parametrize("owned_before", [False, True])
def test_taking_one_over_keeps_what_an_unknown_updater_set_until_ours(cluster: FakeAPIServer, owned_before: bool) -> None:
    """An updater we do not know (not kubectl) replaced our container port with its own, and in the same
    edit set an annotation of its own on the Pod template. Our port comes back either way and theirs goes
    (an unwanted item). Taking the GitOps-applied Deployment over (--adopt) leaves the rest of what that
    updater set (cycle.py ``_revocation``: its previous world keeps its fields until our apply replaces
    them); on a Deployment that is ours already, everything that updater holds is taken back, and our
    apply, which does not carry the annotation, removes it."""
    from tests.support.fakecluster import argocd_applies

    make_cr(cluster, "m", size=1)
    argocd_applies(cluster, "m", 1)
    rec = reconciler_for(cluster, adopt=True)
    if owned_before:
        rec.run_cycle()
        assert deployment(cluster, "m")["metadata"]["ownerReferences"][0]["controller"] is True
    edit = [{"op": "replace", "path": "/spec/template/spec/containers/0/ports",
             "value": [{"containerPort": 11311, "name": "other", "protocol": "TCP"}]},
            {"op": "add", "path": "/spec/template/metadata/annotations", "value": {"bot.example.com/touched": "yes"}}]
    code, _, data = cluster.handle("PATCH", DEP_PATH.format(ns="default", name="m") + "?fieldManager=platform-bot",
                                   {"Content-Type": "application/json-patch+json"}, json.dumps(edit).encode())
    assert code == 200, data
    rec.run_cycle()
    template = deployment(cluster, "m")["spec"]["template"]
    assert [p["containerPort"] for p in template["spec"]["containers"][0]["ports"]] == [11211]
    kept = (template["metadata"].get("annotations") or {}).get("bot.example.com/touched")
    assert kept == (None if owned_before else "yes"), template["metadata"]


def test_taking_a_gitops_applied_service_over_keeps_what_an_unknown_updater_set_until_ours(cluster: FakeAPIServer) -> None:
    """As for the Deployment: an updater we do not know replaced the port of the Service Argo CD applied
    and set an annotation of its own in the same edit. Taking the Service over (--adopt) puts our port
    back and leaves that updater's port and annotation with it: a Service not yet ours keeps what its
    previous world set (companion_step.send passes whether it is ours to cycle.py ``_revocation``)."""
    from tests.support.fakecluster import argocd_applies, argocd_applies_service

    make_cr(cluster, "m", size=1)
    argocd_applies(cluster, "m", 1)
    argocd_applies_service(cluster, "m")
    path = "/api/v1/namespaces/default/services/m-memcached"
    edit = [{"op": "replace", "path": "/spec/ports", "value": [{"port": 11311, "name": "other", "protocol": "TCP",
                                                                 "targetPort": 11311}]},
            {"op": "add", "path": "/metadata/annotations", "value": {"bot.example.com/touched": "yes"}}]
    code, _, data = cluster.handle("PATCH", path + "?fieldManager=platform-bot", {"Content-Type": "application/json-patch+json"},
                                   json.dumps(edit).encode())
    assert code == 200, data
    reconciler_for(cluster, adopt=True).run_cycle()
    service = cluster.get("", "services", "default", "m-memcached")
    assert service["metadata"]["ownerReferences"][0]["controller"] is True
    assert sorted(p["port"] for p in service["spec"]["ports"]) == [11211, 11311], "ours back, theirs left with them"
    assert (service["metadata"].get("annotations") or {}).get("bot.example.com/touched") == "yes", service["metadata"]


@pytest.mark.parametrize(("manager", "expected"), [("team-cache", Ownership.OWNED), ("memcached-gitops", Ownership.INHERITED)])
def test_an_adoption_is_ours_under_the_field_manager_that_applied_it(manager: str, expected: Ownership) -> None:
    """``reconcile --adopt --field-manager team-cache`` took the Go operator's Deployment over: its
    Apply is by team-cache, so the next cycle under that manager finds it ours (and corrects its
    drift without --adopt); under the default manager it is still the operator's, inherited."""
    taken = _dep(OURS, [{"uid": "u-1", "controller": True}], {"app.kubernetes.io/name": "project"},
                 (("manager", "Update", ""), ("team-cache", "Apply", "")))
    assert classify(taken, CR, "team-cache") is Ownership.OWNED
    assert classify(taken, CR, manager) is expected
