"""Render a Memcached CR into its Deployment: pure, deterministic, no I/O.

The Deployment follows the kubebuilder tutorial's ``deploymentForMemcached``, corrected:

- the selector is ``app.kubernetes.io/name: memcached`` + ``app.kubernetes.io/instance: <CR
  name>``, unique per CR and fixed for the CR's life (a Deployment selector is immutable);
- a rollout only surges (``maxUnavailable: 0``): no running Pod, and so no warm cache, is taken
  away before its replacement is available; this is also what lets ``reconcile --adopt`` roll the
  Deployments a Go operator left running onto this rendering without losing one;
- restricted Pod Security (non-root UID 1001, seccomp RuntimeDefault, no privilege escalation,
  all capabilities dropped, read-only root filesystem, no ServiceAccount token mounted),
  resources (the CR's ``spec.resources``, memcached's limits derived from them: sizing.py) and
  TCP probes on the named port;
- Pods spread over nodes, then zones, when the scheduler can (``ScheduleAnyway``), and placed by
  the CR's nodeSelector, tolerations, affinity and priorityClassName (scheduling.py);
- every value is written in the form the API server stores it (quantities canonical within their
  suffix family, ``protocol: TCP`` spelled out, integers as integers), so reading the object back
  never looks like drift;
- no namespace when the CR has none (kustomize or Argo CD sets it) and no ownerReferences (the
  CR's uid is unknown in Git; the reconciler adds the controller reference).
"""

from __future__ import annotations

import re
from typing import Any

from memcached_gitops.foundation.excerpt import quote_value
from memcached_gitops.foundation.identities import DEPLOYMENTS, INSTANCE_LABEL, MANAGED_BY_LABEL
from memcached_gitops.foundation.product import NAME
from memcached_gitops.schemas.objectmeta import dns1123_subdomain_errors, label_value_errors
from memcached_gitops.schemas.quantities import canonical_quantity, quantity

from .companions import Given, object_name, render_companions
from .exporter import exporter_container, render_pod_monitor
from .scheduling import scheduling
from .sizing import memcached_flags

DEFAULT_IMAGE = "memcached:1.6.26-alpine3.19"
MANAGED_BY = NAME
CONTAINER_NAME = "memcached"
PORT_NAME = "memcached"
RUN_AS_USER = 1001
#: memcached's own cache size in MiB; the container limit leaves room for connections and threads.
CACHE_MEMORY_MB = 64
RESOURCES = {"requests": {"cpu": "100m", "memory": "96Mi"}, "limits": {"memory": "128Mi"}}
#: maxSurge keeps the API server's default (25%, at least one Pod); maxUnavailable 0 replaces its 25%.
MAX_SURGE, MAX_UNAVAILABLE = "25%", 0
#: The values the tutorials' controllers use where a team's own CRD (``--crd``) lacks the field or
#: leaves it unset: the kubebuilder book's memcached_controller.go (kubebuilder 5c400728, lines
#: 153-155) scales to 0 unless ``spec.size`` is set, and listens on ``ContainerPort: 11211`` (line
#: 261; its CRD has no containerPort). Seed 000's controller does the same (``Size int32``, whose
#: zero value is 0; ``ContainerPort: 11211``). The shipped CRD defaults both, so these never apply
#: under it.
UNSET_SIZE = 0
UNSET_CONTAINER_PORT = 11211
#: memcached's own ``--port`` when none is given (memcached.c, settings.port); the command names
#: the port only when the CR's differs, so the tutorial's CRs render the tutorial's command.
MEMCACHED_DEFAULT_PORT = 11211
#: Nodes first, then zones (the well-known labels every conformant cluster sets).
SPREAD_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
_TAG = re.compile(r":([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$")


class RenderError(ValueError):
    """A CR that validated but cannot become a valid Deployment; ``path`` names the field."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path, self.message = path, message


#: The label every Pod of every CR carries (the common part of ``selector_labels``).
APP_LABELS = {"app.kubernetes.io/name": "memcached"}


def selector_labels(name: str) -> dict[str, str]:
    """The selector of a CR's Deployment: unique per CR, never changed later."""
    return {**APP_LABELS, INSTANCE_LABEL: name}


def image_version(image: str) -> str | None:
    """The tag of an image reference when it can be a label value (``1.6.26-alpine3.19``)."""
    if "@" in image:
        return None
    match = _TAG.search(image.rsplit("/", 1)[-1])
    if not match or label_value_errors(match.group(1)):
        return None
    return match.group(1)


def labels_for(name: str, image: str) -> dict[str, str]:
    """The recommended app.kubernetes.io/* labels (kubernetes.io/docs: common labels)."""
    labels = {**selector_labels(name)}
    version = image_version(image)
    if version:
        labels["app.kubernetes.io/version"] = version
    labels["app.kubernetes.io/component"] = "cache"
    labels["app.kubernetes.io/part-of"] = "memcached"
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    return labels


def _check_renderable(cr: dict[str, Any]) -> tuple[str, int, int]:
    meta = cr.get("metadata") or {}
    spec = cr.get("spec") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise RenderError(("metadata", "name"), "Required value: a name is needed to render (generateName is not enough)")
    problems = dns1123_subdomain_errors(name) + label_value_errors(name)
    if problems:
        raise RenderError(
            ("metadata", "name"),
            f"Invalid value: {quote_value(name)}: cannot name a Deployment and label its Pods: {problems[0]}",
        )
    size, port = spec.get("size"), spec.get("containerPort")
    size = UNSET_SIZE if size is None else size
    port = UNSET_CONTAINER_PORT if port is None else port
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= 2**31 - 1:
        raise RenderError(("spec", "size"), f"Invalid value: {quote_value(size)}: replicas must be an int32 of 0 or more")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise RenderError(("spec", "containerPort"), f"Invalid value: {quote_value(port)}: must be between 1 and 65535, inclusive")
    return name, size, port


def _tcp_probe(initial_delay: int) -> dict[str, Any]:
    # A fresh dict each time: shared objects would come out of the YAML dumper as anchors.
    return {"tcpSocket": {"port": PORT_NAME}, "initialDelaySeconds": initial_delay, "periodSeconds": 10}


def _spread(topology_key: str) -> dict[str, Any]:
    """Spread a CR's Pods over ``topology_key`` when the scheduler can, never at the cost of not
    scheduling (``ScheduleAnyway``): a drain or a lost node then takes a share of the cache, not all.

    The CR is picked by ``matchLabelKeys`` (its instance label, read from each Pod's own labels)
    rather than written into the selector, so every rendering's pod spec stays identical and the
    reconciler's cache keeps one copy of it (informer.compact); a cluster that does not honour
    matchLabelKeys spreads all memcached Pods together, which still spreads each cache."""
    return {"labelSelector": {"matchLabels": dict(APP_LABELS)}, "matchLabelKeys": [INSTANCE_LABEL],
            "maxSkew": 1, "topologyKey": topology_key, "whenUnsatisfiable": "ScheduleAnyway"}


def _sizing(spec: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """memcached's command and the container's resources: the seeds' without ``spec.resources``,
    else the CR's (quantities in the API server's canonical form, so reading them back is no drift)
    with ``-m``, ``-t`` and ``-c`` derived as sizing.py says."""
    given = spec.get("resources")
    threads, connections = spec.get("threads"), spec.get("maxConnections")
    if not isinstance(given, dict) or not (given.get("limits") or given.get("requests")):
        flags = memcached_flags(None, None, connections, threads) if (threads or connections) else [
            f"--memory-limit={CACHE_MEMORY_MB}", "-o", "modern", "-v"]
        return ["memcached", *flags], {k: dict(v) for k, v in RESOURCES.items()}
    resources = {section: {k: canonical_quantity(v) for k, v in given[section].items()}
                 for section in ("limits", "requests") if isinstance(given.get(section), dict) and given[section]}

    def first(key: str) -> Any:
        # a zero limit is none: the kubelet sets a container's memory limit only when it is not 0
        # (kuberuntime's calculateLinuxResources), so a Pod limited to "0" runs unbounded
        found = (quantity(s[key]) for s in (resources.get("limits", {}), resources.get("requests", {})) if key in s)
        return next((q for q in found if q), None)

    return ["memcached", *memcached_flags(first("memory"), first("cpu"), connections, threads)], resources


def render_deployment(cr: dict[str, Any], image: str = DEFAULT_IMAGE) -> dict[str, Any]:
    """The Deployment for a validated, defaulted Memcached CR."""
    name, size, port = _check_renderable(cr)
    command, resources = _sizing(cr.get("spec") or {})
    if port != MEMCACHED_DEFAULT_PORT:
        # memcached listens on 11211 unless told: the probes, the Service's targetPort and the
        # exporter all reach it at the container port, so a Pod of any other port was never Ready
        command = [command[0], f"--port={port}", *command[1:]]
    labels = labels_for(name, image)
    container_security = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True,
                          "runAsNonRoot": True, "runAsUser": RUN_AS_USER}
    sidecar = exporter_container(cr.get("spec") or {}, port, container_security)
    metadata: dict[str, Any] = {"name": name}
    namespace = (cr.get("metadata") or {}).get("namespace")
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = labels
    return {
        "apiVersion": DEPLOYMENTS.api_version,
        "kind": DEPLOYMENTS.kind,
        "metadata": metadata,
        "spec": {
            "replicas": size,
            "selector": {"matchLabels": selector_labels(name)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": MAX_SURGE, "maxUnavailable": MAX_UNAVAILABLE}},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    # memcached never calls the API server: no token in its Pods for an intruder to use
                    "automountServiceAccountToken": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUN_AS_USER,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "topologySpreadConstraints": [_spread(key) for key in SPREAD_KEYS],
                    **scheduling(cr.get("spec") or {}),
                    "containers": [
                        {
                            "name": CONTAINER_NAME,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": command,
                            "ports": [{"containerPort": port, "name": PORT_NAME, "protocol": "TCP"}],
                            "resources": resources,
                            "livenessProbe": _tcp_probe(initial_delay=10),
                            "readinessProbe": _tcp_probe(initial_delay=5),
                            "securityContext": container_security,
                        },
                        *([sidecar] if sidecar else []),
                    ],
                },
            },
        },
    }


def render(cr: dict[str, Any], image: str = DEFAULT_IMAGE) -> list[dict[str, Any]]:
    """All manifests for one CR: its Deployment first (the reconciler corrects it), then its headless
    Service and, for two Pods or more, its PodDisruptionBudget (companions.py's COMPANIONS), and the PodMonitor
    when the CR asks for one (exporter.py). Pure."""
    deployment = render_deployment(cr, image)
    name, size, port = _check_renderable(cr)
    namespace = (cr.get("metadata") or {}).get("namespace") or None
    labels = deployment["metadata"]["labels"]
    companions = render_companions(Given(name, namespace, labels, selector_labels(name), port, size))
    monitor = render_pod_monitor(cr.get("spec") or {}, object_name(name), namespace, labels, selector_labels(name))
    return [deployment, *companions] + ([monitor] if monitor else [])
