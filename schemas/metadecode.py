"""ObjectMeta as kubectl and the API server decode it: Go types, and JSON nulls as zero values.

Before anything is validated, kubectl decodes each object's ``metadata`` into ``metav1.ObjectMeta``
(k8s.io/apimachinery/pkg/apis/meta/v1/types.go) with Go's encoding/json, and so does the server
(apiextensions-apiserver schema/objectmeta/coerce.go, sigs.k8s.io/json). Seen on kube-apiserver
v1.36.2 with kubectl v1.37 (transcript 38, and ``kubectl create --dry-run=server``):

- a value of the wrong JSON type is an error before the server sees the object, in encoding/json's
  words (``json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64``),
  also for a number with a fraction where an int64 is declared (``number 1.5``);
- a null is the Go zero value: a null name, namespace or labels map is absent, a null label or
  annotation value is ``""``, a null finalizer is ``""``, a null ownerReference is one whose fields
  are all empty (then refused for them), a null field of an ownerReference is empty;
- ``creationTimestamp``, ``deletionTimestamp`` and ``managedFields[].time`` must parse with Go's
  ``time.Parse(time.RFC3339, …)`` (``parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot
  parse "x" as "2006"``), or be null.

The server then ignores or resets the fields it owns (uid, resourceVersion, generation,
creationTimestamp...), so their values only matter through their types.
"""

from __future__ import annotations

import decimal
from typing import Any

from memcached_gitops.foundation.excerpt import ELLIPSIS, EXCERPT_LIMIT

Problem = tuple[tuple[str | int, ...], str]

#: Fields whose Go type has its own decoder: metav1.Time (time.go UnmarshalJSON) and FieldsV1 (any JSON).
_TIME, _ANY = "metav1.Time", "FieldsV1"
_STRING_KINDS = frozenset({"string", "types.UID", "v1.ManagedFieldsOperationType"})
_STRING_MAP, _STRING_LIST = "map[string]string", "[]string"
#: Go struct fields by JSON name -> their Go type as reflect names it in an UnmarshalTypeError
#: (a pointer's element type: ``*bool`` is ``bool``); a list of structs is (struct type, its fields).
OWNER_REFERENCE = {"apiVersion": "string", "kind": "string", "name": "string", "uid": "types.UID",
                   "controller": "bool", "blockOwnerDeletion": "bool"}
MANAGED_FIELDS_ENTRY = {"manager": "string", "operation": "v1.ManagedFieldsOperationType", "apiVersion": "string",
                        "time": _TIME, "fieldsType": "string", "fieldsV1": _ANY, "subresource": "string"}
OBJECT_META: dict[str, Any] = {
    "name": "string", "generateName": "string", "namespace": "string", "selfLink": "string", "uid": "types.UID",
    "resourceVersion": "string", "generation": "int64", "creationTimestamp": _TIME, "deletionTimestamp": _TIME,
    "deletionGracePeriodSeconds": "int64", "labels": _STRING_MAP, "annotations": _STRING_MAP,
    "ownerReferences": ("v1.OwnerReference", OWNER_REFERENCE), "finalizers": _STRING_LIST,
    "managedFields": ("v1.ManagedFieldsEntry", MANAGED_FIELDS_ENTRY),
}
_STRUCT_NAMES = {id(OBJECT_META): "ObjectMeta", id(OWNER_REFERENCE): "OwnerReference", id(MANAGED_FIELDS_ENTRY): "ManagedFieldsEntry"}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: Where a value sits for encoding/json's error context: the innermost struct and the JSON field
#: names from the top (no list indices, no map keys).
Context = tuple[str, tuple[str, ...]]


def _json_number(value: int | float) -> str:
    """The number as kubectl's JSON carries it (encoding/json floatEncoder: shortest digits,
    ``f`` notation between 1e-6 and 1e21, else ``e`` with ``e-07`` written ``e-7``)."""
    if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
        return str(value)
    value = float(value)  # the server reads a number beyond int64 as a float64 (util/json)
    if value == 0 or 1e-6 <= abs(value) < 1e21:
        return format(decimal.Decimal(repr(value)).normalize(), "f")
    text = repr(value)
    return text[:-2] + text[-1] if text[-4:-1] == "e-0" else text


def _json_value(value: Any, go_type: str) -> str:
    """The JSON value as an UnmarshalTypeError names it (decode.go literalStore: a number is
    ``number`` but ``number 1.5`` where an integer is declared)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return f"number {_json_number(value)}" if go_type == "int64" else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _refuse(problems: list[Problem], path: tuple[str | int, ...], where: Context, value: Any, go_type: str) -> None:
    """Record encoding/json's UnmarshalTypeError; the field decodes to nothing."""
    struct, fields = where
    problems.append((path, f"json: cannot unmarshal {_json_value(value, go_type)} into Go struct field "
                           f"{struct}.{'.'.join(fields)} of type {go_type}"))


def _go_quote(text: str) -> str:
    """time.ParseError's quote (time/format.go): ``"`` and ``\\`` escaped, bytes outside printable
    ASCII as ``\\xNN``; cut to the excerpt limit like every value this tool shows."""
    out = []
    for char in text[:EXCERPT_LIMIT]:
        if " " <= char < "\x80":
            out.append("\\" + char if char in '"\\' else char)
        else:  # Go's JSON decoder reads a lone surrogate as U+FFFD
            go_char = "\ufffd" if "\ud800" <= char <= "\udfff" else char
            out.append("".join(f"\\x{b:02x}" for b in go_char.encode()))
    return '"' + "".join(out) + (ELLIPSIS if len(text) > EXCERPT_LIMIT else "") + '"'


_DIGITS = "0123456789"
_RFC3339 = "2006-01-02T15:04:05Z07:00"
#: time.RFC3339 as time.Parse cuts it (nextStdChunk): (literal prefix, layout element).
#: The ranges time/format.go ``parse`` checks as it goes (the day is checked at the end).
_RANGES = {"01": (1, 12, "month"), "15": (0, 23, "hour"), "04": (0, 59, "minute"), "05": (0, 59, "second")}
_CHUNKS = (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"), ("", "Z07:00"))


def _digit(text: str, i: int) -> bool:
    """time/format.go isDigit: ``text[i]`` exists and is an ASCII digit."""
    return i < len(text) and text[i] in _DIGITS


def _getnum(text: str, fixed: bool) -> tuple[int, str] | None:
    """time/format.go getnum: one or two ASCII digits (two if ``fixed``)."""
    if not _digit(text, 0):
        return None
    if not _digit(text, 1):
        return None if fixed else (int(text[0]), text[1:])
    return int(text[:2]), text[2:]


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _parse_element(element: str, value: str, date: dict[str, int]) -> tuple[str, str | None]:
    """One layout element of time/format.go ``parse``: (the rest, None when parsed, ``""`` when
    it cannot be parsed, or what is out of range)."""
    if element == "2006":
        if len(value) < 4 or not all(c in _DIGITS for c in value[:4]):
            return value, ""
        date[element] = int(value[:4])
        return value[4:], None
    if element == "Z07:00":
        if value[:1] == "Z":
            return value[1:], None
        if len(value) < 6 or value[3] != ":":
            return value, ""
        hour, minute = _getnum(value[1:], True), _getnum(value[4:], True)
        # ranges before the sign; "> rather than >=, as some people do write offsets of 24 hours or 60 minutes";
        # the minutes are read only after the hours
        if hour and minute and minute[0] > 60:
            return value, "time zone offset minute"
        if hour and hour[0] > 24:
            return value, "time zone offset hour"
        return value[6:], None if hour and minute and value[0] in "+-" else ""
    number = _getnum(value, fixed=element != "15")
    if number is None:
        return value, ""
    n, rest = number
    date[element] = n
    if element in _RANGES and not _RANGES[element][0] <= n <= _RANGES[element][1]:
        return rest, _RANGES[element][2]
    if element == "05" and len(rest) >= 2 and rest[0] in ".," and rest[1] in _DIGITS:
        end = 2
        while _digit(rest, end):
            end += 1
        rest = rest[end:]  # fractional seconds, any number of digits
    return rest, None


def time_parse_error(text: str) -> str | None:
    """Go's ``time.Parse(time.RFC3339, text)`` error, in its words, or None when it parses.

    The fast path (format_rfc3339.go parseRFC3339) accepts a subset of what the general parser
    accepts, and an error always comes from the general parser (format.go ``parse``), so this
    follows the latter: the hour may have one digit, the fraction may follow a comma, the offset
    may be +24:00 or +00:60, and only ASCII digits are digits.
    """
    whole, value = _go_quote(text), text
    date: dict[str, int] = {}
    for prefix, element in _CHUNKS:
        if prefix and value[:1] != prefix:
            return f"parsing time {whole} as \"{_RFC3339}\": cannot parse {_go_quote(value)} as \"{prefix}\""
        value = value[len(prefix):]
        rest, error = _parse_element(element, value, date)
        if error == "":
            return f"parsing time {whole} as \"{_RFC3339}\": cannot parse {_go_quote(value)} as \"{element}\""
        if error:
            return f"parsing time {whole}: {error} out of range"
        value = rest
    if value:
        return f"parsing time {whole}: extra text: {_go_quote(value)}"
    if not 1 <= date["02"] <= _days_in(date["01"], date["2006"]):
        return f"parsing time {whole}: day out of range"
    return None


def _decode(value: Any, go_type: Any, path: tuple[str | int, ...], where: Context, problems: list[Problem]) -> Any:
    """``value`` as encoding/json leaves it in a field of ``go_type`` (None: the zero value)."""
    if value is None or go_type == _ANY:
        return value
    if isinstance(go_type, tuple):
        return _decode_structs(value, go_type, path, where, problems)
    if go_type in _STRING_KINDS:
        return value if isinstance(value, str) else _refuse(problems, path, where, value, go_type)
    if go_type == "bool":
        return value if isinstance(value, bool) else _refuse(problems, path, where, value, go_type)
    if go_type == "int64":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _refuse(problems, path, where, value, go_type)
        # literalStore: strconv.ParseInt of the number's JSON text (so 5.0, written "5", is 5)
        try:
            number = int(_json_number(value))
        except ValueError:  # a fraction or an exponent
            return _refuse(problems, path, where, value, go_type)
        return number if _INT64_MIN <= number <= _INT64_MAX else _refuse(problems, path, where, value, go_type)
    if go_type == _TIME:
        # time.go UnmarshalJSON: json.Unmarshal into a string, then time.Parse
        if not isinstance(value, str):
            return _refuse(problems, path, where, value, "string")
        error = time_parse_error(value)
        if error:
            problems.append((path, error))
        return value
    if go_type == _STRING_MAP:
        if not isinstance(value, dict):
            return _refuse(problems, path, where, value, go_type)
        return {k: "" if v is None else _decode(v, "string", path + (k,), where, problems) for k, v in value.items()}
    if not isinstance(value, list):  # []string, the last Go type
        return _refuse(problems, path, where, value, go_type)
    return ["" if v is None else _decode(v, "string", path + (i,), where, problems) for i, v in enumerate(value)]


def _decode_structs(value: Any, go_type: tuple[str, dict[str, Any]], path: tuple[str | int, ...], where: Context,
                    problems: list[Problem]) -> Any:
    """A list of structs: a null item is the zero struct (every field empty)."""
    struct, fields = go_type
    if not isinstance(value, list):
        return _refuse(problems, path, where, value, "[]" + struct)
    out: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        if item is None:
            out.append({})
        elif not isinstance(item, dict):
            _refuse(problems, path + (i,), where, item, struct)
        else:
            out.append(_decode_struct(item, fields, path + (i,), where[1], problems))
    return out


def _decode_struct(obj: dict[str, Any], fields: dict[str, Any], path: tuple[str | int, ...], stack: tuple[str, ...],
                   problems: list[Problem]) -> dict[str, Any]:
    """Known fields decoded, nulls (zero values) dropped; unknown fields kept for pruning to report."""
    struct = _STRUCT_NAMES[id(fields)]
    out = {}
    for key, value in obj.items():
        decoded = _decode(value, fields[key], path + (key,), (struct, stack + (key,)), problems) if key in fields else value
        if decoded is not None:
            out[key] = decoded
    return out


def decode_object_meta(obj: dict[str, Any]) -> list[Problem]:
    """Replace ``obj["metadata"]`` by what ObjectMeta decoding leaves; return the decoding errors in
    the server's words (kubectl refuses the object on the first, before any validation; the server
    answers 400 with the first)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    problems: list[Problem] = []
    obj["metadata"] = _decode_struct(meta, OBJECT_META, ("metadata",), (), problems)
    return problems
