"""What an apply should carry and what differs: the step between a CR's desired Deployment and the
live one, shared by the reconciler (cycle.py) and ``memcached-gitops diff``. Pure.

In order: a live selector is kept (selectors.py: it is immutable), replicas are handed to an HPA that
scales the Deployment (autoscalers.py), and the CR's ignored paths are left to whoever sets them
(ignore.py). The drift is then what an apply would change; the ignored drift is listed apart.
The last step, ``ignoring``, is the companions' too (companions.py): an ignored field of the Service
or the budget is handled as one of the Deployment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memcached_gitops.schemas.list_rules import ListRules

from .autoscalers import hand_off_replicas
from .drift import DEPLOYMENT_RULES, Drift, compare
from .ignore import Pointer, follow
from .selectors import keep_live_selector


@dataclass(frozen=True)
class Plan:
    desired: dict[str, Any]  # what our apply carries
    drift: list[Drift]  # what it would change
    ignored: list[Drift] = field(default_factory=list)  # differences at the CR's ignored paths, never corrected


def plan(desired: dict[str, Any], live: dict[str, Any] | None, field_manager: str, autoscaler: str = "",
         pointers: tuple[Pointer, ...] = ()) -> Plan:
    """The apply and the drift for ``desired`` against ``live`` (None: it does not exist yet)."""
    desired = keep_live_selector(desired, live)
    if autoscaler:
        desired = hand_off_replicas(desired, live, field_manager)
    return ignoring(desired, live, field_manager, pointers)


def ignoring(desired: dict[str, Any], live: dict[str, Any] | None, field_manager: str, pointers: tuple[Pointer, ...],
             rules: ListRules = DEPLOYMENT_RULES) -> Plan:
    """The apply and the drift for ``desired`` against ``live`` with ``pointers`` left to whoever
    sets them (ignore.follow), compared with the kind's list semantics (``rules``); the drift that
    the ignoring hides is listed apart. One function for every kind, so that an ignored field of a
    companion is left out, or carries the live value, exactly as one of the Deployment."""
    everything = compare(desired, live, rules)
    if not pointers or live is None:
        return Plan(desired, everything)
    desired = follow(desired, live, pointers, field_manager)
    drift = compare(desired, live, rules)
    kept = {d.field for d in drift}
    return Plan(desired, drift, [d for d in everything if d.field not in kept])
