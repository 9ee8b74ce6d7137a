"""render/ rules that only a mutation run showed unchecked: exact serialized forms, the image tag
label, and the bounds of what can be rendered."""

from __future__ import annotations

import json

import pytest
import yaml
from memcached_gitops.render import RenderError, render_deployment, to_json, to_single, to_yaml
from memcached_gitops.render.deployment import image_version


def cr(name: str = "m", size: object = 1, port: object = 11211) -> dict:
    return {"metadata": {"name": name}, "spec": {"size": size, "containerPort": port}}


@pytest.mark.parametrize(("image", "version"), [
    ("memcached:1.6.26-alpine3.19", "1.6.26-alpine3.19"),
    ("registry.example.com:5000/cache/memcached:1.6", "1.6"),  # the registry's port is not a tag
    ("registry.example.com:5000/memcached", None),
    ("memcached", None),
    ("memcached:1.6@sha256:" + "a" * 64, None),  # a digest pins it: no tag label
    ("memcached:" + "a" * 63, "a" * 63),  # a label value is at most 63 characters
    ("memcached:" + "a" * 64, None),
    ("memcached:_x", None),  # a label value starts with an alphanumeric
])
def test_image_version_is_the_tag_when_it_can_be_a_label_value(image: str, version: str | None) -> None:
    assert image_version(image) == version


@pytest.mark.parametrize(("size", "port", "field"), [
    (-1, 11211, "spec.size"), (2**31, 11211, "spec.size"), (True, 11211, "spec.size"), ("1", 11211, "spec.size"),
    (1, 0, "spec.containerPort"), (1, 65536, "spec.containerPort"), (1, False, "spec.containerPort"),
])
def test_out_of_range_values_are_render_errors_naming_the_field(size: object, port: object, field: str) -> None:
    with pytest.raises(RenderError) as err:
        render_deployment(cr(size=size, port=port))
    assert ".".join(map(str, err.value.path)) == field and str(err.value) == err.value.message
    assert "Invalid value" in err.value.message


def test_an_unset_size_or_port_takes_the_tutorial_controllers_value() -> None:
    # a team's CRD without the field or its default: the kubebuilder book's controller scales to 0
    # and listens on 11211 (render/deployment.py UNSET_SIZE, UNSET_CONTAINER_PORT)
    dep = render_deployment(cr(size=None, port=None))
    assert dep["spec"]["replicas"] == 0
    assert dep["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 11211


@pytest.mark.parametrize(("size", "port"), [(0, 1), (2**31 - 1, 65535)])
def test_the_bounds_themselves_render(size: int, port: int) -> None:
    dep = render_deployment(cr(size=size, port=port))
    assert dep["spec"]["replicas"] == size
    assert dep["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == port


def test_a_missing_or_unlabelable_name_is_a_render_error() -> None:
    for meta in ({}, {"name": ""}, {"name": 5}):
        with pytest.raises(RenderError, match="^Required value: a name is needed to render") as err:
            render_deployment({"metadata": meta, "spec": {"size": 1, "containerPort": 1}})
        assert err.value.path == ("metadata", "name")
    with pytest.raises(RenderError, match='Invalid value: "' + "a" * 64 + '": cannot name a Deployment and label its Pods: '):
        render_deployment(cr(name="a" * 64))


def test_yaml_quotes_exactly_the_strings_kubectl_would_misread() -> None:
    text = to_yaml([{"a": "y", "b": "plain", "c": " lead", "d": "1e3", "e": "two\nlines", "f": "x\ntrail ", "g": "0o17"}])
    assert text == ("---\na: 'y'\nb: plain\nc: ' lead'\nd: '1e3'\ne: |-\n  two\n  lines\nf: \"x\\ntrail \"\ng: '0o17'\n")
    long = {"k": "word " * 3000 + "end"}  # 15,003 characters, under the 65,536 width
    assert to_yaml([long]).count("\n") == 2, "one line however long"
    anchors = {"x": 1}
    assert "&" not in to_yaml([{"a": anchors, "b": anchors}]), "no YAML anchors"
    assert to_yaml([{"b": 1, "a": 2}, {"c": 3}]) == "---\nb: 1\na: 2\n---\nc: 3\n"


def test_json_list_exact_form() -> None:
    assert to_json([]) == '{"apiVersion":"v1","kind":"List","items":[\n]}\n'
    assert to_json([{"a": "é", "b": 1}, {"c": [1, 2]}]) == (
        '{"apiVersion":"v1","kind":"List","items":[\n{"a":"é","b":1},\n{"c":[1,2]}\n]}\n')


def test_single_object_in_each_format() -> None:
    obj = {"kind": "Deployment", "metadata": {"name": "é"}}
    assert to_single(obj, "json") == json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
    assert to_single(obj, "json").startswith('{\n  "kind"') and "é" in to_single(obj, "json")
    assert to_single(obj, "yaml") == '---\nkind: Deployment\nmetadata:\n  name: "\\xE9"\n'
    assert yaml.safe_load(to_single(obj, "yaml")) == obj


def test_a_render_error_quotes_the_value() -> None:
    for spec, message in (({"size": -1, "containerPort": 11211}, "Invalid value: -1: replicas must be an int32 of 0 or more"),
                          ({"size": 1, "containerPort": 65536}, "Invalid value: 65536: must be between 1 and 65535, inclusive")):
        with pytest.raises(RenderError) as err:
            render_deployment({"metadata": {"name": "m"}, "spec": spec})
        assert err.value.message == message
