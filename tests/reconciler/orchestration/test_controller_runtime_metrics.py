"""controller-runtime's metric names and label sets, as a kubebuilder operator's manager exports them,
so that the dashboards and alerts written for the Go operator read ours.

Upstream (kubernetes-sigs/controller-runtime; file @commit: lines):
- pkg/internal/controller/metrics/metrics.go @03fe4cedb03ba7c8e799f9caf48505bb712a0c76: 32-35
  ``controller_runtime_reconcile_total`` {controller, result}; 39-42 ``..._reconcile_errors_total``
  {controller}; 60-65 ``..._reconcile_time_seconds`` {controller} (its buckets, 63-64); 69-72
  ``..._max_concurrent_reconciles`` {controller}; 76-79 ``..._active_workers`` {controller}.
- pkg/metrics/workqueue.go @09e935a36c40dbbe122e677bfecdf085b18f6421: 44-48 ``workqueue_depth`` {name,
  controller, priority}; 50-54 ``workqueue_adds_total``, 56-64 ``workqueue_queue_duration_seconds`` and
  66-74 ``workqueue_work_duration_seconds`` (buckets ExponentialBuckets(10e-9, 10, 12)), 76-83
  ``workqueue_unfinished_work_seconds``, 85-90 ``workqueue_longest_running_processor_seconds``, 92-96
  ``workqueue_retries_total``, all {name, controller}; 135: name and controller are both the
  controller's name, priority "" without priorities.
- pkg/metrics/client_go_adapter.go @0d89471258e177b9d8086c3ce9ef6f13576312a6: 55-61 ``rest_client_requests_total``
  {code, method, host}.
- pkg/metrics/leaderelection.go @645b7230d6e57394b7ed00fd8b5f12986a4dbb3d: 12-15
  ``leader_election_master_status`` {name}; 41-43: 1 for the leader.

When they move (kubernetes/client-go @32ce75a7d6bc6960fd048d3d1e3b34185418d8c8):
- util/workqueue/queue.go 227-251: ``metrics.add`` for a key not already waiting (one held by a worker
  counts too), 289-293 ``metrics.done``; util/workqueue/metrics.go 92-126: an add counts and starts the
  key's wait (its first add only), a take observes the wait and starts the work, done observes the work;
  128-142: unfinished work is the sum of the running keys' ages, the longest their maximum.
- rest/with_retry.go 253: every attempt counts, retries included; rest/request.go 874-888: the code is
  the answer's status, ``<error>`` when none came; the host is the server's host (and port); the
  method is the request's verb (GET, PATCH...).
"""

from __future__ import annotations

import json
from typing import Any

from memcached_gitops.reconciler.orchestration.metrics import CONTROLLER, LEASE_NAME, Metrics
from prometheus_client.parser import text_string_to_metric_families

from fakeapi.server import FakeAPIServer, Fault
from tests.support.clock import ManualClock
from tests.support.controller import running, wait_for
from tests.support.fakecluster import DEP_PATH, deployment, make_cr

UPSTREAM = {  # family name as the text format gives it -> its label names (histograms: of the _count sample)
    "controller_runtime_reconcile": {"controller", "result"},
    "controller_runtime_reconcile_errors": {"controller"},
    "controller_runtime_reconcile_time_seconds": {"controller"},
    "controller_runtime_max_concurrent_reconciles": {"controller"},
    "controller_runtime_active_workers": {"controller"},
    "workqueue_depth": {"name", "controller", "priority"},
    "workqueue_retries": {"name", "controller"},
    "workqueue_adds": {"name", "controller"},
    "workqueue_queue_duration_seconds": {"name", "controller"},
    "workqueue_work_duration_seconds": {"name", "controller"},
    "workqueue_unfinished_work_seconds": {"name", "controller"},
    "workqueue_longest_running_processor_seconds": {"name", "controller"},
    "rest_client_requests": {"code", "method", "host"},
    "leader_election_master_status": {"name"},
}


def scrape(metrics: Metrics) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    families = text_string_to_metric_families(metrics.render().decode())
    return {f.name: [(s.name, s.labels, s.value) for s in f.samples] for f in families}


def test_the_names_and_label_sets_are_controller_runtimes() -> None:
    metrics = Metrics()
    metrics.workers(4, lambda: 0)
    metrics.leader = True
    metrics.observe_work(0.01)
    metrics.observe_retry()
    samples = scrape(metrics)
    for family, labels in UPSTREAM.items():
        if family in ("controller_runtime_reconcile", "controller_runtime_reconcile_errors", "workqueue_adds",
                      "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds", "rest_client_requests"):
            continue  # no sample before the first outcome, add or request; checked after a run below
        shown = [s for s in samples[family] if not s[0].endswith("_created") and not s[0].endswith("_bucket")]
        assert shown and all(set(s[1]) == labels for s in shown), (family, shown)
    assert ("controller_runtime_max_concurrent_reconciles", {"controller": CONTROLLER}, 4.0) in samples[
        "controller_runtime_max_concurrent_reconciles"]
    assert ("leader_election_master_status", {"name": LEASE_NAME}, 1.0) in samples["leader_election_master_status"]


def test_a_running_reconciler_counts_reconciles_errors_and_retries_in_controller_runtimes_names() -> None:
    with FakeAPIServer(namespaces=("default",)) as cluster:
        make_cr(cluster, "a", size=1)
        with running(cluster) as c:
            wait_for(lambda: deployment(cluster, "a") is not None, what="the Deployment")
            cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=500, times=3))
            live = deployment(cluster, "a")
            live["spec"]["replicas"] = 3  # kubectl edit: an update (PUT), so only our applies meet the fault
            code, _, data = cluster.handle("PUT", DEP_PATH.format(ns="default", name="a"),
                                           {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/json"}, json.dumps(live).encode())
            assert code == 200, data
            wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, timeout=15, what="the retried correction")
            # the correction is written before its worker lets the key go and counts it: wait for that
            wait_for(lambda: len(c.queue) == 0 and c.queue.wait_idle(0)
                     and c.metrics.value("controller_runtime_reconcile_total", {"controller": CONTROLLER, "result": "success"}) >= 2
                     and c.metrics.value("controller_runtime_active_workers", {"controller": CONTROLLER}) == 0,
                     timeout=15, what="the workers idle with the reconciles counted")
            samples = scrape(c.metrics)
    value = {(name, tuple(sorted(labels.items()))): v for family in samples.values() for name, labels, v in family}
    assert value[("controller_runtime_reconcile_total", (("controller", CONTROLLER), ("result", "success")))] >= 2
    assert value[("controller_runtime_reconcile_total", (("controller", CONTROLLER), ("result", "error")))] >= 1
    assert value[("controller_runtime_reconcile_errors_total", (("controller", CONTROLLER),))] >= 1
    assert value[("workqueue_retries_total", (("controller", CONTROLLER), ("name", CONTROLLER)))] >= 1
    assert value[("controller_runtime_reconcile_time_seconds_count", (("controller", CONTROLLER),))] >= 3
    assert value[("controller_runtime_active_workers", (("controller", CONTROLLER),))] == 0, "every worker let its key go"
    for family, labels in UPSTREAM.items():
        shown = [s for s in samples[family] if not s[0].endswith(("_created", "_bucket"))]
        assert shown and all(set(s[1]) == labels for s in shown), (family, shown)


def test_the_work_queue_counts_adds_waits_and_work_as_client_go_does() -> None:
    """client-go's queueMetrics on our queue: adds of a key already waiting do not count; a key added
    while held counts and waits from that add; its first add starts its wait; unfinished work and the
    longest-running processor read the held keys' ages at the scrape; depth counts a held key's re-add."""
    from memcached_gitops.reconciler.client.workqueue import WorkQueue
    from memcached_gitops.reconciler.orchestration.metrics import QUEUE_BUCKETS

    assert QUEUE_BUCKETS[0] == 1e-8 and len(QUEUE_BUCKETS) == 12 and abs(QUEUE_BUCKETS[-1] - 1000.0) < 1e-9
    clock = ManualClock(100.0)
    metrics = Metrics()
    metrics.workqueue.clock = clock
    q: WorkQueue[str] = WorkQueue(clock=clock, delay_thread=False, observer=metrics.workqueue)
    metrics.workers(2, lambda: len(q))
    labels = {"name": CONTROLLER, "controller": CONTROLLER}

    def value(name: str, extra: dict[str, str] | None = None) -> float:
        return metrics.value(name, {**labels, **(extra or {})})

    q.add("a")
    clock.now += 1.0
    q.add("a")  # waiting already: no add
    q.add("b")
    assert value("workqueue_adds_total") == 2 and value("workqueue_depth", {"priority": ""}) == 2
    clock.now += 2.0
    assert q.get(0) is not None  # a, after 3 s in the queue
    assert value("workqueue_queue_duration_seconds_count") == 1 and value("workqueue_queue_duration_seconds_sum") == 3.0
    q.add("a")  # while held: an add, and a wait that starts now
    assert value("workqueue_adds_total") == 3 and value("workqueue_depth", {"priority": ""}) == 2
    assert len(q) == 1, "our own depth counts the keys ready to take"
    clock.now += 4.0
    assert value("workqueue_unfinished_work_seconds") == 4.0 and value("workqueue_longest_running_processor_seconds") == 4.0
    assert q.get(0) is not None  # b, after 6 s
    clock.now += 1.0
    assert value("workqueue_unfinished_work_seconds") == 5.0 + 1.0 and value("workqueue_longest_running_processor_seconds") == 5.0
    q.done("a")  # 5 s of work; queued again
    assert value("workqueue_work_duration_seconds_count") == 1 and value("workqueue_work_duration_seconds_sum") == 5.0
    q.done("b")
    assert value("workqueue_work_duration_seconds_sum") == 6.0
    assert value("workqueue_unfinished_work_seconds") == 0 and value("workqueue_longest_running_processor_seconds") == 0
    clock.now += 2.0
    item = q.get(0)
    assert item is not None and item[0] == "a"
    assert value("workqueue_queue_duration_seconds_sum") == 3.0 + 6.0 + 7.0, "a waited from its add while held, 7 s ago"
    q.done("a")
    q.done("a")  # not held: nothing to observe
    assert value("workqueue_work_duration_seconds_count") == 3
    assert value("workqueue_depth", {"priority": ""}) == 0


def test_every_attempt_is_counted_by_code_method_and_host() -> None:
    """rest_client_requests_total on a real HTTP stack: a 500 retried, then a 200; a 404; a request
    to a port where nothing listens (no answer: ``<error>``)."""
    from types import SimpleNamespace

    import pytest
    from memcached_gitops.reconciler.client.api import APIError, KubeAPI, RetryPolicy, WatchDropped

    with FakeAPIServer(namespaces=("default",)) as cluster:
        make_cr(cluster, "a", size=1)
        api = KubeAPI.connect(host=cluster.url, retry=RetryPolicy(attempts=3, base=0.001, cap=0.002))
        metrics = Metrics()
        metrics.api_results = api.results
        host = cluster.url.split("://", 1)[1]
        cluster.faults.append(Fault(method="GET", path_contains="/memcacheds/a", status=500, times=1))
        api.request("GET", "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/a")
        try:
            api.request("GET", "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/nope")
        except APIError as exc:
            assert exc.status == 404
        samples = scrape(metrics)["rest_client_requests"]
        counts = {(s[1]["code"], s[1]["method"], s[1]["host"]): s[2] for s in samples if s[0] == "rest_client_requests_total"}
        assert counts == {("500", "GET", host): 1.0, ("200", "GET", host): 1.0, ("404", "GET", host): 1.0}, counts
        for _ in api.watch("/apis/apps/v1/namespaces/default/deployments", {"timeoutSeconds": 1}, 5.0):
            pass
        assert api.results[("200", "GET", host)] == 2, "a watch the server answered counts as a GET with its code"
    nowhere = KubeAPI.connect(host="http://127.0.0.1:9", retry=RetryPolicy(attempts=2, base=0.001, cap=0.002))
    try:
        nowhere.request("GET", "/api")
    except APIError:
        pass
    assert nowhere.results == {("<error>", "GET", "127.0.0.1:9"): 2}
    with pytest.raises(WatchDropped):
        list(nowhere.watch("/api/v1/pods", {}, 1.0))
    assert nowhere.results == {("<error>", "GET", "127.0.0.1:9"): 3}, "a watch with no answer is an <error> GET"
    no_base = KubeAPI(client=SimpleNamespace(configuration=SimpleNamespace(host="")))
    no_base.count_result(200, "GET")
    assert no_base.results == {("200", "GET", "none"): 1}, "client-go's host when there is no base URL"


def test_each_served_crs_conditions_and_the_cached_count_are_exported_from_the_cache() -> None:
    """memcached_gitops_status_condition as kube-state-metrics names a Deployment's, one series per
    condition of each CR this replica serves; memcached_gitops_crs counts the cache."""
    from tests.support.unwired import cr, make, store

    c = make()
    degraded = cr("a")
    degraded["status"] = {"conditions": [{"type": "Degraded", "status": "True", "reason": "FieldManagerFight"},
                                         {"type": "Ready", "status": "False"}, {"status": "True"}, "junk"]}
    store(c, "Memcached", degraded, cr("b"))
    samples = scrape(c.metrics)
    assert [(s[1], s[2]) for s in samples["memcached_gitops_status_condition"]] == [
        ({"namespace": "default", "memcached": "a", "condition": "Degraded", "status": "true"}, 1.0),
        ({"namespace": "default", "memcached": "a", "condition": "Ready", "status": "false"}, 1.0)]
    assert c.metrics.value("memcached_gitops_crs") == 2
    c.owned_keys = lambda: [("default", "b")]  # type: ignore[method-assign]  # a shard that serves b only
    assert scrape(c.metrics)["memcached_gitops_status_condition"] == []


def test_the_lease_holder_is_one_series_the_holder_as_last_read() -> None:
    """After a hand-over the old holder's series goes: a scrape never shows two holders (the
    dashboard's holder panel and an alert on count() read it); no holder, no series."""
    metrics = Metrics()

    def holders() -> dict[str, float]:
        return {s.labels["identity"]: s.value for f in text_string_to_metric_families(metrics.render().decode())
                for s in f.samples if s.name == "memcached_gitops_lease_holder"}

    assert holders() == {}
    metrics.holder = "replica-1"
    assert holders() == {"replica-1": 1.0}
    metrics.holder = "replica-1"
    assert holders() == {"replica-1": 1.0}
    metrics.holder = "replica-2"
    assert holders() == {"replica-2": 1.0}
    metrics.holder = ""
    assert holders() == {}


def test_only_a_reconcile_retried_with_backoff_is_controller_runtimes_error() -> None:
    """controller_runtime_reconcile_total{result="error"} and ..._errors_total count what a kubebuilder
    Reconcile returns an error for: a write the API server refused or could not take (FAILED, retried
    with backoff), which MemcachedReconcileErrors and its runbook (docs/guides/operating.md) are about.
    A CR that cannot be served as written (an invalid spec or annotation, a Deployment not ours) is a
    reconcile that succeeded in saying so on the CR (Degraded), as a kubebuilder operator returns nil
    with a condition set: memcached_gitops_errors_total counts it by its action (the reason label), never as a reconcile error."""
    from memcached_gitops.reconciler.decisions.vocabulary import FAILURES, Action
    from memcached_gitops.reconciler.orchestration.cycle import CROutcome

    for action in Action:
        metrics = Metrics()
        metrics.observe_outcome(CROutcome("default", "a", action))
        failed = action is Action.FAILED
        assert metrics.value("controller_runtime_reconcile_total", {"controller": CONTROLLER, "result": "error"}) == failed, action
        assert metrics.value("controller_runtime_reconcile_total", {"controller": CONTROLLER, "result": "success"}) == (not failed), action
        assert metrics.value("controller_runtime_reconcile_errors_total", {"controller": CONTROLLER}) == failed, action
        assert metrics.value("memcached_gitops_errors_total", {"reason": action.value}) == (action in FAILURES), action


def test_the_reconcile_counters_are_exported_at_zero_before_the_first_reconcile() -> None:
    """As controller-runtime's initMetrics (pkg/internal/controller/controller.go) sets them when a
    controller starts: controller_runtime_reconcile_total for both results and ..._errors_total are
    series at 0 before any outcome, so that the first error is a rise rate() and increase() see
    (an alert on a series that appears at 1 never fires for it)."""
    metrics = Metrics()
    metrics.workers(2, lambda: 0)
    samples = {(s[0], tuple(sorted(s[1].items()))): s[2] for family in scrape(metrics).values() for s in family}
    for result in ("error", "success"):
        assert samples[("controller_runtime_reconcile_total", (("controller", CONTROLLER), ("result", result)))] == 0
    assert samples[("controller_runtime_reconcile_errors_total", (("controller", CONTROLLER),))] == 0
    assert samples[("controller_runtime_active_workers", (("controller", CONTROLLER),))] == 0


def test_the_cached_count_is_every_cr_in_the_cache_whatever_share_this_replica_serves() -> None:
    """memcached_gitops_crs counts every CR in the cache, also on a shard that serves only some of
    them: MemcachedCRsNotServed compares the largest count with the sum of the shares, so a count of
    the share alone could never show a CR that no replica serves."""
    from tests.support.unwired import cr, make, store

    c = make()
    store(c, "Memcached", cr("a"), cr("b"), cr("c"))
    c.owned_keys = lambda: [("default", "b")]  # type: ignore[method-assign]  # a shard that serves b only
    assert c.metrics.value("memcached_gitops_crs") == 3
    c.owned_keys = lambda: []  # type: ignore[method-assign]  # a shard that serves none yet
    assert c.metrics.value("memcached_gitops_crs") == 3



def test_a_replica_that_holds_no_lease_exports_the_leader_series_at_0() -> None:
    """client-go's NewLeaderElector sets leader_election_master_status to 0 before its first try
    (tools/leaderelection/leaderelection.go: ``le.metrics.leaderOff(le.config.Name)``), so a standby
    exports the series from the start: when no replica can take the Lease (its writes refused), the
    shipped MemcachedNoLeader alert (``max(...) < 1``) has series to read, and fires."""
    with FakeAPIServer(namespaces=("default",)) as cluster:
        for method in ("POST", "PUT"):
            cluster.faults.append(Fault(method=method, path_contains="/leases", status=403, times=100_000))
        with running(cluster, elect=True, lease=(15, 10, 0.1), wait_leader=False) as c:
            wait_for(lambda: any("/leases" in r.path and r.status == 403 for r in cluster.log), what="a refused try for the Lease")
            samples = scrape(c.metrics)["leader_election_master_status"]
            assert ("leader_election_master_status", {"name": LEASE_NAME}, 0.0) in samples, samples
            assert not c.leading.is_set()


# ---- the series each input makes, against reference models
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=100, deadline=None)
@given(sequence=st.lists(st.sampled_from(["replica-1", "replica-2", "replica-3", ""]), max_size=12))
def test_the_lease_holder_series_is_the_last_holder_read_whatever_came_before(sequence: list[str]) -> None:
    """Any sequence of holders read (a hand-over, a Lease found empty, the same holder read again, a
    holder coming back after another or after none): one series, the last holder read, or none when
    the last read found no holder."""
    metrics = Metrics()
    for identity in sequence:
        metrics.holder = identity
        series = {s.labels["identity"]: s.value for f in metrics.lease_holder.collect() for s in f.samples}
        assert series == ({identity: 1.0} if identity else {}), sequence
        assert metrics.holder == identity


_statuses = st.one_of(st.sampled_from(["True", "False", "Unknown", "TRUE", "false"]), st.just(...))
_conditions = st.one_of(
    st.builds(lambda t, s, extra: {"type": t, **({} if s is ... else {"status": s}), **extra},
              st.sampled_from(["Ready", "Degraded", "Progressing", ""]), _statuses,
              st.sampled_from([{}, {"reason": "FieldManagerFight", "message": "m"}])),
    st.sampled_from(["junk", None, 3, ["Ready"]]))
_crs = st.lists(st.tuples(st.sampled_from(["default", "team-a"]), st.sampled_from(["a", "b"]),
                          st.one_of(st.none(), st.lists(_conditions, max_size=4)), st.booleans()), max_size=4)


@settings(max_examples=100, deadline=None)
@given(crs=_crs)
def test_each_condition_of_each_served_cr_is_one_series_in_kube_state_metrics_form(crs: list[tuple[str, str, Any, bool]]) -> None:
    """Any CRs (the same name in two namespaces, no status, conditions missing or holding junk) with
    any conditions (a status in any case or none, an empty type): one series per condition that has a
    type, labelled with its CR's namespace and name, its type, and its status in lower case
    ("unknown" when it has none), value 1, as kube-state-metrics' kube_deployment_status_condition."""
    served = []
    for ns, name, conditions, with_status in crs:
        cr: dict[str, Any] = {"metadata": {"namespace": ns, "name": name}}
        if with_status:
            cr["status"] = {} if conditions is None else {"conditions": conditions}
        served.append(cr)
    expected = [{"namespace": ns, "memcached": name, "condition": c["type"], "status": str(c.get("status", "Unknown")).lower()}
                for ns, name, conditions, with_status in crs if with_status
                for c in conditions or [] if isinstance(c, dict) and c["type"]]
    metrics = Metrics()
    metrics.conditions.source = lambda: served
    got = [s.labels for f in metrics.conditions.collect() for s in f.samples if s.value == 1.0]
    assert sorted(sorted(d.items()) for d in got) == sorted(sorted(d.items()) for d in expected)


from memcached_gitops.reconciler.decisions.vocabulary import Action  # noqa: E402

_drifts = st.lists(st.sampled_from([(), (("f", "spec"), ("f", "replicas")), (("f", "metadata"), ("f", "labels"))]), max_size=3)


@settings(max_examples=50, deadline=None)
@given(drift=_drifts,
       companion_drift=st.lists(st.tuples(st.sampled_from(["Service memcached-a", "PodDisruptionBudget memcached-a",
                                                           "Service memcached-b"]), _drifts.map(lambda d: d[0] if d else ())),
                                max_size=3),
       failures=st.lists(st.tuples(st.sampled_from(["Deployment", "Service"]), st.sampled_from([0, 409, 422, 500])), max_size=3))
def test_each_outcome_counts_its_fields_by_kind_and_its_refused_writes_by_code(
        drift: list[Any], companion_drift: list[Any], failures: list[tuple[str, int]]) -> None:
    """Any outcome, of every action, in a dry run or not: each drifted field is counted once, as
    corrected only when the cycle may write and did not only detect (a dry run or --detect-only
    count it as detected), the whole object as
    ``<object>``, a companion's under its kind alone (never its name: one series per kind and
    field, whatever the CRs); each refused write by its kind and HTTP status; the reconcile is
    controller-runtime's error only when FAILED."""
    from collections import Counter as Counted

    from memcached_gitops.reconciler.decisions.drift import Drift, format_drift_path
    from memcached_gitops.reconciler.decisions.vocabulary import FAILURES
    from memcached_gitops.reconciler.orchestration.cycle import CompanionOutcome, CROutcome
    from memcached_gitops.reconciler.orchestration.write_apply import WriteFailure

    for action in Action:
        for dry_run in (False, True):
            outcome = CROutcome("default", "a", action, drift=[Drift(p, 1, 2, ("kubectl",)) for p in drift],
                                companions=CompanionOutcome(drift=[(where, Drift(p, 1, 2, ())) for where, p in companion_drift]),
                                failures=[WriteFailure(kind, "default/a", "apply", code, "refused") for kind, code in failures])
            metrics = Metrics()
            metrics.observe_outcome(outcome, dry_run)
            fields = Counted([format_drift_path(p) or "<object>" for p in drift] +
                             [f"{where.split()[0]} {format_drift_path(p) or '<object>'}" for where, p in companion_drift])
            detected = dry_run or action is Action.DRIFTED

            def series(name: str, metrics: Metrics = metrics) -> dict[str, float]:
                return {s.labels["field"]: s.value for f in metrics.registry.collect() for s in f.samples if s.name == name}

            assert series("memcached_gitops_drift_detected_total") == (dict(fields) if detected else {}), (action, dry_run)
            assert series("memcached_gitops_drift_corrections_total") == ({} if detected else dict(fields)), (action, dry_run)
            for (kind, code), count in Counted(failures).items():
                assert metrics.value("memcached_gitops_write_failures_total", {"kind": kind, "code": str(code)}) == count
            assert metrics.value("memcached_gitops_errors_total", {"reason": action.value}) == (action in FAILURES)
            assert metrics.value("controller_runtime_reconcile_total",
                                 {"controller": CONTROLLER, "result": "error"}) == (action is Action.FAILED)


def test_every_seconds_histogram_resolves_a_latency_within_a_factor_of_ten() -> None:
    """Every histogram exported in seconds has its bucket bounds in seconds: a latency from 10 ms to 10 s
    falls in a bucket whose bound is at most ten times it, so the quantiles the dashboard computes
    (histogram_quantile) are of the latency's order, never a bound in another unit."""
    metrics = Metrics()
    # the labelled histograms export their buckets once their controller's series exists
    for labelled in (metrics.reconcile_time.labels(CONTROLLER), metrics.workqueue.latency.labels(CONTROLLER, CONTROLLER),
                     metrics.workqueue.work.labels(CONTROLLER, CONTROLLER)):
        labelled.observe(0)
    bounds: dict[str, list[float]] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if family.type == "histogram" and family.name.endswith("_seconds") and sample.name.endswith("_bucket"):
                bounds.setdefault(family.name, []).append(float(sample.labels["le"]))
    assert len(bounds) == 6, sorted(bounds)
    for name, les in bounds.items():
        for latency in (0.01, 0.1, 1.0, 10.0):
            assert min(le for le in les if le >= latency) <= 10 * latency, (name, latency, sorted(les))


#: controller-runtime's reconcile_time_seconds buckets (pkg/internal/controller/metrics/metrics.go 63-64, above).
UPSTREAM_RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
                              1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60)
#: client-go's prometheus.ExponentialBuckets(10e-9, 10, 12) of the queue's durations (pkg/metrics/workqueue.go, above).
UPSTREAM_QUEUE_BUCKETS = tuple(10e-9 * 10**i for i in range(12))


def scraped_bounds(metrics: Metrics, family: str) -> list[float]:
    """The finite ``le`` bounds of ``family``'s buckets, in the order the scrape gives them."""
    parsed = {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}
    return [float(s.labels["le"]) for s in parsed[family].samples
            if s.name == f"{family}_bucket" and s.labels["le"] != "+Inf"]


def test_every_bucket_of_the_reconcile_and_queue_histograms_is_controller_runtimes() -> None:
    """A dashboard made for a kubebuilder operator reads quantiles and SLO ratios off named buckets
    (``le="0.15"``): every bound exported is controller-runtime's, none missing and none added, or
    ``histogram_quantile`` over ours and the Go operator's together mixes two bucket layouts and a
    ratio over ``le="0.15"`` reads nothing."""
    metrics = Metrics()
    metrics.observe_work(0.0)
    metrics.workqueue.added("k")
    metrics.workqueue.taken("k")
    metrics.workqueue.finished("k")
    assert scraped_bounds(metrics, "controller_runtime_reconcile_time_seconds") == list(UPSTREAM_RECONCILE_BUCKETS)
    for family in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        bounds = scraped_bounds(metrics, family)
        assert len(bounds) == len(UPSTREAM_QUEUE_BUCKETS), family
        assert all(abs(ours - theirs) <= 1e-9 * theirs for ours, theirs in zip(bounds, UPSTREAM_QUEUE_BUCKETS, strict=True)), family
