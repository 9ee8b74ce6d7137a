"""Derive a JSON Schema (draft 2020-12) from a CRD version's openAPIV3Schema.

The CRD dialect is OpenAPI v3.0 plus Kubernetes extensions; JSON Schema differs in a few places
that decide verdicts, each translated here the way the API server reads the CRD:

- ``nullable: true`` -> the type also admits ``null`` (OpenAPI 3.0 ``nullable``);
- ``exclusiveMinimum: true`` + ``minimum: m`` -> ``exclusiveMinimum: m`` (3.0 booleans vs numbers);
- ``x-kubernetes-int-or-string`` -> ``anyOf: [integer, string]``;
- an integer without an integer format -> an ``allOf`` member with int64's bounds, which only the
  numbers beyond int64 fail: the server reads them as float64 and its type check names them
  "number" (JSON_INTEGER_COMMENT);
- ``format: int32``/``int64`` -> an ``allOf`` member with the type's bounds: kube-apiserver v1.36
  enforces them (kubernetes/kubernetes#136091, fixed by #136582: "Checked value must be of type
  integer with format int32");
- objects without ``x-kubernetes-preserve-unknown-fields`` or ``additionalProperties`` get
  ``additionalProperties: false`` (structural pruning removes unknown fields before validation,
  so this only matters to editors and other consumers of ``memcached-gitops schema``);
- the root always admits ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta is validated by
  objectmeta.py; the CRD may only constrain ``metadata.name`` and ``metadata.generateName``);
- ``pattern`` is RE2 (Go's regexp, as the API server compiles it); patterns.py writes it in the
  dialect of the engine that runs the schema (``ecma``: jsonschema-rs and editors; ``python``: the
  ``jsonschema`` package). Where that changes its text, the CRD's own pattern is kept after
  PATTERN_COMMENT for the messages, which quote it as the server does. A pattern the server would
  refuse (or that cannot be written for the engine) raises PatternError naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from .patterns import PatternError, translate

DIALECT = "https://json-schema.org/draft/2020-12/schema"
INT_FORMATS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
FORMAT_COMMENT = "format "  # marks the allOf member that carries a format's bounds
#: marks the allOf member that keeps numbers beyond int64 out of an integer without a format: the
#: reader gives them as floats (the server's decoder, apimachinery util/json, reads them as float64),
#: and kube-openapi's type check takes a float64 for an integer only within +-2**53
#: (swag.IsFloat64AJSONInteger), so to the server they are "number", not "integer". Its text after
#: the marker is the types the message names ("integer", "integer,string").
JSON_INTEGER_COMMENT = "json integer "
#: marks the CRD's own pattern, where the one written for the engine differs
PATTERN_COMMENT = "RE2 pattern "
ROOT_PATH = "openAPIV3Schema"

_COPIED = (
    "description", "title", "default", "enum", "pattern", "minLength", "maxLength", "minItems",
    "maxItems", "minProperties", "maxProperties", "multipleOf", "uniqueItems", "required",
)


def to_json_schema(schema: dict[str, Any], title: str | None = None, regex: str = "ecma",
                   where: str = ROOT_PATH) -> dict[str, Any]:
    """The JSON Schema for a whole resource of this CRD version, its patterns in the ``regex``
    dialect (patterns.DIALECTS); ``where`` is the schema's field path in PatternError messages."""
    out = {"$schema": DIALECT, **({"title": title} if title else {}), **_convert(schema, regex, where, root=True)}
    return out


def _pattern(pattern: Any, regex: str, where: str) -> dict[str, Any]:
    if not isinstance(pattern, str):
        return {"pattern": pattern}
    try:
        written = translate(pattern, regex)
    except PatternError as exc:
        if str(exc).startswith("error parsing regexp"):  # the API server refuses the CRD (apiextensions validation.go)
            raise PatternError(f"{where}.pattern: Invalid value: {json.dumps(pattern)}: must be a valid regular "
                               f"expression, but isn't: {exc}") from None
        raise PatternError(f"{where}.pattern: Unsupported value: {json.dumps(pattern)}: a valid RE2 pattern that "
                           f"cannot be checked here: {exc}") from None
    return {"pattern": written} if written == pattern else {"pattern": written, "$comment": PATTERN_COMMENT + pattern}


def _convert(s: dict[str, Any], regex: str, where: str, root: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {k: s[k] for k in _COPIED if k in s}
    if "pattern" in s:
        out.update(_pattern(s["pattern"], regex, where))  # in its place among the copied keywords
    nullable = bool(s.get("nullable"))
    types: list[str] = ["integer", "string"] if s.get("x-kubernetes-int-or-string") else (
        [s["type"]] if "type" in s else []
    )
    if types:
        types += ["null"] if nullable else []
        out["type"] = types[0] if len(types) == 1 else types
        if nullable and "enum" in out:
            out["enum"] = [*out["enum"], None]
    for bound in ("minimum", "maximum"):
        if bound in s:
            exclusive = "exclusive" + bound[0].upper() + bound[1:]
            out[exclusive if s.get(exclusive) is True else bound] = s[bound]
    all_of = [_convert(x, regex, f"{where}.allOf[{i}]") for i, x in enumerate(s.get("allOf", []))]
    fmt = s.get("format")
    if fmt:
        out["format"] = fmt
        if s.get("type") == "integer" and fmt in INT_FORMATS:
            low, high = INT_FORMATS[fmt]
            all_of.append({"$comment": FORMAT_COMMENT + fmt, "minimum": low, "maximum": high})
    if "integer" in types and fmt not in INT_FORMATS:
        low, high = INT_FORMATS["int64"]
        wanted = ",".join(t for t in types if t != "null")
        all_of.append({"$comment": JSON_INTEGER_COMMENT + wanted, "minimum": low, "maximum": high})
    if all_of:
        out["allOf"] = all_of
    for key in ("anyOf", "oneOf"):
        if key in s:
            out[key] = [_convert(x, regex, f"{where}.{key}[{i}]") for i, x in enumerate(s[key])]
    if "not" in s:
        out["not"] = _convert(s["not"], regex, f"{where}.not")
    if "items" in s:
        out["items"] = _convert(s["items"], regex, f"{where}.items")
    props = {k: _convert(v, regex, f"{where}.properties[{k}]") for k, v in (s.get("properties") or {}).items()}
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if root or embedded:
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        meta = props.setdefault("metadata", {"type": "object"})
        meta.pop("additionalProperties", None)  # ObjectMeta's other fields are checked elsewhere
    if props:
        out["properties"] = props
    additional = s.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = _convert(additional, regex, f"{where}.additionalProperties")
    elif s.get("type") == "object" and not s.get("x-kubernetes-preserve-unknown-fields") and additional is not True:
        if props or additional is False:
            out["additionalProperties"] = False
    return out
