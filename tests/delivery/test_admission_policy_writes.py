"""Every write the reconciler makes, judged by the admission policy: the reconciler runs against the
fake API server (tests/reconciler/orchestration/test_reconciler.py), each write it makes (the object as it was and as the
server would store it, which is what a ValidatingAdmissionPolicy sees) is recorded, and the policy's
CEL is evaluated on each as tests/delivery/test_admission_policy.py evaluates it. Creating every shape of CR,
correcting a person's edits, deleting a budget no longer wanted, adopting Argo CD's copies and
taking over the Go operators' Deployments must all pass: a policy that refused one would stop the
reconciler on a cluster where it is applied."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import pytest
from memcached_gitops.render import render

from fakeapi.server import DeploymentController, FakeAPIServer
from tests.delivery.test_admission_policy import SHAPES, admit
from tests.support.fakecluster import CR_PATH, patch, post, reconciler_for
from tests.support.go_operator import SEED_PARAMS, SEEDS, go_operator_deployment

pytest.importorskip("celpy", reason="cel-python is in the test extra")

KINDS = {"deployments": "Deployment", "services": "Service", "poddisruptionbudgets": "PodDisruptionBudget", "events": "Event"}
Write = tuple[str, "dict[str, Any] | None", "dict[str, Any] | None"]


@contextlib.contextmanager
def recording(api: FakeAPIServer) -> Iterator[list[Write]]:
    """The writes made while in the block, as (operation, object, oldObject), dry runs left out."""
    seen: list[Write] = []
    finish, delete = api._finish_write, api._delete

    def finish_write(res: Any, key: tuple, old: Any, new: Any, dry_run: bool) -> Any:
        if not dry_run and res.plural in KINDS:
            stored = copy.deepcopy(new)
            stored.setdefault("kind", KINDS[res.plural])
            stored.setdefault("apiVersion", f"{res.group}/{res.version}" if res.group else res.version)
            seen.append(("UPDATE" if old is not None else "CREATE", stored, copy.deepcopy(old)))
        return finish(res, key, old, new, dry_run)

    def delete_(res: Any, ns: str, name: str, body: bytes) -> Any:
        old = api.objects.get(api._key(res, ns, name))
        if res.plural in KINDS and old is not None:
            seen.append(("DELETE", None, copy.deepcopy(old)))
        return delete(res, ns, name, body)

    api._finish_write, api._delete = finish_write, delete_  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        api._finish_write, api._delete = finish, delete  # type: ignore[method-assign]


def judged(writes: list[Write]) -> list[tuple[str, str, str]]:
    """The writes the policy refuses: (operation, name, message)."""
    out = []
    for operation, obj, old in writes:
        target = obj or old
        assert target is not None
        target.setdefault("kind", KINDS.get(target.get("kind", ""), target.get("kind")))
        refused = admit(operation, obj, old)
        if refused:
            out.append((operation, f"{target['kind']}/{target['metadata']['name']}", refused))
    return out


def memcached(api: FakeAPIServer, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return post(api, CR_PATH.format(ns="shop"), {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                                "metadata": {"name": name, "namespace": "shop"}, "spec": spec})



def test_creating_correcting_and_deleting_every_shape_passes(cluster: FakeAPIServer) -> None:
    for name, spec in SHAPES.items():
        memcached(cluster, name, {"size": 2, **spec})
    rec = reconciler_for(cluster, namespaces=("shop",))
    with recording(cluster) as writes:
        rec.run_cycle()
    assert {w[0] for w in writes} == {"CREATE"} and len(writes) > 3 * len(SHAPES)
    for name in SHAPES:  # a person's edits: replicas, an image, a port, a budget's figure
        path = f"/apis/apps/v1/namespaces/shop/deployments/{name}"
        patch(cluster, path, {"spec": {"replicas": 5, "template": {"spec": {"containers": [
            {"name": "memcached", "image": "memcached:1.6.20", "ports": [{"containerPort": 8080, "name": "debug"}]}]}}}},
              "application/strategic-merge-patch+json")
    patch(cluster, "/apis/cache.example.com/v1alpha1/namespaces/shop/memcacheds/seed", {"spec": {"size": 1}},
          "application/merge-patch+json")
    with recording(cluster) as corrections:
        rec.run_cycle()
    operations = [w[0] for w in corrections]
    assert "UPDATE" in operations and "DELETE" in operations, operations
    assert judged(writes + corrections) == []


@pytest.mark.parametrize("seed", SEED_PARAMS)
def test_taking_over_the_go_operators_deployments_passes(cluster: FakeAPIServer, seed: str) -> None:
    for name in ("a", "b"):
        cr = memcached(cluster, name, {"size": 2})
        go_operator_deployment(cluster, cr, SEEDS[seed](name))
    DeploymentController(cluster).sync(available=True)
    with recording(cluster) as writes:
        report = reconciler_for(cluster, namespaces=("shop",), adopt=True).run_cycle()
    assert sorted(o.action for o in report.outcomes) == ["adopted", "adopted"], report.outcomes
    assert judged(writes) == []


def test_adopting_argo_cds_copies_passes(cluster: FakeAPIServer) -> None:
    for name, spec in (("argo", {"size": 2}), ("argo-metrics", {"size": 3, "metrics": {"enabled": True}})):
        cr = memcached(cluster, name, spec)
        for obj in render(cr):
            if obj["kind"] == "PodMonitor":
                continue
            group = "apps/v1" if obj["kind"] == "Deployment" else "policy/v1" if obj["kind"] == "PodDisruptionBudget" else "v1"
            plural = {"Deployment": "deployments", "Service": "services", "PodDisruptionBudget": "poddisruptionbudgets"}[obj["kind"]]
            prefix = "/api/v1" if group == "v1" else f"/apis/{group}"
            obj["metadata"]["labels"]["argocd.argoproj.io/instance"] = "caches"
            post(cluster, f"{prefix}/namespaces/shop/{plural}", obj, ua="argocd-controller/v2.13")
    with recording(cluster) as writes:
        report = reconciler_for(cluster, namespaces=("shop",), adopt=True).run_cycle()
    assert {o.action for o in report.outcomes} == {"adopted"}, report.outcomes
    assert [w for w in writes if w[0] == "UPDATE"], "the adoption writes"
    assert judged(writes) == []


def test_correcting_a_persons_breaches_passes_and_keeps_only_their_values(cluster: FakeAPIServer) -> None:
    """A person's edits that break Pod rules (the node's network, SELinux options, an exec probe,
    arguments, a privileged debugging container): the reconciler's removal patch and forced apply
    around them pass the policy, which judges each breaking value against the one already there."""
    memcached(cluster, "edited", {"size": 2})
    rec = reconciler_for(cluster, namespaces=("shop",))
    rec.run_cycle()
    patch(cluster, "/apis/apps/v1/namespaces/shop/deployments/edited", {"spec": {"template": {"spec": {
        "hostNetwork": True, "containers": [
            {"name": "memcached", "args": ["-m", "128"], "readinessProbe": {"exec": {"command": ["true"]}},
             "securityContext": {"seLinuxOptions": {"level": "s0:c1,c2"}, "readOnlyRootFilesystem": False}},
            {"name": "debug", "image": "busybox:1", "securityContext": {"privileged": True}}]}}}},
          "application/strategic-merge-patch+json")
    with recording(cluster) as corrections:
        rec.run_cycle()
    assert [w for w in corrections if w[0] == "UPDATE"], "the corrections"
    assert judged(corrections) == []
