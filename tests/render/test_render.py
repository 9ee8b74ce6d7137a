"""The renderer: golden output, the API server's stored forms, and properties over random CRs."""

from __future__ import annotations

import os
import re

import kubernetes_validate
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.render import DEFAULT_IMAGE, RenderError, render, selector_labels, to_json, to_yaml
from memcached_gitops.render.desired import validate_and_render
from memcached_gitops.schemas import Validator, load_crd
from memcached_gitops.schemas.crd import builtin_crd_text, parse_crd

from tests.conftest import REPO, TESTS, transcript

GOLDEN = TESTS / "golden" / "examples.yaml"
KUBERNETES_VERSION = "1.36.0"  # the API server version the transcripts were recorded from


def shipped_validator() -> Validator:
    """Built per call, not at import: a module-level instance would be built once, before
    mutation testing selects a mutant, and hide the schemas/ mutants from these tests."""
    return Validator(load_crd())


def render_text(text: str, image: str = DEFAULT_IMAGE) -> list[dict]:
    out = []
    for doc in iter_documents(text):
        validator = shipped_validator()
        if validator.claims(doc.value):
            outcome = validator.validate(doc.value)
            assert outcome.ok, outcome.errors
            out += render(outcome.obj, image)
    return out


def test_examples_match_the_golden_file() -> None:
    rendered = []
    for path in sorted((REPO / "examples" / "crs").glob("*.yaml")):
        rendered += render_text(path.read_text())
    text = to_yaml(rendered)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "rendered output changed; rerun with UPDATE_GOLDEN=1 if that is intended"


def test_defaults_from_the_crd_reach_the_deployment() -> None:
    deployment = render_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: bare}\n")[0]
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 11211
    assert "namespace" not in deployment["metadata"], "kustomize/Argo CD set the namespace when the CR has none"
    assert "ownerReferences" not in deployment["metadata"]


def test_image_override() -> None:
    cr = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: x}\n"
    deployment = render_text(cr, "registry.example/memcached:1.6.29")[0]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/memcached:1.6.29"
    assert deployment["metadata"]["labels"]["app.kubernetes.io/version"] == "1.6.29"
    by_digest = render_text(cr, "memcached@sha256:" + "a" * 64)[0]
    assert "app.kubernetes.io/version" not in by_digest["metadata"]["labels"]


def test_a_rollout_only_surges() -> None:
    """No Pod (no warm cache) is removed before its replacement is available, at any size: the
    API server's default maxUnavailable of 25% would allow one of four to go first."""
    for size in (1, 4, 10):  # beyond the shipped CRD's maximum of 3: a team's own CRD may allow it
        deployment = render({"metadata": {"name": "x"}, "spec": {"size": size, "containerPort": 11211}})[0]
        assert deployment["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}


def test_values_are_in_the_form_the_api_server_stores() -> None:
    """Transcript 25: cpu 0.1 is stored as 100m, 65536Ki as 64Mi; our quantities must be canonical."""
    stored = {}
    for ex in transcript("25")["exchanges"]:
        body = ex["response"].get("body")
        if isinstance(body, dict) and body.get("kind") == "Deployment":
            for c in body["spec"]["template"]["spec"]["containers"]:
                for section in c.get("resources", {}).values():
                    stored.update(section)
    deployment = render_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: x}\n")[0]
    resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
    canonical = {"100m", "96Mi", "128Mi"}
    assert {v for section in resources.values() for v in section.values()} == canonical
    assert "100m" in stored.values(), "the transcript shows the server's canonical millicores"


def test_a_name_that_cannot_label_pods_is_a_render_error() -> None:
    loose = {"metadata": {"name": "a" * 64}, "spec": {"size": 1, "containerPort": 11211}}
    with pytest.raises(RenderError) as info:
        render(loose)
    assert info.value.path == ("metadata", "name")
    with pytest.raises(RenderError):
        render({"metadata": {"generateName": "x-"}, "spec": {"size": 1, "containerPort": 1}})


def test_a_verdict_without_rendering_renders_nothing() -> None:
    """``validate`` asks for the verdict alone (``rendering=False``): a valid CR gets no manifests and
    no render problem, and its verdict is the one a rendering run gives."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "x", "namespace": "shop"}}
    verdict = validate_and_render(shipped_validator(), dict(cr), DEFAULT_IMAGE, rendering=False)
    assert verdict.ok and verdict.manifests == () and verdict.render_problem is None
    rendered = validate_and_render(shipped_validator(), dict(cr), DEFAULT_IMAGE)
    assert [m["kind"] for m in rendered.manifests] == ["Deployment", "Service"]
    assert verdict.outcome.obj == rendered.outcome.obj


def test_a_valid_cr_no_deployment_can_be_made_of_is_not_ok() -> None:
    """A team's CRD (``--crd``) may accept a name no Deployment can carry (64 characters: no label value).
    The verdict is then not ok, its one problem is the name's and nothing is rendered: a caller that
    asks ``ok`` (the reconciler) says why on the CR instead of taking a rendering that is not there."""
    text, cut = re.subn(r"\n\s*maxLength: 63\n", "\n", builtin_crd_text(), count=1)
    assert cut == 1, "the shipped CRD bounds the name; the team's does not"
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "a" * 64, "namespace": "shop"}}
    verdict = validate_and_render(Validator(parse_crd(text, "team-crd.yaml")), cr, DEFAULT_IMAGE)
    assert verdict.outcome.ok, verdict.outcome.errors
    assert not verdict.ok and verdict.manifests == ()
    assert [p.path for p in verdict.problems] == [("metadata", "name")] and verdict.problems == [verdict.render_problem]


def test_json_output_is_a_list() -> None:
    objs = render_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: x}\n")
    import json

    doc = json.loads(to_json(objs))
    assert doc["kind"] == "List" and doc["items"] == objs


# ---- properties over random CRs, valid and not

valid_names = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?\Z", fullmatch=True)
names = st.one_of(valid_names, valid_names, valid_names, st.text(alphabet="abcXYZ_-.09", min_size=0, max_size=70))
namespaces = st.none() | st.sampled_from(["default", "shop", "cdn", "Bad_NS"])
specs = st.fixed_dictionaries(
    {},
    optional={
        "size": st.integers(1, 3) | st.integers(-1, 5) | st.just("2") | st.floats(0, 4),
        "containerPort": st.integers(0, 70000) | st.just(True),
        "replicas": st.just(2),
    },
)


@st.composite
def crs(draw: st.DrawFn) -> dict:
    meta = {"name": draw(names)}
    ns = draw(namespaces)
    if ns:
        meta["namespace"] = ns
    if draw(st.booleans()):
        meta["labels"] = {"team": draw(st.sampled_from(["a", "b", "", "bad value"]))}
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": meta}
    if draw(st.booleans()):
        cr["spec"] = draw(specs)
    return cr


def _accepted(cr: dict) -> dict | None:
    import copy

    outcome = shipped_validator().validate(copy.deepcopy(cr))
    return outcome.obj if outcome.ok else None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(crs())
def test_every_accepted_cr_renders_to_deployments_kubernetes_accepts(cr: dict) -> None:
    stored = _accepted(cr)
    assume(stored is not None)  # hypothesis fails the test if too few examples are accepted
    manifests = render(stored)
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    deployment, service, *pdb = manifests
    template = deployment["spec"]["template"]["metadata"]["labels"]
    for selector in [deployment["spec"]["selector"]["matchLabels"], service["spec"]["selector"]] + [p["spec"]["selector"]["matchLabels"]
                                                                                                   for p in pdb]:
        assert selector.items() <= template.items(), "every selector must match the pod template"
    budget = ["PodDisruptionBudget"] if deployment["spec"]["replicas"] >= 2 else []
    assert [m["kind"] for m in manifests] == ["Deployment", "Service", *budget]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(crs())
def test_render_is_deterministic(cr: dict) -> None:
    stored = _accepted(cr)
    assume(stored is not None)  # hypothesis fails the test if too few examples are accepted
    assert to_yaml(render(stored)) == to_yaml(render(_accepted(cr)))
    assert to_json(render(stored)) == to_json(render(stored))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(crs(), crs())
def test_two_crs_never_share_a_selector(a: dict, b: dict) -> None:
    sa, sb = _accepted(a), _accepted(b)
    assume(sa is not None and sb is not None)
    key = lambda s: (s["metadata"].get("namespace"), s["metadata"]["name"])  # noqa: E731
    if key(sa) == key(sb):
        return
    da, db = render(sa)[0], render(sb)[0]
    same_namespace = key(sa)[0] == key(sb)[0]
    if same_namespace:
        assert da["spec"]["selector"] != db["spec"]["selector"]
        # neither Deployment's selector matches the other's pods
        assert not da["spec"]["selector"]["matchLabels"].items() <= db["spec"]["template"]["metadata"]["labels"].items()
    assert selector_labels(sa["metadata"]["name"]) == da["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("count", [0, 1, 7])
def test_streamed_output_is_the_same_bytes(count: int) -> None:
    """write_yaml and write_json (the CLI's stdout) write what to_yaml and to_json return."""
    import io

    from memcached_gitops.render import write_json, write_yaml

    objects = [m for i in range(count) for m in render({"metadata": {"name": f"c{i}"}, "spec": {"size": 2, "containerPort": 11211}})]
    if count:  # strings the writer must quote, and a block scalar
        objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}, "data": {"k": "1e3", "n": "y", "t": "a\nb"}})
    for write, whole in ((write_yaml, to_yaml), (write_json, to_json)):
        stream = io.StringIO()
        write(objects, stream)
        assert stream.getvalue() == whole(objects)


@pytest.mark.parametrize("port", [True, False, 0, 65536, "11211"])
def test_a_port_that_is_no_int32_port_is_refused(port: object) -> None:
    with pytest.raises(RenderError) as caught:
        render({"metadata": {"name": "x"}, "spec": {"size": 1, "containerPort": port}})
    assert caught.value.path == ("spec", "containerPort")


def _maps_and_lists(value: object, where: tuple = ()) -> list[tuple[int, tuple]]:
    """Every dict and list inside ``value``, by identity, with its place."""
    if isinstance(value, dict):
        return [(id(value), where)] + [x for k, v in value.items() for x in _maps_and_lists(v, (*where, k))]
    if isinstance(value, list):
        return [(id(value), where)] + [x for i, v in enumerate(value) for x in _maps_and_lists(v, (*where, i))]
    return []


@pytest.mark.parametrize("resources", [None, {"limits": {"memory": "256Mi", "cpu": "2"}}])
def test_every_map_and_list_of_a_rendering_is_its_own(resources: dict | None) -> None:
    """The reconciler edits what it renders (ownerReferences added, a live selector kept, ignored
    paths taken out) and keeps renderings cached: an edit at one place of a rendering changes no other
    place of it, no later rendering and not the CR. So no map or list is held at two places, among
    the objects of one rendering, two renderings of a CR, and the CR itself."""
    spec = {"size": 2, "containerPort": 11211, "nodeSelector": {"disk": "ssd"},
            "metrics": {"enabled": True, "podMonitor": {"enabled": True, "labels": {"release": "prom"}}}}
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "sessions", "namespace": "shop"},
          "spec": {**spec, **({"resources": resources} if resources else {})}}
    outcome = shipped_validator().validate(cr)
    assert outcome.ok, outcome.errors
    first, second = render(outcome.obj), render(outcome.obj)
    places: dict[int, tuple] = {}
    for source, value in (("first", first), ("second", second), ("cr", outcome.obj)):
        for identity, where in _maps_and_lists(value):
            assert identity not in places, f"one object at {places[identity]} and at {(source, *where)}"
            places[identity] = (source, *where)


#: a label value (apimachinery validation.go, IsValidLabelValue): 63 characters at most, alphanumeric
#: at both ends, ``-``, ``_`` and ``.`` between
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
#: an image reference's tag (distribution's reference grammar: ``[\w][\w.-]{0,127}``)
tags = st.text(alphabet=st.sampled_from("a1_.-Z"), min_size=1, max_size=127).filter(lambda t: t[0] not in ".-") | \
    st.sampled_from(["1.6.26-alpine3.19", "latest", "v1", "1.6-", "x" * 63, "x" * 64, "_1"])


@settings(max_examples=100, deadline=None)
@given(registry=st.sampled_from(["", "registry.example/", "localhost:5000/", "registry.example:443/team/", "10.0.0.1:5000/a/b/"]),
       tag=st.none() | tags, digest=st.booleans())
def test_the_version_label_is_the_images_tag_when_it_can_be_a_label_value(registry: str, tag: str | None, digest: bool) -> None:
    """Wherever the image comes from (a registry with a port, a path of several parts), the version
    label is its tag, exactly, when the tag is a label value; no label for a tag that is none (too
    long, a ``-`` or ``.`` at its end), for an image without a tag, or for one pinned by digest."""
    image = f"{registry}memcached" + (f":{tag}" if tag else "") + ("@sha256:" + "a" * 64 if digest else "")
    labels = render({"metadata": {"name": "x"}, "spec": {"size": 1, "containerPort": 11211}}, image)[0]["metadata"]["labels"]
    expected = tag if tag and not digest and len(tag) <= 63 and LABEL_VALUE.fullmatch(tag) else None
    assert labels.get("app.kubernetes.io/version") == expected
