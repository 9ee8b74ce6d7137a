"""An HorizontalPodAutoscaler on a Memcached's Deployment owns its replicas (reconciler/decisions/autoscalers.py).

The HPA controller is played as kube-controller-manager plays it (transcript 40, from a real
audit log): a GET of the Deployment's scale subresource, then a PUT of an autoscaling/v1 Scale with
the resourceVersion it read. Flux's rule for a field we stop owning: drop it when another manager
owns it, keep the live value when we alone do; never a jump to a default in between.
"""

from __future__ import annotations

import json

import pytest
from memcached_gitops.reconciler.decisions.autoscalers import autoscalers_by_target, hand_off_replicas, scale_target

from fakeapi.server import DeploymentController, FakeAPIServer
from tests.support.controller import running, settle, wait_for
from tests.support.fakecluster import HPA_PATH, call, condition, cr_status, create_hpa, deployment, hpa_scales, make_cr, reconciler_for

# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default",)


def deployment_writes(api: FakeAPIServer) -> list:
    return [r for r in api.writes() if "/deployments/" in r.path and r.user_agent.startswith("memcached-gitops")]


def replicas_owners(api: FakeAPIServer, name: str = "a") -> list[tuple[str, str]]:
    return sorted((e["manager"], e.get("subresource", "")) for e in deployment(api, name)["metadata"]["managedFields"]
                  if "f:replicas" in json.dumps(e["fieldsV1"].get("f:spec", {})))


def scaled_by_an_hpa(cluster: FakeAPIServer):
    """A Memcached of size 1 whose Deployment an HPA has scaled to 3; the reconciler that created it."""
    make_cr(cluster, "a", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    create_hpa(cluster)
    hpa_scales(cluster, 3)
    return rec


def test_the_hpas_replicas_stay_and_nothing_is_written_to_them(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    create_hpa(cluster)
    cluster.reset_log()
    assert [o.action for o in rec.run_cycle().outcomes] == ["unchanged"], "we alone own replicas: the live value is kept"
    hpa_scales(cluster, 3)
    assert replicas_owners(cluster) == [("kube-controller-manager", "scale")]
    cluster.reset_log()
    assert [o.action for o in rec.run_cycle().outcomes] == ["unchanged"]
    assert deployment(cluster, "a")["spec"]["replicas"] == 3 and deployment_writes(cluster) == []
    DeploymentController(cluster).sync(available=True)
    rec.run_cycle()
    available = condition(cluster, "a", "Available")
    assert available["status"] == "True", available
    assert "3 of 3 replicas available" in available["message"] and "HorizontalPodAutoscaler a" in available["message"]
    assert condition(cluster, "a", "Degraded")["status"] == "False"


def test_a_spec_change_under_an_hpa_leaves_replicas_to_it(cluster: FakeAPIServer) -> None:
    rec = scaled_by_an_hpa(cluster)
    cr = cluster.objects[("cache.example.com", "memcacheds", "default", "a")]
    cr["spec"]["containerPort"], cr["metadata"]["generation"] = 11311, cr["metadata"]["generation"] + 1
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected" and [d.field for d in outcome.drift if "replicas" in d.field] == []
    [apply] = [w for w in deployment_writes(cluster) if w.content_type == "application/apply-patch+yaml"]
    assert "replicas" not in json.loads(apply.body)["spec"], "replicas are the HPA's: not in our apply"
    assert deployment(cluster, "a")["spec"]["replicas"] == 3


def test_deleting_the_hpa_brings_back_spec_size_in_one_write(cluster: FakeAPIServer) -> None:
    rec = scaled_by_an_hpa(cluster)
    rec.run_cycle()
    call(cluster, "DELETE", HPA_PATH.format(ns="default") + "/a")
    cluster.reset_log()
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "corrected"
    [apply] = deployment_writes(cluster)
    assert json.loads(apply.body)["spec"]["replicas"] == 1, "straight from the HPA's 3 to the CR's 1"
    assert replicas_owners(cluster) == [("memcached-gitops", "")]
    assert "HorizontalPodAutoscaler" not in condition(cluster, "a", "Available")["message"]


def test_the_event_driven_mode_hands_off_without_a_fight_and_takes_back(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a", size=1)
    with running(cluster) as controller:
        wait_for(lambda: deployment(cluster, "a"), what="the Deployment")
        create_hpa(cluster)
        wait_for(lambda: controller.caches.autoscaler_of(("default", "a")) == "a", what="the HPA in the cache")
        for replicas in (3, 3, 4, 3, 3):  # the HPA re-asserting its value, as it does every 15 s
            hpa_scales(cluster, replicas)
            settle(cluster)
        assert deployment(cluster, "a")["spec"]["replicas"] == 3
        applies = [json.loads(w.body) for w in deployment_writes(cluster) if w.content_type == "application/apply-patch+yaml"]
        assert len(applies) == 1 and applies[0]["spec"]["replicas"] == 1, "the create, then never a write of replicas"
        assert condition(cluster, "a", "Degraded").get("reason") == "AsExpected"
        assert not [e for k, e in cluster.objects.items() if k[1] == "events" and e["reason"] == "FightDetected"]
        call(cluster, "DELETE", HPA_PATH.format(ns="default") + "/a")
        wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, what="spec.size to rule again")


def test_without_rbac_for_hpas_the_once_mode_goes_on_with_spec_size(cluster: FakeAPIServer, caplog: pytest.LogCaptureFixture) -> None:
    make_cr(cluster, "a", size=2)
    cluster.rbac_rules = [{"apiGroups": ["*"], "resources": ["memcacheds", "memcacheds/status", "deployments", "pods", "events",
                                                             "customresourcedefinitions"], "verbs": ["*"]}]
    rec = reconciler_for(cluster)
    report = rec.run_cycle()
    rec.run_cycle()
    assert report.complete and [o.action for o in report.outcomes] == ["created"]
    assert deployment(cluster, "a")["spec"]["replicas"] == 2
    assert sum("cannot list HorizontalPodAutoscalers" in r.message for r in caplog.records) == 1


# ---- the pure rules
@pytest.mark.parametrize(("ref", "expected"), [
    ({"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"}, ("ns", "a")),
    ({"apiVersion": "apps/v1beta2", "kind": "Deployment", "name": "a"}, ("ns", "a")),
    ({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "a"}, None),
    ({"apiVersion": "apps", "kind": "Deployment", "name": "a"}, None),  # no group: the core group's version "apps"
    ({"apiVersion": "extensions/v1beta1", "kind": "Deployment", "name": "a"}, None),
    ({"apiVersion": "cache.example.com/v1alpha1", "kind": "Deployment", "name": "a"}, None),
    ({"apiVersion": "apps/v1", "kind": "Deployment"}, None),
    ({}, None),
])
def test_scale_target(ref: dict, expected) -> None:
    assert scale_target({"metadata": {"name": "h", "namespace": "ns"}, "spec": {"scaleTargetRef": ref}}) == expected


def test_the_first_hpa_by_name_owns_a_target_named_twice() -> None:
    def hpa(name: str, target: str) -> dict:
        return {"metadata": {"name": name, "namespace": "ns"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}}}

    assert autoscalers_by_target([hpa("z", "a"), hpa("b", "a"), hpa("c", "c")]) == {("ns", "a"): "b", ("ns", "c"): "c"}


def test_each_other_manager_of_the_replicas_is_named_once() -> None:
    """The managers that set the replicas (the REPLICAS-BY column, the Available message) name each
    manager once, ours left out: one manager owns spec.replicas through two managedFields entries when
    it wrote them by an apply and by an update (``kubectl apply --server-side``, then a kubectl write
    with no field manager), and its subresource entry is another name (``kubectl (scale)``)."""
    from memcached_gitops.reconciler.decisions.autoscalers import replicas_setters

    def entry(manager: str, operation: str, subresource: str = "") -> dict:
        return {"manager": manager, "operation": operation, "fieldsV1": {"f:spec": {"f:replicas": {}}}} | (
            {"subresource": subresource} if subresource else {})

    managed = [entry("memcached-gitops", "Apply"), entry("kubectl", "Apply"), entry("kubectl", "Update"),
               entry("kubectl", "Update", "scale")]
    assert replicas_setters({"metadata": {"managedFields": managed}}, "memcached-gitops") == "kubectl, kubectl (scale)"
    assert replicas_setters({"metadata": {"managedFields": managed[:1]}}, "memcached-gitops") == ""


def test_hand_off_drops_or_keeps_the_live_value_and_never_changes_its_input() -> None:
    desired = {"metadata": {"name": "a"}, "spec": {"replicas": 1, "template": {}}}
    ours = {"manager": "memcached-gitops", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    hpa = {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    live_ours = {"metadata": {"managedFields": [ours]}, "spec": {"replicas": 3}}
    live_hpa = {"metadata": {"managedFields": [{**ours, "fieldsV1": {"f:spec": {}}}, hpa]}, "spec": {"replicas": 4}}
    assert hand_off_replicas(desired, live_ours, "memcached-gitops")["spec"]["replicas"] == 3, "ours alone: keep the live value"
    assert "replicas" not in hand_off_replicas(desired, live_hpa, "memcached-gitops")["spec"], "the HPA's: drop it"
    assert hand_off_replicas(desired, None, "memcached-gitops") is desired, "nothing live: the CR's size starts it"
    assert desired["spec"] == {"replicas": 1, "template": {}}


def scaled_by_an_hpa_and_diff(cluster: FakeAPIServer, tmp_path) -> list[str]:
    """CR ``a`` of size 1 served, its HPA scaling it to 3; the ``diff`` command of its file."""
    import sys

    from tests.support.fakecluster import write_kubeconfig

    make_cr(cluster, "a", size=1)
    reconciler_for(cluster).run_cycle()
    create_hpa(cluster)
    hpa_scales(cluster, 3)
    cr = tmp_path / "a.yaml"
    cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 1}\n")
    return [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)), str(cr)]


def test_diff_compares_as_the_reconciler_does(cluster: FakeAPIServer, tmp_path) -> None:
    """``diff`` uses the reconciler's plan: an HPA's replicas are no drift; without the HPA they are."""
    import subprocess

    cmd = scaled_by_an_hpa_and_diff(cluster, tmp_path)
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr
    call(cluster, "DELETE", HPA_PATH.format(ns="default") + "/a")
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert diff.returncode == 1 and "default/a: .spec.replicas: live 3, desired 1 (set by kube-controller-manager (scale))" in diff.stdout


@pytest.mark.parametrize(("status", "code"), [(403, 1), (404, 1), (500, 2)])
def test_diff_by_a_person_who_may_not_list_autoscalers(cluster: FakeAPIServer, tmp_path, status: int, code: int) -> None:
    """A person's RBAC that does not grant listing HorizontalPodAutoscalers (403), or a cluster that
    does not serve them (404): ``diff`` still compares, replicas with spec.size, as the reconciler
    does without an HPA; any other failure of that read, once retried, is an error (exit 2) naming the
    namespace."""
    import subprocess

    from fakeapi.server import Fault

    cmd = scaled_by_an_hpa_and_diff(cluster, tmp_path)
    cluster.faults.append(Fault(method="GET", path_contains="/horizontalpodautoscalers", status=status, times=10))
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert diff.returncode == code, diff.stdout + diff.stderr
    if code == 1:
        assert "default/a: .spec.replicas: live 3, desired 1" in diff.stdout and diff.stderr == "", diff.stdout + diff.stderr
    else:
        assert diff.stderr.splitlines()[-1].startswith("error: default: ") and "Traceback" not in diff.stderr, diff.stderr


def test_drift_left_alone_under_detect_only_still_names_the_hpa_that_scales_the_deployment(cluster: FakeAPIServer) -> None:
    """REPLICAS-BY and READY say who sets the Deployment's replicas whatever the cycle does with the
    drift: under --detect-only (drift reported and left alone) the HPA still scales the Deployment,
    so the columns name it and count its replicas, not spec.size."""
    rec = scaled_by_an_hpa(cluster)
    rec.run_cycle()
    cr = cluster.objects[("cache.example.com", "memcacheds", "default", "a")]
    cr["spec"]["containerPort"], cr["metadata"]["generation"] = 11311, cr["metadata"]["generation"] + 1
    [outcome] = reconciler_for(cluster, detect_only=True).run_cycle().outcomes
    assert outcome.action == "drifted", outcome
    status = cr_status(cluster, "a")
    assert (status["replicasOwner"], status["ready"]) == ("HorizontalPodAutoscaler/a", "0/3"), status
    assert condition(cluster, "a", "Degraded")["reason"] == "DriftDetected"


def test_a_cr_refused_before_its_plan_counts_the_replicas_its_hpa_sets(cluster: FakeAPIServer) -> None:
    """A CR whose annotation is refused still names the HPA that scales its Deployment, and READY and
    Available count that Deployment's own replicas, as a served CR's do: never "3 of 1 replicas
    available; replicas follow HorizontalPodAutoscaler a, not spec.size"."""
    from tests.support.fakecluster import patch

    rec = scaled_by_an_hpa(cluster)
    DeploymentController(cluster).sync()
    rec.run_cycle()
    patch(cluster, "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/a",
          {"metadata": {"annotations": {"cache.example.com/reconcile": "bogus"}}}, "application/merge-patch+json")
    [outcome] = rec.run_cycle().outcomes
    assert outcome.action == "invalid", outcome
    status = cr_status(cluster, "a")
    assert (status["replicasOwner"], status["ready"], status["reason"]) == ("HorizontalPodAutoscaler/a", "3/3", "InvalidAnnotation")
    assert condition(cluster, "a", "Available")["message"].startswith("3 of 3 replicas available"), condition(cluster, "a", "Available")


def test_a_foreign_deployment_scaled_by_an_hpa_is_no_replicas_of_the_crs(cluster: FakeAPIServer) -> None:
    """A Deployment that is not the CR's (ResourceNotOwned) has no replicas the CR's status may name an
    HPA for: REPLICAS-BY is spec.size, as for any CR without a Deployment of its own."""
    from tests.support.fakecluster import post

    bare = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "default"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"x": "y"}}, "template": {"metadata": {"labels": {"x": "y"}},
                     "spec": {"containers": [{"name": "x", "image": "nginx:1"}]}}}}
    post(cluster, "/apis/apps/v1/namespaces/default/deployments", bare, "?fieldManager=someone")
    create_hpa(cluster)
    make_cr(cluster, "a", size=1)
    [outcome] = reconciler_for(cluster).run_cycle().outcomes
    assert outcome.action == "not-owned", outcome
    status = cr_status(cluster, "a")
    assert (status["replicasOwner"], status["ready"], status["reason"]) == ("spec.size", "0/1", "ResourceNotOwned")


def test_diff_of_a_cr_in_its_own_namespace_finds_the_hpa_that_scales_it_there(tmp_path) -> None:
    """A CR file that names its namespace (not the kubeconfig's, not ``default``) scaled by an HPA in
    that namespace: the reconciler leaves the HPA's replicas alone, so ``diff`` reports nothing and
    exits 0. An HPA looked up under the command's default namespace would make a CI gate on ``diff``
    fail for replicas nobody will change."""
    import subprocess
    import sys

    from tests.support.fakecluster import DEP_PATH, KCM_UA, write_kubeconfig

    with FakeAPIServer(namespaces=("default", "shop")) as api:
        make_cr(api, "a", ns="shop", size=1)
        reconciler_for(api).run_cycle()
        call(api, "POST", HPA_PATH.format(ns="shop"), {
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
                     "minReplicas": 3, "maxReplicas": 5}})
        path = DEP_PATH.format(ns="shop", name="a") + "/scale"
        scale = call(api, "GET", path, ua=KCM_UA)
        call(api, "PUT", path, {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale["metadata"],
                                "spec": {"replicas": 3}}, ua=KCM_UA)
        assert [o.action for o in reconciler_for(api).run_cycle().outcomes] == ["unchanged"]
        assert deployment(api, "a", ns="shop")["spec"]["replicas"] == 3
        cr = tmp_path / "a.yaml"
        cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a, namespace: shop}\nspec: {size: 1}\n")
        cmd = [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(write_kubeconfig(tmp_path, api.url)), str(cr)]
        diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr
        call(api, "DELETE", HPA_PATH.format(ns="shop") + "/a")
        diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert diff.returncode == 1 and "shop/a: .spec.replicas: live 3, desired 1" in diff.stdout, diff.stdout + diff.stderr
