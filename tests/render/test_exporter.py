"""The exporter sidecar and the PodMonitor (render/exporter.py): off by default, and when asked for,
what Kubernetes and the prometheus-operator's own CRD accept, wired to each other and to memcached."""

from __future__ import annotations

import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.render import render
from memcached_gitops.render.exporter import DEFAULT_EXPORTER_IMAGE
from memcached_gitops.schemas import Validator, load_crd

from tests.support.crs import memcached_cr
from tests.upstream import needs_upstream, upstream

POD_MONITOR_CRD = upstream("prometheus-operator/monitoring.coreos.com_podmonitors.yaml")

KUBERNETES_VERSION = "1.36.0"


def cr(spec: dict, name: str = "sessions") -> dict:
    return memcached_cr(name, "shop", {"size": 2, "containerPort": 11211, **spec})


def containers(manifests: list[dict]) -> dict[str, dict]:
    return {c["name"]: c for c in manifests[0]["spec"]["template"]["spec"]["containers"]}


@pytest.mark.parametrize("metrics", [None, {}, {"enabled": False, "podMonitor": {"enabled": True}}])
def test_off_unless_enabled(metrics: dict | None) -> None:
    manifests = render(cr({} if metrics is None else {"metrics": metrics}))
    assert list(containers(manifests)) == ["memcached"]
    assert [m["kind"] for m in manifests] == ["Deployment", "Service", "PodDisruptionBudget"]


@pytest.mark.parametrize("pod_monitor", [None, {}, {"enabled": False, "labels": {"release": "prom"}}])
def test_metrics_alone_run_the_sidecar_without_a_pod_monitor(pod_monitor: dict | None) -> None:
    """The PodMonitor is its own choice (``podMonitor.enabled``): metrics enabled without it add the
    sidecar only, for a Prometheus that finds the Pods by other means (no prometheus-operator CRD needed)."""
    metrics = {"enabled": True} if pod_monitor is None else {"enabled": True, "podMonitor": pod_monitor}
    manifests = render(cr({"metrics": metrics}))
    assert list(containers(manifests)) == ["memcached", "exporter"]
    assert [m["kind"] for m in manifests] == ["Deployment", "Service", "PodDisruptionBudget"]


def test_the_sidecar_reads_memcached_over_loopback_and_serves_the_metrics_port() -> None:
    both = containers(render(cr({"metrics": {"enabled": True}})))
    exporter, memcached = both["exporter"], both["memcached"]
    assert exporter["image"] == DEFAULT_EXPORTER_IMAGE
    assert exporter["args"] == ["--memcached.address=localhost:11211", "--web.listen-address=:9150"]
    assert exporter["ports"] == [{"containerPort": 9150, "name": "metrics", "protocol": "TCP"}]
    assert exporter["securityContext"] == memcached["securityContext"] == {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True,
        "runAsNonRoot": True, "runAsUser": 1001}
    assert exporter["securityContext"] is not memcached["securityContext"], "no shared object: an edit of one is no edit of both"
    assert exporter["securityContext"]["capabilities"] is not memcached["securityContext"]["capabilities"]
    assert exporter["imagePullPolicy"] == "IfNotPresent"
    assert exporter["resources"]["limits"] == {"memory": "32Mi"}


def test_memcached_on_the_exporters_port_moves_the_exporter() -> None:
    exporter = containers(render(cr({"containerPort": 9150, "metrics": {"enabled": True}})))["exporter"]
    assert exporter["args"] == ["--memcached.address=localhost:9150", "--web.listen-address=:9151"]
    assert exporter["ports"][0]["containerPort"] == 9151


def test_an_image_of_ones_own() -> None:
    assert containers(render(cr({"metrics": {"enabled": True, "image": "registry.local/exporter:1"}})))["exporter"]["image"] == \
        "registry.local/exporter:1"


@needs_upstream
@pytest.mark.contract
def test_with_metrics_every_object_is_valid_for_kubernetes_and_the_pod_monitor_for_its_crd() -> None:
    manifests = render(cr({"metrics": {"enabled": True, "podMonitor": {"enabled": True, "labels": {"release": "prom"}}}}))
    assert [m["kind"] for m in manifests] == ["Deployment", "Service", "PodDisruptionBudget", "PodMonitor"]
    for manifest in manifests[:3]:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    outcome = Validator(load_crd(str(POD_MONITOR_CRD))).validate(manifests[3])
    assert outcome.ok, outcome.errors


def test_the_pod_monitor_scrapes_the_deployments_pods_on_the_exporters_port() -> None:
    deployment, *_, monitor = render(cr({"metrics": {"enabled": True, "podMonitor": {"enabled": True, "labels": {"release": "prom"}}}}))
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert monitor["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    ports = {p["name"] for c in deployment["spec"]["template"]["spec"]["containers"] for p in c["ports"]}
    assert [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]] == ["metrics"] and "metrics" in ports
    assert monitor["metadata"]["name"] == "sessions-memcached" and monitor["metadata"]["namespace"] == "shop"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "memcached-gitops"


def test_the_pod_monitors_labels_never_replace_ours() -> None:
    *_, monitor = render(cr({"metrics": {"enabled": True, "podMonitor": {"enabled": True, "labels": {
        "app.kubernetes.io/managed-by": "someone"}}}}))
    assert monitor["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "memcached-gitops"


def test_the_crd_accepts_the_metrics_settings_and_refuses_their_misspellings() -> None:
    validator = Validator(load_crd())
    assert validator.validate(cr({"metrics": {"enabled": True, "podMonitor": {"enabled": True, "labels": {"a": "b"}}}})).ok
    errors = validator.validate(cr({"metrics": {"enabled": "yes", "podMonitor": {"enable": True}}})).errors
    assert {".".join(map(str, e.path)) for e in errors} >= {"spec.metrics.enabled", "spec.metrics.podMonitor.enable"}


_OURS = ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version",
         "app.kubernetes.io/component", "app.kubernetes.io/part-of"]


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from([*_OURS, "release", "team", "app.kubernetes.io/other"]), st.sampled_from(["prom", "x", ""]),
                       max_size=6))
def test_the_pod_monitors_labels_are_the_users_with_ours_over_them(asked: dict) -> None:
    """Whichever of our labels the CR's ``podMonitor.labels`` also names: the PodMonitor carries
    every label of the Deployment with the Deployment's value, and each other label asked for with
    its value, nothing else."""
    deployment, *_, monitor = render(cr({"metrics": {"enabled": True, "podMonitor": {"enabled": True, "labels": dict(asked)}}}))
    assert monitor["metadata"]["labels"] == {**asked, **deployment["metadata"]["labels"]}


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 65535) | st.sampled_from([9150, 9151, 11211]))
def test_the_exporter_reads_memcacheds_port_and_serves_its_own_whatever_the_port(port: int) -> None:
    """For every port memcached may listen on, the Pod's ports are distinct, the exporter reads
    memcached at its containerPort and listens where its own containerPort says."""
    both = containers(render(cr({"containerPort": port, "metrics": {"enabled": True}})))
    exporter, memcached = both["exporter"], both["memcached"]
    own = exporter["ports"][0]["containerPort"]
    assert own != memcached["ports"][0]["containerPort"] == port
    assert exporter["args"] == [f"--memcached.address=localhost:{port}", f"--web.listen-address=:{own}"]
