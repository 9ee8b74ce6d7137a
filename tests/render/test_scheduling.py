"""The CR's placement fields (nodeSelector, tolerations, affinity, priorityClassName): embedded in
the CRD as controller-gen embeds the core/v1 types, and rendered into the Pod template in the form
the API server stores."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.render import render
from memcached_gitops.render.scheduling import FIELDS, scheduling
from memcached_gitops.schemas.crd import load_crd

from tests.core_types import pod_spec_field
from tests.support.crs import memcached_cr

KUBERNETES_VERSION = "1.36.0"

#: What kube-apiserver v1.36.2 stored for a Deployment's Pod spec holding each empty form
#: (``kubectl create --dry-run=server -o json``): sent on the left, read back on the right.
STORED = [
    ({"nodeSelector": {}}, {}),
    ({"priorityClassName": ""}, {}),
    ({"tolerations": [{"key": "", "operator": "Exists", "value": "", "effect": ""},
                      {"key": "x", "tolerationSeconds": 0, "effect": "NoExecute"}]},
     {"tolerations": [{"operator": "Exists"}, {"key": "x", "tolerationSeconds": 0, "effect": "NoExecute"}]}),
    ({"affinity": {"nodeAffinity": {}, "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "k", "labelSelector": {"matchLabels": {}, "matchExpressions": []},
                                          "namespaces": []}}]},
                   "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}},
     {"affinity": {"nodeAffinity": {}, "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 1, "podAffinityTerm": {"topologyKey": "k", "labelSelector": {}}}]}, "podAntiAffinity": {}}}),
]

# an empty string in a list is an item, kept (recorded the same way)
STORED.append(({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["", "x"]}]}]}}}},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["", "x"]}]}]}}}}))

PLACED = {
    "size": 2,
    "nodeSelector": {"disk": "ssd"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "cache", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}]}}},
    "priorityClassName": "cache-critical",
}


def cr(spec: dict) -> dict:
    return memcached_cr("c", "n", {"size": 1, "containerPort": 11211, **spec})


# an empty struct behind a pointer is kept at the Pod spec's own level too (``Affinity *Affinity
# `json:"affinity,omitempty"```: omitempty leaves out a nil pointer, never one to an empty struct),
# while an unset field is no field
STORED.append(({"affinity": {}}, {"affinity": {}}))
STORED.append(({"affinity": None, "nodeSelector": None}, {}))

# a map[string]string keeps every entry, an empty value too (omitempty is a struct field's, never a map
# value's): a node selector on an empty label value selects those nodes, and matchLabels on one selects
# those Pods, not every Pod
STORED.append(({"nodeSelector": {"disk": "", "zone": "a"}}, {"nodeSelector": {"disk": "", "zone": "a"}}))
STORED.append(({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"tier": ""}}}]}}},
    {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"tier": ""}}}]}}}))


@pytest.mark.parametrize(("sent", "kept"), STORED)
def test_empty_forms_are_rendered_as_the_api_server_stores_them(sent: dict, kept: dict) -> None:
    assert scheduling(sent) == kept


def test_the_fields_land_in_the_pod_template_and_the_spread_stays() -> None:
    pod = render(cr(PLACED))[0]["spec"]["template"]["spec"]
    for field in ("nodeSelector", "tolerations", "affinity", "priorityClassName"):
        assert pod[field] == PLACED[field]
    assert [c["topologyKey"] for c in pod["topologySpreadConstraints"]] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]


def test_without_the_fields_the_pod_template_has_none_of_them() -> None:
    pod = render(cr({}))[0]["spec"]["template"]["spec"]
    assert not {"nodeSelector", "tolerations", "affinity", "priorityClassName"} & set(pod)


def test_the_rendered_deployment_shares_nothing_with_the_cr() -> None:
    """The reconciler edits what it renders (ownerReferences, ignored fields): the CR must not change."""
    source = cr(copy.deepcopy(PLACED))
    deployment = render(source)[0]
    deployment["spec"]["template"]["spec"]["tolerations"][0]["value"] = "other"
    deployment["spec"]["template"]["spec"]["nodeSelector"]["disk"] = "hdd"
    assert source["spec"]["tolerations"] == PLACED["tolerations"] and source["spec"]["nodeSelector"] == PLACED["nodeSelector"]


@pytest.mark.contract
def test_the_rendered_deployment_is_valid_for_kubernetes() -> None:
    for manifest in render(cr(PLACED)):
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("field", ["nodeSelector", "tolerations", "affinity"])
def test_the_crd_embeds_the_core_type_exactly_as_the_kubernetes_openapi_defines_it(field: str) -> None:
    """Made from kubernetes-validate's v1.36 OpenAPI by tests/core_types.py (controller-gen's way);
    a Kubernetes upgrade that changes a type fails here until the CRD is regenerated."""
    schema = load_crd().versions["v1alpha1"].schema["properties"]["spec"]["properties"][field]
    assert {k: v for k, v in schema.items() if k != "description"} == pod_spec_field(field)


# Property: Go's omitempty as a reference model, over placement trees of any shape. A Pod spec's
# placement types are structs (fields omitted when "", an empty list, nil or, for a map[string]string
# field, an empty map; an empty struct kept), string maps (every entry kept) and lists (every item
# kept, "" and {} too: a list item has no omitempty).
_LEAF_KEYS = ("key", "operator", "value", "effect", "topologyKey", "priorityClassName", "tolerationSeconds", "weight")
_STRUCT_KEYS = ("affinity", "nodeAffinity", "podAffinity", "labelSelector", "podAffinityTerm", "preference")
_LIST_KEYS = ("tolerations", "values", "namespaces", "matchExpressions", "nodeSelectorTerms")
_MAP_KEYS = ("nodeSelector", "matchLabels")
_strings = st.sampled_from(["", "x", "ssd", " ", "0", "cache"])
_label_maps = st.dictionaries(st.sampled_from(["disk", "zone", "tier", ""]), _strings, max_size=3)


def _struct(depth: int) -> st.SearchStrategy:
    """A struct: fields of any kind (a list's items are strings or structs, as in the core types)."""
    leaf = st.one_of(st.none(), _strings, st.integers(0, 3))
    inner = leaf if depth == 0 else st.one_of(leaf, _struct(depth - 1), st.lists(st.one_of(_strings, _struct(depth - 1)), max_size=3))
    return st.dictionaries(st.sampled_from(_LEAF_KEYS + _STRUCT_KEYS + _LIST_KEYS), inner, max_size=4).flatmap(
        lambda d: st.fixed_dictionaries({}, optional={k: _label_maps for k in _MAP_KEYS}).map(lambda m: {**d, **m}))


def _go_round_trip(value: object, place: str) -> object:
    """What encoding/json writes back for ``value`` decoded at ``place`` ("field:<name>" or "item"),
    with ``_OMITTED`` for a struct field omitempty leaves out."""
    if isinstance(value, dict) and place in {f"field:{k}" for k in _MAP_KEYS}:
        return dict(value) if value else _OMITTED
    if isinstance(value, dict):
        kept = {k: _go_round_trip(v, f"field:{k}") for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not _OMITTED}
    if isinstance(value, list):
        items = [_go_round_trip(v, "item") for v in value]
        return items if items or place == "item" else _OMITTED
    if place == "item":
        return value
    if value is None or value == "":
        return _OMITTED
    return value


_OMITTED = object()


def _containers(value: object) -> list[int]:
    if isinstance(value, dict):
        return [id(value)] + [i for v in value.values() for i in _containers(v)]
    if isinstance(value, list):
        return [id(value)] + [i for v in value for i in _containers(v)]
    return []


@settings(max_examples=100, deadline=None)
@given(st.fixed_dictionaries({}, optional={"nodeSelector": _label_maps, "tolerations": st.lists(_struct(1), max_size=3),
                                           "affinity": st.none() | _struct(3), "priorityClassName": _strings}))
def test_any_placement_is_rendered_as_encoding_json_writes_it_back_and_shares_nothing(spec: dict) -> None:
    """Every placement tree, whatever its depth and wherever its empty values sit, comes out as
    encoding/json's omitempty writes back what it decoded (a struct field's "", empty list or nil
    gone; a map field's empty map gone; an empty struct, a map's "" entry and a list's "" or {} item
    kept), and no map or list of the rendering is one of the CR's."""
    before = copy.deepcopy(spec)
    expected = {k: v for k, v in ((k, _go_round_trip(spec[k], f"field:{k}")) for k in FIELDS if k in spec) if v is not _OMITTED}
    out = scheduling(spec)
    assert out == expected
    assert spec == before
    assert not set(_containers(out)) & set(_containers(spec))
