"""Take back the fields a person changed with kubectl before our apply corrects them. Pure.

Why: server-side apply only removes what *we* own and no longer apply. When a person edits a field
with kubectl (``kubectl edit``, ``patch``, client-side ``apply``, ``replace``), the API server gives
that field to kubectl's manager, silently (transcripts README, "Non-apply writes take ownership
silently"). A scalar is taken back by our forced apply (07), but an edit that changes an item's key
in an associative list (a Service port ``11211`` replaced by ``11299``: ports are keyed by port and
protocol) leaves the person's item beside ours, owned by them; the apply then adds ours, with the
same name, and the API server refuses the Service (``422 spec.ports[1].name: Duplicate value``).

What: what Flux's kustomize-controller does (fluxcd/kustomize-controller#527, fixing #486). Before
applying, fluxcd/pkg ``ssa/manager_apply.go`` ``cleanupMetadata`` sends one JSON patch built by
``ssa/patch.go`` ``PatchReplaceFieldsManagers``: each managedFields entry of a listed manager
(``matchFieldManager``: same operation, no subresource) is merged into the applier's own Apply entry
(or renamed to it when it has none), and ``metadata.managedFields`` is replaced whole. The apply that
follows then owns the person's fields alone, so it puts back or removes them, whatever list or map
they touched. Here it is sent only when the apply alone cannot put the object back (an item of ours
missing from a keyed list: cycle.py ``_revocation``), so that a changed value still costs one write.
The managers are:

- ``PERSON_MANAGERS`` (Update): what kubectl records for a person's edit (``kubectl-edit``,
  ``kubectl-patch``, ``kubectl-client-side-apply``, ``kubectl-replace``; ``kubectl`` for a write
  without a fieldManager) and ``before-first-apply`` (stripped managedFields, transcript 19);
- ``kubectl`` Apply: ``kubectl apply --server-side --force-conflicts`` by hand;
- any other Update manager that owns a field we found drifted (``unknown``), except the
  ``KEPT_MANAGERS`` (the controllers whose writes are theirs by right).

Never revoked: subresource entries (``kubectl scale`` and an HPA write ``/scale``: our forced apply
takes replicas back unless an HPA scales the Deployment, and then it is the HPA's), and the fields
at the CR's ``ignore-paths``: they stay with whoever set them (split off each revoked entry).
Unlike Flux, ``kubectl-set``, ``kubectl-label``, ``kubectl-annotate`` and ``kubectl-rollout`` are
left alone unless they own a drifted field: a ``rollout restart`` must not be undone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from memcached_gitops.foundation.digits import is_digits

from .ignore import Pointer

#: The managers of a person's edits (Update operations): kubectl v1.37's names (transcripts README).
#: ``kubectl-replace`` is kubectl replace's default (kubernetes/kubectl pkg/cmd/replace/replace.go), recorded by no transcript.
PERSON_MANAGERS = frozenset({"kubectl", "kubectl-edit", "kubectl-patch", "kubectl-client-side-apply", "kubectl-replace",
                             "before-first-apply"})
#: The Apply manager of ``kubectl apply --server-side`` (without ``--field-manager``).
PERSON_APPLIERS = frozenset({"kubectl"})
#: Controllers whose Update writes are theirs by right (the Deployment controller's revision annotation).
KEPT_MANAGERS = frozenset({"kube-controller-manager"})

Tree = dict[str, Any]


def revoked(entry: dict[str, Any], field_manager: str, unknown: Iterable[str] = ()) -> bool:
    """Whether ``entry`` is a person's (or an unknown updater's) whose fields we take back."""
    if entry.get("subresource") or entry.get("manager") == field_manager:
        return False
    name, operation = entry.get("manager", ""), entry.get("operation")
    if operation == "Apply":
        return name in PERSON_APPLIERS
    return operation == "Update" and (name in PERSON_MANAGERS or (name in set(unknown) and name not in KEPT_MANAGERS))


def split(tree: Tree, pointers: tuple[Pointer, ...]) -> tuple[Tree | None, Tree | None]:
    """``tree`` (fieldsV1) as (what stays at ``pointers``, what moves): None for nothing. A pointer's
    index step matches every list item (managedFields key items, not indexes: so the field stays
    with its owner in each item); a pointer into a leaf (an atomic value) keeps it whole."""
    if () in pointers:
        return tree, None
    if not pointers:
        return None, tree
    if not tree:
        return tree, None
    kept: Tree = {}
    moved: Tree = {}
    for key, child in tree.items():
        kind, _, name = key.partition(":")
        below = tuple(p[1:] for p in pointers if (kind == "f" and p[0] == name) or (kind != "f" and is_digits(p[0])))
        stays, goes = split(child, below)
        if stays is not None:
            kept[key] = stays
        if goes is not None:
            moved[key] = goes
    return (kept or None), (moved or None)


def union(a: Tree, b: Tree) -> Tree:
    """Two fieldsV1 trees as one (what either owns)."""
    out = copy.deepcopy(a)
    for key, child in b.items():
        mine = out.get(key)
        if mine is None:
            out[key] = copy.deepcopy(child)
        elif mine and child:
            out[key] = union(mine, child)
        elif mine or child:  # the field itself (a leaf) and fields inside it: "." marks the field (fieldsV1)
            out[key] = union({".": {}}, mine or child)
    return out


def revocation(live: dict[str, Any], field_manager: str, unknown: Iterable[str] = (),
               pointers: tuple[Pointer, ...] = ()) -> list[dict[str, Any]]:
    """The JSON patch (RFC 6902) that gives ``field_manager``'s Apply entry the fields of the revoked
    managers of ``live`` (``unknown``: other Update managers found owning drifted fields), keeping
    the fields at ``pointers`` with their owners; [] when nothing is revoked. Guarded by a ``test``
    of the resourceVersion read, so that entries written since are never overwritten."""
    meta = live.get("metadata") or {}
    entries = meta.get("managedFields") or []
    unknown = frozenset(unknown)
    ours = next((e for e in entries if e.get("manager") == field_manager and e.get("operation") == "Apply"
                 and not e.get("subresource")), None)
    taken: Tree = {}
    out: list[dict[str, Any]] = []
    api_version = ""
    for entry in entries:
        if entry is ours:
            continue
        if not revoked(entry, field_manager, unknown):
            out.append(entry)
            continue
        api_version = api_version or entry.get("apiVersion", "")
        stays, goes = split(entry.get("fieldsV1") or {}, pointers)
        taken = union(taken, goes or {})
        if stays:
            out.append({**entry, "fieldsV1": stays})
    if not taken:
        return []
    mine: dict[str, Any] = copy.deepcopy(ours) if ours is not None else {
        "manager": field_manager, "operation": "Apply", "apiVersion": api_version, "fieldsType": "FieldsV1"}  # Flux renames the first
    held: Tree = mine.get("fieldsV1") or {}
    mine["fieldsV1"] = union(held, taken)
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion", "")},
            {"op": "replace", "path": "/metadata/managedFields", "value": [mine, *out]}]
