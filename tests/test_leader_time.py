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
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from memcached_gitops.reconciler.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.leader import LeaderElector

from .fakeapi.server import FakeAPIServer, Fault

START = dt.datetime(2026, 11, 24, 12, 0, 0, tzinfo=dt.UTC)


class Clocks:
    """One fake time for both of the elector's clocks."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> dt.datetime:
        return START + dt.timedelta(seconds=self.now)


class InFlight:
    """The elector's API, with a hook run while a Lease renewal (a PUT) is in flight."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self.during_put: Any = None

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method == "PUT" and self.during_put is not None:
            self.during_put()
        return self.api.request(method, path, **kwargs)


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(namespaces=("default",)) as api:
        yield api


class Leader:
    def __init__(self, server: FakeAPIServer) -> None:
        self.clocks = Clocks()
        kube = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=1, base=0.01, cap=0.01))
        self.api = InFlight(kube)
        self.elector = LeaderElector(self.api, "default", "replica-1", duration=15, clock=self.clocks.wall,
                                     renew_deadline=10.0, retry_period=2.0, monotonic=self.clocks.monotonic)
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
    server.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=3))
    for at in (2.0, 4.0, 6.0):
        first.step(at)
    second.step(14.9)  # renewTime 0 + 15 s lease: still held
    assert second.started == 0
    second.step(15.1)
    assert second.started == 1 and not first.leading_at(15.1)
    assert second.elector.holder == "replica-2"
