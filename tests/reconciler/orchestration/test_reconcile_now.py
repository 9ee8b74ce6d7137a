"""Reconcile now, Flux's way (reconcile.fluxcd.io/requestedAt -> status.lastHandledReconcileAt), in our
group: a new value of cache.example.com/requestedAt is handled by the next reconcile, in both modes,
and written to status.lastHandledReconcileAt, so that ``kubectl wait --for=jsonpath=...`` can follow it.
On the fake API server (the real one: tests/real_cluster/test_reconciler_real_cluster.py)."""

from __future__ import annotations

from typing import Any

from memcached_gitops.reconciler.decisions.vocabulary import REQUESTED_AT_ANNOTATION, REQUESTED_AT_LIMIT
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.schemas import load_crd

from fakeapi.server import FakeAPIServer
from tests.support.controller import client, running, wait_for
from tests.support.fakecluster import CR_PATH, condition, make_cr, patch

MERGE = "application/merge-patch+json"


# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default",)


def request(cluster: FakeAPIServer, name: str, value: Any, annotation: str = REQUESTED_AT_ANNOTATION) -> None:
    patch(cluster, CR_PATH.format(ns="default") + "/" + name, {"metadata": {"annotations": {annotation: value}}}, MERGE)


def handled(cluster: FakeAPIServer, name: str) -> Any:
    cr = cluster.get("cache.example.com", "memcacheds", "default", name)
    return (cr.get("status") or {}).get("lastHandledReconcileAt")


def once(cluster: FakeAPIServer) -> dict[str, str]:
    report = Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    return {o.name: o.action for o in report.outcomes}


def test_the_once_mode_handles_a_request_and_keeps_it_when_the_annotation_goes(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    once(cluster)
    assert handled(cluster, "a") is None, "no request, no field"
    request(cluster, "a", "2026-11-27T10:00:00Z")
    assert once(cluster) == {"a": "unchanged"} and handled(cluster, "a") == "2026-11-27T10:00:00Z"
    request(cluster, "a", "second")
    once(cluster)
    assert handled(cluster, "a") == "second"
    request(cluster, "a", None)  # removed: the last handled value stays, as Flux keeps it
    once(cluster)
    assert handled(cluster, "a") == "second"
    cluster.reset_log()
    once(cluster)
    assert not [r for r in cluster.writes() if "/status" in r.path], "a handled request is not written again"


def test_the_event_driven_mode_handles_a_request_from_its_watch_event(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    with running(cluster):
        wait_for(lambda: condition(cluster, "a", "Ready") is not None, what="the first status")
        request(cluster, "a", "now-1")
        wait_for(lambda: handled(cluster, "a") == "now-1", what="the request handled")
        request(cluster, "a", "now-2")
        wait_for(lambda: handled(cluster, "a") == "now-2", what="the next request handled")


def test_a_request_too_long_for_the_status_is_refused_naming_the_annotation(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    request(cluster, "a", "first")
    once(cluster)
    request(cluster, "a", "x" * (REQUESTED_AT_LIMIT + 1))
    assert once(cluster) == {"a": "invalid"}
    degraded = condition(cluster, "a", "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "InvalidAnnotation"
    assert degraded["message"] == (f"metadata.annotations[{REQUESTED_AT_ANNOTATION}]: Too long: may not be more than "
                                   f"{REQUESTED_AT_LIMIT} characters (it is {REQUESTED_AT_LIMIT + 1})")
    assert handled(cluster, "a") == "first", "the last handled request stays (found on a real API server)"
    request(cluster, "a", "x" * REQUESTED_AT_LIMIT)  # at the bound: handled
    assert once(cluster) == {"a": "unchanged"} and handled(cluster, "a") == "x" * REQUESTED_AT_LIMIT


def test_a_paused_cr_handles_no_request(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    once(cluster)
    patch(cluster, CR_PATH.format(ns="default") + "/a",
          {"metadata": {"annotations": {"cache.example.com/reconcile": "disabled", REQUESTED_AT_ANNOTATION: "t"}}}, MERGE)
    assert once(cluster) == {"a": "suspended"} and handled(cluster, "a") is None


def test_a_crd_without_the_field_gets_no_such_write(cluster: FakeAPIServer) -> None:
    """The Go operator's CRD declares no lastHandledReconcileAt: the request is handled without it (an
    apply of an undeclared status field is an HTTP 500, transcript 23)."""
    make_cr(cluster, "a")
    request(cluster, "a", "t")
    rec = Reconciler(client(cluster), load_crd(), Options())
    cr = cluster.get("cache.example.com", "memcacheds", "default", "a")
    outcome = rec.reconcile_cr(cr, None, (), frozenset({"conditions", "observedGeneration"}), None)
    assert outcome.action == "created" and handled(cluster, "a") is None


def test_an_unsupported_reconcile_value_is_stalled_never_a_broken_ready(cluster: FakeAPIServer) -> None:
    """The issue's finding 4: ``reconcile: maybe`` gave READY 2/0 and "2 of 0 replicas available"."""
    from fakeapi.server import DeploymentController
    from tests.support.fakecluster import cr_status

    make_cr(cluster, "a", size=2)
    once(cluster)
    DeploymentController(cluster).sync(available=True)
    request(cluster, "a", "maybe", annotation="cache.example.com/reconcile")
    assert once(cluster) == {"a": "invalid"}
    stalled = condition(cluster, "a", "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "InvalidAnnotation")
    assert "Unsupported value: 'maybe'" in stalled["message"]
    assert cr_status(cluster, "a")["ready"] == "2/2" and condition(cluster, "a", "Available")["message"] == "2 of 2 replicas available"
