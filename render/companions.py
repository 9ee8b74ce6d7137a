"""The objects beside a Memcached's Deployment that make it a usable cache: a headless Service that
clients find every Pod through, and a PodDisruptionBudget that lets a node drain take one Pod at a time.

Pure and deterministic, like deployment.py.

- **The Service is headless** (``clusterIP: None``): clients that spread keys over servers
  (pymemcache's HashClient, spymemcached, mcrouter) resolve its name to every ready Pod's address
  and hash keys across them. A ClusterIP Service would send each connection to a random Pod, so
  the same key lands on different servers and the cache splits at random; that is not offered.
- **The PodDisruptionBudget** allows one Pod down at a time (``maxUnavailable: 1``) when the CR asks
  for two or more. None for one Pod: a budget that forbids evicting the only Pod blocks every
  ``kubectl drain`` of its node for ever, while losing a one-Pod cache for a minute is the
  single-replica choice the CR already made.
- **Names never collide with the user's objects**: ``<name>-memcached``, the CR's name made a
  DNS-1035 label where a Service needs one (dots become dashes, at most 63 characters, a short hash
  of the CR's name keeps two long names apart). Both carry the Deployment's labels and select its Pods.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from memcached_gitops.foundation.identities import BUDGETS, SERVICES

SUFFIX = "-memcached"
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_MAX = 63


def object_name(cr_name: str) -> str:
    """``<name>-memcached`` as a DNS-1035 label (a Service's name), deterministic and unique per CR name."""
    wanted = cr_name + SUFFIX
    if len(wanted) <= _LABEL_MAX and _DNS1035.match(wanted):
        return wanted
    digest = hashlib.sha256(cr_name.encode()).hexdigest()[:8]
    base = re.sub(r"[^-a-z0-9]", "-", cr_name.lower())
    if not base[:1].isalpha():
        base = "m" + base
    room = _LABEL_MAX - len(SUFFIX) - len(digest) - 1
    return f"{base[:room].rstrip('-')}-{digest}{SUFFIX}"


def _metadata(name: str, namespace: str | None, labels: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict(labels)
    return meta


def render_service(cr_name: str, namespace: str | None, labels: dict[str, str], selector: dict[str, str], port: int) -> dict[str, Any]:
    """The headless Service of a CR's Pods, in the form the API server stores it."""
    return {
        "apiVersion": SERVICES.api_version,
        "kind": SERVICES.kind,
        "metadata": _metadata(object_name(cr_name), namespace, labels),
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "None",
            "selector": dict(selector),
            "ports": [{"name": "memcached", "port": port, "protocol": "TCP", "targetPort": "memcached"}],
        },
    }


def render_pdb(cr_name: str, namespace: str | None, labels: dict[str, str], selector: dict[str, str], size: int) -> dict[str, Any] | None:
    """The PodDisruptionBudget of a CR's Pods, or None for fewer than two (see the module's docstring)."""
    if size < 2:
        return None
    return {
        "apiVersion": BUDGETS.api_version,
        "kind": BUDGETS.kind,
        "metadata": _metadata(object_name(cr_name), namespace, labels),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(selector)}},
    }
