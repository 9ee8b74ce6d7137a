"""YAML as kubectl v1.37 turns it into JSON, rule by rule, with the positions of what it refuses.

kubectl reads a manifest with sigs.k8s.io/yaml: go-yaml v2 decodes it (resolve.go, decode.go,
scannerc.go under vendor/go.yaml.in/yaml/v2), ``convertToJSONableObject`` turns map keys into
strings (vendor/sigs.k8s.io/yaml/yaml.go), json.Marshal writes the JSON and encoding/json reads
it back. Every expected value here is what ``kubectl label --local -o json -f FILE x=y`` printed
for the same text (client side, no server), or a constant of those sources.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys

import pytest
from memcached_gitops.foundation.yamlreader import (
    DEPTH_ERROR,
    JSON_DEPTH_ERROR,
    MAX_DOCUMENT_SIZE,
    YAMLInputError,
    iter_documents,
    locate,
    recursion_room,
    resolve_plain,
)


def value(text: str) -> object:
    """The one document of ``text``."""
    (doc,) = iter_documents(text)
    return doc.value


def values(text: str) -> list:
    """Every document of ``text``."""
    return [doc.value for doc in iter_documents(text)]


def refusal(text: str | bytes | io.IOBase) -> tuple[int, int, str]:
    """(line, column, message) of the error reading ``text``."""
    with pytest.raises(YAMLInputError) as caught:
        list(iter_documents(text))
    return caught.value.line, caught.value.column, caught.value.message


def same(actual: object, expected: object) -> bool:
    """Equal, and of the same JSON type (1 is not 1.0, True is not 1)."""
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(same, actual, expected))
    if isinstance(expected, dict):
        return isinstance(actual, dict) and actual.keys() == expected.keys() and all(
            same(actual[k], expected[k]) for k in expected)
    return type(actual) is type(expected) and actual == expected


# --- plain scalars: go-yaml v2 resolve.go ---------------------------------------------------------

BOOLEANS = {
    **dict.fromkeys(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"], True),
    **dict.fromkeys(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"], False),
}


@pytest.mark.parametrize(("text", "expected"), BOOLEANS.items())
def test_every_spelling_of_resolve_go_booleans(text: str, expected: bool) -> None:
    assert resolve_plain(text) is expected


@pytest.mark.parametrize("text", ["", "~", "null", "Null", "NULL"])
def test_every_spelling_of_null(text: str) -> None:
    assert resolve_plain(text) is None


@pytest.mark.parametrize(
    "text", ["yES", "oN", "oFF", "tRUE", "nULL", "NuLL", "~~", "~a", "Nil", "none", "o", "t", "f", "<<", "_1", "=",
             ".iNf", "+.iNF", "-.InF", ".nAn", "+.nan", "-.nan", "+.", "-."])
def test_other_spellings_stay_strings(text: str) -> None:
    assert same(resolve_plain(text), text)


@pytest.mark.parametrize("text", [".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"])
def test_positive_infinity_spellings(text: str) -> None:
    assert resolve_plain(text) == math.inf


@pytest.mark.parametrize("text", ["-.inf", "-.Inf", "-.INF"])
def test_negative_infinity_spellings(text: str) -> None:
    assert resolve_plain(text) == -math.inf


@pytest.mark.parametrize("text", [".nan", ".NaN", ".NAN"])
def test_nan_spellings(text: str) -> None:
    assert math.isnan(resolve_plain(text))


def test_integer_forms_of_parseint_base_0() -> None:
    # kubectl: [31, 15, 3, 16, -15, "0o8", 9, 10, "_1", 31, "0b", "0o", "-0b", "0x"]
    text = "x: [0X1f, 0O17, 0B11, +0x10, -0o17, 0o8, 09, 1__0, _1, 0x_1F, 0b, 0o, -0b, 0x]\n"
    assert same(value(text), {"x": [31, 15, 3, 16, -15, "0o8", 9, 10, "_1", 31, "0b", "0o", "-0b", "0x"]})
    # kubectl: ["0o", "0O", 0, 0, 0, 1000, 1000, 1000, -0.0005]
    assert same(value("x: [0o, 0O, 00, 0_0, +0, 1e+3, 1E3, 1.e3, -.5e-3]\n"),
                {"x": ["0o", "0O", 0, 0, 0, 1000, 1000, 1000, -0.0005]})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-9223372036854775808", -9223372036854775808),  # int64's least: still an int
        ("-9223372036854775809", -9.223372036854776e18),  # below it: a float
        ("18446744073709551615", 18446744073709551615),  # uint64's most: ParseUint
        ("18446744073709551616", 1.8446744073709552e19),  # beyond it: the float pattern
        ("0xFFFFFFFFFFFFFFFF", 18446744073709551615),
        ("0x10000000000000000", "0x10000000000000000"),  # hex beyond uint64 matches no float: a string
        ("-0x8000000000000000", -9223372036854775808),
        ("-0x8000000000000001", "-0x8000000000000001"),
        ("0x" + "0" * 20 + "1", 1),  # leading zeros are no digits
        ("0b" + "1" * 64, 18446744073709551615),
        ("0b" + "1" * 65, "0b" + "1" * 65),
        ("0b" + "0" * 70 + "1", 1),
        ("0o1" + "7" * 21, 18446744073709551615),
        ("0o2" + "0" * 21, "0o2" + "0" * 21),
        ("01" + "7" * 21, 18446744073709551615),  # a leading 0 is octal too
        ("02" + "0" * 21, 2.0e21),  # beyond uint64: the float pattern reads it as decimal
        ("0" * 30 + "7", 7),
        ("9" * 20, 1e20),
        ("-" + "1" * 19, -1111111111111111111),
    ],
)
def test_integer_range_is_int64_then_uint64(text: str, expected: object) -> None:
    assert same(resolve_plain(text), expected)


def test_a_scalar_starting_with_a_dot_is_parsefloat_with_underscores() -> None:
    # resolve.go tries strconv.ParseFloat on ".…" with no pattern: underscores between digits pass
    # kubectl: [0.5, 500, 500, ".e3", ".5.", ".5e", ".1e400", 0, 0.5, -0.5, "._5", 0.01]
    text = "x: [.5_0, .5e3, .5E+3, .e3, .5., .5e, .1e400, 1e-400, +.5, -.5, ._5, .0_1]\n"
    assert same(value(text), {"x": [0.5, 500, 500, ".e3", ".5.", ".5e", ".1e400", 0, 0.5, -0.5, "._5", 0.01]})
    assert same(resolve_plain(".5_e3"), ".5_e3") and same(resolve_plain(".5e_3"), ".5e_3")
    assert same(resolve_plain(".5e3_0"), 5e29) and same(resolve_plain(".2"), 0.2)


def test_a_number_parsefloat_cannot_hold_stays_the_text_written() -> None:
    assert same(resolve_plain("1_0e400"), "1_0e400")
    assert same(resolve_plain(".5e400"), ".5e400")
    assert same(resolve_plain("-1e400"), "-1e400")


# --- JSON numbers: json.Marshal, then the server's int64-or-float64 reading ----------------------


def test_integral_floats_are_read_back_from_their_json_digits() -> None:
    # json.Marshal prints a float's shortest digits; kubectl printed
    # [1152921504606847000, 1152921504606847000, 9007199254740992, 123456789012345680, 100000000000000000000]
    text = "x: [1152921504606846976.0, 1.152921504606847e18, 9007199254740993.0, 123456789012345678.0, 1e20]\n"
    assert same(value(text), {"x": [1152921504606847000, 1152921504606847000, 9007199254740992,
                                    123456789012345680, 1e20]})


def test_json_integers_are_int64() -> None:
    text = ("x: [9223372036854775807, -9223372036854775808, 9223372036854775808, -0.0, 1.5, 9223372036854775807.0, "
            "-9223372036854775808.0, 1e19]\n")
    # 2**63 as a float prints 9223372036854775808 digits beyond int64: read back as a float, both signs
    assert same(value(text), {"x": [9223372036854775807, -9223372036854775808, 9.223372036854775808e18, 0, 1.5,
                                    9.223372036854775808e18, -9.223372036854775808e18, 1e19]})


@pytest.mark.parametrize(("text", "column"), [("a: .nan\n", 4), ("a: [1, -.Inf]\n", 8), ("a: !!float .inf\n", 4)])
def test_nan_and_infinity_are_refused_where_they_are(text: str, column: int) -> None:
    line, col, message = refusal(text)
    assert (line, col) == (1, column)
    assert message.startswith("unsupported value \"") and message.endswith("\": JSON has no NaN or infinity")


# --- map keys: convertToJSONableObject -------------------------------------------------------------


def test_float_keys_are_written_as_float32_shortest() -> None:
    # strconv.FormatFloat(key, 'g', -1, 32); kubectl printed these keys
    text = ("x: {1e6: a, 1234567.0: b, 0.1: c, 1.1: d, 3.14159265358979: e, 1e21: f, 1.0: g, 100000.0: h, "
            "0.0001: i, 0.00001: j, 16777217.0: k, -9223372036854775809: l, 99999999999999999999: m}\n")
    assert value(text) == {"x": {
        "1e+06": "a", "1.234567e+06": "b", "0.1": "c", "1.1": "d", "3.1415927": "e", "1e+21": "f", "1": "g",
        "100000": "h", "0.0001": "i", "1e-05": "j", "1.6777216e+07": "k", "-9.223372e+18": "l", "1e+20": "m"}}


def test_float_keys_at_float32_limits() -> None:
    # kubectl: {"-0": "e", "0": "c", "1": "d", "1e-45": "b", "3.4028235e+38": "a", ".inf": "f", "-1.5e-05": "g"}
    text = "x: {3.4028235e38: a, 1.4e-45: b, 1e-46: c, 0.1e1: d, -1e-46: e, 1e39: f, -0.000015: g}\n"
    assert value(text) == {"x": {"3.4028235e+38": "a", "1e-45": "b", "0": "c", "1": "d", "-0": "e", ".inf": "f",
                                 "-1.5e-05": "g"}}


def test_infinite_and_nan_keys_are_go_yaml_words() -> None:
    # JSON has no NaN, but a key is a string: kubectl {"-.inf": "b", "-0": "d", ".inf": "a", ".nan": "c"}
    assert value("x: {.inf: a, -.inf: b, .nan: c, -0.0: d, -1e39: e}\n") == {
        "x": {".inf": "a", "-.inf": "b", ".nan": "c", "-0": "d"} | {"-.inf": "e"}}


def test_integer_and_boolean_keys() -> None:
    # kubectl: {"-9223372036854775808": "b", "9223372036854775807": "a", ...}
    text = "x: {9223372036854775807: a, -9223372036854775808: b, 0x7FFFFFFFFFFFFFFF: c, 08: d, 1_0: e, off: f, Y: g}\n"
    assert value(text) == {"x": {"9223372036854775807": "c", "-9223372036854775808": "b", "8": "d", "10": "e",
                                 "false": "f", "true": "g"}}
    assert value('x: {"1e6": a, !!float 1: b, !!float 0x10: c, !!str 1.0: d, 2001-12-14: e}\n') == {
        "x": {"1e6": "a", "1": "b", "16": "c", "1.0": "d", "2001-12-14": "e"}}


@pytest.mark.parametrize("key", ["9223372036854775808", "18446744073709551615", "0x8000000000000000"])
def test_a_uint64_key_is_refused_at_the_key(key: str) -> None:
    # kubectl: unsupported map key of type: uint64, key: 0x8000000000000000, value: "a"
    assert refusal(f"x:\n  b: 1\n  {key}: a\n") == (
        3, 3, f'unsupported map key "{key}": an integer key must fit in int64')


def test_a_null_key_is_refused_at_the_key() -> None:
    # kubectl: unsupported map key of type: %!s(<nil>), key: <nil>, value: 1
    assert refusal("x: {a: 1, ~: 1}\n") == (1, 11, 'unsupported map key "~": a key must be a string, number or boolean')
    assert refusal("x:\n  !!null : 1\n")[:2] == (2, 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: .nan\na: 1\n", {"a": 1}),
        ("m: {~: 1}\nm: {b: 2}\n", {"m": {"b": 2}}),
        ("m: [{18446744073709551615: a}]\nm: 1\n", {"m": 1}),
        ("x: {a: [.inf], <<: {a: 1}}\n", {"x": {"a": 1}}),  # a merge writes over it
        ("x: {<<: {a: -.inf, b: 1}, a: 2}\n", {"x": {"a": 2, "b": 1}}),
        ("k: &k {x: .nan}\nk: 1\nc: {<<: *k, x: 2}\n", {"k": 1, "c": {"x": 2}}),
    ],
)
def test_what_json_cannot_carry_is_no_error_once_a_later_key_replaces_it(text: str, expected: dict) -> None:
    # convertToJSONableObject and json.Marshal see the decoded map, where a duplicate key has
    # replaced the earlier value: kubectl sends {"a": 1} for the first text (bench/validator_differential.py)
    assert same(value(text), expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- .nan\n- {a: 1}\n", (1, 3, 'unsupported value ".nan": JSON has no NaN or infinity')),
        ("a: .nan\nb: [1]\n", (1, 4, 'unsupported value ".nan": JSON has no NaN or infinity')),
        ("a: [1, {b: .inf}]\na: [2, {b: -.inf}]\n", (2, 12, 'unsupported value "-.inf": JSON has no NaN or infinity')),
        # the first left in document order: a key before a value, a value before a key
        ("a: {~: 1}\nb: .nan\n", (1, 5, 'unsupported map key "~": a key must be a string, number or boolean')),
        ("a: .nan\nb: {~: 1}\n", (1, 4, 'unsupported value ".nan": JSON has no NaN or infinity')),
        ("a: {~: 1}\nb: {c: 1}\na: {0x8000000000000000: 1}\n",
         (3, 5, 'unsupported map key "0x8000000000000000": an integer key must fit in int64')),
        (".nan\n", (1, 1, 'unsupported value ".nan": JSON has no NaN or infinity')),
        ("a: &n .nan\na: 1\nb: *n\n", (1, 4, 'unsupported value ".nan": JSON has no NaN or infinity')),
    ],
)
def test_what_json_cannot_carry_and_is_left_is_refused_where_it_is(text: str, expected: tuple[int, int, str]) -> None:
    assert refusal(text) == expected


@pytest.mark.parametrize(("text", "position"), [("x:\n  ? [1]\n  : 2\n", (2, 5)), ("x: {a: 1, {b: 1}: 2}\n", (1, 11))])
def test_a_collection_key_is_refused_at_the_key(text: str, position: tuple[int, int]) -> None:
    # kubectl: yaml: invalid map key: []interface {}{1}
    assert refusal(text) == (*position, "unsupported map key: a key must be a scalar")


def test_an_alias_as_key_is_its_anchor_s_scalar() -> None:
    assert value("&k a: 1\n*k : 2\nb: *k\n") == {"a": 2, "b": "a"}


# --- tags --------------------------------------------------------------------------------------------


def test_core_tags_as_go_yaml_decodes_them() -> None:
    # kubectl: ["1", 16, 10, 1.5, 8, null, null, true, false]
    text = 'x: [!!str 1, !!int 0x10, !!int 1_0, !!float "1.5", !!float 08, !!null ~, !!null "", !!bool yes, !!bool "N"]\n'
    assert same(value(text), {"x": ["1", 16, 10, 1.5, 8, None, None, True, False]})
    # kubectl: ["2001-12-14", "2001-12-14 21:59:43.10", "2001-12-14T21:59:43.10-05:00"]
    text = 'x: [!!timestamp 2001-12-14, !!timestamp "2001-12-14 21:59:43.10", 2001-12-14T21:59:43.10-05:00]\n'
    assert same(value(text), {"x": ["2001-12-14", "2001-12-14 21:59:43.10", "2001-12-14T21:59:43.10-05:00"]})
    assert same(value("x: [!!str, !!str ~, !!str yes, !!float -9223372036854775809, !!int 18446744073709551615]\n"),
                {"x": ["", "~", "yes", -9.223372036854775808e18, 1.8446744073709552e19]})
    # int64's most as a !!float: 2**63, printed 9223372036854775808 and read back as a float
    assert same(value("x: !!float 9223372036854775807\n"), {"x": 9.223372036854775808e18})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # kubectl's words: yaml: cannot decode !!str `abc` as a !!int
        ('a: !!int "abc"\n', 'cannot decode !!str "abc" as a !!int'),
        ("a: !!int 1.0\n", 'cannot decode !!float "1.0" as a !!int'),
        ("a: !!int yes\n", 'cannot decode !!bool "yes" as a !!int'),
        ("a: !!int ~\n", 'cannot decode !!null "~" as a !!int'),
        ("a: !!bool 1\n", 'cannot decode !!int "1" as a !!bool'),
        ("a: !!bool 1.5\n", 'cannot decode !!float "1.5" as a !!bool'),
        ("a: !!float yes\n", 'cannot decode !!bool "yes" as a !!float'),
        ('a: !!float "x"\n', 'cannot decode !!str "x" as a !!float'),
        ("a: !!float 18446744073709551615\n", 'cannot decode !!int "18446744073709551615" as a !!float'),
        ("a: !!float 9223372036854775808\n", 'cannot decode !!int "9223372036854775808" as a !!float'),
        ("a: !!null 1\n", 'cannot decode !!int "1" as a !!null'),
        ("a: !!null no\n", 'cannot decode !!bool "no" as a !!null'),
    ],
)
def test_a_core_tag_that_does_not_fit_is_refused_at_the_scalar(text: str, message: str) -> None:
    assert refusal(text) == (1, 4, message)


def test_the_non_specific_tag_keeps_a_scalar_a_string() -> None:
    # go-yaml resolves only untagged scalars; kubectl: ["1", [1], {"a": 1}]; transcript 38's last
    # create: kubectl sends ``size: ! 2`` as "2" (tests/fixtures/apiserver-transcripts/38-validator-differential.json)
    assert same(value("x: [! 1, ! [1], ! {a: 1}, ! yes, ! ~]\n"), {"x": ["1", [1], {"a": 1}, "yes", "~"]})


def test_map_and_seq_tags_are_accepted_on_collections() -> None:
    # go-yaml ignores a collection's tag: kubectl {"x": [1]} for !!map [1]
    assert value("a: !!map {b: 1}\nc: !!seq [1]\nd: !!seq {e: 1}\nf: !!map [2]\n") == {
        "a": {"b": 1}, "c": [1], "d": {"e": 1}, "f": [2]}


def test_any_tag_on_a_collection_is_ignored_as_go_yaml_ignores_it() -> None:
    """go-yaml's parser records no tag for a map or a sequence (GY decode.go:201-221): kubectl v1.37.1
    sends ``!!str {x: a}``, ``!!omap {x: a}`` and ``!custom {w: z}`` as maps, and kube-apiserver v1.36.2
    accepts a ConfigMap whose metadata is ``!!str {name: c}``. Nothing is constructed from the tag,
    so none is a danger (a scalar's unknown tag is still refused: test_other_tags_are_refused_where_they_are)."""
    text = ("a: !!str {x: a}\nb: !!omap {x: a}\nc: !custom {w: z}\nd: !seq [1]\ne: !!int [2]\nf: !!null {}\n"
            "g: !!python/object/apply:os.system [ls]\nh: !!binary\n  - 3\n")
    assert value(text) == {"a": {"x": "a"}, "b": {"x": "a"}, "c": {"w": "z"}, "d": [1], "e": [2], "f": {}, "g": ["ls"], "h": [3]}
    assert value("!custom\nkind: K\n") == {"kind": "K"}


@pytest.mark.parametrize(
    ("text", "position", "tag"),
    [("a: !foo 1\n", (1, 4), "!foo"), ("a:\n  - !custom b\n", (2, 5), "!custom"), ("- !seq 1\n", (1, 3), "!seq"),
     ("a: !!omap x\n", (1, 4), "tag:yaml.org,2002:omap"),
     ("a: !!python/object:os.system ls\n", (1, 4), "tag:yaml.org,2002:python/object:os.system"),
     ("b: 1\n!!python/name:os.system : 2\n", (2, 1), "tag:yaml.org,2002:python/name:os.system"),
     ("a: !!merge x\n", (1, 4), "tag:yaml.org,2002:merge")],  # merge is a tag for a key only
)
def test_other_tags_are_refused_where_they_are(text: str, position: tuple[int, int], tag: str) -> None:
    # stricter than kubectl, which reads a scalar with a tag it cannot resolve as its text (kubectl
    # sends ``!foo 2`` as "2"): untrusted YAML is parsed safely, no arbitrary tags (README)
    assert refusal(text) == (*position, f'unknown tag "{tag}": only the YAML core tags are allowed')


def test_binary_is_base64_decoded_as_go_yaml_does() -> None:
    # decode.go scalar: base64.StdEncoding (padding required, bits after the last byte ignored,
    # line breaks skipped); kubectl sends !!binary aGVsbG8= as "hello" and !!binary Mg== as "2"
    text = 'x: [!!binary aGVsbG8=, !!binary Mg==, !!binary "", !!binary aG==, !!binary "aGVs\\rbG8=", !!binary w6k=]\n'
    assert same(value(text), {"x": ["hello", "2", "", "h", "hello", "é"]})
    assert value("x: !!binary |\n  aGVs\n  bG8=\n") == {"x": "hello"}
    assert value("!!binary aGk= : 1\n") == {"hi": 1}


def test_binary_bytes_that_are_not_utf8_are_written_as_json_marshal_writes_them() -> None:
    # a Go string holds any bytes; json.Marshal writes each byte that is not UTF-8 as U+FFFD
    assert value("x: [!!binary /w==, !!binary 4oI=, !!binary 7aCA, !!binary YcM=]\n") == {
        "x": ["\ufffd", "\ufffd\ufffd", "\ufffd\ufffd\ufffd", "a\ufffd"]}


@pytest.mark.parametrize("text", ["%%", "aGVsbG8", "aGk=aGk=", "aGk==", "=", "aGVs bG8=", "é"])
def test_binary_that_is_not_base64_is_refused_at_the_scalar(text: str) -> None:
    # go-yaml's words: yaml: !!binary value contains invalid base64 data
    assert refusal(f"a: !!binary '{text}'\n") == (1, 4, "!!binary value contains invalid base64 data")


# --- merge keys: decode.go mapping and merge --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # kubectl printed each of these
        ("x: {a: 1, <<: {a: 2, b: 2}}\n", {"a": 2, "b": 2}),  # a merge writes over the keys before it
        ("x: {<<: {a: 2, b: 2}, a: 1}\n", {"a": 1, "b": 2}),  # a later key writes over the merge
        ("x: {<<: [{a: 1}, {a: 2, b: 2}]}\n", {"a": 1, "b": 2}),  # in a list, earlier maps win
        ("x: {<<: {a: 1}, <<: {a: 2}}\n", {"a": 2}),  # two merges: the later wins
        ("x: {!!merge <<: {a: 1}}\n", {"a": 1}),
        ('x: {"<<": {a: 1}}\n', {"<<": {"a": 1}}),  # a quoted << is a key
        ("x: {<<: [], a: 1}\n", {"a": 1}),
        ("x: {<<: {}}\n", {}),
        ("x: {<<: {<<: {a: 1, b: 1}, b: 2}, c: 3}\n", {"a": 1, "b": 2, "c": 3}),
    ],
)
def test_merge_keys_apply_in_document_order(text: str, expected: dict) -> None:
    assert value(text) == {"x": expected}


def test_merge_through_aliases() -> None:
    text = "b: &b {a: 1, w: 1}\nc: &c {w: 2, z: 2}\nx:\n  <<: [*b, *c]\n  z: 3\n"
    assert value(text)["x"] == {"a": 1, "w": 1, "z": 3}


@pytest.mark.parametrize(
    ("text", "position"),
    [("a: {b: 1}\nm:\n  <<: 5\n", (3, 7)), ("m: {<<: [{a: 1}, 3]}\n", (1, 9)), ("m: {<<: ~}\n", (1, 9)),
     ("s: &s 5\nm: {<<: *s}\n", (1, 4)), ("m: {<<: [[{a: 1}]]}\n", (1, 9))],
)
def test_a_merge_of_anything_but_maps_is_refused(text: str, position: tuple[int, int]) -> None:
    # kubectl: yaml: map merge requires map or sequence of maps as the value
    assert refusal(text) == (*position, "map merge requires map or sequence of maps as the value")


# --- anchors and aliases -------------------------------------------------------------------------------


def test_a_redefined_anchor_serves_the_aliases_after_it() -> None:
    assert value("a: &x 1\nb: *x\nc: &x 2\nd: *x\n") == {"a": 1, "b": 1, "c": 2, "d": 2}
    assert value("a: &x [1]\nb: *x\nc: &x {k: v}\nd: *x\n") == {"a": [1], "b": [1], "c": {"k": "v"}, "d": {"k": "v"}}


def test_an_unknown_anchor_is_refused_at_the_alias() -> None:
    # kubectl: yaml: unknown anchor 'nope' referenced
    assert refusal("a: 1\nb: *nope\n") == (2, 4, "unknown anchor 'nope' referenced")
    assert refusal("a: [*x, &x 1]\n") == (1, 5, "unknown anchor 'x' referenced"), "an anchor serves only what follows"


def test_an_anchor_inside_itself_is_refused_at_the_alias() -> None:
    # kubectl: yaml: anchor 'a' value contains itself
    assert refusal("a:\n  - &x [1, *x]\n") == (2, 12, "anchor 'x' value contains itself")
    assert refusal("a: &x {b: {c: *x}}\n") == (1, 15, "anchor 'x' value contains itself")
    assert value("a: &x {b: 1}\nc: {d: *x}\n") == {"a": {"b": 1}, "c": {"d": {"b": 1}}}


def test_an_anchor_name_is_quoted_and_cut() -> None:
    name = "n" * 100
    assert refusal(f"a: *{name}\n")[2] == f"unknown anchor '{'n' * 64}…' referenced"


def _aliases(items: int, keys: int, copies: int, extra: str = "") -> str:
    """A list of ``items`` scalars, ``keys`` more keys, then ``copies`` aliases of the list (and ``extra``).

    Nodes built: the document's map, "a", the list and its items, the keys and their values, "b"
    and its list are new; each copy revisits the list and its items.
    """
    keys_text = "".join(f"k{i}: &s{i} 1\n" for i in range(keys))
    copied = ", ".join(["*a"] * copies + ([extra] if extra else []))
    return "a: &a [" + ", ".join(["1"] * items) + "]\n" + keys_text + "b: [" + copied + "]\n"


def test_aliases_are_bounded_by_go_yaml_s_share_of_decodes() -> None:
    """go-yaml v2 counts every node it decodes (the document's first, an alias once and what it names
    again) and refuses a document once over 100 decodes came from aliases, over 1,000 in all, and
    their share is above 99% (GY decode.go:321-357). 200 copies of a 200-item list: 40,201 of 40,609
    decodes (99.0005%) are refused, 199 copies (98.9998%) are not; kubectl v1.37.1 answers the same
    (``yaml: document contains excessive aliasing`` for 200 only)."""
    assert len(value(_aliases(200, 0, 199))["b"]) == 199
    assert refusal(_aliases(200, 0, 200)) == (1, 590, "document contains excessive aliasing")  # in the list copied


def test_a_document_under_one_thousand_decodes_or_one_hundred_aliased_may_alias_anything() -> None:
    # 998 copies of a 10-node list: 10,999 decodes, 9,980 from aliases (91%): kubectl v1.37.1 reads it
    assert len(value(_aliases(9, 3, 998))["b"]) == 998
    assert len(value(_aliases(9, 0, 90))["b"]) == 90  # 920 decodes: under 1,000, any share
    three_levels = ("a0: &a0 [1,1,1,1,1,1,1,1]\na1: &a1 [" + ",".join(["*a0"] * 8) + "]\na2: &a2 ["
                    + ",".join(["*a1"] * 8) + "]\nb: [" + ",".join(["*a2"] * 8) + "]\n")
    assert refusal(three_levels)[2] == "document contains excessive aliasing"  # kubectl v1.37.1 refuses it too


def test_an_alias_of_a_sequence_is_no_merge_source() -> None:
    # go-yaml's merge takes an alias only of a map (GY decode.go:788-792: failWantMap)
    assert refusal("s: &s [{a: 1}]\nm:\n  <<: *s\n") == (1, 4, "map merge requires map or sequence of maps as the value")
    assert value("s: &s {a: 1}\nm:\n  <<: [*s, {b: 2}]\n")["m"] == {"a": 1, "b": 2}


def test_a_small_document_may_copy_many_times_its_size() -> None:
    # 500 copies of a 10-node list: 5,000 nodes from 19 — fine below 10,000 built
    assert len(value(_aliases(9, 0, 500))["b"]) == 500


# --- nesting: go-yaml's scanner, then encoding/json -------------------------------------------------


def test_flow_nesting_beyond_ten_thousand_is_refused_by_the_yaml_scanner() -> None:
    # scannerc.go max_flow_level; kubectl: yaml: line 2: exceeded max depth of 10000
    assert refusal("a:\n  " + "[" * 10_001 + "]" * 10_001 + "\n") == (2, 10_003, DEPTH_ERROR)
    assert DEPTH_ERROR == "yaml: exceeded max depth of 10000"


def test_block_nesting_counts_indentation_levels() -> None:
    # scannerc.go max_indents: the document's map is one level; the indentless "- " list under
    # "x:" adds none, each further "- " one. kubectl: 10,000 "- " read, 10,001 refused.
    assert refusal("x:\n" + "- " * 10_001 + "1\n") == (2, 20_001, DEPTH_ERROR)
    assert refusal("- " * 10_001 + "1\n") == (1, 20_001, DEPTH_ERROR)


def test_more_than_ten_thousand_levels_in_all_are_refused_as_json_does() -> None:
    # encoding/json maxNestingDepth 10000; kubectl: invalid character '[' exceeded max depth
    assert refusal("x:\n" + "- " * 10_000 + "1\n") == (2, 19_999, JSON_DEPTH_ERROR)  # 10,001 levels
    assert refusal("x: " + "[" * 10_000 + "]" * 10_000 + "\n") == (1, 10_003, JSON_DEPTH_ERROR)
    assert refusal("x:\n" + "- " * 5_000 + "[" * 5_001 + "]" * 5_001 + "\n") == (2, 15_000, JSON_DEPTH_ERROR)
    assert JSON_DEPTH_ERROR == (
        "exceeded max depth: more than 10000 nested maps and lists, which kubectl cannot decode as JSON")


def test_ten_thousand_levels_in_all_are_read() -> None:
    (doc,) = iter_documents("x:\n" + "- " * 9_999 + "1\n")  # kubectl reads it
    (doc,) = iter_documents("x: " + "[" * 9_999 + "]" * 9_999 + "\n")
    (doc,) = iter_documents("x:\n" + "- " * 4_999 + "[" * 5_000 + "]" * 5_000 + "\n")


def test_a_yaml_error_after_too_deep_a_value_wins() -> None:
    # kubectl reads the whole document as YAML before it decodes any JSON
    deep = "x: " + "[" * 10_000 + "]" * 10_000 + "\n"
    assert refusal(deep + "y: [\n")[2].startswith("invalid YAML")
    assert refusal(deep + "y: *nope\n") == (2, 4, "unknown anchor 'nope' referenced")


def test_a_closed_flow_collection_leaves_those_around_it_open() -> None:
    # two lists open, one opened and closed inside them, then 9,999 more: the 10,001st open list
    assert refusal("x: [[[], " + "[" * 9_999 + "]" * 9_999 + "]]\n") == (1, 10_008, DEPTH_ERROR)


def test_running_out_of_python_frames_is_the_depth_error_at_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    # a host with less recursion room than the loader asks for gets the one-line depth error, at the
    # document's first line, not a RecursionError traceback
    from memcached_gitops.foundation.yamlreader import limits

    monkeypatch.setattr(limits, "RECURSION_ROOM", 0)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        assert refusal("# c\nx:\n  y: " + "[" * 400 + "]" * 400 + "\n") == (2, 1, DEPTH_ERROR)
    finally:
        sys.setrecursionlimit(old)


def test_closed_collections_do_not_count() -> None:
    assert len(value("x: [" + "[[]], " * 10_001 + "]\n")["x"]) == 10_001
    assert len(value("x:\n" + "- a:\n    - b\n" * 10_001)["x"]) == 10_001
    assert len(value("x: [" + "{a: [1]}, " * 10_001 + "]\n")["x"]) == 10_001


# --- the size of a document ------------------------------------------------------------------------


def test_a_document_of_three_mib_is_read_and_one_character_more_is_not() -> None:
    limit = 3 * 1024 * 1024  # apiserver MaxRequestBodyBytes
    assert len(value("a: " + "x" * (limit - 4) + "\n")["a"]) == limit - 4
    message = "document is larger than 3 MiB, the API server's request limit; not read"
    assert refusal("a: " + "x" * (limit - 3) + "\n") == (1, 1, message)
    assert len(value("a: 1\nb: " + "x" * (limit - 9) + "\n")["b"]) == limit - 9, "all its lines count"
    assert refusal("a: 1\nb: " + "x" * (limit - 8) + "\n") == (1, 1, message)
    # each chunk of a stream is measured from its first line, after the "---" line kubectl drops
    # (YAMLReader), and the error points at that line
    docs = iter_documents("a: 1\n---\nb: " + "x" * (limit - 4) + "\n---\nc: " + "x" * (limit - 3) + "\n")
    assert next(docs).value == {"a": 1}
    assert len(next(docs).value["b"]) == limit - 4
    with pytest.raises(YAMLInputError) as caught:
        next(docs)
    assert (caught.value.line, caught.value.column, caught.value.message) == (5, 1, message)
    assert MAX_DOCUMENT_SIZE == limit


def test_a_document_is_refused_while_its_lines_are_read() -> None:
    class Endless(io.RawIOBase):
        """A stream with no line break, ever."""

        reads = 0

        def read(self, size: int = -1) -> bytes:
            self.reads += 1
            return b"x" * size

    stream = Endless()
    assert refusal(stream) == (1, 1, "document is larger than 3 MiB, the API server's request limit; not read")
    assert stream.reads == 49, "3 MiB and one 64 KiB block"
    # a line cut there is still one line: the "---" after 3 MiB of it separates nothing
    assert refusal("a: " + "x" * (MAX_DOCUMENT_SIZE - 3) + "---\n")[:2] == (1, 1)


def test_a_json_value_of_three_mib_is_read_and_one_character_more_is_not() -> None:
    limit = MAX_DOCUMENT_SIZE
    assert len(values('{"a": 1}\n{"b": "' + "x" * (limit - 9) + '"}\n')[1]["b"]) == limit - 9
    assert refusal('{"a": 1}\n {"b": "' + "x" * (limit - 8) + '"}\n') == (
        2, 2, "document is larger than 3 MiB, the API server's request limit; not read")


# --- the stream ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [1, 2\n", (2, 1, "invalid YAML: while parsing a flow sequence did not find expected ',' or ']'")),
        ("a: 1\n  b: 2\n", (2, 4, "invalid YAML: mapping values are not allowed in this context")),
        ("- a\nb: c\n", (2, 1, "invalid YAML: while parsing a block collection did not find expected '-' indicator")),
        ("a: 1\n---\n\t- x\n", (3, 1, "invalid YAML: while scanning for the next token found character that cannot "
                                      "start any token")),
    ],
)
def test_syntax_errors_name_libyaml_s_problem_and_its_position(text: str, expected: tuple[int, int, str]) -> None:
    assert refusal(text) == expected


@pytest.mark.parametrize(("data", "read"), [
    (b"\xff\xfe", "\ufffd\ufffd"), (b"x\xe2\x82y", "x\ufffdy"), (b"\xed\xa0\x80", "\ufffd" * 3), (b"\xc0\xaf", "\ufffd" * 2),
    (b"\xf0\x9f\x98", "\ufffd"), (b"\xf4\x90\x80\x80", "\ufffd" * 4), (b"caf\xe9", "caf\ufffd"),
])
def test_bytes_that_are_no_utf8_become_replacement_characters_as_kubectl_reads_them(data: bytes, read: str) -> None:
    """kubectl reads a file through x/text's UTF-8 decoder, which replaces each maximal ill-formed
    subsequence by one U+FFFD before YAML sees it (XT encoding/unicode/unicode.go:118-204). Each
    expected value is what kube-apiserver v1.36.2 stored (``create --dry-run=server -o jsonpath``,
    kubectl v1.37.1) for ``data: {a: "<bytes>"}``; also in a comment, and with CRLF line ends."""
    assert values(b'a: "' + data + b'"\n') == [{"a": read}]  # type: ignore[arg-type]
    assert values(b"a: 1 # " + data + b"\r\nb: 2\r\n") == [{"a": 1, "b": 2}]  # type: ignore[arg-type]


def test_bytes_that_are_no_utf8_after_a_utf8_byte_order_mark_are_an_error_at_their_line_and_column() -> None:
    """After a UTF-8 byte order mark BOMOverride passes the bytes on unchecked (XT override.go:74) and
    go-yaml refuses them: ``yaml: invalid leading UTF-8 octet`` (kubectl v1.37.1). libyaml reports a
    byte offset; the column counts bytes, as go-yaml's does."""
    bom = b"\xef\xbb\xbf"
    assert refusal(bom + b"a: \xff\xfe\n") == (1, 4, "invalid YAML: unacceptable character #x00ff: invalid leading UTF-8 octet")
    assert refusal(bom + b"a: 1\nb: [\xc3\xa9,\n  \xc3x]\n") == (
        3, 4, "invalid YAML: unacceptable character #x0078: invalid trailing UTF-8 octet")  # libyaml points at the octet after \xc3


def test_empty_and_null_documents_are_passed_over() -> None:
    # kubectl's StreamVisitor skips a document whose JSON is null (kubectl: !!null and !!null "" too);
    # a document on the "---" line itself is an error to kubectl's YAMLReader (see below)
    text = "---\n~\n---\nnull\n---\nNULL\n---\n''\n---\n!!null\n---\n!!null ''\n---\n# nothing\n"
    assert [d.value for d in iter_documents(text)] == [""]
    assert [d.value for d in iter_documents("a: 1\n...\n---\nb: 2\n")] == [{"a": 1}, {"b": 2}]
    assert [d.value for d in iter_documents("---\n5\n---\n[~]\n---\nNull\n")] == [5, [None]]
    assert values("# a comment\n---\na: 1\n---\n\n") == [{"a": 1}]


# --- the stream as kubectl cuts it: apimachinery util/yaml YAMLOrJSONDecoder and YAMLReader -------


def test_a_line_starting_with_three_dashes_ends_a_chunk() -> None:
    # YAMLReader drops the "---" line that ends a chunk, keeps one that opens it (a "---" right
    # after another); go-yaml then reads the first document of each chunk only
    assert values("a\n---\n---\nb\n--- # c\n---\t# d\nc: 1\n") == ["a", "b", {"c": 1}]
    assert values("a: 1\n...\nb: [\n") == [{"a": 1}], "what follows ... in a chunk is never read"
    assert values("a: |\n  x\n  ---\n") == [{"a": "x\n---\n"}], "an indented --- is the document's"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("--- 5\n", (1, 1, "invalid Yaml document separator: 5")),
        ("a: 1\n---x\n", (2, 1, "invalid Yaml document separator: x")),
        ("a: 1\n----\n", (2, 1, "invalid Yaml document separator: -")),
        ("a: 1\n\n--- {a: 1} # c\n", (3, 1, "invalid Yaml document separator: {a: 1} # c")),
        ("--- " + "x" * 100 + "\n", (1, 1, "invalid Yaml document separator: " + "x" * 64 + "…")),
        (b"--- \xff\n", (1, 1, "invalid Yaml document separator: \ufffd")),
        # the directive is a chunk of its own, with no document
        ("%YAML 1.1\n---\na: 1\n", (2, 1, "invalid YAML: did not find expected <document start>")),
        ("a: 1\n---\n...\n", (3, 1, "invalid YAML: while parsing a block node did not find expected node content")),
    ],
)
def test_what_kubectl_refuses_in_a_stream_and_where(text: str, expected: tuple[int, int, str]) -> None:
    assert refusal(text) == expected


def test_errors_and_positions_count_the_lines_of_earlier_chunks() -> None:
    docs = list(iter_documents("# head\na: 1\n---\n\nb:\n  c: 2\n"))
    assert [d.position(()) for d in docs] == [(2, 1), (5, 1)]
    assert docs[1].position(("b", "c")) == (6, 3)
    assert refusal("a: 1\n---\nb: [1,\n") == (4, 1, "invalid YAML: while parsing a flow node did not find expected node content")
    assert refusal("a: 1\n---\n\nb: !!int x\n") == (4, 4, 'cannot decode !!str "x" as a !!int')
    assert refusal(b"\xef\xbb\xbfa: 1\n---\n\nb: \xff\n") == (  # after a byte order mark: no replacement
        4, 4, "invalid YAML: unacceptable character #x00ff: invalid leading UTF-8 octet")


def test_text_of_any_kind_is_read_as_utf8() -> None:
    assert values(io.StringIO("a: é\n---\nb: 2")) == [{"a": "é"}, {"b": 2}]
    assert values(io.BytesIO("a: é\n".encode())) == [{"a": "é"}]
    message = "invalid YAML: unacceptable character #xd800: invalid Unicode character"
    assert refusal("a: \ud800\n") == refusal(io.StringIO("a: \ud800\n")) == (1, 4, message)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}\n{"a": 2}\n', [{"a": 1}, {"a": 2}]),  # a run of JSON values needs no separator
        ('\n  {"a": 1} {"a": 2}{"a": 3}', [{"a": 1}, {"a": 2}, {"a": 3}]),
        ("{a: 1, b: [x]}\n", [{"a": 1, "b": ["x"]}]),  # not JSON: read again as YAML
        ('{"a": NaN}\n', [{"a": "NaN"}]),  # encoding/json has no NaN: YAML reads a string
        ('{"a": 1}\n---\nb: 2\n', [{"a": 1}, {"b": 2}]),  # one JSON value, then YAML from the next line
        ('{"a": 1}  x # c\n', [{"a": 1}, "x"]),  # ... or from what follows on its line
        ('{"a": 1}\n# \n', [{"a": 1}]),  # four bytes after the value: read as YAML (kubectl v1.37.1)
        ('\u00a0{"a": 1}\n{"a": 2}\n', [{"a": 1}]),  # U+00A0 is a blank to tell JSON, and JSON then fails on it
        (" " * 4096 + '{"a": 1}\n{"a": 2}\n', [{"a": 1}]),  # a brace beyond the 4,096 bytes peeked: YAML
        ('{"a": "\\ud800", "b": "\\udc00\\ud800", "c": "\\ud83d\\ude00", "d": "\\\\ud800"}\n',
         [{"a": "\ufffd", "b": "\ufffd\ufffd", "c": "\U0001F600", "d": "\\ud800"}]),  # encoding/json's unquote
        ('{"a": "\ufffe\x7f\x80\uffff"}\n', [{"a": "\ufffe\x7f\x80\uffff"}]),  # JSON takes them as they are, YAML would not
        (b'{"a": "\xff"}', [{"a": "\ufffd"}]),
        ("  a: 1\n  b: 2\n", [{"a": 1, "b": 2}]),  # YAML: indented, but no "{"
        ("", []),
    ],
)
def test_a_stream_starting_with_a_brace_is_read_as_json_values(text: str, expected: list) -> None:
    assert values(text) == expected


def test_json_values_are_located_where_they_are() -> None:
    docs = list(iter_documents('{"a": 1} {"b": 2}\n\n  {"c": [1,\n 2]}\n{"d": 4}\n'))
    assert [d.position(()) for d in docs] == [(1, 1), (1, 10), (3, 3), (5, 1)]
    assert docs[2].position(("c", 1)) == (4, 2)
    docs = list(iter_documents('\n{"a": 1}\n\n---\nb:\n  c: 2\n'))
    assert [d.position(()) for d in docs] == [(2, 1), (5, 1)]
    assert docs[1].position(("b", "c")) == (6, 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # after two JSON values the stream is JSON: no going back to YAML
        ('{"a": 1}\n{"a": 2}\n  {"a": \n', (3, 3, "invalid JSON: Expecting value")),
        ('{"a": 1}\n{"a": 2}\n{"a": NaN}\n', (3, 1, "invalid JSON: invalid character 'N' looking for beginning of value")),
        ('{"a": 1}\n...\n', (2, 1, "invalid YAML: while parsing a block node did not find expected node content")),
        # fewer than four bytes left after one value: consumeWhitespace gives up, the JSON error stands
        # (kubectl v1.37.1: "json: offset 94: invalid character '#' looking for beginning of value")
        ('{"a": 1}\n#\n', (2, 1, "invalid JSON: Expecting value")),
        ('{"a": 1}  x\n', (1, 11, "invalid JSON: Expecting value")),
        ('{"a": 1} \ufffd # c\n', (1, 10, "invalid JSON: Expecting value")),  # utf8.RuneError: the same
        # a number beyond float64 in a JSON value (kubectl v1.37.1: json: cannot unmarshal number 1E400 ...)
        ('{"a": 1E400}\n', (1, 1, "json: cannot unmarshal number 1E400 into Go value of type float64")),
        ('{"a": 1}{"b": [1, -1' + "0" * 400 + "]}", (1, 9, "json: cannot unmarshal number -1" + "0" * 62 + "…"
                                                          " into Go value of type float64")),
    ],
)
def test_what_kubectl_refuses_in_a_json_stream(text: str, expected: tuple[int, int, str]) -> None:
    assert refusal(text) == expected


# --- positions ------------------------------------------------------------------------------------------


def test_positions_point_at_keys_and_items() -> None:
    (doc,) = iter_documents('a: {b: 1, "c": [x, {d: 2}]}\n0: zero\nl:\n- p\n- q: 1\n')
    assert doc.position(()) == (1, 1)
    assert doc.position(("a", "c")) == (1, 11), "a quoted key starts at its quote"
    assert doc.position(("a", "c", 0)) == (1, 17)
    assert doc.position(("a", "c", 1)) == (1, 20)
    assert doc.position(("a", "c", 1, "d")) == (1, 21)
    assert doc.position((0,)) == (2, 1), "an index on a map is the key written as that number"
    assert doc.position(("l", 1, "q")) == (5, 3)
    assert doc.position(("l", 2)) == (3, 1), "past the end: the list's key"
    assert doc.position(("l", -1)) == (3, 1), "no index from the end"
    assert doc.position(("l", "0")) == (3, 1), "a name on a list"
    assert doc.position(("a", "b", "deeper")) == (1, 5), "below a scalar: the scalar's key"


def test_a_duplicate_key_is_located_at_its_last_occurrence() -> None:
    (doc,) = iter_documents("a: 1\nb: 2\na:\n  c: 3\n")
    assert doc.value == {"a": {"c": 3}, "b": 2}
    assert doc.position(("a", "c")) == (4, 3)
    assert locate(doc.node, ("a",)) == (3, 1)


def test_a_document_indexes_each_mapping_once() -> None:
    (doc,) = iter_documents("a: {b: 1}\n")
    assert doc.position(("a", "b")) == (1, 5)
    doc.node.value.clear()  # the document's index of each mapping answers now
    assert doc.position(("a", "b")) == (1, 5)


def test_locate_keeps_each_mapping_s_index_in_the_cache_given() -> None:
    (doc,) = iter_documents("a: {b: 1}\n")
    cache: dict = {}
    assert locate(doc.node, ("a", "b"), cache) == (1, 5)
    assert sorted(len(index) for index in cache.values()) == [1, 1]
    doc.node.value.clear()  # the cache, not the node, answers now
    assert locate(doc.node, ("a", "b"), cache) == (1, 5)
    assert locate(doc.node, ("a", "b")) == (1, 1)


# --- room to walk a deep value ------------------------------------------------------------------------


def test_recursion_room_raises_the_limit_then_restores_it() -> None:
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1000)
        with recursion_room():
            assert sys.getrecursionlimit() == 100_000
        assert sys.getrecursionlimit() == 1000
        sys.setrecursionlimit(200_000)
        with recursion_room():
            assert sys.getrecursionlimit() == 200_000, "a higher limit is kept"
        sys.setrecursionlimit(1000)
        with pytest.raises(KeyError), recursion_room():
            raise KeyError("x")
        assert sys.getrecursionlimit() == 1000
        list(iter_documents("a: 1\n"))
        assert sys.getrecursionlimit() == 1000
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize(("current", "lifted"), [(1000, True), (-1, False), (0, True), (30_000, False), (29_999, True), (40_000, False)])
def test_libyamls_nest_limit_is_lifted_only_when_it_is_set_and_below_ours(monkeypatch: pytest.MonkeyPatch, current: int,
                                                                          lifted: bool) -> None:
    """The limit is raised to LIBYAML_NEST_LIMIT when libyaml has one (not -1, an older libyaml) below it;
    a higher one is left alone. In-process, with libyaml's two calls replaced."""
    from memcached_gitops.foundation.yamlreader import LIBYAML_NEST_LIMIT, compose

    calls: list[int] = []
    monkeypatch.setattr(compose, "_GET_NEST_LIMIT", lambda: current)
    monkeypatch.setattr(compose.libyaml, "_set_max_nest_level", calls.append, raising=False)
    compose.lift_libyaml_nest_limit()
    assert calls == ([LIBYAML_NEST_LIMIT] if lifted else [])
    monkeypatch.setattr(compose, "_GET_NEST_LIMIT", None)
    calls.clear()
    compose.lift_libyaml_nest_limit()
    assert calls == [], "a PyYAML without the call: nothing to lift"


#: (text, accepted): an explicit !!timestamp, judged by kube-apiserver v1.36.2 through kubectl (21 of 21 agreed):
#: go-yaml v2 keeps the text of what parseTimestamp accepts and refuses anything else by what it resolves to.
TIMESTAMPS = [("02", "cannot decode !!int \"02\" as a !!timestamp"), ("2001-12-14", None), ("2001-2-30", "!!str"),
              ("2001-12-14T21:59:43.10-05:00", None), ("2001-12-14 21:59:43.10", None), ("abc", "!!str"),
              ('""', "!!null"), ("2001-12-14t1:2:3Z", None), ("2001-12-14T25:00:00Z", "!!str"),
              ("2001-12-14 21:59:43.10 -5", "!!str"), ("2000-02-29", None), ("1900-02-29", "!!str"),
              ("2001-12-14T21:59:60Z", "!!str"), ("2001-1-1T1:1:1+01:00", None), ('"2001-12-14"', None),
              ("2001-12-14T21:59:43", "!!str"), ("12001-12-14", "!!str"), ("2001-012-14", "!!str"), ("true", "!!bool"),
              ("1.5", "!!float"), ("2001-12-14T21:59:43.Z", "!!str")]


@pytest.mark.parametrize("text,refused", TIMESTAMPS, ids=[t for t, _ in TIMESTAMPS])
def test_an_explicit_timestamp_tag_keeps_a_timestamps_text_and_refuses_the_rest(text: str, refused: str | None) -> None:
    from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents

    source = f"a: !!timestamp {text}\n"
    if refused is None:
        [doc] = list(iter_documents(source))
        assert doc.value == {"a": text.strip('"')}
    else:
        with pytest.raises(YAMLInputError, match=re.escape(refused)):
            list(iter_documents(source))


def test_a_byte_order_mark_is_read_as_kubectl_reads_it() -> None:
    """cli-runtime reads files through BOMOverride (docs/design/kubectl-reader.md 5.1, 5.4): a UTF-8 BOM
    is dropped before the stream is cut, so a BOM'd run of JSON values is still every value; UTF-16
    with a BOM is read as UTF-16. Both files were refused by kube-apiserver v1.36.2 for their second
    document (size 9), which was silently lost before."""
    from memcached_gitops.foundation.yamlreader import iter_documents

    one, two = (json.dumps({"kind": "Memcached", "metadata": {"name": n}}) for n in ("a", "b"))
    assert [d.value["metadata"]["name"] for d in iter_documents(b"\xef\xbb\xbf" + f"{one}\n{two}\n".encode())] == ["a", "b"]
    yaml_text = "kind: Memcached\nmetadata: {name: a}\n---\nkind: Memcached\nmetadata: {name: b}\n"
    for encoding in ("utf-16", "utf-16-le", "utf-16-be"):
        data = yaml_text.encode(encoding)
        if encoding != "utf-16":
            data = ("\ufeff" + yaml_text).encode(encoding)
        docs = list(iter_documents(data))
        assert [d.value["metadata"]["name"] for d in docs] == ["a", "b"] and docs[1].line_offset == 3, encoding
    assert [d.value for d in iter_documents(b"\xef\xbb\xbfkind: A\n")] == [{"kind": "A"}]
    assert [d.value for d in iter_documents("\ufeffkind: A\n")] == [{"kind": "A"}]
    assert [d.value for d in iter_documents(b"kind: A\n")] == [{"kind": "A"}], "without a BOM nothing changes"


def test_keys_equal_only_as_strings_keep_one_of_them_as_kubectl_keeps_one() -> None:
    """``1``, ``"1"`` and ``1.0`` are three go-yaml keys (an int, a string, a float) that all become
    ``"1"`` (SY yaml.go:212-245); which survives is Go's random map order (map row 8.7: 11 of 12
    kubectl runs kept the third, 1 the first). Any of them is kubectl's answer; ours is the last in
    document order, always, so the differential leaves such documents out and this test accepts
    any survivor while holding ours to one."""
    survivor = value("l: {1: x, '1': y, 1.0: z}\n")["l"]
    assert list(survivor) == ["1"] and survivor["1"] in ("x", "y", "z")  # kubectl: any one of them
    assert survivor["1"] == "z"  # ours: the last


#: Go's unicode.IsSpace, by Python's own Unicode database: str.isspace is Unicode's White_Space plus the four
#: information separators U+001C-U+001F (bidirectional class B or S), which Go does not count.
GO_BLANKS = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() and not 0x1C <= c <= 0x1F]


@pytest.mark.parametrize("blank", GO_BLANKS, ids=lambda c: f"U+{ord(c):04X}")
def test_each_character_go_reads_as_a_blank_leads_a_json_stream(blank: str) -> None:
    """kubectl tells JSON from YAML by the first character that unicode.IsSpace does not skip (apimachinery
    pkg/util/yaml/decoder.go GuessJSONStream): any of Go's blanks before a ``{``, alone or many, leaves it JSON."""
    from memcached_gitops.foundation.yamlreader.streams import is_json_stream

    assert is_json_stream((blank * 3 + '{"a": 1}').encode())


@pytest.mark.parametrize("other", ["\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\u180e", "\ufeff", "\x00"], ids=lambda c: f"U+{ord(c):04X}")
def test_a_character_go_does_not_read_as_a_blank_ends_the_look_for_json(other: str) -> None:
    """The separators Python alone calls space, a zero-width space, the Mongolian vowel separator (no
    White_Space since Unicode 6.3) and a NUL are not blanks to Go: a ``{`` after one is no JSON stream."""
    from memcached_gitops.foundation.yamlreader.streams import is_json_stream

    assert not is_json_stream((" " + other + '{"a": 1}').encode())
