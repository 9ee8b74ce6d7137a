"""The monitoring components against prometheus-operator's own CRDs at their commit
(prometheus-operator/prometheus-operator fadceb3 `example/prometheus-operator-crd/`, read from ../shared/upstream),
as kubeconform would check them with those
CRDs' schemas: the PrometheusRule and the ServiceMonitor that every overlay builds with
kustomize/components/monitoring and kustomize/components/servicemonitor are valid under them (the
other objects of those builds are held to the Kubernetes schemas by tests/delivery/test_kustomize.py), by the
validator that judges our CRs. A misspelt field is caught (the check can fail)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from memcached_gitops.schemas import Validator, load_crd

from tests.conftest import REPO
from tests.support.kustomize import KUBECTL
from tests.upstream import needs_upstream, upstream

UPSTREAM = upstream("prometheus-operator")
CRDS = {"PrometheusRule": UPSTREAM / "monitoring.coreos.com_prometheusrules.yaml",
        "ServiceMonitor": UPSTREAM / "monitoring.coreos.com_servicemonitors.yaml",
        "PodMonitor": UPSTREAM / "monitoring.coreos.com_podmonitors.yaml"}
COMPONENTS = REPO / "kustomize" / "components"
OVERLAYS = sorted(p.name for p in (REPO / "kustomize" / "overlays").iterdir() if (p / "kustomization.yaml").exists())


@needs_upstream
def test_the_vendored_crds_are_the_files_source_md_names() -> None:
    source = (UPSTREAM / "SOURCE.md").read_text()
    for path in CRDS.values():
        section = source.split(f"## {path.name}\n", 1)[1].split("\n## ", 1)[0]
        digest = re.search(r"sha256: ([0-9a-f]{64})", section)
        assert digest and hashlib.sha256(path.read_bytes()).hexdigest() == digest.group(1), path.name
        assert re.search(r"commit: [0-9a-f]{40}", section), path.name


def monitored(overlay: str, tmp_path: Path) -> list[dict]:
    """``overlay`` with the ServiceMonitor and the alerts and dashboard, built by the real kustomize."""
    here = tmp_path / overlay
    here.mkdir()
    (here / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(REPO / "kustomize" / "overlays" / overlay, here)],
        "components": [os.path.relpath(COMPONENTS / "servicemonitor", here), os.path.relpath(COMPONENTS / "monitoring", here)]}))
    out = subprocess.run([KUBECTL, "kustomize", str(here)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@needs_upstream
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_with_monitoring_is_valid_under_prometheus_operators_crds(overlay: str, tmp_path: Path) -> None:
    objects = monitored(overlay, tmp_path)
    checked = [o for o in objects if o["kind"] in CRDS]
    assert {o["kind"] for o in checked} == set(CRDS) - {"PodMonitor"}, overlay  # the overlays monitor the reconciler, no Pods
    for obj in checked:
        outcome = Validator(load_crd(str(CRDS[obj["kind"]]))).validate(obj)
        assert outcome.ok and not outcome.warnings, (overlay, obj["kind"], outcome.errors, outcome.warnings)


@needs_upstream
def test_a_misspelt_rule_field_is_caught() -> None:
    rule = yaml.safe_load((COMPONENTS / "monitoring" / "prometheusrule.yaml").read_text())
    rule["metadata"]["namespace"] = "monitoring"
    rule["spec"]["groups"][0]["rules"][0]["expresion"] = rule["spec"]["groups"][0]["rules"][0].pop("expr")
    errors = Validator(load_crd(str(CRDS["PrometheusRule"]))).validate(rule).errors
    assert errors and any("expresion" in e.path or "expr" in e.path for e in errors), errors
