"""The shard ring (reconciler/client/shards.py) in-process: its Lease requests as sent, on a recording Lease
API with the API server's rules for Leases (a PUT or a DELETE carries the resourceVersion read, a
conflict is a 409), and time as an input. tests/reconciler/client/test_shards.py drives whole rings; these tests pin
what each request says."""

from __future__ import annotations

import copy
import logging
import re
import threading
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.client import shards
from memcached_gitops.reconciler.client.api import APIError
from memcached_gitops.reconciler.client.shards import ShardRing, lease_name, parse_view

from tests.support.clock import ManualClock

LEASES = "/apis/coordination.k8s.io/v1/namespaces/ring/leases"


class LeaseAPI:
    """One namespace's Leases; every request recorded as (method, path, body, verb)."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, Any, str | None]] = []
        self.rv = 0
        self.refuse: dict[str, APIError] = {}

    def request(self, method: str, path: str, body: Any = None, verb: str | None = None, **_: Any) -> dict[str, Any]:
        self.calls.append((method, path, copy.deepcopy(body), verb or method.lower()))  # KubeAPI's default verb
        if method in self.refuse:
            raise self.refuse.pop(method)
        name = body["metadata"]["name"] if method == "POST" else path.rsplit("/", 1)[1]
        held = self.leases.get(name)
        if method == "GET":
            if held is None:
                raise APIError(404, "not found")
            return copy.deepcopy(held)
        if method == "POST" and held is not None:
            raise APIError(409, "already exists")
        if method in ("PUT", "DELETE"):
            if held is None:
                raise APIError(404, "not found")
            wanted = (body["metadata"] if method == "PUT" else body["preconditions"])["resourceVersion"]
            if wanted != held["metadata"]["resourceVersion"]:
                raise APIError(409, "the object has been modified")
        if method == "DELETE":
            del self.leases[name]
            return {}
        self.rv += 1
        lease = copy.deepcopy(body)
        lease["metadata"]["resourceVersion"] = str(self.rv)
        self.leases[name] = lease
        return copy.deepcopy(lease)


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The ring's log messages, whole: a test of a message's words must fail when any word changes."""
    return [r.getMessage() for r in caplog.records if r.name == "memcached_gitops.shards"]


def ring(identity: str = "a", api: LeaseAPI | None = None, clock: ManualClock | None = None) -> ShardRing:
    return ShardRing(api or LeaseAPI(), "ring", identity, monotonic=clock or ManualClock(100.0))  # type: ignore[arg-type]


def test_release_deletes_the_lease_it_holds_on_its_resource_version(caplog) -> None:
    api = LeaseAPI()
    a = ring(api=api)
    a.join()
    rv = api.leases[a.name]["metadata"]["resourceVersion"]
    a.release()
    assert api.calls[-1] == ("DELETE", f"{LEASES}/{a.name}", {"preconditions": {"resourceVersion": rv}}, "delete")
    assert api.leases == {} and not a.holds_lease
    api.calls.clear()
    a.release()
    assert api.calls == [], "nothing held: nothing deleted"


def test_release_leaves_a_lease_written_since_by_another_process_and_says_so(caplog) -> None:
    api = LeaseAPI()
    a = ring(api=api)
    a.join()
    again = ring(api=api)
    again.join()  # the same identity again (a restarted container): it took the Lease over
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.shards"):
        a.release()
    assert lease_name("a") in api.leases and api.leases[a.name]["spec"]["leaseTransitions"] == 1
    assert said(caplog)[-1] == f"could not delete shard Lease {a.name}: {APIError(409, 'the object has been modified')}"
    assert not a.holds_lease


def test_release_polls_the_work_in_flight_often_and_gives_it_thirty_seconds_by_default(monkeypatch) -> None:
    """The wait for the reconciles in flight: short sleeps (the hand-over is milliseconds), a
    deadline of 30 s by the ring's clock, and none beyond it."""
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    a.listed = True
    a._recompute()
    key = ("default", "x")
    sleeps: list[float] = []

    class Time:
        @staticmethod
        def sleep(seconds: float) -> None:
            sleeps.append(seconds)
            assert len(sleeps) <= 2, "waits past the deadline"
            clock.now = {1: 129.5, 2: 130.0}.get(len(sleeps), clock.now)  # 130.0: exactly the deadline, it is over

    monkeypatch.setattr(shards, "time", Time)
    done = threading.Event()
    with a.serving(key) as ours:
        assert ours
        a.release()
        done.set()
        assert api.leases == {}, "a stuck reconcile holds the Lease 30 s at most"
    assert len(sleeps) == 2 and all(0 < s <= 0.01 for s in sleeps)


def test_an_identity_with_a_hash_sign_is_still_its_own_member() -> None:
    """A token is ``identity#incarnation``: the identity is everything before the last ``#``."""
    api = LeaseAPI()
    a = ring("web#2", api=api)
    a.join()
    a.listed = True
    a.step()
    assert a.token == "web#2#0" and a.members() == ["web#2"]
    assert a.owns(("default", "x")) and a.allowed(("default", "x"))


def test_a_lease_without_a_view_annotation_has_published_nothing() -> None:
    assert parse_view(None) == frozenset() and parse_view("") == frozenset()
    assert parse_view("a#0,,b#1") == frozenset({"a#0", "b#1"})


def peer(identity: str, *view: str, rv: str = "7", renew: str = "2026-11-25T12:00:00.000000Z") -> dict[str, Any]:
    return {"metadata": {"name": lease_name(identity), "namespace": "ring", "resourceVersion": rv,
                         "annotations": {shards.VIEW_ANNOTATION: ",".join(view)}},
            "spec": {"holderIdentity": identity, "leaseTransitions": 0, "renewTime": renew}}


def test_the_hand_over_is_timed_from_the_change_of_view_to_the_acknowledgement(caplog) -> None:
    clock = ManualClock(100.0)
    a = ring(clock=clock)
    took: list[float] = []
    agreed: list[int] = []
    a.on_handover = took.append
    a.on_agreed = lambda: agreed.append(a.epoch)
    a.join()
    a.listed = True
    a.on_lease("ADDED", peer("b", "b#0"))  # the view {a, b} from 100.0; b has not acknowledged a
    assert took == [] and a.changed_at == 100.0
    clock.now = 102.5
    with caplog.at_level(logging.INFO, logger="memcached_gitops.shards"):
        a.on_lease("MODIFIED", peer("b", "a#0", "b#0", rv="8"))
    assert took == [2.5] and agreed == [a.epoch]
    assert "shard ring of 2 members acknowledged this replica; serving its share" in said(caplog)
    a.on_lease("MODIFIED", peer("b", "a#0", "b#0", rv="9"))
    assert took == [2.5] and len(agreed) == 1, "once per view"


def test_the_lease_thread_wakes_for_a_renewal_the_fences_end_and_a_peers_expiry() -> None:
    """The next turn: the retry period, or sooner when this replica's fence ends or a peer's Lease
    runs out (each a change of view); never less than 10 ms."""
    clock = ManualClock(100.0)
    a = ring(clock=clock)
    assert a.next_turn() == 2.0, "not renewed yet: the retry period"
    a.join()  # renewed at 100.0: fenced until 110.0
    assert a.next_turn() == 2.0
    clock.now = 109.0
    assert a.next_turn() == 1.0, "the fence ends in 1 s"
    clock.now = 94.5
    a.on_lease("ADDED", peer("b", "b#0"))  # first seen at 94.5: runs out at 109.5
    clock.now = 109.25
    assert a.next_turn() == 0.25, "b's Lease runs out before the fence"
    clock.now = 109.75
    assert a.next_turn() == 0.01, "b has run out: at once (10 ms)"
    clock.now = 112.0
    a.peers.clear()
    assert a.next_turn() == 2.0, "the fence has ended: the retry period"
    clock.now = 108.5
    b = ring("b", clock=clock)
    b.join()
    clock.now = 118.4
    assert b.next_turn() == pytest.approx(0.1)


def expiring(get: APIError | None = None, delete: APIError | None = None, fresh: dict[str, Any] | None = None,
             b: dict[str, Any] | None = None):
    """Ring a with peer b first seen at 100.0 and b's Lease (rv 7) in the API; 15 s later a steps."""
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    a.listed = True
    b = b or peer("b", "a#0", "b#0")
    api.leases[b["metadata"]["name"]] = fresh or b
    a.on_lease("ADDED", b)
    if get:
        api.refuse["GET"] = get
    if delete:
        api.refuse["DELETE"] = delete
    for clock.now in (106.0, 112.0, 114.9):  # a renews
        a.step()
    assert "b#0" in a.view and not [c for c in api.calls if c[0] in ("GET", "DELETE")], "not before 15 s"
    clock.now = 115.0
    a.step()
    return a, api


def test_a_peer_silent_for_a_lease_is_confirmed_by_a_get_and_its_lease_deleted_on_that_version(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.shards"):
        a, api = expiring()
    path = f"{LEASES}/{lease_name('b')}"
    assert [c for c in api.calls if c[0] in ("GET", "DELETE")] == [
        ("GET", path, None, "get"), ("DELETE", path, {"preconditions": {"resourceVersion": "7"}}, "delete")]
    assert a.peers == {} and a.view == {"a#0"} and lease_name("b") not in api.leases
    assert said(caplog) == ["shard member b#0 did not renew for 15s: taking over its share"]


@pytest.mark.parametrize("change", ["renewTime", "leaseTransitions"])
def test_a_get_that_shows_another_renewal_keeps_the_peer(change) -> None:
    fresh = peer("b", "a#0", "b#0", rv="9")
    fresh["spec"][change] = {"renewTime": "2026-11-25T12:00:14.000000Z", "leaseTransitions": 1}[change]
    a, api = expiring(fresh=fresh)
    assert not [c for c in api.calls if c[0] == "DELETE"] and len(a.peers) == 1
    [p] = a.peers.values()
    assert p.seen == 115.0 and p.token == fresh["spec"]["holderIdentity"] + "#" + str(fresh["spec"]["leaseTransitions"]), \
        "seen again now: another 15 s"


def test_a_peer_whose_lease_is_gone_is_dropped_without_a_delete() -> None:
    a, api = expiring(get=APIError(404, "not found"))
    assert a.peers == {} and not [c for c in api.calls if c[0] == "DELETE"]


def test_a_failed_get_keeps_the_peer_and_says_so(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.shards"):
        a, api = expiring(get=APIError(500, "etcd is busy"))
    assert len(a.peers) == 1 and not [c for c in api.calls if c[0] == "DELETE"]
    assert said(caplog) == [f"cannot confirm shard Lease {lease_name('b')}: {APIError(500, 'etcd is busy')}"]


@pytest.mark.parametrize(("status", "dropped"), [(404, True), (409, False), (500, False)])
def test_a_refused_delete_of_an_expired_lease(status, dropped, caplog) -> None:
    """404: another replica deleted it (dropped); 409: it renewed between the GET and the DELETE
    (kept); anything else: kept, and said."""
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.shards"):
        a, _ = expiring(delete=APIError(status, "no"))
    assert (a.peers == {}) is dropped
    expired = "shard member b#0 did not renew for 15s: taking over its share"
    refused = f"cannot delete the expired shard Lease {lease_name('b')}: {APIError(status, 'no')}"
    assert said(caplog) == ([expired, refused] if status == 500 else [expired])


@pytest.mark.parametrize("first", ["its GET fails", "it renewed", "its DELETE fails", "it renewed before the DELETE"])
def test_a_peer_that_is_kept_does_not_keep_the_next_silent_peer_from_expiring(first) -> None:
    """Each silent peer is confirmed and dropped on its own: a first one kept (its GET failed, it
    renewed, its DELETE failed or met a newer version) does not end the round for the next."""
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    a.listed = True
    for name in ("b", "c"):
        lease = peer(name, "a#0", f"{name}#0")
        api.leases[lease["metadata"]["name"]] = copy.deepcopy(lease)
        a.on_lease("ADDED", lease)
    if first == "its GET fails":
        api.refuse["GET"] = APIError(500, "etcd is busy")
    elif first == "it renewed":
        api.leases[lease_name("b")]["spec"]["renewTime"] = "2026-11-25T12:00:14.000000Z"
    else:
        api.refuse["DELETE"] = APIError(500 if first == "its DELETE fails" else 409, "no")
    for clock.now in (106.0, 112.0, 114.9, 115.0):
        a.step()
    assert [p.token for p in a.peers.values()] == ["b#0"] and lease_name("c") not in api.leases


def test_a_deleted_event_drops_the_peer_though_it_carries_the_lease_as_it_was() -> None:
    """A watch's DELETED event carries the object's last state, holder and all; a Lease released
    (no holder) is dropped too; this replica's own Lease is never a peer."""
    a = ring()
    a.join()
    a.listed = True
    a.on_lease("ADDED", peer("b", "a#0", "b#0"))
    a.on_lease("ADDED", peer("c", "a#0", "c#0"))
    assert sorted(p.token for p in a.peers.values()) == ["b#0", "c#0"]
    a.on_lease("DELETED", peer("b", "a#0", "b#0"))
    released = peer("c")
    released["spec"]["holderIdentity"] = None
    a.on_lease("MODIFIED", released)
    assert a.peers == {} and a.view == {"a#0"}
    a.on_lease("MODIFIED", peer("a", "a#0", "zzz#0"))
    assert a.peers == {}


def test_a_lease_without_transitions_or_a_renewal_time_reads_as_incarnation_0_never_renewed() -> None:
    """The API server may leave out a zero leaseTransitions: that member is ``b#0``, the token it
    publishes itself. A Lease without renewTime that stays so for a lease is confirmed and dropped."""
    b = peer("b", "a#0", "b#0")
    del b["spec"]["leaseTransitions"], b["spec"]["renewTime"]
    a = ring()
    a.join()
    a.listed = True
    a.on_lease("ADDED", b)
    assert [p.token for p in a.peers.values()] == ["b#0"] and a.view == {"a#0", "b#0"} and a.acknowledged()
    a, api = expiring(b=b)
    assert a.peers == {} and [c[0] for c in api.calls if c[0] in ("GET", "DELETE")] == ["GET", "DELETE"]


def test_a_deleted_event_of_a_lease_never_seen_is_harmless() -> None:
    a = ring()
    a.on_lease("DELETED", peer("x"))
    a.on_lease("DELETED", {"metadata": {"name": lease_name("y")}})
    assert a.peers == {}


def test_a_refused_renewal_is_said_and_a_conflict_joins_again_as_a_new_incarnation(caplog) -> None:
    """A failed renewal keeps the Lease held (the fence runs on from the last success); a 409 or a
    404 (deleted as expired, or taken over) drops it: the next write creates it, as ``a#1``."""
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    assert [c[:2] for c in api.calls] == [("POST", LEASES)] and a.renewed_at == 100.0
    clock.now = 102.0
    api.refuse["PUT"] = APIError(500, "etcd is busy")
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.shards"):
        assert a._write(create=False) is False
    assert said(caplog) == [f"cannot renew shard Lease {a.name}: {APIError(500, 'etcd is busy')}"]
    assert a.holds_lease and a.renewed_at == 100.0
    assert a.last_error is not None and a.last_error.status == 500
    caplog.clear()
    api.refuse["PUT"] = APIError(409, "the object has been modified")
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.shards"):
        assert a._write(create=False) is False
    assert said(caplog) == [f"shard Lease {a.name}: {APIError(409, 'the object has been modified')}; joining again"]
    assert not a.holds_lease and a.renewed_at is None and not a.fenced() and a.token == "a#0"
    del api.leases[a.name]
    assert a._write(create=False) is True and a.token == "a#1" and a.last_error is None
    assert api.calls[-1][0] == "POST" and api.leases[a.name]["spec"]["leaseTransitions"] == 1
    assert api.leases[a.name]["spec"]["acquireTime"] == api.leases[a.name]["spec"]["renewTime"]


def test_a_renewal_carries_the_resource_version_held_and_the_first_acquire_time() -> None:
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    acquired = api.leases[a.name]["spec"]["acquireTime"]
    clock.now = 102.0
    a.step()
    method, path, body, verb = api.calls[-1]
    assert (method, path, verb) == ("PUT", f"{LEASES}/{a.name}", "update")
    assert body["metadata"]["resourceVersion"] == "1" and body["spec"]["acquireTime"] == acquired
    assert body["spec"]["renewTime"] != acquired and body["spec"]["leaseDurationSeconds"] == 15
    assert a.fenced() and a.renewed_at == 102.0


def puts(api: LeaseAPI) -> int:
    return sum(1 for c in api.calls if c[0] == "PUT")


def test_a_step_renews_once_the_retry_period_is_nine_tenths_over_and_publishes_only_a_changed_view() -> None:
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ShardRing(api, "ring", "a", retry_period=2.5, monotonic=clock)  # type: ignore[arg-type]
    a.join()
    a.listed = True
    a.step()  # publishes the view with itself in it
    assert puts(api) == 1 and api.leases[a.name]["metadata"]["annotations"][shards.VIEW_ANNOTATION] == "a#0"
    a.step()
    assert puts(api) == 1, "nothing due, nothing new to publish: no write"
    clock.now = 102.24
    a.step()
    assert puts(api) == 1
    clock.now = 102.25  # 0.9 x 2.5 s after the last renewal
    a.step()
    assert puts(api) == 2 and a.renewed_at == 102.25
    a.on_lease("ADDED", peer("b", "a#0", "b#0"))
    a.step()
    assert puts(api) == 3 and api.leases[a.name]["metadata"]["annotations"][shards.VIEW_ANNOTATION] == "a#0,b#0"


def test_a_step_after_a_lapse_renews_as_a_new_incarnation_and_publishes_it_at_once() -> None:
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    a.listed = True
    a.step()
    clock.now = 111.0  # the fence ran out at 110.0
    a.step()
    held = api.leases[a.name]
    assert held["spec"]["leaseTransitions"] == 1 and held["metadata"]["annotations"][shards.VIEW_ANNOTATION] == "a#1"
    assert a.view == {"a#1"} and a.published == {"a#1"} and puts(api) == 3


def test_the_rings_defaults_are_the_leases_and_its_clock_is_utc() -> None:
    import datetime as dt

    from memcached_gitops.foundation.clocks import monotonic_seconds

    api = LeaseAPI()
    a = ShardRing(api, "ring", "a")  # type: ignore[arg-type]
    assert (a.ring, a.duration, a.renew_deadline, a.retry_period, a.monotonic) == ("memcached-gitops", 15, 10.0, 2.0, monotonic_seconds)
    before = dt.datetime.now(dt.UTC)
    a.join()
    renewed = dt.datetime.strptime(api.leases[a.name]["spec"]["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    assert before - dt.timedelta(seconds=1) <= renewed <= dt.datetime.now(dt.UTC)
    assert api.leases[a.name]["metadata"]["labels"] == {shards.RING_LABEL: "memcached-gitops"} and a.fenced()
    with pytest.raises(ValueError) as refused:
        ShardRing(api, "ring", "b", duration=10, renew_deadline=10.0)  # type: ignore[arg-type]
    assert str(refused.value) == ("renew deadline 10.0s is not below the lease duration 10s: "
                                  "a member must stop writing before the others may take its share")
    assert ShardRing(api, "ring", "b", duration=10, renew_deadline=9.9).renew_deadline == 9.9  # type: ignore[arg-type]


def test_the_lease_thread_steps_until_stopped_waiting_the_turn_or_a_wake() -> None:
    a = ring()
    stop = threading.Event()
    turns: list[int] = []

    def step() -> float:
        turns.append(1)
        if len(turns) == 2:
            a.wake.set()  # something to publish: the next turn at once, though the wait is long
            return 60.0
        if len(turns) == 4:
            stop.set()
        return 0.001

    a.step = step  # type: ignore[method-assign]
    thread = threading.Thread(target=a.run, args=(stop,), daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive() and len(turns) == 4 and not a.wake.is_set()
    a.stopping = True
    stop.clear()
    a.run(stop)
    assert len(turns) == 4, "a released ring takes no turn"


def test_each_peer_runs_out_on_its_own_time() -> None:
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    a.listed = True
    c_then, b = peer("c", "a#0", "c#0"), peer("b", "a#0", "b#0")
    c_now = peer("c", "a#0", "c#0", rv="9", renew="2026-11-25T12:00:05.000000Z")
    api.leases.update({lease_name("b"): b, lease_name("c"): c_now})
    a.on_lease("ADDED", c_then)
    a.on_lease("ADDED", b)
    for clock.now in (105.0, 110.0, 115.0):
        if clock.now == 105.0:
            a.on_lease("MODIFIED", c_now)  # c renewed: it runs out at 120.0, b at 115.0
        a.step()
    assert sorted(p.token for p in a.peers.values()) == ["c#0"] and lease_name("b") not in api.leases


def test_a_ring_without_callbacks_is_acknowledged_alone_and_a_ring_never_joined_releases_nothing() -> None:
    api = LeaseAPI()
    a = ring(api=api)
    a.release()
    assert api.calls == [] and a.stopping
    b = ring("b", api=api)
    b.join()
    b.listed = True
    b.step()  # acknowledged alone: the default callbacks do nothing
    assert b.acknowledged() and b.allowed(("default", "x"))


def test_the_lease_created_says_who_holds_it_for_how_long_in_which_ring_and_the_view() -> None:
    api = LeaseAPI()
    a = ShardRing(api, "ring", "a", ring="blue", monotonic=ManualClock(100.0))  # type: ignore[arg-type]
    a.join()
    method, path, body, verb = api.calls[0]
    assert (method, path, verb) == ("POST", LEASES, "create")
    renewed = body["spec"]["renewTime"]
    assert body == {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": lease_name("a"), "namespace": "ring", "labels": {shards.RING_LABEL: "blue"},
                                 "annotations": {shards.VIEW_ANNOTATION: ""}},
                    "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": renewed, "leaseTransitions": 0,
                             "acquireTime": renewed}}


def test_the_fence_ends_exactly_at_the_renew_deadline_and_each_lapse_is_a_new_incarnation(caplog) -> None:
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    a.join()
    clock.now = 109.5
    assert a.fenced()
    clock.now = 110.0
    assert not a.fenced(), "10 s after the renewal was sent"
    assert a._write(create=False) and a.token == "a#1"
    clock.now = 120.0
    assert a._write(create=False) and a.token == "a#2"
    api.refuse["PUT"] = APIError(404, "not found")  # deleted as expired by another replica
    clock.now = 121.0
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.shards"):
        assert a._write(create=False) is False
    assert not a.holds_lease and "joining again" in caplog.text
    del api.leases[a.name]
    assert a._write(create=False) and a.token == "a#3" and api.calls[-1][0] == "POST"


def test_a_reconcile_begun_in_the_current_view_does_not_hold_its_publication_and_one_of_an_older_view_does(caplog) -> None:
    clock = ManualClock(100.0)
    api = LeaseAPI()
    a = ring(api=api, clock=clock)
    with caplog.at_level(logging.INFO, logger="memcached_gitops.shards"):
        a.join()
    assert "shard view: a#0" in caplog.text
    a.listed = True
    a.step()
    key = next(k for k in (("default", f"x-{i}") for i in range(50)) if shards.owner(shards.key_text(k), ["a", "b"]) == "a")
    a.on_lease("ADDED", peer("b", "a#0", "b#0"))  # a new view; nothing in flight
    with a.serving(key) as ours:  # begun in the current view
        assert ours and a.drained()
        a.step()
        assert api.leases[a.name]["metadata"]["annotations"][shards.VIEW_ANNOTATION] == "a#0,b#0"
    with a.serving(key) as ours:
        assert ours
        a.on_lease("DELETED", peer("b"))  # b left while the reconcile runs
        assert not a.drained()
        clock.now = 102.0  # a renewal is due: it says the last view published, not the new one
        a.step()
        assert api.leases[a.name]["metadata"]["annotations"][shards.VIEW_ANNOTATION] == "a#0,b#0" and a.fenced()
    a.step()
    assert api.leases[a.name]["metadata"]["annotations"][shards.VIEW_ANNOTATION] == "a#0"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memcached_gitops.shards"):
        a.release()
    assert "shard view: (empty)" in caplog.text


def test_the_hash_is_pinned_so_that_replicas_of_two_versions_agree() -> None:
    """Every replica computes the owner alone, during a rolling update too: the key is
    ``namespace/name`` and the weight 64 bits of BLAKE2b, big-endian, the same in every version."""
    assert shards.key_text(("shop", "cache-1")) == "shop/cache-1"
    assert shards.score("a", "default/x") == 8304512854130978689
    assert shards.score("replica-7", "shop/cache-1") == 7853882220688043426


def test_lease_names_lose_the_dashes_and_dots_a_dns_name_may_not_start_or_end_with() -> None:
    assert lease_name("-My.Host-") == "memcached-gitops-shard-my.host"
    long = "a" * 229 + "-" + "b" * 10  # cut at 253 characters right after the dash
    assert lease_name(long) == "memcached-gitops-shard-" + "a" * 229


#: The API server's rule for an object's name, as its 422 quotes it (transcript 14, Event generateName):
#: k8s.io/apimachinery's IsDNS1123Subdomain, at most 253 characters.
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_pod_names = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,70}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?){0,3}", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(_pod_names)
@example("cache--0.xn--bcher-kva")
@example("memcached-gitops-reconciler-for-the-platform-team-caches-7d9f8b6c5d-x2k4p")
def test_a_pod_names_lease_is_named_after_it_unchanged(pod: str) -> None:
    """A replica's identity is its Pod's name (POD_NAME), already a DNS subdomain: its Lease is that name after
    the prefix, unchanged, so ``kubectl get lease`` names the Pod."""
    assert lease_name(pod) == "memcached-gitops-shard-" + pod


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.text(alphabet="aZ9_.-é ", max_size=12), st.text(max_size=12)))
def test_any_identity_gets_a_lease_name_the_api_server_accepts(identity: str) -> None:
    """Outside a Pod the identity is ``<hostname>-<pid>``, and a host's name may hold any character: whatever
    it is, the Lease's name is one the API server takes (a lowercase RFC 1123 subdomain: every dot-separated
    part starts and ends with a letter or digit), else ``join`` is refused with a 422 and the replica never
    joins its ring."""
    name = lease_name(identity)
    assert len(name) <= 253 and DNS1123_SUBDOMAIN.fullmatch(name), name


def test_a_restarted_process_takes_its_lease_over_as_the_next_incarnation() -> None:
    api = LeaseAPI()
    old = ring(api=api)
    old.join()
    old.incarnation = 3
    old.listed = True
    old._lapsed = False
    old._renewed_at = None
    old.step()  # the Lease now says leaseTransitions 3
    assert api.leases[old.name]["spec"]["leaseTransitions"] == 3
    rv = api.leases[old.name]["metadata"]["resourceVersion"]
    api.calls.clear()
    again = ring(api=api)
    again.join()
    assert [(m, p, v) for m, p, _, v in api.calls] == [("POST", LEASES, "create"), ("GET", f"{LEASES}/{old.name}", "get"),
                                                       ("PUT", f"{LEASES}/{old.name}", "update")]
    put = api.calls[-1][2]
    assert put["metadata"]["resourceVersion"] == rv and put["spec"]["leaseTransitions"] == 4 and again.token == "a#4"
    assert put["spec"]["acquireTime"] == put["spec"]["renewTime"]
    del api.leases[old.name]["spec"]["leaseTransitions"]
    third = ring(api=api)
    third.join()
    assert third.token == "a#1", "a Lease without transitions was incarnation 0"


def test_the_view_is_logged_when_it_changes(caplog) -> None:
    a = ring()
    a.join()
    with caplog.at_level(logging.INFO, logger="memcached_gitops.shards"):
        a.on_lease("ADDED", peer("b", "b#0"))
    assert said(caplog) == ["shard view: a#0, b#0"]


def test_the_caches_keep_the_share_among_the_members_and_this_replica_fenced_or_not() -> None:
    clock = ManualClock(100.0)
    a = ring(clock=clock)
    a.join()
    a.on_lease("ADDED", peer("b", "b#0"))
    keys = [("default", f"x-{i}") for i in range(40)]
    mine = {k for k in keys if shards.owner(shards.key_text(k), ["a", "b"]) == "a"}
    assert 0 < len(mine) < len(keys)
    assert {k for k in keys if a.caches(k)} == mine and a.cache_members() == {"a", "b"}
    clock.now = 111.0  # the fence is down: a leaves the view, not its caches' share
    a._recompute()
    assert a.view == {"b#0"} and not any(a.owns(k) for k in keys)
    assert {k for k in keys if a.caches(k)} == mine and a.cache_members() == {"a", "b"}
