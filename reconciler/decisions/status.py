"""The status a Memcached should show, from what one cycle saw and did. Pure.

Conditions follow metav1.Condition (type, status, observedGeneration, lastTransitionTime, reason
in CamelCase, message) and the Kubernetes API conventions: ``Available`` (the Deployment has all
its replicas available for the current generation), ``Progressing`` (a rollout is under way),
``Degraded`` (the reconciler cannot do its job for this CR, or the Deployment controller has
given up: ``ProgressDeadlineExceeded``, ``ReplicaFailure``) and ``Ready``, their summary (True when
Available and neither Progressing nor Degraded; else False with the reason that matters now: the
failure, else why it is unavailable, else the rollout), so ``kubectl wait --for=condition=Ready`` works. One mapping for every mode and for
the Argo CD health check, which reads these conditions. For kstatus (Flux health checks,
``kubectl wait``), the abnormal-true conditions ``Reconciling`` and ``Stalled`` are added while
they are True and removed when they are not (sigs.k8s.io/cli-utils kstatus: a resource with
``Reconciling=True`` is InProgress, ``Stalled=True`` is Failed). ``lastTransitionTime`` moves only
when a condition's status flips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memcached_gitops.foundation.excerpt import excerpt

from .reasons import Reason

CONDITION_TYPES = ("Available", "Progressing", "Degraded", "Ready")


@dataclass(frozen=True)
class Observation:
    """What the cycle knows about one CR."""

    generation: int
    size: int
    deployment: dict[str, Any] | None  # live (or just applied) Deployment, None when absent
    pods: tuple[str, ...]
    # ResourceNotOwned | InvalidSpec | ApplyFailed | DriftDetected (--detect-only) | FieldManagerFight | ""
    degraded_reason: str = ""
    degraded_message: str = ""
    applied_by: str = ""  # GitOps-applied (ownership.py): the field manager that applied the Deployment
    drift_note: str = ""  # GitOps-applied: what differs from the rendering (information, not failure)
    inherited_selector: str = ""  # inherited, not adopted (ownership.py): the selector it was created with
    overlap: str = ""  # the other Deployments whose Pods its selector shares (selectors.py)
    autoscaler: str = ""  # the HorizontalPodAutoscaler that owns the Deployment's replicas (autoscalers.py)
    replicas_by: str = ""  # the CR's ignore-paths leaves the replicas to these managers (autoscalers.replicas_setters)
    paused: str = ""  # cache.example.com/reconcile: disabled: why nothing is reconciled (one condition says it)


def _condition(ctype: str, status: bool, reason: str, message: str, generation: int) -> dict[str, Any]:
    return {"type": ctype, "status": "True" if status else "False", "observedGeneration": generation,
            "reason": str(reason), "message": message[:32768]}  # a Reason as its plain word


def one_line_excerpt(text: str) -> str:
    """A message copied from elsewhere (the Deployment's conditions), on one line and cut as every
    quoted input is cut (``memcached_gitops.foundation.excerpt``)."""
    return excerpt(" ".join(str(text).split()))


@dataclass(frozen=True)
class DeploymentVerdict:
    """The Deployment controller's own word on a Deployment, read the way kstatus and Argo CD
    read it (transcript 35). Its status counts only once ``status.observedGeneration`` equals
    ``metadata.generation``: before that it describes an older spec."""

    generation: int
    observed: bool
    available_replicas: int = 0
    updated_replicas: int = 0
    replicas: int = 0  # every Pod of the Deployment's ReplicaSets, old ones included (status.replicas)
    failure_reason: str = ""  # ProgressDeadlineExceeded, or the ReplicaFailure condition's reason (FailedCreate)
    failure_message: str = ""  # an excerpt of the Deployment's message


#: metav1.Condition's reason, as the CRD's status schema has it (pattern and maxLength 1024): the
#: Deployment's own conditions have no such rule, and whoever may write a Deployment's status can
#: give its ReplicaFailure any text, which copied as it is would make every status write a 422.
CONDITION_REASON = re.compile(r"[A-Za-z](?:[A-Za-z0-9_,:]{0,1022}[A-Za-z0-9_])?")


def deployment_verdict(deployment: dict[str, Any]) -> DeploymentVerdict:
    """Pure: what the Deployment's status says, for the once-per-cycle and event-driven modes alike."""
    generation = (deployment.get("metadata") or {}).get("generation", 1)
    status = deployment.get("status") or {}
    if status.get("observedGeneration") != generation:
        return DeploymentVerdict(generation, observed=False)
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    progressing = conditions.get("Progressing") or {}
    failure = conditions.get("ReplicaFailure") or {}
    reason, message = "", ""
    if progressing.get("status") == "False" and progressing.get("reason") == Reason.PROGRESS_DEADLINE_EXCEEDED:
        reason, message = Reason.PROGRESS_DEADLINE_EXCEEDED, progressing.get("message") or ""
    elif failure.get("status") == "True":
        given, message = failure.get("reason") or "", failure.get("message") or ""
        reason = given if CONDITION_REASON.fullmatch(given) else Reason.REPLICA_FAILURE
        if given and reason != given:
            message = f"{given}: {message}"  # any text fits a message; a reason must be a Condition's word
    return DeploymentVerdict(generation, True, status.get("availableReplicas", 0), status.get("updatedReplicas", 0),
                             status.get("replicas", 0), reason, one_line_excerpt(message) if reason else "")


def rolled_out(verdict: DeploymentVerdict, size: int) -> bool:
    """Whether the rollout is complete, as ``kubectl rollout status`` decides it: every desired replica
    updated, no old Pod left (``status.replicas`` above the updated), and every updated one available.
    The old Pods of a surge-only rollout stay available while the new ones are Pending: available
    alone says nothing of the new template."""
    updated = verdict.updated_replicas
    return updated >= size and verdict.replicas <= updated and verdict.available_replicas >= updated


def desired_conditions(obs: Observation) -> list[dict[str, Any]]:
    """The conditions (without lastTransitionTime) for an observation.

    The reconciler's own failures (InvalidSpec, ResourceNotOwned, ApplyFailed) come first; then
    the Deployment's verdict: a progress deadline exceeded is ``Progressing=False``, and it or a
    ReplicaFailure is ``Degraded=True`` and ``Stalled=True`` with the Deployment's reason and
    message (kstatus reads ``Stalled`` as Failed; ``Reconciling`` is then dropped, as kstatus
    reads it first)."""
    g = obs.generation
    if obs.paused:  # the conditions replaced by one, as Flux shows a suspended object: nothing here is current
        return [_condition("Ready", False, Reason.RECONCILE_DISABLED, obs.paused, g)]
    dep = obs.deployment or {}
    verdict = deployment_verdict(dep) if dep else None
    own_failure = bool(obs.degraded_reason)
    prog_reason: str  # a Reason, or the Deployment controller's own (ProgressDeadlineExceeded)
    if obs.degraded_reason in (Reason.RESOURCE_NOT_OWNED, Reason.INVALID_SPEC) or verdict is None:
        available = False
        avail_reason = obs.degraded_reason or Reason.DEPLOYMENT_MISSING
        avail_message = obs.degraded_message or "the Deployment does not exist yet"
    else:
        available = verdict.observed and verdict.available_replicas >= obs.size
        avail_reason = Reason.MINIMUM_REPLICAS_AVAILABLE if available else Reason.DEPLOYMENT_UNAVAILABLE
        avail_message = f"{verdict.available_replicas} of {obs.size} replicas available" if verdict.observed else (
            f"waiting for the Deployment controller to observe generation {verdict.generation}")
        if obs.autoscaler:
            avail_message += f"; replicas follow HorizontalPodAutoscaler {obs.autoscaler}, not spec.size"
        elif obs.replicas_by:
            avail_message += f"; replicas set by {obs.replicas_by}, not spec.size (ignore-paths)"
    failure = (verdict.failure_reason, verdict.failure_message) if verdict and verdict.failure_reason and not own_failure else None
    if own_failure or verdict is None:
        progressing, prog_reason, prog_message = False, Reason.NOT_PROGRESSING, "no rollout under way"
    elif not verdict.observed:
        progressing, prog_reason = True, Reason.ROLLING_OUT
        prog_message = f"waiting for the Deployment controller to observe generation {verdict.generation}"
    elif failure and failure[0] == Reason.PROGRESS_DEADLINE_EXCEEDED:
        progressing, (prog_reason, prog_message) = False, failure
    elif not (available and rolled_out(verdict, obs.size)):
        progressing, prog_reason, prog_message = True, Reason.ROLLING_OUT, f"waiting for {obs.size} available replicas"
    else:
        done = "the rollout is complete" if obs.applied_by else "the Deployment matches the CR"  # drift is not ours to fix
        progressing, prog_reason, prog_message = False, Reason.RECONCILE_COMPLETE, done
    degraded = (obs.degraded_reason, obs.degraded_message) if own_failure else failure or _not_degraded(obs)
    stalled = own_failure or failure is not None
    ready = available and not progressing and not stalled
    why = (Reason.READY, "the cache is available at its desired replicas") if ready else (
        degraded if stalled else (avail_reason, avail_message) if not available else (prog_reason, prog_message))
    conditions = [
        _condition("Available", available, avail_reason, avail_message, g),
        _condition("Progressing", progressing, prog_reason, prog_message, g),
        _condition("Degraded", stalled, *degraded, g),
        # the summary cert-manager, Crossplane, Cluster API and Flux objects give: kubectl wait --for=condition=Ready
        _condition("Ready", ready, *why, g),
    ]
    if not stalled and (progressing or not available):
        conditions.append(_condition("Reconciling", True, Reason.PROGRESSING, conditions[0]["message"], g))
    if stalled:
        conditions.append(_condition("Stalled", True, *degraded, g))
    return conditions


def _not_degraded(obs: Observation) -> tuple[str, str]:
    """Reason and message of ``Degraded=False``: who manages the Deployment."""
    note = f"; {obs.drift_note}" if obs.drift_note else ""
    if obs.applied_by and obs.inherited_selector:
        message = (f"the Deployment was created for this Memcached by {obs.applied_by} with a selector of its own "
                   f"({obs.inherited_selector}): observed, never written; reconcile --adopt takes it over in place, "
                   "keeping that selector")
        if obs.overlap:  # said before any take-over: the selector it would keep takes in another owner's Pods
            return Reason.SELECTOR_OVERLAP, f"{obs.overlap}; {message}{note}"
        return Reason.NOT_ADOPTED, message + note
    if obs.applied_by:
        message = (f"the Deployment is applied by {obs.applied_by} (no controller ownerReference): observed, "
                   "never written; reconcile --adopt takes it over")
        return Reason.GITOPS_APPLIED, message + note
    if obs.overlap:
        return Reason.SELECTOR_OVERLAP, obs.overlap
    return Reason.AS_EXPECTED, "the reconciler can manage this Memcached"


def with_transition_times(conditions: list[dict[str, Any]], previous: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    """Keep each condition's lastTransitionTime unless its status flipped (API conventions)."""
    before = {c.get("type"): c for c in previous or [] if isinstance(c, dict)}
    out = []
    for c in conditions:
        old = before.get(c["type"])
        when = old.get("lastTransitionTime") if old and old.get("status") == c["status"] and old.get("lastTransitionTime") else now
        out.append({**c, "lastTransitionTime": when})
    return out


#: Degraded=False reasons that say more than "Available" when nothing is failing or rolling out.
_TELLING = {Reason.GITOPS_APPLIED, Reason.NOT_ADOPTED, Reason.SELECTOR_OVERLAP}


def status_reason(conditions: list[dict[str, Any]]) -> str:
    """The reason of the condition that matters now (the STATUS column): a failure (Degraded=True)
    first, then a rollout under way, then who manages the Deployment when that is news
    (GitOpsApplied, NotAdopted, SelectorOverlap), then Available, else why it is not available."""
    by_type = {c["type"]: c for c in conditions}
    if "Degraded" not in by_type:  # paused: its one condition
        return _reason(by_type["Ready"])
    degraded, progressing, available = by_type["Degraded"], by_type["Progressing"], by_type["Available"]
    if degraded["status"] == "True":
        return _reason(degraded)
    if progressing["status"] == "True":
        return str(Reason.PROGRESSING)
    if degraded["reason"] in _TELLING:
        return _reason(degraded)
    return "Available" if available["status"] == "True" else _reason(available)


def _reason(condition: dict[str, Any]) -> str:
    reason: str = condition["reason"]  # every condition this module writes has one
    return reason


def columns(obs: Observation, conditions: list[dict[str, Any]]) -> dict[str, str]:
    """The status fields behind ``kubectl get memcached`` (the CRD's additionalPrinterColumns): READY
    as ``kubectl get deployment`` shows it (available / desired), STATUS, and for ``-o wide`` the
    running image and who sets the replicas."""
    verdict = deployment_verdict(obs.deployment) if obs.deployment else None
    available = verdict.available_replicas if verdict and verdict.observed else 0
    containers = ((((obs.deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    image = next((c.get("image") for c in containers if c.get("name") == "memcached"), None) or (
        containers[0].get("image") if containers else "")
    owner = (f"HorizontalPodAutoscaler/{obs.autoscaler}" if obs.autoscaler else obs.replicas_by or obs.applied_by or "spec.size")
    # ready (at most "2147483647/2147483647") and reason (ours, or a condition's, itself at most 1,024) fit
    # the CRD's maxLength; the image and the owner come from others' objects and are cut to it.
    return {"ready": f"{available}/{obs.size}", "reason": status_reason(conditions),
            "image": str(image or "")[:4096], "replicasOwner": owner[:512]}


#: The Pod names ``status.nodes`` lists at most: any Pod that carries a CR's two selector labels is
#: counted, so someone who can create Pods in the namespace must not grow the CR without a bound
#: (512 names of at most 253 characters stay far below etcd's 1.5 MiB object limit).
MAX_NODES = 512


def desired_status(obs: Observation, live_status: dict[str, Any] | None, now: str,
                   declared: frozenset[str] | None = None, condition_fields: frozenset[str] | None = None) -> dict[str, Any]:
    """The whole status to apply, limited to the fields the served CRD declares.

    ``declared`` are the names under ``status`` the CRD's schema has (None: all of ours), and
    ``condition_fields`` those of a condition item: an apply with an undeclared field is an HTTP
    500 on kube-apiserver v1.36 (transcript 23), so an older or foreign CRD gets less, not a crash.
    """
    conditions = with_transition_times(desired_conditions(obs), (live_status or {}).get("conditions") or [], now)
    shown = columns(obs, conditions)  # from the whole conditions: a CRD whose conditions declare no reason has a STATUS
    if condition_fields is not None:
        conditions = [{k: v for k, v in c.items() if k in condition_fields} for c in conditions]
    status: dict[str, Any] = {"observedGeneration": obs.generation, "conditions": conditions, "nodes": sorted(obs.pods)[:MAX_NODES],
                              **shown}
    if declared is not None:
        status = {k: v for k, v in status.items() if k in declared}
    return status


def status_differs(desired: dict[str, Any], live: dict[str, Any] | None) -> bool:
    """Whether applying ``desired`` would change anything we own in ``live``."""
    live = live or {}
    return any(live.get(k) != v for k, v in desired.items())
