"""The reconciler's words, each in one place: the labels it selects by, and what it did to a CR.

The resources, annotation and label names are foundation/identities.py's, shared with the
renderer (every Deployment the reconciler reads was rendered) and named here for the reconciler's
modules; the actions are what a cycle reports per CR, and the groups of them the loop, the
controller and the metrics count by. ``Action`` is a StrEnum: it logs, labels metrics and
compares as its plain word.
"""

from __future__ import annotations

from enum import StrEnum

from memcached_gitops.foundation.identities import (
    AUTOSCALERS,
    BUDGETS,
    DEPLOYMENTS,
    EVENTS,
    IGNORE_PATHS_ANNOTATION,
    INSTANCE_LABEL,
    LEASES,
    MANAGED_BY_LABEL,
    PODS,
    RECONCILE_ANNOTATION,
    REQUESTED_AT_ANNOTATION,
    SERVICES,
    Resource,
)
from memcached_gitops.foundation.product import NAME
from memcached_gitops.render import MANAGED_BY
from memcached_gitops.render.companions import COMPANIONS as COMPANION_KINDS

#: Every Deployment and Pod the reconciler reads carries it (render/deployment.py labels_for).
SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
#: The resources rendered beside the Deployment, owned, watched and corrected like it (render/companions.py).
COMPANIONS = tuple(c.resource for c in COMPANION_KINDS)

#: The field manager of our applies and status writes (``--field-manager`` changes it).
FIELD_MANAGER = NAME
#: The longest Event message we post; the API server allows 1 KiB of note in events.k8s.io/v1, and
#: a status message that an Event repeats is cut alike, so that the two stay equal (warn_once).
MESSAGE_LIMIT = 1024


def bounded(message: str) -> str:
    """A message at most ``MESSAGE_LIMIT`` characters long, for a condition and the Event that tells it."""
    return message[:MESSAGE_LIMIT]


#: The longest list of drift or ignored fields that one log line (and the summary an Event takes
#: from it) carries: a CR whose every field drifted logs a line, not a page.
LOG_LIMIT = 2048


def for_log(text: str) -> str:
    """``text`` cut at ``LOG_LIMIT`` characters, for one log line."""
    return text[:LOG_LIMIT]


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
    SUSPENDED = "suspended"  # cache.example.com/reconcile: disabled on the CR: nothing written for it but a status that says so


#: The values of ``RECONCILE_ANNOTATION`` (foundation/identities.py).
RECONCILE_MODES = ("enabled", "detect-only", "disabled")
#: The longest value handled (the CRD's maxLength of status.lastHandledReconcileAt).
REQUESTED_AT_LIMIT = 256

#: The actions that wrote a Deployment.
WRITES = frozenset({Action.CREATED, Action.CORRECTED, Action.ADOPTED})
#: The actions that leave the CR unserved: the cycle's exit status and the error metric count them.
FAILURES = frozenset({Action.FAILED, Action.INVALID, Action.NOT_OWNED})

__all__ = ["AUTOSCALERS", "BUDGETS", "COMPANIONS", "DEPLOYMENTS", "EVENTS", "FAILURES", "FIELD_MANAGER", "IGNORE_PATHS_ANNOTATION",
           "INSTANCE_LABEL", "LEASES", "LOG_LIMIT", "MANAGED_BY_LABEL", "MESSAGE_LIMIT", "PODS", "RECONCILE_ANNOTATION", "RECONCILE_MODES",
           "REQUESTED_AT_ANNOTATION", "REQUESTED_AT_LIMIT", "SELECTOR", "SERVICES", "WRITES", "Action", "Resource", "bounded", "for_log"]
