"""The status a Memcached should show, from what one cycle saw and did. Pure.

Conditions follow metav1.Condition (type, status, observedGeneration, lastTransitionTime, reason
in CamelCase, message) and the Kubernetes API conventions: ``Available`` (the Deployment has all
its replicas available for the current generation), ``Progressing`` (a rollout is under way) and
``Degraded`` (the reconciler cannot do its job for this CR). For kstatus (Flux health checks,
``kubectl wait``), the abnormal-true conditions ``Reconciling`` and ``Stalled`` are added while
they are True and removed when they are not (sigs.k8s.io/cli-utils kstatus: a resource with
``Reconciling=True`` is InProgress, ``Stalled=True`` is Failed). ``lastTransitionTime`` moves only
when a condition's status flips.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONDITION_TYPES = ("Available", "Progressing", "Degraded")
#: Degraded=False reason of a CR whose Deployment Argo CD (or another tool) applied: see ownership.py.
GITOPS_APPLIED = "GitOpsApplied"


@dataclass(frozen=True)
class Observation:
    """What the cycle knows about one CR."""

    generation: int
    size: int
    deployment: dict[str, Any] | None  # live (or just applied) Deployment, None when absent
    pods: tuple[str, ...]
    degraded_reason: str = ""  # ResourceNotOwned | InvalidSpec | ApplyFailed | ""
    degraded_message: str = ""
    corrected: str = ""  # summary of the drift corrected in this cycle, if any
    applied_by: str = ""  # GitOps-applied (ownership.py): the field manager that applied the Deployment
    drift_note: str = ""  # GitOps-applied: what differs from the rendering (information, not failure)


def _condition(ctype: str, status: bool, reason: str, message: str, generation: int) -> dict[str, Any]:
    return {"type": ctype, "status": "True" if status else "False", "observedGeneration": generation,
            "reason": reason, "message": message[:32768]}


def desired_conditions(obs: Observation) -> list[dict[str, Any]]:
    """The conditions (without lastTransitionTime) for an observation."""
    g = obs.generation
    dep = obs.deployment or {}
    status = dep.get("status") or {}
    available_replicas = status.get("availableReplicas", 0)
    observed = status.get("observedGeneration", 0) >= (dep.get("metadata") or {}).get("generation", 1)
    updated = status.get("updatedReplicas", 0) >= obs.size
    if obs.degraded_reason in ("ResourceNotOwned", "InvalidSpec") or not dep:
        available = False
        avail_reason = obs.degraded_reason or "DeploymentMissing"
        avail_message = obs.degraded_message or "the Deployment does not exist yet"
    else:
        available = observed and available_replicas >= obs.size
        avail_reason = "MinimumReplicasAvailable" if available else "DeploymentUnavailable"
        avail_message = f"{available_replicas} of {obs.size} replicas available" + (
            "" if observed else "; the Deployment controller has not observed the latest change yet")
    progressing = bool(dep) and not obs.degraded_reason and not (available and observed and updated)
    if progressing:
        prog_reason, prog_message = "RollingOut", obs.corrected or f"waiting for {obs.size} available replicas"
    elif available:
        prog_reason, prog_message = "ReconcileComplete", obs.corrected or "the Deployment matches the CR"
    else:
        prog_reason, prog_message = "NotProgressing", "no rollout under way"
    degraded = (obs.degraded_reason, obs.degraded_message) if obs.degraded_reason else _not_degraded(obs)
    conditions = [
        _condition("Available", available, avail_reason, avail_message, g),
        _condition("Progressing", progressing, prog_reason, prog_message, g),
        _condition("Degraded", bool(obs.degraded_reason), *degraded, g),
    ]
    if progressing or (not available and not obs.degraded_reason):
        conditions.append(_condition("Reconciling", True, "Progressing", conditions[0]["message"], g))
    if obs.degraded_reason:
        conditions.append(_condition("Stalled", True, obs.degraded_reason, obs.degraded_message, g))
    return conditions


def _not_degraded(obs: Observation) -> tuple[str, str]:
    """Reason and message of ``Degraded=False``: who manages the Deployment."""
    if obs.applied_by:
        message = (f"the Deployment is applied by {obs.applied_by} (no controller ownerReference): observed, "
                   "never written; reconcile --adopt takes it over")
        return GITOPS_APPLIED, message + (f"; {obs.drift_note}" if obs.drift_note else "")
    return "AsExpected", "the reconciler can manage this Memcached"


def with_transition_times(conditions: list[dict[str, Any]], previous: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    """Keep each condition's lastTransitionTime unless its status flipped (API conventions)."""
    before = {c.get("type"): c for c in previous or [] if isinstance(c, dict)}
    out = []
    for c in conditions:
        old = before.get(c["type"])
        when = old.get("lastTransitionTime") if old and old.get("status") == c["status"] and old.get("lastTransitionTime") else now
        out.append({**c, "lastTransitionTime": when})
    return out


def desired_status(obs: Observation, live_status: dict[str, Any] | None, now: str,
                   declared: frozenset[str] | None = None, condition_fields: frozenset[str] | None = None) -> dict[str, Any]:
    """The whole status to apply, limited to the fields the served CRD declares.

    ``declared`` are the names under ``status`` the CRD's schema has (None: all of ours), and
    ``condition_fields`` those of a condition item: an apply with an undeclared field is an HTTP
    500 on kube-apiserver v1.36 (transcript 23), so an older or foreign CRD gets less, not a crash.
    """
    conditions = with_transition_times(desired_conditions(obs), (live_status or {}).get("conditions") or [], now)
    if condition_fields is not None:
        conditions = [{k: v for k, v in c.items() if k in condition_fields} for c in conditions]
    status: dict[str, Any] = {"observedGeneration": obs.generation, "conditions": conditions, "nodes": sorted(obs.pods)}
    if declared is not None:
        status = {k: v for k, v in status.items() if k in declared}
    return status


def status_differs(desired: dict[str, Any], live: dict[str, Any] | None) -> bool:
    """Whether applying ``desired`` would change anything we own in ``live``."""
    live = live or {}
    return any(live.get(k) != v for k, v in desired.items())
