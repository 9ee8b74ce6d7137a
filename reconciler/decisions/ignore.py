"""Fields of a Memcached's Deployment that someone else may set: the ``ignore-paths`` annotation. Pure.

A Memcached may carry ``cache.example.com/ignore-paths``: JSON Pointers (RFC 6901) into its
Deployment, separated by commas or new lines, for example
``/spec/template/metadata/annotations,/spec/template/spec/containers/0/resources``. Named as
Argo CD and Flux name theirs (``argocd.argoproj.io/compare-options``,
``kustomize.toolkit.fluxcd.io/ssa``: the API group of the tool, then the option). Flux's
``.spec.ignore`` semantics (kustomize-controller):

- drift at an ignored path is neither corrected nor reported as drift; ``--detect-only`` lists it
  as ignored;
- when an apply happens for other reasons, an ignored field is left out of it if another field
  manager owns it (leaving it out changes nothing), and carries the live value if we alone own it
  (leaving it out would delete it); a field absent from the live object stays absent;
- a pointer may pass through a list by index (``containers/0``) but names a field: one that ends at
  a list item is not followed (server-side apply places items by merge key, not by index);
- a Deployment that does not exist yet is created whole.

A pointer that is not RFC 6901, or that names what makes the Deployment ours (its identity,
ownerReferences, selector), is an error on the CR, naming the annotation: Degraded
``InvalidIgnorePaths``, and nothing is written until it is fixed.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from memcached_gitops.foundation.excerpt import quote_value

from .managedfields import owners_of

ANNOTATION = "cache.example.com/ignore-paths"
#: What no rule may hand to someone else: the object's identity, its owner, and the immutable selector.
PROTECTED = (("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace"),
             ("metadata", "ownerReferences"), ("spec",), ("spec", "selector"))
_ESCAPE = re.compile(r"~(?![01])")

Pointer = tuple[str, ...]


class IgnoreError(ValueError):
    """An annotation that cannot be followed; the message names the annotation and the pointer."""


def pointers_of(cr: dict[str, Any]) -> tuple[Pointer, ...]:
    """The CR's ignored paths, parsed (empty without the annotation)."""
    text = ((cr.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if text is None:
        return ()
    out: list[Pointer] = []
    for raw in re.split(r"[,\n]", str(text)):
        pointer = raw.strip()
        if not pointer:
            continue
        if not pointer.startswith("/") or _ESCAPE.search(pointer):
            raise IgnoreError(f"annotation {ANNOTATION}: {quote_value(pointer)} is not a JSON Pointer (RFC 6901: "
                              "/spec/replicas, with ~0 for ~ and ~1 for /)")
        steps = tuple(s.replace("~1", "/").replace("~0", "~") for s in pointer[1:].split("/"))
        if "" in steps:
            raise IgnoreError(f"annotation {ANNOTATION}: {quote_value(pointer)} has an empty step: no field of a Deployment "
                              "has an empty name")
        if steps in PROTECTED or steps[:2] in (("spec", "selector"), ("metadata", "ownerReferences")):
            raise IgnoreError(f"annotation {ANNOTATION}: {quote_value(pointer)} names what makes the Deployment this "
                              "Memcached's (its name, owner or selector); it cannot be ignored")
        out.append(steps)
    return tuple(out)


def _lookup(obj: Any, steps: Pointer) -> tuple[bool, Any]:
    for step in steps:
        if isinstance(obj, dict) and step in obj:
            obj = obj[step]
        elif isinstance(obj, list) and step.isdigit() and int(step) < len(obj):
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
