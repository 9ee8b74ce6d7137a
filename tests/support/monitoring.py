"""The monitoring component's alert rules and dashboard as shipped (kustomize/components/monitoring),
and the patterns that read the metric names and groupings out of their PromQL."""

from __future__ import annotations

import json
import re

import yaml

from tests.conftest import REPO

COMPONENT = REPO / "kustomize" / "components" / "monitoring"


RULES = yaml.safe_load((COMPONENT / "prometheusrule.yaml").read_text())


DASHBOARD = json.loads((COMPONENT / "dashboard.json").read_text())


#: labels a scrape adds to every series (Prometheus's target labels and the ServiceMonitor's)
TARGET_LABELS = {"job", "instance", "pod", "namespace", "service", "endpoint", "container", "le"}


def alerts() -> dict[str, dict]:
    return {r["alert"]: r for g in RULES["spec"]["groups"] for r in g["rules"]}


def expressions() -> list[tuple[str, str]]:
    return ([(f"alert {name}", rule["expr"]) for name, rule in alerts().items()]
            + [(f"panel {p['title']}", t["expr"]) for p in DASHBOARD["panels"] for t in p["targets"]])


NAME = re.compile(r"\b((?:memcached_gitops|controller_runtime|workqueue|leader_election|rest_client)_\w+)(\{[^}]*\})?")


GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
