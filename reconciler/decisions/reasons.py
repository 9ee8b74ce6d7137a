"""Every condition the reconciler writes on a Memcached, every reason it gives, and every Event reason:
what each means and what to do. One table, read by the generated reference page
(docs/reference/generated/conditions.md) and held complete by tests/test_reasons.py, which fails when
the code writes a reason this table does not explain.
"""

from __future__ import annotations

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
REASONS: dict[str, tuple[str, str]] = {
    "MinimumReplicasAvailable": ("Available=True", "the desired replicas are available"),
    "DeploymentUnavailable": ("Available=False", "fewer replicas available than desired; the message counts them"),
    "DeploymentMissing": ("Available=False", "the Deployment does not exist yet (created at the next reconcile)"),
    "RollingOut": ("Progressing=True", "waiting for the Deployment controller to observe the new generation, or for the "
                                       "replicas to be updated and available"),
    "ReconcileComplete": ("Progressing=False", "the rollout is complete; the Deployment matches the CR"),
    "NotProgressing": ("Progressing=False", "no rollout under way, because the reconciler cannot serve the CR (see Degraded)"),
    "ProgressDeadlineExceeded": ("Progressing=False, Degraded=True, Stalled=True",
                                 "the Deployment controller gave up on the rollout (progressDeadlineSeconds): look at the "
                                 "Pods' events (image pull, scheduling, crashes)"),
    "ReplicaFailure": ("Degraded=True, Stalled=True", "the Deployment's ReplicaFailure condition without a reason of its "
                                                      "own (with one, that reason is used, e.g. FailedCreate)"),
    "InvalidSpec": ("Degraded=True, Stalled=True, Available=False", "the CR cannot be rendered; the message names the field"),
    "InvalidAnnotation": ("Degraded=True, Stalled=True", "cache.example.com/reconcile has an unsupported value, or "
                                                         "cache.example.com/requestedAt is longer than 256 characters"),
    "InvalidIgnorePaths": ("Degraded=True, Stalled=True", "cache.example.com/ignore-paths cannot be read; the message says why"),
    "ResourceNotOwned": ("Degraded=True, Stalled=True", "a Deployment, Service or PodDisruptionBudget of that name exists "
                                                        "and is not this CR's: it is left alone; rename or delete one"),
    "ApplyFailed": ("Degraded=True, Stalled=True", "the API server refused a write of the Deployment, Service or budget; the "
                                                   "message names each object and gives the server's message. The others are "
                                                   "still written. A 422 or 403 is retried at the resync or when the CR or its "
                                                   "objects change, anything else with backoff; fix what the message says (RBAC, "
                                                   "an object someone made invalid)"),
    "DriftDetected": ("Degraded=True, Stalled=True", "drift found and left uncorrected (--detect-only, or the CR's "
                                                     "detect-only annotation); the message lists it"),
    "FieldManagerFight": ("Degraded=True, Stalled=True", "another field manager keeps undoing our corrections of the "
                                                         "Deployment, Service or budget: the CR backs off; the message "
                                                         "names the field, the object and the manager"),
    "ReconcileDisabled": ("Ready=False (the only condition)", "cache.example.com/reconcile: disabled: the CR is paused, "
                                                              "nothing of it is written; remove the annotation (or set "
                                                              "enabled) to resume, and the conditions come back"),
    "AsExpected": ("Degraded=False", "the reconciler can manage this Memcached"),
    "GitOpsApplied": ("Degraded=False", "the Deployment is applied by another tool (Argo CD, Flux, kubectl) without a "
                                        "controller ownerReference: observed, never written; `reconcile --adopt` takes it over"),
    "NotAdopted": ("Degraded=False", "the Deployment was created for this CR by another controller (the Go operator) "
                                     "with a selector of its own: observed; `reconcile --adopt` takes it over in place"),
    "SelectorOverlap": ("Degraded=False, or True with Stalled=True", "the Deployment's kept selector shares Pods with another "
                        "Deployment's (False), or selects Pods this CR's Deployment does not own, naming their owner: "
                        "True once taken over, and its Service and budget are not created or corrected; False before "
                        "--adopt. `kubectl delete deployment` gives the CR a selector of its own"),
    "Ready": ("Ready=True", "available at the desired replicas, no rollout under way, nothing degraded"),
    "Progressing": ("Reconciling=True", "kstatus' InProgress while a rollout is under way or replicas are missing"),
}

#: Event reasons -> when the reconciler posts them (Warning Events also repeat a Degraded reason once).
#: One Normal Event per reconcile, named after its first write, its message naming every object the
#: reconcile created, corrected or deleted (the Service and budget created with a Deployment too).
EVENTS: dict[str, str] = {
    "DeploymentCreated": "Normal: the Deployment was created; the message names the Service and budget created with it",
    "Adopted": "Normal: a Deployment applied by another tool or controller was taken over (`--adopt`)",
    "DriftCorrected": "Normal: drifted fields of the Deployment, Service or budget were corrected; the message lists them",
    "ServiceCreated": "Normal: the headless Service was created",
    "ServiceDeleted": "Normal: a Service of ours that the CR no longer renders was deleted",
    "PodDisruptionBudgetCreated": "Normal: the budget was created (two Pods or more)",
    "PodDisruptionBudgetDeleted": "Normal: the budget was deleted (the CR asks for one Pod)",
    "FightDetected": "Warning: a field manager fight started (see FieldManagerFight)",
    "ReconcileFailed": "Warning: a reconcile failed on an error the API server gave; retried",
}
