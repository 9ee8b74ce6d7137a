"""The Service and PodDisruptionBudget rendered beside each Deployment (render/companions.py)."""

from __future__ import annotations

import re

import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.render import render
from memcached_gitops.render.companions import object_name
from memcached_gitops.schemas.objectmeta import dns1123_subdomain_errors

from tests.support.crs import memcached_cr

KUBERNETES_VERSION = "1.33"


def cr(name: str, size: int, namespace: str | None = "shop", port: int = 11211) -> dict:
    return memcached_cr(name, namespace, {"size": size, "containerPort": port})


def test_a_headless_service_selects_the_deployments_pods_on_the_named_port() -> None:
    deployment, service, pdb = render(cr("sessions", 3, port=21211))
    assert service["metadata"] == {"name": "sessions-memcached", "namespace": "shop", "labels": deployment["metadata"]["labels"]}
    assert service["spec"]["clusterIP"] == "None", "headless: clients that hash keys see every Pod"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"] == [{"name": "memcached", "port": 21211, "protocol": "TCP", "targetPort": "memcached"}]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"] == "memcached"
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": deployment["spec"]["selector"]["matchLabels"]}}


@pytest.mark.parametrize("size", [0, 1])
def test_no_budget_below_two_pods(size: int) -> None:
    """A budget that forbids evicting the only Pod would block every drain of its node."""
    assert [m["kind"] for m in render(cr("one", size))] == ["Deployment", "Service"]


def test_no_namespace_when_the_cr_has_none() -> None:
    for manifest in render(cr("x", 2, namespace=None)):
        assert "namespace" not in manifest["metadata"]


@pytest.mark.parametrize("name", ["catalog.v2", "0", "9lives", "a" * 63, "a.b" * 21, "x-" * 30 + "y"])
def test_every_cr_name_gives_a_valid_service_name_unique_per_cr(name: str) -> None:
    service_name = object_name(name)
    assert len(service_name) <= 63 and service_name.endswith("-memcached")
    assert service_name[0].isalpha() and not dns1123_subdomain_errors(service_name)
    for manifest in render(cr(name, 2)):
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def test_names_that_would_meet_after_shortening_stay_apart() -> None:
    assert object_name("catalog.v2") != object_name("catalog-v2")
    assert object_name("a" * 60 + "b") != object_name("a" * 60 + "c")
    assert object_name("sessions") == "sessions-memcached", "an ordinary name reads as it is"


def test_pods_mount_no_token_and_spread_over_nodes_then_zones() -> None:
    deployment = render(cr("sessions", 3))[0]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False, "memcached never calls the API server"
    assert pod["topologySpreadConstraints"] == [
        {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": "memcached"}}, "matchLabelKeys": ["app.kubernetes.io/instance"],
         "maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway"}
        for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")]
    # the CR's own selector is labelSelector plus matchLabelKeys read from its Pods' labels
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": labels["app.kubernetes.io/instance"]} == \
        deployment["spec"]["selector"]["matchLabels"]
    assert render(cr("other", 3))[0]["spec"]["template"]["spec"] == pod, "one pod spec for every CR (one copy in the cache)"


def sha8(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:8]


@pytest.mark.parametrize(("cr_name", "expected"), [
    ("a" * 53, "a" * 53 + "-memcached"),                       # 63 characters: kept as it is
    ("a" * 54, "a" * 44 + f"-{sha8('a' * 54)}-memcached"),      # 64: cut, with the hash
    ("catalog.v2", f"catalog-v2-{sha8('catalog.v2')}-memcached"),
    ("a.b", f"a-b-{sha8('a.b')}-memcached"),                   # a letter first stays first
    ("9lives", f"m9lives-{sha8('9lives')}-memcached"),         # a DNS-1035 label starts with a letter
    ("a" * 43 + ".b" + "c" * 20, "a" * 43 + f"-{sha8('a' * 43 + '.b' + 'c' * 20)}-memcached"),  # no dash before the hash
])
def test_the_service_name_rule_exactly(cr_name: str, expected: str) -> None:
    assert object_name(cr_name) == expected and len(expected) <= 63


@pytest.mark.parametrize("namespace", [None, ""])
def test_an_empty_namespace_is_no_namespace_on_every_object(namespace: str | None) -> None:
    """``namespace: ""`` is no namespace (kubectl and the API server take the request's, as for none):
    no object of the rendering names one, so the Deployment and its companions always land together."""
    metadata = {"name": "x"} if namespace is None else {"name": "x", "namespace": namespace}
    cr = {"metadata": metadata, "spec": {"size": 2, "containerPort": 11211,
                                          "metrics": {"enabled": True, "podMonitor": {"enabled": True}}}}
    manifests = render(cr)
    assert [m["kind"] for m in manifests] == ["Deployment", "Service", "PodDisruptionBudget", "PodMonitor"]
    for manifest in manifests:
        assert "namespace" not in manifest["metadata"], manifest["kind"]


#: a DNS-1035 label (apimachinery validation.go, IsDNS1035Label): a Service's name
DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_labels = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
#: CR names: DNS-1123 subdomains of any length up to 253, short ones and long ones ending alike
cr_names = st.one_of(
    st.lists(_labels, min_size=1, max_size=12).map(".".join),
    st.tuples(_labels, st.integers(40, 250)).map(lambda t: f"{t[0]}.{'a' * t[1]}"[:252]),
).filter(lambda n: not dns1123_subdomain_errors(n))


@st.composite
def neighbour(draw: st.DrawFn, name: str) -> str:
    """A second name beside ``name``: a dot and a dash swapped, one character changed or added at the
    end, a letter put in front, the name doubled."""
    at = draw(st.integers(0, len(name) - 1))
    forms = [name.replace(".", "-", 1), name.replace("-", ".", 1), name[:at] + ("b" if name[at] != "b" else "c") + name[at + 1:],
             name + "x", name + "0", "m" + name, f"{name}.{name}"]
    return draw(st.sampled_from([f for f in forms if f != name and not dns1123_subdomain_errors(f)] or [name + "x"]))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_any_two_cr_names_give_two_valid_service_names(data: st.DataObject) -> None:
    """For any CR name and a second one beside it (a dot for a dash, one character more or other,
    past the length where names are cut): each gives a DNS-1035 label of at most 63 characters ending
    in ``-memcached``, the name itself with the suffix when that is one, and never the other's."""
    first = data.draw(cr_names)
    second = data.draw(neighbour(first))
    for name in (first, second):
        made = object_name(name)
        assert len(made) <= 63 and DNS1035.fullmatch(made) and made.endswith("-memcached")
        if len(name + "-memcached") <= 63 and DNS1035.fullmatch(name + "-memcached"):
            assert made == name + "-memcached"
    assert object_name(first) != object_name(second)


def _markers(node: dict, value: object, path: tuple, merge_keys: dict, atomic: set) -> None:
    """The server-side-apply markers of Kubernetes' OpenAPI met along ``value``: list keys by path, and
    the atomic maps and structs (an atomic list item as ``path + ("item",)``)."""
    from tests.core_types import definitions

    if "$ref" in node:
        node = definitions()[node["$ref"].rsplit("/", 1)[-1]]
    if node.get("x-kubernetes-map-type") == "atomic":
        atomic.add(path)
        return
    if isinstance(value, list) and "items" in node:
        if node.get("x-kubernetes-list-type") == "map":
            merge_keys[path] = tuple(node["x-kubernetes-list-map-keys"])
        for item in value:
            item_node = node["items"]
            item_node = definitions()[item_node["$ref"].rsplit("/", 1)[-1]] if "$ref" in item_node else item_node
            if item_node.get("x-kubernetes-map-type") == "atomic":
                atomic.add(path + ("item",))
            else:
                _markers(item_node, item, path, merge_keys, atomic)
    elif isinstance(value, dict):
        for key, child in value.items():
            if key in node.get("properties", {}):
                _markers(node["properties"][key], child, path + (key,), merge_keys, atomic)


@pytest.mark.parametrize("kind", ["Service", "PodDisruptionBudget"])
def test_each_companions_list_rules_are_its_kinds_own_openapi_markers(kind: str) -> None:
    """Drift is compared with the list and struct semantics server-side apply uses for the kind: the
    companion's rules name exactly the ``x-kubernetes-list-map-keys`` and the atomic maps and structs
    Kubernetes' OpenAPI (kubernetes-validate's) declares along the object as the reconciler applies it
    (rendered, with its controller ownerReference)."""
    from memcached_gitops.render.companions import BY_KIND

    from tests.core_types import definitions

    companion = BY_KIND[kind]
    [obj] = [m for m in render(cr("sessions", 3)) if m["kind"] == kind]
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "sessions",
                                           "uid": "u", "controller": True, "blockOwnerDeletion": True}]
    resource = companion.resource
    group = resource.group.split(".")[0] or "core"
    merge_keys: dict = {}
    atomic: set = set()
    _markers(definitions()[f"io.k8s.api.{group}.{resource.version}.{kind}"], obj, (), merge_keys, atomic)
    assert (companion.rules.merge_keys, set(companion.rules.atomic)) == (merge_keys, atomic)
