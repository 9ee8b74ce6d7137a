"""JSON nested deeper than Python's recursion limit: read as kubectl reads it, never a traceback.

A stream that starts with ``{`` is cut into JSON values with the json module, whose C scanner
recurses in C once per level: about 990 levels used to crash every front end with a RecursionError.
Up to 10,000 levels are read as the same YAML is; deeper is refused with one line naming the file,
line and column. The C scanner's limit differs by Python version (the recursion limit on 3.11, a
fixed C limit from 3.12), so a value it gives up on is read again without C recursion, with the
levels counted (yamlreader.json_end): in linear time, on any thread's stack.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from memcached_gitops.foundation.yamlreader import MAX_DEPTH, YAMLInputError, iter_documents

from tests.support.cli import assert_clean_failure, run


def nested(levels: int) -> str:
    """A ConfigMap whose data nests ``levels`` maps in all (the document's own map is the first)."""
    inner = levels - 1
    return '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":' + '{"a":' * inner + "1" + "}" * inner + "}"


def opener_column(text: str, level: int) -> int:
    """1-based column of the first bracket that opens ``level`` (``text`` is one line, no brackets in strings)."""
    depth = 0
    for index, char in enumerate(text):
        depth += (char in "[{") - (char in "]}")
        if char in "[{" and depth == level:
            return index + 1
    raise AssertionError(f"no level {level}")


def same(a: Any, b: Any) -> bool:
    """``a == b`` without recursion (``==`` on 10,000 levels overflows Python's default limit)."""
    pairs = [(a, b)]
    while pairs:
        x, y = pairs.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            pairs += [(x[k], y[k]) for k in x]
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            pairs += list(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


@pytest.mark.parametrize("levels", [990, 1500, 10_000])
def test_json_as_deep_as_kubectl_reads_is_read(levels: int) -> None:
    [doc] = list(iter_documents(nested(levels).encode()))
    value, maps = doc.value, 0
    while isinstance(value, dict):
        value = value.get("data", value.get("a"))
        maps += 1
    assert value == 1 and maps == levels


@pytest.mark.parametrize("levels", [990, 5000, MAX_DEPTH])
def test_deep_json_reads_as_the_same_yaml(levels: int) -> None:
    text = nested(levels)
    [as_json] = list(iter_documents(text.encode()))
    [as_yaml] = list(iter_documents(("# not JSON\n" + text).encode()))  # not sniffed as JSON: the YAML path
    assert same(as_json.value, as_yaml.value)


@pytest.mark.parametrize("levels", [10_001, 200_000])
def test_deeper_json_is_one_error_with_its_position(levels: int) -> None:
    with pytest.raises(YAMLInputError) as caught:
        list(iter_documents(nested(levels).encode()))
    assert "exceeded max depth of 10000" in caught.value.message and caught.value.line == 1 and caught.value.column > 1


def test_deeper_json_is_refused_where_and_as_the_same_yaml_is() -> None:
    text = nested(MAX_DEPTH + 1)
    with pytest.raises(YAMLInputError) as as_json:
        list(iter_documents(text.encode()))
    with pytest.raises(YAMLInputError) as as_yaml:
        list(iter_documents(("# not JSON\n" + text).encode()))
    column = opener_column(text, MAX_DEPTH + 1)
    assert (as_json.value.message, as_json.value.line, as_json.value.column) == ("yaml: exceeded max depth of 10000", 1, column)
    assert (as_yaml.value.message, as_yaml.value.line, as_yaml.value.column) == ("yaml: exceeded max depth of 10000", 2, column)


def test_a_deep_third_value_is_refused_at_its_bracket() -> None:
    """After two values kubectl no longer falls back to YAML: the JSON error, at the 10,001st bracket."""
    first = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}\n'
    deep = nested(MAX_DEPTH + 1)
    with pytest.raises(YAMLInputError) as caught:
        list(iter_documents((first + first + deep).encode()))
    error = caught.value
    assert (error.message, error.line, error.column) == ("invalid JSON: exceeded max depth of 10000", 3, opener_column(deep, MAX_DEPTH + 1))


def test_a_syntax_error_before_the_depth_limit_comes_first() -> None:
    """encoding/json reads in order: a bad token at level 2,000 is the error, not the depth after it."""
    first = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}\n'
    bad = '{"a":' + "[" * 2000 + "x" + "[" * 20_000
    with pytest.raises(YAMLInputError) as caught:
        list(iter_documents((first + first + bad).encode()))
    assert (caught.value.message, caught.value.line, caught.value.column) == ("invalid JSON: Expecting value", 3, 1)


def test_strings_after_deep_nesting_are_read_in_linear_time() -> None:
    """An unterminated string of escaped quotes 1,000 levels down: one pass, not one per quote."""
    text = '{"a":' + "[" * 1000 + '"' + '\\"' * 40_000
    began = time.perf_counter()
    with pytest.raises(YAMLInputError):
        list(iter_documents(text.encode()))
    assert time.perf_counter() - began < 5  # 22 s when each quote rescanned the rest


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the real fixed C limit applies: the tests above meet it")
def test_a_c_scanner_with_a_fixed_limit_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """From Python 3.12 the C scanner's recursion is bounded by a C limit that sys.setrecursionlimit
    does not raise (3.12.1 gives up between 990 and 3,000 levels, 3.13.0 before 10,000): emulated here
    with a C scanner that gives up 1,500 levels down whatever the limit."""
    real = json.scanner.c_make_scanner
    assert real is not None

    def frames() -> int:
        frame, count = sys._getframe(), 0
        while frame is not None:
            frame, count = frame.f_back, count + 1
        return count

    def make_scanner(context: Any) -> Any:
        scan = real(context)

        def capped(string: str, idx: int) -> Any:
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(frames() + 1500)
            try:
                return scan(string, idx)
            finally:
                sys.setrecursionlimit(old)

        return capped

    monkeypatch.setattr(json.scanner, "make_scanner", make_scanner)
    with pytest.raises(RecursionError):
        json.JSONDecoder().raw_decode("[" * 3000 + "]" * 3000)  # the emulation holds
    [doc] = list(iter_documents(nested(MAX_DEPTH).encode()))
    assert doc.value["kind"] == "ConfigMap"


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13's C scanner recurses 10,000 levels before it gives up: "
                    "json.loads alone overflows a 512 KiB thread stack there")
def test_deep_json_on_a_thread_with_a_small_stack() -> None:
    """No C recursion per level: 10,000 levels fit a 512 KiB thread stack (a segfault otherwise)."""
    code = (
        "import threading\n"
        "from memcached_gitops.foundation.yamlreader import iter_documents\n"
        f"text = {nested(MAX_DEPTH)!r}\n"
        "threading.stack_size(512 * 1024)\n"
        "out = []\n"
        "thread = threading.Thread(target=lambda: out.append(len(list(iter_documents(text.encode())))))\n"
        "thread.start(); thread.join(); print(out)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == b"[1]", (proc.returncode, proc.stderr.decode()[-500:])


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


@pytest.mark.parametrize("levels", [990, 5000, MAX_DEPTH, MAX_DEPTH + 1])
def test_validate_deep_json_on_stdin(levels: int) -> None:
    text = nested(levels)
    proc = run("validate", "-", stdin=text.encode())
    if levels <= MAX_DEPTH:
        assert proc.returncode == 0, proc.stderr.decode()[-500:]
    else:
        err = assert_clean_failure(proc)
        assert f"<stdin>:1:{opener_column(text, MAX_DEPTH + 1)}: yaml: exceeded max depth of 10000\n" in err


def test_json_on_stdin_and_a_second_value_after_a_deep_one() -> None:
    second = '{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"b"}}'
    proc = run("render", "-", stdin=(nested(3000) + "\n" + second).encode())
    assert proc.returncode == 0, proc.stderr.decode()[-500:]
    assert b"name: b" in proc.stdout


class GivesUp(json.JSONDecoder):
    """A decoder whose C scanner gives up at once (RecursionError), so json_end takes its counting path."""

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        raise RecursionError


def deep_end(text: str) -> int:
    from memcached_gitops.foundation.yamlreader import json_end

    def no_constant(name: str) -> Any:
        raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")

    return json_end(GivesUp(parse_constant=no_constant), text, 0)


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_the_counting_path_reads_the_limit_and_refuses_one_more_in_process(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    at_limit = opener * MAX_DEPTH + "1" + closer * MAX_DEPTH
    assert deep_end(at_limit) == len(at_limit)
    with pytest.raises(ValueError, match="exceeded max depth"):
        deep_end(opener * (MAX_DEPTH + 1) + "1" + closer * (MAX_DEPTH + 1))


def array_with_a_closed_one(more: int) -> str:
    """6,000 open arrays, an empty one opened and closed in the innermost, then ``more`` arrays beside it."""
    return "[" * 6000 + "[]," + "[" * more + "1" + "]" * more + "]" * 6000


def object_with_a_closed_one(more: int) -> str:
    """6,000 open objects, then one more holding an empty object and, beside it, ``more`` objects."""
    return '{"a":' * 6000 + '{"k":{},"m":' + '{"a":' * more + "1" + "}" * more + "}" + "}" * 6000


@pytest.mark.parametrize(("make", "limit"), [(array_with_a_closed_one, 4000), (object_with_a_closed_one, 3999)])
def test_the_counting_path_counts_a_closed_collection_out(make: Any, limit: int) -> None:
    """Levels are counted down as collections close: past a closed collection, the levels still open
    and the new ones make 10,000 at most (read) or one more (refused)."""
    assert deep_end(make(limit)) == len(make(limit))
    with pytest.raises(ValueError, match="exceeded max depth"):
        deep_end(make(limit + 1))


def test_the_counting_path_refuses_nan_as_encoding_json_does() -> None:
    with pytest.raises(ValueError, match="invalid character 'N'"):
        deep_end("[" * 2000 + "NaN" + "]" * 2000)
