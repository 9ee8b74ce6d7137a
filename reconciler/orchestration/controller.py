"""The event-driven mode (the Deployment): informers, a work queue, workers, a Lease, a resync.

- Informers (informer.py, client/caches.py) mirror Memcacheds, Deployments, Services and budgets
  by our label, the Pods our selectors could select (ours and others', metadata only), and the
  HorizontalPodAutoscalers in scope (autoscalers.py) into memory; three
  more keep a name index (metadata only, no selector) of every Deployment, Service and budget in
  scope, so that a new CR's objects are created without a GET when no object holds their names.
  Every event puts the key of the CR it concerns on the work queue (workqueue.py), at once: no
  batching window, no polling.
- ``workers`` threads each take one key and reconcile that CR from the cache with the per-CR
  step that ``--once`` uses (Reconciler.reconcile_cr): no GET, one apply per correction, at most
  one status write. What our writes return goes into the cache (write-through), so the events
  they cause find nothing to do: a status write's MODIFIED event ends in "no change, no write".
- A field of the Deployment, the Service or the budget that another manager keeps undoing is a
  fight (fights.py): the CR backs off with a growing delay and is Degraded, with a Warning Event
  and a metric, each naming the object.
- Leader election runs in its own thread (leader.py); only the leader's workers write, and a
  leader that cannot renew in time stops writing at once. The informers run on every replica,
  so a standby that takes over starts from a warm cache.
- Every ``resync`` seconds every CR in the cache is queued again: a safety net that costs no
  request unless something drifted.
- With ``shards`` (shards.py) every replica serves a share of the CRs instead: each holds a Lease
  of its own, one more informer watches the ring's Leases, a worker reconciles only the CRs the ring
  gives this replica, and every write is gated per CR (never two writers for one CR).
- SIGTERM (``stop``): workers finish their current CR, the Lease is released, ``run`` returns 0.
"""

from __future__ import annotations

import gc
import logging
import threading
from dataclasses import dataclass
from typing import Any

from memcached_gitops.foundation.clocks import SYSTEM_CLOCK, Clock, Monotonic
from memcached_gitops.foundation.identities import AUTOSCALERS, DEPLOYMENTS, KIND, LEASES, PODS, RING_LABEL

from ..client.api import APIError, KubeAPI, RetryPolicy
from ..client.caches import COMPANION_KINDS, NAMES_KINDS, Caches, Key, owner_name, watched_kinds
from ..client.informer import Kind, key_of
from ..client.leader import LeaderElector
from ..client.shards import ShardRing
from ..client.workqueue import WorkQueue
from ..decisions.fights import Correction, FightDetector
from ..decisions.reasons import EventReason, Reason
from ..decisions.vocabulary import Action
from .cycle import CROutcome, Reconciler
from .metrics import Metrics
from .share import Share, cache_filters

log = logging.getLogger("memcached_gitops.controller")
#: A full resync every 10 minutes. Events carry every change, so the resync only repairs what a
#: bug or a lost event could have missed; it reads the cache and writes nothing unless something
#: drifted, so it costs CPU (about 1 ms per CR), not API requests. 10 minutes is Flux's usual
#: interval and well under the 5-minute compaction window times two, so a missed event is repaired
#: quickly; controller-runtime's 10-hour default trusts the watch more than we need to.
DEFAULT_RESYNC = 600.0
#: SIGTERM's bound on each wait for the reconciles in flight (with --shards, the ring's release, then the
#: work queue's): the Deployment's terminationGracePeriodSeconds outlasts them, so the Lease is released
#: before the kubelet's SIGKILL and the standby or the other shards take over at once.
DRAIN_SECONDS = 30.0
#: CRs reconciled at once. A worker spends its time waiting on the API server (each request 8-60 ms on a
#: loaded one, four round trips for a new CR), not on the CPU: 16 serve a burst of 1,000 new CRs against
#: the fake in 20 s where 4 took 34 s (bench/new_cr_requests.py); the work queue never gives one CR
#: to two workers, and the client keeps a connection for each (client/api.py KEPT_CONNECTIONS).
DEFAULT_WORKERS = 16


@dataclass
class Settings:
    workers: int = DEFAULT_WORKERS
    resync: float = DEFAULT_RESYNC
    watch_timeout: int = 300  # client-go's minimum watch timeout
    heartbeat: float = 60.0  # the watch cache's BOOKMARK period
    silence_grace: float = 10.0
    streaming_list: bool = True
    schema_retry: float = 60.0  # how often a CRD that could not be read (RBAC not there yet) is read again


@dataclass(frozen=True)
class Result:
    """What serving one key asks of the work queue, as controller-runtime's ``(Result, error)`` of a
    Reconcile: decided where the key is served, applied in one place (``Controller._requeue``). An
    exception (an APIError of a read, a bug) is the error: retried with backoff by ``_work``."""

    outcome: CROutcome | None = None  # what the per-CR step did (None: not reconciled)
    after: float | None = None  # the key again after this many seconds (a fight's wait, a deferred servedBy)
    retry: str | None = None  # a refusal worth retrying (not permanent): the key again at the backoff's pace
    done: bool = False  # served: the key's past failures are forgotten (its backoff starts over)


class Controller:
    """Events to keys, keys to workers, workers to the per-CR step; leadership, the resync, the stop.

    The caches and their indexes are ``caches`` (client/caches.py); with --shards, what this replica
    does with its share is ``share`` (share.py)."""

    def __init__(self, reconciler: Reconciler, metrics: Metrics | None = None, elector: LeaderElector | None = None,
                 settings: Settings | None = None, fights: FightDetector | None = None, shards: ShardRing | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.reconciler, self.api = reconciler, reconciler.api
        self.metrics = metrics or Metrics()
        self.metrics.api_requests = self.api.requests
        self.metrics.api_results = self.api.results
        self.elector = elector
        self.settings = s = settings or Settings()
        self.fights = fights or FightDetector()
        self.clock = clock  # the fights' deadlines, the work timings and the run loop's waits: one monotonic clock
        self.stop = reconciler.stop
        # The Lease is renewed until the reconciles in flight at SIGTERM have ended, as controller-runtime
        # stops leader election only after its runnables: stopping it with ``stop`` would let the fence run
        # out under a reconcile slower than the renew deadline, its status and Event refused (half-done).
        self.lead_stop = threading.Event()
        self._leading_thread: threading.Thread | None = None
        self.queue: WorkQueue[Key] = WorkQueue(observer=self.metrics.workqueue)  # CR keys: namespace and name
        self.metrics.workers(s.workers, lambda: len(self.queue))
        self.leading = threading.Event()
        self.shards = shards
        crd = reconciler.crd
        informer_settings = {"metrics": self.metrics, "watch_timeout": s.watch_timeout, "heartbeat": s.heartbeat,
                             "silence_grace": s.silence_grace, "streaming_list": s.streaming_list}
        self.caches = Caches(self.api, watched_kinds(Kind(KIND, crd.group, reconciler.version, crd.plural)), self.on_event,
                             reconciler.options.namespaces or (None,), keep=cache_filters(shards) if shards else None,
                             **informer_settings)
        self.informers, self.kinds = self.caches.informers, self.caches.kinds
        reconciler.absent = self.caches.absent  # a name the synced indexes do not hold is created without a GET
        reconciler.selected = self.caches.selected  # the Pods our own selector selects, without a LIST
        self.share: Share | None = None
        if shards is not None:
            self.share = share = Share(shards, self.caches, self.queue, self.stop, self.clock)
            lease = Kind(LEASES.kind, *LEASES.gvr, f"{RING_LABEL}={shards.ring}")
            self.caches.watch(LEASES.kind, lease, shards.namespace)
            self.leading.set()  # every member leads its own share; the ring gates each CR
            self.api.may_write = shards.may_write
            shards.on_agreed = share.on_agreed
            shards.on_view = share.on_view
            shards.on_handover = self.metrics.observe_handover
            self.metrics.shard_owned.set_function(lambda: len(self.owned_keys()))
            self.metrics.shard_members.set_function(lambda: len(shards.view))
        elif elector is None:
            self.leading.set()
        else:
            self.api.may_write = elector.is_leader
            self.metrics.leader = False  # exported at 0 until it leads, as client-go's NewLeaderElector does (leaderOff)
        self.metrics.health_checks.append(self.caches.stalled)
        self.metrics.crs.set_function(lambda: len(self.caches.cr_keys()))
        self.metrics.conditions.source = self.served_crs
        self._schema: tuple[frozenset[str] | None, frozenset[str] | None] = (None, None)
        self.synced_after: float | None = None  # seconds from start to the first complete sync
        self.resyncs = 0
        self.error = ""

    def owned_keys(self) -> list[Key]:
        """The CRs this replica serves: all of them, or its share of the ring."""
        keys = self.caches.cr_keys()
        return keys if self.share is None else self.share.owned(keys)

    def served_crs(self) -> list[dict[str, Any]]:
        """The cached CRs this replica serves (their conditions, at a scrape)."""
        return [cr for cr in (self.caches.cached(KIND, key) for key in self.owned_keys()) if cr is not None]

    # ---- events
    def on_event(self, kind: str, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, arrived: float) -> None:
        """Route an informer's event to the key of the CR it concerns, on the work queue."""
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace", "")
        if kind == KIND:
            key = (ns, meta.get("name", ""))
            if type_ == "DELETED":
                self.fights.forget(key)  # the garbage collector removes its Deployment (transcript 36)
                return
            self.queue.add(key, arrived)
        elif kind == DEPLOYMENTS.kind:
            self.queue.add((ns, owner_name(obj)), arrived)
            for peer in self.caches.kept_peers(type_, obj, old):
                self.queue.add((ns, peer), arrived)
        elif kind in COMPANION_KINDS:  # a Service or budget changed or went: its CR puts it back
            self.queue.add((ns, owner_name(obj)), arrived)
        elif kind == LEASES.kind:
            if self.shards is not None:
                self.shards.on_lease(type_, obj)
        elif kind in NAMES_KINDS:
            return  # the name indexes answer ``Caches.absent``; a labelled informer routes our own objects
        elif kind == AUTOSCALERS.kind:
            for target in self.caches.track_autoscaler(type_, obj, old):
                self.queue.add(target, arrived)
        else:
            for pods_changed in self.caches.track_pod(type_, obj, old):
                self.queue.add(pods_changed, arrived)

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
                self._requeue(key, self._serve(key, arrived, started))
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

    def _serve(self, key: Key, arrived: float, started: Monotonic) -> Result:
        """One key taken by a worker of the leader: waited out while a fight parks the CR, left to the
        ring when another replica (or none yet) may write it, else reconciled."""
        wait = self.fights.wait(key, started)
        if wait > 0:
            return Result(after=wait)  # no failure: the key keeps its backoff
        if self.shards is None:
            return self.reconcile(key, arrived)
        with self.shards.serving(key) as ours:
            if not ours:
                assert self.share is not None
                self.share.wait_for_ring(key)
                return Result()
            return self.reconcile(key, arrived)

    def _requeue(self, key: Key, result: Result) -> None:
        """The one place the work queue hears what serving ``key`` asks: again after a delay, again
        at the backoff's pace, and whether its past failures are forgotten."""
        if result.after is not None:
            self.queue.add_after(key, result.after)
        if result.retry is not None:
            log.warning("%s/%s: %s; retrying with backoff", key[0], key[1], result.retry)
            self.metrics.observe_retry()
            self.queue.add_rate_limited(key)
        elif result.done:
            self.queue.forget(key)

    def reconcile(self, key: Key, arrived: float) -> Result:
        """One CR from the cache (no GET); its writes' answers go back into the cache."""
        caches = self.caches
        cr = caches.cached(KIND, key)
        if cr is None:
            return Result(done=True)
        live = caches.cached(DEPLOYMENTS.kind, key)
        declared, condition_fields = self._schema
        lazy = self.share.take_sweeping(key) if self.share is not None else False
        outcome = self.reconciler.reconcile_cr(cr, live, caches.pods_of(key), declared, condition_fields,
                                               degraded=self._fight_check, neighbours=caches.kept_deployments,
                                               autoscaler=caches.autoscaler_of(key), lazy_served_by=lazy,
                                               companions=lambda resource, ns, name: caches.cached(resource.kind, (ns, name)))
        after = self.share.served_by_slot() if outcome.served_by_deferred and self.share is not None else None
        if outcome.deployment is not None:
            caches.put(DEPLOYMENTS.kind, outcome.deployment)
            if outcome.action == Action.CORRECTED:
                self.metrics.correction_latency.observe(outcome.applied_at - arrived)
        elif outcome.read is not None and self.shards is not None:
            caches.fill(DEPLOYMENTS.kind, outcome.read)  # read by a GET: kept unless the watch saw it go
        for kind, read in outcome.companions.read if self.shards is not None else ():
            caches.fill(kind, read)  # a companion of a CR handed over, read before the LIST that follows
        for companion in outcome.companions.applied:
            caches.put(companion["kind"], companion)
        if outcome.cr is not None:
            caches.put(KIND, outcome.cr)
        self.metrics.observe_outcome(outcome, self.reconciler.options.dry_run)
        if outcome.action == Action.FAILED and not outcome.permanent:
            return Result(outcome, after, retry=outcome.error)  # retried at the backoff's pace
        if outcome.permanent:  # refused for good (422, 403): reported, retried at the resync or on a change
            log.warning("%s/%s: %s; retried at the resync or when the CR or its objects change", key[0], key[1], outcome.error)
        return Result(outcome, after, done=True)

    def _fight_check(self, cr: dict[str, Any], corrected: list[Correction]) -> tuple[str, str] | None:
        """Record the corrections (of the Deployment and of its companions) against other managers,
        each with its object; the CR is Degraded while a fight lasts."""
        key = key_of(cr)
        now = self.clock.monotonic()
        ours = {self.reconciler.options.field_manager}
        for kind, name, d in corrected:
            for manager in d.managers:
                if manager in ours:
                    continue
                fight = self.fights.record(key, name, d.field, manager, now, kind)
                if fight is not None:
                    log.warning("%s/%s: fight: %s", key[0], key[1], fight.message)
                    self.metrics.fights.labels(fight.label, fight.manager).inc()
                    self.reconciler.events.record(cr, "Warning", EventReason.FIGHT_DETECTED, fight.message)
        fight = self.fights.active(key, now)
        return (Reason.FIELD_MANAGER_FIGHT, fight.message) if fight else None

    # ---- leadership
    def started_leading(self) -> None:
        self.metrics.leader = True
        self.leading.set()
        for key in self.caches.cr_keys():
            self.queue.add(key)

    def stopped_leading(self) -> None:
        self.leading.clear()
        self.metrics.leader = False

    def on_holder(self, holder: str) -> None:
        self.metrics.holder = holder

    # ---- running
    def run(self, first_sync_timeout: float | None = None) -> int:
        """Until ``stop``: 0 after a clean stop, 2 when the API server refuses our requests."""
        started = self.clock.monotonic()
        if self.share is not None and not self.share.join(started, first_sync_timeout):
            self.error = self.share.error
            return self._shutdown(started, 2 if self.error else 0)
        for informer in self.caches.all():
            if informer.kind.name != LEASES.kind:
                informer.start()
        try:
            self._schema = self.reconciler.status_schema()
        except APIError as exc:
            log.warning("cannot read the served CRD: %s", exc)
        all_informers = self.caches.all()
        deadline = None if first_sync_timeout is None else started + first_sync_timeout
        for informer in all_informers:
            while not informer.synced.wait(0.05):
                if self.stop.is_set() or (deadline is not None and self.clock.monotonic() > deadline):
                    return self._shutdown(started, 0 if self.stop.is_set() else 2)
        if any(i.error for i in all_informers):
            self.error = "; ".join(i.error for i in all_informers if i.error)
            return self._shutdown(started, 2)
        self.synced_after = self.clock.monotonic() - started
        # The cache is a few million long-lived objects: a full collection walking them all pauses
        # every thread for hundreds of milliseconds (measured at 10,000 CRs). Frozen objects are
        # left out of collections; the objects that replace them later are collected as usual.
        gc.collect()
        gc.freeze()
        log.info("caches synced in %.3fs: %d Memcacheds, %d Deployments, %d Pods", self.synced_after,
                 *(self.caches.count(k) for k in (KIND, DEPLOYMENTS.kind, PODS.kind)))
        # the schedule is set before the process says it is ready: a stall right after (a test's
        # moved clock, a throttled container) is counted against it, never folded into its start
        next_resync = self.clock.monotonic() + self.settings.resync
        next_schema = self.clock.monotonic() + self.settings.schema_retry
        self.metrics.ready = True
        threads = [threading.Thread(target=self._work, daemon=True, name=f"worker-{n}") for n in range(self.settings.workers)]
        for t in threads:
            t.start()
        if self.share is not None and self.share.ring.acknowledged():
            self.share.on_agreed()  # the share as the ring has it now (else its acknowledgement queues it)
        elif self.elector is not None:
            self._leading_thread = threading.Thread(target=self.elector.run, daemon=True, name="leader-election",
                                                    args=(self.lead_stop, self.started_leading, self.stopped_leading, self.on_holder))
            self._leading_thread.start()
        else:
            self.started_leading()
        while not self.stop.is_set():
            if not self.reconciler.schema_known and self.clock.monotonic() >= next_schema:
                next_schema = self._reread_schema()
            failed = [i.error for i in all_informers if i.error]
            if failed:
                self.error = "; ".join(failed)
                return self._shutdown(started, 2)
            if self.clock.monotonic() >= next_resync:
                next_resync = self.clock.monotonic() + self.settings.resync
                if self.leading.is_set():
                    self._resync()
            self.stop.wait(min(1.0, max(0.0, next_resync - self.clock.monotonic())))
        return self._shutdown(started, 0)

    def _reread_schema(self) -> Monotonic:
        """Read the served CRD again (it could not be read at the start: an RBAC that arrives later);
        once read, every CR is queued, so that the printer columns fill in without a restart. The
        time of the next try."""
        self._schema = self.reconciler.status_schema()
        if self.reconciler.schema_known:
            log.info("the served CRD is readable now: writing every CR's status with its columns")
            if self.leading.is_set():
                self._resync()
        return self.clock.monotonic() + self.settings.schema_retry

    def _resync(self) -> None:
        """Queue every CR this replica serves again: the safety net for an event that was missed."""
        self.resyncs += 1
        keys = self.owned_keys()
        log.info("resync: queueing %d CRs", len(keys))
        for key in keys:
            self.queue.add(key)

    def _shutdown(self, started: Monotonic, code: int) -> int:
        self.stop.set()
        if self.shards is not None:
            self.shards.release(DRAIN_SECONDS)  # no new CR; the ones in flight end; the others take over at once
        self.queue.shut_down()
        self.queue.wait_idle(timeout=DRAIN_SECONDS)  # the current CR of each worker is finished
        for informer in self.caches.all():
            informer.stop.set()
        if self.elector is not None:
            self.lead_stop.set()
            if self._leading_thread is not None:  # its renewal in progress first: the release is the Lease's last write
                self._leading_thread.join(timeout=DRAIN_SECONDS)
            self.elector.release()
        self.metrics.leader = False
        if self.error:
            log.error("%s", self.error)
        log.info("stopped after %.1fs", self.clock.monotonic() - started)
        return code


def lease_client(api: KubeAPI, renew_deadline: float) -> KubeAPI:
    """The Lease's own client: one attempt per try, bounded well inside the renew deadline, never
    gated by leadership (it is how leadership is kept)."""
    return KubeAPI(client=api.client, retry=RetryPolicy(attempts=1), timeout=renew_deadline / 4, requests=api.requests,
                   results=api.results, user_agent=api.user_agent)
