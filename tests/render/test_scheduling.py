"""The CR's placement fields (nodeSelector, tolerations, affinity, priorityClassName): embedded in
the CRD as controller-gen embeds the core/v1 types, and rendered into the Pod template in the form
the API server stores."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
from memcached_gitops.render import render
from memcached_gitops.render.scheduling import scheduling
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
