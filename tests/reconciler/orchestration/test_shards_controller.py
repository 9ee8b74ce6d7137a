"""``reconcile --shards`` end to end: replicas of the event-driven mode over real HTTP against the
fake API server, each with its Lease, its informers and its workers (issue 24).

The claims are read from the fake's request log, stamped on arrival as the API server's audit log
is: which replica (by User-Agent) wrote which CR's Deployment and status, and when. Lease timings
are shortened (a 3 s lease, a 2 s renew deadline) so that a dead replica's share moves in seconds.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import defaultdict

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.shards import key_text, owner
from memcached_gitops.reconciler.orchestration.controller import Controller
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.schemas import load_crd

from fakeapi.server import FakeAPIServer
from tests.support.controller import replicas, running, wait_for
from tests.support.fakecluster import DEP_PATH, condition, make_cr, patch

CRS = [f"cache-{i}" for i in range(24)]


# the conftest fixture `cluster` serves these namespaces only
CLUSTER_NAMESPACES = ("default",)


def replica(api: FakeAPIServer, identity: str) -> contextlib.AbstractContextManager[Controller]:
    """A member of the ring with a 3 s lease, a 2 s renew deadline and renewals every 0.25 s."""
    return running(api, identity=identity, shards=True, lease=(3, 2.0, 0.25), wait_leader=False, served_by=identity)


def writers(api: FakeAPIServer, since: float = 0.0) -> dict[str, set[str]]:
    """CR name -> the replicas that wrote its Deployment or its status."""
    found: dict[str, set[str]] = defaultdict(set)
    for r in api.writes():
        if r.received < since or not r.user_agent.startswith("memcached-gitops"):
            continue
        parts = r.path.split("/")
        if "deployments" in parts or "memcacheds" in parts:
            kind = "deployments" if "deployments" in parts else "memcacheds"
            found[parts[parts.index(kind) + 1]].add(r.user_agent.split()[-1])
    return found


def all_available(api: FakeAPIServer) -> bool:
    return all(condition(api, name, "Available") for name in CRS)


def test_three_replicas_split_the_crs_and_each_cr_has_one_writer(cluster: FakeAPIServer) -> None:
    with replica(cluster, "r1") as r1, replica(cluster, "r2") as r2, replica(cluster, "r3") as r3:
        wait_for(lambda: all(c.shards.acknowledged() for c in (r1, r2, r3)), what="the ring")
        for name in CRS:
            make_cr(cluster, name)
        wait_for(lambda: all_available(cluster), what="every CR served")
        who = writers(cluster)
        assert all(len(who[name]) == 1 for name in CRS), {n: w for n, w in who.items() if len(w) != 1}
        for name in CRS:
            assert who[name] == {owner(f"default/{name}", ["r1", "r2", "r3"])}, "the rendezvous owner serves it"
            assert cluster.get("cache.example.com", "memcacheds", "default", name)["status"]["servedBy"] in who[name]
        counts = {c.shards.identity: c.metrics.value("memcached_gitops_shard_owned_crs") for c in (r1, r2, r3)}
        assert sum(counts.values()) == len(CRS) and min(counts.values()) > 0, counts
        assert r1.metrics.value("memcached_gitops_shard_members") == 3


def test_a_replica_stopped_with_sigterm_hands_its_crs_over_on_its_release_not_on_expiry(cluster: FakeAPIServer) -> None:
    """A replica stopped with SIGTERM deletes its own Lease once drained, so its share moves at once:
    the survivor corrects its CRs without ever having to expire the leaver's Lease (a DELETE the
    survivor would send itself, after the 3 s lease). Read from the request log, not from a stopwatch:
    a loaded machine slows both paths alike."""
    for name in CRS:
        make_cr(cluster, name)
    with replica(cluster, "r1") as r1, replica(cluster, "r2") as r2:
        wait_for(lambda: all_available(cluster), what="every CR served")
        theirs = [n for n in CRS if owner(f"default/{n}", ["r1", "r2"]) == "r2"]
        r2.stop.set()
        r2.thread.join(10)
        for name in theirs:
            patch(cluster, DEP_PATH.format(ns="default", name=name) + "/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json")
        wait_for(lambda: all(replicas(cluster, n) == 1 for n in theirs), timeout=60, what="r2's CRs corrected by r1")
        lease_deletes = [r.user_agent.split()[-1] for r in cluster.writes() if r.method == "DELETE" and "/leases/" in r.path]
        assert lease_deletes == ["r2"], f"released by r2 alone, never expired by r1: {lease_deletes}"
        assert r1.metrics.value("memcached_gitops_shard_handovers_total") >= 2


def test_a_replica_cut_off_stops_writing_before_its_crs_move(cluster: FakeAPIServer) -> None:
    for name in CRS:
        make_cr(cluster, name)
    with replica(cluster, "r1"), replica(cluster, "r2") as r2:
        wait_for(lambda: all_available(cluster), what="every CR served")
        theirs = [n for n in CRS if owner(f"default/{n}", ["r1", "r2"]) == "r2"]
        healed = threading.Event()
        for kube in (r2.api, r2.shards.api):  # every request of r2 fails, as behind a partition, until healed
            send = kube._send

            def cut(*args, _send=send, **kwargs):
                return _send(*args, **kwargs) if healed.is_set() else (0, "connection refused (partition)", None)

            kube._send = cut
        cut_at = time.monotonic()
        for name in theirs:
            patch(cluster, DEP_PATH.format(ns="default", name=name) + "/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json")
        wait_for(lambda: all(replicas(cluster, n) == 1 for n in theirs), timeout=10, what="r2's CRs corrected by r1")
        renewed = max(r.received for r in cluster.writes() if "/leases/" in r.path and r.user_agent.endswith(" r2"))
        took = max(r.received for r in cluster.writes() if "/deployments/" in r.path and r.user_agent.endswith(" r1")) - renewed
        assert 3.0 <= took < 4.5, f"taken over a 3 s lease after r2's last renewal (and a step), not {took:.2f}s"
        assert not r2.shards.fenced(), "r2 (2 s renew deadline) fenced itself out first"
        healed.set()
        wait_for(lambda: r2.shards.token != "r2#0" and r2.shards.acknowledged(), timeout=5, what="r2 back as a new incarnation")
        for name in theirs:
            patch(cluster, DEP_PATH.format(ns="default", name=name) + "/scale", {"spec": {"replicas": 5}}, "application/merge-patch+json")
        wait_for(lambda: all(replicas(cluster, n) == 1 for n in theirs), timeout=5, what="r2 serves its CRs again")
        assert interleaved(cluster, since=cut_at, window=2.0) == []


def interleaved(api: FakeAPIServer, since: float, window: float) -> list[str]:
    """CRs whose writes went A, B, A within ``window`` seconds (two writers at once, as the audit log shows it)."""
    by_cr: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for r in api.writes():
        parts = r.path.split("/")
        if r.received >= since and r.user_agent.startswith("memcached-gitops") and ("deployments" in parts or "memcacheds" in parts):
            kind = "deployments" if "deployments" in parts else "memcacheds"
            by_cr[parts[parts.index(kind) + 1]].append((r.received, r.user_agent.split()[-1]))
    bad = []
    for name, writes in by_cr.items():
        writes.sort()
        for (t1, a), (_, b), (t3, c) in zip(writes, writes[1:], writes[2:], strict=False):
            if a == c != b and t3 - t1 < window:
                bad.append(name)
    return bad


def test_the_shard_metrics_and_no_two_writers_while_a_replica_joins(cluster: FakeAPIServer) -> None:
    for name in CRS:
        make_cr(cluster, name)
    with replica(cluster, "r1"):
        wait_for(lambda: all_available(cluster), what="every CR served")
        with replica(cluster, "r2") as r2:
            wait_for(lambda: r2.shards.acknowledged(), what="r2 acknowledged")
            # r1 may still finish a reconcile of a CR that moves to r2 until it publishes its view with r2,
            # which r2's acknowledgement waits for: from then on, r2's CRs have one writer
            acknowledged = time.monotonic()
            theirs = [n for n in CRS if owner(f"default/{n}", ["r1", "r2"]) == "r2"]
            assert 0 < len(theirs) < len(CRS)
            for name in theirs:
                scale = DEP_PATH.format(ns="default", name=name) + "/scale"
                patch(cluster, scale, {"spec": {"replicas": 3}}, "application/merge-patch+json")
            wait_for(lambda: all(replicas(cluster, n) == 1 for n in theirs), timeout=5)
            after = writers(cluster, acknowledged)
            assert all(after[n] == {"r2"} for n in theirs), {n: after[n] for n in theirs}
            assert r2.metrics.value("memcached_gitops_shard_owned_crs") == len(theirs)
            assert key_text(("default", theirs[0])) == f"default/{theirs[0]}"


def cached(controller: Controller, kind: str) -> set[str]:
    return {name for informer in controller.informers[kind] for _, name in informer.store.keys()}


def companions_of(names: set[str]) -> set[str]:
    return {f"{n}-memcached" for n in names}


def test_each_replica_caches_only_its_share_of_deployments_and_takes_over_from_the_cache(cluster: FakeAPIServer) -> None:
    for name in CRS:
        make_cr(cluster, name, size=2)  # a Service and a budget beside each Deployment
    with replica(cluster, "r1") as r1, replica(cluster, "r2") as r2:
        wait_for(lambda: all_available(cluster), what="every CR served")
        mine = {n for n in CRS if owner(f"default/{n}", ["r1", "r2"]) == "r1"}
        wait_for(lambda: cached(r1, "Deployment") == mine, what="r1's Deployment cache down to its share")
        assert cached(r2, "Deployment") == set(CRS) - mine
        for kind in ("Service", "PodDisruptionBudget"):  # pruned by their CR, as the Deployments are
            wait_for(lambda kind=kind: cached(r1, kind) == companions_of(mine), what=f"r1's {kind} cache down to its share")
            wait_for(lambda kind=kind: cached(r2, kind) == companions_of(set(CRS) - mine), what=f"r2's {kind} cache")
        assert cached(r1, "Memcached") == cached(r2, "Memcached") == set(CRS), "CRs are small: all kept"
        r2.stop.set()
        r2.thread.join(10)
        theirs = sorted(set(CRS) - mine)
        for name in theirs:
            patch(cluster, DEP_PATH.format(ns="default", name=name) + "/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
        wait_for(lambda: all(replicas(cluster, n) == 2 for n in theirs), timeout=5, what="r2's CRs corrected by r1")
        wait_for(lambda: cached(r1, "Deployment") == set(CRS), timeout=5, what="r1 caches the Deployments it inherited")
        for kind in ("Service", "PodDisruptionBudget"):
            wait_for(lambda kind=kind: cached(r1, kind) == companions_of(set(CRS)), timeout=5, what=f"r1 caches the {kind}s it inherited")
        wait_for(lambda: all(cluster.get("cache.example.com", "memcacheds", "default", n)["status"]["servedBy"] == "r1" for n in theirs),
                 timeout=5, what="status.servedBy follows the hand-over")


def test_the_crs_new_to_a_share_are_swept_behind_the_drift_events() -> None:
    """The acknowledged share's new CRs go through add_after at SWEEP_RATE; the CRs kept are not queued again."""
    from memcached_gitops.reconciler.orchestration.share import SWEEP_RATE, Share

    class Queue:
        def __init__(self) -> None:
            self.delays: dict[tuple[str, str], float] = {}

        def add_after(self, key, delay) -> None:
            self.delays[key] = delay

        def add(self, key) -> None:
            self.delays[key] = -1.0  # at once

    class Ring:
        share: set = set()

        def owns(self, key) -> bool:
            return key[1] in self.share

    class Caches:
        @staticmethod
        def cr_keys() -> list[tuple[str, str]]:
            return [("default", n) for n in ("a", "b", "c", "d")]

    queue = Queue()
    share = Share(Ring(), Caches(), queue, threading.Event())  # type: ignore[arg-type]
    Ring.share = {"a", "b"}
    share.on_agreed()
    assert queue.delays == {("default", "a"): 0.0, ("default", "b"): 1 / SWEEP_RATE}
    assert share.sweeping == {("default", "a"), ("default", "b")}, "their first visit may leave servedBy for later"
    queue.delays.clear()
    Ring.share = {"a", "b", "c", "d"}
    share.on_agreed()
    assert queue.delays == {("default", "c"): 0.0, ("default", "d"): 1 / SWEEP_RATE}, "only the CRs new to the share"
    queue.delays.clear()
    Ring.share = {"a", "b"}
    share.wait_for_ring(("default", "a"))  # an event of a's while the ring settles: kept
    share.wait_for_ring(("default", "c"))  # another replica's now: dropped
    share.on_agreed()
    assert queue.delays == {("default", "a"): -1.0}, "a's event is served as soon as the ring acknowledges"


def test_deferred_served_by_writes_are_spaced_from_a_second_on() -> None:
    from memcached_gitops.reconciler.orchestration.share import SERVED_BY_RATE, Share

    share = Share(None, None, None, threading.Event())  # type: ignore[arg-type]
    delays = [share.served_by_slot() for _ in range(3)]
    assert 0.99 < delays[0] <= 1.0
    assert all(abs((b - a) - 1 / SERVED_BY_RATE) < 0.01 for a, b in zip(delays, delays[1:], strict=False)), delays


def test_a_visit_that_only_changes_served_by_defers_that_write(cluster: FakeAPIServer) -> None:
    """reconcile_cr(lazy_served_by=True): drift is corrected and a real status change written at once;
    a status whose only change is servedBy is left for later, and said so."""
    kube = KubeAPI.connect(host=cluster.url, retry=RetryPolicy(attempts=3, base=0.01, cap=0.05))
    make_cr(cluster, "a")
    first = Reconciler(kube, load_crd(), Options(served_by="r1"))
    first.run_cycle()
    cr = cluster.get("cache.example.com", "memcacheds", "default", "a")
    assert cr["status"]["servedBy"] == "r1"
    dep = cluster.get("apps", "deployments", "default", "a")
    declared, fields = first.status_schema()
    second = Reconciler(kube, load_crd(), Options(served_by="r2"))
    writes = len(cluster.writes())
    lazy = second.reconcile_cr(cr, dep, (), declared, fields, lazy_served_by=True)
    assert lazy.served_by_deferred and lazy.cr is None and len(cluster.writes()) == writes
    now = second.reconcile_cr(cr, dep, (), declared, fields)
    assert not now.served_by_deferred and now.cr["status"]["servedBy"] == "r2"
    patch(cluster, DEP_PATH.format(ns="default", name="a") + "/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    cr = cluster.get("cache.example.com", "memcacheds", "default", "a")
    drifted = Reconciler(kube, load_crd(), Options(served_by="r1")).reconcile_cr(
        cr, cluster.get("apps", "deployments", "default", "a"), (), declared, fields, lazy_served_by=True)
    assert drifted.action == "corrected" and replicas(cluster, "a") == 1


def test_a_replica_without_the_lease_rbac_exits_2_and_says_why() -> None:
    rules = [{"apiGroups": ["", "apps", "cache.example.com", "autoscaling", "apiextensions.k8s.io", "events.k8s.io"],
              "resources": ["*"], "verbs": ["*"]},
             {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch"]}]
    with FakeAPIServer(namespaces=("default",), rbac_rules=rules) as api:
        with replica(api, "r1") as r1:
            wait_for(lambda: not r1.thread.is_alive(), timeout=5, what="the replica gives up")
        assert r1.exit_code == 2 and "cannot create the shard Lease" in r1.error


def test_a_failed_list_of_a_grown_share_is_tried_again() -> None:
    """When the members change, the Deployments', Services' and budgets' stores are pruned, and all
    three listed again; a failed LIST is tried again."""
    from memcached_gitops.reconciler.client.api import APIError
    from memcached_gitops.reconciler.orchestration.share import SHARED_KINDS, Share

    class Informer:
        calls = 0
        pruned: list[str] = []
        refilled: list[str] = []

        def __init__(self, kind: str) -> None:
            self.kind = kind
            outer = self

            class Store:
                @staticmethod
                def prune() -> int:
                    Informer.pruned.append(outer.kind)
                    return 0

            self.store = Store()

        def refill(self, emit: bool = True) -> int:
            Informer.calls += 1
            if Informer.calls == 1:
                raise APIError(500, "etcd is busy")
            Informer.refilled.append(self.kind)
            return 3

    class Ring:
        def cache_members(self) -> frozenset[str]:
            return frozenset({"r1"})

    class Caches:
        informers = {kind: [Informer(kind)] for kind in (*SHARED_KINDS, "Memcached", "Pod")}

    share = Share(Ring(), Caches(), None, threading.Event())  # type: ignore[arg-type]
    share.cached_members = frozenset({"r1", "r2"})
    share.changed.set()  # r2 left
    thread = threading.Thread(target=share.follow, daemon=True)
    thread.start()
    try:
        wait_for(lambda: Informer.calls >= 2, timeout=5, what="the LIST tried again")
        wait_for(lambda: not share.refill_pending, timeout=5)
        assert Informer.refilled == ["Deployment", "Service", "PodDisruptionBudget"], "the three listed again"
        assert set(Informer.pruned) == {"Deployment", "Service", "PodDisruptionBudget"}, "CRs and Pods are all kept"
    finally:
        share.stop.set()
        thread.join(5)


def test_a_shards_writes_sent_side_by_side_pass_its_gate(cluster: FakeAPIServer, caplog) -> None:
    """The writes one reconcile sends side by side (a new Deployment beside its Service and budget)
    run on other threads; the ring's per-CR gate lets each through under the reconcile's hold: none is
    refused locally ("writes are stopped"), and a new CR of size 2 is served in one visit, its three
    applies each sent once."""
    caplog.set_level(logging.WARNING, logger="memcached_gitops.reconciler")
    with replica(cluster, "r1") as r1:
        wait_for(lambda: r1.shards is not None and r1.shards.acknowledged(), what="the ring agreed")
        make_cr(cluster, "a", size=2)
        wait_for(lambda: cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is not None
                 and condition(cluster, "a", "Available"), what="the CR served")
    refused = [r.getMessage() for r in caplog.records if "writes are stopped" in r.getMessage()]
    assert not refused, refused
    applies = sorted(r.path.split("/")[-2] for r in cluster.writes() if r.method == "PATCH" and r.user_agent.startswith("memcached")
                     and "/a" in r.path and not r.path.endswith("/status") and "/leases/" not in r.path)
    assert applies == ["deployments", "poddisruptionbudgets", "services"], applies
