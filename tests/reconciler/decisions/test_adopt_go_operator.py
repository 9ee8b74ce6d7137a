"""Taking over the Deployments the tutorials' Go operators left running (``reconcile --adopt``).

Each Deployment below is the one a Go operator creates, field for field, as its own code builds it
and as controller-runtime sends it (a POST by the binary ``manager``, so the field manager is
``manager``: transcript 22):

- seed 000 (../shared/seeds/000, ``deploymentForMemcached``): selector ``app.kubernetes.io/name:
  project`` for every CR of a namespace;
- seed 002 (../shared/seeds/002, ``labelsForMemcached``, line 1513): the image tag in the selector;
- operator-sdk's memcached-operator at 60559f3e (../shared/upstream/operator-sdk/...
  internal/controller/memcached_controller.go): the labels of ``labelsForMemcached`` (lines
  419-431) are read from that file, so this test follows their code, not our idea of it.

A Deployment's selector is immutable (transcript 29), so the only in-place takeover keeps it: one
apply by our field manager, the selector untouched, the Pod template labelled as the selector
needs, replicas from ``spec.size``, and a rollout that only surges.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.decisions.selectors import (
    describe,
    foreign_owners,
    has_kept_selector,
    keep_live_selector,
    matches,
    overlapping,
)

from fakeapi.server import DeploymentController, FakeAPIServer
from tests.conftest import REPO
from tests.support.controller import running, settle, wait_for
from tests.support.fakecluster import CR_PATH, DEP_PATH, condition, deployment, make_cr, patch, reconciler_for, writes
from tests.support.go_operator import MANAGER_UA, SEED_PARAMS, SEEDS, go_operator_deployment, operator_sdk_labels
from tests.upstream import needs_upstream


def left_running(api: FakeAPIServer, seed: str, names: tuple[str, ...] = ("a",), size: int = 2) -> dict[str, dict]:
    found = {}
    for name in names:
        cr = make_cr(api, name, size=size)
        found[name] = go_operator_deployment(api, cr, SEEDS[seed](name))
    DeploymentController(api).sync(available=True)
    return found


@needs_upstream
def test_the_fixture_is_operator_sdks_own_labels() -> None:
    assert operator_sdk_labels() == {"app.kubernetes.io/name": "memcached-operator", "app.kubernetes.io/version": "1.6.26-alpine3.19",
                                     "app.kubernetes.io/managed-by": "MemcachedController"}


@pytest.mark.parametrize("seed", SEED_PARAMS)
def test_without_adopt_it_is_observed_and_never_written(cluster: FakeAPIServer, seed: str) -> None:
    left_running(cluster, seed)
    before = deployment(cluster, "a")
    cluster.reset_log()
    report = reconciler_for(cluster).run_cycle()
    assert [o.action for o in report.outcomes] == ["observed"]
    assert not [w for w in writes(cluster) if "/deployments/" in w], "the Go operator may still be running: no second writer"
    assert deployment(cluster, "a")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    degraded = condition(cluster, "a", "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("False", "NotAdopted")
    assert "created for this Memcached by manager" in degraded["message"] and "--adopt" in degraded["message"]
    assert condition(cluster, "a", "Available")["status"] == "True", "its status is read from the running Deployment"


@pytest.mark.parametrize("seed", SEED_PARAMS)
def test_adopt_takes_it_over_in_place_and_a_second_run_writes_nothing(cluster: FakeAPIServer, seed: str) -> None:
    before = left_running(cluster, seed, size=2)["a"]
    cluster.objects[("cache.example.com", "memcacheds", "default", "a")]["spec"]["size"] = 3  # the CR now asks for 3
    rec = reconciler_for(cluster, adopt=True)
    cluster.reset_log()
    report = rec.run_cycle()
    assert [o.action for o in report.outcomes] == ["adopted"], report.outcomes[0].error
    after = deployment(cluster, "a")
    assert after["metadata"]["uid"] == before["metadata"]["uid"], "taken over in place, never deleted and re-created"
    assert after["spec"]["selector"] == before["spec"]["selector"], "the selector is immutable: kept"
    assert matches(after["spec"]["selector"], after["spec"]["template"]["metadata"]["labels"])
    assert after["spec"]["replicas"] == 3, "replicas follow spec.size"
    assert after["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0, "no running Pod goes before its replacement"
    applies = [e for e in after["metadata"]["managedFields"] if e["manager"] == "memcached-gitops"]
    assert [e["operation"] for e in applies] == ["Apply"]
    assert after["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "memcached-gitops", "in our labelled LIST from now on"
    assert "DELETE" not in {r.method for r in cluster.log}
    events = [o for k, o in cluster.objects.items() if k[1] == "events"]
    assert [e["reason"] for e in events] == ["Adopted"], "one Event names all the reconcile did"
    assert "keeping its selector" in events[0]["message"]
    assert "Service a-memcached created; PodDisruptionBudget a-memcached created" in events[0]["message"]
    service = cluster.get("", "services", "default", "a-memcached")
    assert matches({"matchLabels": service["spec"]["selector"]}, after["spec"]["template"]["metadata"]["labels"]), \
        "the Service finds the Pods of the adopted Deployment"
    DeploymentController(cluster).sync(available=True)
    rec.run_cycle()
    assert condition(cluster, "a", "Degraded")["status"] == "False"
    cluster.reset_log()
    again = rec.run_cycle()
    assert [o.action for o in again.outcomes] == ["unchanged"]
    assert not [w for w in writes(cluster) if "/deployments/" in w], "a second run writes nothing"


def test_a_deployment_adopted_under_another_field_manager_is_ours_under_it_from_then_on(cluster: FakeAPIServer) -> None:
    """``reconcile --adopt --field-manager team-cache`` takes the Go operator's Deployment over; the next
    runs under the same manager, without --adopt, find it theirs: a drift is corrected (not observed as
    the operator's), and nothing is taken over again."""
    left_running(cluster, "seed-000", size=2)
    assert [o.action for o in reconciler_for(cluster, adopt=True, field_manager="team-cache").run_cycle().outcomes] == ["adopted"]
    DeploymentController(cluster).sync(available=True)
    patch(cluster, DEP_PATH.format(ns="default", name="a") + "/scale", {"spec": {"replicas": 5}}, "application/merge-patch+json")
    [outcome] = reconciler_for(cluster, field_manager="team-cache").run_cycle().outcomes
    assert outcome.action == "corrected", outcome
    assert deployment(cluster, "a")["spec"]["replicas"] == 2
    assert condition(cluster, "a", "Degraded")["reason"] != "NotAdopted"


@pytest.mark.parametrize("seed", ["seed-000", pytest.param("operator-sdk", marks=needs_upstream)])
def test_a_selector_shared_by_every_cr_of_a_namespace_is_reported_on_both(cluster: FakeAPIServer, seed: str) -> None:
    left_running(cluster, seed, names=("a", "b"))
    make_cr(cluster, "c", size=1)  # one of ours, with a selector of its own: never part of an overlap
    rec = reconciler_for(cluster, adopt=True)
    for _ in range(4):
        rec.run_cycle()
    for name, other in (("a", "b"), ("b", "a")):
        degraded = condition(cluster, name, "Degraded")
        assert (degraded["status"], degraded["reason"]) == ("True", "SelectorOverlap"), degraded
        assert f"Pods of Deployment default/{other}" in degraded["message"]
        assert f"kubectl delete deployment -n default {name}" in degraded["message"], "it says what to do"
        # a Service or budget on the shared selector would send clients to, or count, the other cache's Pods
        assert cluster.get("", "services", "default", f"{name}-memcached") is None
        assert cluster.get("policy", "poddisruptionbudgets", "default", f"{name}-memcached") is None
    assert cluster.get("", "services", "default", "c-memcached") is not None
    assert condition(cluster, "c", "Degraded")["reason"] == "AsExpected"
    reasons = sorted((e["involvedObject"]["name"], e["reason"]) for k, e in cluster.objects.items() if k[1] == "events")
    assert reasons.count(("a", "SelectorOverlap")) == 1 and reasons.count(("b", "SelectorOverlap")) == 1, \
        "one Warning each: the state persists, and the CR's status already says it"


def test_an_overlap_is_reported_on_the_later_cr_in_the_cycle_that_adopts_them(cluster: FakeAPIServer) -> None:
    """One ``--once --adopt`` cycle (a CronJob's run), before any Pod exists to show the overlap (the
    Deployments' controller has not run): the Deployment taken over for a is among the kept selectors b is
    compared with in that same cycle, so b's report does not wait for the next run (a's comes with it)."""
    for name in ("a", "b"):
        go_operator_deployment(cluster, make_cr(cluster, name, size=2), SEEDS["seed-000"](name))
    rec = reconciler_for(cluster, adopt=True)
    rec.run_cycle()
    degraded = condition(cluster, "b", "Degraded")
    assert degraded["reason"] == "SelectorOverlap" and "default/a" in degraded["message"], degraded
    rec.run_cycle()
    assert condition(cluster, "a", "Degraded")["reason"] == "SelectorOverlap"


def test_seed_002s_selector_names_each_cr_so_nothing_overlaps(cluster: FakeAPIServer) -> None:
    left_running(cluster, "seed-002", names=("a", "b"))
    rec = reconciler_for(cluster, adopt=True)
    rec.run_cycle()
    rec.run_cycle()
    assert {condition(cluster, n, "Degraded")["reason"] for n in ("a", "b")} == {"AsExpected"}


def test_the_event_driven_mode_adopts_and_reports_the_overlap_on_both(cluster: FakeAPIServer) -> None:
    left_running(cluster, "seed-000", names=("a", "b"))
    with running(cluster, adopt=True):
        wait_for(lambda: all(condition(cluster, n, "Degraded").get("reason") == "SelectorOverlap" for n in ("a", "b")),
                 what="both CRs report the shared selector")
        settle(cluster)
        for name in ("a", "b"):
            dep = deployment(cluster, name)
            assert dep["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "project"}}
            assert any(e["manager"] == "memcached-gitops" for e in dep["metadata"]["managedFields"])
        assert cluster.get("", "services", "default", "a-memcached") is None, "never on a shared selector"
        # b's Deployment deleted (its Pods first, as the garbage collector would): re-created with a selector
        # of its own, and a's report ends from the event
        for key in [k for k in cluster.objects if k[1] == "pods" and k[3].startswith("b-")]:
            del cluster.objects[key]
        code, _, data = cluster.handle("DELETE", "/apis/apps/v1/namespaces/default/deployments/b", {"User-Agent": "kubectl/v1.37.1"}, b"")
        assert code == 200, data
        wait_for(lambda: condition(cluster, "a", "Degraded").get("reason") == "AsExpected", what="a's overlap report to end")
        wait_for(lambda: deployment(cluster, "b") is not None, what="b's Deployment re-created (its own event, in parallel)")
        assert deployment(cluster, "b")["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "memcached",
                                                                                 "app.kubernetes.io/instance": "b"}}
        wait_for(lambda: cluster.get("", "services", "default", "a-memcached") is not None, what="a's Service, on a selector now its own")


@pytest.mark.parametrize("seed", ["seed-000", pytest.param("operator-sdk", marks=needs_upstream)])
def test_a_shared_selector_is_reported_before_and_without_adopt(cluster: FakeAPIServer, seed: str) -> None:
    """The issue's finding 3: the overlap was told only after the take-over had made the Service."""
    left_running(cluster, seed, names=("a", "b"))
    reconciler_for(cluster).run_cycle()
    for name, other in (("a", "b"), ("b", "a")):
        degraded = condition(cluster, name, "Degraded")
        assert (degraded["status"], degraded["reason"]) == ("False", "SelectorOverlap"), degraded
        assert f"Pods of Deployment default/{other}" in degraded["message"] and "--adopt" in degraded["message"]
    assert not [w for w in writes(cluster) if "/deployments/" in w or "/services/" in w], "observed, never written"


def test_the_event_driven_mode_lists_a_kept_selector_without_our_app_labels_and_reports_another_releases_pods_on_it(
        cluster: FakeAPIServer) -> None:
    """Seed 002's selector names the CR's instance but spells the app label its own way
    (``app.kubernetes.io/name: Memcached``). The controller's Pods cache watches only Pods with our app
    labels (``POD_SELECTOR``), so it cannot hold the Pods such a selector selects: a LIST of the selector
    must answer. A second release of the same Pods (a copy of the Deployment, run by a person as a
    canary) is then found, the overlap reported, and no Service or budget is created over both."""
    left_running(cluster, "seed-002")
    canary = copy.deepcopy(deployment(cluster, "a"))
    canary["metadata"] = {"name": "a-canary", "namespace": "default"}
    canary.pop("status", None)
    code, _, data = cluster.handle("POST", DEP_PATH.format(ns="default", name="")[:-1], {
        "User-Agent": "kubectl/v1.37.1", "Content-Type": "application/json"}, json.dumps(canary).encode())
    assert code == 201, data
    DeploymentController(cluster).sync(available=True)
    with running(cluster, adopt=True):
        wait_for(lambda: any(e["manager"] == "memcached-gitops" for e in deployment(cluster, "a")["metadata"]["managedFields"]),
                 what="a's Deployment taken over")
        settle(cluster)
        degraded = condition(cluster, "a", "Degraded")
        assert degraded.get("reason") == "SelectorOverlap", degraded
        assert "also selects Pods of Deployment default/a-canary" in degraded["message"], degraded
        assert cluster.get("", "services", "default", "a-memcached") is None, "never on a selector that spans the canary"
        assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is None


@needs_upstream
def test_the_event_driven_mode_without_adopt_never_writes(cluster: FakeAPIServer) -> None:
    left_running(cluster, "operator-sdk")
    with running(cluster):
        wait_for(lambda: condition(cluster, "a", "Degraded").get("reason") == "NotAdopted", what="NotAdopted")
        settle(cluster)
    assert not [w for w in writes(cluster) if "/deployments/" in w]


# ---- the pure rules
def test_keep_live_selector_labels_the_template_as_the_selector_needs() -> None:
    desired = {"spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a"}},
                        "template": {"metadata": {"labels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a",
                                                             "app.kubernetes.io/managed-by": "memcached-gitops"}}}}}
    live = {"spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "project"},
                                  "matchExpressions": [{"key": "tier", "operator": "In", "values": ["cache", "db"]}]},
                     "template": {"metadata": {"labels": {"app.kubernetes.io/name": "project", "tier": "cache", "other": "x"}}}}}
    cached = copy.deepcopy(desired)  # the desired cache's answer, which no caller may change (desired_cache.py)
    kept = keep_live_selector(desired, live)
    assert kept["spec"]["selector"] == live["spec"]["selector"]
    assert kept["spec"]["selector"]["matchLabels"] is not live["spec"]["selector"]["matchLabels"], "never an alias of the cache"
    assert kept["spec"]["template"]["metadata"]["labels"] == {
        "app.kubernetes.io/name": "project", "app.kubernetes.io/instance": "a", "app.kubernetes.io/managed-by": "memcached-gitops",
        "tier": "cache"}, "the selector's labels win; a label it does not need is not copied"
    assert desired == cached, "the input, the cached rendering, is not changed: its selector nor its template's labels"
    assert keep_live_selector(desired, None) is desired
    same = {"spec": {"selector": desired["spec"]["selector"], "template": live["spec"]["template"]}}
    assert keep_live_selector(desired, same) is desired


def test_a_kept_selectors_expression_on_a_label_we_render_keeps_the_live_value() -> None:
    """A kept selector's matchExpression may name a label the rendering sets too (the image's version):
    the Pod template carries the live value, the one the selector was made for, not the rendered one,
    or the template would no longer match its immutable selector (the API server refuses a Deployment
    whose selector does not select its template)."""
    version = "app.kubernetes.io/version"
    desired = {"spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a"}},
                        "template": {"metadata": {"labels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a",
                                                             version: "1.6.29"}}}}}
    live = {"spec": {"selector": {"matchExpressions": [{"key": version, "operator": "In", "values": ["1.6.22"]}]},
                     "template": {"metadata": {"labels": {version: "1.6.22"}}}}}
    kept = keep_live_selector(desired, live)
    assert kept["spec"]["template"]["metadata"]["labels"][version] == "1.6.22"
    assert matches(kept["spec"]["selector"], kept["spec"]["template"]["metadata"]["labels"])


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    (None, {"a": "1"}, False),
    ({}, {}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
])
def test_selector_matching_follows_label_selector_as_selector(selector, labels, expected) -> None:
    assert matches(selector, labels) is expected


def test_overlap_either_way_and_never_with_itself() -> None:
    def dep(name: str, selector: dict, labels: dict) -> dict:
        return {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": selector}, "template": {"metadata": {"labels": labels}}}}

    wide = dep("a", {"app": "x"}, {"app": "x", "i": "a"})
    narrow = dep("b", {"app": "x", "i": "b"}, {"app": "x", "i": "b"})
    apart = dep("c", {"app": "y"}, {"app": "y"})
    assert overlapping(wide, [wide, narrow, apart]) == ["b"], "a selects b's Pods"
    assert overlapping(narrow, [wide, narrow, apart]) == ["a"], "b's Pods are selected by a"
    assert overlapping(apart, [wide, narrow]) == []


def test_a_kept_selector_is_one_we_would_not_have_rendered_for_that_name() -> None:
    ours = {"metadata": {"name": "a"}, "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "memcached",
                                                                            "app.kubernetes.io/instance": "a"}}}}
    assert not has_kept_selector(ours)
    assert has_kept_selector({**ours, "metadata": {"name": "b"}}), "another CR's selector"
    assert has_kept_selector({"metadata": {"name": "a"}, "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "project"}}}})
    assert has_kept_selector({"metadata": {"name": "a"}, "spec": {}}), "none at all is not ours either"


def test_describe_spells_a_selector_as_kubectl_get_l_takes_it() -> None:
    assert describe(None) == "<none>" and describe({}) == "<none>"
    assert describe({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["cache", "db"]}, {"key": "env", "operator": "NotIn", "values": ["dev"]},
        {"key": "owned", "operator": "Exists"}, {"key": "legacy", "operator": "DoesNotExist"}]}) == (
        "a=1,b=2,tier in (cache,db),env notin (dev),owned,!legacy")


def _pod(name: str, labels: dict[str, str], *refs: dict[str, object]) -> dict:
    return {"metadata": {"namespace": "ns", "name": name, "labels": labels, "ownerReferences": list(refs)}}


@pytest.mark.parametrize(("pod", "owner"), [
    pytest.param(_pod("b-5d9c-x", {"pod-template-hash": "5d9c"}, {"kind": "ReplicaSet", "name": "b-5d9c", "controller": True}),
                 ["Deployment ns/b"], id="another-deployments-replicaset"),
    pytest.param(_pod("a-5d9c-x", {"pod-template-hash": "5d9c"}, {"kind": "ReplicaSet", "name": "a-5d9c", "controller": True}),
                 [], id="our-own-deployments-pod"),
    pytest.param(_pod("ab-5d9c-x", {"pod-template-hash": "5d9c"}, {"kind": "ReplicaSet", "name": "ab-5d9c", "controller": True}),
                 ["Deployment ns/ab"], id="a-deployment-whose-name-begins-with-ours"),
    pytest.param(_pod("a-b-5d9c-x", {"pod-template-hash": "5d9c"}, {"kind": "ReplicaSet", "name": "a-b-5d9c", "controller": True}),
                 ["Deployment ns/a-b"], id="a-deployment-named-ours-then-a-dash"),
    pytest.param(_pod("cache-x7k2p", {}, {"kind": "ReplicaSet", "name": "cache", "controller": True}),
                 ["ReplicaSet ns/cache"], id="a-replicaset-made-by-hand-no-hash-label"),
    pytest.param(_pod("w-0", {"pod-template-hash": "5d9c"}, {"kind": "ReplicaSet", "name": "x-1", "controller": True}),
                 ["ReplicaSet ns/x-1"], id="a-hash-label-its-replicaset-name-does-not-end-with"),
    pytest.param(_pod("b-5d9c-x", {"pod-template-hash": "5d9c"}, {"kind": "ConfigMap", "name": "c"},
                      {"kind": "ReplicaSet", "name": "b-5d9c", "controller": True}),
                 ["Deployment ns/b"], id="the-controller-reference-not-the-first"),
    pytest.param(_pod("p", {}, {"kind": "ConfigMap", "name": "c"}, {"kind": "StatefulSet", "name": "s", "controller": False}),
                 ["Pod ns/p"], id="references-none-a-controller"),
    pytest.param(_pod("s-0", {}, {"kind": "StatefulSet", "name": "s", "controller": True}), ["StatefulSet ns/s"], id="statefulset"),
    pytest.param(_pod("p", {}), ["Pod ns/p"], id="a-bare-pod"),
])
def test_a_foreign_pod_is_named_by_its_controller_as_kubectl_would_trace_it(pod: dict, owner: list[str]) -> None:
    """The owner a SelectorOverlap message names. Only the reference with ``controller: true`` is the
    owner (apimachinery ``metav1.GetControllerOf``: other references are mere dependents); a ReplicaSet
    is a Deployment's only when the Pod carries ``pod-template-hash`` and the ReplicaSet is named
    ``<deployment>-<hash>`` (transcript 35), so one made by hand is named as itself."""
    assert foreign_owners("a", [pod]) == owner


def test_diff_after_adoption_sees_no_selector_drift(cluster: FakeAPIServer, tmp_path) -> None:
    """``diff`` uses the reconciler's plan: a kept selector is no drift (it is immutable)."""
    import subprocess
    import sys

    from tests.support.fakecluster import write_kubeconfig

    left_running(cluster, "seed-000")
    reconciler_for(cluster, adopt=True).run_cycle()
    cr = tmp_path / "a.yaml"
    cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 2}\n")
    cmd = [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)), str(cr)]
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr


def test_diff_of_a_cr_in_its_own_namespace_compares_its_companions_with_the_kept_selector(cluster: FakeAPIServer, tmp_path) -> None:
    """A CR file that names its namespace (``shop``, not the command's ``default``), its Go operator's
    Deployment adopted with its selector kept: the reconciler builds the Service and budget on that
    selector, so ``diff`` finds them as it would write them and exits 0. The Deployment looked up
    under the command's default namespace would leave the companions compared with our own labels:
    a selector "drift" the reconciler never corrects, failing a CI gate for nothing."""
    import subprocess
    import sys

    from memcached_gitops.render.companions import object_name

    from tests.support.fakecluster import write_kubeconfig

    cr = make_cr(cluster, "a", ns="shop", size=2)
    kept = SEEDS["seed-000"]("a")
    go_operator_deployment(cluster, cr, kept)
    DeploymentController(cluster).sync(available=True)
    assert [o.action for o in reconciler_for(cluster, adopt=True).run_cycle().outcomes] == ["adopted"]
    service = cluster.get("", "services", "shop", object_name("a"))
    assert service is not None and kept.items() <= service["spec"]["selector"].items(), "the Service selects the kept Pods"
    path = tmp_path / "a.yaml"
    path.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a, namespace: shop}\nspec: {size: 2}\n")
    cmd = [sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url)), str(path)]
    diff = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr


GUIDE = REPO / "docs" / "guides" / "migrate-from-go-operator.md"


def test_the_guides_step_removes_the_go_operators_finalizer_and_a_terminating_cr_goes(cluster: FakeAPIServer) -> None:
    """The issue's finding 5: once the Go operator is gone, its finalizer keeps a deleted CR Terminating
    for ever. The guide's patch (sent as kubectl patch --type=json sends it; kubectl's own discovery is
    not served by the fake) removes it, and only it."""
    text = GUIDE.read_text()
    assert "cache.example.com/finalizer" in text and "replaces the tutorial's CRD" in text.replace("\n", " ").replace("   ", " ")
    [body] = re.findall(r"--type=json \\\n\s+-p '(\[.*?\])'", text)
    cr_path = "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/a"
    make_cr(cluster, "a", size=1)
    for finalizers in (["cache.example.com/finalizer"], ["other.example.com/keep"]):
        code, _, data = cluster.handle("PATCH", cr_path, {"User-Agent": MANAGER_UA, "Content-Type": "application/merge-patch+json"},
                                       json.dumps({"metadata": {"finalizers": finalizers}}).encode())
        assert code == 200, data
        cluster.handle("DELETE", cr_path, {"User-Agent": "kubectl/v1.37.1"}, b"")
        assert cluster.get("cache.example.com", "memcacheds", "default", "a")["metadata"]["deletionTimestamp"], "Terminating"
        code, _, data = cluster.handle("PATCH", cr_path + "?fieldManager=kubectl-patch",
                                       {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/json-patch+json"}, body.encode())
        if finalizers == ["other.example.com/keep"]:
            assert code == 422, "another finalizer is never removed by the guide's patch"
            break
        assert code == 200, data
        assert cluster.get("cache.example.com", "memcacheds", "default", "a") is None, "gone once its finalizer is removed"
        make_cr(cluster, "a", size=1)


def _intruder(cluster: FakeAPIServer) -> None:
    """A person's Pod carrying CR a's selector labels."""
    intruder = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "intruder", "labels": {
        "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a"}},
        "spec": {"containers": [{"name": "x", "image": "busybox:1.36"}]}}
    code, _, data = cluster.handle("POST", "/api/v1/namespaces/default/pods", {"User-Agent": "kubectl/v1.37.1",
                                   "Content-Type": "application/json"}, json.dumps(intruder).encode())
    assert code == 201, data


def test_a_foreign_pod_with_our_labels_keeps_the_service_and_budget_from_being_created(cluster: FakeAPIServer) -> None:
    """Our selector is unique per CR, but anyone may label a Pod with it: looked for once, before the
    Service and the budget are created, and never selected."""
    _intruder(cluster)
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    assert deployment(cluster, "a") is not None, "the Deployment's own selector is unique: created"
    assert cluster.get("", "services", "default", "a-memcached") is None
    assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is None
    degraded = condition(cluster, "a", "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "SelectorOverlap") and "Pod default/intruder" in degraded["message"]
    cluster.handle("DELETE", "/api/v1/namespaces/default/pods/intruder", {"User-Agent": "kubectl/v1.37.1"}, b"")
    rec.run_cycle()
    assert cluster.get("", "services", "default", "a-memcached") is not None
    assert condition(cluster, "a", "Degraded")["status"] == "False"


def test_a_budget_no_longer_wanted_is_deleted_while_a_foreign_pod_holds_the_rest_back(cluster: FakeAPIServer) -> None:
    """A foreign Pod with our labels withholds every create and correction of the Service and the
    budget (the Service, deleted by a person, is not made again), but not the delete of a budget the
    CR no longer wants (size 1): left, it would count the intruder and keep blocking our one Pod's drain."""
    make_cr(cluster, "a", size=2)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is not None
    _intruder(cluster)
    cluster.handle("DELETE", "/api/v1/namespaces/default/services/a-memcached", {"User-Agent": "kubectl/v1.37.1"}, b"")
    patch(cluster, CR_PATH.format(ns="default") + "/a", {"spec": {"size": 1}}, "application/merge-patch+json", "?fieldManager=kubectl-edit")
    rec.run_cycle()  # the Service to create again: the Pods are looked at, the intruder found
    assert condition(cluster, "a", "Degraded")["reason"] == "SelectorOverlap"
    assert cluster.get("", "services", "default", "a-memcached") is None, "withheld: not created while it would select the intruder"
    assert cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is None


def test_a_foreign_pods_report_names_each_owner_and_reads_one_list_of_the_selector(cluster: FakeAPIServer) -> None:
    """The Degraded message a person reads, word for word: each foreign Pod named (", " between them),
    the selector as ``kubectl get -l`` takes it, what is held back and what to do; the Pods are read by
    one LIST of the namespace with that selector (a Pod of other labels is never looked at)."""
    from memcached_gitops.reconciler.orchestration.cycle import PAGE_SIZE

    _intruder(cluster)
    second = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "intruder-2", "labels": {
        "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a"}}, "spec": {"containers": [{"name": "x", "image": "b:1"}]}}
    bystander = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bystander", "labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "x", "image": "b:1"}]}}
    for pod in (second, bystander):
        code, _, data = cluster.handle("POST", "/api/v1/namespaces/default/pods", {"Content-Type": "application/json"},
                                       json.dumps(pod).encode())
        assert code == 201, data
    make_cr(cluster, "a", size=2)
    cluster.reset_log()
    reconciler_for(cluster).run_cycle()
    selector = "app.kubernetes.io/instance=a,app.kubernetes.io/name=memcached"
    assert condition(cluster, "a", "Degraded")["message"] == (
        f"this Memcached's selector {selector} also selects Pods of Pod default/intruder, Pod default/intruder-2: its Service and "
        "PodDisruptionBudget are not created (they would send clients to, or count, those Pods); relabel or delete them "
        f"(kubectl get pods -n default -l {selector})")
    lists = [(r.path, r.query) for r in cluster.log if r.method == "GET" and r.path.endswith("/pods") and "namespaces" in r.path]
    assert lists == [("/api/v1/namespaces/default/pods", {"limit": str(PAGE_SIZE), "labelSelector": selector})], lists


@pytest.mark.parametrize("adopt", [True, False])
def test_a_kept_selectors_overlap_is_told_word_for_word(cluster: FakeAPIServer, adopt: bool) -> None:
    """Seed 000's selector shared by three CRs, taken over (--adopt) or not yet: the message names each
    other owner, says what is held back in each case and how to get a selector of one's own."""
    left_running(cluster, "seed-000", names=("a", "b", "c"))
    rec = reconciler_for(cluster, adopt=adopt)
    for _ in range(3):
        rec.run_cycle()
    held = ("its Service and PodDisruptionBudget are not created or corrected" if adopt else
            "taken over with --adopt it is kept (a selector is immutable), and its Service and PodDisruptionBudget would not be created")
    told = (f"the Deployment's selector app.kubernetes.io/name=project also selects Pods of Deployment default/b, "
            f"Deployment default/c: {held} "
            "(they would send clients to, or count, those Pods); to give this Memcached a selector of its own: "
            "kubectl delete deployment -n default a, and the reconciler creates ours (docs/guides/migrate-from-go-operator.md)")
    message = condition(cluster, "a", "Degraded")["message"]
    assert message == told if adopt else message.startswith(told + "; the Deployment was created for this Memcached"), message


# ---- properties: a selector against every label set, not one per operator
_LABEL_KEYS = ("app", "tier", "app.kubernetes.io/name", "a/b")
_LABEL_VALUES = ("", "1", "2", "project")


def _requirement_holds(expression: dict, labels: dict[str, str]) -> bool:
    """k8s.io/apimachinery pkg/labels/selector.go, Requirement.Matches: In needs the key and one of the
    values; NotIn holds when the key is absent or its value is none of them; Exists and DoesNotExist
    look at the key alone."""
    key, values = expression["key"], expression.get("values") or []
    return {"In": key in labels and labels.get(key) in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels}[expression["operator"]]


@st.composite
def _selectors(draw: st.DrawFn) -> dict:
    selector: dict = {}
    if draw(st.booleans()):
        selector["matchLabels"] = draw(st.dictionaries(st.sampled_from(_LABEL_KEYS), st.sampled_from(_LABEL_VALUES), max_size=3))
    if draw(st.booleans()):
        selector["matchExpressions"] = draw(st.lists(st.builds(
            lambda key, op, values: {"key": key, "operator": op, **({"values": values} if op in ("In", "NotIn") else {})},
            st.sampled_from(_LABEL_KEYS), st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
            st.lists(st.sampled_from(_LABEL_VALUES), min_size=1, max_size=3, unique=True)), max_size=3))
    return selector


@settings(max_examples=100, deadline=None)
@given(_selectors(), st.dictionaries(st.sampled_from(_LABEL_KEYS), st.sampled_from(_LABEL_VALUES), max_size=4))
def test_a_selector_selects_exactly_the_labels_every_requirement_holds_for(selector: dict, labels: dict) -> None:
    """metav1.LabelSelectorAsSelector: the selector is the conjunction of one Equals requirement per
    matchLabels pair and one requirement per matchExpression; an empty selector selects everything."""
    expected = all(labels.get(k) == v and k in labels for k, v in (selector.get("matchLabels") or {}).items()) and all(
        _requirement_holds(e, labels) for e in selector.get("matchExpressions") or [])
    assert matches(selector, labels) is expected


@settings(max_examples=100, deadline=None)
@given(_selectors(), st.dictionaries(st.sampled_from(_LABEL_KEYS), st.sampled_from(_LABEL_VALUES), max_size=4),
       st.sampled_from(("other", "pod-template-hash")), st.sampled_from(_LABEL_VALUES))
def test_a_label_no_requirement_names_never_changes_the_match(selector: dict, labels: dict, key: str, value: str) -> None:
    """A Pod's labels are the union of ours and whatever others add (pod-template-hash): a key the selector
    does not name changes nothing, however the selector's requirements are spelt."""
    assert matches(selector, {**labels, key: value}) is matches(selector, labels)
