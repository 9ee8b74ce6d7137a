"""Reading a CRD: what the validator takes from it, and one-line errors for a CRD that is unusable.

A team's own CRD given with ``--crd`` is hand-edited: every field read here is checked for its
shape, so a mistake in it is an error naming the file and the field, never a traceback.
"""

from __future__ import annotations

import io
import json

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas.crd import CRD, CRDError, load_crd, parse_crd

from tests.upstream import needs_upstream, upstream

SCHEMA = {"openAPIV3Schema": {"type": "object"}}


def crd_text(**spec: object) -> str:
    """A CRD document (JSON is YAML) with ``spec`` as given; names and versions default to one each."""
    spec.setdefault("group", "example.com")
    spec.setdefault("names", {"kind": "Widget"})
    spec.setdefault("versions", [{"name": "v1", "served": True, "storage": True, "schema": SCHEMA}])
    doc = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"}, "spec": spec}
    return json.dumps(doc)


def parsed(**spec: object) -> CRD:
    return parse_crd(crd_text(**spec), "my-crd.yaml")


def error(text: str) -> str:
    with pytest.raises(CRDError) as caught:
        parse_crd(text, "my-crd.yaml")
    return str(caught.value)


def test_the_shipped_crd_is_read_with_every_name_and_its_storage_version() -> None:
    crd = load_crd()
    assert (crd.group, crd.kind, crd.plural, crd.singular) == ("cache.example.com", "Memcached", "memcacheds", "memcached")
    assert crd.namespaced is True
    assert crd.storage_version == "v1alpha1"
    assert list(crd.versions) == ["v1alpha1"] and crd.versions["v1alpha1"].status_subresource is True
    assert crd.source == "(built-in) memcached-crd.yaml"


def test_names_are_taken_from_the_crd_when_given() -> None:
    crd = parsed(names={"kind": "Widget", "plural": "widgetz", "singular": "wdg", "shortNames": ["wd", "w"]},
                 scope="Cluster")
    assert (crd.plural, crd.singular, crd.short_names) == ("widgetz", "wdg", ("wd", "w"))
    assert crd.namespaced is False
    assert crd.spellings() == {"widget", "widgetz", "wdg", "wd", "w"}
    assert crd.source == "my-crd.yaml"


def test_names_left_out_default_as_kubectl_spells_them_and_scope_defaults_to_namespaced() -> None:
    crd = parsed(names={"kind": "Widget"})
    assert (crd.plural, crd.singular, crd.short_names) == ("widgets", "widget", ())
    assert crd.namespaced is True
    assert parsed(scope="Namespaced").namespaced is True


def test_the_storage_version_is_the_one_marked_storage_even_when_listed_second_or_not_served() -> None:
    versions = [{"name": "v1", "served": True, "storage": False, "schema": SCHEMA},
                {"name": "v2", "served": False, "storage": True, "schema": SCHEMA}]
    crd = parsed(versions=versions)
    assert crd.storage_version == "v2"
    assert list(crd.versions) == ["v1"]  # only served versions are validated against
    assert parsed(versions=[{"name": "v1", "served": True, "schema": SCHEMA}]).storage_version == ""


def test_status_is_a_subresource_only_when_the_version_says_so() -> None:
    with_status = {"name": "v1", "served": True, "storage": True, "schema": SCHEMA, "subresources": {"status": {}}}
    assert parsed(versions=[with_status]).versions["v1"].status_subresource is True
    assert parsed().versions["v1"].status_subresource is False
    scale_only = {**with_status, "subresources": {"scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}}}
    assert parsed(versions=[scale_only]).versions["v1"].status_subresource is False, "a scale subresource is no status subresource"


def test_version_of_reads_group_and_version_of_an_api_version() -> None:
    crd = parsed(versions=[{"name": "v1", "served": True, "storage": True, "schema": SCHEMA}])
    assert crd.version_of("example.com/v1") is crd.versions["v1"]
    assert crd.version_of("other.com/v1") is None
    assert crd.version_of("example.com/v2") is None
    assert crd.version_of("v1") is None
    assert crd.version_of(None) is None
    assert crd.version_of(1) is None
    assert crd.api_versions() == ["example.com/v1"]


def test_a_crd_of_another_api_version_is_refused_naming_what_it_has() -> None:
    text = crd_text().replace("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
    assert error(text) == "my-crd.yaml: apiVersion must be apiextensions.k8s.io/v1, not 'apiextensions.k8s.io/v1beta1'"


def test_a_file_without_a_crd_says_so() -> None:
    assert error("kind: ConfigMap\n") == "my-crd.yaml: no CustomResourceDefinition found"


@pytest.mark.parametrize("spec", [
    {"group": ""},
    {"names": {"plural": "widgets"}},
    {"versions": []},
    {"versions": [{"name": "v1", "served": False, "storage": True, "schema": SCHEMA}]},
])
def test_a_crd_without_group_kind_or_served_version_is_refused(spec: dict) -> None:
    assert error(crd_text(**spec)) == (
        "my-crd.yaml: the CRD needs spec.group, spec.names.kind and a served version with a schema")


def test_a_served_version_without_a_schema_is_named() -> None:
    text = crd_text(versions=[{"name": "v1", "served": True, "storage": True}])
    assert error(text) == "my-crd.yaml: version 'v1' has no openAPIV3Schema"


@pytest.mark.parametrize(("spec", "message"), [
    ({"names": ["Widget"]}, "spec.names: must be a mapping"),
    ({"group": ["example.com"]}, "spec.group: must be a string"),
    ({"names": {"kind": 1}}, "spec.names.kind: must be a string"),
    ({"names": {"kind": "Widget", "plural": ["widgets"]}}, "spec.names.plural: must be a string"),
    ({"names": {"kind": "Widget", "singular": {}}}, "spec.names.singular: must be a string"),
    ({"names": {"kind": "Widget", "shortNames": "wd"}}, "spec.names.shortNames: must be a list"),
    ({"versions": {"v1": {}}}, "spec.versions: must be a list"),
    ({"versions": ["v1"]}, "spec.versions[0]: must be a mapping"),
    ({"versions": [{"served": True, "schema": SCHEMA}]}, "spec.versions[0].name: Required value"),
    ({"versions": [{"name": 1, "served": True, "schema": SCHEMA}]}, "spec.versions[0].name: must be a string"),
    ({"versions": [{"name": "v1", "served": True, "schema": []}]}, "spec.versions[0].schema: must be a mapping"),
    ({"versions": [{"name": "v1", "served": True, "schema": {"openAPIV3Schema": "object"}}]},
     "spec.versions[0].schema.openAPIV3Schema: must be a mapping"),
    ({"versions": [{"name": "v1", "served": True, "schema": SCHEMA, "subresources": ["status"]}]},
     "spec.versions[0].subresources: must be a mapping"),
])
def test_a_field_of_the_wrong_shape_is_one_line_naming_the_field(spec: dict, message: str) -> None:
    assert error(crd_text(**spec)) == f"my-crd.yaml: {message}"


def test_spec_that_is_not_a_mapping_is_named() -> None:
    doc = json.loads(crd_text())
    doc["spec"] = "x"
    assert error(json.dumps(doc)) == "my-crd.yaml: spec: must be a mapping"



UPSTREAM_KB = upstream("kubebuilder/testdata")


@needs_upstream
def test_a_file_of_many_crds_is_judged_by_its_memcached_crd() -> None:
    # kubebuilder's project-v4-multigroup dist/install.yaml: 13 CRDs, Memcached the 11th (vendored, SOURCE.md)
    crd = parse_crd((UPSTREAM_KB / "project-v4-multigroup/dist/install.yaml").read_text(), "install.yaml")
    assert (crd.group, crd.kind, list(crd.versions)) == ("example.com.testproject.org", "Memcached", ["v1alpha1"])
    assert len(crd.siblings) == 12 and ("example.com.testproject.org", "Busybox") in crd.siblings
    assert ("crew.testproject.org", "Captain") in crd.siblings and ("example.com.testproject.org", "Memcached") not in crd.siblings
    assert crd.serves_sibling("example.com.testproject.org/v1alpha1", "Busybox")
    assert crd.serves_sibling("ship.testproject.org/v1beta1", "Frigate")
    assert not crd.serves_sibling("example.com.testproject.org/v1alpha1", "Memcache")  # no CRD serves it: the server's verdict
    assert not crd.serves_sibling("example.com.testproject.org/v1alpha1", "Memcached")
    assert not crd.serves_sibling(None, "Busybox") and not crd.serves_sibling("example.com.testproject.org/v1alpha1", None)
    assert not crd.serves_sibling("example.com.testproject.org/v1alpha1", "busybox"), "a kind is matched exactly"


@needs_upstream
def test_without_a_memcached_crd_the_first_judges_and_odd_siblings_do_not_break_it() -> None:
    text = (UPSTREAM_KB / "project-v4-with-plugins/dist/install.yaml").read_text()
    docs = [d.value for d in iter_documents(text) if d.value.get("kind") == "CustomResourceDefinition"]
    others = [d for d in docs if d["spec"]["names"]["kind"] != "Memcached"]
    broken = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x"}, "spec": "oops"}
    nameless = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "y"},
                "spec": {"group": "g.example", "names": "oops"}}
    crd = parse_crd("\n---\n".join(json.dumps(d) for d in [*others, broken, nameless]), "others.yaml")
    assert crd.kind == others[0]["spec"]["names"]["kind"] and crd.source == "others.yaml"
    assert crd.siblings == {(d["spec"]["group"], d["spec"]["names"]["kind"]) for d in others[1:]} | {("", ""), ("g.example", "")}


@needs_upstream
def test_the_same_crd_twice_is_no_sibling_of_itself() -> None:
    text = (UPSTREAM_KB / "project-v4-with-plugins/config/crd/bases/example.com.testproject.org_memcacheds.yaml").read_text()
    crd = parse_crd(text + "\n---\n" + text, "twice.yaml")
    assert crd.kind == "Memcached" and crd.siblings == frozenset()


@needs_upstream
def test_the_crd_can_come_on_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (UPSTREAM_KB / "project-v4-with-plugins/dist/install.yaml").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))
    load_crd.cache_clear()
    try:
        crd = load_crd("-")
        assert crd.kind == "Memcached" and crd.source == "<stdin>" and len(crd.siblings) == 2
    finally:
        load_crd.cache_clear()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe")))
    with pytest.raises(CRDError, match="^<stdin>: cannot read the CRD: "):
        load_crd("-")
    load_crd.cache_clear()
