"""Structural pruning, null pruning and defaulting: what the API server does before validating.

The apiextensions-apiserver works on a CR in this order (Kubernetes docs, "Extend the Kubernetes
API with CustomResourceDefinitions", sections "Field pruning" and "Defaulting"; source:
apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go and
schema/defaulting/algorithm.go):

1. fields not declared in the structural schema are pruned (with ``fieldValidation=Strict``, as
   ``kubectl apply --validate=strict`` sends, each one is an error instead: ``unknown field``);
   ``x-kubernetes-preserve-unknown-fields`` and ``additionalProperties`` keep them; the root's
   ``apiVersion``, ``kind`` and ``metadata`` are always kept, and unknown keys inside
   ``metadata`` are pruned like any other (objectmeta.go);
2. ``null`` in a field that is not ``nullable`` is dropped, unless the field has a default;
3. defaults are applied to absent fields (and to such nulls), then recursively inside the
   defaulted value, so ``spec: {default: {}}`` makes the defaults of ``spec``'s fields apply.

The walk mutates the object it is given: the loader builds a fresh value for every document, and
copying it again would double the cost of the hot path.
"""

from __future__ import annotations

import copy
from typing import Any

from .metadecode import MANAGED_FIELDS_ENTRY, OBJECT_META, OWNER_REFERENCE

Path = tuple[str | int, ...]

#: ObjectMeta's JSON fields (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
OBJECT_META_FIELDS = frozenset(OBJECT_META)
#: metav1.OwnerReference's and metav1.ManagedFieldsEntry's JSON fields.
OWNER_REFERENCE_FIELDS = frozenset(OWNER_REFERENCE)
MANAGED_FIELDS_ENTRY_FIELDS = frozenset(MANAGED_FIELDS_ENTRY)
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def prune_and_default(obj: dict[str, Any], schema: dict[str, Any]) -> list[Path]:
    """Prune ``obj`` in place and apply defaults; return the paths of the unknown fields pruned."""
    pruned: list[Path] = []
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        _prune_known(metadata, OBJECT_META_FIELDS, ("metadata",), pruned)
        for field, known in (("ownerReferences", OWNER_REFERENCE_FIELDS), ("managedFields", MANAGED_FIELDS_ENTRY_FIELDS)):
            items = metadata.get(field)
            for i, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, dict):  # strict decoding names them too (transcript 38)
                    _prune_known(item, known, ("metadata", field, i), pruned)
    _walk(obj, schema, (), pruned, root=True)
    return pruned


def _prune_known(x: dict[str, Any], known: frozenset[str], path: Path, pruned: list[Path]) -> None:
    for key in [k for k in x if k not in known]:
        del x[key]
        pruned.append(path + (key,))


def _as_integer(value: Any, s: dict[str, Any]) -> Any:
    """A float with no fraction where an integer is declared is that integer: the server decodes
    JSON numbers as int64 when they have no fraction (1.0 arrives from kubectl as 1)."""
    if isinstance(value, float) and value.is_integer() and s.get("type") == "integer" and abs(value) < 2**63:
        return int(value)
    return value


def _walk(x: Any, s: dict[str, Any], path: Path, pruned: list[Path], root: bool = False) -> None:
    if isinstance(x, dict):
        _walk_object(x, s, path, pruned, root or bool(s.get("x-kubernetes-embedded-resource")))
    elif isinstance(x, list):
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(x):
                x[i] = _as_integer(item, items)
                _walk(x[i], items, path + (i,), pruned)


def _walk_object(x: dict[str, Any], s: dict[str, Any], path: Path, pruned: list[Path], resource: bool) -> None:
    props: dict[str, Any] = s.get("properties") or {}
    additional = s.get("additionalProperties")
    keep_unknown = bool(s.get("x-kubernetes-preserve-unknown-fields")) or additional is True
    for key in list(x):
        sub = props.get(key)
        if sub is None and isinstance(additional, dict):
            sub = additional
        if sub is None:
            if not keep_unknown and not (resource and key in _ROOT_FIELDS):
                del x[key]
                pruned.append(path + (key,))
            continue
        if x[key] is None and not sub.get("nullable"):
            if "default" not in sub:
                del x[key]
                continue
            x[key] = copy.deepcopy(sub["default"])
        if resource and key == "metadata":
            continue  # ObjectMeta: validated by objectmeta.py, never pruned by the CRD schema
        x[key] = _as_integer(x[key], sub)
        _walk(x[key], sub, path + (key,), pruned)
    for key, sub in props.items():
        if key not in x and "default" in sub:
            x[key] = copy.deepcopy(sub["default"])
            _walk(x[key], sub, path + (key,), pruned)
