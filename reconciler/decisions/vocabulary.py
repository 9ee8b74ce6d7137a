"""The reconciler's words, each in one place: the labels it selects by, and what it did to a CR.

The label names are the renderer's (render/deployment.py), since every Deployment the reconciler
reads was rendered; the actions are what a cycle reports per CR, and the groups of them the loop,
the controller and the metrics count by. ``Action`` is a StrEnum: it logs, labels metrics and
compares as its plain word.
"""

from __future__ import annotations

from enum import StrEnum

from memcached_gitops.render import INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL

#: Every Deployment and Pod the reconciler reads carries it (render/deployment.py labels_for).
SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"


class Action(StrEnum):
    """What a cycle did to one CR."""

    UNCHANGED = "unchanged"
    CREATED = "created"
    CORRECTED = "corrected"
    ADOPTED = "adopted"
    OBSERVED = "observed"  # GitOps-applied, not ours to write: its drift is logged
    DRIFTED = "drifted"  # --detect-only
    NOT_OWNED = "not-owned"
    INVALID = "invalid"
    FAILED = "failed"
    SUSPENDED = "suspended"  # cache.example.com/reconcile: disabled on the CR: nothing read or written for it


#: A person's say on one CR, as Flux's ``kustomize.toolkit.fluxcd.io/reconcile: disabled``:
#: ``disabled`` (nothing written for it, its status included), ``detect-only`` (drift reported, never
#: corrected, as --detect-only for the whole process), ``enabled`` (the default).
RECONCILE_ANNOTATION = "cache.example.com/reconcile"
RECONCILE_MODES = ("enabled", "detect-only", "disabled")

#: The actions that wrote a Deployment.
WRITES = frozenset({Action.CREATED, Action.CORRECTED, Action.ADOPTED})
#: The actions that leave the CR unserved: the cycle's exit status and the error metric count them.
FAILURES = frozenset({Action.FAILED, Action.INVALID, Action.NOT_OWNED})

__all__ = ["FAILURES", "INSTANCE_LABEL", "MANAGED_BY_LABEL", "RECONCILE_ANNOTATION", "RECONCILE_MODES", "SELECTOR", "WRITES",
           "Action"]
