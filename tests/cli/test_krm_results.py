"""What the KRM function hands back to kustomize and kpt: the ResourceList's own apiVersion and kind,
the items and functionConfig passed through, one Deployment per Memcached, and each result's
message, resourceRef, field and file (KRM Functions Specification). ``memcached-gitops krm`` also
prints each result on stderr from these same keys, so a lost key is lost on the terminal too.
In-process (krm.transform, krm.shape_problem), so that mutation testing (group krm) sees them.
"""

from __future__ import annotations

import copy

import pytest
from memcached_gitops.foundation.excerpt import excerpt
from memcached_gitops.render import DEFAULT_IMAGE
from memcached_gitops.schemas import Validator

from memcached_gitops.krm import PATH_MAX, shape_problem, transform
from tests.conftest import crd_named

GROUP = "cache.example.com/v1alpha1"


def memcached(name: str, size: int = 1, **metadata: object) -> dict:
    return {"apiVersion": GROUP, "kind": "Memcached", "metadata": {"name": name, **metadata}, "spec": {"size": size}}


def run(resource_list: dict) -> tuple[dict, bool]:
    return transform(resource_list, Validator(crd_named("builtin")), DEFAULT_IMAGE)


def test_the_output_is_a_resource_list_with_the_function_config_handed_back() -> None:
    """kustomize and kpt read the function's stdout as a ``config.kubernetes.io/v1`` ResourceList and
    refuse anything else; the specification has the functionConfig written back as it came."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}, "data": {"note": "x"}}
    out, failed = run({"items": [memcached("a")], "functionConfig": config})
    assert not failed
    assert out["apiVersion"] == "config.kubernetes.io/v1" and out["kind"] == "ResourceList", out
    assert out["functionConfig"] == config


def test_every_memcached_item_gets_its_deployment_not_only_the_last() -> None:
    """A kustomization with several Memcached resources: each gets its Deployment, in order."""
    out, failed = run({"items": [memcached("a"), memcached("b"), memcached("c")]})
    assert not failed
    assert [i["metadata"]["name"] for i in out["items"] if i["kind"] == "Deployment"] == ["a", "b", "c"], out["items"]


def test_the_items_are_handed_back_as_they_came() -> None:
    """Other items, and the Memcached items themselves, go back to the orchestrator unchanged: rendering
    must not touch the caller's objects (they are written to the user's files)."""
    item = memcached("a", annotations={"config.kubernetes.io/path": "a.yaml", "config.kubernetes.io/index": "0"},
                     labels={"team": "x"})
    item["spec"]["resources"] = {"limits": {"memory": "64Mi"}}
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o", "annotations": {"a": "b"}}, "data": {"k": "v"}}
    given = {"items": [item, other]}
    before = copy.deepcopy(given)
    out, _ = run(given)
    assert given == before, "the input ResourceList was changed"
    assert out["items"][:2] == before["items"], out["items"][:2]


def test_a_result_names_its_message_resource_namespace_and_field() -> None:
    """Each result carries ``message``, ``resourceRef`` (apiVersion, kind, name, namespace) and
    ``field.path``: kpt and kustomize show them, and ``krm`` prints them on stderr."""
    [result] = run({"items": [memcached("bad", size=-1, namespace="cache")]})[0]["results"]
    assert result["severity"] == "error" and "Invalid value" in result["message"], result
    assert result["resourceRef"] == {"apiVersion": GROUP, "kind": "Memcached", "name": "bad", "namespace": "cache"}, result
    assert result["field"] == {"path": "spec.size"}, result


def test_a_result_for_an_item_without_kind_name_or_file_leaves_them_empty() -> None:
    """An item with no kind, no name and no path annotation: its resourceRef says the kind and name
    are empty (no invented text) and the result names no file it never came from."""
    [result] = run({"items": [{"apiVersion": GROUP, "metadata": {}}]})[0]["results"]
    assert result["resourceRef"] == {"apiVersion": GROUP, "kind": "", "name": ""}, result
    assert "file" not in result and "namespace" not in result["resourceRef"], result


def test_a_results_file_path_is_whole_up_to_path_max_and_excerpted_past_it() -> None:
    """A path of PATH_MAX (4,096) characters can be a file's and is given whole; one longer can be no
    file's and is excerpted (it would otherwise be echoed back in full)."""
    def file_of(length: int) -> dict:
        path = ("d/" * length)[: length - 5] + ".yaml"
        item = memcached("c", size=-1, annotations={"internal.config.kubernetes.io/path": path})
        [result] = run({"items": [item]})[0]["results"]
        return result["file"]

    assert file_of(PATH_MAX) == {"path": ("d/" * PATH_MAX)[: PATH_MAX - 5] + ".yaml"}
    long = ("d/" * (PATH_MAX + 1))[:PATH_MAX - 4] + ".yaml"
    assert file_of(PATH_MAX + 1) == {"path": excerpt(long)} and len(excerpt(long)) < PATH_MAX


def test_items_that_are_no_objects_are_reported_not_a_traceback() -> None:
    """A ResourceList another function wrote may hold a scalar or a list as an item: the function
    reports it as an error result instead of ending with a traceback, and does not write it back."""
    out, failed = run({"items": ["a string item", 7, ["x"], memcached("a")]})
    assert failed and {r["severity"] for r in out["results"]} == {"error"}, out
    assert out["items"][0] == memcached("a") and all(isinstance(i, dict) for i in out["items"]), out["items"]
    assert "Deployment" in [i["kind"] for i in out["items"][1:]], out["items"]


@pytest.mark.parametrize(("resource_list", "problem"), [
    ({"items": "abc"}, "items: must be a list of objects, not a string of 3 characters"),
    ({"items": [], "functionConfig": ["x", "y"]}, "functionConfig: must be an object, not a list of 2 items"),
    ({"items": 5, "functionConfig": {}}, "items: must be a list of objects, not a number of 1 digits"),
    ({"items": [memcached("a")], "functionConfig": {"kind": "ConfigMap"}}, None),
    ({"items": []}, None),
    ({}, None),
    ({"functionConfig": {"kind": "ConfigMap"}}, None),
])
def test_an_unreadable_resource_list_is_named_by_its_shape(resource_list: dict, problem: str | None) -> None:
    """``krm`` refuses a ResourceList whose ``items`` is no list or whose ``functionConfig`` is no map
    with this sentence (exit 1), describing the value by type and size, never echoing it; a
    well-formed one, or one without items or functionConfig, is accepted."""
    assert shape_problem(resource_list) == problem


def test_only_a_configmap_function_config_overrides_the_image() -> None:
    """``data.image`` is read from a ConfigMap functionConfig alone: another kind's ``data`` (a Secret, a
    custom config object) is no image setting, and the Deployment keeps the function's image."""
    config = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fn"}, "data": {"image": "elsewhere/memcached:1"}}
    out, failed = transform({"items": [memcached("a")], "functionConfig": config}, Validator(crd_named("builtin")), "memcached:1.6.29")
    images = [o["spec"]["template"]["spec"]["containers"][0]["image"] for o in out["items"] if o["kind"] == "Deployment"]
    assert not failed and images == ["memcached:1.6.29"], out
