"""JSON nested deeper than Python's recursion limit: read as kubectl reads it, never a traceback.

A stream that starts with ``{`` is cut into JSON values with the json module, whose C scanner
recurses once per level under Python's recursion limit (1,000): about 990 levels used to crash
every front end with a RecursionError. Up to 10,000 levels are read as the same YAML is; deeper is
refused with one line naming the file, line and column (yamlreader._json_end).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memcached_gitops.yamlreader import YAMLInputError, iter_documents

from .test_cli import assert_clean_failure, run


def nested(levels: int) -> str:
    """A ConfigMap whose data nests ``levels`` maps in all (the document's own map is the first)."""
    inner = levels - 1
    return '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":' + '{"a":' * inner + "1" + "}" * inner + "}"


@pytest.mark.parametrize("levels", [990, 1500, 10_000])
def test_json_as_deep_as_kubectl_reads_is_read(levels: int) -> None:
    [doc] = list(iter_documents(nested(levels).encode()))
    value, maps = doc.value, 0
    while isinstance(value, dict):
        value = value.get("data", value.get("a"))
        maps += 1
    assert value == 1 and maps == levels


@pytest.mark.parametrize("levels", [10_001, 200_000])
def test_deeper_json_is_one_error_with_its_position(levels: int) -> None:
    with pytest.raises(YAMLInputError) as caught:
        list(iter_documents(nested(levels).encode()))
    assert "exceeded max depth of 10000" in caught.value.message and caught.value.line == 1 and caught.value.column > 1


@pytest.mark.parametrize("command", [["validate"], ["render"], ["argocd-generate"]])
@pytest.mark.parametrize("levels", [990, 10_000, 10_001])
def test_every_front_end_reads_deep_json_without_a_traceback(tmp_path: Path, command: list[str], levels: int) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "deep.json").write_text(nested(levels))
    (app / "cr.yaml").write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\n")
    proc = run(*command, str(app))
    if levels <= 10_000:
        assert proc.returncode == 0, proc.stderr.decode()[-500:]
    else:
        err = assert_clean_failure(proc)
        assert "deep.json:1:" in err and "exceeded max depth of 10000" in err


def test_json_on_stdin_and_a_second_value_after_a_deep_one() -> None:
    second = '{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"b"}}'
    proc = run("render", "-", stdin=(nested(3000) + "\n" + second).encode())
    assert proc.returncode == 0, proc.stderr.decode()[-500:]
    assert b"name: b" in proc.stdout
