"""Replicas of a shard ring on the fake API server, with time as an input: ``replica`` builds one,
``sync`` hands it what its Lease informer would deliver, ``settle_ring`` lets every replica's watch
catch up and its Lease thread take a turn, and ``no_two_writers`` checks the ring's promise (at most
one replica may write each CR) on 600 CR keys."""

from __future__ import annotations

import datetime as dt
import json

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.shards import RING_LABEL, ShardRing, key_text

from fakeapi.server import FakeAPIServer
from tests.support.clock import ManualClock

START = dt.datetime(2026, 11, 25, 12, 0, 0, tzinfo=dt.UTC)


KEYS = [(f"ns-{i % 7}", f"cache-{i}") for i in range(600)]


LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def replica(server: FakeAPIServer, clock: ManualClock, identity: str) -> ShardRing:
    api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=1), user_agent=f"memcached-gitops/1 {identity}")
    ring = ShardRing(api, "default", identity, monotonic=clock, clock=clock.datetime)
    ring.agreements = 0  # type: ignore[attr-defined]

    def agreed() -> None:
        ring.agreements += 1  # type: ignore[attr-defined]

    ring.on_agreed = agreed
    return ring


def leases(server: FakeAPIServer) -> list[dict]:
    """The ring's Leases, as a LIST answers."""
    status, _, body = server.handle("GET", f"{LEASES}?labelSelector={RING_LABEL}%3Dmemcached-gitops", {}, b"")
    assert status == 200
    return json.loads(body)["items"]


def sync(server: FakeAPIServer, ring: ShardRing) -> None:
    """What the Lease informer delivers once its watch is current: every Lease of the ring, and the
    DELETED event of every member it knew that is gone."""
    listed = leases(server)
    names = {lease["metadata"]["name"] for lease in listed}
    for name in set(ring.peers) - names:
        ring.on_lease("DELETED", {"metadata": {"name": name}})
    for lease in listed:
        ring.on_lease("MODIFIED", lease)
    ring.listed = True


def settle_ring(server: FakeAPIServer, rings: list[ShardRing], rounds: int = 3) -> None:
    """Each replica's watch catches up and its Lease thread takes a turn, a few times (no time passes)."""
    for _ in range(rounds):
        for ring in rings:
            sync(server, ring)
            ring.step()
            no_two_writers(rings)


def no_two_writers(rings: list[ShardRing]) -> dict[str, int]:
    """At most one replica may write each CR; returns how many CRs each may write."""
    share = {r.identity: 0 for r in rings}
    for key in KEYS:
        writers = [r.identity for r in rings if r.allowed(key)]
        assert len(writers) <= 1, f"{key_text(key)} has two writers: {writers}"
        for w in writers:
            share[w] += 1
    return share


def start(server: FakeAPIServer, clock: ManualClock, *names: str) -> list[ShardRing]:
    rings = []
    for name in names:
        ring = replica(server, clock, name)
        ring.join()
        rings.append(ring)
        settle_ring(server, rings)
    return rings
