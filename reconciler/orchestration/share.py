"""--shards: the share of the CRs that the ring (client/shards.py) gives this replica, followed.

Every replica serves a share instead of one leader serving all. This is what a replica does with
its share: it joins the ring before its caches sync (so the peers see it at once), keeps in its
Deployment, Service and PodDisruptionBudget caches only its share's objects (and re-lists them when
the share grows), queues the
CRs that come to it at a bounded rate, keeps the keys of its own that arrive while the ring settles,
and spaces out the status writes whose only change is ``servedBy``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from memcached_gitops.foundation.clocks import SYSTEM_CLOCK, Clock, Monotonic

from ..client.api import APIError
from ..client.caches import Caches, Key, owner_name
from ..client.informer import key_of
from ..client.shards import ShardRing
from ..client.workqueue import WorkQueue
from ..decisions.selectors import has_kept_selector
from ..decisions.vocabulary import COMPANIONS, DEPLOYMENTS, LEASES

log = logging.getLogger("memcached_gitops.controller")
#: The CRs that come to a replica's share are queued at most this many a second. Such a visit
#: compares from the cache and writes only to correct drift; a status whose only change is servedBy
#: is written later, at most SERVED_BY_RATE a second, so that the drift events that come meanwhile
#: never wait behind a thousand status writes (about 100 a second on a busy 2-core node).
SWEEP_RATE = 1000.0
SERVED_BY_RATE = 50.0
#: The kinds whose stores hold only this replica's share (``cache_filters``): pruned when the share
#: shrinks, listed again when it grows.
SHARED_KINDS = (DEPLOYMENTS.kind, *(r.kind for r in COMPANIONS))


def cache_filters(ring: ShardRing) -> dict[str, Callable[[dict[str, Any]], bool]]:
    """What the caches keep with --shards: the Deployments of this replica's share (and every one
    with a kept selector, the overlap report's neighbours), the largest objects by far, and the
    Services and budgets of its share; each kept with its managedFields, and each found by the CR
    that owns it (owner_name), as the Deployment is. CRs, Pods (metadata only) and HPAs are small
    and all kept, so that a CR handed over is served from the cache at once: its Deployment and
    companions are read by one GET each, or come with the LIST that follows the hand-over."""

    def owned(obj: dict[str, Any]) -> bool:
        return ring.caches((key_of(obj)[0], owner_name(obj)))

    def deployment(obj: dict[str, Any]) -> bool:
        return has_kept_selector(obj) or owned(obj)

    return {kind: deployment if kind == DEPLOYMENTS.kind else owned for kind in SHARED_KINDS}


class Share:
    """This replica's share of the ring: what it caches, queues and defers."""

    def __init__(self, ring: ShardRing, caches: Caches, queue: WorkQueue[Key], stop: threading.Event,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.ring, self.caches, self.queue, self.stop = ring, caches, queue, stop
        self.clock = clock  # the settle and sync waits of a join, and the servedBy slots
        self.changed = threading.Event()  # the ring's view changed: the Deployment cache may follow
        self.cached_members: frozenset[str] = frozenset()
        self.refill_pending = False  # the share grew and its Deployments are not listed yet
        self.served: set[Key] = set()  # the share as last acknowledged
        self.waiting: set[Key] = set()  # our keys that came while the ring was settling
        self.lock = threading.Lock()  # for waiting, sweeping and the servedBy slots
        self.sweeping: set[Key] = set()  # new to the share, not visited yet: servedBy may wait
        self.next_served_by = Monotonic(0.0)
        self.error = ""

    def owned(self, keys: list[Key]) -> list[Key]:
        return [k for k in keys if self.ring.owns(k)]

    def on_view(self) -> None:
        self.changed.set()

    def take_sweeping(self, key: Key) -> bool:
        """Whether ``key`` is new to the share and not visited yet (its servedBy may wait); now it is."""
        with self.lock:
            lazy = key in self.sweeping
            self.sweeping.discard(key)
            return lazy

    def follow(self) -> None:
        """When the members change, drop the Deployments, Services and budgets that left this
        replica's share and LIST those that joined it (the ones not read meanwhile by a reconcile's GET)."""
        while not self.stop.is_set():
            if not self.changed.wait(0.5):
                continue
            self.changed.clear()
            members = self.ring.cache_members()
            if members == self.cached_members and not self.refill_pending:
                continue
            # a member left (its CRs come to the others), or the last LIST for that failed
            self.refill_pending = self.refill_pending or bool(self.cached_members - members)
            self.cached_members = members
            informers = [i for kind in SHARED_KINDS for i in self.caches.informers[kind]]
            dropped = sum(i.store.prune() for i in informers)
            added = 0
            if self.refill_pending:
                try:
                    # no event per Deployment: the sweep of the new CRs (on_agreed) visits them at its pace
                    added = sum(i.refill(emit=False) for i in informers)
                    self.refill_pending = False
                except APIError as exc:
                    log.warning("cannot list the Deployments, Services or budgets of the grown share: %s; trying again", exc)
                    self.changed.set()
                    self.stop.wait(1.0)
            log.info("shard members %s: %d Deployments, Services and budgets dropped from the cache, %d added",
                     ", ".join(sorted(members)), dropped, added)

    def on_agreed(self) -> None:
        """The ring acknowledged this replica in a new view: the CRs new to its share are queued, at
        most SWEEP_RATE a second, for a visit that corrects their drift at once and leaves a change of
        status.servedBy alone for later (``served_by_slot``); the CRs it kept are served already."""
        owned = set(self.owned(self.caches.cr_keys()))
        with self.lock:
            waiting, self.waiting = self.waiting, set()
        new = sorted(owned - self.served)
        self.served = owned
        for key in sorted(waiting & owned):
            self.queue.add(key)  # their events came while the ring was settling
        with self.lock:
            self.sweeping |= set(new)
        for n, key in enumerate(new):
            self.queue.add_after(key, n / SWEEP_RATE)

    def served_by_slot(self) -> float:
        """The delay of the next deferred servedBy write: one every 1/SERVED_BY_RATE s, from a second on."""
        with self.lock:
            now = self.clock.monotonic()
            self.next_served_by = max(now + 1.0, self.next_served_by + 1.0 / SERVED_BY_RATE)
            return self.next_served_by - now

    def wait_for_ring(self, key: Key) -> None:
        """A key this replica may not write now: another replica's (dropped), or its own while the
        ring has not acknowledged it yet or its fence is down (kept for the next acknowledgement)."""
        if self.ring.owns(key):
            with self.lock:
                self.waiting.add(key)

    def join(self, started: Monotonic, timeout: float | None) -> bool:
        """Create our Lease, list the ring's, and start the Lease thread before the other caches sync,
        so that the members see this one acknowledge them at once (they wait for it). False, with
        ``error`` ("" when stopped), when it could not."""
        ring = self.ring
        try:
            ring.join()  # our Lease first: a member that lists after this sees us
        except APIError as exc:
            self.error = f"cannot create the shard Lease: {exc}"
            return False
        [leases] = self.caches.informers[LEASES.kind]
        leases.start()
        while not leases.synced.wait(0.05):
            if self.stop.is_set() or leases.error or (timeout is not None and self.clock.monotonic() > started + timeout):
                self.error = leases.error or ("" if self.stop.is_set() else "the shard Leases did not sync")
                return False
        ring.listed = True
        threading.Thread(target=ring.run, args=(self.stop,), daemon=True, name="shard-lease").start()
        # Replicas of one Deployment start together: give the others one renew period to appear, and the
        # ring time to acknowledge this one, so that the caches start from this replica's share (a cache
        # that starts with everything and is pruned later keeps its peak memory).
        settle = self.clock.monotonic() + ring.retry_period
        while not self.stop.is_set() and (self.clock.monotonic() < settle or not ring.acknowledged()):
            if self.clock.monotonic() > settle + 4 * ring.retry_period:
                break  # a member that never answers: its share waits for its expiry, ours need not
            self.stop.wait(0.02)
        self.cached_members = ring.cache_members()  # the other caches start from this share
        threading.Thread(target=self.follow, daemon=True, name="shard-share").start()
        return True
