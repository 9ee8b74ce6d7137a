"""The event-driven controller (reconciler/orchestration/controller.py) in-process, without the fake API server.

test_controller.py runs whole scenarios over HTTP (seconds each). These tests call the Controller's
parts directly: events are handed to ``on_event`` as the informers would, the cache is the
informers' stores, ``reconcile_cr`` (the per-CR step that cycle.py's tests check) is replaced by a
recorder where the test is about what the controller gives it and does with its outcome, and
``run`` is driven with informers that are synced (or failed) at once. No test waits on a fixed
sleep: each waits until a condition holds, with a generous bound.

Each test names the rule it pins.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from memcached_gitops.foundation.clocks import Monotonic
from memcached_gitops.reconciler.client.api import APIError, KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.caches import owner_name
from memcached_gitops.reconciler.client.shards import RING_LABEL, VIEW_ANNOTATION, ShardRing, key_text, lease_name, owner
from memcached_gitops.reconciler.decisions.drift import Drift
from memcached_gitops.reconciler.decisions.fights import Correction, FightDetector
from memcached_gitops.reconciler.decisions.vocabulary import INSTANCE_LABEL, MANAGED_BY_LABEL, SELECTOR, Action
from memcached_gitops.reconciler.orchestration.controller import DEFAULT_RESYNC, Controller, Result, Settings, lease_client
from memcached_gitops.reconciler.orchestration.cycle import CompanionOutcome, CROutcome, Options, Reconciler
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.render import selector_labels
from memcached_gitops.schemas import load_crd

from tests.support.clock import ManualClock
from tests.support.controller import wait_for
from tests.support.unwired import NOWHERE, cr, make, store

LOGGER = "memcached_gitops.controller"
REPLICAS = (("f", "spec"), ("f", "replicas"))


def queued(c: Controller) -> list[tuple[Any, float]]:
    """Everything on the work queue now, in order (taken off it)."""
    items = []
    while (item := c.queue.get(timeout=0)) is not None:
        items.append(item)
        c.queue.done(item[0])
    return items


def retries(c: Controller) -> float:
    """CRs put back on the queue after a failed reconcile (the workqueue_retries_total metric)."""
    return c.metrics.value("memcached_gitops_workqueue_retries_total")


def keys(c: Controller) -> list[Any]:
    return [k for k, _ in queued(c)]


def dep(name: str, ns: str = "default", rv: str = "1", selector: dict | None = None, labels: dict | None = None,
        owner: str | None = None, meta_labels: dict | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": rv}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": owner, "controller": True}]
    if meta_labels:
        meta["labels"] = meta_labels
    sel = selector if selector is not None else {"matchLabels": selector_labels(name)}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"selector": sel, "template": {"metadata": {"labels": labels if labels is not None else dict(sel["matchLabels"])}}}}


def pod(name: str, instance: str | None, ns: str = "default") -> dict[str, Any]:
    """One of our Pods (our label), of the CR ``instance``."""
    labels = {INSTANCE_LABEL: instance, "app.kubernetes.io/name": "memcached", MANAGED_BY_LABEL: "memcached-gitops"}
    return {"metadata": {"name": name, "namespace": ns, "labels": labels if instance else {}}}


def hpa(name: str, target: str, ns: str = "default", kind: str = "Deployment", api_version: str = "apps/v1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target}}}


# ---- construction
#: Every informer of a controller (with --shards, a Lease one more).
EVERY_KIND = ["Deployment", "DeploymentNames", "HorizontalPodAutoscaler", "Memcached", "Pod", "PodDisruptionBudget",
              "PodDisruptionBudgetNames", "Service", "ServiceNames"]

def test_the_informers_mirror_what_the_reconciler_reads_in_each_namespace_in_scope() -> None:
    """Memcacheds, Deployments, Services, budgets and Pods by our label (Pods as metadata, the written
    kinds with managedFields), every HPA, and the name index of every Deployment, Service and budget
    (metadata, no selector); one informer per namespace in scope, all with the controller's watch settings."""
    settings = Settings(workers=1, watch_timeout=77, heartbeat=5.0, silence_grace=3.0, streaming_list=False)
    c = make(namespaces=("default", "shop"), settings=settings)
    assert sorted(c.informers) == EVERY_KIND
    for name, informers in c.informers.items():
        assert [i.namespace for i in informers] == ["default", "shop"]
        for i in informers:
            assert (i.kind.name, i.watch_timeout, i.silence_limit, i.streaming_list, i.metrics) == (name, 77, 8.0, False, c.metrics)
    paths = {name: informers[1].path for name, informers in c.informers.items()}
    assert paths == {"Memcached": "/apis/cache.example.com/v1alpha1/namespaces/shop/memcacheds",
                     "Deployment": "/apis/apps/v1/namespaces/shop/deployments",
                     "Pod": "/api/v1/namespaces/shop/pods",
                     "HorizontalPodAutoscaler": "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers",
                     "Service": "/api/v1/namespaces/shop/services",
                     "PodDisruptionBudget": "/apis/policy/v1/namespaces/shop/poddisruptionbudgets",
                     "DeploymentNames": "/apis/apps/v1/namespaces/shop/deployments",
                     "ServiceNames": "/api/v1/namespaces/shop/services",
                     "PodDisruptionBudgetNames": "/apis/policy/v1/namespaces/shop/poddisruptionbudgets"}
    kinds = {name: informers[0].kind for name, informers in c.informers.items()}
    for index in ("DeploymentNames", "ServiceNames", "PodDisruptionBudgetNames"):
        assert kinds[index].selector is None and kinds[index].metadata_only and not kinds[index].keep_managed_fields
    assert kinds["Memcached"].selector is None and kinds["HorizontalPodAutoscaler"].selector is None
    assert kinds["Deployment"].selector == SELECTOR and kinds["Pod"].selector == "app.kubernetes.io/name=memcached"
    assert kinds["Deployment"].keep_managed_fields and not kinds["Memcached"].keep_managed_fields
    for companion in ("Service", "PodDisruptionBudget"):
        assert kinds[companion].selector == SELECTOR and kinds[companion].keep_managed_fields and not kinds[companion].metadata_only
    assert kinds["Pod"].metadata_only and not kinds["Deployment"].metadata_only
    assert not kinds["HorizontalPodAutoscaler"].keep_managed_fields and not kinds["HorizontalPodAutoscaler"].metadata_only
    assert [i.namespace for i in make().informers["Memcached"]] == [None], "no namespaces: one informer for all"


def test_the_default_settings() -> None:
    """16 workers, a resync every 10 minutes, client-go's 300 s watch timeout, the 60 s heartbeat plus 10 s, streaming lists."""
    s = Settings()
    assert (s.workers, s.resync, s.watch_timeout, s.heartbeat, s.silence_grace, s.streaming_list) == (16, 600.0, 300, 60.0, 10.0, True)
    assert DEFAULT_RESYNC == 600.0
    c = make()
    assert c.settings == Settings() and isinstance(c.fights, FightDetector)
    assert c.informers["Deployment"][0].silence_limit == 70.0 and c.informers["Deployment"][0].watch_timeout == 300


def test_without_an_elector_the_controller_leads_and_writes_with_one_it_asks_the_elector() -> None:
    """A single replica leads from the start; with leader election every write is gated by is_leader."""
    c = make()
    assert c.leading.is_set() and c.api.may_write is None
    elector = Elector(leads=False)
    c = make(elector=elector)
    assert not c.leading.is_set() and c.api.may_write == elector.is_leader


def test_the_informers_use_the_controllers_client_and_deliver_to_it() -> None:
    """Every informer reads with the controller's client (its requests are counted in /metrics) and
    hands its events to the controller, which queues the CR."""
    c = make(namespaces=("default", "shop"))
    assert all(i.api is c.api for group in c.informers.values() for i in group)
    c.informers["Memcached"][1].handler("Memcached", "ADDED", cr("a", "shop"), None, 4.0)
    c.informers["Pod"][0].handler("Pod", "ADDED", pod("p", "b"), None, 5.0)
    assert queued(c) == [(("shop", "a"), 4.0), (("default", "b"), 5.0)]


def test_the_metrics_given_are_the_ones_updated() -> None:
    """The Metrics the command line serves on /metrics are the controller's own, not a copy."""
    api = KubeAPI.connect(host=NOWHERE, retry=RetryPolicy(attempts=1))
    metrics = Metrics()
    c = Controller(Reconciler(api, load_crd(), Options()), metrics)
    assert c.metrics is metrics
    c.started_leading()
    assert metrics.value("memcached_gitops_leader") == 1


def test_the_metrics_count_requests_and_show_the_queue_depth() -> None:
    """/metrics shows the API requests counted by the client and the work queue's depth as it is now."""
    c = make()
    assert c.metrics.api_requests is c.api.requests
    c.queue.add(("default", "a"))
    c.queue.add(("default", "b"))
    assert c.metrics.value("memcached_gitops_workqueue_depth") == 2
    assert c.stop is c.reconciler.stop and c.error == "" and c.synced_after is None and c.resyncs == 0


# ---- the cache
def test_the_cache_is_read_and_written_through_the_informer_of_the_objects_namespace() -> None:
    """A key is read from its namespace's informer; our writes' answers go to it, slimmed, if newer."""
    c = make(namespaces=("default", "shop"))
    store(c, "Memcached", cr("a", "shop", rv="5"), index=1)
    assert c.caches.cached("Memcached", ("shop", "a"))["metadata"]["resourceVersion"] == "5"
    assert c.caches.cached("Memcached", ("default", "a")) is None
    assert c.caches.cached("Memcached", ("elsewhere", "a")) is None
    c.caches.put("Memcached", cr("a", "shop", rv="7", managedFields=[{"manager": "x"}]))
    assert c.informers["Memcached"][1].store.get(("shop", "a")) == cr("a", "shop", rv="7"), "slimmed: a CR loses managedFields"
    assert c.informers["Memcached"][0].store.keys() == []
    c.caches.put("Memcached", cr("a", "shop", rv="6"))
    assert c.caches.cached("Memcached", ("shop", "a"))["metadata"]["resourceVersion"] == "7", "an older answer never replaces a newer event"
    everywhere = make()
    everywhere.caches.put("Deployment", dep("d", "shop", rv="3"))
    assert everywhere.caches.cached("Deployment", ("shop", "d"))["metadata"]["resourceVersion"] == "3"
    assert sorted(make(namespaces=("default", "shop")).caches.cr_keys()) == []


def test_cr_keys_are_every_cached_cr_of_every_namespace() -> None:
    c = make(namespaces=("default", "shop"))
    store(c, "Memcached", cr("a"), cr("b"))
    store(c, "Memcached", cr("a", "shop"), index=1)
    assert sorted(c.caches.cr_keys()) == [("default", "a"), ("default", "b"), ("shop", "a")]


# ---- events
def test_a_cr_event_queues_its_key_with_the_arrival_time_and_a_deleted_cr_is_forgotten() -> None:
    """ADDED/MODIFIED queue the CR; DELETED only forgets its fight (the garbage collector removes its Deployment)."""
    fights = FightDetector(threshold=0, window=60, base=10, cap=10)
    c = make(fights=fights)
    c.on_event("Memcached", "ADDED", cr("a", "shop"), None, 12.5)
    assert queued(c) == [(("shop", "a"), 12.5)]
    assert fights.record(("shop", "a"), "shop/a", ".spec.replicas", "kubectl", Monotonic(1.0)) is not None
    assert fights.wait(("shop", "a"), Monotonic(1.0)) == 10
    c.on_event("Memcached", "DELETED", cr("a", "shop"), cr("a", "shop"), 13.0)
    assert queued(c) == [] and fights.wait(("shop", "a"), Monotonic(1.0)) == 0 and fights.active(("shop", "a"), Monotonic(1.0)) is None, \
        "a CR created again under the name starts without the old fight"


@pytest.mark.parametrize(("deployment", "owner"), [
    (dep("d", owner="a"), "a"),
    (dep("d", meta_labels={INSTANCE_LABEL: "b"}), "b"),
    (dep("d", owner="a", meta_labels={INSTANCE_LABEL: "b"}), "a"),
    (dep("d"), "d"),
])
def test_a_deployment_event_queues_the_cr_it_belongs_to(deployment, owner) -> None:
    """Its controller owner (a Memcached), else our instance label, else a CR of its own name."""
    c = make()
    c.on_event("Deployment", "MODIFIED", deployment, deployment, 3.0)
    assert queued(c) == [(("default", owner), 3.0)]


def companion(kind: str, name: str, owner: str | None = None, ns: str = "default", rv: str = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": rv, "labels": {INSTANCE_LABEL: owner or name}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": owner, "controller": True}]
    return {"apiVersion": "v1" if kind == "Service" else "policy/v1", "kind": kind, "metadata": meta}


@pytest.mark.parametrize("kind", ["Service", "PodDisruptionBudget"])
@pytest.mark.parametrize("type_", ["ADDED", "MODIFIED", "DELETED"])
def test_a_service_or_budget_event_queues_its_cr_with_the_events_arrival(kind: str, type_: str) -> None:
    """A person's edit (or deletion) of a companion comes back to its CR, which puts it back."""
    c = make()
    c.on_event(kind, type_, companion(kind, "a-memcached", owner="a", ns="shop"), None, 4.5)
    assert queued(c) == [(("shop", "a"), 4.5)]


def test_owner_name_reads_only_a_controlling_memcached_reference() -> None:
    """A non-controller reference, or a controller of another kind, is not the CR."""
    base = dep("d", meta_labels={INSTANCE_LABEL: "label"})
    for ref in ({"kind": "Memcached", "name": "x"}, {"kind": "Memcached", "name": "x", "controller": False},
                {"kind": "ReplicaSet", "name": "x", "controller": True}):
        assert owner_name({**base, "metadata": {**base["metadata"], "ownerReferences": [ref]}}) == "label"
    assert owner_name({"metadata": {"name": "n", "ownerReferences": [{"kind": "Memcached", "controller": True}]}}) == ""
    assert owner_name({"metadata": {"name": "n", "labels": {INSTANCE_LABEL: ""}}}) == "n"
    assert owner_name({"metadata": {}}) == "" and owner_name({}) == ""


def test_a_pod_event_queues_its_cr_only_when_the_set_of_its_pods_changes() -> None:
    """Pods by our instance label: a new or deleted Pod changes the CR's Pod list (status.nodes); a
    MODIFIED Pod already known, or a Pod without the label, changes nothing."""
    c = make()
    c.on_event("Pod", "ADDED", pod("p1", "a"), None, 1.0)
    c.on_event("Pod", "ADDED", pod("p2", "a"), None, 2.0)
    assert queued(c) == [(("default", "a"), 1.0)] and c.caches.pods_of(("default", "a")) == ("p1", "p2")
    c.on_event("Pod", "MODIFIED", pod("p1", "a"), pod("p1", "a"), 3.0)
    c.on_event("Pod", "ADDED", pod("q", None), None, 3.0)
    c.on_event("Pod", "ADDED", {"metadata": {"name": "r", "namespace": "default"}}, None, 3.0)
    assert queued(c) == [] and c.caches.pods_of(("default", "")) == ()
    c.on_event("Pod", "DELETED", pod("p1", "a"), pod("p1", "a"), 4.0)
    assert queued(c) == [(("default", "a"), 4.0)] and c.caches.pods_of(("default", "a")) == ("p2",)
    c.on_event("Pod", "DELETED", pod("gone", "a"), None, 5.0)
    assert queued(c) == [] and c.caches.pods_of(("default", "a")) == ("p2",)
    c.on_event("Pod", "ADDED", pod("p1", "a", ns="shop"), None, 6.0)
    assert queued(c) == [(("shop", "a"), 6.0)] and c.caches.pods_of(("shop", "a")) == ("p1",) and c.caches.pods_of(("default", "b")) == ()


def test_a_pod_relabelled_to_another_cr_queues_both_and_leaves_the_first() -> None:
    """A Pod given another CR's instance label (or losing its label) moves: the informer hands the controller the Pod's
    old self, the CR it left is queued (its status.nodes drops the Pod) as well as the CR it joined, with the event's
    arrival."""
    c = make()
    c.on_event("Pod", "ADDED", pod("p1", "a"), None, 1.0)
    c.on_event("Pod", "ADDED", pod("p2", "a"), None, 1.0)
    assert keys(c) == [("default", "a")]
    c.on_event("Pod", "MODIFIED", pod("p1", "b"), pod("p1", "a"), 2.0)
    assert sorted(queued(c)) == [(("default", "a"), 2.0), (("default", "b"), 2.0)]
    assert c.caches.pods_of(("default", "a")) == ("p2",) and c.caches.pods_of(("default", "b")) == ("p1",)
    c.on_event("Pod", "MODIFIED", pod("p2", None), pod("p2", "a"), 3.0)
    assert queued(c) == [(("default", "a"), 3.0)] and c.caches.pods_of(("default", "a")) == ()


def test_the_pod_index_holds_entries_only_for_crs_that_have_pods() -> None:
    """CRs come and go by name (a preview environment per pull request): once a CR's last Pod is deleted or
    relabelled away, its entry goes too, so the index grows with the Pods that exist, not with every name seen."""
    c = make()
    for i in range(50):
        c.on_event("Pod", "ADDED", pod(f"p{i}", f"pr-{i}"), None, 1.0)
        c.on_event("Pod", "MODIFIED", pod(f"p{i}", None), pod(f"p{i}", f"pr-{i}"), 2.0)
    c.on_event("Pod", "ADDED", pod("q", "kept"), None, 3.0)
    c.on_event("Pod", "ADDED", pod("r", "gone"), None, 3.0)
    c.on_event("Pod", "DELETED", pod("r", "gone"), pod("r", "gone"), 4.0)
    assert list(c.caches._pods) == [("default", "kept")] and not c.caches._others


def test_pods_of_lists_names_sorted() -> None:
    c = make()
    for name in ("p3", "p1", "p2"):
        c.on_event("Pod", "ADDED", pod(name, "a"), None, 1.0)
    assert c.caches.pods_of(("default", "a")) == ("p1", "p2", "p3")


KEPT = {"matchLabels": {"app": "memcached", "release": "r1"}}


def test_kept_selector_deployments_queue_their_neighbours_when_they_come_go_or_change() -> None:
    """A Deployment with a kept selector (adopted from a Go operator) can overlap its namespace's
    other such Deployments: when one comes, goes, or changes its selector or Pod labels, the others
    are queued (their SelectorOverlap report may change); a change to anything else queues none."""
    c = make()
    one, two = dep("one", selector=KEPT), dep("two", selector=KEPT)
    c.on_event("Deployment", "ADDED", one, None, 1.0)
    assert keys(c) == [("default", "one")]
    c.on_event("Deployment", "ADDED", two, None, 2.0)
    assert keys(c) == [("default", "two"), ("default", "one")]
    assert [d["metadata"]["name"] for d in c.caches.kept_deployments("default")] == [], "not in the cache yet"
    store(c, "Deployment", one, two)
    assert [d["metadata"]["name"] for d in c.caches.kept_deployments("default")] == ["one", "two"]
    assert c.caches.kept_deployments("shop") == []
    c.on_event("Deployment", "MODIFIED", {**one, "status": {"replicas": 2}}, one, 3.0)
    assert keys(c) == [("default", "one")], "the same selector and Pod labels: no neighbour queued"
    relabelled = dep("one", selector=KEPT, labels={"app": "memcached", "release": "r1", "tier": "cache"})
    c.on_event("Deployment", "MODIFIED", relabelled, one, 4.0)
    assert keys(c) == [("default", "one"), ("default", "two")]
    reselected = dep("one", selector={"matchLabels": {"app": "memcached"}})
    c.on_event("Deployment", "MODIFIED", reselected, relabelled, 5.0)
    assert keys(c) == [("default", "one"), ("default", "two")]
    c.on_event("Deployment", "MODIFIED", reselected, None, 5.5)
    assert keys(c) == [("default", "one"), ("default", "two")], "no previous object (a relist): treated as a change"
    c.on_event("Deployment", "DELETED", reselected, reselected, 6.0)
    assert keys(c) == [("default", "one"), ("default", "two")]
    store(c, "Deployment", one)
    c.informers["Deployment"][0].store.remove(("default", "one"))
    assert [d["metadata"]["name"] for d in c.caches.kept_deployments("default")] == ["two"]


def test_a_deleted_kept_deployment_is_no_longer_a_neighbour() -> None:
    """DELETED takes a kept Deployment out of the set: its neighbours are queued (with the event's
    arrival time), and it is not queued for later neighbours' changes."""
    c = make()
    one, two = dep("one", selector=KEPT), dep("two", selector=KEPT)
    c.on_event("Deployment", "ADDED", one, None, 1.0)
    c.on_event("Deployment", "ADDED", two, None, 2.0)
    queued(c)
    c.on_event("Deployment", "DELETED", one, one, 3.0)
    assert queued(c) == [(("default", "one"), 3.0), (("default", "two"), 3.0)]
    c.on_event("Deployment", "ADDED", dep("three", selector=KEPT), None, 4.0)
    assert queued(c) == [(("default", "three"), 4.0), (("default", "two"), 4.0)]


def test_an_added_kept_deployment_is_news_even_when_the_cache_held_it() -> None:
    """ADDED is a change for the neighbours whatever the cache held before (our own write-through
    of an apply can be there before the WATCH event)."""
    c = make()
    c.on_event("Deployment", "ADDED", dep("one", selector=KEPT), None, 1.0)
    queued(c)
    two = dep("two", selector=KEPT)
    c.on_event("Deployment", "ADDED", two, two, 2.0)
    assert queued(c) == [(("default", "two"), 2.0), (("default", "one"), 2.0)]


def test_a_deployment_that_gives_up_its_kept_selector_tells_its_neighbours_once() -> None:
    """A kept Deployment whose selector becomes ours again leaves the set (the others are queued);
    a Deployment with our own selector never queues anyone."""
    c = make()
    c.on_event("Deployment", "ADDED", dep("one", selector=KEPT), None, 1.0)
    c.on_event("Deployment", "ADDED", dep("two", selector=KEPT), None, 1.0)
    queued(c)
    c.on_event("Deployment", "MODIFIED", dep("one"), dep("one", selector=KEPT), 2.0)
    assert keys(c) == [("default", "one"), ("default", "two")]
    c.on_event("Deployment", "MODIFIED", dep("one", labels={"x": "y"}), dep("one"), 3.0)
    assert keys(c) == [("default", "one")], "ours, and no longer kept: nobody to tell"
    c.on_event("Deployment", "ADDED", dep("other", ns="shop", selector=KEPT), None, 4.0)
    assert keys(c) == [("shop", "other")], "a namespace's neighbours only"


def test_an_hpa_event_queues_the_crs_whose_replicas_changed_hands() -> None:
    """An HPA scaling a CR's Deployment owns its replicas: the CR is queued when an HPA starts or
    stops scaling it, or moves to another Deployment (both are queued)."""
    c = make()
    c.on_event("HorizontalPodAutoscaler", "ADDED", hpa("h", "a"), None, 1.0)
    assert queued(c) == [(("default", "a"), 1.0)] and c.caches.autoscaler_of(("default", "a")) == "h"
    c.on_event("HorizontalPodAutoscaler", "ADDED", hpa("g", "a"), None, 2.0)
    assert keys(c) == [("default", "a")] and c.caches.autoscaler_of(("default", "a")) == "g", "the first by name, as in the once mode"
    c.on_event("HorizontalPodAutoscaler", "MODIFIED", hpa("g", "b"), hpa("g", "a"), 3.0)
    assert sorted(keys(c)) == [("default", "a"), ("default", "b")]
    assert c.caches.autoscaler_of(("default", "a")) == "h" and c.caches.autoscaler_of(("default", "b")) == "g"
    c.on_event("HorizontalPodAutoscaler", "DELETED", hpa("h", "a"), hpa("h", "a"), 4.0)
    assert keys(c) == [("default", "a")] and c.caches.autoscaler_of(("default", "a")) == ""
    c.on_event("HorizontalPodAutoscaler", "MODIFIED", hpa("g", "b"), hpa("g", "b"), 5.0)
    assert keys(c) == [("default", "b")] and c.caches.autoscaler_of(("default", "b")) == "g"
    c.on_event("HorizontalPodAutoscaler", "ADDED", hpa("s", "web", kind="StatefulSet"), None, 6.0)
    assert keys(c) == [] and c.caches.autoscaler_of(("default", "web")) == ""
    c.on_event("HorizontalPodAutoscaler", "MODIFIED", hpa("g", "b", kind="StatefulSet"), hpa("g", "b"), 7.0)
    assert keys(c) == [("default", "b")] and c.caches.autoscaler_of(("default", "b")) == ""
    c.on_event("HorizontalPodAutoscaler", "MODIFIED", hpa("g", "c"), None, 8.0)
    assert keys(c) == [("default", "c")] and c.caches.autoscaler_of(("default", "c")) == "g", "no previous object: the new target only"
    assert c.caches.autoscaler_of(("default", "nothing")) == ""


# ---- reconciling one CR from the cache
class Recorder:
    """Stands in for Reconciler.reconcile_cr: records its arguments, answers ``outcome``."""

    def __init__(self, outcome: Callable[..., CROutcome] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.outcome = outcome or (lambda cr, *a, **k: CROutcome(cr["metadata"]["namespace"], cr["metadata"]["name"], Action.UNCHANGED))

    def __call__(self, cr, live, pods, declared, condition_fields, **kwargs) -> CROutcome:
        self.calls.append({"cr": cr, "live": live, "pods": pods, "declared": declared, "condition_fields": condition_fields, **kwargs})
        return self.outcome(cr, live, pods, declared, condition_fields, **kwargs)


def test_reconcile_hands_the_step_everything_from_the_cache() -> None:
    """No GET: the CR, its Deployment, its Pods, the served status schema, the fight check, the
    kept-selector neighbours and the HPA that scales it all come from memory."""
    c = make()
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    c._schema = (frozenset({"conditions"}), frozenset({"type"}))
    store(c, "Memcached", cr("a"))
    store(c, "Deployment", dep("a", rv="4"), dep("n", selector=KEPT))
    c.on_event("Deployment", "ADDED", dep("n", selector=KEPT), None, 0.0)
    c.on_event("Pod", "ADDED", pod("p", "a"), None, 0.0)
    c.on_event("HorizontalPodAutoscaler", "ADDED", hpa("h", "a"), None, 0.0)
    outcome = c.reconcile(("default", "a"), 0.0).outcome
    assert outcome is not None and outcome.action == Action.UNCHANGED
    (call,) = recorder.calls
    assert call["cr"] == cr("a") and call["live"] == dep("a", rv="4") and call["pods"] == ("p",)
    assert (call["declared"], call["condition_fields"]) == (frozenset({"conditions"}), frozenset({"type"}))
    assert call["autoscaler"] == "h"
    assert [d["metadata"]["name"] for d in call["neighbours"]("default")] == ["n"]
    assert call["degraded"](cr("a"), []) is None
    assert c.reconcile(("default", "gone"), 0.0).outcome is None and len(recorder.calls) == 1, "a CR no longer cached: nothing to do"


def test_reconcile_writes_its_answers_through_to_the_cache_and_counts_the_correction() -> None:
    """The Deployment our apply returned and the CR our status write returned replace the cached
    ones (so their own events find nothing to do); a correction's latency is from the event's arrival."""
    c = make()
    applied = dep("a", rv="9")
    written = cr("a", rv="8")
    drift = Drift(REPLICAS, 5, 1, ("kubectl",))
    c.reconciler.reconcile_cr = Recorder(lambda *a, **k: CROutcome(  # type: ignore[method-assign]
        "default", "a", Action.CORRECTED, drift=[drift], deployment=applied, cr=written, applied_at=107.5))
    store(c, "Memcached", cr("a"))
    store(c, "Deployment", dep("a", rv="4"))
    c.reconcile(("default", "a"), 100.0)
    assert c.caches.cached("Deployment", ("default", "a")) == applied and c.caches.cached("Memcached", ("default", "a")) == written
    assert c.metrics.value("memcached_gitops_drift_correction_latency_seconds_count") == 1
    assert c.metrics.value("memcached_gitops_drift_correction_latency_seconds_sum") == 7.5
    assert c.metrics.value("memcached_gitops_drift_corrections_total", {"field": ".spec.replicas"}) == 1


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_dry_run_controller_counts_what_it_found_as_detected_never_as_corrected(dry_run: bool) -> None:
    """The controller hands its reconciler's --dry-run to the metrics: a dry run wrote nothing, so the
    dashboard's corrections counter must not move (its drift is counted as detected)."""
    c = make(dry_run=dry_run)
    drift = Drift(REPLICAS, 5, 1, ("kubectl",))
    c.reconciler.reconcile_cr = Recorder(lambda *a, **k: CROutcome(  # type: ignore[method-assign]
        "default", "a", Action.CORRECTED, drift=[drift]))
    store(c, "Memcached", cr("a"))
    c.reconcile(("default", "a"), 100.0)
    counted = [c.metrics.value(f"memcached_gitops_drift_{name}_total", {"field": ".spec.replicas"}) for name in ("corrections", "detected")]
    assert counted == ([0, 1] if dry_run else [1, 0]), counted


def test_a_write_refused_for_good_is_one_warning_naming_the_cr_and_is_not_retried_at_once(caplog) -> None:
    """A 422 (refused for good): one warning with the CR's namespace/name and the refusal, the key done
    (retried at the resync or on a change), never put back at the backoff's pace."""
    from memcached_gitops.reconciler.orchestration.write_apply import WriteFailure

    caplog.set_level(logging.WARNING, logger=LOGGER)
    c = make()
    failure = WriteFailure("Deployment", "default/a", "apply", 422, "spec.template: Invalid value")
    c.reconciler.reconcile_cr = Recorder(lambda *a, **k: CROutcome(  # type: ignore[method-assign]
        "default", "a", Action.FAILED, error=failure.describe(), failures=[failure]))
    store(c, "Memcached", cr("a"))
    result = c.reconcile(("default", "a"), 100.0)
    assert result.done and not result.retry
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == [
        "default/a: Deployment default/a: apply refused: HTTP 422: spec.template: Invalid value; "
        "retried at the resync or when the CR or its objects change"]


def test_an_unlabelled_companion_read_by_a_get_stays_out_of_an_unsharded_cache() -> None:
    """A foreign Service without our labels, found by a GET of its name: the labelled informers never
    see it, so an unsharded controller never caches it (it would stay there after it is deleted)."""
    c = make()
    foreign = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a-memcached", "namespace": "default", "resourceVersion": "5"}}
    c.reconciler.reconcile_cr = Recorder(lambda *a, **k: CROutcome(  # type: ignore[method-assign]
        "default", "a", Action.UNCHANGED, companions=CompanionOutcome(read=[("Service", foreign)])))
    store(c, "Memcached", cr("a"))
    c.reconcile(("default", "a"), 100.0)
    assert c.caches.cached("Service", ("default", "a-memcached")) is None


def test_reconcile_finds_the_companions_in_the_cache_and_writes_their_answers_through() -> None:
    """The step finds the cached Service and budget by kind, namespace and name (no GET), and what its
    applies of them returned replaces the cached ones."""
    c = make()
    store(c, "Memcached", cr("a"))
    store(c, "Service", companion("Service", "a-memcached", owner="a", rv="3"))
    applied = [companion("Service", "a-memcached", owner="a", rv="7"), companion("PodDisruptionBudget", "a-memcached", owner="a", rv="8")]
    found: list[Any] = []

    def step(cr_: dict[str, Any], *args: Any, companions: Any = None, **kwargs: Any) -> CROutcome:
        from memcached_gitops.reconciler.decisions.vocabulary import COMPANIONS

        for resource in COMPANIONS:
            found.append((resource.kind, companions(resource, "default", "a-memcached")))
        return CROutcome("default", "a", Action.CORRECTED, companions=CompanionOutcome(applied=applied))

    c.reconciler.reconcile_cr = step  # type: ignore[method-assign]
    c.reconcile(("default", "a"), 1.0)
    assert found == [("Service", companion("Service", "a-memcached", owner="a", rv="3")), ("PodDisruptionBudget", None)]
    assert c.caches.cached("Service", ("default", "a-memcached")) == applied[0]
    assert c.caches.cached("PodDisruptionBudget", ("default", "a-memcached")) == applied[1]


def test_a_new_deployment_is_no_correction() -> None:
    """Creating a missing Deployment is no drift corrected: no latency sample."""
    c = make()
    c.reconciler.reconcile_cr = Recorder(lambda *a, **k: CROutcome(  # type: ignore[method-assign]
        "default", "a", Action.CREATED, deployment=dep("a", rv="9"), applied_at=5.0))
    store(c, "Memcached", cr("a"))
    c.reconcile(("default", "a"), 1.0)
    assert c.caches.cached("Deployment", ("default", "a")) == dep("a", rv="9") and c.caches.cached("Memcached", ("default", "a")) == cr("a")
    assert c.metrics.value("memcached_gitops_drift_correction_latency_seconds_count") == 0


def test_a_failed_step_is_an_error_for_the_work_queue() -> None:
    """A FAILED outcome is counted and answered as a retry, so the worker retries the CR with backoff."""
    c = make()
    c.reconciler.reconcile_cr = Recorder(lambda *a, **k: CROutcome("default", "a", Action.FAILED, error="apply refused"))  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    result = c.reconcile(("default", "a"), 1.0)
    assert result.retry == "apply refused" and not result.done and result.after is None
    assert result.outcome is not None and result.outcome.action == Action.FAILED
    assert c.metrics.value("memcached_gitops_errors_total", {"reason": "failed"}) == 1


def test_a_cr_no_longer_cached_is_done_and_its_failures_are_forgotten() -> None:
    """A key whose CR is gone is served (nothing to do): its past failures are forgotten, as after a
    success, so a CR created again under that name starts without backoff."""
    c = make()
    key = ("default", "gone")
    c.queue.add_rate_limited(key)
    assert c.queue.failures(key) == 1
    result = c.reconcile(key, 0.0)
    assert result.outcome is None and result.done and result.retry is None and result.after is None
    c._requeue(key, result)
    assert c.queue.failures(key) == 0


@pytest.mark.parametrize(("result", "delayed", "failures", "counted"), [
    (Result(after=7.0), [7.0], 1, 0),
    (Result(retry="apply refused"), ["backoff"], 2, 1),
    (Result(done=True), [], 0, 0),
    (Result(after=7.0, retry="apply refused"), [7.0, "backoff"], 2, 1),
    (Result(after=7.0, done=True), [7.0], 0, 0),
], ids=["after", "retry", "done", "after-and-retry", "after-and-done"])
def test_each_thing_a_served_key_asks_of_the_queue_is_done_also_beside_another(
        result: Result, delayed: list[Any], failures: int, counted: int) -> None:
    """A key's result may ask two things at once (a sharded CR whose servedBy write waits for its slot
    and whose apply failed: again at the slot, and again at the backoff's pace). Each is done: the
    delay is scheduled, the failure is counted (workqueue_retries_total) and grows the key's
    backoff, and a served key's past failures are forgotten; a delay never stands in for a retry."""
    c = make()
    clock = ManualClock(100.0)
    c.queue.clock = clock
    key = ("default", "a")
    c.queue.add_rate_limited(key)  # one failure before: the key's backoff is under way
    already = c.queue.pending().delayed
    c._requeue(key, result)
    added = [due - clock.now for due, k in c.queue.pending().delayed if k == key and (due, k) not in already]
    assert sorted(added.count(7.0) * [7.0] + (len(added) - added.count(7.0)) * ["backoff"], key=str) == sorted(delayed, key=str)
    assert c.queue.failures(key) == failures
    assert retries(c) == counted


# ---- fights
class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str]] = []

    def record(self, cr: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.recorded.append((cr["metadata"]["name"], type_, reason, message))


def test_corrections_against_another_manager_become_a_fight(caplog) -> None:
    """Each correction of a field another manager set is recorded; our own manager's never are.
    One too many within the window is a fight: a Warning log line, the fights metric, a Warning
    Event (the message cut to 1,024 characters), and the CR is Degraded FieldManagerFight."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make(fights=FightDetector(threshold=2, window=60, base=10, cap=10))
    c.reconciler.events = Events()  # type: ignore[assignment]
    theirs = Correction("Deployment", "default/a", Drift(REPLICAS, 5, 1, ("memcached-gitops", "kubectl")))
    ours = Correction("Deployment", "default/a", Drift(REPLICAS, 5, 1, ("memcached-gitops",)))
    for _ in range(5):
        assert c._fight_check(cr("a"), [ours]) is None, "our own manager is never fought"
    assert c._fight_check(cr("a"), [theirs]) is None
    assert c._fight_check(cr("a"), [theirs]) is None
    reason, message = c._fight_check(cr("a"), [theirs])
    assert reason == "FieldManagerFight" and ".spec.replicas of Deployment default/a was corrected 3 times" in message
    assert "by field manager kubectl;" in message
    assert c.metrics.value("memcached_gitops_fights_total", {"field": ".spec.replicas", "manager": "kubectl"}) == 1
    assert c.reconciler.events.recorded == [("a", "Warning", "FightDetected", message[:1024])]
    assert f"default/a: fight: {message}" in [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert c._fight_check(cr("a"), []) == ("FieldManagerFight", message), "Degraded while the fight lasts"
    assert c._fight_check(cr("b"), []) is None


def test_one_kubectl_scale_after_a_fight_ended_before_the_next_resync_is_no_fight() -> None:
    """With the defaults, a fight is over once the field stayed corrected for the window after the
    backoff (fights.py): a person's single ``kubectl scale`` after that, before the next resync has
    reconciled the CR, is one correction, not a new fight. The CR must not turn Degraded
    FieldManagerFight again with a Warning Event saying it was "corrected once", nor wait out a
    doubled backoff."""
    c = make()
    clock = ManualClock(0.0)
    c.clock = clock  # type: ignore[assignment]
    c.reconciler.events = Events()  # type: ignore[assignment]
    theirs = Correction("Deployment", "default/a", Drift(REPLICAS, 5, 1, ("memcached-gitops", "kubectl")))
    for _ in range(c.fights.threshold):
        assert c._fight_check(cr("a"), [theirs]) is None
        clock.advance(1.0)
    assert c._fight_check(cr("a"), [theirs]) is not None, "the fight"
    clock.advance(c.fights.base)
    assert c._fight_check(cr("a"), []) is not None, "the reconcile after the backoff: still Degraded"
    over = clock.now + c.fights.window
    clock.now = (over + DEFAULT_RESYNC) / 2
    assert over < clock.now < DEFAULT_RESYNC
    assert c._fight_check(cr("a"), [theirs]) is None, "one correction after the fight ended is a fight again"
    assert [reason for _, _, reason, _ in c.reconciler.events.recorded] == ["FightDetected"]
    assert c.fights.wait(("default", "a"), clock.monotonic()) == 0


def test_a_companions_fight_names_its_object_and_counts_apart_from_the_deployments() -> None:
    """The same field path of the Service and of the Deployment, undone by the same manager, are two
    counts: neither alone is one too many. Once the Service's is, the condition, the Event and the
    metric name the Service (the metric's field after its kind, as the drift counters have it)."""
    c = make(fights=FightDetector(threshold=2, window=60, base=10, cap=10))
    c.reconciler.events = Events()  # type: ignore[assignment]
    labels = (("f", "metadata"), ("f", "labels"), ("f", "team"))
    service = Correction("Service", "default/a-memcached", Drift(labels, "x", "y", ("kubectl-label",)))
    deployment = Correction("Deployment", "default/a", Drift(labels, "x", "y", ("kubectl-label",)))
    for _ in range(2):
        assert c._fight_check(cr("a"), [service, deployment]) is None
    reason, message = c._fight_check(cr("a"), [service])
    assert reason == "FieldManagerFight"
    assert message.startswith(".metadata.labels.team of Service default/a-memcached was corrected 3 times in 60s and set back "
                              "each time by field manager kubectl-label;")
    assert c.metrics.value("memcached_gitops_fights_total", {"field": "Service .metadata.labels.team", "manager": "kubectl-label"}) == 1
    assert c.metrics.value("memcached_gitops_fights_total", {"field": ".metadata.labels.team", "manager": "kubectl-label"}) == 0
    assert c.reconciler.events.recorded == [("a", "Warning", "FightDetected", message)]


def test_a_fight_event_message_is_cut_to_1024_characters() -> None:
    """The fight's whole message goes to the EventRecorder, which posts at most 1,024 characters."""
    from memcached_gitops.reconciler.client.events import EventRecorder

    class API:
        def __init__(self) -> None:
            self.bodies: list[dict[str, Any]] = []

        def request(self, method: str, path: str, body: dict[str, Any], verb: str) -> None:
            self.bodies.append(body)

    c = make(fights=FightDetector(threshold=0, window=60, base=10, cap=10))
    api = API()
    c.reconciler.events = EventRecorder(api)  # type: ignore[arg-type]
    long_name = "d" * 1500
    c._fight_check(cr(long_name), [Correction("Deployment", f"default/{long_name}", Drift(REPLICAS, 5, 1, ("kubectl",)))])
    [body] = api.bodies
    assert body["reason"] == "FightDetected" and body["type"] == "Warning"
    assert len(body["message"]) == 1024 and body["message"].startswith(".spec.replicas of Deployment default/ddd")


# ---- workers
def work(c: Controller, until: Callable[[], object]) -> None:
    """One worker until ``until`` holds, then shut the queue down."""
    thread = threading.Thread(target=c._work, daemon=True, name="the worker")
    thread.start()
    try:
        wait_for(until, thread=thread)
    finally:
        c.queue.shut_down()
        thread.join(10)
    assert not thread.is_alive()


def test_a_worker_reconciles_each_queued_cr_and_times_it() -> None:
    c = make()
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"), cr("b"))
    c.queue.add(("default", "a"), 1.0)
    c.queue.add(("default", "b"), 2.0)
    work(c, lambda: c.metrics.value("memcached_gitops_work_duration_seconds_count") >= 2 or retries(c))
    assert [call["cr"]["metadata"]["name"] for call in recorder.calls] == ["a", "b"]
    assert retries(c) == 0, "a CR that reconciles is not retried"


def test_a_worker_is_active_while_it_holds_a_key_and_idle_after() -> None:
    """controller-runtime's active_workers: one while the step runs, back to zero after it, also
    when the step fails."""
    c = make()
    seen: list[float] = []

    def step(*a: Any, **k: Any) -> CROutcome:
        seen.append(c.metrics.value("controller_runtime_active_workers", {"controller": "memcached"}))
        return CROutcome("default", a[0]["metadata"]["name"], Action.FAILED if a[0]["metadata"]["name"] == "b" else Action.UNCHANGED,
                         error="refused")

    c.reconciler.reconcile_cr = step  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"), cr("b"))
    c.queue.add(("default", "a"), 1.0)
    c.queue.add(("default", "b"), 1.0)
    work(c, lambda: len(seen) >= 2 and c.queue.wait_idle(0))
    assert seen[:2] == [1.0, 1.0]
    assert c.metrics.value("controller_runtime_active_workers", {"controller": "memcached"}) == 0


def test_a_worker_measures_a_correction_from_the_events_arrival() -> None:
    """The latency of a correction runs from the arrival of the event that queued the CR; the work
    duration is the time the worker spent on it."""
    c = make()

    def corrected(*a: Any, **k: Any) -> CROutcome:
        time.sleep(0.05)
        return CROutcome("default", "a", Action.CORRECTED, drift=[Drift(REPLICAS, 5, 1, ("kubectl",))],
                         deployment=dep("a", rv="9"), applied_at=107.5)

    c.reconciler.reconcile_cr = Recorder(corrected)  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    c.queue.add(("default", "a"), 100.0)
    work(c, lambda: c.metrics.value("memcached_gitops_work_duration_seconds_count") == 1)
    assert c.metrics.value("memcached_gitops_drift_correction_latency_seconds_sum") == 7.5
    assert 0.05 <= c.metrics.value("memcached_gitops_work_duration_seconds_sum") < 30


def test_a_standby_takes_keys_off_the_queue_without_reconciling() -> None:
    """Not the leader: nothing is reconciled (everything is queued again on becoming the leader)."""
    c = make(elector=Elector(leads=False))
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"), cr("b"))
    thread = threading.Thread(target=c._work, daemon=True, name="the worker")
    thread.start()
    try:
        c.queue.add(("default", "a"))
        c.queue.add(("default", "b"))
        wait_for(lambda: len(c.queue) == 0 and c.metrics.value("memcached_gitops_work_duration_seconds_count") == 2, thread=thread)
        assert recorder.calls == []
        c.started_leading()
        wait_for(lambda: len(recorder.calls) == 2, what="the same worker reconciles once leading", thread=thread)
    finally:
        c.queue.shut_down()
        thread.join(10)


def test_a_cr_in_a_fight_waits_its_backoff() -> None:
    """A CR backing off from a fight is put back after the wait (from now), then reconciled once;
    the wait is no failure (no retry counted, no per-key backoff)."""
    fights = FightDetector(threshold=0, window=60, base=0.2, cap=0.2)
    c = make(fights=fights)
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    started = time.monotonic()
    assert fights.record(("default", "a"), "default/a", ".spec.replicas", "kubectl", Monotonic(started)) is not None
    c.queue.add(("default", "a"))
    work(c, lambda: recorder.calls or retries(c))
    assert time.monotonic() - started >= 0.2 and len(recorder.calls) == 1
    assert retries(c) == 0, "waiting out a fight is no failure"


def test_a_failing_cr_is_retried_with_backoff_and_a_success_resets_it(caplog) -> None:
    """An APIError is a warning and a rate-limited retry; a bug is logged with its traceback and
    retried too; the others go on; a success forgets the CR's failures."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make()
    failures = {"a": [APIError(500, "etcd leader changed"), RuntimeError("bug")]}

    def outcome(cr: dict[str, Any], *a: Any, **k: Any) -> CROutcome:
        name = cr["metadata"]["name"]
        if failures.get(name):
            raise failures[name].pop(0)
        return CROutcome("default", name, Action.UNCHANGED)

    recorder = Recorder(outcome)
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"), cr("b"))
    c.queue.add(("default", "a"))
    c.queue.add(("default", "b"))
    work(c, lambda: [call["cr"]["metadata"]["name"] for call in recorder.calls].count("a") == 3)
    assert retries(c) == 2
    assert c.queue.failures(("default", "a")) == 0, "the success forgot the failures"
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOGGER]
    assert ("WARNING", "default/a: HTTP 500: etcd leader changed; retrying with backoff") in logged
    assert ("ERROR", "default/a: reconcile failed") in logged
    assert next(r for r in caplog.records if r.getMessage() == "default/a: reconcile failed").exc_info is not None


def test_a_failing_cr_counts_its_failures(caplog) -> None:
    """A refused write worth retrying is a warning naming the CR and the refusal, a retry counted,
    and the CR again at the backoff's pace, as a raised APIError is."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make()
    c.reconciler.reconcile_cr = Recorder(lambda *a, **k: CROutcome("default", "a", Action.FAILED, error="no"))  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    c.queue.add(("default", "a"))
    work(c, lambda: c.queue.failures(("default", "a")) >= 1)
    assert retries(c) >= 1
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOGGER]
    assert ("WARNING", "default/a: no; retrying with backoff") in logged


def test_a_cr_whose_reconcile_keeps_raising_is_retried_at_a_growing_pace() -> None:
    """A read that keeps failing (etcd down, a 403 on a GET): each attempt is a failure the queue counts,
    and the CR comes back after a backoff that doubles from 5 ms (client-go's per-item limiter): a few
    attempts in 0.3 s, never a hot loop of requests and warnings."""
    c = make()
    calls: list[float] = []

    def outcome(cr: dict[str, Any], *a: Any, **k: Any) -> CROutcome:
        calls.append(time.monotonic())
        raise APIError(500, "etcdserver: request timed out")

    c.reconciler.reconcile_cr = Recorder(outcome)  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    c.queue.add(("default", "a"))
    start = time.monotonic()
    work(c, lambda: time.monotonic() - start >= 0.3)
    assert 2 <= len(calls) <= 12, f"{len(calls)} attempts in 0.3 s"
    assert c.queue.failures(("default", "a")) >= len(calls) - 1, "each failed attempt counted for the backoff"


# ---- leadership
class Elector:
    """Stands in for LeaderElector: leads (or not) when run, records release."""

    def __init__(self, leads: bool = True, holder: str = "me") -> None:
        self.leads, self.holder, self.released, self.thread = leads, holder, False, None

    def is_leader(self) -> bool:
        return self.leads

    def run(self, stop: threading.Event, on_started, on_stopped, on_holder) -> None:
        self.thread = threading.current_thread()
        on_holder(self.holder)
        if self.leads:
            on_started()
        stop.wait()

    def release(self) -> None:
        self.released = True


def test_becoming_the_leader_queues_every_cached_cr_and_losing_it_stops_the_work() -> None:
    c = make(elector=Elector(leads=False))
    store(c, "Memcached", cr("a"), cr("b"))
    c.started_leading()
    assert c.leading.is_set() and c.metrics.leader and c.metrics.value("memcached_gitops_leader") == 1
    assert sorted(keys(c)) == [("default", "a"), ("default", "b")]
    c.stopped_leading()
    assert not c.leading.is_set() and not c.metrics.leader and c.metrics.value("memcached_gitops_leader") == 0
    c.on_holder("replica-2")
    assert c.metrics.holder == "replica-2"


def test_the_lease_client_makes_one_bounded_attempt_and_is_never_gated() -> None:
    """The Lease's own client: one attempt, a quarter of the renew deadline, the same counters,
    credentials and User-Agent, and no may_write gate (it is how leadership is kept)."""
    api = KubeAPI.connect(host=NOWHERE, retry=RetryPolicy(attempts=5), user_agent="memcached-gitops/1 replica-7")
    api.may_write = lambda: False
    lease = lease_client(api, 10.0)
    assert lease.retry.attempts == 1 and lease.timeout == 2.5 and lease.requests is api.requests and lease.results is api.results
    assert lease.client is api.client and lease.user_agent == "memcached-gitops/1 replica-7" and lease.may_write is None


def test_the_controller_wires_its_metrics_to_the_client_the_queue_and_the_cache() -> None:
    """rest_client_requests_total counts the client's answers, the workqueue_* series observe the
    controller's own queue, and the status conditions come from the CRs this replica serves."""
    c = make()
    assert c.metrics.api_requests is c.api.requests and c.metrics.api_results is c.api.results
    assert c.queue.observer is c.metrics.workqueue
    served = cr("a")
    served["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    store(c, "Memcached", served)
    assert c.served_crs() == [served]
    assert c.metrics.value("memcached_gitops_status_condition",
                           {"namespace": "default", "memcached": "a", "condition": "Ready", "status": "true"}) == 1


# ---- run
def ready(c: Controller, errors: dict[str, str] | None = None, never: tuple[str, ...] = ()) -> list[str]:
    """Informers that are synced at start (with an error for the kinds in ``errors``; never for ``never``)."""
    started: list[str] = []
    for name, informers in c.informers.items():
        for informer in informers:
            def start(informer=informer, name=name):
                started.append(name)
                if name in (errors or {}):
                    informer.error = errors[name]  # type: ignore[index]
                if name not in never:
                    informer.synced.set()
                return informer
            informer.start = start  # type: ignore[method-assign]
    return started


def start_run(c: Controller, **kwargs: Any) -> tuple[threading.Thread, list[int]]:
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(c.run(**kwargs)), daemon=True, name="run")
    thread.start()
    return thread, result


def run_to_end(c: Controller, bound: float = 10.0, **kwargs: Any) -> list[int]:
    """``run`` where it should return by itself: its exit code, or [] when it had not returned
    within ``bound`` seconds (then it is stopped, so that a wrong run fails the test, not hangs it)."""
    thread, result = start_run(c, **kwargs)
    thread.join(bound)
    c.stop.set()
    return result


def stop_run(c: Controller, thread: threading.Thread, result: list[int]) -> int:
    c.stop.set()
    thread.join(30)
    assert result, "run returned"
    return result[0]


def test_a_served_crd_that_cannot_be_read_is_said_and_every_field_is_written(caplog) -> None:
    """The served CRD's status schema could not be read: one warning naming why, and the step runs
    with no restriction of the status fields (None), as for our own CRD."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make(settings=Settings(workers=1, resync=DEFAULT_RESYNC))
    ready(c)

    def refused() -> Any:
        raise APIError(403, "customresourcedefinitions is forbidden")

    c.reconciler.status_schema = refused  # type: ignore[method-assign]
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    thread, result = start_run(c)
    wait_for(lambda: recorder.calls, what="the CR reconciled", thread=thread)
    assert stop_run(c, thread, result) == 0
    assert (recorder.calls[0]["declared"], recorder.calls[0]["condition_fields"]) == (None, None)
    assert "cannot read the served CRD: HTTP 403: customresourcedefinitions is forbidden" in [
        r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_run_syncs_then_reconciles_every_cr_and_stops_cleanly(caplog) -> None:
    """Start every informer, read the served status schema once, wait for the first sync, then
    reconcile every cached CR; on stop: 0, the queue drained, the informers stopped."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make(settings=Settings(workers=2, resync=DEFAULT_RESYNC))
    started = ready(c)
    schema = (frozenset({"conditions", "nodes"}), None)
    c.reconciler.status_schema = lambda: schema  # type: ignore[method-assign]
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"), cr("b"))
    store(c, "Deployment", dep("a"))
    thread, result = start_run(c)
    wait_for(lambda: len(recorder.calls) == 2 or retries(c), what="both CRs reconciled", thread=thread)
    assert len(recorder.calls) == 2 and retries(c) == 0
    assert sorted(started) == EVERY_KIND
    assert c.metrics.ready and c.metrics.leader and c.synced_after is not None and 0 <= c.synced_after < 30
    assert all((call["declared"], call["condition_fields"]) == schema for call in recorder.calls)
    workers = sorted(t.name for t in threading.enumerate() if t.name.startswith("worker-"))
    assert workers == ["worker-0", "worker-1"]
    assert stop_run(c, thread, result) == 0
    assert c.queue.shutting_down and all(i.stop.is_set() for group in c.informers.values() for i in group)
    assert not c.metrics.leader and c.error == ""
    logged = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any(m.startswith("caches synced in ") and m.endswith("s: 2 Memcacheds, 1 Deployments, 0 Pods") for m in logged), logged
    stopped = [float(m.removeprefix("stopped after ").removesuffix("s")) for m in logged if m.startswith("stopped after ")]
    assert len(stopped) == 1 and 0 <= stopped[0] < 60, logged


def test_run_with_an_elector_waits_for_leadership_and_releases_the_lease() -> None:
    """With leader election: the elector runs in its own thread and decides when to lead; on stop the Lease is released."""
    elector = Elector(leads=True, holder="replica-1")
    c = make(elector=elector, settings=Settings(workers=1))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    thread, result = start_run(c)
    wait_for(lambda: recorder.calls, what="reconciled once leading", thread=thread)
    assert elector.thread is not None and elector.thread.name == "leader-election" and elector.thread.daemon
    assert c.metrics.holder == "replica-1" and c.metrics.leader
    assert stop_run(c, thread, result) == 0
    assert elector.released and not c.metrics.leader


def test_a_standby_neither_reconciles_nor_resyncs() -> None:
    elector = Elector(leads=False, holder="replica-2")
    c = make(elector=elector, settings=Settings(workers=1, resync=0.05))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    thread, result = start_run(c)
    wait_for(lambda: c.metrics.holder == "replica-2" and c.metrics.ready, thread=thread)
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        assert recorder.calls == [] and c.resyncs == 0
        time.sleep(0.02)
    assert stop_run(c, thread, result) == 0 and elector.released


def test_the_loop_looks_at_the_informers_at_least_once_a_second() -> None:
    """With a long resync period the loop still wakes every second (an informer's failure ends run)."""
    c = make(settings=Settings(workers=1, resync=3600.0))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    sleeps: list[float] = []
    real_wait = c.stop.wait
    c.stop.wait = lambda timeout=None: sleeps.append(timeout) or real_wait(timeout)  # type: ignore[method-assign]
    thread, result = start_run(c)
    wait_for(lambda: sleeps, what="the loop's first sleep", thread=thread)
    assert stop_run(c, thread, result) == 0
    assert sleeps[0] == 1.0


def test_the_resync_queues_every_cached_cr_again_once_a_period(caplog) -> None:
    """Every ``resync`` seconds each cached CR is reconciled again (the safety net), counted and
    logged; the loop never sleeps past the next resync, nor more than a second (it watches the
    informers' errors), and a resync is followed by a full period, not by another at once."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    c = make(settings=Settings(workers=1, resync=0.2))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"), cr("b"))
    sleeps: list[float] = []
    real_wait = c.stop.wait
    c.stop.wait = lambda timeout=None: sleeps.append(timeout) or real_wait(timeout)  # type: ignore[method-assign]
    thread, result = start_run(c)
    wait_for(lambda: len(recorder.calls) >= 6 or retries(c), what="two resyncs", thread=thread)
    assert c.resyncs >= 2 and retries(c) == 0, "the CRs of the first sync, then each resync's"
    time.sleep(0.3)
    resyncs = c.resyncs
    assert stop_run(c, thread, result) == 0
    assert resyncs <= 2 + 4, f"{resyncs} resyncs in about 0.7 s at one per 0.2 s"
    logged = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.getMessage().startswith("resync")]
    assert logged == ["resync: queueing 2 CRs"] * c.resyncs
    assert sleeps and all(0.0 <= t <= 0.2 for t in sleeps), sleeps


def test_a_cr_stuck_in_a_request_holds_shutdown_30_seconds_at_most() -> None:
    """SIGTERM's drain waits for the workers' current CRs for 30 s (the kubelet's default grace
    period), by the work queue's clock; then run returns even though a worker is still stuck."""
    from memcached_gitops.reconciler.client.workqueue import WorkQueue

    class StepClock:
        """Real time until armed; then one reading, and every later one 30 s after it."""

        def __init__(self) -> None:
            self.armed, self.first = False, None

        def __call__(self) -> float:
            if not self.armed:
                return time.monotonic()
            if self.first is None:
                self.first = 1000.0
                return self.first
            return self.first + 30.0

    clock = StepClock()
    c = make(settings=Settings(workers=1))
    c.queue = WorkQueue(clock=clock)
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    inside, release = threading.Event(), threading.Event()

    def stuck(*a: Any, **k: Any) -> CROutcome:
        inside.set()
        release.wait(30)
        return CROutcome("default", "a", Action.UNCHANGED)

    c.reconciler.reconcile_cr = Recorder(stuck)  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    thread, result = start_run(c)
    try:
        assert inside.wait(10)
        clock.armed = True
        c.stop.set()
        thread.join(10)
        assert result == [0], "returned while the worker is still stuck"
    finally:
        release.set()


def test_no_resync_before_its_period() -> None:
    """The first resync comes a full period after the sync, not at once."""
    c = make(settings=Settings(workers=1, resync=HOURS))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("a"))
    thread, result = start_run(c)
    wait_for(lambda: recorder.calls, thread=thread)
    time.sleep(0.3)
    assert c.resyncs == 0 and len(recorder.calls) == 1
    assert stop_run(c, thread, result) == 0


HOURS = 3600.0


def test_an_informer_the_server_refuses_stops_run_with_its_error(caplog) -> None:
    """A request the server will never accept (informer.error) ends run with 2 and every such error."""
    c = make(namespaces=("default", "shop"))
    ready(c, errors={"Pod": "pods: the API server refuses the request: HTTP 400: bad selector"})
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    assert run_to_end(c, first_sync_timeout=10) == [2]
    assert c.error == "; ".join(["pods: the API server refuses the request: HTTP 400: bad selector"] * 2)
    assert not c.metrics.ready and c.synced_after is None
    assert c.error in [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_an_informer_that_fails_after_the_sync_stops_run() -> None:
    c = make(settings=Settings(workers=1))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    thread, result = start_run(c)
    wait_for(lambda: c.metrics.ready, thread=thread)
    c.informers["Deployment"][0].error = "deployments: gone"
    c.informers["Pod"][0].error = "pods: gone"
    thread.join(10)
    assert result == [2] and c.error == "deployments: gone; pods: gone"


def test_the_first_sync_is_bounded_and_a_stop_during_it_is_clean() -> None:
    """``first_sync_timeout``: 2 when the caches never sync in time; 0 when stopped while waiting."""
    c = make()
    ready(c, never=("Pod",))
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    started = time.monotonic()
    assert run_to_end(c, 1.0, first_sync_timeout=0.1) == [2]
    assert 0.1 <= time.monotonic() - started < 1.0 and not c.metrics.ready, "the wait looks at its bound every 50 ms"
    c = make()
    ready(c, never=("Pod",))
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    thread, result = start_run(c)
    time.sleep(0.2)
    assert result == [] and not c.metrics.ready, "no timeout: it waits"
    assert stop_run(c, thread, result) == 0


class FakeTime:
    """The controller's (and its share's) clock, standing still until the test moves it."""

    def __init__(self, now: float) -> None:
        self.now, self.readings = now, 0

    def monotonic(self) -> Monotonic:
        self.readings += 1
        return Monotonic(self.now)


def test_the_caches_get_the_whole_first_sync_timeout(monkeypatch) -> None:
    """``first_sync_timeout`` is the time the caches are given: when the clock reads the deadline
    itself run still waits for them (a sync then comes in time); only past it does it give up with 2."""
    clock = FakeTime(1000.0)
    c = make()
    c.clock = clock  # type: ignore[assignment]
    ready(c, never=("Pod",))
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    thread, result = start_run(c, first_sync_timeout=5.0)
    wait_for(lambda: clock.readings >= 2, what="the first look at the bound", thread=thread)
    clock.now = 1000.0 + 5.0
    seen = clock.readings
    wait_for(lambda: clock.readings >= seen + 2, what="two looks at the deadline", thread=thread)
    assert result == [] and not c.metrics.ready, "at the deadline it still waits"
    clock.now = 1005.001
    thread.join(10)
    c.stop.set()
    assert result == [2] and not c.metrics.ready


def slow_reconciles(c: Controller) -> tuple[threading.Event, list[str]]:
    """One worker whose every reconcile takes 0.3 s: set when one has begun, the names finished."""
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    inside, finished = threading.Event(), []

    def slow(cr: dict[str, Any], *a: Any, **k: Any) -> CROutcome:
        inside.set()
        time.sleep(0.3)
        finished.append(cr["metadata"]["name"])
        return CROutcome("default", cr["metadata"]["name"], Action.UNCHANGED)

    c.reconciler.reconcile_cr = Recorder(slow)  # type: ignore[method-assign]
    return inside, finished


def test_shutdown_finishes_the_current_cr(caplog) -> None:
    """SIGTERM: the worker's current CR is finished before run returns."""
    c = make(settings=Settings(workers=1))
    inside, finished = slow_reconciles(c)
    store(c, "Memcached", cr("a"))
    thread, result = start_run(c)
    assert inside.wait(10)
    assert stop_run(c, thread, result) == 0
    assert finished == ["a"]


def test_the_cache_is_left_out_of_garbage_collections_after_the_first_sync() -> None:
    """The cache's long-lived objects are frozen (gc.freeze) once synced: a full collection no longer walks them."""
    import gc

    gc.unfreeze()
    c = make(settings=Settings(workers=1))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    thread, result = start_run(c)
    wait_for(lambda: c.metrics.ready, thread=thread)
    try:
        assert gc.get_freeze_count() > 0
    finally:
        assert stop_run(c, thread, result) == 0
        gc.unfreeze()


def test_workers_and_the_election_run_in_daemon_threads() -> None:
    """Workers and the leader election are daemon threads, whoever calls run: a request stuck past
    SIGTERM's drain never keeps the process alive."""
    elector = Elector(leads=True)
    c = make(elector=elector, settings=Settings(workers=2))
    ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    seen: dict[str, bool] = {}

    def observe() -> None:
        try:
            wait_for(lambda: c.leading.is_set() and elector.thread is not None)
            seen.update({t.name: t.daemon for t in threading.enumerate() if t.name.startswith("worker-")})
            seen["leader-election"] = elector.thread.daemon  # type: ignore[union-attr]
        finally:
            c.stop.set()

    observer = threading.Thread(target=observe, daemon=True)
    observer.start()
    assert c.run() == 0  # in this (non-daemon) thread
    observer.join(10)
    assert seen == {"worker-0": True, "worker-1": True, "leader-election": True}


# ---- shards (reconcile --shards): the ring is a real ShardRing on an in-process Lease client
class LeaseAPI:
    """The ring's client in-process: one namespace's Leases in a dict, every request recorded as
    (method, path); ``refuse`` makes the next request of that method fail."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.rv = 0
        self.refuse: dict[str, APIError] = {}

    def request(self, method: str, path: str, body: Any = None, verb: str | None = None, **_: Any) -> dict[str, Any]:
        self.calls.append((method, path))
        if method in self.refuse:
            raise self.refuse.pop(method)
        name = body["metadata"]["name"] if method == "POST" else path.rsplit("/", 1)[1]
        if method == "GET":
            if name not in self.leases:
                raise APIError(404, "not found")
            return self.leases[name]
        if method == "DELETE":
            self.leases.pop(name, None)
            return {}
        self.rv += 1
        lease = copy.deepcopy(body)
        lease["metadata"]["resourceVersion"] = str(self.rv)
        self.leases[name] = lease
        return lease


def sharded(identity: str = "a", namespaces: tuple[str, ...] = (), settings: Settings | None = None,
            monotonic: Callable[[], float] | None = None, **ring: Any) -> tuple[Controller, ShardRing, LeaseAPI]:
    """A controller with a ShardRing of ring ``blue`` in namespace ``leases`` (not a CR namespace)."""
    api = KubeAPI.connect(host=NOWHERE, retry=RetryPolicy(attempts=1))
    leases = LeaseAPI()
    shards = ShardRing(leases, "leases", identity, ring="blue", monotonic=monotonic or ManualClock(100.0), **ring)  # type: ignore[arg-type]
    c = Controller(Reconciler(api, load_crd(), Options(namespaces=namespaces)), Metrics(), None, settings, None, shards=shards)
    return c, shards, leases


def peer_lease(identity: str, *view: str, incarnation: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": lease_name(identity), "namespace": "leases", "resourceVersion": "7",
                         "labels": {RING_LABEL: "blue"}, "annotations": {VIEW_ANNOTATION: ",".join(view)}},
            "spec": {"holderIdentity": identity, "leaseTransitions": incarnation, "renewTime": "2026-11-25T12:00:00.000000Z"}}


NAMES = [f"cache-{i}" for i in range(12)]


def share(of: str, ns: str = "default", members: tuple[str, ...] = ("a", "b")) -> list[str]:
    """The names of NAMES that ``of`` serves among ``members``."""
    return [n for n in NAMES if owner(key_text((ns, n)), members) == of]


def test_with_shards_every_replica_leads_its_share_and_each_write_asks_the_ring() -> None:
    """No leader election: the workers run at once, the API client's write gate is the ring's
    per-CR may_write, and the ring's callbacks are the controller's (an agreement queues the
    share, a new view wakes the share follower, a hand-over is measured)."""
    c, ring, _ = sharded()
    assert c.leading.is_set() and c.shards is ring and c.api.may_write == ring.may_write
    assert ring.on_agreed == c.share.on_agreed
    assert not c.share.changed.is_set()
    ring.on_view()
    assert c.share.changed.is_set()
    ring.on_handover(1.5)
    assert c.metrics.value("memcached_gitops_shard_handovers_total") == 1
    assert c.metrics.value("memcached_gitops_shard_handover_seconds_sum") == 1.5


def test_with_shards_a_fifth_informer_watches_the_rings_leases_in_the_rings_namespace() -> None:
    """The Lease informer: coordination.k8s.io/v1 leases labelled with this ring, in the ring's own
    namespace (whatever namespaces the CRs are watched in), with the controller's watch settings;
    it keeps every Lease. The Deployment cache keeps this replica's share only."""
    settings = Settings(workers=1, watch_timeout=77, heartbeat=5.0, silence_grace=3.0, streaming_list=False)
    c, ring, _ = sharded(namespaces=("default", "shop"), settings=settings)
    assert sorted(c.informers) == sorted([*EVERY_KIND, "Lease"])
    [leases] = c.informers["Lease"]
    kind = c.kinds["Lease"]
    assert leases.kind is kind and (kind.name, kind.group, kind.version, kind.plural) == ("Lease", "coordination.k8s.io", "v1", "leases")
    assert kind.selector == f"{RING_LABEL}=blue" and not kind.metadata_only and not kind.keep_managed_fields
    assert leases.namespace == "leases" and leases.path == "/apis/coordination.k8s.io/v1/namespaces/leases/leases"
    assert (leases.watch_timeout, leases.silence_limit, leases.streaming_list, leases.metrics) == (77, 8.0, False, c.metrics)
    assert leases.api is c.api and leases.handler == c.on_event and leases.store.keep is None
    assert all(i.store.keep is not None for i in c.informers["Deployment"])
    for name in ("Memcached", "Pod", "HorizontalPodAutoscaler"):
        assert all(i.store.keep is None for i in c.informers[name]), f"{name}: small, all kept"
    assert "Lease" not in make().informers, "without shards: no Lease informer"


def test_a_lease_event_goes_to_the_ring_and_without_shards_is_ignored() -> None:
    c, ring, _ = sharded()
    c.on_event("Lease", "ADDED", peer_lease("b", "b#0"), None, 1.0)
    assert [p.token for p in ring.peers.values()] == ["b#0"] and ring.members() == ["b"]
    c.on_event("Lease", "DELETED", peer_lease("b", "b#0"), None, 2.0)
    assert ring.peers == {} and queued(c) == []
    plain = make()
    plain.on_event("Lease", "ADDED", peer_lease("b", "b#0"), None, 1.0)
    assert queued(plain) == []


def test_with_shards_the_deployment_cache_keeps_the_objects_of_this_replicas_share() -> None:
    """Among the members and itself: a Deployment by the CR it belongs to (its owner, not its own
    name), or when it has a kept selector (a neighbour of any CR)."""
    c, ring, _ = sharded()
    c.on_event("Lease", "ADDED", peer_lease("b", "b#0"), None, 1.0)  # b is a member; a is not yet fenced
    mine, theirs = share("a"), share("b")
    assert mine and theirs
    keep = c.informers["Deployment"][0].store.keep
    assert keep(dep(theirs[0], owner=mine[0])) and not keep(dep(mine[0], owner=theirs[0]))
    assert keep(dep(theirs[0], selector=KEPT)), "a kept selector's Deployment is every CR's neighbour"
    c.informers["Deployment"][0].store.put(dep(theirs[0], owner=theirs[0]))
    assert c.caches.cached("Deployment", ("default", theirs[0])) is None, "another replica's Deployment is not cached"


def joined(c: Controller, ring: ShardRing, *peers: str) -> None:
    """This replica's Lease written, the ring listed, and each peer's Lease (acknowledging it) delivered."""
    ring.join()
    ring.listed = True
    ring.step()  # publishes the view with itself in it
    for p in peers:
        c.on_event("Lease", "ADDED", peer_lease(p, ring.token, f"{p}#0"), None, 1.0)


def test_with_shards_the_owned_crs_are_this_replicas_share_and_an_agreement_queues_them() -> None:
    """owned_keys is the share in the current view (the metric too); when the ring acknowledges a
    view this replica's share is queued, none of the others' CRs."""
    c, ring, leases = sharded()
    store(c, "Memcached", *(cr(n) for n in NAMES))
    assert c.owned_keys() == [] and c.metrics.value("memcached_gitops_shard_owned_crs") == 0, "not a member yet"
    joined(c, ring)
    assert list(leases.leases) == [lease_name("a")]
    everything = {("default", n) for n in NAMES}
    assert c.share.served == c.share.sweeping == everything and len(c.owned_keys()) == len(NAMES), "alone: every CR, swept"
    c.on_event("Lease", "ADDED", peer_lease("b", "a#0", "b#0"), None, 2.0)
    assert sorted(c.owned_keys()) == [("default", n) for n in sorted(share("a"))]
    assert c.metrics.value("memcached_gitops_shard_owned_crs") == len(share("a"))
    assert c.metrics.value("memcached_gitops_shard_members") == 2
    assert c.share.served == {("default", n) for n in share("a")}, "the new view's acknowledgement: a smaller share, nothing new"
    plain = make()
    store(plain, "Memcached", cr("x"), cr("y"))
    assert plain.owned_keys() == [("default", "x"), ("default", "y")]


def test_with_shards_a_worker_reconciles_only_what_the_ring_allows_and_holds_it_while_it_runs() -> None:
    """Each key is served under the ring's hold: another replica's CR is taken off the queue without
    a reconcile (and without a retry); one of ours is reconciled with its writes allowed, and the
    hold ends with the reconcile."""
    c, ring, _ = sharded()
    joined(c, ring, "b")
    queued(c)
    writable: list[bool] = []

    def outcome(cr: dict[str, Any], *a: Any, **k: Any) -> CROutcome:
        writable.append(c.api.may_write())
        return CROutcome("default", cr["metadata"]["name"], Action.UNCHANGED)

    recorder = Recorder(outcome)
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", *(cr(n) for n in NAMES))
    for n in NAMES:
        c.queue.add(("default", n))
    work(c, lambda: c.metrics.value("memcached_gitops_work_duration_seconds_count") >= len(NAMES) or retries(c))
    assert sorted(call["cr"]["metadata"]["name"] for call in recorder.calls) == sorted(share("a"))
    assert writable == [True] * len(share("a")) and retries(c) == 0
    assert not any(ring._holds.values()) and not c.api.may_write(), "no hold outside a reconcile"


def test_run_with_shards_joins_the_ring_before_the_caches_and_deletes_its_lease_on_stop() -> None:
    """The Lease is created and the ring's Leases listed before any other cache starts (the Lease
    informer is started once); the share is reconciled; the Lease thread and the share follower run
    in named daemon threads; on stop the Lease is deleted, after the work in flight."""
    c, ring, leases = sharded(settings=Settings(workers=1), monotonic=time.monotonic, retry_period=0.05)
    started = ready(c)
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", *(cr(n) for n in NAMES))
    thread, result = start_run(c)
    names = lambda: {call["cr"]["metadata"]["name"] for call in recorder.calls}  # noqa: E731
    wait_for(lambda: names() == set(NAMES) or retries(c), what="the share reconciled", thread=thread)
    assert retries(c) == 0
    assert started[0] == "Lease" and sorted(started[1:]) == EVERY_KIND
    assert leases.calls[0] == ("POST", "/apis/coordination.k8s.io/v1/namespaces/leases/leases") and ring.listed
    daemons = {t.name: t.daemon for t in threading.enumerate() if t.name.startswith("shard-")}
    assert daemons == {"shard-lease": True, "shard-share": True}
    assert c.share.cached_members == {"a"} and c.metrics.ready
    assert stop_run(c, thread, result) == 0
    assert leases.leases == {} and leases.calls[-1] == ("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/leases/leases/{ring.name}")
    assert ring.stopping and c.queue.shutting_down


def test_run_with_shards_ends_when_the_ring_cannot_be_listed() -> None:
    """A Lease informer the server refuses: 2 and its error (the Lease just created is deleted);
    one that never syncs within the first sync's bound: 2; a stop while it syncs: 0, no error."""
    c, _, leases = sharded()
    ready(c, errors={"Lease": "leases: the API server refuses the request: HTTP 403"}, never=("Lease",))
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    assert run_to_end(c, first_sync_timeout=10) == [2]
    assert c.error == "leases: the API server refuses the request: HTTP 403" and leases.leases == {}
    c, _, _ = sharded()
    started = ready(c, never=("Lease",))
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    assert run_to_end(c, first_sync_timeout=0.1) == [2]
    assert c.error == "the shard Leases did not sync" and started == ["Lease"]
    c, _, _ = sharded()
    ready(c, never=("Lease",))
    c.reconciler.status_schema = lambda: (None, None)  # type: ignore[method-assign]
    thread, result = start_run(c)
    time.sleep(0.2)
    assert result == [], "no bound: it waits"
    assert stop_run(c, thread, result) == 0 and c.error == ""


@pytest.mark.parametrize(("peer", "settled"), [(None, 2.0), ("b", 10.0)])
def test_joining_gives_the_ring_a_renew_period_and_a_silent_member_four_more(monkeypatch, peer, settled) -> None:
    """After listing the Leases the caches wait one renew period (replicas start together), and then
    until the ring acknowledges this replica, but at most four renew periods more: a member that
    never answers does not hold this one's share. Then the Lease thread and the share follower start."""
    clock = FakeTime(1000.0)
    c, ring, _ = sharded()
    c.share.clock = clock  # type: ignore[assignment]
    ready(c)
    if peer:
        c.on_event("Lease", "ADDED", peer_lease(peer, f"{peer}#0"), None, 1.0)
    waits: list[float] = []

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout)  # type: ignore[arg-type]
        clock.now += timeout  # type: ignore[operator]
        return False

    c.stop.wait = wait  # type: ignore[method-assign]
    threads: dict[str, threading.Thread] = {}
    ring.run = lambda stop: threads.update({"run": threading.current_thread()})  # type: ignore[method-assign]
    c.share.follow = lambda: threads.update({"follow": threading.current_thread()})  # type: ignore[method-assign]
    assert c.share.join(Monotonic(1000.0), None) is True
    assert 1000.0 + settled <= clock.now < 1000.0 + settled + 0.05 and set(waits) == {0.02}
    wait_for(lambda: len(threads) == 2)
    assert (threads["run"].name, threads["run"].daemon, threads["follow"].name, threads["follow"].daemon) == \
        ("shard-lease", True, "shard-share", True)
    assert c.share.cached_members == ({"a", peer} if peer else {"a"})


class ScriptedWait:
    """An Event's ``wait`` that records each timeout and moves the fake clock to the next scripted
    reading (the last one repeats), returning ``False`` (not set) until the script says ``True``."""

    def __init__(self, clock: FakeTime, readings: list[float], results: list[bool] | None = None) -> None:
        self.clock, self.readings, self.results = clock, readings, results or []
        self.timeouts: list[float | None] = []

    def __call__(self, timeout: float | None = None) -> bool:
        n = len(self.timeouts)
        self.timeouts.append(timeout)
        self.clock.now = self.readings[min(n, len(self.readings) - 1)]
        return self.results[n] if n < len(self.results) else False


def test_the_ring_s_leases_get_the_whole_first_sync_timeout_looked_at_every_50_ms(monkeypatch) -> None:
    """The Lease cache's sync is polled every 50 ms; at the deadline itself it still waits (a sync then
    comes in time), and only past ``started + timeout`` does the join give up."""
    clock = FakeTime(1000.0)
    c, ring, _ = sharded()
    c.share.clock = clock  # type: ignore[assignment]
    ready(c, never=("Lease",))
    [leases] = c.informers["Lease"]
    leases.synced.wait = ScriptedWait(clock, [1000.0, 1005.0, 1005.0, 1005.001])  # type: ignore[method-assign]
    assert c.share.join(Monotonic(1000.0), 5.0) is False and c.share.error == "the shard Leases did not sync"
    assert leases.synced.wait.timeouts == [0.05] * 4, "the clock read at start and at the deadline: still waiting"
    c, ring, _ = sharded()
    c.share.clock = clock  # type: ignore[assignment]
    ready(c, never=("Lease",))
    [leases] = c.informers["Lease"]
    leases.synced.wait = ScriptedWait(clock, [1000.0, 1005.0], [False, False, True])  # type: ignore[method-assign]
    ring.run = lambda stop: None  # type: ignore[method-assign]
    c.share.follow = lambda: None  # type: ignore[method-assign]
    c.stop.wait = ScriptedWait(clock, [1100.0])  # type: ignore[method-assign]
    assert c.share.join(Monotonic(1000.0), 5.0) is True and ring.listed and c.error == ""


@pytest.mark.parametrize(("readings", "acknowledged", "waits"), [
    ([1002.0], True, 1),                 # at the end of the settle period itself: settled
    ([1001.99, 1002.0], True, 2),
    ([1010.0, 1010.001], False, 2),      # at settle + 4 renew periods itself: one more wait
    ([1009.0, 1010.0, 1010.001], False, 3),
])
def test_the_settle_wait_ends_at_its_bounds_exactly(monkeypatch, readings, acknowledged, waits) -> None:
    """The caches wait until one renew period (2 s) has passed, ``now < settle``; a replica the ring
    never acknowledges waits until ``now > settle + 4 renew periods`` (10 s), not at that reading."""
    clock = FakeTime(1000.0)
    c, ring, _ = sharded()
    c.share.clock = clock  # type: ignore[assignment]
    ready(c)
    ring.acknowledged = lambda: acknowledged  # type: ignore[method-assign]
    ring.run = lambda stop: None  # type: ignore[method-assign]
    c.share.follow = lambda: None  # type: ignore[method-assign]
    c.stop.wait = ScriptedWait(clock, readings)  # type: ignore[method-assign]
    assert c.share.join(Monotonic(1000.0), None) is True
    assert c.stop.wait.timeouts == [0.02] * waits


class Queued:
    """The work queue's add and add_after, recorded in order: (key, delay), -1 for at once."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, float]] = []

    def add(self, key: Any, arrived: float | None = None) -> None:
        self.items.append((key, -1.0))

    def add_after(self, key: Any, delay: float) -> None:
        self.items.append((key, delay))

    def forget(self, key: Any) -> None:
        pass


def test_an_acknowledged_share_sweeps_its_new_crs_in_order_at_the_sweep_rate_and_marks_them() -> None:
    """The CRs new to the share go through add_after, n / SWEEP_RATE apart in key order, and are
    marked for a lazy servedBy; the marks of an earlier sweep not visited yet are kept; the CRs the
    share kept are not queued again; the keys that waited for the ring come at once, if still ours."""
    from memcached_gitops.reconciler.orchestration.share import SWEEP_RATE

    c, ring, _ = sharded()
    q = Queued()
    c.queue = c.share.queue = q  # type: ignore[assignment]
    mine = sorted(share("a"))
    store(c, "Memcached", *(cr(n) for n in NAMES))
    ring.on_agreed = lambda: None  # the acknowledgements below are the test's
    joined(c, ring, "b")
    c.share.on_agreed()
    assert q.items == [(("default", n), i / SWEEP_RATE) for i, n in enumerate(mine)]
    assert c.share.served == c.share.sweeping == {("default", n) for n in mine}
    c.share.sweeping.discard(("default", mine[0]))  # visited
    q.items.clear()
    c.share.wait_for_ring(("default", mine[1]))  # an event of ours while the ring settles: kept
    c.share.wait_for_ring(("default", share("b")[0]))  # another replica's: dropped
    assert c.share.waiting == {("default", mine[1])}
    c.on_event("Lease", "DELETED", peer_lease("b"), None, 3.0)  # b left: its share comes to a
    c.share.on_agreed()
    theirs = sorted(share("b"))
    assert q.items == [(("default", mine[1]), -1.0)] + [(("default", n), i / SWEEP_RATE) for i, n in enumerate(theirs)]
    assert c.share.waiting == set() and c.share.served == {("default", n) for n in NAMES}
    assert c.share.sweeping == {("default", n) for n in mine[1:] + theirs}, "the earlier marks stay until visited"


def test_a_key_waits_for_the_ring_only_while_it_is_this_replicas() -> None:
    c, ring, _ = sharded()
    joined(c, ring, "b")
    c.share.wait_for_ring(("default", share("b")[0]))
    assert c.share.waiting == set()
    c.share.wait_for_ring(("default", share("a")[0]))
    c.share.wait_for_ring(("default", share("a")[1]))
    assert c.share.waiting == {("default", share("a")[0]), ("default", share("a")[1])}


def test_a_worker_keeps_a_key_it_may_not_write_yet_for_the_acknowledgement(monkeypatch) -> None:
    """A key of ours that comes before the ring acknowledged this replica is not reconciled, not
    retried, and kept for the acknowledgement; another replica's is dropped."""
    c, ring, _ = sharded()
    ring.join()
    ring.listed = True
    ring.step()
    c.on_event("Lease", "ADDED", peer_lease("b", "b#0"), None, 1.0)  # b has not acknowledged a yet
    assert not ring.acknowledged()
    recorder = Recorder()
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", *(cr(n) for n in NAMES))
    for n in NAMES:
        c.queue.add(("default", n))
    work(c, lambda: c.metrics.value("memcached_gitops_work_duration_seconds_count") >= len(NAMES))
    assert recorder.calls == [] and retries(c) == 0
    assert c.share.waiting == {("default", n) for n in share("a")}


def test_deferred_served_by_writes_get_one_slot_each_from_a_second_on(monkeypatch) -> None:
    """One every 1/SERVED_BY_RATE s, the first a second from now; after a quiet time, a second again."""
    from memcached_gitops.reconciler.orchestration.share import SERVED_BY_RATE

    clock = FakeTime(1000.0)
    c, _, _ = sharded()
    c.share.clock = clock  # type: ignore[assignment]
    assert [c.share.served_by_slot() for _ in range(3)] == pytest.approx([1.0, 1.0 + 1 / SERVED_BY_RATE, 1.0 + 2 / SERVED_BY_RATE])
    clock.now += 0.01
    assert c.share.served_by_slot() == pytest.approx(1.0 + 3 / SERVED_BY_RATE - 0.01)
    clock.now += 10.0
    assert c.share.served_by_slot() == pytest.approx(1.0)
    assert c.share.next_served_by.seconds == pytest.approx(1011.01)


def test_the_first_visit_of_a_swept_cr_may_defer_its_served_by_and_queues_that_write() -> None:
    """reconcile: a CR marked by the sweep is reconciled with lazy_served_by once (the mark is
    taken); a deferred servedBy puts the CR back on the queue at its slot; without shards never lazy."""
    c, ring, _ = sharded()
    q = Queued()
    c.queue = c.share.queue = q  # type: ignore[assignment]
    deferred = CROutcome("default", "x", Action.UNCHANGED, served_by_deferred=True)
    recorder = Recorder(lambda cr, *a, **k: deferred if k["lazy_served_by"] else CROutcome("default", "x", Action.UNCHANGED))
    c.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(c, "Memcached", cr("x"), cr("y"))
    c.share.sweeping = {("default", "x"), ("default", "y")}
    slots = iter([1.25, 1.5])
    c.share.served_by_slot = lambda: next(slots)  # type: ignore[method-assign]
    c._requeue(("default", "x"), c.reconcile(("default", "x"), 0.0))
    assert recorder.calls[-1]["lazy_served_by"] is True and c.share.sweeping == {("default", "y")}
    assert q.items == [(("default", "x"), 1.25)]
    c._requeue(("default", "x"), c.reconcile(("default", "x"), 0.0))
    assert recorder.calls[-1]["lazy_served_by"] is False and q.items == [(("default", "x"), 1.25)]
    plain = make()
    plain.reconciler.reconcile_cr = recorder  # type: ignore[method-assign]
    store(plain, "Memcached", cr("x"))
    assert plain.share is None, "without shards there is no share to sweep"
    plain.reconcile(("default", "x"), 0.0)
    assert recorder.calls[-1]["lazy_served_by"] is False


def test_a_failed_reconcile_that_deferred_its_served_by_still_queues_that_write() -> None:
    """A refusal and a deferred servedBy in one reconcile: the CR is retried at the backoff's pace and
    its servedBy write still comes back at its slot."""
    c, ring, _ = sharded()
    q = Queued()
    c.queue = c.share.queue = q  # type: ignore[assignment]
    c.reconciler.reconcile_cr = Recorder(lambda cr, *a, **k: CROutcome(  # type: ignore[method-assign]
        "default", "x", Action.FAILED, error="no", served_by_deferred=True))
    store(c, "Memcached", cr("x"))
    c.share.served_by_slot = lambda: 1.25  # type: ignore[method-assign]
    result = c.reconcile(("default", "x"), 0.0)
    assert result.after == 1.25 and result.retry == "no" and not result.done


def test_with_shards_a_deployment_read_by_a_get_goes_into_the_cache_of_its_namespace() -> None:
    """A Deployment the step read by a GET (not cached: it came with the share) is stored, with its
    managedFields, in the cache of its namespace, unless the watch saw it go; without shards the
    cache holds every Deployment and nothing is stored."""
    c, ring, _ = sharded(namespaces=("default", "shop"))
    joined(c, ring, "b")
    name = share("b", ns="shop")[0]
    seen = dep(name, ns="shop", rv="5")
    seen["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    c.informers["Deployment"][1].store.put(seen)  # b's then: its version is known, the object not kept
    assert c.caches.cached("Deployment", ("shop", name)) is None
    c.on_event("Lease", "DELETED", peer_lease("b"), None, 2.0)  # b left: its share comes to a
    c.reconciler.reconcile_cr = Recorder(lambda cr, *a, **k: CROutcome("shop", name, Action.UNCHANGED, read=seen))  # type: ignore[method-assign]
    store(c, "Memcached", cr(name, ns="shop"), index=1)
    c.reconcile(("shop", name), 0.0)
    assert c.caches.cached("Deployment", ("shop", name)) == seen
    assert c.informers["Deployment"][0].store.keys() == []
    plain = make(namespaces=("default", "shop"))
    plain.reconciler.reconcile_cr = c.reconciler.reconcile_cr  # type: ignore[method-assign]
    plain.informers["Deployment"][1].store.put(seen)
    plain.informers["Deployment"][1].store.remove(("shop", name))  # deleted since: a GET's answer is not brought back
    store(plain, "Memcached", cr(name, ns="shop"), index=1)
    plain.reconcile(("shop", name), 0.0)
    assert plain.caches.cached("Deployment", ("shop", name)) is None


def test_with_shards_a_companion_read_by_a_get_goes_into_its_kinds_cache() -> None:
    """The Service and budget of a CR that came with the share, read by a GET, are stored in their
    kinds' caches (as the Deployment is) unless the watch saw them go; without shards, nothing is."""
    c, ring, _ = sharded()
    joined(c, ring, "b")
    name = share("b")[0]
    service = {"kind": "Service", "metadata": {"name": f"{name}-memcached", "namespace": "default", "resourceVersion": "5",
                                               "ownerReferences": [{"kind": "Memcached", "name": name, "controller": True}]}}
    budget = {**service, "kind": "PodDisruptionBudget"}
    c.informers["Service"][0].store.put(service)  # b's then: its version is known, the object not kept
    c.informers["PodDisruptionBudget"][0].store.put(budget)
    assert c.caches.cached("Service", ("default", f"{name}-memcached")) is None
    c.on_event("Lease", "DELETED", peer_lease("b"), None, 2.0)  # b left: its share comes to a
    read = [("Service", service), ("PodDisruptionBudget", budget)]
    c.reconciler.reconcile_cr = Recorder(lambda cr, *a, **k: CROutcome("default", name, Action.UNCHANGED,  # type: ignore[method-assign]
                                                                       companions=CompanionOutcome(read=read)))
    store(c, "Memcached", cr(name))
    c.reconcile(("default", name), 0.0)
    assert c.caches.cached("Service", ("default", f"{name}-memcached")) == service
    assert c.caches.cached("PodDisruptionBudget", ("default", f"{name}-memcached")) == budget
    plain = make()
    plain.reconciler.reconcile_cr = c.reconciler.reconcile_cr  # type: ignore[method-assign]
    store(plain, "Memcached", cr(name))
    plain.reconcile(("default", name), 0.0)
    assert plain.caches.cached("Service", ("default", f"{name}-memcached")) is None, "without shards: the watch fills the cache"


class ShareInformer:
    """A Deployment informer as Share.follow uses it: prune answers ``dropped``, refill ``added``
    (or raises the next of ``failures``)."""

    def __init__(self, dropped: int = 0, added: int = 0) -> None:
        self.dropped, self.added, self.failures = dropped, added, []
        self.calls: list[Any] = []
        informer = self

        class _Store:
            @staticmethod
            def prune() -> int:
                informer.calls.append("prune")
                return informer.dropped

        self.store = _Store()

    def refill(self, emit: bool = True) -> int:
        self.calls.append(("refill", emit))
        if self.failures:
            raise self.failures.pop(0)
        return self.added


def follow(c: Controller, members: list[frozenset[str]], informers: list[ShareInformer], until: Callable[[], object]) -> None:
    """Share.follow in a thread, the ring's cache members read from ``members`` (the last repeats)."""
    class Ring:
        def cache_members(self) -> frozenset[str]:
            return members.pop(0) if len(members) > 1 else members[0]

    class Caches:
        def __init__(self) -> None:
            self.informers = {"Deployment": informers, "Service": [], "PodDisruptionBudget": []}  # the companions: none here

    assert c.share is not None
    c.share.ring, c.share.caches = Ring(), Caches()  # type: ignore[assignment]
    thread = threading.Thread(target=c.share.follow, daemon=True, name="shard-share")
    thread.start()
    try:
        wait_for(until, thread=thread)
    finally:
        c.stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_the_share_follower_prunes_when_members_come_and_lists_when_one_leaves(caplog) -> None:
    """A member that comes shrinks the share: the caches are pruned, nothing is listed. A member
    that leaves grows it: the caches are pruned and the grown share listed without events. The
    same members again: nothing."""
    c, _, _ = sharded()
    first, second = ShareInformer(dropped=2, added=3), ShareInformer(dropped=1, added=4)
    c.share.cached_members = frozenset({"a"})
    c.share.changed.set()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        follow(c, [frozenset({"a", "b"})], [first, second], lambda: "dropped" in caplog.text)
    assert first.calls == ["prune"] and second.calls == ["prune"] and c.share.cached_members == {"a", "b"}
    assert "shard members a, b: 3 Deployments, Services and budgets dropped from the cache, 0 added" in caplog.text
    caplog.clear()
    c, _, _ = sharded()
    first, second = ShareInformer(dropped=2, added=3), ShareInformer(dropped=1, added=4)
    c.share.cached_members = frozenset({"a", "b"})
    c.share.changed.set()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        follow(c, [frozenset({"a"})], [first, second], lambda: "dropped" in caplog.text)
    assert first.calls == ["prune", ("refill", False)] and second.calls == ["prune", ("refill", False)]
    assert "shard members a: 3 Deployments, Services and budgets dropped from the cache, 7 added" in caplog.text
    assert not c.share.refill_pending
    c, _, _ = sharded()
    same = ShareInformer()
    c.share.cached_members = frozenset({"a"})
    c.share.changed.set()
    follow(c, [frozenset({"a"})], [same], lambda: not c.share.changed.is_set())
    time.sleep(0.05)
    assert same.calls == []


def test_the_share_follower_lists_again_after_a_failed_list_even_when_the_members_are_the_same(caplog) -> None:
    """A failed LIST of the grown share is retried (the follower wakes itself) though the members
    have not changed since; then nothing more is pending."""
    c, _, _ = sharded()
    informer = ShareInformer(added=5)
    informer.failures = [APIError(500, "etcd is busy")]
    c.share.cached_members = frozenset({"a", "b"})
    c.share.changed.set()
    waits: list[float] = []
    c.stop.wait = lambda timeout=None: waits.append(timeout) or False  # type: ignore[method-assign,func-returns-value]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        follow(c, [frozenset({"a"})], [informer], lambda: "5 added" in caplog.text)
    assert informer.calls == ["prune", ("refill", False), "prune", ("refill", False)]
    assert waits == [1.0] and not c.share.refill_pending
    assert "cannot list the Deployments, Services or budgets of the grown share" in caplog.text and "trying again" in caplog.text


def test_run_with_shards_ends_with_2_when_the_lease_cannot_be_created() -> None:
    """A refused Lease creation (no RBAC for Leases): 2 and the server's answer, no cache started,
    nothing to delete."""
    c, ring, leases = sharded()
    started = ready(c)
    refused = APIError(403, 'leases.coordination.k8s.io is forbidden: cannot create resource "leases"')
    leases.refuse["POST"] = refused
    assert run_to_end(c, first_sync_timeout=10) == [2]
    assert c.error == f"cannot create the shard Lease: {refused}"
    assert started == [] and leases.calls == [("POST", "/apis/coordination.k8s.io/v1/namespaces/leases/leases")]
    assert ring.stopping and c.queue.shutting_down


def test_the_deployment_cache_keeps_a_deployment_by_its_crs_namespace_and_name() -> None:
    c, _, _ = sharded(namespaces=("shop",))
    c.on_event("Lease", "ADDED", peer_lease("b", "b#0"), None, 1.0)
    keep = c.informers["Deployment"][0].store.keep
    assert [keep(dep(n, ns="shop", owner=n)) for n in NAMES] == [n in share("a", ns="shop") for n in NAMES]


def test_with_shards_a_worker_measures_a_correction_from_the_events_arrival() -> None:
    c, ring, _ = sharded()
    joined(c, ring)
    queued(c)
    arrived = time.monotonic()

    def corrected(cr: dict[str, Any], *a: Any, **k: Any) -> CROutcome:
        return CROutcome("default", cr["metadata"]["name"], Action.CORRECTED, deployment=dep(cr["metadata"]["name"], rv="9"),
                         applied_at=arrived + 0.25)

    c.reconciler.reconcile_cr = Recorder(corrected)  # type: ignore[method-assign]
    store(c, "Memcached", cr("cache-0"))
    c.queue.add(("default", "cache-0"), arrived)
    work(c, lambda: c.metrics.value("memcached_gitops_work_duration_seconds_count") >= 1)
    assert c.metrics.value("memcached_gitops_drift_correction_latency_seconds_sum") == pytest.approx(0.25)


class Changed(threading.Event):
    """The share follower's event: its waits recorded; the first ``quiet`` waits time out."""

    def __init__(self, quiet: int = 0) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []
        self.quiet = quiet

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        if self.quiet:
            self.quiet -= 1
            return False
        return super().wait(0.01 if timeout is None else min(timeout, 0.01))


def test_the_share_follower_looks_every_half_second_and_follows_on_after_a_quiet_time(caplog) -> None:
    c, _, _ = sharded()
    informer = ShareInformer(dropped=1, added=2)
    c.share.cached_members = frozenset({"a", "b"})
    c.share.changed = Changed(quiet=2)
    c.share.changed.set()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        follow(c, [frozenset({"a"})], [informer], lambda: "added" in caplog.text)
    assert "shard members a: 1 Deployments, Services and budgets dropped from the cache, 2 added" in caplog.messages
    assert set(c.share.changed.timeouts) == {0.5} and len(c.share.changed.timeouts) >= 3


def test_a_failed_list_of_the_grown_share_is_logged_with_the_servers_answer(caplog) -> None:
    c, _, _ = sharded()
    informer = ShareInformer(added=5)
    busy = APIError(500, "etcd is busy")
    informer.failures = [busy]
    c.share.cached_members = frozenset({"a", "b"})
    c.share.changed.set()
    c.stop.wait = lambda timeout=None: False  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        follow(c, [frozenset({"a"})], [informer], lambda: "5 added" in caplog.text)
    assert f"cannot list the Deployments, Services or budgets of the grown share: {busy}; trying again" in caplog.messages


def test_with_shards_a_resync_queues_this_replicas_share_only(caplog) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    c, ring, _ = sharded()
    store(c, "Memcached", *(cr(n) for n in NAMES))
    joined(c, ring, "b")
    # the sweep of the first view (a alone: every CR) queues its keys spread over time: all released
    # and taken before the resync, so that a slow machine does not see them arrive after it
    deadline = time.monotonic() + 10
    while c.queue.pending().delayed and time.monotonic() < deadline:
        time.sleep(0.01)
    queued(c)
    c._resync()
    mine = sorted(("default", n) for n in share("a"))
    assert sorted(keys(c)) == mine and 0 < len(mine) < len(NAMES) and c.resyncs == 1
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("resync")] == [f"resync: queueing {len(mine)} CRs"]


def test_keys_kept_for_the_acknowledgement_are_queued_only_while_they_are_still_ours() -> None:
    """A key kept while the ring settled is queued at the acknowledgement if the share still holds
    it; a key that went to another replica meanwhile is not (its owner serves it)."""
    c, ring, _ = sharded()
    store(c, "Memcached", *(cr(n) for n in NAMES))
    joined(c, ring)
    # the first agreement's sweep queues every CR over a few ms (SWEEP_RATE): all of it, before the drain
    wait_for(lambda: not c.queue.pending().delayed, what="the first sweep queued")
    queued(c)
    c.share.served = {("default", n) for n in NAMES}  # served already: the acknowledgement sweeps nothing new
    c.share.waiting = {("default", n) for n in NAMES}  # every key's event came while the ring settled
    c.on_event("Lease", "ADDED", peer_lease("b", ring.token, "b#0"), None, 2.0)  # b joins: the share shrinks
    assert sorted(keys(c)) == sorted(("default", n) for n in share("a"))


def test_shutdown_hands_out_no_queued_cr_after_the_stop() -> None:
    """SIGTERM: the queue is shut before the wait for the CRs in flight, so a queued CR is not
    started after the stop (the next replica or start serves it)."""
    c = make(settings=Settings(workers=1))
    inside, finished = slow_reconciles(c)
    store(c, "Memcached", cr("a"), cr("b"))
    thread, result = start_run(c)
    assert inside.wait(10)
    assert stop_run(c, thread, result) == 0
    assert len(finished) == 1, finished


def test_the_autoscaler_of_a_deployment_is_the_first_by_name_of_many() -> None:
    """Several HPAs on one Deployment (a mistake the once mode reports too): the first by name,
    whatever order a set keeps them in. Five targets of 40 names each."""
    c = make()
    for target in "vwxyz":
        for n in range(40):
            c.on_event("HorizontalPodAutoscaler", "ADDED", hpa(f"h{n:02d}-{target}", target), None, 1.0)
    assert [c.caches.autoscaler_of(("default", t)) for t in "vwxyz"] == [f"h00-{t}" for t in "vwxyz"]


def test_the_liveness_check_names_the_first_stuck_informer_of_any_kind() -> None:
    """Caches.stalled is what /healthz asks (Metrics.health_checks): None while every
    informer moves, else the first one that does not, whichever kind it mirrors."""
    c = make(namespaces=("a", "b"))
    assert c.metrics.health_checks == [c.caches.stalled] and c.caches.stalled() is None
    for group in c.informers.values():
        for informer in group:
            informer.started = True
    assert c.caches.stalled() is None, "started and fresh: not stuck"
    stuck = c.informers["Pod"][1]
    stuck.stall_limit = -1.0
    assert c.caches.stalled() == stuck.stalled() and "pods informer" in (c.caches.stalled() or "")
    c.informers["Memcached"][0].stall_limit = -1.0
    assert "memcacheds informer" in (c.caches.stalled() or ""), "the first kind's informer comes first"


def test_the_command_lines_default_workers_are_the_controllers() -> None:
    """`reconcile --workers` defaults to the controller's own default (the command line keeps the
    reconciler's import out of its start, so the number is written there too)."""
    import click
    import typer
    from memcached_gitops.reconciler.orchestration.controller import DEFAULT_WORKERS

    from memcached_gitops.cli import app

    command = typer.main.get_command(app)
    assert isinstance(command, click.Group)
    workers = next(p for p in command.commands["reconcile"].params if p.name == "workers")
    assert workers.default == DEFAULT_WORKERS == Settings().workers


def test_ours_is_the_field_manager_the_reconciler_runs_under() -> None:
    """With --field-manager team-cache, team-cache's corrections are our own (never a fight), and
    memcached-gitops, the default name, is another manager like any: its undoing is fought."""
    c = make(field_manager="team-cache", fights=FightDetector(threshold=0, window=60, base=10, cap=10))
    c.reconciler.events = Events()  # type: ignore[assignment]
    for _ in range(3):
        mine = Correction("Deployment", "default/a", Drift(REPLICAS, 5, 1, ("team-cache",)))
        assert c._fight_check(cr("a"), [mine]) is None, "our own manager is never fought"
    other = Correction("Deployment", "default/a", Drift(REPLICAS, 5, 1, ("team-cache", "memcached-gitops")))
    reason, message = c._fight_check(cr("a"), [other])
    assert reason == "FieldManagerFight" and "by field manager memcached-gitops;" in message
    assert c.metrics.value("memcached_gitops_fights_total", {"field": ".spec.replicas", "manager": "memcached-gitops"}) == 1
