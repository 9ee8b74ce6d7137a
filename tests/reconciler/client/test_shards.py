"""Shards on Leases (issue 24): joining, leaving, dying and a partition, with time as a test input.

The replicas' Leases live in the fake API server over real HTTP (transcript 15's rules for
Leases: a PUT carries the resourceVersion read, MicroTimes). Each replica's ``step`` is one turn of
its Lease thread, and what its Lease informer would deliver is handed to it by ``sync`` (a LIST of
the ring's Leases turned into events), so a test decides when each replica's watch is current and
when it lags. After every move, ``no_two_writers`` checks the promise of shards.py on 600 CR keys:
at most one replica may write each CR.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.shards import RING_LABEL, VIEW_ANNOTATION, ShardRing, key_text, lease_name, owner

from fakeapi.server import FakeAPIServer, Fault
from tests.support.clock import ManualClock
from tests.support.shardring import KEYS, START, leases, no_two_writers, replica, settle_ring, start, sync


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(namespaces=("default",)) as api:
        yield api


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(100.0, START)


def lease(server: FakeAPIServer, ring: ShardRing) -> dict | None:
    found = [x for x in leases(server) if x["metadata"]["name"] == ring.name]
    return found[0] if found else None


def advance(server: FakeAPIServer, clock: ManualClock, rings: list[ShardRing], seconds: float, step: float = 2.0,
            live: list[ShardRing] | None = None) -> None:
    """Time passes; the ``live`` replicas (all by default) renew every ``step`` seconds, watches current."""
    live = rings if live is None else live
    end = clock.now + seconds
    while clock.now < end:
        clock.now = min(end, clock.now + step)
        for ring in live:
            sync(server, ring)
            ring.step()
        no_two_writers(rings)


# ---- the hash
def test_rendezvous_moves_about_one_nth_when_a_member_joins_and_only_the_leavers_share_when_one_leaves() -> None:
    keys = [key_text(k) for k in KEYS] + [f"default/m-{i}" for i in range(2400)]
    three = {k: owner(k, ["a", "b", "c"]) for k in keys}
    four = {k: owner(k, ["a", "b", "c", "d"]) for k in keys}
    moved = [k for k in keys if three[k] != four[k]]
    assert all(four[k] == "d" for k in moved), "a joining member takes CRs only for itself"
    assert 0.20 < len(moved) / len(keys) < 0.30, f"about 1/4 move, not {len(moved) / len(keys):.2f}"
    two = {k: owner(k, ["a", "c"]) for k in keys}
    assert all(two[k] == three[k] for k in keys if three[k] != "b"), "only the leaver's CRs move"
    shares = [sum(1 for k in keys if three[k] == m) / len(keys) for m in "abc"]
    assert all(0.28 < s < 0.39 for s in shares), shares
    assert owner("default/x", []) is None


@given(st.sets(st.sampled_from("abcdefgh"), max_size=8), st.sets(st.sampled_from("abcdefgh"), max_size=8),
       st.text(min_size=1, max_size=20))
def test_two_members_that_count_each_other_never_both_own_a_cr(view1: set[str], view2: set[str], key: str) -> None:
    first, second = owner(key, view1), owner(key, view2)
    if first is not None and second is not None and first != second:
        assert not (first in view2 and second in view1), "each would beat the other"


def test_lease_names_are_dns_subdomains() -> None:
    assert lease_name("memcached-gitops-7d9f-x2") == "memcached-gitops-shard-memcached-gitops-7d9f-x2"
    assert lease_name("My_Host-123") == "memcached-gitops-shard-my-host-123"
    assert len(lease_name("x" * 400)) == 253


# ---- the protocol
def test_a_lone_replica_serves_every_cr_once_its_lease_says_so(server: FakeAPIServer, clock: ManualClock) -> None:
    [a] = start(server, clock, "a")
    assert no_two_writers([a]) == {"a": len(KEYS)}
    held = lease(server, a)
    assert held["spec"]["holderIdentity"] == "a" and held["metadata"]["labels"] == {RING_LABEL: "memcached-gitops"}
    assert held["metadata"]["annotations"][VIEW_ANNOTATION] == "a#0"
    assert a.agreements == 1


def test_a_joining_replica_writes_nothing_until_the_old_owner_has_let_go(server: FakeAPIServer, clock: ManualClock) -> None:
    [a] = start(server, clock, "a")
    b = replica(server, clock, "b")
    b.join()
    sync(server, b)
    b.step()
    # a's watch has not delivered b's Lease yet: a still serves everything, b nothing
    assert no_two_writers([a, b]) == {"a": len(KEYS), "b": 0}
    sync(server, a)  # a sees b: it stops writing b's share at once, before it publishes
    shares = no_two_writers([a, b])
    assert 0 < shares["a"] < len(KEYS) and shares["b"] == 0
    a.step()  # a publishes {a, b}
    sync(server, b)
    shares = no_two_writers([a, b])
    assert shares["b"] > 0 and shares["a"] + shares["b"] == len(KEYS)
    assert 0.3 < shares["b"] / len(KEYS) < 0.7
    settle_ring(server, [a, b])
    assert no_two_writers([a, b]) == shares, "the ring is stable"
    assert b.agreements == 1 and a.agreements == 2


def test_a_reconcile_in_flight_holds_the_view_until_it_ends(server: FakeAPIServer, clock: ManualClock) -> None:
    [a] = start(server, clock, "a")
    b = replica(server, clock, "b")
    b.join()
    moving = next(k for k in KEYS if owner(key_text(k), ["a", "b"]) == "b")
    with a.serving(moving) as ours:
        assert ours and a.may_write()
        sync(server, a)
        sync(server, b)
        b.step()
        assert not a.may_write(), "the view changed while the reconcile ran: it writes no more"
        a.step()
        assert lease(server, a)["metadata"]["annotations"][VIEW_ANNOTATION] == "a#0", "not published before the drain"
        sync(server, b)
        assert not b.allowed(moving)
    assert a.wake.is_set(), "the end of the last old reconcile wakes the Lease thread"
    a.step()
    assert lease(server, a)["metadata"]["annotations"][VIEW_ANNOTATION] == "a#0,b#0"
    sync(server, b)
    assert b.allowed(moving) and not a.allowed(moving)
    assert not b.may_write(), "no write outside a reconcile that holds its CR"


def test_a_reconcile_that_fails_lets_its_cr_go_as_one_that_ends(server: FakeAPIServer, clock: ManualClock) -> None:
    """A reconcile that raises gives its hold back as one that returns: the view it held is drained (the next
    member is acknowledged without waiting for a reconcile that will never end) and the failed reconcile's
    context writes nothing more."""
    [a] = start(server, clock, "a")
    b = replica(server, clock, "b")
    b.join()
    moving = next(k for k in KEYS if owner(key_text(k), ["a", "b"]) == "b")
    with pytest.raises(RuntimeError), a.serving(moving) as ours:
        assert ours and a.may_write()
        sync(server, a)
        raise RuntimeError("the reconcile failed")
    assert a.drained() and not a.may_write() and not any(a._holds.values())
    a.step()
    assert lease(server, a)["metadata"]["annotations"][VIEW_ANNOTATION] == "a#0,b#0", "published at once: nothing held"
    sync(server, b)
    assert b.allowed(moving) and not a.allowed(moving)


def test_a_third_replica_waits_for_every_member_not_one(server: FakeAPIServer, clock: ManualClock) -> None:
    """A replica joining two writes nothing until both have published a view with it: one
    acknowledgement is not all of them (the one that has not seen it yet still writes its share)."""
    a, b = start(server, clock, "a", "b")
    c = replica(server, clock, "c")
    c.join()
    sync(server, c)
    c.step()
    sync(server, a)
    a.step()  # a publishes {a, b, c}; b's watch has not delivered c's Lease
    sync(server, c)
    assert not c.acknowledged(), "only a has acknowledged c"
    assert no_two_writers([a, b, c])["c"] == 0
    sync(server, b)
    b.step()
    sync(server, c)
    assert c.acknowledged()
    assert no_two_writers([a, b, c])["c"] > 0


def test_a_replica_stopped_with_sigterm_hands_over_at_once(server: FakeAPIServer, clock: ManualClock) -> None:
    a, b, c = start(server, clock, "a", "b", "c")
    before = no_two_writers([a, b, c])
    assert min(before.values()) > 100
    b.release()
    assert lease(server, b) is None, "the Lease is deleted once nothing is in flight"
    settle_ring(server, [a, c])
    after = no_two_writers([a, c])
    assert after["a"] + after["c"] == len(KEYS), "b's share is served without waiting for any expiry"
    assert after["a"] >= before["a"] and after["c"] >= before["c"], "only b's CRs moved"


def test_a_killed_replica_is_taken_over_after_its_lease_and_not_before(server: FakeAPIServer, clock: ManualClock) -> None:
    a, b = start(server, clock, "a", "b")
    shares = no_two_writers([a, b])
    killed_at = clock.now  # b's last renewal was sent at its last step, at this time
    advance(server, clock, [a, b], 14.0, live=[a])
    assert no_two_writers([a, b])["a"] == shares["a"], "b's share waits for its Lease to run out"
    assert lease(server, b) is not None
    advance(server, clock, [a, b], 2.0, live=[a])
    assert clock.now - killed_at <= 16.0
    assert no_two_writers([a, b])["a"] == len(KEYS), "taken over within a lease (15 s) and a step"
    assert lease(server, b) is None, "the confirming replica deletes the dead member's Lease"


def test_a_partitioned_replica_stops_writing_before_its_share_moves(server: FakeAPIServer, clock: ManualClock) -> None:
    a, b = start(server, clock, "a", "b")
    mine = [k for k in KEYS if b.allowed(k)]
    cut_at = clock.now
    server.faults.append(Fault(path_contains=f"/leases/{b.name}", method="PUT", status=500, times=1000))
    fenced_out = taken = None
    while taken is None:
        clock.now += 0.5
        for ring in (a, b):
            sync(server, ring)
            ring.step()
        no_two_writers([a, b])
        if fenced_out is None and not any(b.allowed(k) for k in mine):
            fenced_out = clock.now
        if all(a.allowed(k) for k in mine):
            taken = clock.now
        assert clock.now - cut_at < 30
    assert fenced_out - cut_at <= 10.0, "b stops at its renew deadline"
    assert taken - fenced_out >= 4.5, "a takes over only once b has been silent for a whole lease"


def test_a_members_fence_counts_from_when_its_renewal_was_sent_not_answered(server: FakeAPIServer, clock: ManualClock) -> None:
    """A renewal answered late (sent at t, answered 9 s later) carries renewTime t, from which the others count
    the Lease's 15 s: its sender stops writing 10 s after t, whatever the answer's delay, as leader.py's fence."""
    (a,) = start(server, clock, "a")
    mine = [k for k in KEYS if a.allowed(k)]
    assert mine

    class Slow:
        def request(self, method: str, path: str, **kwargs: Any) -> Any:
            if method == "PUT":
                clock.now += 9.0  # in flight for nine seconds
            return api.request(method, path, **kwargs)

    api, a.api = a.api, Slow()
    clock.now += 2.0
    sent = clock.now
    a.step()
    a.api = api
    assert a.renewed_at == sent and clock.now == sent + 9.0
    clock.now = sent + 9.999
    assert a.fenced() and all(a.allowed(k) for k in mine)
    clock.now = sent + 10.0
    assert not a.fenced() and not any(a.allowed(k) for k in mine)


def test_a_lagging_watch_does_not_kill_a_live_member(server: FakeAPIServer, clock: ManualClock) -> None:
    a, b = start(server, clock, "a", "b")
    shares = no_two_writers([a, b])
    for _ in range(10):  # 20 s: b renews, a's watch delivers nothing
        clock.now += 2.0
        b.step()
        a.step()
        assert no_two_writers([a, b]) == shares
    assert lease(server, b) is not None, "the GET showed the renewals the watch missed"


def test_a_member_whose_wall_clock_runs_an_hour_behind_is_never_dropped_while_it_renews(server: FakeAPIServer, clock: ManualClock) -> None:
    """The others judge a member by when *they* first saw each of its renewals (their own monotonic
    clock), never by the renewTime it wrote: a member whose host's clock is an hour behind (an NTP
    step back, a VM restored from a snapshot) writes renewTimes an hour in the past, and is as alive
    as any other, as client-go's leaderelection keeps its own observedTime for the record it read
    (kubernetes/leaderelection/leaderelection.py in the venv: observed_time_milliseconds)."""
    a, b = start(server, clock, "a", "b")
    shares = no_two_writers([a, b])
    b.clock = lambda: clock.datetime() - dt.timedelta(hours=1)
    advance(server, clock, [a, b], 60.0)
    assert no_two_writers([a, b]) == shares, "b's share stays with b"
    assert lease(server, b) is not None and a.members() == ["a", "b"]


def test_a_dead_member_whose_wall_clock_ran_ahead_is_dropped_a_lease_after_last_seen(server: FakeAPIServer, clock: ManualClock) -> None:
    """A member that wrote renewTimes an hour in the future and then died is dropped 15 s after the
    others last saw it renew, not an hour later: its renewTime is never compared with their clocks."""
    a, b = start(server, clock, "a", "b")
    b.clock = lambda: clock.datetime() + dt.timedelta(hours=1)
    advance(server, clock, [a, b], 4.0)
    killed_at = clock.now
    sync(server, a)  # a sees b's last renewal at once
    advance(server, clock, [a, b], 14.0, live=[a])
    assert lease(server, b) is not None, "not before its lease ran out"
    advance(server, clock, [a, b], 2.0, live=[a])
    assert clock.now - killed_at <= 16.0 and lease(server, b) is None
    assert no_two_writers([a, b])["a"] == len(KEYS)


def test_a_member_back_from_a_lapse_needs_a_fresh_acknowledgement(server: FakeAPIServer, clock: ManualClock) -> None:
    a, b = start(server, clock, "a", "b")
    server.faults.append(Fault(path_contains=f"/leases/{b.name}", method="PUT", status=500, times=6))
    clock.now += 11.0  # past b's renew deadline; a has not yet dropped b (15 s)
    sync(server, a)
    a.step()
    for _ in range(6):
        b.step()  # the failing renewals
    assert b.fenced() is False and not any(b.allowed(k) for k in KEYS)
    b.step()  # the renewal goes through: a new incarnation
    assert b.token == "b#1"
    assert not any(b.allowed(k) for k in KEYS), "a acknowledged b#0, not b#1"
    no_two_writers([a, b])
    settle_ring(server, [a, b])
    shares = no_two_writers([a, b])
    assert shares["a"] + shares["b"] == len(KEYS) and shares["b"] > 0


def test_a_replica_restarted_under_the_same_name_comes_back_as_a_new_incarnation(server: FakeAPIServer, clock: ManualClock) -> None:
    [a] = start(server, clock, "a")
    again = replica(server, clock, "a")
    again.join()
    assert again.token == "a#1" and lease(server, a)["spec"]["leaseTransitions"] == 1
    clock.now += 2.0  # (a Pod's name is unique: two live processes of one identity are a container restart's overlap)
    a.step()
    assert not any(a.allowed(k) for k in KEYS), "its renewal is refused (409): it stops and joins again"
    settle_ring(server, [again])
    assert no_two_writers([again]) == {"a": len(KEYS)}


def test_many_joins_and_leaves_in_random_order_never_make_two_writers(server: FakeAPIServer, clock: ManualClock) -> None:
    rng = random.Random(24)
    rings = start(server, clock, "r0")
    names = iter(f"r{i}" for i in range(1, 100))
    for _ in range(25):
        move = rng.choice(["join", "leave", "kill", "tick", "lag"]) if len(rings) > 1 else "join"
        if move == "join":
            ring = replica(server, clock, next(names))
            ring.join()
            rings.append(ring)
        elif move == "leave":
            rings.pop(rng.randrange(len(rings))).release()
        elif move == "kill":
            rings.pop(rng.randrange(len(rings)))  # never steps again; its Lease runs out
        elif move == "tick":
            clock.now += rng.uniform(0.5, 4.0)
        for ring in rings:
            if move != "lag" or rng.random() < 0.5:
                sync(server, ring)
            ring.step()
            no_two_writers(rings)
    advance(server, clock, rings, 20.0)
    shares = no_two_writers(rings)
    assert sum(shares.values()) == len(KEYS), "once the dead have run out, every CR is served"


# ---- the caches keep only the share (informer.Store with ``keep``)
def obj(name: str, rv: int, ns: str = "default") -> dict:
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": str(rv)}}


def test_a_store_with_a_share_keeps_only_its_objects_and_the_others_versions() -> None:
    from memcached_gitops.reconciler.client.informer import Store

    share = {"a", "c"}
    store = Store(keep=lambda o: o["metadata"]["name"] in share)
    assert store.put(obj("a", 5)) is None and store.put(obj("b", 6)) is None
    assert store.keys() == [("default", "a")] and not store.holds(("default", "b"))
    assert store.put_if_newer(obj("b", 7)) is False and store.keys() == [("default", "a")]
    share.add("b")
    added, stale = store.fill([obj("a", 5), obj("b", 6), obj("c", 3)])
    assert [o["metadata"]["name"] for o in added] == [] and stale == [("default", "b")], \
        "b's watch version (7) is newer than the LIST's; c was never seen (its ADDED is still to come); a is held"
    added, stale = store.fill([obj("b", 7)])
    assert [o["metadata"]["resourceVersion"] for o in added] == ["7"] and stale == []
    store.remove(("default", "b"))
    share.add("d")
    store.put(obj("d", 9))
    added, _ = store.fill([obj("b", 7)])
    assert added == [], "deleted after the LIST was taken: never brought back"
    share.discard("a")
    assert store.prune() == 1 and sorted(store.keys()) == [("default", "d")]
    events = store.replace([obj("a", 10), obj("c", 11), obj("e", 12)])
    assert sorted((t, o["metadata"]["name"]) for t, o, _ in events) == [("ADDED", "c"), ("DELETED", "d")]
    share.add("e")
    added, _ = store.fill([obj("e", 12)])
    assert [o["metadata"]["name"] for o in added] == ["e"], "a replace remembers the versions of what it did not keep"
    outside = {"outsideShare": True, "metadata": {"namespace": "default", "name": "f", "resourceVersion": "13"}}
    share.add("f")
    store.replace([obj("c", 11), obj("e", 12), outside])
    assert not store.holds(("default", "f")), "what a LIST kept of an object outside the share is never stored"
    assert store.fill([outside]) == ([], [])
    unfiltered = Store()
    assert unfiltered.prune() == 0 and unfiltered.put(obj("x", 1)) is None and unfiltered.keys() == [("default", "x")]


def test_the_share_filters_keep_the_deployments_services_and_budgets_of_the_crs_this_replica_serves() -> None:
    """cache_filters: each object kept by the CR that owns it (its controller, else our instance label),
    so a Service or budget is pruned with its CR's Deployment; a kept selector keeps a Deployment."""
    from memcached_gitops.reconciler.orchestration.share import SHARED_KINDS, cache_filters
    from memcached_gitops.render import selector_labels

    class Ring:
        def caches(self, key: tuple[str, str]) -> bool:
            return key == ("shop", "mine")

    def companion(kind: str, cr: str, *, controlled: bool = True, labels: dict | None = None) -> dict:
        meta: dict[str, Any] = {"namespace": "shop", "name": f"{cr}-memcached", "labels": labels or {}}
        if controlled:
            meta["ownerReferences"] = [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": cr, "uid": "u",
                                        "controller": True}]
        return {"kind": kind, "metadata": meta}

    keep = cache_filters(Ring())  # type: ignore[arg-type]
    assert set(keep) == set(SHARED_KINDS) == {"Deployment", "Service", "PodDisruptionBudget"}
    for kind in ("Service", "PodDisruptionBudget"):
        assert keep[kind](companion(kind, "mine")) and not keep[kind](companion(kind, "theirs"))
        assert keep[kind](companion(kind, "mine", controlled=False, labels={"app.kubernetes.io/instance": "mine"})), \
            "a GitOps-applied one (no controller): by our instance label"
        assert not keep[kind](companion(kind, "other", controlled=False, labels={"app.kubernetes.io/instance": "theirs"}))
    def deployment(name: str, selector: dict | None = None) -> dict:
        return {"metadata": {"namespace": "shop", "name": name},
                "spec": {"selector": selector or {"matchLabels": selector_labels(name)}}}

    assert keep["Deployment"](deployment("mine")) and not keep["Deployment"](deployment("theirs"))
    kept = deployment("theirs", {"matchLabels": {"app": "x"}})
    assert keep["Deployment"](kept), "a kept selector: every replica's overlap report reads it"
    assert not keep["Service"]({**kept, "kind": "Service"}), "a kept selector keeps only Deployments"


def share_informer(server: FakeAPIServer, names: tuple[str, ...], share: set[str], events: list[tuple[str, str]]) -> Any:
    """The CRs ``names``, and a started Memcached informer that keeps those in ``share`` and notes its events."""
    from memcached_gitops.reconciler.client.informer import Informer, Kind

    from tests.support.fakecluster import make_cr

    for name in names:
        make_cr(server, name)
    kube = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=1))
    kind = Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds")
    return Informer(kube, kind, lambda k, t, o, old, at: events.append((t, o["metadata"]["name"])), namespace="default",
                    keep=lambda o: o["metadata"]["name"] in share).start()


def test_a_refill_reads_again_what_changed_after_its_list_and_never_restores_a_deleted_object(server: FakeAPIServer) -> None:
    """Informer.refill over HTTP: the LIST it takes may be older than what the watch has delivered
    since (the watch runs on); such an object is read again, and one deleted since stays deleted."""
    import time

    from tests.support.fakecluster import CR_PATH, patch

    share: set[str] = {"a"}
    events: list[tuple[str, str]] = []
    informer = share_informer(server, ("a", "b", "c"), share, events)
    try:
        assert informer.synced.wait(5)
        assert informer.store.keys() == [("default", "a")] and events == [("ADDED", "a")]
        share |= {"b", "c"}
        snapshot = informer._list_items()  # a LIST as the grown share takes it, older than what comes next
        share -= {"b", "c"}
        patch(server, CR_PATH.format(ns="default") + "/b", {"spec": {"size": 3}}, "application/merge-patch+json")
        server.handle("DELETE", CR_PATH.format(ns="default") + "/c", {"User-Agent": "kubectl/v1.37.1"}, b"")
        deadline = time.monotonic() + 5
        while informer.resource_version != str(server.rv) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert events == [("ADDED", "a")], "the other replicas' CRs raise no event here"
        share |= {"b", "c"}
        informer._list_items = lambda: snapshot  # the LIST taken before the change and the deletion
        assert informer.refill() == 1
        assert informer.store.get(("default", "b"))["spec"]["size"] == 3, "read again: the watch had seen it newer"
        assert informer.store.get(("default", "c")) is None
        assert events == [("ADDED", "a"), ("ADDED", "b")]
    finally:
        informer.stop.set()


def test_a_refill_without_events_stores_and_leaves_the_visiting_to_its_caller(server: FakeAPIServer) -> None:
    share: set[str] = {"a"}
    events: list[tuple[str, str]] = []
    informer = share_informer(server, ("a", "b"), share, events)
    try:
        assert informer.synced.wait(5) and events == [("ADDED", "a")]
        share.add("b")
        assert informer.refill(emit=False) == 1 and informer.store.get(("default", "b")) is not None
        assert events == [("ADDED", "a")]
    finally:
        informer.stop.set()


def test_a_refused_lease_stops_the_join_with_the_servers_answer() -> None:
    """Without the Lease RBAC a replica would never be acknowledged and serve nothing: join raises the 403."""
    from memcached_gitops.reconciler.client.api import APIError

    with FakeAPIServer(namespaces=("default",), rbac_rules=[{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                                            "verbs": ["get", "list", "watch"]}]) as server:
        ring = replica(server, ManualClock(100.0, START), "a")
        with pytest.raises(APIError) as refused:
            ring.join()
        assert refused.value.status == 403 and "cannot create resource" in str(refused.value)

def test_release_stops_serving_at_once_and_deletes_the_lease_only_after_the_work_in_flight(
        server: FakeAPIServer, clock: ManualClock) -> None:
    """SIGTERM: no CR is taken from the moment release begins, but a reconcile in flight ends with its
    own writes (its status, its Event: no CR left half-done; the others count this replica as a
    member until its Lease goes, so none of them writes that CR); the Lease is deleted once the
    reconciles in flight have ended, or after ``timeout`` seconds (by the ring's clock) of a stuck
    one, which then writes nothing more."""
    import threading

    a, b = start(server, clock, "a", "b")
    mine = next(k for k in KEYS if a.allowed(k))
    done = threading.Event()
    with a.serving(mine) as ours:
        assert ours
        releasing = threading.Thread(target=lambda: (a.release(), done.set()), daemon=True)
        releasing.start()
        assert not done.wait(0.2), "waits for the reconcile in flight"
        assert a.stopping and a.token not in a.view and not any(a.allowed(k) for k in KEYS)
        assert a.may_write(), "the reconcile in flight finishes its writes"
        assert lease(server, a) is not None
    assert done.wait(5) and lease(server, a) is None
    assert lease(server, b) is not None
    stuck = threading.Event()
    other = next(k for k in KEYS if b.allowed(k))
    entered = threading.Event()
    after: list[bool] = []

    def reconcile() -> None:
        with b.serving(other) as ok:
            entered.set()
            if ok:
                stuck.wait(10)
                after.append(b.may_write())

    threading.Thread(target=reconcile, daemon=True).start()
    assert entered.wait(5) and b._holds[b.epoch] == 1
    finished = threading.Event()
    threading.Thread(target=lambda: (b.release(timeout=30.0), finished.set()), daemon=True).start()
    assert not finished.wait(0.2) and lease(server, b) is not None
    clock.now += 29.0
    assert not finished.wait(0.1), "30 s are not over"
    clock.now += 1.5
    assert finished.wait(5) and lease(server, b) is None, "a stuck reconcile holds the Lease 30 s at most"
    stuck.set()
    deadline = time.monotonic() + 5
    while not after and time.monotonic() < deadline:
        time.sleep(0.01)
    assert after == [False], "nothing is written once the Lease is deleted"


def test_a_reconcile_still_running_when_release_stops_waiting_writes_nothing_more_though_its_fence_holds(
        server: FakeAPIServer, clock: ManualClock) -> None:
    """Release's wait and the fence are two bounds: whichever ends first ends the writes of a reconcile in flight.
    With a wait shorter than the fence's time left, the Lease's DELETE goes out while the fence still holds, and
    from then on the reconcile writes nothing (the others take its CRs the moment they see the DELETE)."""
    a, b = start(server, clock, "a", "b")
    mine = next(k for k in KEYS if a.allowed(k))
    with a.serving(mine) as ours:
        assert ours and a.may_write()
        a.release(timeout=0.0)  # stops waiting at once: the reconcile is still running
        assert lease(server, a) is None and a.fenced(), "the DELETE is sent, the fence has time left"
        assert not a.may_write()
    sync(server, b)
    assert b.allowed(mine)


def test_a_leaving_replicas_reconcile_in_flight_writes_only_within_its_fence(server: FakeAPIServer, clock: ManualClock) -> None:
    """While SIGTERM waits for a reconcile in flight, the Lease is no longer renewed: once the renew
    deadline has passed since the last renewal, the others may take the share over (after a whole
    lease of silence, as from any replica cut off), so the reconcile in flight writes nothing more,
    though its Lease is not deleted yet: never two writers of one CR."""
    import threading

    a, _ = start(server, clock, "a", "b")
    mine = next(k for k in KEYS if a.allowed(k))
    with a.serving(mine) as ours:
        assert ours
        releasing = threading.Thread(target=a.release, daemon=True)
        releasing.start()
        deadline = time.monotonic() + 5
        while not a.stopping and time.monotonic() < deadline:
            time.sleep(0.005)
        assert a.stopping and a.may_write(), "within the fence, the reconcile in flight finishes"
        clock.now += a.renew_deadline
        assert not a.may_write(), "past the renew deadline, a leaving replica writes nothing"
    releasing.join(5)
    assert not releasing.is_alive()


def test_release_waits_for_a_renewal_in_flight_and_no_renewal_follows_its_delete(server: FakeAPIServer, clock: ManualClock) -> None:
    """SIGTERM while the Lease thread renews: the DELETE carries the version that renewal wrote (not a
    409 that would leave the Lease to expire), and the thread writes nothing after it."""
    import threading

    [a] = start(server, clock, "a")
    inner = a.api
    in_flight, go = threading.Event(), threading.Event()

    class Slow:
        def request(self, method: str, path: str, **kwargs):
            if method == "PUT":
                in_flight.set()
                go.wait(5)
            return inner.request(method, path, **kwargs)

    a.api = Slow()  # type: ignore[assignment]
    clock.now += 2.0  # a renewal is due
    stop = threading.Event()
    thread = threading.Thread(target=a.run, args=(stop,), daemon=True)
    thread.start()
    assert in_flight.wait(5)
    released = threading.Thread(target=a.release, daemon=True)
    released.start()
    released.join(0.2)
    assert released.is_alive(), "release waits for the renewal in flight"
    go.set()
    released.join(5)
    thread.join(5)
    assert not thread.is_alive() and lease(server, a) is None, "deleted on the renewal's version; not re-created"


def test_a_leaving_replica_the_ring_has_not_acknowledged_writes_nothing_more(server: FakeAPIServer, clock: ManualClock) -> None:
    """SIGTERM lets a reconcile in flight end with its own writes only when the others counted this
    replica as a member (then none of them owns its CRs). One back from a lapse as a new incarnation
    that the others have not acknowledged yet may already have had its share taken over: once it
    starts leaving, its reconcile in flight writes nothing more, fenced or not."""
    import threading

    a, b = start(server, clock, "a", "b")
    mine = next(k for k in KEYS if a.allowed(k))
    with a.serving(mine) as ours:
        assert ours and a.may_write()
        server.faults.append(Fault(path_contains=f"/leases/{a.name}", method="PUT", status=500, times=1000))
        while lease(server, a) is not None:  # a is cut off; b confirms its Lease ran out and deletes it
            clock.now += 2.0
            for ring in (a, b):
                sync(server, ring)
                ring.step()
            no_two_writers([a, b])
            assert clock.now < 200.0
        assert b.allowed(mine), "b serves every CR, a's too"
        server.faults.clear()
        while not a.fenced():  # a gets through again: its renewal finds no Lease, it joins as a new incarnation
            a.step()
        assert a.token != "a#0" and a.token in a.view and not a.acknowledged()
        assert b.allowed(mine), "b's watch has not delivered a's new Lease: b still writes a's CRs"
        releasing = threading.Thread(target=a.release, daemon=True)
        releasing.start()
        deadline = time.monotonic() + 5
        while not a.stopping and time.monotonic() < deadline:
            time.sleep(0.005)
        assert a.stopping and a.fenced()
        assert not a.may_write(), "not acknowledged when it began leaving: the reconcile in flight writes nothing"
    releasing.join(5)
    assert not releasing.is_alive() and lease(server, a) is None


def test_taking_over_a_lease_never_moves_the_incarnation_backwards(server: FakeAPIServer, clock: ManualClock) -> None:
    """A replica whose renewals are refused (409: written by someone else) comes back as a new
    incarnation each time it tries, taking over its Lease of the same name: when its incarnation is
    already above the old Lease's transitions, it keeps its own (the token and the Lease never go
    back to an incarnation it has been before)."""
    a, b = start(server, clock, "a", "b")
    assert a.token == "a#0"
    server.faults.append(Fault(path_contains=f"/leases/{a.name}", method="PUT", status=409, times=2))
    seen = [a.incarnation]
    for _ in range(3):  # the refused renewal; a take-over refused too; a take-over that goes through
        clock.now += 2.0
        a.step()
        seen.append(a.incarnation)
    assert seen == [0, 0, 1, 2], "each try after a refusal is the next incarnation; the take-over keeps a#2, above the Lease's 0 + 1"
    assert a.token == "a#2" and a.fenced() and a.holds_lease
    assert lease(server, a)["spec"]["leaseTransitions"] == 2, "the Lease says the incarnation the replica took over as"
    settle_ring(server, [a, b])
    shares = no_two_writers([a, b])
    assert shares["a"] > 0 and shares["a"] + shares["b"] == len(KEYS)
