"""Structural pruning, null pruning and defaulting, as the API server does them before validating.

Sources (kube-apiserver v1.36.2, staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/):
schema/pruning/algorithm.go (``PruneWithOptions``, ``prune``, ``skipPrune``),
schema/defaulting/algorithm.go (``Default``, ``isNonNullableNull``), customresource_handler.go
(``PruneDefaults`` when a CRD is served), sigs.k8s.io/json ``convertNumber`` (int64 or float64).
Expected values are written out from those rules, never computed by the code under test.
"""

from __future__ import annotations

import copy

from memcached_gitops.schemas.structural import prune_and_default

from tests.conftest import validate_text
from tests.validator_cases import cr

INT = {"type": "integer"}
STRING = {"type": "string"}


def root(**properties: dict) -> dict:
    """A CR's root schema with the given properties (apiVersion, kind, metadata not declared)."""
    return {"type": "object", "properties": properties}


def obj(**properties: dict) -> dict:
    return {"type": "object", "properties": properties}


# --- pruning at the root and below it


def test_an_unknown_field_at_the_root_is_pruned_and_reported() -> None:
    cr_ = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"},
           "spec": {"size": 1}, "replicas": 3}
    pruned = prune_and_default(cr_, root(spec=obj(size=INT)))
    assert pruned == [("replicas",)]
    assert cr_ == {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"},
                   "spec": {"size": 1}}


def test_apiversion_kind_and_metadata_are_kept_at_the_root_though_the_schema_omits_them() -> None:
    # PruneWithOptions(isResourceRoot=true) treats the root as an embedded resource: metaFields are skipped
    cr_ = {"apiVersion": "v1", "kind": "K", "metadata": {"name": "m"}}
    assert prune_and_default(cr_, root()) == []
    assert cr_ == {"apiVersion": "v1", "kind": "K", "metadata": {"name": "m"}}


def test_fields_named_apiversion_kind_metadata_below_the_root_are_ordinary_unknown_fields() -> None:
    cr_ = {"spec": {"apiVersion": "v1", "kind": "K", "metadata": {}, "size": 2}}
    pruned = prune_and_default(cr_, root(spec=obj(size=INT)))
    assert sorted(pruned) == [("spec", "apiVersion"), ("spec", "kind"), ("spec", "metadata")]
    assert cr_ == {"spec": {"size": 2}}


def test_an_embedded_resource_keeps_its_apiversion_kind_and_metadata_and_prunes_the_rest() -> None:
    template = {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": obj(size=INT)}}
    cr_ = {"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"size": 1, "junk": 1}, "extra": True}}}
    pruned = prune_and_default(cr_, root(spec=obj(template=template)))
    assert sorted(pruned) == [("spec", "template", "extra"), ("spec", "template", "spec", "junk")]
    assert cr_ == {"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                         "spec": {"size": 1}}}}


def test_objects_in_a_list_are_pruned_at_their_index() -> None:
    hosts = {"type": "array", "items": obj(name=STRING)}
    cr_ = {"spec": {"hosts": [{"name": "a"}, {"name": "b", "port": 1}]}}
    pruned = prune_and_default(cr_, root(spec=obj(hosts=hosts)))
    assert pruned == [("spec", "hosts", 1, "port")]
    assert cr_ == {"spec": {"hosts": [{"name": "a"}, {"name": "b"}]}}


def test_defaults_apply_inside_objects_in_a_list() -> None:
    hosts = {"type": "array", "items": obj(name=STRING, weight={"type": "integer", "default": 1})}
    cr_ = {"spec": {"hosts": [{"name": "a"}, {"name": "b", "weight": 5}]}}
    assert prune_and_default(cr_, root(spec=obj(hosts=hosts))) == []
    assert cr_ == {"spec": {"hosts": [{"name": "a", "weight": 1}, {"name": "b", "weight": 5}]}}


def test_a_list_without_an_items_schema_is_left_alone() -> None:
    cr_ = {"spec": {"anything": [{"a": 1}, 2.0]}}
    assert prune_and_default(cr_, root(spec=obj(anything={"type": "array"}))) == []
    assert cr_ == {"spec": {"anything": [{"a": 1}, 2.0]}}


def test_preserve_unknown_fields_keeps_unknown_keys_whole_but_prunes_declared_ones() -> None:
    # skipPrune: unknown keys are kept as they are; declared properties are still pruned inside
    extra = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"known": obj(a=INT)}}
    cr_ = {"spec": {"extra": {"free": {"deep": [1, {"x": 1}]}, "known": {"a": 1, "b": 2}}}}
    pruned = prune_and_default(cr_, root(spec=obj(extra=extra)))
    assert pruned == [("spec", "extra", "known", "b")]
    assert cr_ == {"spec": {"extra": {"free": {"deep": [1, {"x": 1}]}, "known": {"a": 1}}}}


def test_additional_properties_schema_applies_to_every_undeclared_key() -> None:
    options = {"type": "object", "additionalProperties": obj(v=INT)}
    cr_ = {"spec": {"options": {"a": {"v": 1, "w": 2}, "b": {"v": 3.0}}}}
    pruned = prune_and_default(cr_, root(spec=obj(options=options)))
    assert pruned == [("spec", "options", "a", "w")]
    assert cr_ == {"spec": {"options": {"a": {"v": 1}, "b": {"v": 3}}}}
    assert type(cr_["spec"]["options"]["b"]["v"]) is int


def test_additional_properties_true_keeps_the_key_and_prunes_an_object_under_it() -> None:
    # convert.go: additionalProperties: true is StructuralOrBool{Bool: true} with no schema, so
    # pruning/algorithm.go calls prune(v, nil): a scalar stays, every field of an object is unknown
    loose = {"type": "object", "properties": {"known": INT}, "additionalProperties": True}
    cr_ = {"spec": {"loose": {"known": 1, "flag": "on", "nested": {"a": 1}, "rows": [{"b": 2}, 3]}}}
    pruned = prune_and_default(cr_, root(spec=obj(loose=loose)))
    assert sorted(pruned, key=str) == [("spec", "loose", "nested", "a"), ("spec", "loose", "rows", 0, "b")]
    assert cr_ == {"spec": {"loose": {"known": 1, "flag": "on", "nested": {}, "rows": [{}, 3]}}}


# --- nulls and defaults


def test_a_null_without_a_default_is_dropped_and_the_later_fields_are_still_pruned() -> None:
    cr_ = {"spec": {"tag": None, "junk": 1, "size": 2}}
    pruned = prune_and_default(cr_, root(spec=obj(tag=STRING, size=INT)))
    assert pruned == [("spec", "junk")]
    assert cr_ == {"spec": {"size": 2}}


def test_a_null_with_a_default_gets_the_default_and_a_nullable_null_stays() -> None:
    schema = root(spec=obj(size={"type": "integer", "default": 1},
                           comment={"type": "string", "nullable": True, "default": "x"}))
    cr_ = {"spec": {"size": None, "comment": None}}
    assert prune_and_default(cr_, schema) == []
    assert cr_ == {"spec": {"size": 1, "comment": None}}


def test_an_absent_object_with_a_default_gets_the_defaults_of_its_fields() -> None:
    schema = root(spec={"type": "object", "default": {},
                        "properties": {"size": {"type": "integer", "default": 1},
                                       "tuning": {"type": "object", "default": {},
                                                  "properties": {"threads": {"type": "integer", "default": 4}}}}})
    cr_ = {"metadata": {"name": "m"}}
    assert prune_and_default(cr_, schema) == []
    assert cr_ == {"metadata": {"name": "m"}, "spec": {"size": 1, "tuning": {"threads": 4}}}


def test_applying_a_default_never_changes_the_crds_default() -> None:
    inner = {"type": "object", "properties": {"threads": {"type": "integer", "default": 4}}}
    null_default = {"type": "object", "default": {"tuning": {}}, "properties": {"tuning": inner}}
    absent_default = copy.deepcopy(null_default)
    schema = root(spec=obj(a=null_default, b=absent_default))
    first = {"spec": {"a": None}}
    prune_and_default(first, schema)
    assert first == {"spec": {"a": {"tuning": {"threads": 4}}, "b": {"tuning": {"threads": 4}}}}
    assert null_default["default"] == {"tuning": {}}
    assert absent_default["default"] == {"tuning": {}}
    first["spec"]["b"]["tuning"]["threads"] = 9
    second: dict = {"spec": {}}
    prune_and_default(second, schema)
    assert second["spec"]["b"] == {"tuning": {"threads": 4}}


def test_a_field_a_default_has_beyond_the_schema_is_dropped_without_a_report() -> None:
    # customresource_handler.go prunes the CRD's defaults (PruneDefaults) when it serves the CRD:
    # the request never had that field, so fieldValidation=Strict has nothing to report
    schema = root(spec={"type": "object", "default": {"size": 1, "legacy": True}, "properties": {"size": INT}})
    cr_: dict = {}
    assert prune_and_default(cr_, schema) == []
    assert cr_ == {"spec": {"size": 1}}


def test_unknown_metadata_fields_are_pruned_and_reported() -> None:
    cr_ = {"metadata": {"name": "m", "labels": {"a": "b"}, "colour": "red"}}
    assert prune_and_default(cr_, root()) == [("metadata", "colour")]
    assert cr_ == {"metadata": {"name": "m", "labels": {"a": "b"}}}


# --- integral floats (the API server reads JSON numbers as int64 when they have no fraction)


def test_an_integral_float_in_an_integer_field_is_stored_as_an_integer() -> None:
    cr_ = {"spec": {"size": 2.0, "counts": [1.0, 2.5, -3.0]}}
    prune_and_default(cr_, root(spec=obj(size=INT, counts={"type": "array", "items": INT})))
    assert cr_ == {"spec": {"size": 2, "counts": [1, 2.5, -3]}}
    assert [type(v) for v in (cr_["spec"]["size"], *cr_["spec"]["counts"])] == [int, int, float, int]


def test_the_int64_range_decides_which_integral_floats_become_integers() -> None:
    # json.Marshal writes -2**63 as "-9223372036854775808" (ParseInt accepts it) and 2**63 as
    # "9223372036854775808" (ParseInt overflows: a float64)
    cr_ = {"spec": {"low": -9223372036854775808.0, "high": 9223372036854775808.0, "big": 2.0**62,
                    "below": -9223372036854777856.0}}  # the float64 just below -2**63
    prune_and_default(cr_, root(spec=obj(low=INT, high=INT, big=INT, below=INT)))
    assert cr_["spec"]["below"] == -9223372036854777856.0 and type(cr_["spec"]["below"]) is float
    assert cr_["spec"]["low"] == -9223372036854775808 and type(cr_["spec"]["low"]) is int
    assert cr_["spec"]["high"] == 9223372036854775808.0 and type(cr_["spec"]["high"]) is float
    assert cr_["spec"]["big"] == 4611686018427387904 and type(cr_["spec"]["big"]) is int


def test_an_integral_float_elsewhere_stays_a_float() -> None:
    # kube-openapi's type check sees a float64 there and names it "number"
    cr_ = {"spec": {"ratio": 1.0, "tag": 2.0, "free": 3.0}}
    prune_and_default(cr_, root(spec=obj(ratio={"type": "number"}, tag=STRING, free={})))
    assert [type(cr_["spec"][k]) for k in ("ratio", "tag", "free")] == [float, float, float]


def test_a_cr_without_spec_is_stored_with_the_crds_spec_defaults() -> None:
    outcome = validate_text(cr(spec=""), "all")
    assert outcome.ok, outcome.errors
    assert outcome.obj["spec"] == {"size": 1, "containerPort": 11211, "threads": 4}
