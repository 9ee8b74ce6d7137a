"""The indexes the watch events keep beside the stores (client/caches.py): a CR's Pods, and the HPA
that scales a Deployment. The controller feeds them every Pod and HPA event (orchestration/controller.py)
and the per-CR step reads them instead of a LIST; what they answer must be what the once mode
computes from a LIST (decisions/autoscalers.py ``autoscalers_by_target``)."""

from __future__ import annotations

import random
from typing import Any

from memcached_gitops.foundation.identities import MANAGED_BY_LABEL
from memcached_gitops.reconciler.client.api import KubeAPI
from memcached_gitops.reconciler.client.caches import Caches
from memcached_gitops.reconciler.decisions.autoscalers import autoscalers_by_target
from memcached_gitops.reconciler.decisions.vocabulary import INSTANCE_LABEL
from memcached_gitops.render import MANAGED_BY


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
    assert index.track_pod("ADDED", pod("a-2", "a")) == ("default", "a")
    assert index.track_pod("ADDED", pod("a-1", "a")) == ("default", "a")
    index.track_pod("ADDED", pod("helm-a-0", "a", managed_by="Helm"))
    index.track_pod("ADDED", pod("bare-a-0", "a", managed_by=None))
    index.track_pod("ADDED", pod("a-9", "a", ns="other"))
    assert index.pods_of(("default", "a")) == ("a-1", "a-2")
    assert index.track_pod("MODIFIED", pod("a-1", "a")) is None, "a Pod already known changes nothing"
    assert index.track_pod("DELETED", pod("a-2", "a")) == ("default", "a")
    assert index.pods_of(("default", "a")) == ("a-1",)
    assert index.track_pod("ADDED", {"metadata": {"name": "x", "namespace": "default", "labels": {}}}) is None


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
