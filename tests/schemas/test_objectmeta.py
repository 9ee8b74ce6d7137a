"""ObjectMeta checks with the API server's exact words and limits.

Every expected message below is written out as kube-apiserver v1.36 builds it (apimachinery
pkg/util/validation/validation.go, pkg/api/validate/content/kube.go IsLabelKey/IsLabelValue,
pkg/api/validation/objectmeta.go and generic.go), not taken from the module under test: a changed
word, limit or field path is a changed contract with everyone who reads our errors beside kubectl's.
"""

from __future__ import annotations

import pytest
from memcached_gitops.schemas.objectmeta import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
    validate_object_meta,
    validate_owner_references,
)

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
         "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
NAME_RULE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
             "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
               "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def meta_errors(meta: object, namespaced: bool = True) -> list[tuple[str, str]]:
    return [(".".join(str(p) for p in path), message) for path, message in validate_object_meta(meta, namespaced)]


@pytest.mark.parametrize(("value", "errors"), [
    ("a" * 253, []),
    ("a.b-c.d0", []),
    ("a" * 254, ["must be no more than 253 characters"]),
    ("A" * 254, ["must be no more than 253 characters", SUBDOMAIN]),
    ("-a", [SUBDOMAIN]),
    ("a.", [SUBDOMAIN]),
    ("", [SUBDOMAIN]),
])
def test_dns1123_subdomain(value: str, errors: list[str]) -> None:
    assert dns1123_subdomain_errors(value) == errors


@pytest.mark.parametrize(("value", "errors"), [
    ("a" * 63, []),
    ("a" * 64, ["must be no more than 63 characters"]),
    ("A" * 64, ["must be no more than 63 characters", LABEL]),
    ("a.b", ["must not contain dots"]),
    ("a_b", [LABEL]),
    ("a-", [LABEL]),
])
def test_dns1123_label(value: str, errors: list[str]) -> None:
    assert dns1123_label_errors(value) == errors


@pytest.mark.parametrize(("value", "errors"), [
    ("a" * 63, []),
    ("Ab_c.D-9", []),
    ("example.com/" + "a" * 63, []),
    ("a" * 64, ["name part must be no more than 63 characters"]),
    ("a" * 63 + "-", ["name part must be no more than 63 characters", "name part " + NAME_RULE]),
    ("_a", ["name part " + NAME_RULE]),
    ("", ["name part must be non-empty", "name part " + NAME_RULE]),
    ("/a", ["prefix part must be non-empty"]),
    ("example.com/", ["name part must be non-empty", "name part " + NAME_RULE]),
    ("Example.com/a", ["prefix part " + SUBDOMAIN]),
    ("a" * 254 + "/a", ["prefix part must be no more than 253 characters"]),
    ("a/b/c", ["a valid label key " + NAME_RULE + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]),
])
def test_label_keys(value: str, errors: list[str]) -> None:
    assert qualified_name_errors(value) == errors


@pytest.mark.parametrize(("value", "errors"), [
    ("", []),
    ("a" * 63, []),
    ("a" * 64, ["must be no more than 63 characters"]),
    ("-" * 64, ["must be no more than 63 characters", LABEL_VALUE]),
    ("a b", [LABEL_VALUE]),
])
def test_label_values(value: str, errors: list[str]) -> None:
    assert label_value_errors(value) == errors


def test_a_good_metadata_has_no_problems() -> None:
    meta = {"name": "m", "namespace": "shop", "labels": {"example.com/tier": "cache", "empty": ""},
            "annotations": {"Example.COM/Note": "free text: 1"}, "finalizers": ["example.com/cleanup"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u", "controller": True}]}
    assert meta_errors(meta) == []
    assert meta_errors(None) == [("metadata.name", "Required value: name or generateName is required")]


def test_names_namespaces_and_their_types() -> None:
    assert meta_errors([]) == [("metadata", "Invalid value: []: metadata must be an object")]
    assert meta_errors({"name": 1, "namespace": True}) == [
        ("metadata.name", "Invalid value: 1: must be a string"),
        ("metadata.namespace", "Invalid value: true: must be a string"),
    ]
    assert meta_errors({"name": "Bad"}) == [("metadata.name", f'Invalid value: "Bad": {SUBDOMAIN}')]
    assert meta_errors({"name": "m", "namespace": "a.b"}) == [("metadata.namespace", 'Invalid value: "a.b": must not contain dots')]
    assert meta_errors({"name": "m", "namespace": "shop"}, namespaced=False) == [
        ("metadata.namespace", "Forbidden: not allowed on this type")]
    assert meta_errors({"name": "m", "namespace": ""}, namespaced=False) == []


@pytest.mark.parametrize(("generate", "errors"), [
    ("cache-", []),
    ("A-", [("metadata.name", f'Invalid value: "A-xxxxx": {SUBDOMAIN}')]),  # masked "a" passes, the generated name does not
    ("a.-", [("metadata.name", f'Invalid value: "a.-xxxxx": {SUBDOMAIN}')]),  # masked "aa" passes
    ("a.", [("metadata.generateName", f'Invalid value: "a.": {SUBDOMAIN}')]),
    ("B.-", [("metadata.generateName", f'Invalid value: "B.-": {SUBDOMAIN}'),  # masked "Ba"
             ("metadata.name", f'Invalid value: "B.-xxxxx": {SUBDOMAIN}')]),
    ("-", [("metadata.generateName", f'Invalid value: "-": {SUBDOMAIN}'), ("metadata.name", f'Invalid value: "-xxxxx": {SUBDOMAIN}')]),
    ("a" * 300, [("metadata.generateName", f'Invalid value: "{"a" * 64}…": must be no more than 253 characters')]),
])
def test_generate_name_is_checked_masked_and_the_generated_name_too(generate: str, errors: list) -> None:
    assert meta_errors({"generateName": generate}) == errors


def test_a_name_beside_generate_name_is_checked_itself() -> None:
    assert meta_errors({"name": "Bad", "generateName": "good-"}) == [("metadata.name", f'Invalid value: "Bad": {SUBDOMAIN}')]
    assert meta_errors({"name": "Bad", "generateName": "Bad-"}) == [
        ("metadata.generateName", f'Invalid value: "Bad-": {SUBDOMAIN}'),
        ("metadata.name", f'Invalid value: "Bad": {SUBDOMAIN}'),
    ]
    assert meta_errors({"name": "m", "generateName": 5}) == [("metadata.generateName", "Invalid value: 5: must be a string")]


def test_labels_name_the_map_for_bad_keys_and_values_and_the_key_for_a_wrong_type() -> None:
    assert meta_errors({"name": "m", "labels": {"bad key": "x y", "n": 1}}) == [
        ("metadata.labels", f'Invalid value: "bad key": name part {NAME_RULE}'),
        ("metadata.labels", f'Invalid value: "x y": {LABEL_VALUE}'),
        ("metadata.labels.n", "Invalid value: 1: must be a string"),
    ]
    assert meta_errors({"name": "m", "labels": ["a"]}) == [
        ("metadata.labels", 'Invalid value: ["a"]: must be a map of string keys to string values')]


def test_annotation_keys_are_checked_lower_cased_and_values_are_free() -> None:
    assert meta_errors({"name": "m", "annotations": {"Example.COM/Note": "x y", "a/b/c": "v"}}) == [
        ("metadata.annotations", f'Invalid value: "a/b/c": a valid label key {NAME_RULE} with an optional DNS subdomain '
                                 "prefix and '/' (e.g. 'example.com/MyName')"),
    ]
    assert meta_errors({"name": "m", "labels": {"Example.COM/Note": "x"}}) == [
        ("metadata.labels", f'Invalid value: "Example.COM/Note": prefix part {SUBDOMAIN}')]


def test_annotations_total_size_counts_keys_and_values_in_bytes() -> None:
    at_limit = {"k": "v" * (256 * 1024 - 1)}
    assert meta_errors({"name": "m", "annotations": at_limit}) == []
    over = {"k": "é" * (128 * 1024)}  # 2 bytes each in UTF-8: one byte over with the key
    assert meta_errors({"name": "m", "annotations": over}) == [("metadata.annotations", "Too long: must have at most 262144 bytes")]


def test_finalizers_are_label_keys_named_on_the_list_and_orphan_excludes_foreground() -> None:
    assert meta_errors({"name": "m", "finalizers": ["ok", "a/b/c"]}) == [
        ("metadata.finalizers", f'Invalid value: "a/b/c": a valid label key {NAME_RULE} with an optional DNS subdomain '
                                "prefix and '/' (e.g. 'example.com/MyName')"),
    ]
    assert meta_errors({"name": "m", "finalizers": ["orphan", "foregroundDeletion"]}) == [
        ("metadata.finalizers",
         'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set'),
    ]
    assert meta_errors({"name": "m", "finalizers": ["orphan"]}) == []
    assert meta_errors({"name": "m", "finalizers": "orphan"}) == [("metadata.finalizers", "Invalid value: must be a list of strings")]
    assert meta_errors({"name": "m", "finalizers": [1]}) == [("metadata.finalizers", "Invalid value: must be a list of strings")]


def owner(**fields: object) -> dict:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u"}
    ref.update(fields)
    return ref


def ref_errors(refs: object) -> list[tuple[str, str]]:
    return [(".".join(str(p) for p in path), message) for path, message in validate_owner_references(refs)]


def test_owner_references_fields_as_transcript_20_shows() -> None:
    assert ref_errors(None) == []
    assert ref_errors([owner()]) == []
    assert ref_errors([owner(apiVersion="", kind="", name="", uid="")]) == [
        ("metadata.ownerReferences.apiVersion", 'Invalid value: "": version must not be empty'),
        ("metadata.ownerReferences.kind", 'Invalid value: "": must not be empty'),
        ("metadata.ownerReferences.name", 'Invalid value: "": must not be empty'),
        ("metadata.ownerReferences.uid", 'Invalid value: "": must not be empty'),
    ]
    assert ref_errors([owner(apiVersion="a/b/c")]) == [
        ("metadata.ownerReferences.apiVersion", 'Invalid value: "a/b/c": version must not be empty')]
    assert ref_errors([owner(apiVersion="apps/")]) == [
        ("metadata.ownerReferences.apiVersion", 'Invalid value: "apps/": version must not be empty')]
    assert ref_errors([owner(apiVersion="apps/v1", kind="Deployment")]) == []


def test_owner_references_shape_banned_owner_and_two_controllers() -> None:
    assert ref_errors({"kind": "x"}) == [("metadata.ownerReferences", 'Invalid value: {"kind":"x"}: must be a list of objects')]
    assert ref_errors(["x"]) == [("metadata.ownerReferences", 'Invalid value: ["x"]: must be a list of objects')]
    event = owner(kind="Event", uid="u", controller=False)
    assert ref_errors([event]) == [(  # the value quoted in Go struct order, excerpted to 64 characters
        "metadata.ownerReferences",
        'Invalid value: {"apiVersion":"v1","kind":"Event","name":"c","uid":"u","controll…: '
        "/v1, Kind=Event is disallowed from being an owner")]
    assert ref_errors([owner(apiVersion="events.k8s.io/v1", kind="Event")]) == []
    two = [owner(name="a", controller=True), owner(name="b", controller=False), owner(name="c", controller=True)]
    [(path, message)] = ref_errors(two)
    assert path == "metadata.ownerReferences"
    assert message.endswith(': Only one reference can have Controller set to true. '
                            'Found "true" in references for ConfigMap/a and ConfigMap/c')
    three = [owner(name="a", controller=True), owner(name="", controller=True), owner(name="c", controller=True)]
    messages = [m for p, m in ref_errors(three) if p == "metadata.ownerReferences"]
    assert [m.split("references for ")[1] for m in messages] == ["ConfigMap/a and ConfigMap/", "ConfigMap/a and ConfigMap/c"]
    assert message.startswith('Invalid value: [{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"u","con…: ')
