"""Who owns a Deployment, and therefore what the reconciler may do to it. Pure.

- **owned**: its controller ownerReference is this Memcached (same uid). Drift is corrected.
- **GitOps-applied**: our ``app.kubernetes.io/managed-by`` and ``app.kubernetes.io/instance``
  labels and no controller ownerReference. ``render`` / ``argocd-generate`` output applied by
  Argo CD or another tool: the CR's uid is unknown in Git, so it carries no ownerReference. The
  reconciler reads its status and writes nothing to it, unless ``--adopt`` takes it over.
- **inherited**: its controller ownerReference is this Memcached, but another controller created it
  with a selector of its own and our field manager has never applied it: the Deployments the
  seeds' Go operators left running. Observed like a GitOps-applied one; ``--adopt`` takes it over
  in place, keeping its selector (selectors.py). Once we have applied it, it is owned.
- **foreign**: anything else, including a Deployment controlled by another object. Never touched.

The once-per-cycle mode and the event-driven mode both classify through ``classify``.
"""

from __future__ import annotations

import enum
from typing import Any

from memcached_gitops.render import INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL, selector_labels


class Ownership(enum.Enum):
    OWNED = "owned"
    GITOPS_APPLIED = "gitops-applied"
    INHERITED = "inherited"
    FOREIGN = "foreign"


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` (the API server allows at most one: transcript 20)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if isinstance(r, dict) and r.get("controller")), None)


def classify(deployment: dict[str, Any], cr: dict[str, Any], field_manager: str) -> Ownership:
    """The relation of a live Deployment to the Memcached of the same name and namespace, for the
    reconciler applying as ``field_manager`` (no default: a caller that forgot ``--field-manager``
    would find its own adoption under another name still inherited)."""
    controller = controller_of(deployment)
    if controller is not None:
        uid = (cr.get("metadata") or {}).get("uid")
        if not uid or controller.get("uid") != uid:
            return Ownership.FOREIGN
        selector = (deployment.get("spec") or {}).get("selector")
        name = cr["metadata"]["name"]
        if selector and selector != {"matchLabels": selector_labels(name)} and not applied_by(deployment, field_manager):
            return Ownership.INHERITED
        return Ownership.OWNED
    labels = (deployment.get("metadata") or {}).get("labels") or {}
    name = (cr.get("metadata") or {}).get("name")
    if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(INSTANCE_LABEL) == name:
        return Ownership.GITOPS_APPLIED
    return Ownership.FOREIGN


def applied_by(deployment: dict[str, Any], field_manager: str) -> bool:
    """Whether ``field_manager`` has applied this Deployment (an Apply entry in its managedFields)."""
    return any(isinstance(e, dict) and e.get("manager") == field_manager and e.get("operation") == "Apply"
               and not e.get("subresource") for e in (deployment.get("metadata") or {}).get("managedFields") or [])


def spec_manager(deployment: dict[str, Any]) -> str:
    """Who applied the Deployment: the field manager that owns most of its ``spec`` in
    managedFields (``argocd-controller``, ``kubectl``, ...), skipping subresource entries (a
    ``kubectl scale`` does not make someone the manager); "" when managedFields say nothing."""
    best, best_size = "", 0
    for entry in (deployment.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource"):
            continue
        size = _count_leaves(((entry.get("fieldsV1") or {}).get("f:spec")) or {})
        if size > best_size:
            best, best_size = str(entry.get("manager") or ""), size
    return best


def _count_leaves(tree: dict[str, Any]) -> int:
    return sum(_count_leaves(v) if v else 1 for v in tree.values() if isinstance(v, dict))
