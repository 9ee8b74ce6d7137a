"""Structural pruning, null pruning and defaulting: what the API server does before validating.

The apiextensions-apiserver works on a CR in this order (Kubernetes docs, "Extend the Kubernetes
API with CustomResourceDefinitions", sections "Field pruning" and "Defaulting"; source:
apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go and
schema/defaulting/algorithm.go):

1. fields not declared in the structural schema are pruned (with ``fieldValidation=Strict``, as
   ``kubectl apply --validate=strict`` sends, each one is an error instead: ``unknown field``);
   ``x-kubernetes-preserve-unknown-fields`` and ``additionalProperties`` keep them (``true``
   keeps the key but prunes the fields of an object under it, as a value with no schema); the root's
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
    """A float with no fraction where an integer is declared is that integer, as the server stores
    it: Go's encoding/json writes such a float64 without a fraction (below 1e21) and
    sigs.k8s.io/json convertNumber reads the digits back as an int64 when ParseInt accepts them,
    so the int64 range [-2**63, 2**63) decides. Elsewhere the float stays: kube-openapi's type
    check names it "number" in a string field."""
    if isinstance(value, float) and value.is_integer() and s.get("type") == "integer" and -(2**63) <= value < 2**63:
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
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(x):
        sub = props.get(key)
        if sub is None and isinstance(additional, dict):
            sub = additional
        if sub is None:
            if preserve or (resource and key in _ROOT_FIELDS):
                continue
            if additional is True:  # kept, and pruned as a value with no schema
                _prune_schemaless(x[key], path + (key,), pruned)
            else:
                del x[key]
                pruned.append(path + (key,))
            continue
        if x[key] is None and not sub.get("nullable"):
            del x[key]  # defaulting/algorithm.go isNonNullableNull: the loop below puts a default back
            continue
        if resource and key == "metadata":
            continue  # ObjectMeta: validated by objectmeta.py, never pruned by the CRD schema
        x[key] = _as_integer(x[key], sub)
        _walk(x[key], sub, path + (key,), pruned)
    for key, sub in props.items():
        if key not in x and "default" in sub:
            x[key] = copy.deepcopy(sub["default"])
            # the server prunes a CRD's defaults when it serves the CRD (customresource_handler.go
            # PruneDefaults): a field a default has beyond the schema is dropped, never reported
            _walk(x[key], sub, path + (key,), [])


def _prune_schemaless(x: Any, path: Path, pruned: list[Path]) -> None:
    """pruning/algorithm.go ``prune(x, nil)``, what ``additionalProperties: true`` gives a value:
    a scalar stays, every field of an object (also inside a list) is unknown and pruned."""
    if isinstance(x, dict):
        for key in list(x):
            del x[key]
            pruned.append(path + (key,))
    elif isinstance(x, list):
        for i, item in enumerate(x):
            _prune_schemaless(item, path + (i,), pruned)
