"""What a change costs in requests, counted from the fake API server's request log (the audit log's
view): per new CR of one Pod and of two, per drift correction of the Deployment, and per resync with
nothing changed, in the event-driven mode and in ``--once``.

The floor each count is held to:
- a new CR of size >= 2: 3 applies (Deployment, Service, budget) + 1 status (+ at most one Event);
  of size 1: 2 applies + 1 status (+ at most one Event);
- a drift of the Deployment: 1 apply (+ at most one Event; a status only when it changed);
- a resync (or a ``--once`` cycle) with nothing changed: 0 writes.

Reads above the floor, kept on purpose, are counted exactly so that a new one shows:
- no GET of the objects a new CR creates (the Deployment, Service, budget) in the event-driven mode:
  a metadata-only name index of every object of those kinds in scope (client/caches.py ``absent``)
  says the name is free. A foreign object of that name without our label is in the index, so it is
  read and never taken over (``ResourceNotOwned``: tests/reconciler/orchestration/test_ownership.py
  and ``test_a_foreign_name_is_read_not_taken_over`` below). ``--once`` has no index: a GET each.
- no LIST of the Pods the new Service and budget would select: the controller caches every Pod our
  selectors could select (``app.kubernetes.io/name=memcached``, ours and others'), so a foreign Pod
  with a CR's labels is found there (``test_a_foreign_pod_withholds_the_companions_from_the_cache``);
  ``--once`` LISTs them.
"""

from __future__ import annotations

import json
import time

from memcached_gitops.reconciler.decisions.vocabulary import SERVICES
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.schemas import load_crd

from fakeapi.server import FakeAPIServer, Fault
from tests.support.controller import SCALE, client, replicas, running, settle, wait_for
from tests.support.fakecluster import condition, foreign_service, make_cr, patch, post

# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default",)


def ours(api: FakeAPIServer, since: float) -> list[str]:
    """The reconciler's requests since ``since``, WATCHes and Lease renewals aside, as ``VERB kind``."""
    out = []
    for r in api.log:
        if r.received < since or not r.user_agent.startswith("memcached") or r.query.get("watch") == "true" or "/leases" in r.path:
            continue
        parts = r.path.strip("/").split("/")
        if r.method == "PATCH" and parts[-1] == "status":
            out.append("status")
        elif r.method == "PATCH":
            out.append(f"apply {parts[-2]}")
        elif r.method == "POST" and parts[-1] == "events":
            out.append("event")
        elif r.method == "GET" and parts[-2] in ("deployments", "services", "poddisruptionbudgets"):
            out.append(f"get {parts[-2]}")
        else:
            out.append(f"{r.method} {parts[-1]}")
    return sorted(out)


def floor(out: list[str], applies: int, status: int, events: int = 1) -> None:
    """The writes of ``out``: exactly ``applies`` applies and ``status`` status writes, at most ``events`` Events."""
    assert sum(o.startswith("apply") for o in out) == applies, out
    assert sum(o == "status" for o in out) == status, out
    assert sum(o == "event" for o in out) <= events, out


NEW_1 = ["apply deployments", "apply services", "status"]
NEW_2 = sorted(NEW_1 + ["apply poddisruptionbudgets"])


def test_a_new_cr_costs_its_applies_its_status_and_one_event(cluster: FakeAPIServer) -> None:
    with running(cluster):
        for name, size, expected in (("one", 1, NEW_1), ("two", 2, NEW_2)):
            started = time.monotonic()
            make_cr(cluster, name, size=size)
            wait_for(lambda n=name: condition(cluster, n, "Available"), what="status")
            settle(cluster)
            out = ours(cluster, started)
            floor(out, applies=3 if size >= 2 else 2, status=1)
            assert [o for o in out if o != "event"] == expected, out
            assert out.count("event") == 1, "one Event names every object the reconcile created"


def test_a_drift_costs_one_apply_and_one_event(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a", size=2)
    with running(cluster):
        wait_for(lambda: condition(cluster, "a", "Available"), what="status")
        settle(cluster)
        started = time.monotonic()
        patch(cluster, SCALE, {"spec": {"replicas": 5}}, "application/merge-patch+json")
        wait_for(lambda: replicas(cluster) == 2, what="the correction")
        settle(cluster)
        out = ours(cluster, started)
        assert sum(o == "status" for o in out) <= 1, out
        floor(out, applies=1, status=out.count("status"))
        assert [o for o in out if o not in ("event", "status")] == ["apply deployments"], out


def test_a_resync_with_nothing_changed_writes_nothing(cluster: FakeAPIServer) -> None:
    for name, size in (("one", 1), ("two", 2)):
        make_cr(cluster, name, size=size)
    with running(cluster) as controller:
        wait_for(lambda: all(condition(cluster, n, "Available") for n in ("one", "two")), what="status")
        settle(cluster)
        started = time.monotonic()
        controller._resync()
        wait_for(lambda: len(controller.queue) == 0, what="the queue drained")
        settle(cluster, quiet=0.5)
        assert ours(cluster, started) == [], "a resync answers from the caches and writes nothing"


def test_once_new_crs_then_a_quiet_cycle(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "two", size=2)
    reconciler = Reconciler(client(cluster), load_crd(), Options())
    started = time.monotonic()
    report = reconciler.run_cycle()
    assert not report.failed, report.failed
    out = [o for o in ours(cluster, started) if not o.startswith("GET ")]  # the cycle's LISTs and its GET of the CRD
    floor(out, applies=3, status=1)
    assert [o for o in out if o != "event"] == sorted(["apply deployments", "apply services", "apply poddisruptionbudgets",
                                                       "get deployments", "get services", "get poddisruptionbudgets", "status"]), out
    assert out.count("event") == 1, out
    started = time.monotonic()
    reconciler.run_cycle()
    assert [o for o in ours(cluster, started) if not o.startswith("GET ")] == [], "a quiet cycle: its LISTs, no write"


def test_the_service_and_the_budget_are_written_side_by_side_and_a_429_is_still_retried(cluster: FakeAPIServer) -> None:
    """A new CR's Service and budget do not wait on each other's round trips: while the Service's
    apply is held (answered 429 after 0.5 s), the budget's arrives; the 429 is retried as alone."""
    make_cr(cluster, "two", size=2)
    cluster.faults.append(Fault(method="PATCH", path_contains="/services/two-memcached", status=429, retry_after=0, delay=0.5))
    report = Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    assert [o.action for o in report.outcomes] == ["created"], report.outcomes
    service = [r for r in cluster.log if r.method == "PATCH" and "/services/" in r.path]
    [budget] = [r for r in cluster.log if r.method == "PATCH" and "/poddisruptionbudgets/" in r.path]
    assert [r.status for r in service] == [429, 201] and budget.status == 201, "the 429 retried"
    assert abs(budget.received - service[0].received) < 0.4, "sent side by side, not after the Service's held answer"


def test_a_new_crs_reads_go_together_before_its_first_apply(cluster: FakeAPIServer) -> None:
    """The GETs that guard a new CR's objects (a foreign one of the name is never taken over) are
    one round trip: the Service's and the budget's go beside the Deployment's, before any apply."""
    make_cr(cluster, "two", size=2)
    Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    kinds = ("/deployments/", "/services/", "/poddisruptionbudgets/")
    guarded = [r for r in cluster.log if r.user_agent.startswith("memcached") and any(k in r.path for k in kinds)]
    assert sorted(r.method for r in guarded[:3]) == ["GET"] * 3, [(r.method, r.path) for r in guarded]


def test_a_foreign_name_is_read_not_taken_over(cluster: FakeAPIServer) -> None:
    """The name index holds every Service in scope, labelled or not: a foreign one there before the
    start, and one created while the controller runs, are each read (one GET) and left alone."""
    foreign_service(cluster, "early-memcached")
    with running(cluster) as controller:
        foreign_service(cluster, "late-memcached")
        wait_for(lambda: not controller.caches.absent(SERVICES, "default", "late-memcached"), what="the watch's ADDED")
        for name in ("early", "late"):
            started = time.monotonic()
            make_cr(cluster, name, size=1)
            wait_for(lambda n=name: condition(cluster, n, "Degraded").get("reason") == "ResourceNotOwned", what="status")
            settle(cluster)
            out = ours(cluster, started)
            assert "get services" in out and "apply services" not in out, out
            service = cluster.handle("GET", f"/api/v1/namespaces/default/services/{name}-memcached", {}, b"")[2]
            assert b"ownerReferences" not in service and b"someone" in service, "left as it was"


def test_a_foreign_pod_withholds_the_companions_from_the_cache(cluster: FakeAPIServer) -> None:
    """A Pod someone labelled with a CR's selector keeps its Service and budget from being created,
    seen in the Pods' cache (no LIST); when it goes, its event queues the CR and they are created
    at once (not at the next resync)."""
    intruder = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "intruder", "namespace": "default", "labels": {
        "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "a"}},
        "spec": {"containers": [{"name": "x", "image": "busybox:1.36"}]}}
    post(cluster, "/api/v1/namespaces/default/pods", intruder)
    with running(cluster):
        started = time.monotonic()
        make_cr(cluster, "a", size=2)
        wait_for(lambda: condition(cluster, "a", "Degraded").get("reason") == "SelectorOverlap", what="the overlap")
        settle(cluster)
        assert "Pod default/intruder" in condition(cluster, "a", "Degraded")["message"]
        out = ours(cluster, started)
        assert "GET pods" not in out and not [o for o in out if o in ("apply services", "apply poddisruptionbudgets")], out
        cluster.handle("DELETE", "/api/v1/namespaces/default/pods/intruder", {"User-Agent": "kubectl/v1.37.1"}, b"")
        # the Service's and the budget's applies are sent side by side: either may land first
        wait_for(lambda: cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is not None
                 and cluster.get("", "services", "default", "a-memcached") is not None,
                 timeout=5, what="the Service and the budget, from the Pod's DELETED event")


def test_a_new_deployment_and_its_companions_are_applied_side_by_side(cluster: FakeAPIServer) -> None:
    """The applies of a new CR do not wait on each other: with the Deployment's apply held a second,
    the Service's and the budget's arrive while it is held (in sequence they would come after it)."""
    cluster.faults.append(Fault(status=0, delay=1.0, method="PATCH", path_contains="/deployments/", user_agent="memcached"))
    with running(cluster):
        make_cr(cluster, "a", size=2)
        wait_for(lambda: condition(cluster, "a", "Available"), what="status")
        applies = {r.path.split("/")[-2]: r.received for r in cluster.log if r.method == "PATCH" and r.user_agent.startswith("memcached")
                   and not r.path.endswith("/status") and "/leases/" not in r.path}
        held = applies["deployments"]
        assert applies["services"] < held + 1.0 and applies["poddisruptionbudgets"] < held + 1.0, applies
        posted = lambda: [r for r in cluster.log if r.method == "POST" and r.path.endswith("/events")]  # noqa: E731
        wait_for(lambda: bool(posted()), what="the Event (posted after the status)")
        event = posted()[0]
        assert json.loads(event.body)["reason"] == "DeploymentCreated", "the Event names the Deployment first"
