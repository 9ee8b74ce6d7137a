"""Leader election with time as a test input: slow, failing and hanging renewals (issue 25).

The elector's deadline clock (``monotonic``) and the Lease's wall clock (``clock``) are the test's
own, and ``step`` is one try of ``run``'s loop, so each scenario places every renewal exactly in
time. The Lease lives in the fake API server over real HTTP (transcript 15's rules); a renewal
is made slow by moving the clock while it is in flight, failing by the fake's injected 500s, and
hanging by holding it on an Event. The promise under test (leader.py): a leader whose last
successful renewal was *sent* more than ``renew_deadline`` ago is not the leader, whatever its
thread is doing, so two replicas never write at the same time.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from memcached_gitops.reconciler.client.api import APIError, KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.leader import LeaderElector

from fakeapi.server import FakeAPIServer, Fault
from tests.support.clock import ManualClock

START = dt.datetime(2026, 11, 24, 12, 0, 0, tzinfo=dt.UTC)


class InFlight:
    """The elector's API, with a hook run while a Lease renewal (a PUT) is in flight; it keeps every
    request as sent (method, path and arguments)."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self.during_put: Any = None
        self.during_patch: Any = None  # run while a release (a PATCH) is in flight
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.sent.append((method, path, kwargs))
        if method == "PUT" and self.during_put is not None:
            self.during_put()
        if method == "PATCH" and self.during_patch is not None:
            self.during_patch()
        return self.api.request(method, path, **kwargs)


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(namespaces=("default",)) as api:
        yield api


class Leader:
    def __init__(self, server: FakeAPIServer) -> None:
        self.clocks = ManualClock(0.0, START)
        kube = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=1, base=0.01, cap=0.01))
        self.api = InFlight(kube)
        self.elector = LeaderElector(self.api, "default", "replica-1", duration=15, clock=self.clocks.datetime,
                                     renew_deadline=10.0, retry_period=2.0, monotonic=self.clocks)
        self.started = self.stopped = 0

    def step(self, at: float) -> float:
        self.clocks.now = at
        return self.elector.step(self._on_started, self._on_stopped)

    def _on_started(self) -> None:
        self.started += 1

    def _on_stopped(self) -> None:
        self.stopped += 1

    def leading_at(self, at: float) -> bool:
        self.clocks.now = at
        return self.elector.is_leader()


def test_a_slow_renewal_counts_the_deadline_from_when_it_was_sent(server: FakeAPIServer) -> None:
    leader = Leader(server)
    leader.step(0.0)
    assert leader.started == 1 and leader.leading_at(0.0)

    def nine_seconds_in_flight() -> None:
        leader.clocks.now += 9.0

    leader.api.during_put = nine_seconds_in_flight
    leader.step(8.0)  # sent at 8, answered (successfully) at 17
    leader.api.during_put = None
    assert leader.leading_at(17.9)
    # 10 s after the renewal was *sent*, not after it returned: another replica counts from the
    # renewTime it carries (the send), so leading on to 27 could overlap its first writes
    assert not leader.leading_at(18.0)
    assert leader.stopped == 0  # the clock ended it; the thread has not looked yet


def test_failing_renewals_end_leadership_exactly_at_the_deadline(server: FakeAPIServer) -> None:
    leader = Leader(server)
    leader.step(0.0)
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=100))
    waits = [leader.step(at) for at in (2.0, 4.0, 6.0, 8.0)]
    assert leader.stopped == 0 and leader.leading_at(9.999)
    assert waits[-1] == pytest.approx(2.0) and leader.step(9.0) == pytest.approx(1.0), "the next try is at the deadline"
    assert not leader.leading_at(10.0)
    leader.step(10.0)
    assert leader.stopped == 1 and leader.started == 1


def test_a_hanging_renewal_cannot_keep_leadership(server: FakeAPIServer) -> None:
    leader = Leader(server)
    leader.step(0.0)
    release, entered = threading.Event(), threading.Event()

    def hang() -> None:
        entered.set()
        assert release.wait(30), "the test never released the renewal"

    leader.api.during_put = hang
    worker = threading.Thread(target=leader.step, args=(2.0,), daemon=True)
    worker.start()
    assert entered.wait(10)
    assert leader.leading_at(9.999)
    assert not leader.leading_at(10.0), "leadership lapses by the clock while the renewal hangs"
    leader.api.during_put = None
    leader.clocks.now = 12.5
    release.set()
    worker.join(10)
    # it went through, sent at 2: the Lease says renewed at 2, so the deadline is 12, already past
    assert not worker.is_alive() and not leader.leading_at(12.5)
    leader.step(12.5)  # the next renewal, sent now, makes it the leader again without a new start
    assert leader.leading_at(12.5) and leader.started == 1


def test_another_replica_takes_over_only_after_the_lease_expires(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    second.step(0.0)  # the standby sees the record as written
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=3))
    for at in (2.0, 4.0, 6.0):
        first.step(at)
    second.step(14.9)  # seen unchanged since 0, a 15 s lease: still held
    assert second.started == 0
    second.step(15.1)
    assert second.started == 1 and not first.leading_at(15.1)
    assert second.elector.holder == "replica-2"


def _lease(server: FakeAPIServer) -> dict[str, Any]:
    lease = server.get("coordination.k8s.io", "leases", "default", "memcached-gitops-leader")
    assert lease is not None
    return lease


def test_client_gos_timings_are_the_defaults(server: FakeAPIServer) -> None:
    elector = LeaderElector(KubeAPI.connect(host=server.url), "default", "me")
    assert (elector.duration, elector.renew_deadline, elector.retry_period) == (15, 10.0, 2.0)
    assert elector.name == "memcached-gitops-leader" and elector.holder == "" and not elector.is_leader()


def test_the_lease_is_written_as_client_go_writes_it(server: FakeAPIServer) -> None:
    leader = Leader(server)
    holders: list[str] = []
    assert leader.elector.step(leader._on_started, leader._on_stopped, holders.append) == 2.0  # a leader retries every 2 s
    spec = _lease(server)["spec"]
    assert spec == {"holderIdentity": "replica-1", "leaseDurationSeconds": 15, "acquireTime": "2026-11-24T12:00:00.000000Z",
                    "renewTime": "2026-11-24T12:00:00.000000Z", "leaseTransitions": 0}
    assert holders == ["replica-1"] and leader.elector.holder == "replica-1"
    first_version = _lease(server)["metadata"]["resourceVersion"]
    leader.step(2.25)
    renewed = _lease(server)
    assert renewed["spec"]["renewTime"] == "2026-11-24T12:00:02.250000Z"
    assert renewed["spec"]["acquireTime"] == "2026-11-24T12:00:00.000000Z" and renewed["spec"]["leaseTransitions"] == 0
    assert renewed["metadata"]["resourceVersion"] != first_version
    # the leader's renewal is one update of the Lease it holds; the first try read it and created it
    assert dict(leader.api.api.requests) == {"get": 1, "create": 1, "update": 1}


def test_a_takeover_counts_a_transition_and_the_old_leader_sees_the_new_holder(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    second.step(0.0)
    first.clocks.now = second.clocks.now = 16.0  # the first replica stopped renewing; its Lease expired at 15
    assert not first.elector.is_leader()
    second.step(16.0)
    spec = _lease(server)["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"], spec["acquireTime"]) == ("replica-2", 1, "2026-11-24T12:00:16.000000Z")
    holders: list[str] = []
    wait = first.elector.step(first._on_started, first._on_stopped, holders.append)
    assert holders == ["replica-2"] and not first.elector.is_leader() and first.elector.lease is None
    assert first.stopped == 1 and 2.0 <= wait <= 4.4, "a standby retries with client-go's jitter"


def test_a_lease_held_by_a_live_replica_is_left_alone(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    for at in (5.0, 14.999):
        second.step(at)
        assert second.started == 0 and second.elector.holder == "replica-1"
    assert _lease(server)["spec"]["holderIdentity"] == "replica-1"


def test_a_holder_whose_wall_clock_runs_ahead_keeps_its_lease_while_it_renews(server: FakeAPIServer) -> None:
    """A holder whose host runs an hour ahead writes renewTimes an hour in the future: a standby never
    reads that as expired (nor as too far off to trust) while the holder renews every retry period."""
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.elector.clock = lambda: first.clocks.datetime() + dt.timedelta(hours=1)
    first.step(0.0)
    for at in range(2, 40, 2):
        first.step(float(at))
        second.step(at + 1.0)
    assert second.started == 0 and first.leading_at(38.0)
    assert _lease(server)["spec"]["holderIdentity"] == "replica-1"


def test_a_renewal_that_loses_a_race_rereads_the_lease(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    second.step(0.0)
    second.step(16.0)  # took the expired Lease: the first's copy is stale
    assert not first.elector.try_acquire_or_renew()  # its update is a 409, then the read sees replica-2
    assert first.elector.holder == "replica-2" and first.elector.lease is None


def test_a_lease_deleted_under_its_leader_is_created_again_at_its_next_renewal(server: FakeAPIServer) -> None:
    """A renewal answered 404 (someone deleted the Lease: an operator's cleanup, a namespace restored)
    falls back to the slow path, as client-go's tryAcquireOrRenew falls back on any failed fast-path
    update: the Lease is read, found absent and created again, so the replica still leads, and a
    lone replica is never left renewing a Lease that no longer exists."""
    leader = Leader(server)
    leader.step(0.0)
    assert leader.elector.is_leader()
    leader.api.api.request("DELETE", leader.elector.path, verb="delete")
    leader.api.sent.clear()
    leader.clocks.now = 2.0
    assert leader.elector.try_acquire_or_renew()
    assert [m for m, _, _ in leader.api.sent] == ["PUT", "GET", "POST"]
    lease = leader.api.api.request("GET", leader.elector.path)
    assert lease["spec"]["holderIdentity"] == "replica-1" and leader.elector.lease == lease


def test_a_holder_that_reads_its_own_lease_again_keeps_its_acquire_time_and_transitions(server: FakeAPIServer) -> None:
    """acquireTime says when the holder took the Lease: a renewal by that holder keeps it and the
    transitions, on the slow path too (a process restarted under the same identity, with no copy,
    reads the Lease first), as client-go's tryAcquireOrRenew copies both from the old record when the
    holder is itself (k8s.io/client-go tools/leaderelection/leaderelection.go)."""
    first = Leader(server)
    first.step(0.0)
    again = Leader(server)  # the same identity, no copy of the Lease: GET, then PUT
    again.step(3.0)
    assert again.started == 1 and [m for m, _, _ in again.api.sent] == ["GET", "PUT"]
    spec = _lease(server)["spec"]
    assert (spec["holderIdentity"], spec["acquireTime"], spec["renewTime"], spec["leaseTransitions"]) == (
        "replica-1", "2026-11-24T12:00:00.000000Z", "2026-11-24T12:00:03.000000Z", 0)


def test_release_hands_the_lease_over_at_once(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    first.elector.release()
    assert _lease(server)["spec"].get("holderIdentity") in (None, "") and first.elector.lease is None
    assert not first.elector.is_leader()
    second.step(1.0)  # no need to wait for the 15 s lease
    assert second.started == 1 and _lease(server)["spec"]["leaseTransitions"] == 1
    first.elector.release()  # nothing held: nothing sent
    assert first.api.api.requests["patch"] == 1


@pytest.mark.parametrize("refused", [False, True])
def test_a_releasing_leader_stops_leading_before_its_lease_is_given_up(server: FakeAPIServer, refused: bool) -> None:
    """Release is announced before it is sent: while the PATCH that clears holderIdentity is in flight
    (another replica may take the Lease the moment it lands), this one already says it does not lead,
    so no write of its own can start beside the next leader's; a release the server refuses too. As
    client-go's ReleaseOnCancel asks (tools/leaderelection/leaderelection.go, LeaderElectionConfig: the code
    the lease protects must end before the release)."""
    leader = Leader(server)
    leader.step(0.0)
    seen: list[bool] = []
    leader.api.during_patch = lambda: seen.append(leader.elector.is_leader())
    if refused:
        server.faults.append(Fault(method="PATCH", path_contains="/leases/", status=500, times=1))
    leader.elector.release()
    assert seen == [False] and not leader.elector.is_leader() and leader.elector.lease is None


def test_a_release_with_a_stale_copy_is_refused_and_changes_nothing(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    second.step(0.0)
    second.step(16.0)
    first.elector.release()  # conditional on the resourceVersion it read: a 409, logged
    assert _lease(server)["spec"]["holderIdentity"] == "replica-2" and first.elector.lease is None


def test_micro_time_is_utc_with_six_fractional_digits() -> None:
    from memcached_gitops.reconciler.client.leader import micro_time

    paris = dt.timezone(dt.timedelta(hours=1))
    assert micro_time(dt.datetime(2026, 11, 24, 13, 0, 0, 5, tzinfo=paris)) == "2026-11-24T12:00:00.000005Z"


LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases/memcached-gitops-leader"


def test_each_request_is_the_one_the_api_server_expects(server: FakeAPIServer) -> None:
    # transcript 15's exchanges: create with POST to the collection, renew with PUT carrying the
    # resourceVersion read, release with a merge patch conditional on it
    leader = Leader(server)
    leader.step(0.0)
    leader.step(2.0)
    held = leader.elector.lease["metadata"]["resourceVersion"]  # what the renewal got back
    leader.elector.release()
    (get, _, _), (post, collection, create), (put, path, update), (patch, release_path, release) = leader.api.sent
    assert (get, post, put, patch) == ("GET", "POST", "PUT", "PATCH")
    assert collection == "/apis/coordination.k8s.io/v1/namespaces/default/leases" and path == release_path == LEASE_PATH
    assert create == {"verb": "create", "body": {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "memcached-gitops-leader", "namespace": "default"},
        "spec": {"holderIdentity": "replica-1", "leaseDurationSeconds": 15, "acquireTime": "2026-11-24T12:00:00.000000Z",
                 "renewTime": "2026-11-24T12:00:00.000000Z", "leaseTransitions": 0}}}
    assert update["verb"] == "update" and update["body"]["apiVersion"] == "coordination.k8s.io/v1" and update["body"]["kind"] == "Lease"
    assert update["body"]["metadata"]["resourceVersion"] and update["body"]["spec"]["renewTime"] == "2026-11-24T12:00:02.000000Z"
    assert release == {"verb": "patch", "content_type": "application/merge-patch+json", "body": {
        "metadata": {"resourceVersion": held}, "spec": {"holderIdentity": None}}}
    assert dict(leader.api.api.requests) == {"get": 1, "create": 1, "update": 1, "patch": 1}


def test_the_holders_own_lease_duration_decides_expiry(server: FakeAPIServer) -> None:
    patient, other = Leader(server), Leader(server)
    patient.elector.duration = 30  # a holder that asked for 30 s
    other.elector.identity = "replica-2"
    patient.step(0.0)
    other.step(0.0)
    other.step(29.999)
    assert other.started == 0, "held for the holder's 30 s, not for our 15"
    other.step(30.0)  # client-go: valid while renewTime + duration is After(now); at equality it is not
    assert other.started == 1 and _lease(server)["spec"]["leaseDurationSeconds"] == 15


def test_a_lease_without_transitions_counts_from_zero(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    lease = _lease(server)
    del lease["spec"]["leaseTransitions"]  # as a Lease written by another tool may be
    first.api.api.request("PUT", LEASE_PATH, body=lease)
    second.step(0.0)
    second.step(16.0)
    assert _lease(server)["spec"]["leaseTransitions"] == 1


def test_what_the_log_says(server: FakeAPIServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memcached_gitops.leader")
    leader, other = Leader(server), Leader(server)
    other.elector.identity = "replica-2"
    leader.step(0.0)
    other.step(0.0)
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=100))
    leader.step(10.0)
    server.faults.clear()
    leader.elector.lease = None  # no copy held: the next try reads the Lease first
    server.faults.append(Fault(method="GET", path_contains="/leases/", status=500, times=1))
    assert not leader.elector.try_acquire_or_renew()
    other.step(16.0)
    leader.step(17.0)  # re-reads the Lease: replica-2's now
    leader.elector.lease = {**_lease(server), "metadata": {**_lease(server)["metadata"], "resourceVersion": "1"}}
    leader.elector.release()  # a stale copy: the conditional patch is refused
    said = [(r.levelname, r.getMessage().split(": HTTP")[0]) for r in caplog.records]
    assert said == [
        ("INFO", "became the leader (replica-1)"),
        ("WARNING", "Lease default/memcached-gitops-leader"),
        ("ERROR", "could not renew the Lease within 10s: stopped leading"),
        ("WARNING", "cannot read the Lease"),
        ("INFO", "became the leader (replica-2)"),
        ("WARNING", "could not release the Lease"),
    ]
    assert all("HTTP " in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


def test_a_takeover_counts_on_from_the_leases_transitions_and_survives_a_lost_race(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    lease = _lease(server)
    lease["spec"]["leaseTransitions"] = 5
    first.api.api.request("PUT", LEASE_PATH, body=lease)
    second.step(0.0)
    second.clocks.now = 16.0
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=409, times=1))
    assert not second.elector.try_acquire_or_renew() and second.elector.lease is None  # another candidate wrote first
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=1))
    with pytest.raises(APIError):
        second.elector.try_acquire_or_renew()  # anything else is the caller's (step logs it and retries)
    assert second.elector.try_acquire_or_renew()
    assert _lease(server)["spec"]["leaseTransitions"] == 6 and second.api.api.requests["update"] == 3  # each try an update


def test_the_waits_between_tries(server: FakeAPIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[float, float]] = []
    monkeypatch.setattr("memcached_gitops.reconciler.client.leader.random.uniform", lambda a, b: asked.append((a, b)) or 1.5)
    leader, standby = Leader(server), Leader(server)
    standby.elector.identity = "replica-2"
    leader.clocks.now = standby.clocks.now = 100.0
    assert leader.step(100.0) == 2.0  # a leader: every retry period
    assert standby.step(100.0) == 3.0 and asked == [(1.0, 2.2)]  # a standby: client-go's jitter
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=100))
    assert leader.step(105.0) == 2.0 and leader.step(109.5) == pytest.approx(0.5), "the next try falls on the deadline"
    assert leader.leading_at(109.999) and not leader.leading_at(110.0)


def test_run_tries_until_stopped(server: FakeAPIServer) -> None:
    leader = Leader(server)
    stop = threading.Event()
    holders: list[str] = []
    leader.elector.run(stop, stop.set, leader._on_stopped, holders.append)  # stops itself once it leads
    assert holders == ["replica-1"] and leader.elector.is_leader() and leader.stopped == 0


def test_micro_time_is_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from memcached_gitops.reconciler.client.leader import micro_time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert micro_time(START) == "2026-11-24T12:00:00.000000Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_two_candidates_creating_the_lease_at_once(server: FakeAPIServer) -> None:
    leader = Leader(server)
    server.faults.append(Fault(method="POST", path_contains="/leases", status=409, times=1))
    assert not leader.elector.try_acquire_or_renew()  # the other candidate created it first
    server.faults.append(Fault(method="POST", path_contains="/leases", status=500, times=1))
    with pytest.raises(APIError):
        leader.elector.try_acquire_or_renew()
    assert leader.elector.try_acquire_or_renew() and leader.elector.holder == "replica-1"


def test_a_released_lease_has_no_holder_to_report(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    first.elector.release()
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=1))
    holders: list[str] = []
    second.clocks.now = 1.0
    second.elector.step(second._on_started, second._on_stopped, holders.append)
    assert holders == [""] and second.started == 0


def test_a_lease_without_a_duration_is_read_with_ours(server: FakeAPIServer) -> None:
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    lease = _lease(server)
    del lease["spec"]["leaseDurationSeconds"]
    first.api.api.request("PUT", LEASE_PATH, body=lease)
    second.step(0.0)
    second.step(14.9)
    assert second.started == 0
    second.step(15.0)
    assert second.started == 1


def test_a_lease_without_a_spec_is_held_by_nobody_and_taken(server: FakeAPIServer) -> None:
    """A Lease another tool created bare (``kubectl create`` of one with metadata only, or a Lease
    whose spec a person removed) names no holder: client-go reads the zero LeaseSpec as held by
    nobody and takes it, so the replica must too, never stop campaigning on it."""
    leader = Leader(server)
    leader.api.api.request("POST", LEASE_PATH.rsplit("/", 1)[0], body={
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": LEASE_PATH.rsplit("/", 1)[1],
                                                                                "namespace": "default"}})
    assert "spec" not in _lease(server), "created bare"
    leader.step(0.0)
    assert leader.started == 1 and leader.leading_at(0.0)
    assert _lease(server)["spec"]["holderIdentity"] == "replica-1"


def test_a_lost_renewal_race_then_a_lost_create_race_leaves_no_stale_copy(server: FakeAPIServer) -> None:
    leader = Leader(server)
    leader.step(0.0)
    server.faults += [Fault(method="PUT", path_contains="/leases/", status=409, times=1),
                      Fault(method="GET", path_contains="/leases/", status=404, times=1),
                      Fault(method="POST", path_contains="/leases", status=409, times=1)]
    assert not leader.elector.try_acquire_or_renew() and leader.elector.lease is None
    assert leader.elector.try_acquire_or_renew()  # reads the Lease afresh: still its own
    assert all(method.isupper() for method, _, _ in leader.api.sent)


def test_run_calls_back_when_leadership_is_lost(server: FakeAPIServer) -> None:
    leader = Leader(server)
    stop = threading.Event()

    def started() -> None:
        leader.clocks.now += 11.0  # the next renewal comes too late, and fails
        server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=100))

    leader.elector.retry_period = 0.01
    leader.elector.run(stop, started, stop.set)  # stops itself once it has lost the lead
    assert not leader.elector.is_leader() and stop.is_set()


def test_a_failed_renewal_that_returns_past_the_deadline_stops_leadership_in_that_step(server: FakeAPIServer) -> None:
    """A try sent before the deadline that fails after it (here: sent at 9, a 500 at 11) ends
    leadership when it returns: the deadline is read by the clock then, not at the send, so the
    workers are told to stop at once and a later success is a new start."""
    leader = Leader(server)
    leader.step(0.0)
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=1))

    def two_seconds_in_flight() -> None:
        leader.clocks.now += 2.0

    leader.api.during_put = two_seconds_in_flight
    wait = leader.step(9.0)
    leader.api.during_put = None
    assert leader.stopped == 1 and not leader.elector.is_leader() and wait >= 2.0
    leader.step(13.0)
    assert leader.started == 2 and leader.leading_at(13.0)


def test_a_holder_whose_wall_clock_runs_behind_keeps_its_lease_while_it_renews(server: FakeAPIServer) -> None:
    """A standby judges the holder by when it *saw* the Lease change (its own clock), not by the
    renewTime the holder wrote with another host's clock: client-go's leaderelection keeps an
    observedTime for the record it read and takes the Lease only once that record has not changed
    for leaseDurationSeconds (kubernetes/leaderelection/leaderelection.py in the venv:
    observed_time_milliseconds, ``observed_time_milliseconds + lease_duration * 1000 > now``). A
    holder whose host runs a minute behind writes renewTimes a minute in the past, and renews every
    2 s: taking its Lease makes two leaders."""
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.elector.clock = lambda: first.clocks.datetime() - dt.timedelta(minutes=1)
    first.step(0.0)
    for at in range(2, 40, 2):
        first.step(float(at))
        second.step(at + 1.0)
    assert second.started == 0 and first.leading_at(38.0), "two leaders: the live holder's Lease was taken"
    assert _lease(server)["spec"]["holderIdentity"] == "replica-1"


def test_a_standby_whose_wall_clock_steps_forward_does_not_take_a_live_lease(server: FakeAPIServer) -> None:
    """An NTP step (or a resume from suspend) that moves the standby's wall clock an hour forward
    does not make the renewing holder's Lease look expired: expiry is counted on the standby's own
    observation of the record, as client-go counts it."""
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    second.step(1.0)
    second.elector.clock = lambda: second.clocks.datetime() + dt.timedelta(hours=1)
    first.step(2.0)
    second.step(3.0)
    assert second.started == 0 and _lease(server)["spec"]["holderIdentity"] == "replica-1"


def test_a_dead_holder_whose_clock_ran_ahead_is_taken_over_a_lease_after_it_was_last_seen(server: FakeAPIServer) -> None:
    """A holder that wrote renewTimes an hour in the future and died is taken over once the standby
    has seen its record unchanged for leaseDurationSeconds, not an hour later: the cluster would be
    without a leader for as long as the holder's clock was ahead."""
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.elector.clock = lambda: first.clocks.datetime() + dt.timedelta(hours=1)
    first.step(0.0)
    second.step(0.5)  # the standby sees the record; the holder never renews again
    second.step(15.0)
    assert second.started == 0, "still within a lease of when the record was seen"
    second.step(15.5)
    assert second.started == 1 and _lease(server)["spec"]["holderIdentity"] == "replica-2"


def test_a_write_that_leaves_the_record_alone_does_not_restart_its_expiry(server: FakeAPIServer) -> None:
    """client-go compares the leader-election record it reads (holder, times, transitions, duration),
    not the object: a dead holder's Lease that someone labels (a metadata write that sends the spec
    back, its keys in another order) still expires a lease after the record last changed."""
    first, second = Leader(server), Leader(server)
    second.elector.identity = "replica-2"
    first.step(0.0)
    second.step(0.0)
    lease = _lease(server)
    lease["metadata"].setdefault("labels", {})["team"] = "cache"
    lease["spec"] = dict(reversed(list(lease["spec"].items())))
    first.api.api.request("PUT", LEASE_PATH, body=lease)
    assert list(_lease(server)["spec"]) == list(lease["spec"]), "the spec is stored in the order it was sent"
    second.step(10.0)
    assert second.started == 0
    second.step(15.0)
    assert second.started == 1 and _lease(server)["spec"]["holderIdentity"] == "replica-2"
