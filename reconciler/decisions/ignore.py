"""Fields of a Memcached's objects that someone else may set: the ``ignore-paths`` annotation. Pure.

A Memcached may carry ``cache.example.com/ignore-paths``: JSON Pointers (RFC 6901) into its
Deployment, Service or PodDisruptionBudget, separated by commas or new lines, for example
``/spec/template/metadata/annotations, Service:/spec/ports/0/appProtocol``. A bare pointer names a
field of the Deployment (as it always has); ``<Kind>:`` before a pointer names a field of that kind
of the CR's objects: ``Deployment``, ``Service`` or ``PodDisruptionBudget``, spelt as their ``kind``
is. Why this syntax: a JSON Pointer starts with ``/``, so whatever comes before the first ``/`` can
never be part of one: no annotation that was valid changes meaning, and one written for an older
reconciler fails loudly there (not a JSON Pointer) instead of being read as a Deployment's path.
It says what Argo CD's ``ignoreDifferences`` says with ``kind`` + ``jsonPointers`` and Flux's
``.spec.ignore`` with a ``target`` + ``paths``; a group and a name, which those need to pick one
object out of many, are not: a Memcached has one object of each kind, and the three kinds differ.
Named as Argo CD and Flux name theirs (``argocd.argoproj.io/compare-options``,
``kustomize.toolkit.fluxcd.io/ssa``: the API group of the tool, then the option). Flux's
``.spec.ignore`` semantics (kustomize-controller), for each object alike:

- drift at an ignored path is neither corrected nor reported as drift (nor counted in a fight);
  ``--detect-only`` lists it as ignored;
- when an apply happens for other reasons, an ignored field is left out of it if another field
  manager owns it (leaving it out changes nothing), and carries the live value if we alone own it
  (leaving it out would delete it); a field absent from the live object stays absent;
- a pointer may pass through a list by index (``containers/0``) but names a field: one that ends at
  a list item is not followed (server-side apply places items by merge key, not by index);
- an object that does not exist yet is created whole.

A pointer that is not RFC 6901, of a kind the Memcached does not own, or that names what makes the
object ours (``PROTECTED``), is an error on the CR, naming the annotation: Degraded
``InvalidIgnorePaths``, and nothing is written until it is fixed.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from memcached_gitops.foundation.digits import is_digits
from memcached_gitops.foundation.excerpt import quote_value
from memcached_gitops.foundation.identities import IGNORE_PATHS_ANNOTATION
from memcached_gitops.render.companions import COMPANIONS as COMPANION_KINDS

from .managedfields import owners_of
from .vocabulary import COMPANIONS, DEPLOYMENTS

#: The annotation this module reads (foundation/identities.py).
ANNOTATION = IGNORE_PATHS_ANNOTATION
#: The kinds a pointer may name: the objects a Memcached owns. A bare pointer names the first.
KINDS = (DEPLOYMENTS.kind, *(r.kind for r in COMPANIONS))
#: What no pointer may name, in any kind: the object's identity, and the maps that hold it.
IDENTITY = (("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace"), ("spec",))
#: What no pointer may name or reach into, per kind: the owner, and the selector that ties the object
#: to this Memcached's Pods. The Deployment's picks its Pods (and is immutable); the Service's picks
#: the Pods its name resolves to, the cache's servers; the budget's picks the Pods whose evictions it
#: limits. Left to someone else, each could serve or guard another CR's Pods, or nobody's.
PROTECTED: dict[str, tuple[tuple[str, ...], ...]] = {
    DEPLOYMENTS.kind: (("metadata", "ownerReferences"), ("spec", "selector")),
    **{c.resource.kind: (("metadata", "ownerReferences"), c.selector_path) for c in COMPANION_KINDS}}
_ESCAPE = re.compile(r"~(?![01])")

Pointer = tuple[str, ...]
#: The CR's ignored paths, by the kind of the object they point into (a kind without any is absent).
Ignored = Mapping[str, tuple[Pointer, ...]]


class IgnoreError(ValueError):
    """An annotation that cannot be followed; the message names the annotation and the pointer."""


def ignored_paths(cr: dict[str, Any]) -> dict[str, tuple[Pointer, ...]]:
    """The CR's ignored paths, parsed, by kind (empty without the annotation). Every entry is checked
    before any is used: one bad entry refuses the annotation whole, so that nothing is written from
    half of it."""
    text = ((cr.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if text is None:
        return {}
    out: dict[str, tuple[Pointer, ...]] = {}
    for raw in re.split(r"[,\n]", str(text)):
        entry = raw.strip()
        if entry:
            kind, steps = _parse(entry)
            out[kind] = out.get(kind, ()) + (steps,)
    return out


def pointers_of(cr: dict[str, Any], kind: str = DEPLOYMENTS.kind) -> tuple[Pointer, ...]:
    """The CR's ignored paths into its object of ``kind`` (the Deployment unless said); an error
    when any entry of the annotation, of any kind, cannot be followed."""
    return ignored_paths(cr).get(kind, ())


def _parse(entry: str) -> tuple[str, Pointer]:
    """One entry: ``/a/b`` (the Deployment's) or ``Kind:/a/b``, as (kind, steps). Only an entry that
    does not start with ``/`` is split at its first ``:``: a pointer's own steps may hold one."""
    kind, pointer = DEPLOYMENTS.kind, entry
    if not entry.startswith("/") and ":" in entry:
        named, _, rest = entry.partition(":")
        kind, pointer = named.strip(), rest.strip()
        if kind not in KINDS:
            raise IgnoreError(f"annotation {ANNOTATION}: {quote_value(entry)} names kind {quote_value(kind)}: a Memcached's "
                              f"objects are {', '.join(KINDS)} (a bare pointer names the Deployment)")
    if not pointer.startswith("/") or _ESCAPE.search(pointer):
        raise IgnoreError(f"annotation {ANNOTATION}: {quote_value(entry)} is not a JSON Pointer (RFC 6901: "
                          "/spec/replicas, with ~0 for ~ and ~1 for /; Service:/... or PodDisruptionBudget:/... for those objects)")
    steps = tuple(s.replace("~1", "/").replace("~0", "~") for s in pointer[1:].split("/"))
    if "" in steps:
        raise IgnoreError(f"annotation {ANNOTATION}: {quote_value(entry)} has an empty step: no field of a {kind} "
                          "has an empty name")
    if steps in IDENTITY or any(steps[:len(p)] == p for p in PROTECTED[kind]):
        raise IgnoreError(f"annotation {ANNOTATION}: {quote_value(entry)} names what makes the {kind} this "
                          "Memcached's (its name, owner or selector); it cannot be ignored")
    return kind, steps


def _lookup(obj: Any, steps: Pointer) -> tuple[bool, Any]:
    for step in steps:
        if isinstance(obj, dict) and step in obj:
            obj = obj[step]
        elif isinstance(obj, list) and is_digits(step) and int(step) < len(obj):
            obj = obj[int(step)]
        else:
            return False, None
    return True, obj


def _parent(obj: Any, steps: Pointer) -> dict[str, Any] | None:
    """The map that holds the last step (None when the way there does not exist, or ends in a list:
    a pointer names a field, not a list item, whose place SSA keys by merge key, not index)."""
    found, parent = _lookup(obj, steps[:-1])
    return parent if found and isinstance(parent, dict) else None


def follow(desired: dict[str, Any], live: dict[str, Any] | None, pointers: tuple[Pointer, ...],
           field_manager: str) -> dict[str, Any]:
    """``desired`` as our apply should carry it with these paths ignored (a copy; ``desired`` is not
    changed)."""
    if live is None or not pointers:
        return desired
    out = copy.deepcopy(desired)
    managed = (live.get("metadata") or {}).get("managedFields") or []
    for steps in pointers:
        parent = _parent(out, steps)
        if parent is None:
            continue  # we do not set it: it stays as others leave it
        present, value = _lookup(live, steps)
        # managedFields name list items by key (k:{"name":...}), never by index: through a list, no owner
        # is found, and the live value is carried (equal values never conflict: transcript 26)
        others = [m for m in owners_of(managed, tuple(("f", s) for s in steps)) if m != field_manager]
        if not present or others:
            parent.pop(steps[-1], None)
        else:
            parent[steps[-1]] = copy.deepcopy(value)
    return out
