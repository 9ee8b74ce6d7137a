"""The validator's words: each schema failure as the API server writes it, at its field path.

A 422 from kube-apiserver names each cause as ``<field>: <message>``; the validator's Problem
carries the same two parts. Expected strings are written out, from:

- [tx NN]   the recorded kube-apiserver v1.36.2 exchange in fixtures/apiserver-transcripts/NN-*.json;
- [vtest]   apiextensions-apiserver pkg/apiserver/validation/validation_test.go (expected errors of
            kubeOpenAPIResultToFieldErrors, the function that turns kube-openapi's failures into
            field errors);
- [field]   apimachinery pkg/util/validation/field/errors.go (Required, Invalid, NotSupported,
            TooLong, TooMany);
- [typemeta] apiextensions-apiserver pkg/registry/customresource/validator.go ValidateTypeMeta.

Where the server names no field (``<nil>``: anyOf, oneOf, not, a format's bounds), the message is
the server's and the Problem keeps the field's path, so that a finding still has a line.
Every check runs on both engines: jsonschema-rs, and the reference ``jsonschema``.
"""

from __future__ import annotations

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas import Validator
from memcached_gitops.schemas.crd import parse_crd
from memcached_gitops.schemas.to_jsonschema import to_json_schema
from memcached_gitops.schemas.validator import ENGINES as ENGINE_CLASSES
from memcached_gitops.schemas.validator import Problem, describe, format_path, identity_problems

from tests.conftest import crd_named
from tests.validator_cases import cr

ENGINES = ["jsonschema-rs", "jsonschema"]

#: Keywords the case table's CRDs do not use, and a second served version (listed first, not the
#: storage version) with its own limit on size.
KEYWORDS_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: memcacheds.cache.example.com}
spec:
  group: cache.example.com
  names: {kind: Memcached, plural: memcacheds, singular: memcached, shortNames: [mc]}
  scope: Namespaced
  versions:
    - name: v1beta1
      served: true
      storage: false
      schema:
        openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer, maximum: 9}}}}}
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, maximum: 3}
                choice:
                  anyOf: [{type: integer}, {type: string, maxLength: 3}]
                one:
                  oneOf: [{type: integer, minimum: 0}, {type: integer, maximum: 10}]
                never: {type: string, not: {enum: [forbidden]}}
                unique: {type: array, uniqueItems: true, items: {type: string}}
                map:
                  type: object
                  minProperties: 1
                  maxProperties: 2
                  additionalProperties: {type: string}
                single: {type: array, maxItems: 1, items: {type: string}}
                short: {type: string, maxLength: 1}
                code: {type: integer, enum: [1, 2]}
                nums: {type: array, items: {type: integer}}
"""


def keywords_crd():
    return parse_crd(KEYWORDS_CRD, "keywords-crd.yaml")


def errors_of(text: str, crd="all", engine: str = "jsonschema-rs", strict: bool = True) -> list[tuple[str, str]]:
    """(field, message) of each error, in the validator's order."""
    validator = Validator(crd_named(crd) if isinstance(crd, str) else crd, strict=strict, engine=engine)
    return [(p.field, p.message) for p in validator.validate(next(iter_documents(text)).value).errors]


def spec_errors(spec: str, crd="all", engine: str = "jsonschema-rs") -> list[tuple[str, str]]:
    """The schema's errors on a CR with this spec; the note that CEL rules were not checked after a
    blocking error (the "all" CRD has rules) is left out here and checked by the CEL tests below."""
    return [e for e in errors_of(cr(spec), crd, engine) if e[0] != "<root>"]


# --- bounds, lengths, patterns: Invalid value: <the value>: <path> in body <kube-openapi's detail>

BOUNDS = [
    # [tx 12] exchange 7 and 8
    ("size: 4", "builtin", [("spec.size", "Invalid value: 4: spec.size in body should be less than or equal to 3")]),
    ("size: 0", "builtin", [("spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1")]),
    # exclusiveMinimum / exclusiveMaximum: kube-openapi minExcFail / maxExcFail
    ("ratio: 0", "all", [("spec.ratio", "Invalid value: 0: spec.ratio in body should be greater than 0")]),
    ("ratio: 1", "all", [("spec.ratio", "Invalid value: 1: spec.ratio in body should be less than 1")]),
    ("ratio: 1.5", "all", [("spec.ratio", "Invalid value: 1.5: spec.ratio in body should be less than 1")]),
    ("multiple: 7", "all", [("spec.multiple", "Invalid value: 7: spec.multiple in body should be a multiple of 5")]),
    ("tag: Abc", "all", [("spec.tag", "Invalid value: \"Abc\": spec.tag in body should match '^[a-z]+$'")]),
    ("tag: a", "all", [("spec.tag", 'Invalid value: "a": spec.tag in body should be at least 2 chars long')]),
    # [vtest] maxLength: "fieldX: Too long: may not be more than 2 bytes" (field.TooLong: no value)
    ("tag: abcdefghi", "all", [("spec.tag", "Too long: may not be more than 8 bytes")]),
    # [field] TooLong says "byte" for a limit of 1
    ("short: ab", keywords_crd, [("spec.short", "Too long: may not be more than 1 byte")]),
    # kube-openapi TooFewItems / TooFewProperties carry the size as the value
    ("hosts: []", "all", [("spec.hosts", "Invalid value: 0: spec.hosts in body should have at least 1 items")]),
    ("map: {}", keywords_crd, [("spec.map", "Invalid value: 0: spec.map in body should have at least 1 properties")]),
    # [vtest] maxItems and maxProperties: "fieldX: Too many: 3: must have at most 2 items"
    ("hosts: [a, b, c]", "all", [("spec.hosts", "Too many: 3: must have at most 2 items")]),
    ("map: {a: p, b: q, c: r}", keywords_crd, [("spec.map", "Too many: 3: must have at most 2 items")]),
    ("single: [a, b]", keywords_crd, [("spec.single", "Too many: 2: must have at most 1 item")]),
    # [tx 12] a missing required field: "Required value" at the field's own path
    ("tuning: {}", "all", [("spec.tuning.threads", "Required value")]),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("spec", "crd", "expected"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_bounds_lengths_and_counts_in_the_api_servers_words(spec: str, crd, expected, engine: str) -> None:
    assert spec_errors(spec, crd if isinstance(crd, str) else crd(), engine) == expected


# --- types: the value's JSON type, never the value ([tx 12] exchange 8, [vtest])

TYPES = [
    ('containerPort: "11211"', "builtin", "spec.containerPort", "string", "integer"),  # [tx 12] exchange 8
    ("size: yes", "builtin", "spec.size", "boolean", "integer"),
    ("size: [1]", "builtin", "spec.size", "array", "integer"),
    ("size: {}", "builtin", "spec.size", "object", "integer"),
    ("tag: 5", "all", "spec.tag", "integer", "string"),
    ("tag: 1.5", "all", "spec.tag", "number", "string"),  # no int format: the JSON type names
    ("hosts: [a, null]", "all", "spec.hosts[1]", "null", "string"),
    # a nullable field: null is allowed, and not named among the types wanted
    ("comment: 5", "all", "spec.comment", "integer", "string"),
    # [vtest] x-kubernetes-int-or-string: the types joined by ",": "must be of type integer,string"
    ("port: true", "all", "spec.port", "boolean", "integer,string"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("spec", "crd", "field", "got", "wanted"), TYPES, ids=[t[0] for t in TYPES])
def test_a_wrong_type_names_the_values_type(spec: str, crd: str, field: str, got: str, wanted: str, engine: str) -> None:
    assert spec_errors(spec, crd, engine) == [
        (field, f'Invalid value: "{got}": {field} in body must be of type {wanted}: "{got}"')
    ]


FORMAT_CHECK = 'Invalid value: "": Checked value must be of type integer with format int32 in spec.size'
FLOAT_TYPE = 'Invalid value: "float64": spec.size in body must be of type int32: "float64"'


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("spec", "causes"), [
    # [tx 38] a number that is no JSON integer under format int32: a type error in the format's
    # words and the format check, each its own cause
    ("size: 1.5", [FORMAT_CHECK, FLOAT_TYPE]),
    # [tx 38] past int64 the value is a float64 beyond 2**53: the same two, and the bound
    ("size: 9223372036854775808", [FORMAT_CHECK, FLOAT_TYPE,
                                   "Invalid value: 9.223372036854776e+18: spec.size in body should be less than or equal to 3"]),
    ("size: 4.5", [FORMAT_CHECK, FLOAT_TYPE, "Invalid value: 4.5: spec.size in body should be less than or equal to 3"]),
    # an integer past int32: the format check and the bound, never one for the other
    ("size: 4294967296", [FORMAT_CHECK, "Invalid value: 4294967296: spec.size in body should be less than or equal to 3"]),
])
def test_every_cause_the_server_lists_for_one_number(spec: str, causes: list[str], engine: str) -> None:
    assert spec_errors(spec, "builtin", engine) == [("spec.size", c) for c in causes]


# --- enum: field.NotSupported

@pytest.mark.parametrize("engine", ENGINES)
def test_a_value_outside_an_enum_lists_the_supported_values_each_quoted(engine: str) -> None:
    assert spec_errors("mode: fifo", "all", engine) == [("spec.mode", 'Unsupported value: "fifo": supported values: "lru", "lfu"')]
    # [vtest] 'field.nestedint: Unsupported value: "x": supported values: "1", "2"': values that are
    # not strings are written as JSON, then quoted; the value given is written as JSON
    assert spec_errors("code: 3", keywords_crd(), engine) == [("spec.code", 'Unsupported value: 3: supported values: "1", "2"')]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_value_of_the_wrong_type_outside_an_enum_is_reported_twice(engine: str) -> None:
    # [vtest] 'field.nestedstring: Invalid value: "boolean": ... must be of type string: "boolean"' and
    # 'field.nestedstring: Unsupported value: true: supported values: "a", "b"'
    assert spec_errors("mode: true", "all", engine) == [
        ("spec.mode", 'Invalid value: "boolean": spec.mode in body must be of type string: "boolean"'),
        ("spec.mode", 'Unsupported value: true: supported values: "lru", "lfu"'),
    ]
    assert spec_errors("mode: [1, a]", "all", engine)[1] == ("spec.mode", 'Unsupported value: [1,"a"]: supported values: "lru", "lfu"')


# --- the composite keywords and a format's bounds: no value, the path inside the message

@pytest.mark.parametrize("engine", ENGINES)
def test_anyof_oneof_and_not_quote_the_path_as_kube_openapi_does(engine: str) -> None:
    # [vtest] '<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)'
    assert spec_errors("choice: abcd", keywords_crd(), engine) == [
        ("spec.choice", 'Invalid value: "": "spec.choice" must validate at least one schema (anyOf)')
    ]
    # kube-openapi schema_props.go: the detail counts the alternatives that matched
    assert spec_errors("one: 5", keywords_crd(), engine) == [
        ("spec.one", 'Invalid value: "": "spec.one" must validate one and only one schema (oneOf). Found 2 valid alternatives')
    ]
    assert [m for _, m in spec_errors("one: x", keywords_crd(), engine) if "oneOf" in m] == [
        'Invalid value: "": "spec.one" must validate one and only one schema (oneOf). Found none valid'
    ]
    assert spec_errors("never: forbidden", keywords_crd(), engine) == [
        ("spec.never", 'Invalid value: "": "spec.never" must not validate the schema (not)')
    ]
    # kube-openapi DuplicateItems carries no value: field.Invalid writes ""
    assert spec_errors("unique: [a, a]", keywords_crd(), engine) == [
        ("spec.unique", "Invalid value: \"\": spec.unique in body shouldn't contain duplicates")
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("port", ["2147483648", "-2147483649"])
def test_an_integer_beyond_its_format_is_reported_as_the_format_check(port: str, engine: str) -> None:
    # [vtest] '<nil>: Invalid value: "": Checked value must be of type integer with format int32 in intThirtyTwo'
    # (kubernetes/kubernetes#136582, v1.36); the tutorial CRD of [tx 00] has no bounds of its own
    assert spec_errors(f"size: 1\ncontainerPort: {port}", "tutorial", engine) == [
        ("spec.containerPort", 'Invalid value: "": Checked value must be of type integer with format int32 in spec.containerPort')
    ]


def test_a_keyword_without_words_of_its_own_is_named_with_its_limit() -> None:
    assert describe("const", 5, 4, "spec.x", {}, is_valid=lambda s, i: True) == "Invalid value: 4: spec.x in body fails const 5"


# --- several errors: one per field and keyword, items in index order

@pytest.mark.parametrize("engine", ENGINES)
def test_errors_come_in_field_order_and_items_in_index_order(engine: str) -> None:
    # [tx 12] exchange 8: "[spec.containerPort: ..., spec.size: ...]"
    assert spec_errors('size: 0\ncontainerPort: "11211"', "builtin", engine) == [
        ("spec.containerPort", 'Invalid value: "string": spec.containerPort in body must be of type integer: "string"'),
        ("spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1"),
    ]
    nums = "nums: [1, 1, a, 1, 1, 1, 1, 1, 1, 1, b]"
    assert [f for f, _ in spec_errors(nums, keywords_crd(), engine)] == ["spec.nums[2]", "spec.nums[10]"]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_missing_required_field_is_one_error(engine: str) -> None:
    crd = crd_named("all")
    schema = crd.versions["v1alpha1"].schema
    tuning = schema["properties"]["spec"]["properties"]["tuning"]
    both = {**tuning, "required": ["threads", "mode"], "properties": {**tuning["properties"], "mode": {"type": "string"}}}
    spec = {**schema["properties"]["spec"], "properties": {**schema["properties"]["spec"]["properties"], "tuning": both}}
    version = crd.versions["v1alpha1"]._replace(schema={**schema, "properties": {**schema["properties"], "spec": spec}})
    team = crd._replace(versions={"v1alpha1": version})
    assert spec_errors("tuning: {threads: 1}", team, engine) == [("spec.tuning.mode", "Required value")]
    assert spec_errors("tuning: {}", team, engine) == [("spec.tuning.mode", "Required value"), ("spec.tuning.threads", "Required value")]
    # and the errors beside them are all reported
    assert spec_errors("tuning: {}\nmode: fifo\ntag: A\nsize: 9", team, engine) == [
        ("spec.mode", 'Unsupported value: "fifo": supported values: "lru", "lfu"'),
        ("spec.size", "Invalid value: 9: spec.size in body should be less than or equal to 5"),
        ("spec.tag", 'Invalid value: "A": spec.tag in body should be at least 2 chars long'),
        ("spec.tag", "Invalid value: \"A\": spec.tag in body should match '^[a-z]+$'"),
        ("spec.tuning.mode", "Required value"),
        ("spec.tuning.threads", "Required value"),
    ]


# --- what comes before the schema: kind and version, unknown fields, status, metadata

def test_an_unserved_version_or_unknown_kind_is_kubectls_no_matches() -> None:
    served = "(the CRD serves cache.example.com/v1beta1, cache.example.com/v1alpha1)"
    assert errors_of(cr(api="cache.example.com/v2"), keywords_crd()) == [
        ("apiVersion", f'no matches for kind "Memcached" in version "cache.example.com/v2" {served}')
    ]
    assert errors_of(cr(kind="Widget"), keywords_crd()) == [
        ("apiVersion", f'no matches for kind "Widget" in version "cache.example.com/v1alpha1" {served}')
    ]
    # a kind that is not a string is no spelling of ours
    assert errors_of("apiVersion: cache.example.com/v1alpha1\nkind: 5\nmetadata: {name: m}\n", "builtin") == [
        ("apiVersion", 'no matches for kind 5 in version "cache.example.com/v1alpha1" (the CRD serves cache.example.com/v1alpha1)')
    ]
    assert errors_of("kind: Memcached\nmetadata: {name: m}\n", "builtin") == [
        ("apiVersion", 'no matches for kind "Memcached" in version null (the CRD serves cache.example.com/v1alpha1)')
    ]


def test_each_served_version_is_validated_against_its_own_schema() -> None:
    assert errors_of(cr("size: 5", api="cache.example.com/v1beta1"), keywords_crd()) == []
    assert errors_of(cr("size: 10", api="cache.example.com/v1beta1"), keywords_crd()) == [
        ("spec.size", "Invalid value: 10: spec.size in body should be less than or equal to 9")
    ]


def test_one_validator_judges_each_version_by_its_own_schema_whichever_comes_first() -> None:
    """A run meets CRs of every served version (a repository half-way through a migration) with one
    validator: each CR is judged by the schema of the version it names, whatever version came before."""
    def errors(validator: Validator, text: str) -> list[tuple[str, str]]:
        return [(p.field, p.message) for p in validator.validate(next(iter_documents(text)).value).errors]

    beta_too_big = ("spec.size", "Invalid value: 10: spec.size in body should be less than or equal to 9")
    alpha_too_big = ("spec.size", "Invalid value: 5: spec.size in body should be less than or equal to 3")
    validator = Validator(keywords_crd())
    assert errors(validator, cr("size: 2")) == []
    assert errors(validator, cr("size: 5", api="cache.example.com/v1beta1")) == []
    assert errors(validator, cr("size: 10", api="cache.example.com/v1beta1")) == [beta_too_big]
    assert errors(validator, cr("size: 5")) == [alpha_too_big]
    validator = Validator(keywords_crd())
    assert errors(validator, cr("size: 5", api="cache.example.com/v1beta1")) == []
    assert errors(validator, cr("size: 5")) == [alpha_too_big]


def test_our_kind_in_another_spelling_is_the_servers_kind_check() -> None:
    # [typemeta] field.Invalid(field.NewPath("kind"), kind, "must be Memcached")
    for kind in ("memcached", "memcacheds", "mc", "MEMCACHED"):
        assert errors_of(cr(kind=kind), keywords_crd()) == [("kind", f'Invalid value: "{kind}": must be Memcached')]


def test_another_spelling_of_our_kind_is_decoded_with_objectmetas_rules_only() -> None:
    # [tx 38]: for a kind it does not know the server decodes ObjectMeta alone; strict decoding then
    # names metadata's unknown fields (a 400) and nothing else, not the kind, spec or name
    text = cr("size: 7\nx: 1", name="A", meta="labelz: 1", kind="memcached")
    assert errors_of(text, "builtin") == [("metadata.labelz", 'unknown field "metadata.labelz"')]
    # without strict decoding (kubectl --validate=false) the unknown field is dropped: the kind check is left
    assert errors_of(text, "builtin", strict=False) == [("kind", 'Invalid value: "memcached": must be Memcached')]


def test_a_generate_name_without_a_name_is_valid_with_a_warning_that_apply_refuses_it() -> None:
    # the server creates it (kubectl create --dry-run=server accepts it); kubectl apply refuses it on
    # the client: "from web-: cannot use generate name with apply" (kubectl pkg/cmd/apply/apply.go)
    text = cr(name="", meta="generateName: web-")
    outcome = Validator(crd_named("builtin")).validate(next(iter_documents(text)).value)
    assert outcome.ok and [(w.field, w.message) for w in outcome.warnings] == [(
        "metadata.generateName",
        "cannot use generate name with apply: kubectl apply, server-side apply and Argo CD sync need "
        "metadata.name; only kubectl create can make this object",
    )]
    with_a_name = cr(meta="generateName: web-")
    assert Validator(crd_named("builtin")).validate(next(iter_documents(with_a_name)).value).warnings == []


def test_metadata_that_does_not_decode_is_refused_before_any_schema_check() -> None:
    # [tx 38] 400 "json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64",
    # word for word at the field's path; the bad size is not reached (kubectl never sends it)
    assert errors_of(cr("size: 100", meta="generation: '1'"), "builtin") == [
        ("metadata.generation", "json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64")
    ]


def test_unknown_fields_are_errors_when_strict_and_warnings_otherwise() -> None:
    text = cr("size: 2\nreplicas: 2\nimage: memcached:latest")
    # [tx 23] exchange 7: 'strict decoding error: unknown field "spec.image", unknown field "spec.replicas"'
    assert errors_of(text, "builtin") == [("spec.replicas", 'unknown field "spec.replicas"'), ("spec.image", 'unknown field "spec.image"')]
    # strict is the default, as for kubectl apply (--validate=strict)
    assert Validator(crd_named("builtin")).validate(next(iter_documents(text)).value).errors == [
        Problem(("spec", "replicas"), 'unknown field "spec.replicas"'), Problem(("spec", "image"), 'unknown field "spec.image"')
    ]
    # [tx 23] exchange 6: Warning: 299 - "unknown field \"spec.image\"", the field pruned
    outcome = Validator(crd_named("builtin"), strict=False).validate(next(iter_documents(text)).value)
    assert outcome.ok and outcome.obj["spec"] == {"size": 2, "containerPort": 11211}
    assert [(w.field, w.message) for w in outcome.warnings] == [
        ("spec.replicas", 'unknown field "spec.replicas"'), ("spec.image", 'unknown field "spec.image"')
    ]


def test_status_sent_with_a_create_is_a_warning_and_its_bad_values_too() -> None:
    # [tx 09]: a status stanza sent to the main resource is dropped
    outcome = Validator(crd_named("all")).validate(next(iter_documents(cr(top="status:\n  nodes: [1]\n"))).value)
    assert outcome.ok and "status" not in outcome.obj
    assert [(w.field, w.message) for w in outcome.warnings] == [
        ("status", "ignored: the API server drops status on create and apply (status subresource)"),
        ("status.nodes[0]", 'Invalid value: "integer": status.nodes[0] in body must be of type string: "integer"'),
    ]


def test_metadata_errors_are_in_the_servers_words() -> None:
    # [tx 12] exchange 9
    assert errors_of(cr(name="Bad_Name"), "tutorial") == [(
        "metadata.name",
        "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    )]


# --- CEL rules run on an object the schema accepts

def test_cel_rules_report_their_message_at_their_field() -> None:
    assert errors_of(cr("size: 5\ncontainerPort: 80"), "all") == [
        ("spec", 'Invalid value: sizes above 4 need the default port')
    ]


NOT_CHECKED = ("<root>", "Invalid value: null: some validation rules were not checked because the object was invalid; "
               "correct the existing errors to complete validation")


@pytest.mark.parametrize(("spec", "first"), [
    ("mode: fifo", ("spec.mode", 'Unsupported value: "fifo": supported values: "lru", "lfu"')),
    ("tag: 5", ("spec.tag", 'Invalid value: "integer": spec.tag in body must be of type string: "integer"')),
    ("tuning: {}", ("spec.tuning.threads", "Required value")),
    ("tag: abcdefghi", ("spec.tag", "Too long: may not be more than 8 bytes")),
    ("hosts: [a, b, c]", ("spec.hosts", "Too many: 3: must have at most 2 items")),
])
def test_cel_rules_are_not_evaluated_after_a_blocking_error(spec: str, first: tuple[str, str]) -> None:
    # customresource/strategy.go hasBlockingErr: NotSupported, TypeInvalid, Required, TooLong, TooMany
    assert errors_of(cr(f"size: 5\ncontainerPort: 80\n{spec}"), "all") == [first, NOT_CHECKED]
    assert errors_of(cr(f"size: 1\n{spec}"), "all") == [first, NOT_CHECKED]


def test_objectmeta_is_judged_first_and_blocks_the_rules_as_a_schema_error_does() -> None:
    """The API server validates a custom resource's ObjectMeta before its schema and its rules
    (customresource/strategy.go Validate), and hasBlockingErr reads all the errors so far: a missing name
    (Required) leaves the rules unchecked, and an ObjectMeta error that does not block comes before the
    rule's own failure, in the server's order."""
    assert errors_of(cr("size: 5\ncontainerPort: 80", name=""), "all") == [
        ("metadata.name", "Required value: name or generateName is required"), NOT_CHECKED]
    [first, second] = errors_of(cr("size: 5\ncontainerPort: 80", name="Bad_Name"), "all")
    assert first[0] == "metadata.name" and first[1].startswith('Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    assert second == ("spec", "Invalid value: sizes above 4 need the default port")


def test_cel_rules_are_evaluated_beside_other_schema_errors() -> None:
    # an Invalid value (a bound, a pattern) does not block: the rule's own failure is reported too
    assert errors_of(cr("size: 6\ncontainerPort: 80"), "all") == [
        ("spec.size", "Invalid value: 6: spec.size in body should be less than or equal to 5"),
        ("spec", 'Invalid value: sizes above 4 need the default port'),
    ]
    assert errors_of(cr("size: 1\ntag: Abc"), "all") == [("spec.tag", "Invalid value: \"Abc\": spec.tag in body should match '^[a-z]+$'")]


def test_a_crd_without_rules_adds_nothing_after_a_blocking_error() -> None:
    assert errors_of(cr("size: yes"), "tutorial") == [
        ("spec.size", 'Invalid value: "boolean": spec.size in body must be of type integer: "boolean"')
    ]


def test_the_shipped_crd_has_rules_so_a_blocking_error_says_they_were_not_checked() -> None:
    """Recorded on kube-apiserver v1.36.2 with the shipped CRD (its rules on spec.resources): the note
    comes on any type error, wherever the rules are."""
    assert errors_of(cr("size: yes"), "builtin")[-1] == (
        "<root>", "Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation")


# --- identity: what kubectl says before it looks for a resource

def test_a_document_without_apiversion_or_kind_is_kubectls_not_set() -> None:
    # kubectl: "error validating data: [apiVersion not set, kind not set]"
    assert identity_problems({}) == [Problem(("apiVersion",), "apiVersion not set"), Problem(("kind",), "kind not set")]
    assert identity_problems({"apiVersion": "", "kind": ""}) == [
        Problem(("apiVersion",), "apiVersion not set"), Problem(("kind",), "kind not set")
    ]
    assert identity_problems({"apiVersion": "v1", "kind": None}) == [Problem(("kind",), "kind not set")]
    assert identity_problems({"apiVersion": "v1", "kind": "ConfigMap"}) == []


def test_an_apiversion_or_kind_that_is_not_a_string_is_invalid() -> None:
    assert identity_problems({"apiVersion": 1, "kind": ["Memcached"]}) == [
        Problem(("apiVersion",), "Invalid value: 1: apiVersion must be a string"),
        Problem(("kind",), 'Invalid value: ["Memcached"]: kind must be a string'),
    ]
    assert identity_problems({"apiVersion": "v1", "kind": False}) == [Problem(("kind",), "Invalid value: false: kind must be a string")]


# --- which documents are judged as ours

@pytest.mark.parametrize(("doc", "ours"), [
    ({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached"}, True),
    # our group, any kind: a kind we do not serve is an error, not passed over
    ({"apiVersion": "cache.example.com/v1alpha1", "kind": "Widget"}, True),
    ({"apiVersion": "cache.example.com/v9"}, True),
    # a malformed apiVersion of our group is still ours (kubectl refuses it)
    ({"apiVersion": "cache.example.com/v1/extra", "kind": "Widget"}, True),
    # our kind in any spelling, under any group: a typo must not pass silently
    ({"apiVersion": "apps/v1", "kind": "memcached"}, True),
    ({"apiVersion": "apps/v1", "kind": "Memcacheds"}, True),
    ({"apiVersion": "example.org/v1", "kind": "MC"}, True),
    ({"kind": "Memcached"}, True),
    # not ours
    ({"apiVersion": "v1", "kind": "ConfigMap"}, False),
    ({"apiVersion": "cache.example.com", "kind": "ConfigMap"}, False),  # no "/": the core group's version
    ({"apiVersion": "other.example.com/v1", "kind": "Memcache"}, False),
    ({"apiVersion": 5, "kind": "ConfigMap"}, False),
    ({"apiVersion": "apps/v1", "kind": ["Memcached"]}, False),
    ({}, False),
    (["apiVersion", "cache.example.com/v1alpha1"], False),
    ("kind: Memcached", False),
    (None, False),
])
def test_claims_a_document_of_our_group_or_of_our_kind_in_any_spelling(doc, ours: bool) -> None:
    assert Validator(keywords_crd()).claims(doc) is ours


# --- the JSON Schema for editors

def test_the_json_schema_is_the_storage_versions_unless_a_version_is_named() -> None:
    validator = Validator(keywords_crd())
    default = validator.json_schema()
    assert default["title"] == "Memcached (cache.example.com/v1alpha1)"
    int64 = [{"$comment": "json integer integer", "minimum": -(2**63), "maximum": 2**63 - 1}]
    assert default["properties"]["spec"]["properties"]["size"] == {"type": "integer", "maximum": 3, "allOf": int64}
    named = validator.json_schema("v1beta1")
    assert named["title"] == "Memcached (cache.example.com/v1beta1)"
    assert named["properties"]["spec"]["properties"]["size"] == {"type": "integer", "maximum": 9, "allOf": int64}


def test_without_a_served_storage_version_the_json_schema_is_the_first_served() -> None:
    crd = keywords_crd()
    validator = Validator(crd._replace(storage_version=""))
    assert validator.json_schema()["title"] == "Memcached (cache.example.com/v1beta1)"
    assert validator.json_schema("v7")["title"] == "Memcached (cache.example.com/v1beta1)"


# --- field paths

def test_field_paths_are_written_as_the_api_server_writes_them() -> None:
    assert format_path(("spec", "hosts", 1)) == "spec.hosts[1]"
    assert format_path(("metadata", "labels", "app.kubernetes.io/name")) == "metadata.labels.app.kubernetes.io/name"
    assert format_path(()) == "<root>"
    assert Problem(("spec", "size"), "Required value").field == "spec.size"


def test_a_long_key_in_a_field_path_is_cut() -> None:
    key = "k" * 70
    assert format_path((key, "x")) == "k" * 64 + "…" + ".x"
    assert format_path(("spec", key)) == "spec." + "k" * 64 + "…"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_field_the_schema_does_not_declare_is_named_as_an_unknown_field(engine: str) -> None:
    # Validator.validate prunes such fields first; the JSON Schema (memcached-gitops schema) says
    # additionalProperties: false, and a failure of it is worded as the strict decoding error [tx 23]
    schema = to_json_schema({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}})
    instance = {"spec": {"a": "x", "c": 1, "b": 2}, "z": 0}
    assert Validator._schema_problems(ENGINE_CLASSES[engine](schema), instance) == [
        Problem(("spec", "b"), 'unknown field "spec.b"'),
        Problem(("spec", "c"), 'unknown field "spec.c"'),
        Problem(("z",), 'unknown field "z"'),
    ]
    assert Validator._schema_problems(ENGINE_CLASSES[engine](schema), {"spec": {"a": 1, "b": 2}}) == [
        Problem(("spec", "a"), 'Invalid value: "integer": spec.a in body must be of type string: "integer"'),
        Problem(("spec", "b"), 'unknown field "spec.b"'),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_schema_is_checked_whatever_the_roots_type(engine: str) -> None:
    # a root schema without "type" admits any document, a valid one included: problems are still found
    schema = to_json_schema({"properties": {"size": {"type": "integer", "maximum": 3}}})
    assert Validator._schema_problems(ENGINE_CLASSES[engine](schema), {"size": 4}) == [
        Problem(("size",), "Invalid value: 4: size in body should be less than or equal to 3")
    ]
    assert Validator._schema_problems(ENGINE_CLASSES[engine](schema), {"size": 3}) == []
