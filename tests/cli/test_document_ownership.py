"""Which documents are ours: kubectl's verdict on documents the server would reject (issue 7 §2).

Any document without apiVersion or kind is an error; a document of our group, or of our kind in
any spelling, is judged as a Memcached; everything else is passed over. ``validate``, ``render``,
``argocd-generate`` and ``krm`` refuse the same documents. ``metadata.ownerReferences`` is checked
as the server checks it on a create (transcript 20).
"""

from __future__ import annotations

import json
import re

import pytest
from memcached_gitops.foundation.excerpt import excerpt
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.render import DEFAULT_IMAGE
from memcached_gitops.schemas import Validator

from memcached_gitops.krm import transform
from memcached_gitops.pipeline import process
from tests.conftest import crd_named, transcript
from tests.support.cli import docs, run

GOOD = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: good}\n"


def findings(text: str) -> list[str]:
    result = process([("in.yaml", text)], Validator(crd_named("builtin")), DEFAULT_IMAGE)
    return [f.text() for f in result.errors]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        # kubectl: "error validating data: [apiVersion not set, kind not set]"
        ("kind: Memcached\nmetadata: {name: a}\n", "in.yaml:1:1: apiVersion: apiVersion not set"),
        ("apiVersion: v1\nmetadata: {name: a}\n", "in.yaml:1:1: kind: kind not set"),
        ("apiVersion: ''\nkind: ConfigMap\nmetadata: {name: a}\n", "in.yaml:1:1: apiVersion: apiVersion not set"),
        # our group, our kind misspelled (issue 7: kubectl's words)
        ("apiVersion: cache.example.com/v1alpha1\nkind: memcached\nmetadata: {name: a}\n",
         'in.yaml:2:1: Memcached/a: kind: Invalid value: "memcached": must be Memcached'),
        ("apiVersion: cache.example.com/v1alpha1\nkind: MEMCACHEDS\nmetadata: {name: a}\n",
         'in.yaml:2:1: Memcached/a: kind: Invalid value: "MEMCACHEDS": must be Memcached'),
        # our kind under another group: kubectl's REST mapping finds nothing
        ("apiVersion: cache.example.org/v1alpha1\nkind: Memcached\nmetadata: {name: a}\n",
         'in.yaml:1:1: Memcached/a: apiVersion: no matches for kind "Memcached" in version "cache.example.org/v1alpha1"'),
        ("apiVersion: apps/v1\nkind: memcacheds\nmetadata: {name: a}\n",
         'in.yaml:1:1: Memcached/a: apiVersion: no matches for kind "memcacheds" in version "apps/v1"'),
        # our group, a kind it does not serve
        ("apiVersion: cache.example.com/v1alpha1\nkind: Redis\nmetadata: {name: a}\n",
         'in.yaml:1:1: Memcached/a: apiVersion: no matches for kind "Redis" in version "cache.example.com/v1alpha1"'),
    ],
)
def test_documents_kubectl_rejects_are_errors(document: str, expected: str) -> None:
    errors = findings(document)
    assert len(errors) == 1 and errors[0].startswith(expected), errors


@pytest.mark.parametrize("document", [
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    "apiVersion: example.com/v1\nkind: Memcache\nmetadata: {name: a}\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n",
])
def test_other_kinds_are_passed_over(document: str) -> None:
    result = process([("in.yaml", document)], Validator(crd_named("builtin")), DEFAULT_IMAGE)
    assert not result.findings and len(result.others) == 1


def test_short_names_of_a_teams_crd_are_ours() -> None:
    crd = crd_named("builtin")
    names = dict(crd.document["spec"]["names"], shortNames=["mc"])
    team = crd._replace(short_names=tuple(names["shortNames"]))
    result = process([("in.yaml", "apiVersion: example.com/v1\nkind: MC\nmetadata: {name: a}\n")], Validator(team), DEFAULT_IMAGE)
    assert [f.message for f in result.errors] == ['no matches for kind "MC" in version "example.com/v1" '
                                                  "(the CRD serves cache.example.com/v1alpha1)"]


def _owner_reference_rejections() -> list[tuple[str, list[dict], str, str]]:
    """Each 422 of transcript 20: the ownerReferences sent, and the server's field and message."""
    cases = []
    for exchange in transcript("20")["exchanges"]:
        if exchange["response"]["status"] != 422:
            continue
        body = next(iter_documents(exchange["request"]["body"])).value
        (cause,) = exchange["response"]["body"]["details"]["causes"]
        cases.append((exchange["note"], body["metadata"]["ownerReferences"], cause["field"], cause["message"]))
    return cases


@pytest.mark.parametrize(("note", "refs", "field", "message"), _owner_reference_rejections(),
                         ids=[c[0] for c in _owner_reference_rejections()])
def test_owner_references_as_the_server_checks_them(note: str, refs: list[dict], field: str, message: str) -> None:
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
          "metadata": {"name": "a", "ownerReferences": refs}}
    result = process([("in.yaml", json.dumps(cr))], Validator(crd_named("builtin")), DEFAULT_IMAGE)
    # the server quotes the whole list; we quote a bounded excerpt of the same JSON
    quoted = re.match(r'Invalid value: (\[.*\]): (Only one .*)', message)
    expected = f"Invalid value: {excerpt(quoted[1])}: {quoted[2]}" if quoted else message
    assert [(f.field, f.message) for f in result.errors] == [(field, expected)]


def test_accepted_owner_references_of_transcript_20() -> None:
    for exchange in transcript("20")["exchanges"]:
        body = exchange["request"]["body"]
        if exchange["response"]["status"] != 201 or "ownerReferences" not in str(body):
            continue
        refs = next(iter_documents(body)).value["metadata"]["ownerReferences"]
        cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "a", "ownerReferences": refs}}
        result = process([("in.yaml", json.dumps(cr))], Validator(crd_named("builtin")), DEFAULT_IMAGE)
        assert not result.errors, exchange["note"]


TYPO = GOOD + "---\napiVersion: cache.example.com/v1alpha1\nkind: memcached\nmetadata: {name: typo}\n"


@pytest.mark.parametrize("command", ["validate", "render"])
def test_cli_refuses_a_misspelled_kind(tmp_path, command: str) -> None:
    (tmp_path / "crs.yaml").write_text(TYPO)
    proc = run(command, str(tmp_path))
    assert proc.returncode == 1 and proc.stdout == b""
    assert 'crs.yaml:6:1: Memcached/typo: kind: Invalid value: "memcached": must be Memcached' in proc.stderr.decode()


def test_argocd_generate_refuses_a_document_without_kind(tmp_path) -> None:
    (tmp_path / "crs.yaml").write_text(GOOD + "---\napiVersion: v1\nmetadata: {name: nokind}\n")
    proc = run("argocd-generate", str(tmp_path))
    assert proc.returncode == 1 and proc.stdout == b""
    assert "crs.yaml:5:1: kind: kind not set" in proc.stderr.decode()


def test_krm_reports_the_same_in_results() -> None:
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [
        {"apiVersion": "cache.example.com/v1alpha1", "kind": "memcached", "metadata": {"name": "typo"}},
        {"kind": "ConfigMap", "metadata": {"name": "noversion"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine"}},
    ]}
    proc = run("krm", stdin=json.dumps(resource_list).encode())
    assert proc.returncode == 1, proc.stderr.decode()
    (out,) = docs(proc.stdout)
    assert [(r["message"], r["severity"]) for r in out["results"]] == [
        ('Invalid value: "memcached": must be Memcached', "error"), ("apiVersion not set", "error")]
    assert [i["metadata"]["name"] for i in out["items"]] == ["typo", "noversion", "fine"]


def test_label_values_as_apimachinery_words_them() -> None:
    """validation.IsValidLabelValue: at most 63 characters, and its exact messages."""
    from memcached_gitops.schemas.objectmeta import LABEL_VALUE, label_value_errors

    assert label_value_errors("a" * 63) == []
    assert label_value_errors("a" * 64) == ["must be no more than 63 characters"]
    assert label_value_errors("-a") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
        f"regex used for validation is '{LABEL_VALUE}')"]


@pytest.mark.parametrize(("api_version", "expected"), [
    ("v1", ("", "v1")), ("apps/v1", ("apps", "v1")), ("a/b/v1", ("", "")), ("", ("", ""))])
def test_owner_api_versions_parse_as_parse_group_version(api_version: str, expected: tuple[str, str]) -> None:
    """schema.ParseGroupVersion: no ``/`` is the core group, more than one parses to nothing."""
    from memcached_gitops.schemas.objectmeta import _group_version

    assert _group_version(api_version) == expected


def test_a_configmap_function_config_without_an_image_keeps_the_default_image() -> None:
    """A ConfigMap functionConfig overrides the image only with a non-empty ``data.image``: one without
    it (no data, or an empty image) leaves the image the function was started with."""
    item = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c"}, "spec": {"size": 1}}
    for config in ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}},
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}, "data": {"image": ""}}):
        out, failed = transform({"items": [item], "functionConfig": config}, Validator(crd_named("builtin")), "memcached:1.6.29")
        images = [o["spec"]["template"]["spec"]["containers"][0]["image"] for o in out["items"] if o["kind"] == "Deployment"]
        assert not failed and images == ["memcached:1.6.29"], out
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fn"}, "data": {"image": "mirror/memcached:1"}}
    out, _ = transform({"items": [item], "functionConfig": config}, Validator(crd_named("builtin")), "memcached:1.6.29")
    assert [o["spec"]["template"]["spec"]["containers"][0]["image"] for o in out["items"] if o["kind"] == "Deployment"] == [
        "mirror/memcached:1"]


def test_a_results_file_index_is_given_only_when_the_annotation_is_a_number() -> None:
    """A result names its item's file from the path annotation, and its index only when the index
    annotation is a whole number of ASCII digits (the specification's ``file.index``); any other value,
    another script's digits included, is left out."""
    def item(index: str) -> dict:
        notes = {"config.kubernetes.io/path": "apps/c.yaml", "config.kubernetes.io/index": index}
        return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c", "annotations": notes},
                "spec": {"size": 9}}

    files = [transform({"items": [item(index)]}, Validator(crd_named("builtin")), "memcached:1.6.29")[0]["results"][0]["file"]
             for index in ("2", "second", "-1", "\u00b2", "\u0663")]
    assert files == [{"path": "apps/c.yaml", "index": 2}] + [{"path": "apps/c.yaml"}] * 4


@pytest.mark.parametrize("prefix", ["internal.config.kubernetes.io/", "config.kubernetes.io/"])
def test_a_results_file_is_read_from_the_current_or_the_legacy_annotations_alone(prefix: str) -> None:
    """kyaml names an item's file and index ``internal.config.kubernetes.io/path`` and ``/index``; older
    orchestrators write only the legacy ``config.kubernetes.io/`` names. Either set alone gives the
    result its file and its index."""
    notes = {prefix + "path": "apps/c.yaml", prefix + "index": "1"}
    item = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c", "annotations": notes},
            "spec": {"size": 9}}
    [result] = transform({"items": [item]}, Validator(crd_named("builtin")), "memcached:1.6.29")[0]["results"]
    assert result["file"] == {"path": "apps/c.yaml", "index": 1}, result


@pytest.mark.parametrize("metadata", ["c", ["c"], {"name": "c", "annotations": "x"}, {"name": "c", "annotations": ["x"]}],
                         ids=["metadata-text", "metadata-list", "annotations-text", "annotations-list"])
def test_an_item_whose_metadata_or_annotations_are_no_map_gets_its_result(metadata: object) -> None:
    """An item's metadata, or its annotations, may be anything in a ResourceList another function or a
    person wrote; looking for its path and index must not end the function with a traceback before
    the pipeline has said what is wrong with the item. Through the real command: exit 1, error results
    for the item, no traceback."""
    item = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": metadata, "spec": {"size": 1}}
    out, failed = transform({"items": [item]}, Validator(crd_named("builtin")), "memcached:1.6.29")
    assert failed and {r["severity"] for r in out["results"]} == {"error"}, out
    proc = run("krm", stdin=json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [item]}).encode())
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    assert {r["severity"] for r in docs(proc.stdout)[0]["results"]} == {"error"}


def test_a_results_file_path_is_given_whole_however_long() -> None:
    """kustomize and kpt open a result's ``file.path`` to show the user the item: a path cut to an
    excerpt names no file. Paths up to Linux's PATH_MAX (4,096) are given whole."""
    path = "/".join(["a-folder-name-of-forty-characters-in-all"] * 7) + "/memcached.yaml"
    notes = {"internal.config.kubernetes.io/path": path}
    item = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c", "annotations": notes},
            "spec": {"size": 9}}
    [result] = transform({"items": [item]}, Validator(crd_named("builtin")), "memcached:1.6.29")[0]["results"]
    assert len(path) > 256 and result["file"] == {"path": path}


def test_an_invalid_function_config_is_reported_without_a_file_it_never_came_from() -> None:
    """In generator mode the Memcached is the functionConfig (kustomize's ``generators:`` entry, kpt's
    ``configPath``), which is no item of any file: its error result names the resource and its field,
    and no ``file`` (the orchestrator would show the user a file called ``functionConfig``)."""
    config = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c"}, "spec": {"size": 9}}
    out, failed = transform({"items": [], "functionConfig": config}, Validator(crd_named("builtin")), "memcached:1.6.29")
    [result] = out["results"]
    assert failed and result["severity"] == "error" and result["resourceRef"]["name"] == "c", out
    assert "file" not in result, result


@pytest.mark.parametrize(("extra", "failed"), [
    ({"status": {"nodes": []}}, False),
    ({"status": {"nodes": []}, "spec": {"size": -1}}, True),
    ({}, False),
])
def test_krm_fails_only_for_an_error_result_never_for_a_warning(extra: dict, failed: bool) -> None:
    """The KRM function exits non-zero only when a result is an error (the functions spec: kustomize and kpt
    stop the pipeline on it): a warning (a status the API server would drop) is a result, the CR's
    Deployment is still generated, and the function succeeds."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "web"}, "spec": {"size": 1}}
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [{**cr, **extra}]}
    out, got = transform(resource_list, Validator(crd_named("builtin")), DEFAULT_IMAGE)
    assert got is failed, out.get("results")
    assert [r["severity"] for r in out.get("results", [])][:1] == ["warning"] * bool(extra), out.get("results")
    assert ("Deployment" in [i["kind"] for i in out["items"]]) is not failed
