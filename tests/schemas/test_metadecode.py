"""ObjectMeta decoded as the API server decodes it (schemas/metadecode.py): Go types, nulls as
zero values, RFC 3339 timestamps as Go's time.Parse reads them, strict decoding inside
ownerReferences and managedFields.

Expected values are the real kube-apiserver's words: transcript 38
(tests/fixtures/apiserver-transcripts/38-validator-differential.json, kube-apiserver v1.36.2) where
it has the case, otherwise the server's decoding code run on the body (apiextensions-apiserver
schema/objectmeta GetObjectMetaWithOptions, k8s.io/apimachinery v1.36.2, Go 1.26.6: encoding/json's
``UnmarshalTypeError`` and time/format.go ``parse`` messages), written here literally.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from memcached_gitops.schemas import Validator
from memcached_gitops.schemas.crd import load_crd
from memcached_gitops.schemas.metadecode import decode_object_meta, time_parse_error

from tests.conftest import transcript

TX38 = transcript("38")
PREFIX = 'Memcached in version "v1alpha1" cannot be handled as a Memcached: '


def decoded(meta: dict[str, Any]) -> tuple[list, dict[str, Any]]:
    obj = {"metadata": meta}
    problems = decode_object_meta(obj)
    return problems, obj["metadata"]


def server_message(exchange: int) -> str:
    """The server's 400 message for a transcript 38 create, without the kind's prefix."""
    message = TX38["exchanges"][exchange]["response"]["body"]["message"]
    assert message.startswith(PREFIX)
    return message[len(PREFIX):]


# --- transcript 38: the server's 400 decoding errors, word for word -----------------------------

@pytest.mark.parametrize(("exchange", "field"), [
    (13, "metadata.creationTimestamp"),  # creationTimestamp: "x"
    (14, "metadata.generation"),  # generation: "1"
    (15, "metadata.labels.a"),  # labels: {a: 1}
    (16, "metadata.ownerReferences[0].controller"),  # controller: "true"
])
def test_a_value_of_the_wrong_go_type_is_the_servers_decoding_error(exchange: int, field: str) -> None:
    body = copy.deepcopy(TX38["exchanges"][exchange]["request"]["body"])
    assert TX38["exchanges"][exchange]["response"]["status"] == 400
    outcome = Validator(load_crd()).validate(body)
    assert [(p.field, p.message) for p in outcome.errors] == [(field, server_message(exchange))]


@pytest.mark.parametrize(("exchange", "field"), [
    (9, "metadata.ownerReferences[0].x"),
    (10, "metadata.managedFields[0].x"),
])
def test_an_unknown_key_inside_owner_references_and_managed_fields_is_a_strict_decoding_error(exchange: int, field: str) -> None:
    body = copy.deepcopy(TX38["exchanges"][exchange]["request"]["body"])
    problems, meta = decoded(copy.deepcopy(body["metadata"]))
    assert problems == []  # decoding keeps the unknown key; pruning names it
    assert meta["managedFields" if exchange == 10 else "ownerReferences"][0]["x"] == 1
    outcome = Validator(load_crd()).validate(body)
    assert server_message(exchange) == f'strict decoding error: unknown field "{field}"'
    assert [(p.field, p.message) for p in outcome.errors] == [(field, f'unknown field "{field}"')]


def test_the_type_error_stops_validation_as_the_server_does() -> None:
    # the server answers 400 on decoding, before the schema: the bad name is not reported (transcript 38, exchange 14)
    outcome = Validator(load_crd()).validate(
        {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "A", "generation": "1"},
         "spec": {"size": 99}})
    assert [(p.field, p.message) for p in outcome.errors] == [
        ("metadata.generation", "json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64")]


# --- nulls are Go zero values (transcript 38, exchanges 2-8) -------------------------------------

def test_null_fields_are_absent_and_null_values_are_empty_strings() -> None:
    problems, meta = decoded({
        "name": None, "generateName": "cache-", "namespace": None, "labels": {"a": None, "b": "x"},
        "annotations": {"n": None}, "finalizers": ["a", None], "ownerReferences": [None, {"name": "o", "uid": None}],
        "managedFields": [None, {"manager": "m", "time": None, "fieldsV1": None}],
        "creationTimestamp": None, "deletionTimestamp": None, "generation": None, "uid": None,
    })
    assert problems == []
    assert meta == {"generateName": "cache-", "labels": {"a": "", "b": "x"}, "annotations": {"n": ""},
                    "finalizers": ["a", ""], "ownerReferences": [{}, {"name": "o"}], "managedFields": [{}, {"manager": "m"}]}


@pytest.mark.parametrize("exchange", [6, 7, 8])
def test_a_null_finalizer_or_owner_reference_is_refused_for_its_empty_fields(exchange: int) -> None:
    """A null finalizer is "", a null ownerReference (or its uid) is empty: the server's 422 names them."""
    body = copy.deepcopy(TX38["exchanges"][exchange]["request"]["body"])
    response = TX38["exchanges"][exchange]["response"]
    assert response["status"] == 422
    outcome = Validator(load_crd()).validate(body)
    for problem in outcome.errors:
        assert f"{problem.field}: {problem.message}" in response["body"]["message"]
    assert {p.field for p in outcome.errors} == {c["field"] for c in response["body"]["details"]["causes"]}


def test_valid_metadata_decodes_to_itself() -> None:
    meta = {
        "name": "m", "generateName": "m-", "namespace": "ns", "selfLink": "/x", "uid": "u", "resourceVersion": "1",
        "generation": 5, "creationTimestamp": "2024-01-01T00:00:00.5+02:00", "deletionTimestamp": "2024-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 30, "labels": {"a": "b"}, "annotations": {"c": "d"}, "finalizers": ["f"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u", "controller": True,
                             "blockOwnerDeletion": False}],
        "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z",
                           "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}, "subresource": "status"}],
        "bogus": [1],  # unknown keys stay, for pruning to report
    }
    problems, out = decoded(copy.deepcopy(meta))
    assert problems == []
    assert out == meta


def test_metadata_that_is_not_an_object_is_left_to_the_schema() -> None:
    obj: dict[str, Any] = {"metadata": "x"}
    assert decode_object_meta(obj) == []
    assert obj == {"metadata": "x"}
    assert decode_object_meta({}) == []


# --- Go types: encoding/json's UnmarshalTypeError in the server's words ---------------------------

def _unmarshal(value: str, struct: str, type_: str) -> str:
    return f"json: cannot unmarshal {value} into Go struct field {struct} of type {type_}"


@pytest.mark.parametrize(("meta", "path", "message"), [
    # strings: every JSON type but a string; a number is just "number" where no integer is declared
    ({"name": 1}, ("name",), _unmarshal("number", "ObjectMeta.name", "string")),
    ({"name": 1.5}, ("name",), _unmarshal("number", "ObjectMeta.name", "string")),
    ({"name": True}, ("name",), _unmarshal("bool", "ObjectMeta.name", "string")),
    ({"name": []}, ("name",), _unmarshal("array", "ObjectMeta.name", "string")),
    ({"name": {}}, ("name",), _unmarshal("object", "ObjectMeta.name", "string")),
    ({"uid": 1}, ("uid",), _unmarshal("number", "ObjectMeta.uid", "types.UID")),
    # int64: the number's JSON text where it is no integer or beyond int64
    ({"generation": "1"}, ("generation",), _unmarshal("string", "ObjectMeta.generation", "int64")),
    ({"generation": 1.5}, ("generation",), _unmarshal("number 1.5", "ObjectMeta.generation", "int64")),
    ({"generation": 1e-7}, ("generation",), _unmarshal("number 1e-7", "ObjectMeta.generation", "int64")),
    ({"generation": 1e-6}, ("generation",), _unmarshal("number 0.000001", "ObjectMeta.generation", "int64")),
    ({"generation": -2.5e-5}, ("generation",), _unmarshal("number -0.000025", "ObjectMeta.generation", "int64")),
    ({"generation": 1e20}, ("generation",), _unmarshal("number 100000000000000000000", "ObjectMeta.generation", "int64")),
    ({"generation": 1.5e-300}, ("generation",), _unmarshal("number 1.5e-300", "ObjectMeta.generation", "int64")),
    ({"generation": 1e21}, ("generation",), _unmarshal("number 1e+21", "ObjectMeta.generation", "int64")),
    ({"generation": 2.0**63}, ("generation",), _unmarshal("number 9223372036854776000", "ObjectMeta.generation", "int64")),
    ({"generation": 2**63}, ("generation",), _unmarshal("number 9223372036854776000", "ObjectMeta.generation", "int64")),
    ({"generation": -(2**63) - 1}, ("generation",),
     _unmarshal("number -9223372036854776000", "ObjectMeta.generation", "int64")),
    ({"generation": True}, ("generation",), _unmarshal("bool", "ObjectMeta.generation", "int64")),
    ({"generation": []}, ("generation",), _unmarshal("array", "ObjectMeta.generation", "int64")),
    ({"deletionGracePeriodSeconds": "30"}, ("deletionGracePeriodSeconds",),
     _unmarshal("string", "ObjectMeta.deletionGracePeriodSeconds", "int64")),
    # maps and lists: the whole value, or one element (the map key is not in the field name)
    ({"labels": "x"}, ("labels",), _unmarshal("string", "ObjectMeta.labels", "map[string]string")),
    ({"labels": [1]}, ("labels",), _unmarshal("array", "ObjectMeta.labels", "map[string]string")),
    ({"labels": {"a": True}}, ("labels", "a"), _unmarshal("bool", "ObjectMeta.labels", "string")),
    ({"annotations": {"a": {}}}, ("annotations", "a"), _unmarshal("object", "ObjectMeta.annotations", "string")),
    ({"finalizers": "x"}, ("finalizers",), _unmarshal("string", "ObjectMeta.finalizers", "[]string")),
    ({"finalizers": {}}, ("finalizers",), _unmarshal("object", "ObjectMeta.finalizers", "[]string")),
    ({"finalizers": ["a", 1]}, ("finalizers", 1), _unmarshal("number", "ObjectMeta.finalizers", "string")),
    # timestamps: metav1.Time decodes a string first
    ({"creationTimestamp": 1}, ("creationTimestamp",), _unmarshal("number", "ObjectMeta.creationTimestamp", "string")),
    ({"deletionTimestamp": True}, ("deletionTimestamp",), _unmarshal("bool", "ObjectMeta.deletionTimestamp", "string")),
    ({"creationTimestamp": {}}, ("creationTimestamp",), _unmarshal("object", "ObjectMeta.creationTimestamp", "string")),
    ({"creationTimestamp": []}, ("creationTimestamp",), _unmarshal("array", "ObjectMeta.creationTimestamp", "string")),
    # lists of structs: the list, an item, a field of an item (named by its struct)
    ({"ownerReferences": "x"}, ("ownerReferences",), _unmarshal("string", "ObjectMeta.ownerReferences", "[]v1.OwnerReference")),
    ({"ownerReferences": {}}, ("ownerReferences",), _unmarshal("object", "ObjectMeta.ownerReferences", "[]v1.OwnerReference")),
    ({"ownerReferences": [{}, "x"]}, ("ownerReferences", 1), _unmarshal("string", "ObjectMeta.ownerReferences", "v1.OwnerReference")),
    ({"ownerReferences": [1]}, ("ownerReferences", 0), _unmarshal("number", "ObjectMeta.ownerReferences", "v1.OwnerReference")),
    ({"ownerReferences": [[]]}, ("ownerReferences", 0), _unmarshal("array", "ObjectMeta.ownerReferences", "v1.OwnerReference")),
    ({"ownerReferences": [{"blockOwnerDeletion": 1}]}, ("ownerReferences", 0, "blockOwnerDeletion"),
     _unmarshal("number", "OwnerReference.ownerReferences.blockOwnerDeletion", "bool")),
    ({"ownerReferences": [{"controller": "true"}]}, ("ownerReferences", 0, "controller"),
     _unmarshal("string", "OwnerReference.ownerReferences.controller", "bool")),
    ({"ownerReferences": [{"uid": 1}]}, ("ownerReferences", 0, "uid"),
     _unmarshal("number", "OwnerReference.ownerReferences.uid", "types.UID")),
    ({"ownerReferences": [{"kind": []}]}, ("ownerReferences", 0, "kind"),
     _unmarshal("array", "OwnerReference.ownerReferences.kind", "string")),
    ({"managedFields": "x"}, ("managedFields",), _unmarshal("string", "ObjectMeta.managedFields", "[]v1.ManagedFieldsEntry")),
    ({"managedFields": [True]}, ("managedFields", 0), _unmarshal("bool", "ObjectMeta.managedFields", "v1.ManagedFieldsEntry")),
    ({"managedFields": [{"operation": 1}]}, ("managedFields", 0, "operation"),
     _unmarshal("number", "ManagedFieldsEntry.managedFields.operation", "v1.ManagedFieldsOperationType")),
    ({"managedFields": [{"manager": 1, "fieldsV1": 1}]}, ("managedFields", 0, "manager"),
     _unmarshal("number", "ManagedFieldsEntry.managedFields.manager", "string")),
    ({"managedFields": [{"time": 1}]}, ("managedFields", 0, "time"),
     _unmarshal("number", "ManagedFieldsEntry.managedFields.time", "string")),
    ({"managedFields": [{"time": "x"}]}, ("managedFields", 0, "time"),
     'parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"'),
])
def test_go_type_errors_name_the_struct_field_and_its_go_type(meta: dict[str, Any], path: tuple, message: str) -> None:
    problems, out = decoded(meta)
    assert problems == [(("metadata",) + path, message)]


def test_every_type_error_is_reported_in_the_order_of_the_fields() -> None:
    # the server stops at one (400); all are listed, so one run shows every field to fix
    problems, out = decoded({"name": 1, "labels": {"a": "b", "c": 2}, "generation": "1", "finalizers": [3]})
    assert problems == [
        (("metadata", "name"), _unmarshal("number", "ObjectMeta.name", "string")),
        (("metadata", "labels", "c"), _unmarshal("number", "ObjectMeta.labels", "string")),
        (("metadata", "generation"), _unmarshal("string", "ObjectMeta.generation", "int64")),
        (("metadata", "finalizers", 0), _unmarshal("number", "ObjectMeta.finalizers", "string")),
    ]


@pytest.mark.parametrize(("value", "stored"), [
    (2**63 - 1, 2**63 - 1), (-(2**63), -(2**63)), (0, 0), (-1, -1),
    (5.0, 5),  # kubectl's JSON writes 5.0 as 5 (transcript 38: "size 2.0 as JSON text: an integer")
    (0.0, 0), (-0.0, 0),  # "0" and "-0"
    (1e18, 10**18),
])
def test_an_int64_field_takes_every_integer_in_range(value: Any, stored: int) -> None:
    problems, out = decoded({"generation": value, "deletionGracePeriodSeconds": value})
    assert problems == []
    assert out == {"generation": stored, "deletionGracePeriodSeconds": stored}
    assert type(out["generation"]) is int


def test_fields_v1_takes_any_json() -> None:
    for value in (1, "x", [1], {"f:a": {}}, True):
        assert decoded({"managedFields": [{"fieldsV1": value}]}) == ([], {"managedFields": [{"fieldsV1": value}]})


# --- timestamps: time.Parse(time.RFC3339, ...) -----------------------------------------------------

@pytest.mark.parametrize("text", [
    "2024-01-01T00:00:00.5+02:00",  # transcript 38, exchange 12: 201
    "2024-01-01T00:00:00Z", "2024-01-01T00:00:00-23:59", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z",
    "2024-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2024-04-30T00:00:00Z", "2024-12-31T00:00:00Z",
    "2024-01-31T00:00:00Z", "2024-03-31T00:00:00Z", "2024-05-31T00:00:00Z", "2024-07-31T00:00:00Z",
    "2024-08-31T00:00:00Z", "2024-10-31T00:00:00Z",
    "2024-01-01T00:00:00.123456789123Z",  # any number of fraction digits
    "2024-01-01T00:00:00,5Z",  # the general parser takes a comma before the fraction
    "2024-01-01T1:00:00Z",  # and an hour of one digit
    "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+00:60",  # "some people do write offsets of 24 hours or 60 minutes"
])
def test_timestamps_go_accepts(text: str) -> None:
    assert time_parse_error(text) is None
    assert decoded({"creationTimestamp": text, "deletionTimestamp": text}) == (
        [], {"creationTimestamp": text, "deletionTimestamp": text})


LAYOUT = '"2006-01-02T15:04:05Z07:00"'


@pytest.mark.parametrize(("text", "error"), [
    ("x", f'parsing time "x" as {LAYOUT}: cannot parse "x" as "2006"'),  # transcript 38, exchange 13
    ("202-01-01T00:00:00Z", f'parsing time "202-01-01T00:00:00Z" as {LAYOUT}: cannot parse "202-01-01T00:00:00Z" as "2006"'),
    ("+024-01-01T00:00:00Z", f'parsing time "+024-01-01T00:00:00Z" as {LAYOUT}: cannot parse "+024-01-01T00:00:00Z" as "2006"'),
    ("2024/01-01T00:00:00Z", f'parsing time "2024/01-01T00:00:00Z" as {LAYOUT}: cannot parse "/01-01T00:00:00Z" as "-"'),
    ("2024-1-01T00:00:00Z", f'parsing time "2024-1-01T00:00:00Z" as {LAYOUT}: cannot parse "1-01T00:00:00Z" as "01"'),
    ("2024-01-1T00:00:00Z", f'parsing time "2024-01-1T00:00:00Z" as {LAYOUT}: cannot parse "1T00:00:00Z" as "02"'),
    ("2024-01-01t00:00:00z", f'parsing time "2024-01-01t00:00:00z" as {LAYOUT}: cannot parse "t00:00:00z" as "T"'),
    ("2024-01-01 00:00:00Z", f'parsing time "2024-01-01 00:00:00Z" as {LAYOUT}: cannot parse " 00:00:00Z" as "T"'),
    ("2024-01-01T:00:00Z", f'parsing time "2024-01-01T:00:00Z" as {LAYOUT}: cannot parse ":00:00Z" as "15"'),
    ("2024-01-01T00-00:00Z", f'parsing time "2024-01-01T00-00:00Z" as {LAYOUT}: cannot parse "-00:00Z" as ":"'),
    ("2024-01-01T1:0:00Z", f'parsing time "2024-01-01T1:0:00Z" as {LAYOUT}: cannot parse "0:00Z" as "04"'),
    ("2024-01-01T00:00-00Z", f'parsing time "2024-01-01T00:00-00Z" as {LAYOUT}: cannot parse "-00Z" as ":"'),
    ("2024-01-01T00:00:0Z", f'parsing time "2024-01-01T00:00:0Z" as {LAYOUT}: cannot parse "0Z" as "05"'),
    ("2024-01-01T00:00:00", f'parsing time "2024-01-01T00:00:00" as {LAYOUT}: cannot parse "" as "Z07:00"'),
    ("2024-01-01T00:00:00.5", f'parsing time "2024-01-01T00:00:00.5" as {LAYOUT}: cannot parse "" as "Z07:00"'),
    ("2024-01-01T00:00:00.Z", f'parsing time "2024-01-01T00:00:00.Z" as {LAYOUT}: cannot parse ".Z" as "Z07:00"'),
    ("2024-01-01T00:00:00z", f'parsing time "2024-01-01T00:00:00z" as {LAYOUT}: cannot parse "z" as "Z07:00"'),
    ("2024-01-01T00:00:00+02", f'parsing time "2024-01-01T00:00:00+02" as {LAYOUT}: cannot parse "+02" as "Z07:00"'),
    ("2024-01-01T00:00:00+0200", f'parsing time "2024-01-01T00:00:00+0200" as {LAYOUT}: cannot parse "+0200" as "Z07:00"'),
    ("2024-01-01T00:00:00x02:00", f'parsing time "2024-01-01T00:00:00x02:00" as {LAYOUT}: cannot parse "x02:00" as "Z07:00"'),
    ("2024-01-01T00:00:00+2a:00", f'parsing time "2024-01-01T00:00:00+2a:00" as {LAYOUT}: cannot parse "+2a:00" as "Z07:00"'),
    ("2024-01-01T00:00:00+00:0a", f'parsing time "2024-01-01T00:00:00+00:0a" as {LAYOUT}: cannot parse "+00:0a" as "Z07:00"'),
    ("2024-01-01T00:00:00+25:0a", 'parsing time "2024-01-01T00:00:00+25:0a": time zone offset hour out of range'),
    ("2024", f'parsing time "2024" as {LAYOUT}: cannot parse "" as "-"'),
    ("2024-01-01T", f'parsing time "2024-01-01T" as {LAYOUT}: cannot parse "" as "15"'),
    ("2024-01-01T1", f'parsing time "2024-01-01T1" as {LAYOUT}: cannot parse "" as ":"'),
    ("2024-01-01T00:00:00X5Z", f'parsing time "2024-01-01T00:00:00X5Z" as {LAYOUT}: cannot parse "X5Z" as "Z07:00"'),
    ("2024-01-01T00:00:00.5,5Z", f'parsing time "2024-01-01T00:00:00.5,5Z" as {LAYOUT}: cannot parse ",5Z" as "Z07:00"'),
    ("2024-01-01T00:00:00X02:00", f'parsing time "2024-01-01T00:00:00X02:00" as {LAYOUT}: cannot parse "X02:00" as "Z07:00"'),
    ("2024-01-01T00:00:00+2a:61", f'parsing time "2024-01-01T00:00:00+2a:61" as {LAYOUT}: cannot parse "+2a:61" as "Z07:00"'),
    # the offset's ranges are checked before its sign
    ("2024-01-01T00:00:00x25:00", 'parsing time "2024-01-01T00:00:00x25:00": time zone offset hour out of range'),
    ("2024-01-01T00:00:00x02:61", 'parsing time "2024-01-01T00:00:00x02:61": time zone offset minute out of range'),
    ("2024-01-01T00:00:00+00:00:00", 'parsing time "2024-01-01T00:00:00+00:00:00": extra text: ":00"'),
    ("2024-06-31T00:00:00Z", 'parsing time "2024-06-31T00:00:00Z": day out of range'),
    ("2024-09-31T00:00:00Z", 'parsing time "2024-09-31T00:00:00Z": day out of range'),
    ("2024-11-31T00:00:00Z", 'parsing time "2024-11-31T00:00:00Z": day out of range'),
    ("2024-13-01T00:00:00Z", 'parsing time "2024-13-01T00:00:00Z": month out of range'),
    ("2024-00-01T00:00:00Z", 'parsing time "2024-00-01T00:00:00Z": month out of range'),
    ("2024-01-00T00:00:00Z", 'parsing time "2024-01-00T00:00:00Z": day out of range'),
    ("2024-01-32T00:00:00Z", 'parsing time "2024-01-32T00:00:00Z": day out of range'),
    ("2024-04-31T00:00:00Z", 'parsing time "2024-04-31T00:00:00Z": day out of range'),
    ("2023-02-29T00:00:00Z", 'parsing time "2023-02-29T00:00:00Z": day out of range'),
    ("1900-02-29T00:00:00Z", 'parsing time "1900-02-29T00:00:00Z": day out of range'),
    ("2024-02-30T00:00:00Z", 'parsing time "2024-02-30T00:00:00Z": day out of range'),
    ("2024-01-01T24:00:00Z", 'parsing time "2024-01-01T24:00:00Z": hour out of range'),
    ("2024-01-01T99:00:00Z", 'parsing time "2024-01-01T99:00:00Z": hour out of range'),
    ("2024-01-01T00:60:00Z", 'parsing time "2024-01-01T00:60:00Z": minute out of range'),
    ("2024-01-01T00:00:60Z", 'parsing time "2024-01-01T00:00:60Z": second out of range'),
    ("2024-01-01T00:00:00+25:00", 'parsing time "2024-01-01T00:00:00+25:00": time zone offset hour out of range'),
    ("2024-01-01T00:00:00+00:61", 'parsing time "2024-01-01T00:00:00+00:61": time zone offset minute out of range'),
    ("2024-01-01T00:00:00+25:61", 'parsing time "2024-01-01T00:00:00+25:61": time zone offset minute out of range'),
    ("2024-01-01T00:00:00Zx", 'parsing time "2024-01-01T00:00:00Zx": extra text: "x"'),
    ("2024-01-01T00:00:00+02:00x", 'parsing time "2024-01-01T00:00:00+02:00x": extra text: "x"'),
    ("2024-01-01T00:00:00.5Zabc", 'parsing time "2024-01-01T00:00:00.5Zabc": extra text: "abc"'),
    # only ASCII digits are digits; Go quotes bytes outside printable ASCII as \xNN, escapes " and \
    ("２０２４-01-01T00:00:00Z", 'parsing time "\\xef\\xbc\\x92\\xef\\xbc\\x90\\xef\\xbc\\x92\\xef\\xbc\\x94-01-01T00:00:00Z" as '
     f'{LAYOUT}: cannot parse "\\xef\\xbc\\x92\\xef\\xbc\\x90\\xef\\xbc\\x92\\xef\\xbc\\x94-01-01T00:00:00Z" as "2006"'),
    ('a"b\\c', f'parsing time "a\\"b\\\\c" as {LAYOUT}: cannot parse "a\\"b\\\\c" as "2006"'),
    ("é2024\t", f'parsing time "\\xc3\\xa92024\\x09" as {LAYOUT}: cannot parse "\\xc3\\xa92024\\x09" as "2006"'),
    ("~", f'parsing time "~" as {LAYOUT}: cannot parse "~" as "2006"'),
    ("X", f'parsing time "X" as {LAYOUT}: cannot parse "X" as "2006"'),
    ("2024-01-01T\x80", f'parsing time "2024-01-01T\\xc2\\x80" as {LAYOUT}: cannot parse "\\xc2\\x80" as "15"'),
    # a lone surrogate escape in the JSON (\ud800) is U+FFFD to Go's decoder
    ("\ud800\udfff", f'parsing time "\\xef\\xbf\\xbd\\xef\\xbf\\xbd" as {LAYOUT}: '
     'cannot parse "\\xef\\xbf\\xbd\\xef\\xbf\\xbd" as "2006"'),
])
def test_timestamps_go_refuses_with_its_parse_error(text: str, error: str) -> None:
    assert time_parse_error(text) == error
    assert decoded({"deletionTimestamp": text}) == ([(("metadata", "deletionTimestamp"), error)], {"deletionTimestamp": text})


def test_a_long_timestamp_is_quoted_only_up_to_the_excerpt_limit() -> None:
    text = "9" * 100
    shown = '"' + "9" * 64 + '…"'
    # the year is 9999; the 96 nines after it are no "-"
    assert time_parse_error(text) == f"parsing time {shown} as {LAYOUT}: cannot parse {shown} as \"-\""
    assert time_parse_error("2024-01-01T00:00:00Z" + "x" * 64) == (
        f'parsing time "2024-01-01T00:00:00Z{"x" * 44}…": extra text: "{"x" * 64}"')


# --- every field of the Go structs, as the Kubernetes client's own models list them ----------------

#: the client's (openapi-generator's) type names -> the Go type encoding/json names in its error
GO_TYPES = {"int": {"int64"}, "bool": {"bool"}, "datetime": {"string"}, "Dict[str, str]": {"map[string]string"},
            "List[str]": {"[]string"}, "List[V1OwnerReference]": {"[]v1.OwnerReference"},
            "List[V1ManagedFieldsEntry]": {"[]v1.ManagedFieldsEntry"},
            "str": {"string", "types.UID", "v1.ManagedFieldsOperationType"}}


def _client_fields() -> list[tuple[str, str, str]]:
    """(where, JSON field, client type) of ObjectMeta and the two structs it lists, from the client's models."""
    client = pytest.importorskip("kubernetes.client")
    fields = []
    for where, model in (("", client.V1ObjectMeta), ("ownerReferences", client.V1OwnerReference),
                         ("managedFields", client.V1ManagedFieldsEntry)):
        fields += [(where, model.attribute_map[attr], kind) for attr, kind in sorted(model.openapi_types.items())]
    return fields


@pytest.mark.parametrize(("where", "field", "kind"), _client_fields())
def test_every_field_of_object_meta_is_decoded_as_its_go_type(where: str, field: str, kind: str) -> None:
    """Each field the Kubernetes client knows in ObjectMeta, OwnerReference and ManagedFieldsEntry is
    decoded as its Go type: a value of another JSON kind is the server's 400 at that very field,
    naming that type (FieldsV1 takes any JSON)."""
    wrong = "x" if kind == "bool" else True
    meta = {field: wrong} if not where else {where: [{field: wrong}]}
    problems = decode_object_meta({"metadata": meta})
    if kind == "object":
        assert problems == []
        return
    [(path, message)] = problems
    assert path == (("metadata", field) if not where else ("metadata", where, 0, field))
    assert message.startswith(f"json: cannot unmarshal {'string' if wrong == 'x' else 'bool'} into Go struct field ")
    assert message.rsplit(" of type ", 1)[1] in GO_TYPES[kind]
