"""Prometheus metrics of a cache, off unless ``spec.metrics.enabled``: the memcached exporter as a
sidecar and, with ``spec.metrics.podMonitor.enabled``, a prometheus-operator PodMonitor. Pure.

- **The sidecar** is prometheus/memcached_exporter, which reads ``stats`` from memcached at
  ``--memcached.address`` and serves them at ``/metrics`` on ``--web.listen-address`` (default
  ``:9150``; cmd/memcached_exporter/main.go @0578a40d, lines 36-40). It talks to memcached over the
  Pod's loopback, so nothing else needs to reach memcached's stats. Its port is named ``metrics``;
  where memcached itself listens on 9150, the exporter takes 9151 (two containers of a Pod share
  its ports). Same restricted security context as memcached, small fixed resources.
- **The PodMonitor** (monitoring.coreos.com/v1) selects the Deployment's Pods by their selector and
  scrapes the ``metrics`` port, so no Service port is needed (the headless Service stays
  memcached's alone). Named like the Service and budget, with the Deployment's labels plus
  ``podMonitor.labels`` (a Prometheus's ``podMonitorSelector`` often asks for one, ``release: ...``).
"""

from __future__ import annotations

from typing import Any

#: quay.io/prometheus/memcached-exporter, the newest release (0.15.2, 2025-03-21: CHANGELOG.md)
DEFAULT_EXPORTER_IMAGE = "quay.io/prometheus/memcached-exporter:v0.15.2"
CONTAINER_NAME = "exporter"
PORT_NAME = "metrics"
PORT, PORT_ELSE = 9150, 9151
RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}}


def _settings(spec: dict[str, Any]) -> dict[str, Any]:
    metrics = spec.get("metrics")
    return metrics if isinstance(metrics, dict) else {}


def exporter_port(memcached_port: int) -> int:
    """The exporter's port: 9150, unless memcached listens there."""
    return PORT_ELSE if memcached_port == PORT else PORT


def exporter_container(spec: dict[str, Any], memcached_port: int, security_context: dict[str, Any]) -> dict[str, Any] | None:
    """The sidecar, or None when metrics are not enabled."""
    metrics = _settings(spec)
    if metrics.get("enabled") is not True:
        return None
    port = exporter_port(memcached_port)
    return {
        "name": CONTAINER_NAME,
        "image": metrics.get("image") or DEFAULT_EXPORTER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": [f"--memcached.address=localhost:{memcached_port}", f"--web.listen-address=:{port}"],
        "ports": [{"containerPort": port, "name": PORT_NAME, "protocol": "TCP"}],
        "resources": {section: dict(values) for section, values in RESOURCES.items()},
        "securityContext": dict(security_context, capabilities={"drop": ["ALL"]}),
    }


def render_pod_monitor(spec: dict[str, Any], name: str, namespace: str | None, labels: dict[str, str],
                       selector: dict[str, str]) -> dict[str, Any] | None:
    """The PodMonitor, or None unless both metrics and the PodMonitor are enabled."""
    metrics = _settings(spec)
    monitor: dict[str, Any] = metrics["podMonitor"] if isinstance(metrics.get("podMonitor"), dict) else {}
    if metrics.get("enabled") is not True or monitor.get("enabled") is not True:
        return None
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = {**(monitor.get("labels") or {}), **labels}  # ours win: they say who manages it
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": metadata,
        "spec": {"selector": {"matchLabels": dict(selector)}, "podMetricsEndpoints": [{"port": PORT_NAME}]},
    }
