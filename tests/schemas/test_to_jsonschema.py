"""The JSON Schema derived from a CRD version: each translation rule, as exact output.

`memcached-gitops schema` hands this to editors and other tools, and both validation engines run
it, so every keyword it writes is part of a contract; each test states one rule of the module
docstring of schemas/to_jsonschema.py on the smallest schema that shows it.
"""

from __future__ import annotations

import jsonschema
import pytest
from memcached_gitops.schemas import load_crd
from memcached_gitops.schemas.to_jsonschema import to_json_schema

ROOT_FIELDS = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def field(schema: dict) -> dict:
    """The translation of ``schema`` as the property ``f`` of a resource."""
    return to_json_schema({"type": "object", "properties": {"f": schema}})["properties"]["f"]


def test_the_root_has_the_dialect_an_optional_title_and_the_resource_fields() -> None:
    assert to_json_schema({"type": "object"}) == {
        "$schema": DIALECT, "type": "object", "properties": ROOT_FIELDS, "additionalProperties": False}
    titled = to_json_schema({"type": "object"}, title="Memcached (cache.example.com/v1alpha1)")
    assert list(titled)[:2] == ["$schema", "title"] and titled["title"] == "Memcached (cache.example.com/v1alpha1)"
    assert "title" not in to_json_schema({"type": "object"}, title="")


def test_the_crd_may_constrain_metadata_but_its_other_fields_stay_open() -> None:
    out = to_json_schema({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}}})
    assert out["properties"]["metadata"] == {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}
    assert out["properties"]["kind"] == {"type": "string"}


def test_keywords_that_mean_the_same_are_copied() -> None:
    keywords = {"description": "d", "title": "t", "default": 1, "enum": [1, 2], "pattern": "^a", "minLength": 1,
                "maxLength": 2, "minItems": 1, "maxItems": 2, "minProperties": 1, "maxProperties": 2,
                "multipleOf": 2, "uniqueItems": True, "required": ["a"]}
    assert field(keywords) == keywords


def test_nullable_adds_null_to_the_type_and_to_an_enum() -> None:
    assert field({"type": "string", "nullable": True}) == {"type": ["string", "null"]}
    assert field({"type": "string", "nullable": True, "enum": ["a"]}) == {"type": ["string", "null"], "enum": ["a", None]}
    assert field({"type": "string", "enum": ["a"]}) == {"type": "string", "enum": ["a"]}
    assert field({"type": "string", "nullable": False}) == {"type": "string"}
    assert field({"nullable": True}) == {}  # no type to widen


def _int64(types: str) -> dict:
    return {"$comment": f"json integer {types}", "minimum": -(2**63), "maximum": 2**63 - 1}


def test_int_or_string_is_a_type_list() -> None:
    assert field({"x-kubernetes-int-or-string": True}) == {"type": ["integer", "string"], "allOf": [_int64("integer,string")]}
    assert field({"x-kubernetes-int-or-string": True, "nullable": True}) == {
        "type": ["integer", "string", "null"], "allOf": [_int64("integer,string")]}


def test_an_integer_without_a_format_keeps_numbers_beyond_int64_out_as_the_server_does() -> None:
    """Beyond int64 the server's decoder gives a float64, which its type check calls "number"
    (transcript-less; seen on kube-apiserver v1.36.2: 9223372036854775808 under int-or-string)."""
    assert field({"type": "integer"}) == {"type": "integer", "allOf": [_int64("integer")]}
    assert field({"type": "integer", "format": "date"})["allOf"] == [_int64("integer")]


def test_openapi_3_0_exclusive_bounds_become_numbers() -> None:
    assert field({"type": "number", "minimum": 1, "exclusiveMinimum": True, "maximum": 3, "exclusiveMaximum": True}) == {
        "type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 3}
    assert field({"type": "number", "minimum": 1, "exclusiveMinimum": False, "maximum": 3}) == {
        "type": "number", "minimum": 1, "maximum": 3}


def test_integer_formats_carry_their_bounds_in_an_all_of_member() -> None:
    assert field({"type": "integer", "format": "int32"}) == {
        "type": "integer", "format": "int32",
        "allOf": [{"$comment": "format int32", "minimum": -(2**31), "maximum": 2**31 - 1}]}
    assert field({"type": "integer", "format": "int64"})["allOf"] == [
        {"$comment": "format int64", "minimum": -(2**63), "maximum": 2**63 - 1}]
    assert field({"type": "string", "format": "int32"}) == {"type": "string", "format": "int32"}


def test_composition_keywords_are_translated_inside() -> None:
    nullable = {"type": "string", "nullable": True}
    widened = {"type": ["string", "null"]}
    assert field({"allOf": [nullable], "anyOf": [nullable], "oneOf": [nullable], "not": nullable, "items": nullable}) == {
        "allOf": [widened], "anyOf": [widened], "oneOf": [widened], "not": widened, "items": widened}
    assert field({"type": "integer", "format": "int32", "allOf": [nullable]})["allOf"][0] == widened


def test_objects_are_closed_unless_they_keep_unknown_fields() -> None:
    props = {"a": {"type": "string"}}
    assert field({"type": "object", "properties": props}) == {
        "type": "object", "properties": props, "additionalProperties": False}
    assert field({"type": "object", "properties": props, "x-kubernetes-preserve-unknown-fields": True}) == {
        "type": "object", "properties": props}
    assert field({"type": "object", "properties": props, "additionalProperties": True}) == {
        "type": "object", "properties": props}
    assert field({"type": "object", "additionalProperties": False}) == {"type": "object", "additionalProperties": False}
    assert field({"type": "object"}) == {"type": "object"}  # no properties listed: a free-form map
    assert field({"type": "object", "additionalProperties": {"type": "string", "nullable": True}}) == {
        "type": "object", "additionalProperties": {"type": ["string", "null"]}}
    assert field({"properties": props}) == {"properties": props}  # closing needs type: object


def test_an_embedded_resource_gets_the_resource_fields() -> None:
    assert field({"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}) == {
        "type": "object", "properties": ROOT_FIELDS}
    assert "properties" not in field({"type": "object", "x-kubernetes-embedded-resource": False})


@pytest.mark.parametrize(("spec", "valid"), [
    ({"size": 2}, True),
    ({"size": 0}, False),
    ({"size": 2**31}, False),
    ({"size": 2, "surprise": 1}, False),
    ({"size": 2, "containerPort": 70000}, False),
])
def test_the_shipped_crd_schema_judges_specs_in_the_reference_engine(spec: dict, valid: bool) -> None:
    crd = load_crd()
    schema = to_json_schema(crd.versions[crd.storage_version].schema, regex="python")
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": spec}
    assert jsonschema.Draft202012Validator(schema).is_valid(cr) is valid


def test_a_pattern_is_written_for_the_engine_and_the_crds_own_is_kept_for_the_messages() -> None:
    """RE2's ``\\d`` is ASCII and its ``$`` the end of the text: the ``jsonschema`` package (Python's
    re) reads neither so, and takes ``\\Z`` for the end; schemas/patterns.py writes each engine's."""
    assert field({"type": "string", "pattern": r"^\d+$"}) == {
        "type": "string", "pattern": "^[0-9]+$", "$comment": r"RE2 pattern ^\d+$"}
    python = to_json_schema({"type": "object", "properties": {"f": {"pattern": r"^\d+$"}}}, regex="python")
    assert python["properties"]["f"] == {"pattern": r"^[0-9]+\Z", "$comment": r"RE2 pattern ^\d+$"}
