"""Prometheus metrics (prometheus-client), and the liveness and readiness the probes read (served by
serving.py).

Each ``Metrics`` has a registry of its own, so that two reconcilers in one process (tests, the
benchmarks) never share counters. ``memcached_gitops_drift_corrections_total``, ``..._api_requests_total``,
``..._errors_total`` and ``..._leader`` keep the names of the hand-written exposition they replace;
prometheus-client adds a ``_created`` sample beside each counter and histogram. The cycle series
(``..._cycles_total``, ``..._cycle_duration_seconds``) are gone with the polling loop: the
Deployment mode has no cycles, and ``..._work_duration_seconds`` and the work-queue, watch, fight
and latency series below take their place.
"""

from __future__ import annotations

import threading
from collections import Counter as CountDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from memcached_gitops.foundation.clocks import monotonic_seconds
from memcached_gitops.foundation.identities import LEADER_LEASE as LEASE_NAME
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..decisions.vocabulary import FAILURES, Action

PREFIX = "memcached_gitops"
#: The ``controller`` (and work queue ``name``) label of controller-runtime's series: kubebuilder names a
#: controller after its kind in lower case, so a dashboard made for the Go operator reads ours unchanged.
CONTROLLER = "memcached"
#: controller-runtime's reconcile_time buckets (pkg/internal/controller/metrics/metrics.go).
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
                     1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60)
#: From one millisecond (a correction on a quiet server) to ten seconds (a saturated queue).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


#: client-go's workqueue duration buckets: prometheus.ExponentialBuckets(10e-9, 10, 12), 10 ns to 1000 s
#: (controller-runtime pkg/metrics/workqueue.go).
QUEUE_BUCKETS = tuple(10e-9 * 10**n for n in range(12))


class WorkqueueMetrics:
    """client-go's queue metrics (util/workqueue/metrics.go ``defaultQueueMetrics``) for one queue,
    under controller-runtime's names (pkg/metrics/workqueue.go): the work queue's observer.

    A key newly queued counts an add and starts its wait; taken, its wait is observed and its work
    starts; let go, its work is observed. Unfinished work and the longest-running processor are
    read at each scrape from the keys being processed (client-go computes them every 500 ms)."""

    def __init__(self, registry: CollectorRegistry, clock: Callable[[], float] = monotonic_seconds) -> None:
        self.clock = clock
        self._added_at: dict[Any, float] = {}
        self._started_at: dict[Any, float] = {}
        self._lock = threading.Lock()
        self.depth = 0
        labels = ["name", "controller"]
        self.adds = Counter("workqueue_adds", "Total number of adds handled by workqueue", labels, registry=registry)
        self.latency = Histogram("workqueue_queue_duration_seconds",
                                 "How long in seconds an item stays in workqueue before being requested",
                                 labels, buckets=QUEUE_BUCKETS, registry=registry)
        self.work = Histogram("workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.",
                              labels, buckets=QUEUE_BUCKETS, registry=registry)
        unfinished = Gauge("workqueue_unfinished_work_seconds", "How many seconds of work has been done that is in progress and "
                           "hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number "
                           "of stuck threads by observing the rate at which this increases.", labels, registry=registry)
        longest = Gauge("workqueue_longest_running_processor_seconds", "How many seconds has the longest running processor for "
                        "workqueue been running.", labels, registry=registry)
        unfinished.labels(CONTROLLER, CONTROLLER).set_function(lambda: sum(self.ages()))
        longest.labels(CONTROLLER, CONTROLLER).set_function(lambda: max(self.ages(), default=0.0))

    def ages(self) -> list[float]:
        """How long each key being processed has been, in seconds."""
        now = self.clock()
        with self._lock:
            return [now - started for started in self._started_at.values()]

    def added(self, key: Any) -> None:
        self.adds.labels(CONTROLLER, CONTROLLER).inc()
        with self._lock:
            self.depth += 1
            self._added_at.setdefault(key, self.clock())

    def taken(self, key: Any) -> None:
        now = self.clock()
        with self._lock:
            self.depth -= 1
            self._started_at[key] = now
            added = self._added_at.pop(key, None)
        if added is not None:
            self.latency.labels(CONTROLLER, CONTROLLER).observe(now - added)

    def finished(self, key: Any) -> None:
        with self._lock:
            started = self._started_at.pop(key, None)
        if started is not None:
            self.work.labels(CONTROLLER, CONTROLLER).observe(self.clock() - started)


class _RequestCounter:
    """Exposes the API client's own counters (collections.Counters it increments): ours by verb, and
    client-go's ``rest_client_requests_total`` by code, method and host (controller-runtime
    pkg/metrics/client_go_adapter.go registers it under that name, with those labels)."""

    def __init__(self) -> None:
        self.source: CountDict[str] | None = None
        self.results: CountDict[tuple[str, str, str]] | None = None

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(f"{PREFIX}_api_requests", "API requests by verb.", labels=["verb"])
        for verb, count in sorted(dict(self.source or {}).items()):
            family.add_metric([verb], count)
        yield family
        results = CounterMetricFamily("rest_client_requests", "Number of HTTP requests, partitioned by status code, method, and host.",
                                      labels=["code", "method", "host"])
        for labels, count in sorted(dict(self.results or {}).items()):
            results.add_metric(list(labels), count)
        yield results


class _ConditionCollector:
    """Each served CR's status conditions at the scrape, as kube-state-metrics exports a Deployment's
    (``kube_deployment_status_condition{namespace, deployment, condition, status}``): one series per
    condition, its status in lower case, value 1. Read from the cache, so a scrape sends no request."""

    def __init__(self) -> None:
        self.source: Callable[[], Iterable[dict[str, Any]]] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(f"{PREFIX}_status_condition", "The status conditions of each Memcached this replica serves.",
                                   labels=["namespace", "memcached", "condition", "status"])
        for cr in self.source() if self.source is not None else ():
            meta = cr.get("metadata") or {}
            for condition in (cr.get("status") or {}).get("conditions") or []:
                if isinstance(condition, dict) and condition.get("type"):
                    family.add_metric([str(meta.get("namespace", "")), str(meta.get("name", "")), str(condition["type"]),
                                       str(condition.get("status", "Unknown")).lower()], 1.0)
        yield family


class Metrics:
    def __init__(self) -> None:
        #: each returns why the process is unhealthy, or None (/healthz)
        self.health_checks: list[Callable[[], str | None]] = []
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.corrections = Counter(f"{PREFIX}_drift_corrections", "Drifted fields corrected, by field.", ["field"], registry=r)
        self.drift_detected = Counter(f"{PREFIX}_drift_detected",
                                      "Drifted fields found and left alone (--detect-only, --dry-run), by field.", ["field"], registry=r)
        self.errors = Counter(f"{PREFIX}_errors", "Errors by reason.", ["reason"], registry=r)
        self.write_failures = Counter(f"{PREFIX}_write_failures", "Writes the API server refused, by kind of object and HTTP "
                                      "status (0: no answer).", ["kind", "code"], registry=r)
        self.leader_gauge = Gauge(f"{PREFIX}_leader", "Whether this replica holds the Lease.", registry=r)
        self.lease_holder = Gauge(f"{PREFIX}_lease_holder", "The Lease holder as this replica last read it (1 for the holder).",
                                  ["identity"], registry=r)
        self.queue_depth = Gauge(f"{PREFIX}_workqueue_depth", "CR keys waiting in the work queue.", registry=r)
        self.work_duration = Histogram(f"{PREFIX}_work_duration_seconds", "Time to reconcile one CR from the cache.",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.retries = Counter(f"{PREFIX}_workqueue_retries", "Keys put back with a per-key backoff after a failure.", registry=r)
        self.watch_restarts = Counter(f"{PREFIX}_watch_restarts", "WATCH streams re-opened, by kind and reason.",
                                      ["kind", "reason"], registry=r)
        self.watch_events = Counter(f"{PREFIX}_watch_events", "WATCH events received, by kind and type.", ["kind", "type"], registry=r)
        self.fights = Counter(f"{PREFIX}_fights", "Fights detected: a field that another manager keeps undoing "
                              "(a Service's or budget's after its kind).",
                              ["field", "manager"], registry=r)
        self.correction_latency = Histogram(f"{PREFIX}_drift_correction_latency_seconds",
                                            "From the arrival of the WATCH event that showed drift to the finished apply.",
                                            buckets=LATENCY_BUCKETS, registry=r)
        # reconcile --shards (shards.py): the ring as this replica sees it
        self.shard_members = Gauge(f"{PREFIX}_shard_members", "Members of the shard ring in this replica's view.", registry=r)
        self.shard_owned = Gauge(f"{PREFIX}_shard_owned_crs", "CRs this replica serves in its current view.", registry=r)
        self.crs = Gauge(f"{PREFIX}_crs", "Memcached CRs in this replica's cache (every replica caches them all).", registry=r)
        self.conditions = _ConditionCollector()
        r.register(self.conditions)
        self.shard_handovers = Counter(f"{PREFIX}_shard_handovers", "Changes of the ring's view that reached agreement.", registry=r)
        self.shard_handover_seconds = Histogram(f"{PREFIX}_shard_handover_seconds",
                                                "From a change of this replica's view to the ring's agreement on it (writes resume).",
                                                buckets=LATENCY_BUCKETS, registry=r)
        self._requests = _RequestCounter()
        r.register(self._requests)
        self._controller_runtime(r)
        self._lock = threading.Lock()
        self.ready = False
        self._leader = False
        self._holder = ""

    def _controller_runtime(self, r: CollectorRegistry) -> None:
        """controller-runtime's and client-go's names and label sets, as its manager exports them
        (sigs.k8s.io/controller-runtime pkg/internal/controller/metrics/metrics.go, pkg/metrics/workqueue.go,
        pkg/metrics/leaderelection.go), beside our own: dashboards and alerts written for a kubebuilder
        operator read these. Our domain series (drift, fights, shards) have no counterpart there."""
        self.reconcile_total = Counter("controller_runtime_reconcile", "Total number of reconciliations per controller",
                                       ["controller", "result"], registry=r)
        self.reconcile_errors = Counter("controller_runtime_reconcile_errors", "Total number of reconciliation errors per controller",
                                        ["controller"], registry=r)
        self.reconcile_time = Histogram("controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller",
                                        ["controller"], buckets=RECONCILE_BUCKETS, registry=r)
        self.max_concurrent = Gauge("controller_runtime_max_concurrent_reconciles",
                                    "Maximum number of concurrent reconciles per controller", ["controller"], registry=r)
        self.active_workers = Gauge("controller_runtime_active_workers", "Number of currently used workers per controller",
                                    ["controller"], registry=r)
        self.workqueue_depth = Gauge("workqueue_depth", "Current depth of workqueue by workqueue and priority",
                                     ["name", "controller", "priority"], registry=r)
        self.workqueue = WorkqueueMetrics(r)
        self.workqueue_retries = Counter("workqueue_retries", "Total number of retries handled by workqueue", ["name", "controller"],
                                         registry=r)
        self.leader_status = Gauge("leader_election_master_status", "Gauge of if the reporting system is master of the relevant lease, "
                                   "0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. "
                                   "Please make sure to group by name.", ["name"], registry=r)

    def observe_work(self, seconds: float) -> None:
        """One key taken off the queue and finished: our work duration and controller-runtime's reconcile time."""
        self.work_duration.observe(seconds)
        self.reconcile_time.labels(CONTROLLER).observe(seconds)

    def busy(self, change: int) -> None:
        """A worker took a key (1) or let it go (-1): controller-runtime's active workers."""
        self.active_workers.labels(CONTROLLER).inc(change)

    def observe_retry(self) -> None:
        """A key put back with its backoff after a failure."""
        self.retries.inc()
        self.workqueue_retries.labels(CONTROLLER, CONTROLLER).inc()

    def workers(self, count: int, queued: Callable[[], float]) -> None:
        """The controller's worker count and its queue's depth, read at each scrape; its counters start
        at 0 as controller-runtime's initMetrics starts them (pkg/internal/controller/controller.go),
        so that the first error is a rise the alerts' rate() sees, not a series that appears at 1."""
        self.max_concurrent.labels(CONTROLLER).set(count)
        self.active_workers.labels(CONTROLLER).set(0)
        self.reconcile_errors.labels(CONTROLLER)
        for result in ("error", "success"):
            self.reconcile_total.labels(CONTROLLER, result)
        self.queue_depth.set_function(queued)
        # client-go's depth: a key added while a worker holds it counts until it is taken again
        self.workqueue_depth.labels(CONTROLLER, CONTROLLER, "").set_function(lambda: self.workqueue.depth)

    @property
    def api_requests(self) -> CountDict[str] | None:
        return self._requests.source

    @api_requests.setter
    def api_requests(self, source: CountDict[str] | None) -> None:
        self._requests.source = source

    @property
    def api_results(self) -> CountDict[tuple[str, str, str]] | None:
        return self._requests.results

    @api_results.setter
    def api_results(self, source: CountDict[tuple[str, str, str]] | None) -> None:
        self._requests.results = source

    @property
    def leader(self) -> bool:
        return self._leader

    @leader.setter
    def leader(self, value: bool) -> None:
        self._leader = value
        self.leader_gauge.set(1 if value else 0)
        self.leader_status.labels(LEASE_NAME).set(1 if value else 0)

    @property
    def holder(self) -> str:
        return self._holder

    @holder.setter
    def holder(self, identity: str) -> None:
        with self._lock:
            if identity == self._holder:
                return
            if self._holder:
                self.lease_holder.remove(self._holder)
            self._holder = identity
            if identity:
                self.lease_holder.labels(identity).set(1)

    def observe_handover(self, seconds: float) -> None:
        self.shard_handovers.inc()
        self.shard_handover_seconds.observe(seconds)

    def observe_outcome(self, outcome: Any, dry_run: bool = False) -> None:
        """Count one CR's result: its corrected (or, detect-only or a dry run, reported) fields and its failure."""
        counter = self.drift_detected if dry_run or outcome.action == Action.DRIFTED else self.corrections
        for d in outcome.drift:
            counter.labels(d.field or "<object>").inc()
        for where, d in outcome.companions.drift:  # the Service's and the budget's, by kind
            counter.labels(f"{where.split(' ', 1)[0]} {d.field or '<object>'}").inc()
        if outcome.action in FAILURES:
            self.errors.labels(outcome.action).inc()
        for failure in getattr(outcome, "failures", ()):  # each refused write, the companions' included
            self.write_failures.labels(failure.kind, str(failure.status)).inc()
        failed = outcome.action == Action.FAILED  # retried with backoff, as a Reconcile that returns an error
        self.reconcile_total.labels(CONTROLLER, "error" if failed else "success").inc()
        if failed:
            self.reconcile_errors.labels(CONTROLLER).inc()

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """One sample's value (0 when absent): for tests and the benchmarks."""
        return self.registry.get_sample_value(name, labels or {}) or 0.0

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def liveness(self) -> tuple[bool, str]:
        """Alive unless a registered check says why not (``health_checks``: the controller's stalled
        informers), so that the kubelet restarts a process whose watches stopped moving."""
        for check in list(self.health_checks):
            problem = check()
            if problem:
                return False, f"unhealthy: {problem}\n"
        return True, "ok\n"

    def readiness(self) -> tuple[bool, str]:
        """Ready once the first sync is done (a standby is ready too: it can take over); says whether
        this replica leads, never who else does: /readyz answers anyone who reaches the port, and the
        leader's name is a target (the log and the Lease name it)."""
        if not self.ready:
            return False, "not ready\n"
        return True, "ready: this replica leads\n" if self._leader else "ready: standby\n"
