"""What to do with the Service and the PodDisruptionBudget beside a Memcached's Deployment. Pure.

render/companions.py renders them; the reconciler owns them as it owns the Deployment:

- **missing**: created by a server-side apply with our field manager and a controller
  ownerReference to the Memcached, so the garbage collector removes them with it;
- **ours** (a controller ownerReference with the Memcached's uid): drift on the fields we set is
  corrected by the same apply, compared with the kind's list semantics (drift.py), except at the
  paths the CR's ``ignore-paths`` annotation names for that kind (ignore.py, through plan.ignoring:
  the Deployment's rules, so left out of the apply or carried at the live value alike);
- **ours but no longer wanted** (the budget of a Memcached scaled to one Pod): deleted;
- **GitOps-applied** (our managed-by and instance labels, no controller ownerReference: Argo CD
  applied our rendering): observed, not written, unless ``adopt``, as for the Deployment;
- **foreign** (anything else of that name, including one controlled by another object): never
  written; the Memcached reports it (Degraded, ``ResourceNotOwned``).
"""

from __future__ import annotations

import copy
import enum
from typing import Any, NamedTuple

from memcached_gitops.foundation.identities import owner_reference
from memcached_gitops.render import INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL
from memcached_gitops.render.companions import BY_KIND

from .drift import Drift, compare
from .ignore import Ignored
from .ownership import controller_of
from .plan import ignoring
from .vocabulary import COMPANIONS, Resource


class Move(enum.Enum):
    CREATE = "create"
    CORRECT = "correct"
    DELETE = "delete"
    KEEP = "keep"  # ours, and as desired
    OBSERVE = "observe"  # GitOps-applied, not adopted
    FOREIGN = "foreign"


class Step(NamedTuple):
    """One companion's move: the object to apply (CREATE, CORRECT), or the live one otherwise; the
    drift it corrects (or, observed, finds) and the drift left at the CR's ignored paths."""

    resource: Resource
    name: str
    move: Move
    body: dict[str, Any] | None
    drift: tuple[Drift, ...] = ()
    ignored: tuple[Drift, ...] = ()

    def describe(self) -> str:
        return f"{self.resource.kind} {self.name}"


def with_owner(obj: dict[str, Any], cr: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` whose controller is the Memcached ``cr`` (what the reconciler applies)."""
    owned = copy.deepcopy(obj)
    owned["metadata"]["ownerReferences"] = [owner_reference(cr)]
    return owned


def selecting(obj: dict[str, Any], selector: dict[str, Any] | None) -> dict[str, Any]:
    """``obj`` selecting the Pods of ``selector``: the Deployment's own selector where it was kept
    from a Deployment we took over (selectors.py), whose Pods lack our selector's labels, narrowed
    to the Memcached's instance label, which keep_live_selector gives those Pods' template as it
    renders them. The admission policy (kustomize/admission-policy) lets the reconciler's token
    write no Service or budget whose selector lacks that label: a selector kept alone (seed 000's
    ``app.kubernetes.io/name: project``) would take in every other Memcached of the namespace, and
    a budget on it would hold their Pods too. A kept selector that sets the instance label itself
    keeps its value (the Pods carry it). A kind that selects by a plain label map (a Service) gets the
    matchLabels; one with a LabelSelector, all of it (render/companions.py says which, and where)."""
    if not selector:
        return obj
    out = copy.deepcopy(obj)
    narrowed = copy.deepcopy(selector)
    narrowed["matchLabels"] = {INSTANCE_LABEL: obj["metadata"]["labels"][INSTANCE_LABEL], **(selector.get("matchLabels") or {})}
    companion = BY_KIND[obj["kind"]]
    *parents, last = companion.selector_path
    holder = out
    for step in parents:
        holder = holder[step]
    holder[last] = narrowed if companion.label_selector else narrowed["matchLabels"]
    return out


def relation(obj: dict[str, Any], cr: dict[str, Any]) -> Move:
    """KEEP for ours, OBSERVE for a GitOps-applied copy of our rendering, FOREIGN for anything else."""
    controller = controller_of(obj)
    if controller is not None:
        return Move.KEEP if controller.get("uid") == cr["metadata"].get("uid") else Move.FOREIGN
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(INSTANCE_LABEL) == cr["metadata"]["name"]:
        return Move.OBSERVE
    return Move.FOREIGN


def steps(cr: dict[str, Any], desired: list[dict[str, Any]], live: dict[tuple[str, str], dict[str, Any]], names: list[str],
          field_manager: str, adopt: bool = False, kept_selector: dict[str, Any] | None = None,
          ignored: Ignored | None = None) -> list[Step]:
    """The move for each companion: ``desired`` as rendered (without owner), ``live`` the objects
    of ``names`` found, by (kind, name); ``names`` every companion name the CR may have;
    ``kept_selector`` the Deployment's selector when it was kept from one taken over; ``ignored``
    the CR's ignored paths by kind (ignore.ignored_paths), followed with ``field_manager`` as ours."""
    out: list[Step] = []
    wanted = {(o["kind"], o["metadata"]["name"]) for o in desired}
    resources = {r.kind: r for r in COMPANIONS}
    for rendered in desired:
        obj = selecting(rendered, kept_selector)
        kind, name = obj["kind"], obj["metadata"]["name"]
        body = with_owner(obj, cr)
        current = live.get((kind, name))
        if current is None:
            out.append(Step(resources[kind], name, Move.CREATE, body))
            continue
        moved = relation(current, cr)
        if moved is Move.FOREIGN:
            out.append(Step(resources[kind], name, moved, current, tuple(compare(obj, current, BY_KIND[kind].rules))))
            continue
        pointers = (ignored or {}).get(kind, ())
        if moved is Move.OBSERVE and not adopt:
            seen = ignoring(obj, current, field_manager, pointers, BY_KIND[kind].rules)
            out.append(Step(resources[kind], name, moved, current, tuple(seen.drift), tuple(seen.ignored)))
            continue
        planned = ignoring(body, current, field_manager, pointers, BY_KIND[kind].rules)
        move = Move.CORRECT if planned.drift else Move.KEEP
        out.append(Step(resources[kind], name, move, planned.desired if planned.drift else current, tuple(planned.drift),
                        tuple(planned.ignored)))
    for resource in COMPANIONS:
        for name in names:
            current = live.get((resource.kind, name))
            if current is not None and (resource.kind, name) not in wanted and relation(current, cr) is Move.KEEP:
                out.append(Step(resource, name, Move.DELETE, current))
    return out
