"""controller-runtime's metric names and label sets, as a kubebuilder operator's manager exports them,
so that the dashboards and alerts written for the Go operator read ours.

Upstream (kubernetes-sigs/controller-runtime; file @commit: lines):
- pkg/internal/controller/metrics/metrics.go @03fe4cedb03ba7c8e799f9caf48505bb712a0c76: 32-35
  ``controller_runtime_reconcile_total`` {controller, result}; 39-42 ``..._reconcile_errors_total``
  {controller}; 60-65 ``..._reconcile_time_seconds`` {controller} (its buckets, 63-64); 69-72
  ``..._max_concurrent_reconciles`` {controller}; 76-79 ``..._active_workers`` {controller}.
- pkg/metrics/workqueue.go @09e935a36c40dbbe122e677bfecdf085b18f6421: 44-48 ``workqueue_depth`` {name,
  controller, priority}; 92-96 ``workqueue_retries_total`` {name, controller}; 135: name and controller
  are both the controller's name, priority "" without priorities.
- pkg/metrics/leaderelection.go @645b7230d6e57394b7ed00fd8b5f12986a4dbb3d: 12-15
  ``leader_election_master_status`` {name}; 41-43: 1 for the leader.
Not exported yet: workqueue adds, queue and work duration, unfinished work and longest-running processor
(they need the work queue's own hooks), and ``rest_client_requests_total`` {code, method, host}.
"""

from __future__ import annotations

import json

from memcached_gitops.reconciler.orchestration.metrics import CONTROLLER, LEASE_NAME, Metrics
from prometheus_client.parser import text_string_to_metric_families

from fakeapi.server import FakeAPIServer, Fault

from .test_controller import running, wait_for
from .test_reconciler import DEP_PATH, deployment, make_cr

UPSTREAM = {  # family name as the text format gives it -> its label names (histograms: of the _count sample)
    "controller_runtime_reconcile": {"controller", "result"},
    "controller_runtime_reconcile_errors": {"controller"},
    "controller_runtime_reconcile_time_seconds": {"controller"},
    "controller_runtime_max_concurrent_reconciles": {"controller"},
    "controller_runtime_active_workers": {"controller"},
    "workqueue_depth": {"name", "controller", "priority"},
    "workqueue_retries": {"name", "controller"},
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
        if family == "controller_runtime_reconcile" or family == "controller_runtime_reconcile_errors":
            continue  # no sample before the first outcome; checked after a run below
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
