"""Every condition the reconciler writes on a Memcached, every reason it gives, and every Event reason:
what each means and what to do. Each reason is a member of ``Reason`` or ``EventReason``, which the
writers (status.py, the cycle, the controller) use and the tables are keyed by; the tables are read by
the generated reference page (docs/reference/generated/conditions.md) and held complete by
tests/reconciler/decisions/test_reasons.py, which fails when the code writes a reason the tables do not explain.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """A condition's reason, as the writers (status.py, the cycle, the controller) give it and the
    table below explains it. A StrEnum: it compares, hashes and serialises as its CamelCase word."""

    MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
    DEPLOYMENT_UNAVAILABLE = "DeploymentUnavailable"
    DEPLOYMENT_MISSING = "DeploymentMissing"
    ROLLING_OUT = "RollingOut"
    RECONCILE_COMPLETE = "ReconcileComplete"
    NOT_PROGRESSING = "NotProgressing"
    PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
    REPLICA_FAILURE = "ReplicaFailure"
    INVALID_SPEC = "InvalidSpec"
    INVALID_ANNOTATION = "InvalidAnnotation"
    INVALID_IGNORE_PATHS = "InvalidIgnorePaths"
    RESOURCE_NOT_OWNED = "ResourceNotOwned"
    APPLY_FAILED = "ApplyFailed"
    DRIFT_DETECTED = "DriftDetected"
    FIELD_MANAGER_FIGHT = "FieldManagerFight"
    RECONCILE_DISABLED = "ReconcileDisabled"
    AS_EXPECTED = "AsExpected"
    GITOPS_APPLIED = "GitOpsApplied"
    NOT_ADOPTED = "NotAdopted"
    SELECTOR_OVERLAP = "SelectorOverlap"
    READY = "Ready"
    PROGRESSING = "Progressing"


class EventReason(StrEnum):
    """An Event's reason, as the writers post it and ``EVENTS`` explains it."""

    DEPLOYMENT_CREATED = "DeploymentCreated"
    ADOPTED = "Adopted"
    DRIFT_CORRECTED = "DriftCorrected"
    SERVICE_CREATED = "ServiceCreated"
    SERVICE_DELETED = "ServiceDeleted"
    POD_DISRUPTION_BUDGET_CREATED = "PodDisruptionBudgetCreated"
    POD_DISRUPTION_BUDGET_DELETED = "PodDisruptionBudgetDeleted"
    FIGHT_DETECTED = "FightDetected"
    RECONCILE_FAILED = "ReconcileFailed"


#: condition type -> when it is written and what it says
CONDITIONS: dict[str, str] = {
    "Available": "True when the Deployment has at least the desired replicas available.",
    "Progressing": "True while a rollout is under way (the Deployment's generation not yet observed, or replicas not yet "
                   "updated and available).",
    "Degraded": "True when the reconciler cannot serve the CR as it asks, or the Deployment's rollout failed; False says "
                "who manages the Deployment.",
    "Ready": "The summary (as cert-manager, Crossplane, Cluster API and Flux give it): True when Available and neither "
             "Progressing nor Degraded; otherwise False with the reason that matters now. `kubectl wait "
             "--for=condition=Ready` follows it.",
    "Reconciling": "kstatus' InProgress: written only while Progressing or not Available (and not Degraded).",
    "Stalled": "kstatus' Failed: written only while Degraded is True, with its reason and message.",
}

#: reason -> (the conditions that carry it, what it means and what to do)
REASONS: dict[Reason, tuple[str, str]] = {
    Reason.MINIMUM_REPLICAS_AVAILABLE: ("Available=True", "the desired replicas are available"),
    Reason.DEPLOYMENT_UNAVAILABLE: ("Available=False", "fewer replicas available than desired; the message counts them"),
    Reason.DEPLOYMENT_MISSING: ("Available=False", "the Deployment does not exist yet (created at the next reconcile)"),
    Reason.ROLLING_OUT: ("Progressing=True", "waiting for the Deployment controller to observe the new generation, or for the "
                                       "replicas to be updated and available"),
    Reason.RECONCILE_COMPLETE: ("Progressing=False", "the rollout is complete; the Deployment matches the CR"),
    Reason.NOT_PROGRESSING: ("Progressing=False", "no rollout under way, because the reconciler cannot serve the CR (see Degraded)"),
    Reason.PROGRESS_DEADLINE_EXCEEDED: ("Progressing=False, Degraded=True, Stalled=True",
                                 "the Deployment controller gave up on the rollout (progressDeadlineSeconds): look at the "
                                 "Pods' events (image pull, scheduling, crashes)"),
    Reason.REPLICA_FAILURE: ("Degraded=True, Stalled=True", "the Deployment's ReplicaFailure condition without a reason of its "
                                                      "own, or with one a Condition cannot carry (then said in the message); "
                                                      "with one, that reason is used, e.g. FailedCreate"),
    Reason.INVALID_SPEC: ("Degraded=True, Stalled=True, Available=False", "the CR cannot be rendered; the message names the field"),
    Reason.INVALID_ANNOTATION: ("Degraded=True, Stalled=True", "cache.example.com/reconcile has an unsupported value, or "
                                                         "cache.example.com/requestedAt is longer than 256 characters"),
    Reason.INVALID_IGNORE_PATHS: ("Degraded=True, Stalled=True", "cache.example.com/ignore-paths cannot be read; the message says why"),
    Reason.RESOURCE_NOT_OWNED: ("Degraded=True, Stalled=True", "a Deployment, Service or PodDisruptionBudget of that name exists "
                                                        "and is not this CR's: it is left alone; rename or delete one"),
    Reason.APPLY_FAILED: ("Degraded=True, Stalled=True", "the API server refused a write of the Deployment, Service or budget; the "
                                                   "message names each object and gives the server's message. The others are "
                                                   "still written. A 422 or 403 is retried at the resync or when the CR or its "
                                                   "objects change, anything else with backoff; fix what the message says (RBAC, "
                                                   "an object someone made invalid)"),
    Reason.DRIFT_DETECTED: ("Degraded=True, Stalled=True", "drift found and left uncorrected (--detect-only, or the CR's "
                                                     "detect-only annotation); the message lists it"),
    Reason.FIELD_MANAGER_FIGHT: ("Degraded=True, Stalled=True", "another field manager keeps undoing our corrections of the "
                                                         "Deployment, Service or budget: the CR backs off; the message "
                                                         "names the field, the object and the manager"),
    Reason.RECONCILE_DISABLED: ("Ready=False (the only condition)", "cache.example.com/reconcile: disabled: the CR is paused, "
                                                              "nothing of it is written; remove the annotation (or set "
                                                              "enabled) to resume, and the conditions come back"),
    Reason.AS_EXPECTED: ("Degraded=False", "the reconciler can manage this Memcached"),
    Reason.GITOPS_APPLIED: ("Degraded=False", "the Deployment is applied by another tool (Argo CD, Flux, kubectl) without a "
                                        "controller ownerReference: observed, never written; `reconcile --adopt` takes it over"),
    Reason.NOT_ADOPTED: ("Degraded=False", "the Deployment was created for this CR by another controller (the Go operator) "
                                     "with a selector of its own: observed; `reconcile --adopt` takes it over in place"),
    Reason.SELECTOR_OVERLAP: ("Degraded=False, or True with Stalled=True", "the Deployment's kept selector shares Pods with another "
                        "Deployment's (False), or selects Pods this CR's Deployment does not own, naming their owner: "
                        "True once taken over, and its Service and budget are not created or corrected; False before "
                        "--adopt. `kubectl delete deployment` gives the CR a selector of its own"),
    Reason.READY: ("Ready=True", "available at the desired replicas, no rollout under way, nothing degraded"),
    Reason.PROGRESSING: ("Reconciling=True", "kstatus' InProgress while a rollout is under way or replicas are missing"),
}

#: Event reasons -> when the reconciler posts them (Warning Events also repeat a Degraded reason once).
#: One Normal Event per reconcile, named after its first write, its message naming every object the
#: reconcile created, corrected or deleted (the Service and budget created with a Deployment too).
EVENTS: dict[EventReason, str] = {
    EventReason.DEPLOYMENT_CREATED: "Normal: the Deployment was created; the message names the Service and budget created with it",
    EventReason.ADOPTED: "Normal: a Deployment applied by another tool or controller was taken over (`--adopt`)",
    EventReason.DRIFT_CORRECTED: "Normal: drifted fields of the Deployment, Service or budget were corrected; the message lists them",
    EventReason.SERVICE_CREATED: "Normal: the headless Service was created",
    EventReason.SERVICE_DELETED: "Normal: a Service of ours that the CR no longer renders was deleted",
    EventReason.POD_DISRUPTION_BUDGET_CREATED: "Normal: the budget was created (two Pods or more)",
    EventReason.POD_DISRUPTION_BUDGET_DELETED: "Normal: the budget was deleted (the CR asks for one Pod)",
    EventReason.FIGHT_DETECTED: "Warning: a field manager fight started (see FieldManagerFight)",
    EventReason.RECONCILE_FAILED: "Warning: a reconcile failed on an error the API server gave; retried",
}
