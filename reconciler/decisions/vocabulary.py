"""The reconciler's words, each in one place: the labels it selects by, and what it did to a CR.

The label names are the renderer's (render/deployment.py), since every Deployment the reconciler
reads was rendered; the actions are what a cycle reports per CR, and the groups of them the loop,
the controller and the metrics count by. ``Action`` is a StrEnum: it logs, labels metrics and
compares as its plain word.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from memcached_gitops.foundation.product import NAME
from memcached_gitops.render import INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL

#: Every Deployment and Pod the reconciler reads carries it (render/deployment.py labels_for).
SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"


class Resource(NamedTuple):
    """A resource's identity, said once: its group, version and plural (the GVR of its paths) and its kind."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def gvr(self) -> tuple[str, str, str]:
        """(group, version, plural): the first arguments of ``api.object_path`` and ``collection_path``."""
        return self.group, self.version, self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
PODS = Resource("", "v1", "pods", "Pod")
EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
#: the HPAs in scope: which one scales a CR's Deployment (autoscalers.py)
AUTOSCALERS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
#: what render/companions.py renders beside the Deployment, applied and corrected like it (companions.py)
SERVICES = Resource("", "v1", "services", "Service")
BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
COMPANIONS = (SERVICES, BUDGETS)

#: The field manager of our applies and status writes (``--field-manager`` changes it).
FIELD_MANAGER = NAME
#: The longest Event message we post; the API server allows 1 KiB of note in events.k8s.io/v1, and
#: a status message that an Event repeats is cut alike, so that the two stay equal (warn_once).
MESSAGE_LIMIT = 1024


def bounded(message: str) -> str:
    """A message at most ``MESSAGE_LIMIT`` characters long, for a condition and the Event that tells it."""
    return message[:MESSAGE_LIMIT]


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


#: A person's say on one CR, as Flux's ``kustomize.toolkit.fluxcd.io/reconcile: disabled``:
#: ``disabled`` (nothing written for it but one status condition saying so), ``detect-only`` (drift reported, never
#: corrected, as --detect-only for the whole process), ``enabled`` (the default).
RECONCILE_ANNOTATION = "cache.example.com/reconcile"
RECONCILE_MODES = ("enabled", "detect-only", "disabled")
#: Reconcile now, as Flux's ``reconcile.fluxcd.io/requestedAt``: any new value (a time, a token) is a
#: request; the next reconcile of the CR, in either mode, writes it to ``status.lastHandledReconcileAt``,
#: so ``kubectl wait --for=jsonpath='{.status.lastHandledReconcileAt}'=VALUE`` follows it.
REQUESTED_AT_ANNOTATION = "cache.example.com/requestedAt"
#: The longest value handled (the CRD's maxLength of status.lastHandledReconcileAt).
REQUESTED_AT_LIMIT = 256

#: The actions that wrote a Deployment.
WRITES = frozenset({Action.CREATED, Action.CORRECTED, Action.ADOPTED})
#: The actions that leave the CR unserved: the cycle's exit status and the error metric count them.
FAILURES = frozenset({Action.FAILED, Action.INVALID, Action.NOT_OWNED})

__all__ = ["AUTOSCALERS", "DEPLOYMENTS", "EVENTS", "FAILURES", "FIELD_MANAGER", "INSTANCE_LABEL", "LEASES", "MANAGED_BY_LABEL",
           "MESSAGE_LIMIT", "PODS", "RECONCILE_ANNOTATION", "RECONCILE_MODES", "REQUESTED_AT_ANNOTATION", "REQUESTED_AT_LIMIT",
           "SELECTOR", "WRITES", "Action", "Resource", "bounded"]
