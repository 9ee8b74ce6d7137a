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
from collections.abc import Callable
from typing import Any, NamedTuple

from memcached_gitops.foundation.identities import BUDGETS, SERVICES, Resource
from memcached_gitops.schemas.list_rules import OWNER_ATOMIC, OWNER_MERGE_KEYS, ListRules

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


class Given(NamedTuple):
    """What every companion is rendered from: the CR's name and namespace, the Deployment's labels
    and Pod selector, and the CR's port and size (after defaults)."""

    cr_name: str
    namespace: str | None
    labels: dict[str, str]
    selector: dict[str, str]
    port: int
    size: int


class Companion(NamedTuple):
    """One kind rendered beside the Deployment and owned like it, all in one entry: its resource,
    how it is rendered (None: not for this CR), its list semantics for drift, and where it selects
    the CR's Pods, as a LabelSelector (``matchLabels``...) or as a plain label map (a Service's)."""

    resource: Resource
    render: Callable[[Given], dict[str, Any] | None]
    rules: ListRules
    selector_path: tuple[str, ...]
    label_selector: bool


#: The objects beside the Deployment, in the order they are rendered. A Service's ports are a map
#: keyed by port and protocol and its selector an atomic map (+mapType=atomic: transcript 42 shows one
#: key changed by a person moving the whole ``f:selector`` to them, and our apply taking it back
#: whole; core/v1 API reference); a PodDisruptionBudget's selector is a LabelSelector
#: (+structType=atomic; policy/v1 API reference).
COMPANIONS = (
    Companion(SERVICES, lambda g: render_service(g.cr_name, g.namespace, g.labels, g.selector, g.port),
              ListRules({**OWNER_MERGE_KEYS, ("spec", "ports"): ("port", "protocol")}, frozenset(),
                        frozenset({("spec", "selector")}) | OWNER_ATOMIC),
              ("spec", "selector"), label_selector=False),
    Companion(BUDGETS, lambda g: render_pdb(g.cr_name, g.namespace, g.labels, g.selector, g.size),
              ListRules(dict(OWNER_MERGE_KEYS), frozenset(), frozenset({("spec", "selector")}) | OWNER_ATOMIC),
              ("spec", "selector"), label_selector=True),
)
#: Each companion's entry by kind.
BY_KIND = {c.resource.kind: c for c in COMPANIONS}


def render_companions(given: Given) -> list[dict[str, Any]]:
    """The companions a CR renders to, in ``COMPANIONS`` order."""
    return [obj for obj in (c.render(given) for c in COMPANIONS) if obj is not None]
