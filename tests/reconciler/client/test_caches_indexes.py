"""The indexes the watch events keep beside the stores (client/caches.py): a CR's Pods, and the HPA
that scales a Deployment. The controller feeds them every Pod and HPA event (orchestration/controller.py)
and the per-CR step reads them instead of a LIST; what they answer must be what the once mode
computes from a LIST (decisions/autoscalers.py ``autoscalers_by_target``)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.foundation.identities import MANAGED_BY_LABEL
from memcached_gitops.reconciler.client.api import KubeAPI, collection_path
from memcached_gitops.reconciler.client.caches import Caches, owner_name, watched_kinds
from memcached_gitops.reconciler.client.informer import Kind
from memcached_gitops.reconciler.decisions.autoscalers import autoscalers_by_target, scale_target
from memcached_gitops.reconciler.decisions.selectors import describe as describe_selector
from memcached_gitops.reconciler.decisions.vocabulary import DEPLOYMENTS, INSTANCE_LABEL, PODS
from memcached_gitops.render import MANAGED_BY
from memcached_gitops.render.deployment import APP_LABELS, selector_labels

from fakeapi.server import FakeAPIServer, Fault
from tests.support.controller import client, wait_for
from tests.support.fakecluster import patch, post


def caches() -> Caches:
    """Caches without informers: the indexes alone, fed as the controller feeds them."""
    return Caches(KubeAPI(client=None), {}, lambda *event: None, (None,))


def pod(name: str, instance: str, managed_by: str | None = MANAGED_BY, ns: str = "default") -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "memcached", INSTANCE_LABEL: instance}
    if managed_by is not None:
        labels[MANAGED_BY_LABEL] = managed_by
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}}


def hpa(name: str, target: str, ns: str = "default") -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}}}


def test_a_crs_pods_are_the_ones_we_manage_with_its_instance_label() -> None:
    """pods_of is the CR's own Pods: a Pod that carries the CR's labels under another manager (a
    copy, a Helm release's) is no Pod of ours, though ``selected`` lists it beside ours."""
    index = caches()
    assert index.track_pod("ADDED", pod("a-2", "a")) == [("default", "a")]
    assert index.track_pod("ADDED", pod("a-1", "a")) == [("default", "a")]
    index.track_pod("ADDED", pod("helm-a-0", "a", managed_by="Helm"))
    index.track_pod("ADDED", pod("bare-a-0", "a", managed_by=None))
    index.track_pod("ADDED", pod("a-9", "a", ns="other"))
    assert index.pods_of(("default", "a")) == ("a-1", "a-2")
    assert index.track_pod("MODIFIED", pod("a-1", "a"), pod("a-1", "a")) == [], "a Pod already known changes nothing"
    assert index.track_pod("DELETED", pod("a-2", "a")) == [("default", "a")]
    assert index.pods_of(("default", "a")) == ("a-1",)
    assert index.track_pod("ADDED", {"metadata": {"name": "x", "namespace": "default", "labels": {}}}) == []


def test_a_pod_relabelled_away_from_its_cr_is_no_longer_one_of_its_pods() -> None:
    """A Pod whose instance label is changed (or removed, while the app labels still select it)
    leaves the CR it named, and both CRs are told, as a LIST by each selector would show."""
    index = caches()
    index.track_pod("ADDED", pod("a-2", "a"), None)
    assert index.track_pod("MODIFIED", pod("a-2", "b"), pod("a-2", "a")) == [("default", "a"), ("default", "b")]
    assert index.pods_of(("default", "a")) == () and index.pods_of(("default", "b")) == ("a-2",)
    unlabelled = {"metadata": {"name": "a-2", "namespace": "default", "labels": {"app.kubernetes.io/name": "memcached"}}}
    assert index.track_pod("MODIFIED", unlabelled, pod("a-2", "b")) == [("default", "b")]
    assert index.pods_of(("default", "b")) == ()
    index.track_pod("ADDED", pod("h-0", "a", managed_by="Helm"), None)
    assert index.track_pod("MODIFIED", pod("h-0", "a"), pod("h-0", "a", managed_by="Helm")) == [("default", "a")]
    assert index.pods_of(("default", "a")) == ("h-0",), "taken over by us: now one of the CR's own Pods"
    assert index.track_pod("DELETED", pod("h-0", "a"), pod("h-0", "a")) == [("default", "a")]
    assert index.pods_of(("default", "a")) == ()


def test_a_deployments_autoscaler_is_the_one_the_once_mode_picks_whatever_the_event_order() -> None:
    """Several HPAs naming one Deployment: the first by name, as ``autoscalers_by_target`` picks it
    from a LIST, so the controller and ``reconcile --once`` hand replicas to the same HPA."""
    names = [f"hpa-{c}" for c in "qwertyuiopasdfgh"]
    hpas = [hpa(n, "cache-memcached") for n in names] + [hpa("other", "web")]
    expected = autoscalers_by_target(hpas)
    for seed in range(5):
        shuffled = random.Random(seed).sample(hpas, len(hpas))
        index = caches()
        for h in shuffled:
            index.track_autoscaler("ADDED", h, None)
        assert {k: index.autoscaler_of(k) for k in expected} == expected == {
            ("default", "cache-memcached"): "hpa-a", ("default", "web"): "other"}
    assert caches().autoscaler_of(("default", "cache-memcached")) == ""


def test_an_autoscaler_retargeted_or_deleted_no_longer_scales_its_old_deployment() -> None:
    index = caches()
    index.track_autoscaler("ADDED", hpa("scaler", "a"), None)
    assert index.autoscaler_of(("default", "a")) == "scaler"
    moved = index.track_autoscaler("MODIFIED", hpa("scaler", "b"), hpa("scaler", "a"))
    assert sorted(moved) == [("default", "a"), ("default", "b")], "both Deployments' replicas changed hands"
    assert (index.autoscaler_of(("default", "a")), index.autoscaler_of(("default", "b"))) == ("", "scaler")
    gone = index.track_autoscaler("DELETED", hpa("scaler", "b"), hpa("scaler", "b"))
    assert gone == [("default", "b")] and index.autoscaler_of(("default", "b")) == ""


def test_the_pods_cache_answers_a_selector_only_once_its_pods_have_listed_without_error(cluster: FakeAPIServer) -> None:
    """``selected`` answers from the cache only when the Pods' informer has synced and not given up: a
    Pods LIST the server refused leaves an empty store that knows nothing, and the reconcile LISTs
    the selector itself (None), never reads "no Pod" from it."""
    selector = {"matchLabels": {**APP_LABELS, INSTANCE_LABEL: "a"}}
    for refused in (False, True):
        if refused:
            cluster.faults.append(Fault(method="GET", path_contains="/pods", status=404, times=100))
        kinds = {PODS.kind: watched_kinds(Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds"))[PODS.kind]}
        index = Caches(client(cluster), kinds, lambda *event: None, (None,))
        pods = index.informers[PODS.kind][0].start()
        try:
            assert pods.synced.wait(10)
            assert bool(pods.error) is refused
            assert index.selected("default", selector) == (None if refused else []), f"refused: {refused}"
        finally:
            pods.stop.set()


def kept(name: str, selector: dict[str, str] | None = None, pod_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Deployment whose selector is ``selector`` (the one we render for its name when None)."""
    selector = selector_labels(name) if selector is None else selector
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": selector},
                     "template": {"metadata": {"labels": {**selector, **(pod_labels or {})}}}}}


def test_the_deployments_whose_overlap_report_may_change_are_told_whenever_a_kept_selector_comes_changes_or_goes() -> None:
    """kept_peers names the other kept-selector Deployments of the namespace when one comes, goes, or
    changes its selector or its Pods' labels: also when it stops being kept (its selector back to ours,
    or deleted), since the others' overlap with it ends then; an event that changes neither says nothing."""
    index = caches()
    old = {"app": "legacy"}
    assert index.kept_peers("ADDED", kept("a", old), None) == []
    assert index.kept_peers("ADDED", kept("b", old), None) == ["a"]
    assert index.kept_peers("ADDED", kept("c", old), None) == ["a", "b"]
    assert index.kept_peers("ADDED", kept("ours"), None) == [], "a rendered selector is no kept one"
    assert index.kept_peers("MODIFIED", kept("b", old), kept("b", old)) == [], "neither selector nor Pod labels changed"
    assert index.kept_peers("MODIFIED", kept("b", old, {"tier": "x"}), kept("b", old)) == ["a", "c"], "its Pods' labels changed"
    assert index.kept_peers("MODIFIED", kept("b"), kept("b", old, {"tier": "x"})) == ["a", "c"], "no longer kept"
    assert index.kept_peers("DELETED", kept("a", old), kept("a", old)) == ["c"], "a kept one deleted"
    assert index.kept_peers("DELETED", kept("b"), kept("b")) == [], "b had left the kept ones already"


def test_what_we_write_goes_only_to_the_store_of_the_informer_that_watches_its_namespace() -> None:
    """With one informer per namespace in scope, what a write of ours returned (``put``, the write-through)
    is kept by its own namespace's informer only: another namespace's store never holds it, so each
    object is counted (and each CR visited) once."""
    kinds = {DEPLOYMENTS.kind: watched_kinds(Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds"))[DEPLOYMENTS.kind]}
    index = Caches(KubeAPI(client=None), kinds, lambda *event: None, ("default", "shop"))
    default, shop = index.informers[DEPLOYMENTS.kind]
    for i in range(2):
        index.put(DEPLOYMENTS.kind, {**kept(f"ours-{i}"), "metadata": {"name": f"ours-{i}", "namespace": "shop", "resourceVersion": "7"}})
    assert sorted(shop.store.keys()) == [("shop", "ours-0"), ("shop", "ours-1")]
    assert default.store.keys() == [] and index.count(DEPLOYMENTS.kind) == 2
    assert index.cached(DEPLOYMENTS.kind, ("shop", "ours-1"))["metadata"]["resourceVersion"] == "7"


@contextlib.contextmanager
def _pods_index(cluster: FakeAPIServer) -> Iterator[Caches]:
    """The Pods' informer of a Caches over ``cluster``, synced, each event handed to its index as the
    controller hands it."""
    kinds = {PODS.kind: watched_kinds(Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds"))[PODS.kind]}
    index: Caches = Caches(client(cluster), kinds, lambda kind, type_, obj, old, arrived: index.track_pod(type_, obj, old), (None,))
    pods = index.informers[PODS.kind][0].start()
    try:
        assert pods.synced.wait(10)
        yield index
    finally:
        pods.stop.set()


def test_the_pods_a_selector_selects_are_those_whose_labels_it_selects_now(cluster: FakeAPIServer) -> None:
    """``selected`` answers as a LIST with the selector would: the index finds the Pods ever seen with the
    CR's instance label, ours and another manager's (a Helm release's copy is selected too), and of
    those only the ones whose labels, as cached now, the selector selects: a Pod relabelled to another
    instance leaves the index, and even while the index still names it (its store updated before the
    handler ran) it is no longer the CR's."""
    for name, manager in (("a-1", MANAGED_BY), ("a-2", MANAGED_BY), ("helm-a-0", "Helm")):
        post(cluster, "/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod", **pod(name, "a", managed_by=manager),
                                                           "spec": {"containers": [{"name": "c", "image": "m"}]}})
    with _pods_index(cluster) as index:
        selector = {"matchLabels": {**APP_LABELS, INSTANCE_LABEL: "a"}}
        assert [p["metadata"]["name"] for p in index.selected("default", selector)] == ["a-1", "a-2", "helm-a-0"]
        patch(cluster, "/api/v1/namespaces/default/pods/a-2", {"metadata": {"labels": {INSTANCE_LABEL: "b"}}},
              "application/merge-patch+json")
        wait_for(lambda: index.pods_of(("default", "b")) == ("a-2",), what="the relabelling's MODIFIED")
        assert index.pods_of(("default", "a")) == ("a-1",), "relabelled away: no longer one of a's Pods"
        assert [p["metadata"]["name"] for p in index.selected("default", selector)] == ["a-1", "helm-a-0"]
        index.track_pod("ADDED", pod("a-2", "a"))  # the index lagging the store: it names a-2 under a again
        assert index.pods_of(("default", "a")) == ("a-1", "a-2")
        assert [p["metadata"]["name"] for p in index.selected("default", selector)] == ["a-1", "helm-a-0"], \
            "the cached labels decide, not the index"


#: Selectors a CR's Deployment may carry: ours, and the kept ones of Deployments taken over (--adopt).
_SELECTORS = {
    "ours": {"matchLabels": {**APP_LABELS, INSTANCE_LABEL: "a"}},
    "instance-only": {"matchLabels": {INSTANCE_LABEL: "a"}},  # a Helm chart's or Go operator's, without our app labels
    "app-labels-only": {"matchLabels": dict(APP_LABELS)},  # a Go operator's one selector for every CR of a namespace
    "expressions-only": {"matchExpressions": [{"key": INSTANCE_LABEL, "operator": "In", "values": ["a"]}]},
    "ours-and-an-expression": {"matchLabels": {**APP_LABELS, INSTANCE_LABEL: "a"},
                               "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
}


@pytest.mark.parametrize("selector", list(_SELECTORS.values()), ids=list(_SELECTORS))
def test_a_selector_the_pods_cache_cannot_answer_exactly_is_answered_by_a_list(cluster: FakeAPIServer, selector: dict) -> None:
    """``selected`` is read instead of a LIST of the selector (cycle ``_shared``: the Pods of other owners
    that a Service or budget on it would reach). The Pods' cache holds only Pods with our app labels
    (``POD_SELECTOR``) and indexes them by instance, so for any selector it either answers exactly what
    the LIST returns, or says it does not know (None): a kept selector without our app labels or without
    the instance label would otherwise read "no other Pod" while another release's Pods carry its labels."""
    others = {"helm-a-0": {INSTANCE_LABEL: "a", "app.kubernetes.io/name": "Memcached"},  # seed 002's spelling
              "tier-a-0": {**APP_LABELS, INSTANCE_LABEL: "a", "tier": "web"}}
    for name, labels in [(p["metadata"]["name"], p["metadata"]["labels"]) for p in (pod("a-1", "a"), pod("b-1", "b"))] + list(
            others.items()):
        post(cluster, "/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod",
                                                           "metadata": {"name": name, "namespace": "default", "labels": labels},
                                                           "spec": {"containers": [{"name": "c", "image": "m"}]}})
    with _pods_index(cluster) as index:
        wait_for(lambda: index.pods_of(("default", "b")) == ("b-1",), what="the Pods' ADDED handed to the index")
        listed = sorted(p["metadata"]["name"] for p in client(cluster).list_all(collection_path(*PODS.gvr, "default"),
                                                                                  describe_selector(selector)))
        answer = index.selected("default", selector)
        assert answer is None or sorted(p["metadata"]["name"] for p in answer) == listed, (answer, listed)


def test_a_kinds_share_filter_is_the_filter_of_its_store_in_every_namespace() -> None:
    """``keep`` (reconcile --shards: the CRs this replica serves) filters each store of its kind, in
    every namespace in scope: an object of another replica's share is never cached here, not even
    what a write returned; a kind without a filter keeps everything."""
    kinds = {DEPLOYMENTS.kind: watched_kinds(Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds"))[DEPLOYMENTS.kind]}
    index = Caches(KubeAPI(client=None), kinds, lambda *event: None, ("default", "shop"),
                   keep={DEPLOYMENTS.kind: lambda obj: obj["metadata"]["name"].startswith("mine")})
    for ns in ("default", "shop"):
        for name in ("mine", "theirs"):
            index.put(DEPLOYMENTS.kind, {**kept(name), "metadata": {"name": name, "namespace": ns, "resourceVersion": "3"}})
    assert sorted(k for i in index.informers[DEPLOYMENTS.kind] for k in i.store.keys()) == [("default", "mine"), ("shop", "mine")]


def test_a_get_read_is_cached_only_as_new_as_the_watch_and_never_after_the_watch_saw_it_go() -> None:
    """``fill`` (reconcile --shards: what a GET read for a CR just handed over, before the LIST that follows)
    keeps the answer as the store's ``fill`` does: only an object the watch has seen, no older than the
    version it delivered last, and never one it has seen deleted since, whose ghost would keep the CR's
    Deployment from being created again."""
    share: set[str] = set()
    kinds = {DEPLOYMENTS.kind: watched_kinds(Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds"))[DEPLOYMENTS.kind]}
    index = Caches(KubeAPI(client=None), kinds, lambda *event: None, (None,),
                   keep={DEPLOYMENTS.kind: lambda obj: obj["metadata"]["name"] in share})
    store = index.informers[DEPLOYMENTS.kind][0].store

    def deployment(name: str, rv: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "shop", "resourceVersion": rv}}

    for name in ("gone", "newer", "same"):
        store.put(deployment(name, "7"))  # the watch's events while another replica served them
    store.remove(("shop", "gone"))  # its DELETED
    share.update({"gone", "newer", "same", "unseen"})
    for name, rv in (("gone", "7"), ("newer", "5"), ("same", "7"), ("unseen", "9")):
        index.fill(DEPLOYMENTS.kind, deployment(name, rv))
    assert index.cached(DEPLOYMENTS.kind, ("shop", "gone")) is None, "deleted since the GET: not brought back"
    assert index.cached(DEPLOYMENTS.kind, ("shop", "newer")) is None, "older than what the watch delivered"
    assert index.cached(DEPLOYMENTS.kind, ("shop", "unseen")) is None, "not seen yet: its ADDED is still to come"
    assert index.cached(DEPLOYMENTS.kind, ("shop", "same"))["metadata"]["resourceVersion"] == "7"


# ---- the indexes against a model: any sequence of events, as the informer hands them on
_POD_NAMES, _NAMESPACES, _INSTANCES = ("p0", "p1", "p2"), ("default", "shop"), (None, "a", "b")
_MANAGERS = (MANAGED_BY, "Helm", None)
_pod_moves = st.lists(st.tuples(st.sampled_from(_NAMESPACES), st.sampled_from(_POD_NAMES),
                                st.one_of(st.none(), st.tuples(st.sampled_from(_INSTANCES), st.sampled_from(_MANAGERS))),
                                st.booleans()), max_size=25)


def _labelled(name: str, ns: str, instance: str | None, manager: str | None) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "memcached"}
    if instance is not None:
        labels[INSTANCE_LABEL] = instance
    if manager is not None:
        labels[MANAGED_BY_LABEL] = manager
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}}


@settings(max_examples=100, deadline=None)
@given(_pod_moves)
def test_a_crs_pods_are_what_the_pods_labels_say_now_after_any_events(moves: list) -> None:
    """Whatever Pods come, are relabelled (to another instance, to or from our manager, in either
    namespace) and go, in any order: ``pods_of`` a CR is the Pods its namespace holds now with its
    instance label and our manager, as a LIST by the CR's selector and our label would show them, and each
    event names exactly the CRs whose Pods, ours or another manager's, it changed."""
    index, pods = caches(), {}

    def filed(ours: bool) -> dict[tuple[str, str], set[str]]:
        by_cr: dict[tuple[str, str], set[str]] = {}
        for (ns, name), (instance, manager) in pods.items():
            if instance is not None and (manager == MANAGED_BY) == ours:
                by_cr.setdefault((ns, instance), set()).add(name)
        return by_cr

    for ns, name, labels, deleted_with_old in moves:
        before = (filed(True), filed(False))
        old = _labelled(name, ns, *pods[(ns, name)]) if (ns, name) in pods else None
        if labels is None:  # the Pod goes (the DELETED event carries its last state, and ``old`` when stored)
            if old is None:
                continue
            del pods[(ns, name)]
            changed = index.track_pod("DELETED", old, old if deleted_with_old else None)
        else:
            pods[(ns, name)] = labels
            changed = index.track_pod("ADDED" if old is None else "MODIFIED", _labelled(name, ns, *labels), old)
        after = (filed(True), filed(False))
        moved = {key for b, a in zip(before, after, strict=True) for key in set(b) | set(a) if b.get(key, set()) != a.get(key, set())}
        assert len(changed) == len(set(changed)) and set(changed) == moved, (ns, name, labels)
    ours = filed(True)
    for ns in _NAMESPACES:
        for instance in _INSTANCES[1:]:
            assert index.pods_of((ns, instance)) == tuple(sorted(ours.get((ns, instance), ()))), (ns, instance)


_hpa_moves = st.lists(st.tuples(st.sampled_from(("h0", "h1", "h2")), st.sampled_from(_NAMESPACES),
                                st.one_of(st.none(), st.sampled_from(("cache-memcached", "web", "pod:x")))), max_size=25)


@settings(max_examples=100, deadline=None)
@given(_hpa_moves)
def test_a_deployments_autoscaler_is_the_once_modes_choice_after_any_events(moves: list) -> None:
    """HPAs created, retargeted (to another Deployment, or to something that is no Deployment) and deleted
    in any order, several naming one Deployment, the same names in two namespaces: ``autoscaler_of`` each
    Deployment is what ``autoscalers_by_target`` picks from a LIST of the HPAs there are now (the once
    mode), and each event names the Deployments whose HPA it may have changed."""
    index, hpas = caches(), {}

    def scaler(name: str, ns: str, target: str) -> dict[str, Any]:
        h = hpa(name, target.removeprefix("pod:"), ns)
        if target.startswith("pod:"):
            h["spec"]["scaleTargetRef"] = {"apiVersion": "v1", "kind": "Pod", "name": target}
        return h

    for name, ns, target in moves:
        old = hpas.get((ns, name))
        if target is None:
            if old is None:
                continue
            del hpas[(ns, name)]
            told = index.track_autoscaler("DELETED", old, old)
        else:
            hpas[(ns, name)] = scaler(name, ns, target)
            told = index.track_autoscaler("ADDED" if old is None else "MODIFIED", hpas[(ns, name)], old)
        touched = {scale_target(h) for h in (old, hpas.get((ns, name))) if h is not None} - {None}
        assert set(told) == touched
        expected = autoscalers_by_target(hpas.values())
        for ns_ in _NAMESPACES:
            for deployment in ("cache-memcached", "web"):
                assert index.autoscaler_of((ns_, deployment)) == expected.get((ns_, deployment), ""), (ns_, deployment)


_other_references = st.lists(st.one_of(
    st.fixed_dictionaries({"kind": st.sampled_from(("Memcached", "memcached")), "name": st.sampled_from(("y", "z"))},
                          optional={"controller": st.sampled_from((False, None))}),
    st.fixed_dictionaries({"kind": st.sampled_from(("ReplicaSet", "memcached")), "name": st.sampled_from(("y", "z")),
                           "controller": st.just(True)})), max_size=3)


@settings(max_examples=100, deadline=None)
@given(_other_references, st.one_of(st.none(), st.just("x")), st.integers(0, 3), st.one_of(st.none(), st.sampled_from(("", "label"))),
       st.sampled_from(("", "own")))
def test_an_objects_cr_is_its_controlling_memcached_whatever_references_sit_beside_it(
        others: list[dict[str, Any]], controller: str | None, at: int, instance: str | None, name: str) -> None:
    """The CR an object belongs to is named by its controller reference of kind Memcached wherever it sits
    among the others (an owner that is no controller, a controller of another kind or of a kind spelt in
    another case: the API server lets an object have one controller only); without one, our instance
    label; without that, the object's own name (apimachinery's ``metav1.GetControllerOf`` reads
    ``controller: true`` alone)."""
    references = [r for r in others if not r.get("controller")] or others
    if controller is not None:
        references = [*references[:at], {"kind": "Memcached", "name": controller, "controller": True}, *references[at:]]
    meta: dict[str, Any] = {"name": name, "ownerReferences": references}
    if instance is not None:
        meta["labels"] = {INSTANCE_LABEL: instance}
    assert owner_name({"metadata": meta}) == (controller or instance or name)
