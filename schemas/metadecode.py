"""ObjectMeta as kubectl and the API server decode it: Go types, and JSON nulls as zero values.

Before anything is validated, kubectl decodes each object's ``metadata`` into ``metav1.ObjectMeta``
(k8s.io/apimachinery/pkg/apis/meta/v1/types.go) with Go's encoding/json, and so does the server
(apiextensions-apiserver schema/objectmeta). Seen on kube-apiserver v1.36.2 with kubectl v1.37
(transcript 38, and ``kubectl create --dry-run=server``):

- a value of the wrong JSON type is an error before the server sees the object (kubectl:
  ``json: cannot unmarshal string into Go struct field ObjectMeta.metadata.generation of type int64``),
  also for a number with a fraction where an int64 is declared;
- a null is the Go zero value: a null name, namespace or labels map is absent, a null label or
  annotation value is ``""``, a null finalizer is ``""``, a null ownerReference is one whose fields
  are all empty (then refused for them), a null field of an ownerReference is empty;
- ``creationTimestamp``, ``deletionTimestamp`` and ``managedFields[].time`` must parse as
  ``time.RFC3339`` (``parsing time "x" as "2006-01-02T15:04:05Z07:00"``), or be null.

The server then ignores or resets the fields it owns (uid, resourceVersion, generation,
creationTimestamp...), so their values only matter through their types.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from .excerpt import quote_value

Problem = tuple[tuple[str | int, ...], str]

_STRING, _INT64, _BOOL, _TIME, _ANY = "string", "int64", "bool", "time", "any"
_STRING_MAP, _STRING_LIST = "map[string]string", "[]string"
OWNER_REFERENCE = {"apiVersion": _STRING, "kind": _STRING, "name": _STRING, "uid": _STRING,
                   "controller": _BOOL, "blockOwnerDeletion": _BOOL}
MANAGED_FIELDS_ENTRY = {"manager": _STRING, "operation": _STRING, "apiVersion": _STRING, "time": _TIME,
                        "fieldsType": _STRING, "fieldsV1": _ANY, "subresource": _STRING}
#: metav1.ObjectMeta's JSON fields and their Go types; a list of structs is (list, struct fields).
OBJECT_META: dict[str, Any] = {
    "name": _STRING, "generateName": _STRING, "namespace": _STRING, "selfLink": _STRING, "uid": _STRING,
    "resourceVersion": _STRING, "generation": _INT64, "creationTimestamp": _TIME, "deletionTimestamp": _TIME,
    "deletionGracePeriodSeconds": _INT64, "labels": _STRING_MAP, "annotations": _STRING_MAP,
    "ownerReferences": (list, OWNER_REFERENCE), "finalizers": _STRING_LIST, "managedFields": (list, MANAGED_FIELDS_ENTRY),
}
#: Go's time.RFC3339 as time.Parse reads it: fractional seconds are allowed, ``T`` and ``Z`` are upper case.
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))\Z")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _json_type(value: Any) -> str:
    """The JSON type as encoding/json names it in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number" if isinstance(value, int) else f"number {value!r}"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _refuse(problems: list[Problem], path: tuple[str | int, ...], value: Any, go_type: str) -> None:
    """Record a type error; the field decodes to nothing."""
    shown = _json_type(value) if isinstance(value, (dict, list)) else quote_value(value)
    problems.append((path, f"Invalid value: {shown}: cannot unmarshal {_json_type(value)} into a field of type {go_type}"))


def _time_ok(text: str) -> bool:
    match = _RFC3339.match(text)
    if not match:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    offset_h, offset_m = match.group(9), match.group(10)
    if offset_h is not None and (int(offset_h) > 23 or int(offset_m) > 59):
        return False
    try:
        datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def _decode(value: Any, go_type: Any, path: tuple[str | int, ...], problems: list[Problem]) -> Any:
    """``value`` as encoding/json leaves it in a field of ``go_type`` (None: the zero value)."""
    if value is None or go_type == _ANY:
        return value
    if go_type == _STRING:
        return value if isinstance(value, str) else _refuse(problems, path, value, "string")
    if go_type == _BOOL:
        return value if isinstance(value, bool) else _refuse(problems, path, value, "bool")
    if go_type == _INT64:
        ok = isinstance(value, int) and not isinstance(value, bool) and _INT64_MIN <= value <= _INT64_MAX
        return value if ok else _refuse(problems, path, value, "int64")
    if go_type == _TIME:
        if not isinstance(value, str):
            return _refuse(problems, path, value, "metav1.Time")
        if not _time_ok(value):
            problems.append((path, f'Invalid value: {quote_value(value)}: parsing time as "2006-01-02T15:04:05Z07:00" (RFC 3339)'))
        return value
    if go_type == _STRING_MAP:
        if not isinstance(value, dict):
            return _refuse(problems, path, value, go_type)
        return {k: "" if v is None else _decode(v, _STRING, path + (k,), problems) for k, v in value.items()}
    if go_type == _STRING_LIST:
        if not isinstance(value, list):
            return _refuse(problems, path, value, go_type)
        return ["" if v is None else _decode(v, _STRING, path + (i,), problems) for i, v in enumerate(value)]
    _, fields = go_type  # a list of structs
    if not isinstance(value, list):
        return _refuse(problems, path, value, "[]struct")
    out = []
    for i, item in enumerate(value):
        if item is None:
            out.append({})
        elif not isinstance(item, dict):
            _refuse(problems, path + (i,), item, "struct")
        else:
            out.append(_decode_struct(item, fields, path + (i,), problems))
    return out


def _decode_struct(obj: dict[str, Any], fields: dict[str, Any], path: tuple[str | int, ...], problems: list[Problem]) -> dict[str, Any]:
    """Known fields decoded, nulls (zero values) dropped; unknown fields kept for pruning to report."""
    out = {}
    for key, value in obj.items():
        decoded = _decode(value, fields[key], path + (key,), problems) if key in fields else value
        if decoded is not None:
            out[key] = decoded
    return out


def decode_object_meta(obj: dict[str, Any]) -> list[Problem]:
    """Replace ``obj["metadata"]`` by what ObjectMeta decoding leaves; return the type errors
    (kubectl refuses the object on the first, before any validation)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    problems: list[Problem] = []
    obj["metadata"] = _decode_struct(meta, OBJECT_META, ("metadata",), problems)
    return problems
