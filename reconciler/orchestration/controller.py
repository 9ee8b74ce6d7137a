"""The event-driven mode (the Deployment): informers, a work queue, workers, a Lease, a resync.

- Four informers (informer.py) mirror Memcacheds, Deployments and Pods by our label, and the
  HorizontalPodAutoscalers in scope (autoscalers.py) into memory. Every event puts the key of the
  CR it concerns on the work queue (workqueue.py), at once: no batching window, no polling.
- ``workers`` threads each take one key and reconcile that CR from the cache with the per-CR
  step that ``--once`` uses (Reconciler.reconcile_cr): no GET, one apply per correction, at most
  one status write. What our writes return goes into the cache (write-through), so the events
  they cause find nothing to do: a status write's MODIFIED event ends in "no change, no write".
- A field that another manager keeps undoing is a fight (fights.py): the CR backs off with a
  growing delay and is Degraded, with a Warning Event and a metric.
- Leader election runs in its own thread (leader.py); only the leader's workers write, and a
  leader that cannot renew in time stops writing at once. The informers run on every replica,
  so a standby that takes over starts from a warm cache.
- Every ``resync`` seconds every CR in the cache is queued again: a safety net that costs no
  request unless something drifted.
- With ``shards`` (shards.py) every replica serves a share of the CRs instead: each holds a Lease
  of its own, a fifth informer watches the ring's Leases, a worker reconciles only the CRs the ring
  gives this replica, and every write is gated per CR (never two writers for one CR).
- SIGTERM (``stop``): workers finish their current CR, the Lease is released, ``run`` returns 0.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from memcached_gitops.foundation.clocks import SYSTEM_CLOCK, Clock

from ..client.api import APIError, KubeAPI, RetryPolicy
from ..client.informer import Informer, Kind, key_of, slim
from ..client.leader import LeaderElector
from ..client.shards import RING_LABEL, ShardRing
from ..client.workqueue import WorkQueue
from ..decisions.autoscalers import scale_target
from ..decisions.drift import Drift
from ..decisions.fights import FightDetector
from ..decisions.selectors import has_kept_selector, selector_of, template_labels
from ..decisions.vocabulary import AUTOSCALERS, COMPANIONS, DEPLOYMENTS, INSTANCE_LABEL, LEASES, PODS, SELECTOR, Action
from .cycle import CROutcome, Reconciler
from .metrics import Metrics

log = logging.getLogger("memcached_gitops.controller")
#: A full resync every 10 minutes. Events carry every change, so the resync only repairs what a
#: bug or a lost event could have missed; it reads the cache and writes nothing unless something
#: drifted, so it costs CPU (about 1 ms per CR), not API requests. 10 minutes is Flux's usual
#: interval and well under the 5-minute compaction window times two, so a missed event is repaired
#: quickly; controller-runtime's 10-hour default trusts the watch more than we need to.
DEFAULT_RESYNC = 600.0
#: --shards: the CRs that come to a replica's share are queued at most this many a second. Such a
#: visit compares from the cache and writes only to correct drift; a status whose only change is
#: servedBy is written later, at most SERVED_BY_RATE a second, so that the drift events that come
#: meanwhile never wait behind a thousand status writes (about 100 a second on a busy 2-core node).
SWEEP_RATE = 1000.0
SERVED_BY_RATE = 50.0


@dataclass
class Settings:
    workers: int = 4
    resync: float = DEFAULT_RESYNC
    watch_timeout: int = 300  # client-go's minimum watch timeout
    heartbeat: float = 60.0  # the watch cache's BOOKMARK period
    silence_grace: float = 10.0
    streaming_list: bool = True


class Controller:
    def __init__(self, reconciler: Reconciler, metrics: Metrics | None = None, elector: LeaderElector | None = None,
                 settings: Settings | None = None, fights: FightDetector | None = None, shards: ShardRing | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.reconciler, self.api = reconciler, reconciler.api
        self.metrics = metrics or Metrics()
        self.metrics.api_requests = self.api.requests
        self.elector = elector
        self.settings = settings or Settings()
        self.fights = fights or FightDetector()
        self.clock = clock  # the fights' deadlines and the work timings: one monotonic clock
        self.stop = reconciler.stop
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue()  # CR keys: namespace and name
        self.metrics.workers(self.settings.workers, lambda: len(self.queue))
        self.leading = threading.Event()
        self.shards = shards
        if shards is not None:
            self.leading.set()  # every member leads its own share; the ring gates each CR
            self.api.may_write = shards.may_write
            shards.on_agreed = self._queue_share
            shards.on_view = self._share_changed_set
            shards.on_handover = self.metrics.observe_handover
            self.metrics.shard_owned.set_function(lambda: len(self.owned_keys()))
            self.metrics.shard_members.set_function(lambda: len(shards.view))
        elif elector is None:
            self.leading.set()
        else:
            self.api.may_write = elector.is_leader
        crd = reconciler.crd
        self.kinds = {
            "Memcached": Kind("Memcached", crd.group, reconciler.version, crd.plural),
            "Deployment": Kind(DEPLOYMENTS.kind, *DEPLOYMENTS.gvr, SELECTOR, keep_managed_fields=True),
            "Pod": Kind(PODS.kind, *PODS.gvr, SELECTOR, metadata_only=True),
            # every HPA in scope (they are the users' objects, without our labels): which one scales a CR's Deployment
            AUTOSCALERS.kind: Kind(AUTOSCALERS.kind, *AUTOSCALERS.gvr),
            # the Service and the budget beside each Deployment (decisions/companions.py)
            **{r.kind: Kind(r.kind, *r.gvr, SELECTOR, keep_managed_fields=True) for r in COMPANIONS},
        }
        self.informers = self._build_informers(reconciler.options.namespaces or (None,))
        self.metrics.health_checks.append(self.stalled_informer)
        self._share_changed = threading.Event()
        self._cached_members: frozenset[str] = frozenset()
        self._refill_pending = False  # the share grew and its Deployments are not listed yet
        self._served: set[tuple[str, str]] = set()  # the share as last acknowledged (--shards)
        self._waiting: set[tuple[str, str]] = set()  # our keys that came while the ring was settling
        self._waiting_lock = threading.Lock()
        self._sweeping: set[tuple[str, str]] = set()  # new to the share, not visited yet: servedBy may wait
        self._next_served_by = 0.0
        self._pods: dict[tuple[str, str], set[str]] = {}
        self._pods_lock = threading.Lock()
        self._kept: dict[str, set[str]] = {}  # namespace -> Deployments with a kept selector (selectors.py)
        self._kept_lock = threading.Lock()
        self._autoscalers: dict[tuple[str, str], set[str]] = {}  # a scaled Deployment -> the HPAs that name it
        self._autoscalers_lock = threading.Lock()
        self._schema: tuple[frozenset[str] | None, frozenset[str] | None] = (None, None)
        self.synced_after: float | None = None  # seconds from start to the first complete sync
        self.resyncs = 0
        self.error = ""

    def _build_informers(self, scopes: tuple[str | None, ...]) -> dict[str, list[Informer]]:
        """An informer per kind and namespace in scope, and with --shards one for the ring's Leases."""
        s, shards = self.settings, self.shards
        keep = self._share_filters() if shards is not None else {}
        informers = {
            name: [Informer(self.api, kind, self.on_event, namespace=ns, metrics=self.metrics, watch_timeout=s.watch_timeout,
                            heartbeat=s.heartbeat, silence_grace=s.silence_grace, streaming_list=s.streaming_list,
                            keep=keep.get(name))
                   for ns in scopes]
            for name, kind in self.kinds.items()
        }
        if shards is not None:
            lease = Kind(LEASES.kind, *LEASES.gvr, f"{RING_LABEL}={shards.ring}")
            self.kinds["Lease"] = lease
            informers["Lease"] = [Informer(self.api, lease, self.on_event, namespace=shards.namespace, metrics=self.metrics,
                                           watch_timeout=s.watch_timeout, heartbeat=s.heartbeat, silence_grace=s.silence_grace,
                                           streaming_list=s.streaming_list)]
        return informers

    # ---- the cache
    def cached(self, kind: str, key: tuple[str, str]) -> dict[str, Any] | None:
        """The object of ``kind`` at ``key`` in the informers' stores (None when not cached)."""
        for informer in self.informers[kind]:
            if informer.namespace in (None, key[0]):
                return informer.store.get(key)
        return None

    def _put(self, kind: str, obj: dict[str, Any]) -> None:
        ns = key_of(obj)[0]
        for informer in self.informers[kind]:
            if informer.namespace in (None, ns):
                informer.store.put_if_newer(slim(self.kinds[kind], obj))

    def stalled_informer(self) -> str | None:
        """Why an informer stopped making progress, or None: the liveness probe (Metrics.liveness)."""
        for group in list(self.informers.values()):
            for informer in group:
                problem = informer.stalled()
                if problem:
                    return problem
        return None

    def cr_keys(self) -> list[tuple[str, str]]:
        return [k for informer in self.informers["Memcached"] for k in informer.store.keys()]

    def owned_keys(self) -> list[tuple[str, str]]:
        """The CRs this replica serves: all of them, or its share of the ring."""
        keys = self.cr_keys()
        return keys if self.shards is None else [k for k in keys if self.shards.owns(k)]

    def pods_of(self, key: tuple[str, str]) -> tuple[str, ...]:
        with self._pods_lock:
            return tuple(sorted(self._pods.get(key, ())))

    # ---- events
    def on_event(self, kind: str, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, arrived: float) -> None:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace", "")
        if kind == "Memcached":
            key = (ns, meta.get("name", ""))
            if type_ == "DELETED":
                self.fights.forget(key)  # the garbage collector removes its Deployment (transcript 36)
                return
            self.queue.add(key, arrived)
        elif kind == "Deployment":
            self.queue.add((ns, owner_name(obj)), arrived)
            for peer in self._kept_peers(type_, obj, old):
                self.queue.add((ns, peer), arrived)
        elif kind in COMPANION_KINDS:  # a Service or budget changed or went: its CR puts it back
            self.queue.add((ns, owner_name(obj)), arrived)
        elif kind == "Lease":
            if self.shards is not None:
                self.shards.on_lease(type_, obj)
        elif kind == "HorizontalPodAutoscaler":
            for target in self._track_autoscaler(type_, obj, old):
                self.queue.add(target, arrived)
        else:
            instance = (meta.get("labels") or {}).get(INSTANCE_LABEL)
            if not instance:
                return
            with self._pods_lock:
                names = self._pods.setdefault((ns, instance), set())
                before = len(names)
                if type_ == "DELETED":
                    names.discard(meta.get("name", ""))
                else:
                    names.add(meta.get("name", ""))
                changed = len(names) != before
            if changed:
                self.queue.add((ns, instance), arrived)

    def _kept_peers(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        """Track the Deployments with a kept selector; when one comes, goes, or changes its selector
        or Pod labels, the other such Deployments of its namespace, whose overlap report may change."""
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        kept = type_ != "DELETED" and has_kept_selector(obj)
        changed = (type_ in ("ADDED", "DELETED") or old is None or selector_of(old) != selector_of(obj)
                   or template_labels(old) != template_labels(obj))
        with self._kept_lock:
            names = self._kept.setdefault(ns, set())
            was = name in names
            if kept:
                names.add(name)
            else:
                names.discard(name)
            return sorted(names - {name}) if (kept or was) and changed else []

    def _track_autoscaler(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[tuple[str, str]]:
        """Index an HPA by the Deployment it scales; the Deployments whose replicas changed hands."""
        name = (obj.get("metadata") or {}).get("name", "")
        before = scale_target(old) if old is not None else None
        after = scale_target(obj) if type_ != "DELETED" else None
        with self._autoscalers_lock:
            if before is not None and before != after:
                self._autoscalers.get(before, set()).discard(name)
            if after is not None:
                self._autoscalers.setdefault(after, set()).add(name)
        return [t for t in {before, after} if t is not None]

    def autoscaler_of(self, key: tuple[str, str]) -> str:
        """The HPA that scales this CR's Deployment ("" when none): the first by name, as in the once mode."""
        with self._autoscalers_lock:
            names = self._autoscalers.get(key)
            return min(names) if names else ""

    def kept_deployments(self, ns: str) -> list[dict[str, Any]]:
        """The cached Deployments of ``ns`` with a kept selector (the overlap report's neighbours)."""
        with self._kept_lock:
            names = sorted(self._kept.get(ns, ()))
        return [d for d in (self.cached("Deployment", (ns, n)) for n in names) if d is not None]

    # ---- workers
    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            key, arrived = item
            started = self.clock.monotonic()
            self.metrics.busy(1)
            try:
                if not self.leading.is_set():
                    continue  # everything is queued again when this replica becomes the leader
                wait = self.fights.wait(key, started)
                if wait > 0:
                    self.queue.add_after(key, wait)
                    continue
                if self.shards is None:
                    self.reconcile(key, arrived)
                else:
                    with self.shards.serving(key) as ours:
                        if not ours:
                            self._wait_for_ring(key)
                            continue
                        self.reconcile(key, arrived)
                self.queue.forget(key)
            except Exception as exc:  # APIError, or a bug: this CR is retried with backoff, the others go on
                if isinstance(exc, APIError):
                    log.warning("%s/%s: %s; retrying with backoff", key[0], key[1], exc)
                else:
                    log.exception("%s/%s: reconcile failed", key[0], key[1])
                self.metrics.observe_retry()
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)
                self.metrics.busy(-1)
                self.metrics.observe_work(self.clock.monotonic() - started)

    def reconcile(self, key: tuple[str, str], arrived: float) -> CROutcome | None:
        """One CR from the cache (no GET); its writes' answers go back into the cache."""
        cr = self.cached("Memcached", key)
        if cr is None:
            return None
        live = self.cached("Deployment", key)
        declared, condition_fields = self._schema
        lazy = False
        if self.shards is not None:
            with self._waiting_lock:
                lazy = key in self._sweeping
                self._sweeping.discard(key)
        outcome = self.reconciler.reconcile_cr(cr, live, self.pods_of(key), declared, condition_fields,
                                               degraded=self._fight_check, neighbours=self.kept_deployments,
                                               autoscaler=self.autoscaler_of(key), lazy_served_by=lazy,
                                               companions=lambda resource, ns, name: self.cached(resource.kind, (ns, name)))
        if outcome.served_by_deferred:
            self.queue.add_after(key, self.served_by_slot())
        if outcome.deployment is not None:
            self._put("Deployment", outcome.deployment)
            if outcome.action == Action.CORRECTED:
                self.metrics.correction_latency.observe(outcome.applied_at - arrived)
        elif outcome.read is not None and self.shards is not None:
            for informer in self.informers["Deployment"]:  # read by a GET: kept unless the watch saw it go
                if informer.namespace in (None, key[0]):
                    informer.store.fill([slim(self.kinds["Deployment"], outcome.read)])
        for companion in outcome.companions:
            self._put(companion["kind"], companion)
        if outcome.cr is not None:
            self._put("Memcached", outcome.cr)
        self.metrics.observe_outcome(outcome)
        if outcome.action == Action.FAILED:
            raise APIError(0, outcome.error)
        return outcome

    def _fight_check(self, cr: dict[str, Any], corrected: list[Drift]) -> tuple[str, str] | None:
        """Record the corrections against other managers; the CR is Degraded while a fight lasts."""
        key = key_of(cr)
        now = self.clock.monotonic()
        ours = {self.reconciler.options.field_manager}
        for d in corrected:
            for manager in d.managers:
                if manager in ours:
                    continue
                fight = self.fights.record(key, f"{key[0]}/{key[1]}", d.field, manager, now)
                if fight is not None:
                    log.warning("%s/%s: fight: %s", key[0], key[1], fight.message)
                    self.metrics.fights.labels(fight.field, fight.manager).inc()
                    self.reconciler.events.record(cr, "Warning", "FightDetected", fight.message)
        fight = self.fights.active(key, now)
        return ("FieldManagerFight", fight.message) if fight else None

    # ---- leadership
    def started_leading(self) -> None:
        self.metrics.leader = True
        self.leading.set()
        for key in self.cr_keys():
            self.queue.add(key)

    def _share_filters(self) -> dict[str, Any]:
        """What the caches keep with --shards: the Deployments of this replica's share (and every one
        with a kept selector, the overlap report's neighbours), the largest objects by far (their
        managedFields are kept). CRs, Pods (metadata only) and HPAs are small and all kept, so that a
        CR handed over is served from the cache at once: its Deployment is read by one GET, or comes
        with the LIST that follows the hand-over."""
        shards = self.shards
        assert shards is not None

        def deployment(obj: dict[str, Any]) -> bool:
            return has_kept_selector(obj) or shards.caches((key_of(obj)[0], owner_name(obj)))

        return {"Deployment": deployment}
    def _share_changed_set(self) -> None:
        self._share_changed.set()

    def _follow_share(self) -> None:
        """With --shards: when the members change, drop the Deployments that left this replica's share
        and LIST those that joined it (the ones not read meanwhile by a reconcile's GET)."""
        assert self.shards is not None
        while not self.stop.is_set():
            if not self._share_changed.wait(0.5):
                continue
            self._share_changed.clear()
            members = self.shards.cache_members()
            if members == self._cached_members and not self._refill_pending:
                continue
            # a member left (its CRs come to the others), or the last LIST for that failed
            self._refill_pending = self._refill_pending or bool(self._cached_members - members)
            self._cached_members = members
            dropped = sum(i.store.prune() for i in self.informers["Deployment"])
            added = 0
            if self._refill_pending:
                try:
                    # no event per Deployment: the sweep of the new CRs (_queue_share) visits them at its pace
                    added = sum(i.refill(emit=False) for i in self.informers["Deployment"])
                    self._refill_pending = False
                except APIError as exc:
                    log.warning("cannot list the Deployments of the grown share: %s; trying again", exc)
                    self._share_changed.set()
                    self.stop.wait(1.0)
            log.info("shard members %s: %d Deployments dropped from the cache, %d added", ", ".join(sorted(members)), dropped, added)

    def _queue_share(self) -> None:
        """The ring acknowledged this replica in a new view: the CRs new to its share are queued, at
        most SWEEP_RATE a second, for a visit that corrects their drift at once and leaves a change of
        status.servedBy alone for later (``served_by_slot``); the CRs it kept are served already."""
        assert self.shards is not None
        owned = set(self.owned_keys())
        with self._waiting_lock:
            waiting, self._waiting = self._waiting, set()
        new = sorted(owned - self._served)
        self._served = owned
        for key in sorted(waiting & owned):
            self.queue.add(key)  # their events came while the ring was settling
        with self._waiting_lock:
            self._sweeping |= set(new)
        for n, key in enumerate(new):
            self.queue.add_after(key, n / SWEEP_RATE)

    def served_by_slot(self) -> float:
        """The delay of the next deferred servedBy write: one every 1/SERVED_BY_RATE s, from a second on."""
        with self._waiting_lock:
            now = time.monotonic()
            self._next_served_by = max(now + 1.0, self._next_served_by + 1.0 / SERVED_BY_RATE)
            return self._next_served_by - now

    def _wait_for_ring(self, key: tuple[str, str]) -> None:
        """A key this replica may not write now: another replica's (dropped), or its own while the
        ring has not acknowledged it yet or its fence is down (kept for the next acknowledgement)."""
        assert self.shards is not None
        if self.shards.owns(key):
            with self._waiting_lock:
                self._waiting.add(key)

    def stopped_leading(self) -> None:
        self.leading.clear()
        self.metrics.leader = False

    def on_holder(self, holder: str) -> None:
        self.metrics.holder = holder

    # ---- running
    def run(self, first_sync_timeout: float | None = None) -> int:
        """Until ``stop``: 0 after a clean stop, 2 when the API server refuses our requests."""
        started = time.monotonic()
        if self.shards is not None and not self._join_ring(started, first_sync_timeout):
            return self._shutdown(started, 2 if self.error else 0)
        for informers in self.informers.values():
            for informer in informers:
                if informer.kind.name != "Lease":
                    informer.start()
        try:
            self._schema = self.reconciler.status_schema()
        except APIError as exc:
            log.warning("cannot read the served CRD: %s", exc)
        all_informers = [i for group in self.informers.values() for i in group]
        deadline = None if first_sync_timeout is None else started + first_sync_timeout
        for informer in all_informers:
            while not informer.synced.wait(0.05):
                if self.stop.is_set() or (deadline and time.monotonic() > deadline):
                    return self._shutdown(started, 0 if self.stop.is_set() else 2)
        if any(i.error for i in all_informers):
            self.error = "; ".join(i.error for i in all_informers if i.error)
            return self._shutdown(started, 2)
        self.synced_after = time.monotonic() - started
        # The cache is a few million long-lived objects: a full collection walking them all pauses
        # every thread for hundreds of milliseconds (measured at 10,000 CRs). Frozen objects are
        # left out of collections; the objects that replace them later are collected as usual.
        gc.collect()
        gc.freeze()
        log.info("caches synced in %.3fs: %d Memcacheds, %d Deployments, %d Pods", self.synced_after,
                 *(sum(len(i.store) for i in self.informers[k]) for k in ("Memcached", "Deployment", "Pod")))
        self.metrics.ready = True
        threads = [threading.Thread(target=self._work, daemon=True, name=f"worker-{n}") for n in range(self.settings.workers)]
        for t in threads:
            t.start()
        if self.shards is not None and self.shards.acknowledged():
            self._queue_share()  # the share as the ring has it now (else its acknowledgement queues it)
        elif self.elector is not None:
            threading.Thread(target=self.elector.run, args=(self.stop, self.started_leading, self.stopped_leading, self.on_holder),
                             daemon=True, name="leader-election").start()
        else:
            self.started_leading()
        next_resync = time.monotonic() + self.settings.resync
        while not self.stop.is_set():
            failed = [i.error for i in all_informers if i.error]
            if failed:
                self.error = "; ".join(failed)
                return self._shutdown(started, 2)
            if time.monotonic() >= next_resync:
                next_resync = time.monotonic() + self.settings.resync
                if self.leading.is_set():
                    self._resync()
            self.stop.wait(min(1.0, max(0.0, next_resync - time.monotonic())))
        return self._shutdown(started, 0)

    def _resync(self) -> None:
        """Queue every CR this replica serves again: the safety net for an event that was missed."""
        self.resyncs += 1
        keys = self.owned_keys()
        log.info("resync: queueing %d CRs", len(keys))
        for key in keys:
            self.queue.add(key)

    def _join_ring(self, started: float, timeout: float | None) -> bool:
        """Create our Lease, list the ring's, and start the Lease thread before the other caches sync,
        so that the members see this one acknowledge them at once (they wait for it)."""
        assert self.shards is not None
        try:
            self.shards.join()  # our Lease first: a member that lists after this sees us
        except APIError as exc:
            self.error = f"cannot create the shard Lease: {exc}"
            return False
        [leases] = self.informers["Lease"]
        leases.start()
        while not leases.synced.wait(0.05):
            if self.stop.is_set() or leases.error or (timeout is not None and time.monotonic() > started + timeout):
                self.error = leases.error or ("" if self.stop.is_set() else "the shard Leases did not sync")
                return False
        self.shards.listed = True
        threading.Thread(target=self.shards.run, args=(self.stop,), daemon=True, name="shard-lease").start()
        # Replicas of one Deployment start together: give the others one renew period to appear, and the
        # ring time to acknowledge this one, so that the caches start from this replica's share (a cache
        # that starts with everything and is pruned later keeps its peak memory).
        settle = time.monotonic() + self.shards.retry_period
        while not self.stop.is_set() and (time.monotonic() < settle or not self.shards.acknowledged()):
            if time.monotonic() > settle + 4 * self.shards.retry_period:
                break  # a member that never answers: its share waits for its expiry, ours need not
            self.stop.wait(0.02)
        self._cached_members = self.shards.cache_members()  # the other caches start from this share
        threading.Thread(target=self._follow_share, daemon=True, name="shard-share").start()
        return True

    def _shutdown(self, started: float, code: int) -> int:
        self.stop.set()
        if self.shards is not None:
            self.shards.release()  # no new CR; the ones in flight end; the others take over at once
        self.queue.shut_down()
        self.queue.wait_idle(timeout=30)  # the current CR of each worker is finished
        for informers in self.informers.values():
            for informer in informers:
                informer.stop.set()
        if self.elector is not None:
            self.elector.release()
        self.metrics.leader = False
        if self.error:
            log.error("%s", self.error)
        log.info("stopped after %.1fs", time.monotonic() - started)
        return code


COMPANION_KINDS = frozenset(r.kind for r in COMPANIONS)


def owner_name(deployment: dict[str, Any]) -> str:
    """The CR a Deployment belongs to: its controller, else our instance label, else its own name."""
    meta = deployment.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Memcached":
            controller: str = ref.get("name", "")
            return controller
    named: str = (meta.get("labels") or {}).get(INSTANCE_LABEL) or meta.get("name", "")
    return named


def lease_client(api: KubeAPI, renew_deadline: float) -> KubeAPI:
    """The Lease's own client: one attempt per try, bounded well inside the renew deadline, never
    gated by leadership (it is how leadership is kept)."""
    return KubeAPI(client=api.client, retry=RetryPolicy(attempts=1), timeout=renew_deadline / 4, requests=api.requests,
                   user_agent=api.user_agent)
