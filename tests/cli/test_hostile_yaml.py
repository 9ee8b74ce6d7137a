"""Hostile YAML from pull requests (issue 7 §5): every input ends in exit 0 or 1 with a message.

Deep nesting is bounded while the document is read, with kubectl's limit and words (go-yaml v2's
scanner: ``yaml: exceeded max depth of 10000``); a 5,000-digit integer is read as go-yaml reads it
(a string: ParseInt and ParseFloat both fail with ErrRange); a mapping with 20,000 unknown keys is
located in linear time. The fuzz test drives validate, render, krm and argocd-generate in-process
with generated YAML text and hand-picked hostile shapes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memcached_gitops.foundation.yamlreader import DEPTH_ERROR, YAMLInputError, iter_documents, resolve_plain
from memcached_gitops.render import DEFAULT_IMAGE
from memcached_gitops.schemas import Validator
from typer.testing import CliRunner

from memcached_gitops.cli import app
from memcached_gitops.pipeline import process
from tests.conftest import crd_named
from tests.support.cli import assert_clean_failure, run

CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: hostile}\n"


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return CR + "spec:\n  x: " + open_ * depth + close * depth + "\n"


@pytest.mark.parametrize("depth", [1000, 9998])
def test_nesting_kubectl_accepts_is_read(depth: int) -> None:
    # 9,998 lists under spec.x: 10,000 nested levels in all, the most kubectl's JSON decoding takes
    (doc,) = iter_documents(nested(depth))
    value, levels = doc.value["spec"]["x"], 0
    while isinstance(value, list) and value:
        value, levels = value[0], levels + 1
    assert levels == depth - 1


def test_mapping_nesting_kubectl_accepts_is_read() -> None:
    # the document's mapping and 9,999 flow mappings: 10,000 levels (kubectl v1.37 reads it)
    (doc,) = iter_documents(CR + "data: " + "{a: " * 9_999 + "1" + "}" * 9_999 + "\n")
    assert doc.value["data"]["a"]["a"]["a"]


@pytest.mark.parametrize("text", [nested(10_001), nested(20_000, "{a: ", "}"), CR + "x:\n" + "- " * 10_001 + "1\n"])
def test_deeper_nesting_is_refused_in_kubectls_words(text: str) -> None:
    with pytest.raises(YAMLInputError) as caught:
        list(iter_documents(text))
    assert caught.value.message == DEPTH_ERROR == "yaml: exceeded max depth of 10000"
    assert caught.value.line == 5 or caught.value.line == 4


def test_fifty_thousand_levels_is_one_line_not_a_signal(tmp_path: Path) -> None:
    (tmp_path / "deep.yaml").write_text(nested(50_000))
    for command in ("validate", "render"):
        err = assert_clean_failure(run(command, str(tmp_path / "deep.yaml")))
        assert "deep.yaml:5:10006: yaml: exceeded max depth of 10000" in err


def test_self_referencing_anchor_is_an_error() -> None:
    with pytest.raises(YAMLInputError, match="value contains itself"):
        list(iter_documents("a: &x [1, *x]\n"))


def test_five_thousand_digit_integer_is_a_string_as_go_yaml_reads_it(tmp_path: Path) -> None:
    digits = "9" * 5000
    assert resolve_plain(digits) == digits
    assert resolve_plain("1e400") == "1e400", "ParseFloat's ErrRange: go-yaml keeps the text"
    assert resolve_plain("0x" + "f" * 17) == "0x" + "f" * 17
    assert resolve_plain("-" + digits) == "-" + digits
    (tmp_path / "big.yaml").write_text(CR + f"spec:\n  size: {digits}\n")
    err = assert_clean_failure(run("validate", str(tmp_path / "big.yaml")))
    # the server's words for a string in an integer field (transcript 12)
    assert 'big.yaml:5:3: Memcached/hostile: spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"' in err
    assert digits not in err


class _CountingList(list):
    """A list that counts full scans, to show locating is linear without timing anything."""

    scans = 0

    def __iter__(self):  # noqa: ANN204
        _CountingList.scans += 1
        return super().__iter__()


def test_twenty_thousand_unknown_keys_are_located_in_linear_time() -> None:
    n = 20_000
    text = CR + "spec:\n" + "".join(f"  k{i}: {i}\n" for i in range(n))
    (doc,) = iter_documents(text)
    spec_node = next(v for k, v in doc.node.value if k.value == "spec")
    spec_node.value = _CountingList(spec_node.value)
    _CountingList.scans = 0
    result = process([("many.yaml", text)], Validator(crd_named("builtin")), DEFAULT_IMAGE)
    assert len(result.errors) == n
    for i in range(n):
        assert doc.position(("spec", f"k{i}")) == (5 + i, 3)
    assert _CountingList.scans <= 2, f"the spec mapping was scanned {_CountingList.scans} times for {n} lookups"


# --- fuzz: any input, exit 0 or 1 with a message, never a traceback -----------------------------

HOSTILE = [
    b"[" * 50_000, b"{a: " * 30_000, b"- " * 20_000 + b"x\n", b"a: &a [" + b"*a, " * 10 + b"]\n",
    b"size: " + b"9" * 5000 + b"\n", CR.encode() + b"spec: {size: " + b"9" * 5000 + b"}\n",
    b"\x00\xff\xfe", b"\xef\xbb\xbf---\n", b"--- !!python/object:os.system\n", b"a: !!binary AAAA\n",
    b"? [a, b]\n: c\n", b"<<: *nope\n", b"a: .nan\n", b"apiVersion: 1\nkind: []\n", b"'" * 3, b"%YAML 9.9\n---\n",
    CR.encode() + b"metadata: {ownerReferences: 7}\n", CR.encode() + b"spec: !!int 1e999\n",
    b"apiVersion: v1\nkind: List\nitems: [1, [2], {kind: Memcached}]\n",
    b'{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[1,"x",{"kind":"memcached"}]}',
    b"a: b\n---\n\t- x\n", b"&a a: *a\n", b"a: 1\n" * 3 + b"a: *a\n",
]

_TOKENS = list("[]{}:-,&*!|>'\"#%@`? \n\tab01yn~.") + [
    "\n  ", "<<", "0x", "apiVersion: ", "kind: ", "Memcached", "cache.example.com/v1alpha1", "spec:", "size: ", "&a ", "*a"]
_yaml_text = st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from(_TOKENS), max_size=60).map(lambda parts: "".join(parts).encode()),
)


def _check(command: str, data: bytes, tmp: Path) -> None:
    runner = CliRunner()
    if command == "argocd-generate":
        (tmp / "in.yaml").write_bytes(data)
        args = ["argocd-generate", str(tmp)]
    else:
        args = [command] + ([] if command == "krm" else ["-"])
    result = runner.invoke(app, args, input=data)
    assert result.exception is None or isinstance(result.exception, SystemExit), (command, data[:80], result.exception)
    assert result.exit_code in (0, 1), (command, data[:80], result.exit_code, result.stderr[-300:])
    if result.exit_code == 1:
        assert result.stderr.strip(), (command, data[:80])
        assert "Traceback" not in result.stderr
        if command == "krm" and result.stdout:  # a KRM function answers with its results[] (functions spec)
            (out,) = [d.value for d in iter_documents(result.stdout)]
            assert any(r["severity"] == "error" for r in out["results"])
        else:
            assert result.stdout == "", "a refused input writes nothing to stdout"


@pytest.mark.parametrize("command", ["validate", "render", "krm", "argocd-generate"])
def test_hand_picked_hostile_shapes(command: str, tmp_path: Path) -> None:
    for data in HOSTILE:
        _check(command, data, tmp_path)


@pytest.mark.parametrize("command", ["validate", "render", "krm", "argocd-generate"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_yaml_text)
def test_fuzz_any_input_exits_0_or_1_with_a_message(command: str, data: bytes, tmp_path: Path) -> None:
    _check(command, data, tmp_path)


def test_hostile_shapes_in_a_subprocess_never_die_by_signal(tmp_path: Path) -> None:
    """The in-process checks above cannot see a SIGSEGV; these inputs run as the CI job runs them."""
    for i, data in enumerate([b"[" * 50_000, b"- " * 20_000, CR.encode() + b"spec: {size: " + b"9" * 5000 + b"}\n"]):
        (tmp_path / f"h{i}.yaml").write_bytes(data)
    proc = run("validate", str(tmp_path))
    assert proc.returncode == 1 and proc.stderr.decode().count("\n") >= 3, proc.stderr.decode()
    assert "Traceback" not in proc.stderr.decode()
    assert json.loads(run("validate", "--format", "json", str(tmp_path)).stdout)["valid"] is False
