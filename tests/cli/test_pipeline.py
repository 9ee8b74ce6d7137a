"""The pipeline's rules across documents (each CR alone is the validator's business)."""

from __future__ import annotations

import re

import pytest
from memcached_gitops.foundation.files import BUILT
from memcached_gitops.render import DEFAULT_IMAGE
from memcached_gitops.schemas import Validator

from memcached_gitops.pipeline import process
from tests.conftest import crd_named
from tests.differential import our_verdict
from tests.stream_cases import CASES, StreamCase


def cr(name: str, namespace: str | None = None, size: int = 1) -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return f"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: {name}{ns}}}\nspec: {{size: {size}}}\n"


def run(*files: tuple[str, str], do_render: bool = True):
    return process(list(files), Validator(crd_named("builtin")), DEFAULT_IMAGE, do_render)


def test_a_second_cr_of_the_same_namespace_and_name_is_a_warning_pointing_at_the_first() -> None:
    result = run(("a.yaml", cr("web") + "---\n" + cr("other")), ("b.yaml", "# again\n" + cr("web", size=2)))
    assert [(f.file, f.line, f.column, f.severity, f.field) for f in result.findings] == [
        ("b.yaml", 4, 12, "warning", "metadata.name")]
    assert result.findings[0].message == (
        'Duplicate value: "web": already defined at a.yaml:3:12; kubectl apply keeps the later one, kustomize refuses both')
    # still rendered: the warning does not change output
    assert len(result.crs) == 3 and [m["kind"] for m in result.rendered].count("Deployment") == 3


def test_the_same_name_in_other_namespaces_or_by_generate_name_is_no_duplicate() -> None:
    generated = cr("x").replace("name: x", "generateName: web-")
    # validate only: a CR with generateName alone is valid, but cannot be rendered (no name)
    result = run(("a.yaml", "---\n".join([cr("web"), cr("web", "shop"), cr("web", "cdn"), generated, generated])), do_render=False)
    assert [(f.field, f.severity) for f in result.findings] == [("metadata.generateName", "warning")] * 2  # no duplicate
    assert [f.message.split(":")[0] for f in run(("a.yaml", cr("web", "shop") + "---\n" + cr("web", "shop"))).findings] == [
        "Duplicate value"]


def test_each_kustomize_build_is_compared_for_duplicates_within_itself_only() -> None:
    """Each kustomize build is an application of its own (Argo CD and Flux deploy it alone): two overlays
    named in one run (one per cluster, keeping the base's names and namespace) hold no duplicate of each
    other, nor of the files they are built from; a CR twice in one build is one."""
    eu, us = "apps/overlays/eu" + BUILT, "apps/overlays/us" + BUILT
    apart = run(("apps/base/cr.yaml", cr("web", "shop")), (eu, cr("web", "shop")), (us, cr("web", "shop", size=2)))
    assert apart.findings == [] and len(apart.crs) == 3
    twice = run((eu, cr("web", "shop") + "---\n" + cr("web", "shop")), (us, cr("web", "shop")))
    assert [(f.file, f.message.split(":")[0]) for f in twice.findings] == [(eu, "Duplicate value")]


LIST_ITEM = "- metadata: {name: l, namespace: default}\n  spec: {size: 9}\n"


def test_every_object_with_an_items_list_is_flattened_as_kubectl_does() -> None:
    """kube-apiserver v1.36.2 through kubectl: a MemcachedList's item without kind or apiVersion is a
    Memcached, and so is one in a ConfigMap given an items list; both are refused for size 9 with
    these words (docs/design/kubectl-reader.md 3.2-3.5)."""
    words = "spec.size: Invalid value: 9: spec.size in body should be less than or equal to 3"
    typed = LIST_ITEM.replace("- metadata", "- apiVersion: cache.example.com/v1alpha1\n  kind: Memcached\n  metadata")
    for text in ("apiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems:\n" + LIST_ITEM,
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\nitems:\n" + typed):
        found = [f"{f.field}: {f.message}" for f in run(("l.yaml", text)).errors]
        assert found == [words], text
    valid = run(("l.yaml", "apiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems:\n" + LIST_ITEM.replace("9", "2")))
    assert len(valid.crs) == 1 and not valid.errors and valid.others == [], "the container itself is not an object sent"


def test_a_kindless_item_takes_its_containers_kind_less_a_list_suffix_only_where_there_is_one() -> None:
    """apimachinery's TrimSuffix (helpers.go:494, the rule ``item_kind`` follows; this case is not in the
    recorded ones): a ``Memcached`` document with an items list gives a kindless item the kind
    ``Memcached`` whole, as ``MemcachedList`` does; never the kind cut short."""
    for kind, meta in (("Memcached", "metadata: {name: m}\n"), ("MemcachedList", "")):  # a list's ListMeta has no name
        text = f"apiVersion: cache.example.com/v1alpha1\nkind: {kind}\n{meta}items:\n"
        refused = run(("l.yaml", text + LIST_ITEM))
        assert [f"{f.field}: {f.message}" for f in refused.errors] == [
            "spec.size: Invalid value: 9: spec.size in body should be less than or equal to 3"], kind
        valid = run(("l.yaml", text + LIST_ITEM.replace("9", "2")))
        assert [c["kind"] for c in valid.crs] == ["Memcached"] and not valid.errors, kind


def test_a_v1_lists_items_inherit_nothing() -> None:
    """kind List less List is nothing to inherit, and kubectl validates a v1 List's items as written
    before it decodes them: an item without kind and apiVersion is refused with "[apiVersion not set,
    kind not set]" (kube-apiserver v1.36.2, kubectl v1.37.1)."""
    result = run(("l.yaml", "apiVersion: v1\nkind: List\nitems:\n" + LIST_ITEM))
    assert not result.crs and [(f.field, f.message) for f in result.errors] == [
        ("items[0].apiVersion", "apiVersion not set"), ("items[0].kind", "kind not set")]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_stream_case_gets_kubectls_verdict(case: StreamCase) -> None:
    """Each reader decision's recorded verdict (tests/stream_cases.py: kubectl v1.37.1 against
    kube-apiserver v1.36.2), in kubectl's mode: every document must be an object."""
    assert our_verdict(case.data, Validator(crd_named("builtin"))).accepted == case.accept, case.why


#: A JSON run after U+00A0 is one YAML chunk, of which go-yaml reads the first value. Its reader
#: checks characters as it decodes 512-byte windows of raw input, only as far as the scanner goes
#: (the first token after the document: line 3's "{"); libyaml checks its whole 16 KiB window.
#: kubectl v1.37.1 with kube-apiserver v1.36.2: U+FFFE 709 bytes in (the second window) is never
#: seen and the CR is created; 409 bytes in, the file is refused (map row 5.7).
_CR_JSON = b'{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}}'


def _past_the_first_value(pad: int) -> bytes:
    return "\u00a0".encode() + _CR_JSON + b'\n{"b": 1}\n{"c": "' + b"y" * pad + "\ufffe".encode() + b'"}\n'


def test_a_character_yaml_refuses_in_go_yamls_read_window_is_refused() -> None:
    assert not our_verdict(_past_the_first_value(300), Validator(crd_named("builtin"))).accepted


@pytest.mark.xfail(strict=True, reason="map row 5.7: go-yaml checks characters only as far as it reads; libyaml further")
def test_a_character_yaml_refuses_beyond_go_yamls_read_window_is_not_seen() -> None:
    assert our_verdict(_past_the_first_value(600), Validator(crd_named("builtin"))).accepted


def test_a_list_of_a_kind_another_crd_of_the_file_serves_is_not_judged() -> None:
    """When the --crd file has other CRDs of the CRD's group, the validator does not know every kind
    and version the group serves: a list of such a kind is flattened, not refused as unmappable."""
    crd = crd_named("builtin")._replace(siblings=frozenset({("cache.example.com", "Shard")}))
    text = "apiVersion: cache.example.com/v1alpha1\nkind: ShardList\nitems:\n- " + cr("web").replace("\n", "\n  ")
    found = process([("l.yaml", text)], Validator(crd), DEFAULT_IMAGE, do_render=False).findings
    assert [f.text() for f in found if f.severity == "error"] == []
    alone = process([("l.yaml", text)], Validator(crd_named("builtin")), DEFAULT_IMAGE, do_render=False).findings
    assert [f.message.split(":")[0] for f in alone] == ["resource mapping not found"]


def test_an_item_with_a_kind_or_an_apiversion_of_its_own_inherits_neither() -> None:
    """apimachinery fills in a list item's kind and apiVersion only when both are missing (helpers.go:492-509,
    ``lists.list_items``): an item of a MemcachedList that names its kind but not its apiVersion, or the
    reverse, is sent as written and refused for what it lacks, never completed from the list."""
    head = "apiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems:\n"
    kind_only = run(("l.yaml", head + "- kind: Memcached\n  metadata: {name: a}\n  spec: {size: 2}\n"))
    assert not kind_only.crs and [f.message for f in kind_only.errors] == ["apiVersion not set"], kind_only.findings
    version_only = run(("l.yaml", head + "- apiVersion: cache.example.com/v1alpha1\n  metadata: {name: a}\n  spec: {size: 2}\n"))
    assert not version_only.crs and [f.message for f in version_only.errors] == ["kind not set"], version_only.findings


def test_an_apiversion_without_kind_or_metadata_is_no_object_but_with_metadata_it_is_judged() -> None:
    """A repository's Helm Chart.yaml has an apiVersion and neither kind nor metadata, and a values file may
    have a metadata map and no apiVersion: both are passed over, counted, never refused. An apiVersion with
    a metadata map (a ConfigMap that lost its kind) was meant as an object, and is refused with kubectl's words."""
    chart = run(("Chart.yaml", "apiVersion: v2\nname: cache\nversion: 0.1.0\n"))
    assert not chart.findings and chart.not_objects == ["Chart.yaml:1: not a Kubernetes object (no kind)"], chart.findings
    kindless = run(("cm.yaml", "apiVersion: v1\nmetadata: {name: settings}\ndata: {a: b}\n"))
    assert [f.message for f in kindless.errors] == ["kind not set"] and not kindless.not_objects
    values = run(("values.yaml", "metadata: {name: settings}\ndata: {a: b}\n"))
    assert not values.findings and len(values.not_objects) == 1, "a metadata map alone is no object either"


@pytest.mark.parametrize("config", [
    "apiVersion: kustomize.config.k8s.io/v1beta1\nmetadata: {name: overlay}\nresources: [cr.yaml]\n",
    "apiVersion: kustomize.config.k8s.io/v1beta1\nmetadata: {}\nnamespace: shop\n",
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nmetadata: {}\npatches: []\n",
])
def test_kustomizes_configuration_is_passed_over_before_its_kind_is_asked_for(config: str) -> None:
    """kustomize's own configuration (kustomize.config.k8s.io) is never a manifest: kustomize reads it
    without a kind (a Kustomization is assumed), so it is passed over as such, counted, before kubectl's
    "kind not set" is asked of it, and never judged for a name."""
    result = run(("apps/a.yaml", config + "---\n" + cr("web")))
    assert result.findings == [], [f.text() for f in result.findings]
    assert len(result.passed_over) == 1 and result.passed_over[0].startswith("apps/a.yaml: "), result.passed_over
    assert len(result.crs) == 1 and result.others == []


@pytest.mark.parametrize("field", ["labels", "annotations"])
def test_a_list_kubectl_refuses_on_the_client_sends_none_of_its_items(field: str) -> None:
    """kubectl validates a v1 List on the client before it sends any item (NoDoubleKeySchema, KC
    pkg/validation/schema.go:42-55): a key written twice in the list's own metadata refuses the whole
    list, so none of its items (valid as they are) is judged, counted as valid, or rendered."""
    item = '{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "web"}, "spec": {"size": 1}}'
    doc = f'{{"apiVersion": "v1", "kind": "List", "metadata": {{"{field}": {{"a": "1", "a": "2"}}}}, "items": [{item}]}}\n'
    result = run(("list.json", doc))
    assert [(f.field, f.message) for f in result.findings] == [(f"metadata.{field}", "duplicate key: a")], result.findings
    assert result.crs == [] and result.rendered == []


def test_a_build_checked_only_for_its_errors_spends_the_runs_yaml_nodes_too() -> None:
    """validate reads each kustomization's build for its problems alone (its objects are the files' again),
    but its nodes are parsed all the same: they come out of the run's one budget, so files and builds
    that fit it apart but not together are refused where the budget ran out."""
    from memcached_gitops.foundation.yamlreader import NodeBudget

    from memcached_gitops.pipeline import TooManyObjects

    maps = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nx: [" + "{}," * 179 + "{}]\n"
    build = "apps" + BUILT
    sources = [("apps/maps.yaml", maps), (build, maps)]
    validator = Validator(crd_named("builtin"))
    apart = process(sources[:1], validator, DEFAULT_IMAGE, False, checked_only=frozenset({build}), nodes=NodeBudget(300))
    assert apart.findings == [] and len(apart.others) == 1
    with pytest.raises(TooManyObjects, match=rf"^{re.escape(build)}:5:\d+: more than 300 YAML nodes"):
        process(sources, validator, DEFAULT_IMAGE, False, checked_only=frozenset({build}), nodes=NodeBudget(300))


@pytest.mark.parametrize(("items", "word"), [("5", "number"), ("1.5", "number"), ("true", "bool"), ("false", "bool"),
                                             ("x", "string"), ("{a: 1}", "object")])
def test_items_that_are_no_array_are_refused_in_encoding_jsons_words(items: str, word: str) -> None:
    """A list whose ``items`` is no array is refused before any item is sent, in kubectl's words: the
    UnmarshalTypeError of encoding/json, which names the JSON type it met (a YAML ``true`` is a bool,
    never a number, though Python counts it among the ints)."""
    result = run(("l.yaml", f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\nitems: {items}\n"))
    assert [(f.field, f.message) for f in result.errors] == [
        ("items", f"cannot unmarshal {word} into Go struct field decodeList.items of type []json.RawMessage")]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: Groups that are kustomize's, and groups that only start or end like it (a CRD's group of its choosing).
GROUPS = ["kustomize.config.k8s.io", "kustomize.config.k8s.io.example.com", "my.kustomize.config.k8s.io", "config.k8s.io",
          "kustomize.config.k8s", "kustomize-config.k8s.io"]


@settings(max_examples=60, deadline=None)
@given(group=st.sampled_from(GROUPS), version=st.sampled_from(["v1beta1", "v1alpha1", "v1"]),
       kind=st.sampled_from(["Kustomization", "Component", "ConfigMap"]))
def test_only_kustomizes_own_group_is_passed_over_as_its_configuration(group: str, version: str, kind: str) -> None:
    """An object is kustomize's configuration exactly when its group is kustomize.config.k8s.io, in any
    version and under any kind; a group that only starts or ends like it is another API's, and its
    object is emitted as any other (never passed over unseen)."""
    result = run(("apps/a.yaml", f"apiVersion: {group}/{version}\nkind: {kind}\nmetadata: {{name: x}}\n"))
    if group == "kustomize.config.k8s.io":
        assert len(result.passed_over) == 1 and result.others == [], result.passed_over
    else:
        assert result.passed_over == [] and [o["apiVersion"] for o in result.others] == [f"{group}/{version}"], result.findings


@pytest.mark.parametrize("api_version", ["autoscaling/v1", "autoscaling/v2"])
def test_every_version_the_server_serves_of_a_built_in_kind_is_mapped(api_version: str) -> None:
    """A built-in kind is mapped in each group-version kube-apiserver serves it in (its discovery): a
    HorizontalPodAutoscaler of autoscaling/v1, still served beside v2, is passed through unjudged as
    kubectl sends it, never refused as a kind with no mapping."""
    hpa = (f"apiVersion: {api_version}\nkind: HorizontalPodAutoscaler\nmetadata: {{name: h}}\n"
           "spec: {maxReplicas: 2, scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}}\n")
    result = process([("hpa.yaml", hpa)], Validator(crd_named("builtin")), DEFAULT_IMAGE)
    assert not result.findings and [o["kind"] for o in result.others] == ["HorizontalPodAutoscaler"], result.findings


@pytest.mark.parametrize(("api_version", "kind"), [("policy/v1beta1", "PodDisruptionBudget"), ("apps/v1beta2", "Deployment"),
                                                   ("autoscaling/v2beta2", "HorizontalPodAutoscaler")])
def test_a_version_a_built_in_group_no_longer_serves_is_refused_as_kubectl_refuses_it(api_version: str, kind: str) -> None:
    """A built-in group's version that kube-apiserver v1.36 no longer serves (its discovery lists only
    the current ones) has no mapping: kubectl apply refuses the object, so the file is refused here
    with kubectl's words, never passed through to fail at the sync."""
    doc = f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\nspec: {{}}\n"
    result = process([("old.yaml", doc)], Validator(crd_named("builtin")), DEFAULT_IMAGE)
    assert not result.others, result.others
    assert [f.message for f in result.findings if "resource mapping not found" in f.message], result.findings


def _typed_list(field: str, value: object, meta: bool) -> str:
    import json

    doc = {"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {},
           "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]}
    (doc["metadata"] if meta else doc)[field] = value
    return json.dumps(doc)


def _properties(definition: str) -> dict:
    from tests.core_types import definitions

    return definitions()[definition]["properties"]


def test_a_typed_list_with_each_field_the_servers_schema_gives_it_is_taken_and_one_more_is_not() -> None:
    """kubectl validates a typed list (``ConfigMapList``) against the OpenAPI the API server publishes for it
    (kubernetes-validate holds the same schema): a list holding every one of its fields is taken, and a field
    beside them is unknown."""
    import json

    doc = json.loads(_typed_list("resourceVersion", "1", True))
    assert set(doc) == set(_properties("io.k8s.api.core.v1.ConfigMapList"))
    assert run(("l.yaml", json.dumps(doc))).errors == []
    result = run(("l.yaml", _typed_list("x-extra", 1, False)))
    assert [(f.field, f.message) for f in result.errors] == [("x-extra", 'unknown field "x-extra"')]


def _example_of(schema: dict) -> object:
    """A value of an OpenAPI schema node of kubernetes-validate's (its required fields only, for an object)."""
    from tests.core_types import definitions

    if "$ref" in schema:
        return _example_of(definitions()[schema["$ref"].rsplit("/", 1)[-1]])
    kind = schema.get("type")
    kind = next(t for t in kind if t != "null") if isinstance(kind, list) else kind
    if kind == "object":
        return {k: _example_of(schema["properties"][k]) for k in schema.get("required", [])}
    return {"integer": 1, "array": [], "boolean": True}.get(kind, "x")


@pytest.mark.parametrize("field", sorted(_properties("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")))
def test_each_field_the_servers_schema_gives_a_lists_metadata_is_no_unknown_field(field: str) -> None:
    """A typed list's metadata is ListMeta, and kubectl validates it against the OpenAPI of the API server the
    product follows (v1.36, as kubernetes-validate holds it): each of ListMeta's fields there, set, is taken
    (``kubectl get -o yaml`` writes them), never said to be an unknown field."""
    value = _example_of(_properties("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")[field])
    assert run(("l.yaml", _typed_list(field, value, True))).errors == []


#: What kube-apiserver's OpenAPI names with a group-version-kind but serves as no resource of its own: the meta
#: types every group carries, and the kinds of subresources (deployments/scale, pods/eviction,
#: serviceaccounts/token) and of admission webhooks' requests.
NOT_RESOURCES = {"DeleteOptions", "WatchEvent", "Status", "APIGroup", "APIVersions", "Scale", "Eviction", "TokenRequest"}


def _served_by_the_servers_schema() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every resource of a GA group-version (v1, v2: served by default) in the OpenAPI of
    the API server the product follows, as kubernetes-validate holds it."""
    from tests.core_types import definitions

    found = set()
    for definition in definitions().values():
        for gvk in definition.get("x-kubernetes-group-version-kind", []):
            kind, version = gvk["kind"], gvk["version"]
            if version in ("v1", "v2") and gvk["group"] != "admission.k8s.io" and kind not in NOT_RESOURCES and not kind.endswith("List"):
                found.add((f"{gvk['group']}/{version}".lstrip("/"), kind))
    return sorted(found)


@pytest.mark.parametrize(("api_version", "kind"), _served_by_the_servers_schema())
def test_each_kind_the_api_server_serves_is_another_object_never_an_unserved_kind(api_version: str, kind: str) -> None:
    """Every resource kind of a built-in group-version the API server serves by default passes as another object
    (kubectl would send it), and the same kind misspelt in that group-version is refused as the server refuses a
    kind it does not serve (``no matches for kind``)."""
    doc = f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n"
    result = run(("a.yaml", doc), do_render=False)
    assert result.errors == [] and len(result.others) == 1, [f.text() for f in result.errors]
    refused = run(("a.yaml", doc.replace(f"kind: {kind}", f"kind: {kind}x")), do_render=False)
    assert [f.message for f in refused.errors] == [f'resource mapping not found: no matches for kind "{kind}x" in version '
                                                   f'"{api_version}"; ensure CRDs are installed first']


@pytest.mark.parametrize("items", ["~", "x", "5", "{a: 1}"], ids=["null", "string", "number", "object"])
def test_a_list_item_whose_items_is_no_array_is_sent_as_an_object_never_refused_as_a_nested_list(items: str) -> None:
    """apimachinery's IsList takes an item for a list only when its ``items`` is an array (unstructured.go:54-61):
    an item with ``items: ~`` or ``items: x`` is no nested list, and kubectl sends it as the object it is. The
    server then judges ``items`` as any field: an unknown field (refused with --validate=strict, pruned and the
    CR created without it), never "a list item that is itself a list", which would refuse the CR under
    --no-strict too. An item whose ``items`` is an array is the nested list kubectl cannot flatten."""
    item = cr("web", "shop", size=2).replace("\n", "\n  ").rstrip() + f"\n  items: {items}\n"
    text = "apiVersion: v1\nkind: List\nitems:\n- " + item
    strict = run(("l.yaml", text))
    last = text.count("\n")  # the item's own ``items``, its last line
    assert [(f.line, f.field, f.message) for f in strict.findings] == [(last, "items", 'unknown field "items"')], strict.findings
    assert not strict.crs and not strict.rendered
    pruned = process([("l.yaml", text)], Validator(crd_named("builtin"), strict=False), DEFAULT_IMAGE)
    assert [(f.severity, f.message) for f in pruned.findings] == [("warning", 'unknown field "items"')], pruned.findings
    assert [c["metadata"]["name"] for c in pruned.crs] == ["web"] and "items" not in pruned.crs[0]
    assert "Deployment" in [m["kind"] for m in pruned.rendered]
    nested = run(("l.yaml", text.replace(f"items: {items}\n", "items: []\n")))
    assert [f.message for f in nested.errors] == [
        "a list item that is itself a list (items) cannot be flattened: kubectl refuses it"] and not nested.crs


@pytest.mark.parametrize(("kind", "api_version"), [("5", "true"), ("5", None), (None, "[v1]"), ("{a: b}", "''")],
                         ids=["number-and-bool", "number-alone", "array-alone", "map-and-empty"])
def test_a_list_items_kind_or_apiversion_that_is_no_string_counts_as_missing(kind: str | None, api_version: str | None) -> None:
    """unstructured's GetKind and GetAPIVersion read a field that is no string (a number, a map, an array) as
    empty, and apimachinery fills in an item's kind and apiVersion when both read empty (helpers.go:492-509):
    a MemcachedList's item whose kind is ``5`` is sent as a Memcached, written over, and created, never
    refused for a kind or apiVersion it does not have."""
    fields = (f"kind: {kind}\n  " if kind else "") + (f"apiVersion: {api_version}\n  " if api_version else "")
    text = "apiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems:\n- " + fields + "metadata: {name: web}\n  spec: {size: 2}\n"
    result = run(("l.yaml", text))
    assert result.findings == [], [f.text() for f in result.findings]
    assert [(c["apiVersion"], c["kind"]) for c in result.crs] == [("cache.example.com/v1alpha1", "Memcached")]
    assert [m["kind"] for m in result.rendered].count("Deployment") == 1


@pytest.mark.parametrize("metadata", ["settings", "~", "[a, b]", "3"])
def test_an_apiversion_beside_a_metadata_that_is_no_map_is_no_object(metadata: str) -> None:
    """A document is meant as an object when it has an apiVersion and a metadata map (is_kubernetes_object):
    a Helm values file or a tool's config may have an ``apiVersion`` and a ``metadata`` key holding a string,
    null or a list; that is no ObjectMeta, so the file is passed over, counted, never refused for the kind
    it was never meant to have. The same document with a metadata map is judged."""
    values = run(("values.yaml", f"apiVersion: v1\nmetadata: {metadata}\ndata: {{a: b}}\n"))
    assert values.findings == [] and values.not_objects == ["values.yaml:1: not a Kubernetes object (no kind)"], values.findings
    meant = run(("cm.yaml", "apiVersion: v1\nmetadata: {name: settings}\ndata: {a: b}\n"))
    assert [f.message for f in meant.errors] == ["kind not set"] and meant.not_objects == []


def _list_group_versions() -> list[tuple[str, bool]]:
    """(apiVersion, served) of a ``List`` in each group the validator knows, but the core group whose ``v1 List``
    is the client's own: the versions kube-apiserver serves (lists.BUILTIN_KINDS) and the CRD's, and beside
    them a version the same group does not serve."""
    from memcached_gitops.lists import BUILTIN_KINDS

    crd = crd_named("builtin")
    served = {gv: True for gv in BUILTIN_KINDS if "/" in gv} | {f"{crd.group}/{v}": True for v in crd.versions}
    for group in sorted({gv.rpartition("/")[0] for gv in served}):
        served[next(f"{group}/{v}" for v in ("v1beta1", "v1alpha1", "v2beta1", "v9") if f"{group}/{v}" not in served)] = False
    return sorted(served.items()) + [("extensions/v1beta1", False)]  # a group removed whole (v1.22)


@pytest.mark.parametrize(("api_version", "served"), _list_group_versions())
def test_a_list_in_a_group_version_the_server_does_not_serve_is_refused_unmapped(api_version: str, served: bool) -> None:
    """kubectl maps a list document before it flattens it (CR pkg/resource/mapper.go:61-73), and discovery maps
    ``List`` only in the group-versions the server serves: a ``kind: List`` of ``apps/v1beta1`` (old manifests)
    or of a version the CRD does not serve is refused with "no matches for kind", none of its items sent,
    counted valid or rendered; the same List in a served group-version is flattened and its CR rendered."""
    item = "{apiVersion: cache.example.com/v1alpha1, kind: Memcached, metadata: {name: web, namespace: shop}, spec: {size: 2}}"
    result = run(("l.yaml", f"apiVersion: {api_version}\nkind: List\nitems: [{item}]\n"))
    if served:
        assert result.findings == [] and len(result.crs) == 1 and result.rendered, [f.text() for f in result.findings]
        return
    assert [(f.line, f.field, f.message) for f in result.findings] == [
        (2, "kind", f'resource mapping not found: no matches for kind "List" in version "{api_version}"; '
                    "ensure CRDs are installed first")], [f.text() for f in result.findings]
    assert result.crs == [] and result.rendered == [] and result.others == []


@pytest.mark.parametrize("kind", ["Ingress", "Deployment", "DaemonSet", "NetworkPolicy"])
def test_an_object_of_the_removed_extensions_group_is_refused_unmapped_as_kubectl_refuses_it(kind: str) -> None:
    """``extensions/v1beta1`` (Ingress, Deployment, DaemonSet, NetworkPolicy in manifests older than v1.22) is
    served by no kube-apiserver since v1.22 and can be served by no CRD (a CRD's group needs a dot): kubectl's
    discovery has no mapping for it, so the document is an error naming the version, never passed over as
    another object while the apply that follows fails."""
    result = run(("old.yaml", f"apiVersion: extensions/v1beta1\nkind: {kind}\nmetadata: {{name: web}}\nspec: {{}}\n"))
    assert [(f.line, f.field, f.message) for f in result.findings] == [
        (2, "kind", f'resource mapping not found: no matches for kind "{kind}" in version "extensions/v1beta1"; '
                    "ensure CRDs are installed first")], [f.text() for f in result.findings]
    assert result.others == []
