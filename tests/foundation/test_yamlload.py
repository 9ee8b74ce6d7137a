"""YAML as kubectl reads it, safely: scalars, keys, tags, aliases, positions, junk."""

from __future__ import annotations

import io
import math

import pytest
from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents, resolve_plain


def values(text: str) -> list:
    return [d.value for d in iter_documents(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # goyaml.v2 resolve.go resolveMapList
        ("y", True), ("Y", True), ("yes", True), ("YES", True), ("on", True), ("On", True), ("true", True),
        ("n", False), ("no", False), ("off", False), ("OFF", False), ("False", False),
        ("~", None), ("null", None), ("NULL", None), ("", None),
        ("yEs", "yEs"), ("nope", "nope"), ("tRUE", "tRUE"),
        # strconv.ParseInt(s, 0, 64) after removing underscores
        ("0x1F", 31), ("-0x1F", -31), ("017", 15), ("0o17", 15), ("0b11", 3), ("-0b101", -5), ("1_000", 1000),
        ("+5", 5), ("0", 0), ("-0", 0), ("9223372036854775807", 9223372036854775807),
        # uint64: ParseUint succeeds (the JSON step turns it into a float: see the next test)
        ("18446744073709551615", 18446744073709551615),
        # floats: the YAML float pattern
        ("1e3", 1000.0), ("1.5", 1.5), (".5", 0.5), ("08", 8.0), ("1.", 1.0), ("-1.5e-3", -0.0015),
        # not numbers
        ("1.2.3", "1.2.3"), ("0x", "0x"), ("+", "+"), ("-", "-"), ("12:30", "12:30"), ("2001-12-14", "2001-12-14"),
        ("1e", "1e"), ("0b12", "0b12"), (".", "."), (".x", ".x"),
    ],
)
def test_plain_scalars_resolve_like_go_yaml_v2(text: str, expected: object) -> None:
    value = resolve_plain(text)
    if isinstance(expected, float):
        assert value == expected
    else:
        assert value == expected and type(value) is type(expected)


def test_json_numbers_as_the_server_reads_them() -> None:
    [doc] = values("a: 1.0\nb: 1e3\nc: 1.5\nd: 1e21\ne: 99999999999999999999\n")
    assert doc == {"a": 1, "b": 1000, "c": 1.5, "d": 1e21, "e": 1e20}
    assert type(doc["a"]) is int and type(doc["b"]) is int and type(doc["d"]) is float and type(doc["e"]) is float


def test_quoted_and_tagged_scalars() -> None:
    [doc] = values("a: 'yes'\nb: \"1\"\nc: !!str 1\nd: !!int '7'\ne: !!float 1\nf: !!bool 'on'\ng: !!null ''\n")
    assert doc == {"a": "yes", "b": "1", "c": "1", "d": 7, "e": 1, "f": True, "g": None}


def test_keys_become_strings() -> None:
    [doc] = values("1: a\ntrue: b\n1.5: c\non: d\n0x10: e\n")
    assert doc == {"1": "a", "true": "b", "1.5": "c", "16": "e"} | {"true": "d"}


@pytest.mark.parametrize("text", ["? [1]\n: a\n", "? {a: 1}\n: b\n", "~: a\n"])
def test_unsupported_keys_are_errors(text: str) -> None:
    with pytest.raises(YAMLInputError, match="key"):
        values(text)


def test_a_y_key_is_the_boolean_true() -> None:
    # go-yaml v2 resolves the plain key y as a boolean; convertToJSONableObject writes it "true"
    assert values("y: 1\nn: 2\n") == [{"true": 1, "false": 2}]


def test_duplicate_keys_last_wins() -> None:
    assert values("a: 1\nb: 2\na: 3\n") == [{"a": 3, "b": 2}]


def test_merge_keys_and_aliases_are_copies() -> None:
    [doc] = values("base: &b {x: 1, w: 2}\nm: {<<: *b, w: 3}\nc: *b\n")
    assert doc == {"base": {"x": 1, "w": 2}, "m": {"x": 1, "w": 3}, "c": {"x": 1, "w": 2}}
    doc["c"]["x"] = 9
    assert doc["base"]["x"] == 1, "an alias must not share the anchored value (defaulting mutates in place)"


@pytest.mark.parametrize(
    "text",
    ["a: !!python/object:os.system ls\n", "a: !foo bar\n", "!!python/name:os.system\n", "a: !custom b\n",
     "a: [!!python/object/apply:os.system ls]\n"],
)
def test_only_core_tags_are_accepted(text: str) -> None:
    # kubectl would read these scalars as their text; untrusted YAML gets no arbitrary tags (README)
    with pytest.raises(YAMLInputError, match="^unknown tag .*: only the YAML core tags are allowed$"):
        values(text)


def test_alias_bomb_is_refused_quickly() -> None:
    # six levels of nine (531,441 copies) are refused as a billion would be; a loader without the
    # bound would still finish this one, and the test would fail rather than hang
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 7):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i-1}"] * 9) + "]")
    with pytest.raises(YAMLInputError, match="excessive aliasing"):
        values("\n".join(lines) + "\n")


def test_moderate_aliasing_is_fine() -> None:
    text = "base: &b {x: 1}\n" + "".join(f"k{i}: *b\n" for i in range(100))
    assert len(values(text)[0]) == 101


@pytest.mark.parametrize(
    ("text", "line"),
    [("a: [1, 2\n", 2), ("a: b: c\n", 1), ("a:\n\t- 1\n", 2), ("key: 'unterminated\n", 2), ("- a\nb: c\n", 2)],
)
def test_syntax_errors_have_positions(text: str, line: int) -> None:
    with pytest.raises(YAMLInputError) as info:
        values(text)
    assert info.value.message.startswith("invalid YAML")
    assert info.value.line == line


def test_binary_junk_is_an_error_not_a_crash() -> None:
    with pytest.raises(YAMLInputError, match="invalid YAML"):
        values(b"\x00\x01\x02\xff\xfe garbage")


def test_nan_and_infinity_cannot_become_json() -> None:
    for text in ("a: .nan\n", "a: -.inf\n", "a: !!float .inf\n"):
        with pytest.raises(YAMLInputError, match="JSON has no NaN"):
            values(text)
    assert math.isinf(resolve_plain(".inf"))


def test_empty_and_null_documents_are_skipped() -> None:
    assert values("") == []
    assert values("---\n---\n# only a comment\n") == []
    assert values("---\na: 1\n---\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


def test_positions_point_at_keys() -> None:
    [doc] = list(iter_documents("a:\n  b:\n    - x\n    - y: 1\n      z: 2\n"))
    assert doc.position(("a",)) == (1, 1)
    assert doc.position(("a", "b")) == (2, 3)
    assert doc.position(("a", "b", 1, "z")) == (5, 7)
    assert doc.position(("a", "missing")) == (1, 1), "a missing field points at its parent"


def test_streams_from_files_are_read_lazily() -> None:
    stream = io.BytesIO(b"a: 1\n---\nb: 2\n---\n[broken\n")
    docs = iter_documents(stream)
    assert next(docs).value == {"a": 1}
    assert next(docs).value == {"b": 2}
    with pytest.raises(YAMLInputError):
        next(docs)


@pytest.mark.parametrize("text", ["a: [1, {b: c}, [d]]\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nx: [{}, {}]\n",
                                  "- &x [1, 2]\n- *x\n"])
def test_a_budget_of_exactly_a_streams_nodes_reads_it_and_one_fewer_refuses_it(text: str) -> None:
    """The node budget's bound is inclusive: a run whose input has exactly ``limit`` nodes reads it
    (a repository sized to the bound is not refused), one node more is refused where it passes."""
    from memcached_gitops.foundation.yamlreader import NodeBudget, TooManyNodes

    counted = NodeBudget(10**6)
    expected = [d.value for d in iter_documents(text, counted)]
    exact = NodeBudget(counted.used)
    assert [d.value for d in iter_documents(text, exact)] == expected and exact.used == exact.limit
    with pytest.raises(TooManyNodes, match=f"more than {counted.used - 1} YAML nodes"):
        list(iter_documents(text, NodeBudget(counted.used - 1)))
