"""List documents as kubectl reads them (src/memcached_gitops/lists.py): where the client's refusal of a
list is reported, in which words, and which objects a list stands for. Each test pins a rule the mutation
group ``lists`` found unchecked; tests/cli/test_pipeline.py and tests/stream_cases.py hold kubectl's
recorded verdicts (accepted or not), these the findings a user reads."""

from __future__ import annotations

import pytest
from memcached_gitops.render import DEFAULT_IMAGE
from memcached_gitops.schemas import Validator

from memcached_gitops.pipeline import process
from tests.conftest import crd_named

CR_ITEM = "- {apiVersion: cache.example.com/v1alpha1, kind: Memcached, metadata: {name: m}, spec: {size: 1}}\n"
CR_JSON = '{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "web"}, "spec": {"size": 1}}'


def run(text: str, file: str = "l.yaml"):
    return process([(file, text)], Validator(crd_named("builtin")), DEFAULT_IMAGE, do_render=False)


def found(text: str, file: str = "l.yaml") -> list[tuple[int, int, str, str]]:
    return [(f.line, f.column, f.field, f.message) for f in run(text, file).findings]


def test_an_unknown_field_of_a_typed_lists_metadata_is_reported_at_that_field() -> None:
    """A typed list's metadata is ListMeta, which has no name: kubectl's client validation names the field
    under metadata, and so must the finding (its line and column are where the user fixes it)."""
    assert found("apiVersion: v1\nkind: ConfigMapList\nmetadata: {name: x}\nitems: []\n") == [
        (3, 12, "metadata.name", 'unknown field "metadata.name" in ListMeta')]


@pytest.mark.parametrize("api_version, kind", [("v1", "ConfigMapList"), ("cache.example.com/v1alpha1", "MemcachedList")])
def test_a_typed_list_without_items_is_refused_for_its_missing_items(api_version: str, kind: str) -> None:
    """A ``<Kind>List`` with no items key is no list to flatten: kubectl maps it as the typed list of a
    served kind and its schema requires ``items`` (recorded: configmaplist-without-items, 'missing
    required field "items"'), for the CRD's MemcachedList as for a built-in one; never a kind with no
    mapping, and never passed unjudged."""
    assert found(f"apiVersion: {api_version}\nkind: {kind}\n") == [(1, 1, "items", 'missing required field "items"')]


def test_a_typed_lists_null_item_is_refused_at_that_item_in_kubectls_words() -> None:
    """kubectl's client validation of a MemcachedList refuses a null item (recorded: memcachedlist-null-item,
    'unknown object type "nil"'), at the item."""
    assert found("apiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems: [~]\n") == [
        (3, 9, "items[0]", 'unknown object type "nil"')]


def test_a_typed_list_item_whose_items_is_null_misses_them_and_one_whose_items_is_no_array_is_invalid() -> None:
    """A list's item that is a typed list with ``items`` null or not an array is not flattened (only an array
    makes a list, ``is_nested_list``): it is validated as a typed list, whose items are missing when null and
    are no object to validate when a number; the two are told apart."""
    head = "apiVersion: apps/v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMapList, items: "
    assert found(head + "~}\n") == [(4, 41, "items", 'missing required field "items"')]
    assert found(head + "5}\n") == [(4, 41, "items", "invalid object to validate")]


def test_a_list_of_a_kind_its_group_version_does_not_serve_is_refused_at_its_kind_naming_kind_and_version() -> None:
    """kubectl maps a list before flattening it (recorded: whatever-list): the refusal is at ``kind`` and
    names the kind and the version that have no mapping, in kubectl's words."""
    assert found("apiVersion: apps/v1\nkind: WhateverList\nitems: []\n") == [
        (2, 1, "kind", 'resource mapping not found: no matches for kind "WhateverList" in version "apps/v1"; '
                       "ensure CRDs are installed first")]


def test_a_list_of_kind_list_in_a_group_other_than_core_is_not_checked_as_a_typed_list() -> None:
    """``List`` in apps/v1 is flattened like ``v1 List`` (recorded: apps-list): kubectl's client finds no
    schema for it and checks none of its own fields, so a name in its metadata and a field beside items
    are no unknown fields, and its item is created."""
    result = run("apiVersion: apps/v1\nkind: List\nmetadata: {name: l}\nspec: 1\nitems:\n" + CR_ITEM)
    assert result.findings == [] and len(result.crs) == 1, result.findings


def test_a_v1_list_without_items_is_invalid_and_another_groups_list_without_items_is_no_resource() -> None:
    """Without items a document is no list and is sent as one object: kubectl's client validation refuses a
    ``v1 List`` as no object to validate (recorded: v1-list-without-items), while a ``List`` of apps/v1 is
    posted and the server finds no such resource (recorded: apps-list-without-items). The two refusals are
    told apart, as a list's item as much as a document."""
    assert found("apiVersion: v1\nkind: List\n") == [(1, 1, "items", "invalid object to validate")]
    assert found("apiVersion: apps/v1\nkind: List\n") == [
        (2, 1, "kind", "the server could not find the requested resource (a List is no resource)")]
    assert found("apiVersion: apps/v1\nkind: List\nitems:\n- {apiVersion: apps/v1, kind: List}\n") == [
        (4, 25, "kind", "the server could not find the requested resource (a List is no resource)")]


def test_a_kind_ending_in_list_that_names_no_served_kind_has_no_mapping() -> None:
    """``WhateverList`` without items is a typed list only if ``Whatever`` were served: it is not, so kubectl
    finds no mapping for it; it is never validated as a typed list (no "missing items")."""
    assert found("apiVersion: v1\nkind: WhateverList\n") == [
        (2, 1, "kind", 'resource mapping not found: no matches for kind "WhateverList" in version "v1"; '
                       "ensure CRDs are installed first")]


def test_a_kind_a_built_in_group_version_does_not_serve_is_refused_at_its_kind() -> None:
    """A misspelt built-in kind has no mapping: the finding is at ``kind``, where the user fixes it."""
    assert found("apiVersion: apps/v1\nkind: Deploymentx\nmetadata: {name: x}\n") == [
        (2, 1, "kind", 'resource mapping not found: no matches for kind "Deploymentx" in version "apps/v1"; '
                       "ensure CRDs are installed first")]


def test_the_crds_kind_under_a_built_in_group_is_judged_by_the_validator_with_the_crds_version() -> None:
    """``kind: Memcached`` under apps/v1 is a Memcached in the wrong group (the validator claims every
    spelling of its kind): it is refused in the validator's words, which name the version the CRD serves,
    not as an anonymous kind with no mapping."""
    assert found("apiVersion: apps/v1\nkind: Memcached\nmetadata: {name: x}\nspec: {size: 1}\n") == [
        (1, 1, "apiVersion", 'no matches for kind "Memcached" in version "apps/v1" (the CRD serves cache.example.com/v1alpha1)')]


def test_an_item_with_an_empty_kind_and_apiversion_takes_the_lists_as_one_without_them() -> None:
    """unstructured's GetKind and GetAPIVersion read an empty string as unset (AM helpers.go:492-509, the rule
    ``lists._set`` follows): an item of a MemcachedList with ``kind: ""`` and ``apiVersion: ""`` is a
    Memcached like a kindless one, and is created."""
    text = ("apiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems:\n"
            "- kind: ''\n  apiVersion: ''\n  metadata: {name: a}\n  spec: {size: 2}\n")
    result = run(text)
    assert result.findings == [] and [c["kind"] for c in result.crs] == ["Memcached"], result.findings


def test_a_null_item_of_a_memcached_with_items_is_an_empty_memcached_refused_for_its_name() -> None:
    """A null item decodes as an empty object, which takes the container's kind and apiVersion (recorded:
    memcached-with-null-item): it is a Memcached without a name, refused for it, not a null document."""
    messages = [(f.field, f.message) for f in run(
        "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: c}\nitems: [~]\n").errors]
    assert ("metadata.name", "Required value: name or generateName is required") in messages, messages


def test_an_items_problem_is_reported_at_its_line_and_column_in_the_list() -> None:
    """A finding of a list's item points into the item, where the user fixes it: the size of the first item of
    a MemcachedList, on line 5."""
    text = "apiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems:\n- metadata: {name: a}\n  spec: {size: 9}\n"
    assert found(text) == [(5, 10, "spec.size", "Invalid value: 9: spec.size in body should be less than or equal to 3")]


def test_a_duplicate_label_of_an_object_with_items_is_never_seen() -> None:
    """A ConfigMap given items is a kind the server validates (fieldValidation), so kubectl does not validate
    it on the client (CR query_param_verifier_v3.go, the rule ``validated_on_the_client`` follows) and only
    its items are sent: a key written twice in its own labels is seen by no one, and the item is created."""
    doc = ('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "a": "2"}}, '
           f'"items": [{CR_JSON}]}}\n')
    result = run(doc, "l.json")
    assert result.findings == [] and len(result.crs) == 1, result.findings


def test_a_duplicate_label_of_a_typed_list_is_refused_by_the_clients_validation() -> None:
    """A typed list is validated on the client (no list kind has fieldValidation), NoDoubleKeySchema with the
    schema: a key written twice in its metadata is a duplicate key, beside ListMeta's unknown field."""
    doc = '{"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"labels": {"a": "1", "a": "2"}}, "items": []}\n'
    assert [(f.field, f.message) for f in run(doc, "l.json").findings] == [
        ("metadata.labels", 'unknown field "metadata.labels" in ListMeta'), ("metadata.labels", "duplicate key: a")]


def test_a_list_whose_crd_apiversion_has_a_second_slash_sends_none_of_its_items() -> None:
    """``cache.example.com/v1alpha1/x`` is no group-version: kubectl cannot decode the list at all (kubectl
    v1.37.1, offline: ``Object 'Kind' is missing``), so its item, valid on its own, is never created."""
    result = run("apiVersion: cache.example.com/v1alpha1/x\nkind: MemcachedList\nitems:\n" + CR_ITEM)
    assert result.errors and result.crs == [], result.findings


def test_a_list_whose_built_in_apiversion_has_a_second_slash_sends_none_of_its_items() -> None:
    """``apps/v1/x`` is no group-version: kubectl v1.37.1 cannot decode such a list, before it asks any server
    (``kubectl create --dry-run=client -f``: ``unable to decode ...: Object 'Kind' is missing``), so none of
    its items is created."""
    result = run("apiVersion: apps/v1/x\nkind: List\nitems:\n" + CR_ITEM)
    assert result.errors and result.crs == [], result.findings


def test_a_duplicate_label_of_an_object_with_items_in_a_group_the_validator_cannot_know_is_left_to_its_server() -> None:
    """Another API's kind with items (a group no built-in and not the CRD's) is, for all the validator knows, a
    resource its server validates (fieldValidation), so kubectl would not validate it on the client: a key
    written twice in its own labels is no finding, and its item is created."""
    doc = ('{"apiVersion": "widgets.example.org/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "1", "a": "2"}}, '
           f'"items": [{CR_JSON}]}}\n')
    result = run(doc, "l.json")
    assert result.findings == [] and len(result.crs) == 1, result.findings


def test_a_crd_kind_ending_in_list_with_items_is_the_crds_resource_never_validated_on_the_client() -> None:
    """A CRD may name its kind ``PlayList``: a PlayList with items is that served kind (kubectl's server-side
    fieldValidation covers it), not a typed list, so it is not validated on the client and a key written twice
    in its labels is no finding; its item is created."""
    validator = Validator(crd_named("builtin")._replace(kind="PlayList"))
    item = CR_JSON.replace('"Memcached"', '"PlayList"')
    doc = ('{"apiVersion": "cache.example.com/v1alpha1", "kind": "PlayList", '
           f'"metadata": {{"name": "c", "labels": {{"a": "1", "a": "2"}}}}, "items": [{item}]}}\n')
    result = process([("l.json", doc)], validator, DEFAULT_IMAGE, do_render=False)
    assert result.findings == [] and len(result.crs) == 1, result.findings


def test_every_bad_item_of_a_v1_list_is_reported_at_that_item() -> None:
    """kubectl validates all of a v1 List's items before sending any, and names each problem (kubectl v1.37.1,
    offline: ``kubectl create --dry-run=client -f`` of items ``[5, {kind: ConfigMap, ...}]`` says
    ``error validating data: [invalid object to validate, apiVersion not set]``): a non-object item and a later
    item without apiVersion are both reported, each at its item."""
    result = run("apiVersion: v1\nkind: List\nitems:\n- 5\n- {kind: Memcached, metadata: {name: m}}\n")
    assert [(f.line, f.column, f.field, f.message) for f in result.findings] == [
        (4, 3, "items[0]", "invalid object to validate: an item of a v1 List must be an object"),
        (5, 3, "items[1].apiVersion", "apiVersion not set")]
    assert result.crs == []


@pytest.mark.parametrize("api_version", ["apps/v1beta1", "cache.example.com/v1beta1"])
def test_a_list_of_kind_list_in_a_version_the_server_does_not_serve_sends_none_of_its_items(api_version: str) -> None:
    """Discovery maps ``List`` only in the group-versions the server serves (docs/design/kubectl-reader.md row
    3.4, the rule ``list_problems`` follows): apps/v1beta1 (no longer served) and the CRD's group in a version
    the CRD does not serve have no ``List``, so kubectl refuses the list before flattening it, and its item,
    valid on its own, is never created."""
    result = run(f"apiVersion: {api_version}\nkind: List\nitems:\n" + CR_ITEM)
    assert [(f.line, f.column, f.field, f.message) for f in result.findings] == [
        (2, 1, "kind", f'resource mapping not found: no matches for kind "List" in version "{api_version}"; '
                       "ensure CRDs are installed first")]
    assert result.crs == []


@pytest.mark.parametrize("api_version", ["apps/v1/x", "v1/x/y", "example.org/v1/x", "a/b/c/d"])
def test_an_object_whose_apiversion_has_a_second_slash_is_refused_as_kubectl_refuses_it(api_version: str) -> None:
    """Any group's: kubectl's client validation parses the apiVersion first (``unexpected GroupVersion string:
    apps/v1/x``, kubectl v1.37.1 ``create --dry-run=client``), so the document is an error on its apiVersion,
    never passed over as an object of a group the validator cannot know."""
    result = run(f"apiVersion: {api_version}\nkind: ConfigMap\nmetadata: {{name: c}}\n")
    assert [(f.field, f.message) for f in result.findings] == [("apiVersion", f"unexpected GroupVersion string: {api_version}")]
    assert result.others == []
