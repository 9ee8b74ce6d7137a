"""A real Prometheus scrapes a running reconciler and evaluates every shipped expression.

The reconciler runs on the fake API server with its metrics served as the plain server serves them
(``--no-metrics-secure``); Debian's ``prometheus`` (started here, its own TSDB in a temporary folder)
scrapes it every second and loads kustomize/components/monitoring's rules. Then:

- every alert's and every dashboard panel's expression is evaluated by Prometheus's query API without
  an error;
- every metric an expression names is one Prometheus has scraped: its metadata (the ``# TYPE`` lines
  of our exposition) lists it, so a misspelt or unexported name fails (tried below with one);
- every label an expression matches or groups by is one the scraped series carry, where any series
  of that metric has been scraped yet;
- every alerting rule has been evaluated by Prometheus with no error.

Skipped, with the reason, where the ``prometheus`` binary is missing (Debian: apt-get install
prometheus; .ci/run installs it where it can).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from memcached_gitops.reconciler.orchestration.serving import METRICS, serve

from fakeapi.server import FakeAPIServer, Fault
from tests.conftest import REPO
from tests.support.controller import SCALE, running, wait_for
from tests.support.fakecluster import deployment, make_cr, patch
from tests.support.metrics_endpoint import free_port
from tests.support.monitoring import DASHBOARD, GROUPING, NAME, RULES, TARGET_LABELS, expressions

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian: apt-get install prometheus)")
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


def get(base: str, path: str, **query: str) -> Any:
    url = f"{base}{path}" + ("?" + urllib.parse.urlencode(query) if query else "")
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (a local Prometheus)
        return json.loads(response.read())


#: The shipped ServiceMonitor's endpoint (kustomize/components/servicemonitor).
SERVICE_MONITOR = REPO / "kustomize" / "components" / "servicemonitor" / "servicemonitor.yaml"
ENDPOINT = yaml.safe_load(SERVICE_MONITOR.read_text())["spec"]["endpoints"][0]
#: The labels the Prometheus Operator gives every target of a ServiceMonitor (its relabelling of the
#: endpoints' metadata): the reconciler's own namespace, Service, Pod and container.
OPERATOR_TARGET_LABELS = {"namespace": "memcached-gitops-system", "service": "memcached-gitops", "pod": "memcached-gitops-7d9f-x2",
                          "container": "manager", "endpoint": ENDPOINT["port"]}


def scrape_config(target: str) -> dict[str, Any]:
    """The job the Prometheus Operator writes for the shipped ServiceMonitor: its ``honorLabels`` as the
    job's ``honor_labels``, and its target labels on the target."""
    return {"job_name": "reconciler", "honor_labels": bool(ENDPOINT.get("honorLabels", False)),
            "static_configs": [{"targets": [target], "labels": OPERATOR_TARGET_LABELS}]}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeAPIServer]]:
    """A reconciler with drift corrected, scraped by a real Prometheus with the shipped rules loaded."""
    with FakeAPIServer(namespaces=("default",)) as cluster:
        make_cr(cluster, "a", size=1)
        with running(cluster) as controller:
            wait_for(lambda: deployment(cluster, "a") is not None, what="the Deployment")
            patch(cluster, SCALE, {"spec": {"replicas": 3}}, "application/merge-patch+json")
            wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, what="the correction")
            # a write the API server keeps refusing (the RBAC of Services taken away): b's Service
            cluster.faults.append(Fault(method="PATCH", path_contains="/services/b-memcached", status=403, times=10**6))
            make_cr(cluster, "b", size=1)
            wait_for(lambda: deployment(cluster, "b") is not None, what="b's Deployment")
            port = free_port()
            server = serve(controller.metrics, port, "127.0.0.1", paths=METRICS)
            tmp = tmp_path_factory.mktemp("prometheus")
            try:
                (tmp / "rules.yaml").write_text(yaml.safe_dump({"groups": [
                    {**group, "interval": "1s"} for group in RULES["spec"]["groups"]]}))
                (tmp / "prometheus.yml").write_text(yaml.safe_dump({
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(tmp / "rules.yaml")],
                    "scrape_configs": [scrape_config(f"127.0.0.1:{port}")]}))
                web = free_port()
                proc = subprocess.Popen([str(PROMETHEUS), f"--config.file={tmp / 'prometheus.yml'}",
                                         f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{web}"],
                                        stdout=subprocess.DEVNULL, stderr=(tmp / "prometheus.log").open("w"))
                base = f"http://127.0.0.1:{web}"
                try:
                    def scraped_enough() -> bool:
                        try:
                            answer = get(base, "/api/v1/query", query='count_over_time(up{job="reconciler"}[1m])')
                        except OSError:
                            return False
                        result = answer["data"]["result"]
                        return bool(result) and float(result[0]["value"][1]) >= 4 and proc.poll() is None

                    wait_for(scraped_enough, timeout=60, what="four scrapes by Prometheus")
                    yield base, cluster
                finally:
                    proc.terminate()
                    proc.wait(10)
            finally:
                server.shutdown()


def scraped_names(base: str) -> set[str]:
    return set(get(base, "/api/v1/metadata")["data"])


def known(name: str, names: set[str]) -> bool:
    return name in names or (name.endswith(HISTOGRAM_SUFFIXES) and name.rsplit("_", 1)[0] in names)


def test_the_target_is_up(prometheus: tuple[str, FakeAPIServer]) -> None:
    base, _ = prometheus
    [target] = get(base, "/api/v1/targets")["data"]["activeTargets"]
    assert target["health"] == "up", target


@pytest.mark.parametrize(("where", "expr"), expressions(), ids=[w for w, _ in expressions()])
def test_prometheus_evaluates_each_expression_over_what_it_scraped(prometheus: tuple[str, FakeAPIServer], where: str,
                                                                    expr: str) -> None:
    base, _ = prometheus
    answer = get(base, "/api/v1/query", query=expr)
    assert answer["status"] == "success", (where, answer)
    names = scraped_names(base)
    for name, matchers in NAME.findall(expr):
        assert known(name, names), f"{where}: Prometheus scraped no metric {name}"
        series = get(base, "/api/v1/series", **{"match[]": name})["data"]
        if not series:
            continue  # none yet (a fight, a retry): its labels are held by tests/reconciler/orchestration/test_monitoring.py
        labels = set().union(*(set(s) for s in series)) | TARGET_LABELS
        used = set(re.findall(r"(\w+)\s*=~?", matchers or ""))
        assert used <= labels, f"{where}: {name} has no label {used - labels}"
    for group in GROUPING.findall(expr):
        grouped = {g.strip() for g in group.split(",") if g.strip()}
        carried: set[str] = set(TARGET_LABELS)
        for name, _ in NAME.findall(expr):
            for s in get(base, "/api/v1/series", **{"match[]": name})["data"]:
                carried |= set(s)
        if carried != TARGET_LABELS:
            assert grouped <= carried, f"{where}: grouped by {grouped - carried}, which no scraped series has"


def test_a_name_we_do_not_export_is_caught(prometheus: tuple[str, FakeAPIServer]) -> None:
    base, _ = prometheus
    names = scraped_names(base)
    assert known("memcached_gitops_drift_corrections_total", names)
    assert known("controller_runtime_reconcile_time_seconds_bucket", names)
    assert not known("memcached_gitops_drift_corections_total", names)
    assert get(base, "/api/v1/query", query="sum(rate(memcached_gitops_drift_corrections_total[1m]))")["status"] == "success"


def test_every_alert_is_evaluated_by_prometheus_without_an_error(prometheus: tuple[str, FakeAPIServer]) -> None:
    base, _ = prometheus
    shipped = {r["alert"] for g in RULES["spec"]["groups"] for r in g["rules"]}

    def evaluated() -> dict[str, dict[str, Any]]:
        groups = get(base, "/api/v1/rules")["data"]["groups"]
        return {r["name"]: r for g in groups for r in g["rules"] if not r.get("lastEvaluation", "").startswith("0001")}

    wait_for(lambda: set(evaluated()) >= shipped, timeout=30, what="every rule evaluated once")
    for name, rule in evaluated().items():
        assert rule["health"] == "ok" and not rule.get("lastError"), (name, rule)
    assert DASHBOARD["panels"], "the dashboard's expressions are evaluated above"
    # a correction was scraped: the drift series are real samples, not only metadata
    answer = get(base, "/api/v1/query", query="sum(memcached_gitops_drift_corrections_total)")["data"]["result"]
    assert answer and float(answer[0]["value"][1]) >= 1


def test_a_refused_write_puts_its_alert_in_pending_over_the_real_scrape(prometheus: tuple[str, FakeAPIServer]) -> None:
    """The on-call page for a refused write, end to end: the process's own exposition of a 403 on b's
    Service, scraped by Prometheus, makes MemcachedWritesRefused pending (it fires after its ``for:``,
    held by promtool in test_monitoring.py), with the kind and code the runbook names. A series born at
    1 is no increase() to Prometheus: the rule must see it all the same."""
    base, _ = prometheus

    def pending() -> list[dict[str, Any]]:
        answer = get(base, "/api/v1/query", query='ALERTS{alertname="MemcachedWritesRefused"}')
        return [r["metric"] for r in answer["data"]["result"]]

    wait_for(lambda: bool(pending()), timeout=30, what="MemcachedWritesRefused pending")
    [alert] = pending()
    assert (alert["kind"], alert["code"], alert["alertstate"]) == ("Service", "403", "pending"), alert



def test_each_crs_series_keeps_the_crs_namespace_beside_the_targets_labels(prometheus: tuple[str, FakeAPIServer]) -> None:
    """memcached_gitops_status_condition names each CR's namespace as kube-state-metrics names an
    object's: scraped through the shipped ServiceMonitor, the series says the CR's namespace, not the
    reconciler's (which a job without honor_labels would put there, moving the CR's to
    exported_namespace), so ``kubectl get memcached -n NAMESPACE`` finds what an alert names."""
    base, _ = prometheus
    series = get(base, "/api/v1/series", **{"match[]": "memcached_gitops_status_condition"})["data"]
    assert series, "no condition series scraped"
    assert {s["namespace"] for s in series} == {"default"}, series
    assert not [s for s in series if "exported_namespace" in s], series
