"""A CRD's ``pattern`` is judged as the API server judges it: Go's regexp (RE2 syntax).

Each row of ``RE2_VERDICTS`` is a place where an engine, given the pattern as it is, reads it
otherwise than RE2 (Go's regexp/syntax doc.go: Perl classes are ASCII, ``\\s`` is
``[\\t\\n\\f\\r ]``, ``$`` is the end of the text, ``.`` refuses only ``\\n``) or refuses what RE2
accepts. Every row is checked on both engines through the Validator, and against google-re2 (C++
RE2, whose syntax Go's copies) where it is installed. The property draws short strings from the
characters the engines disagree on and holds both engines to a model of RE2's classes.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.schemas import Validator
from memcached_gitops.schemas.crd import CRDError, parse_crd
from memcached_gitops.schemas.patterns import PERL_CLASSES, POSIX_CLASSES, PatternError, translate

ENGINES = ("jsonschema-rs", "jsonschema")

#: (pattern, value, RE2's verdict): each a difference measured on jsonschema-rs 0.61 or Python's re
RE2_VERDICTS = [
    # \s is [\t\n\f\r ]: no \v, no U+00A0, no U+2028
    (r"^\s$", "\v", False), (r"^\s$", "\u00a0", False), (r"^\s$", "\u2028", False), (r"^[\s]$", "\v", False),
    (r"^\S$", "\v", True), (r"^[^\s]$", "\u00a0", True),
    # \d, \w are ASCII
    (r"^\d+$", "\u0663", False), (r"^\w+$", "é", False), (r"^\W$", "é", True), (r"^\D$", "\u0663", True),
    # \b, \B: ASCII word boundaries
    (r"a\b", "aé", True), (r"\bé", "é", False), (r"a\B", "aé", False), (r"^\B$", "", True),
    # . is anything but \n
    (r"^.$", "\r", True), (r"^.$", "\u2028", True), (r"^.$", "\u2029", True), (r"(?s)^.$", "\n", True),
    # $ is the end of the text
    (r"^a$", "a\n", False),
    # RE2's own syntax
    (r"a\z", "a", True), (r"^\pL$", "é", True), (r"^\PL$", "1", True), (r"^\pN$", "\u0663", True),
    (r"^[\p{Lu}]$", "É", True),
    (r"^[[:alpha:]]$", "a", True), (r"^[[:^alpha:]]$", "1", True), (r"^[[:space:]]$", "\v", True),
    (r"^[[:word:]]$", "_", True),
    (r"^\Qa.b\E$", "a.b", True), (r"^\Qa.b\E$", "axb", False),
    (r"^\x{41}$", "A", True), (r"^\101$", "A", True), (r"^\0$", "\0", True), (r"^\a$", "\a", True),
    (r"^(?<n>a)$", "a", True), (r"^a{,2}$", "a{,2}", True), (r"^{$", "{", True), (r"^a{2$", "a{2", True),
    (r"(?i)a(?-i)b", "AB", False), (r"(?i)a(?-i)b", "Ab", True), (r"(?U)a+", "a", True),
]

#: patterns the API server refuses (apiextensions validation.go: regexp.Compile), with Go's reason
RE2_REFUSES = [
    ("a**", "invalid nested repetition operator: `**`"),
    ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
    (r"(a)\1", r"invalid escape sequence: `\1`"),
    (r"\y", r"invalid escape sequence: `\y`"),
    (r"\C", r"invalid escape sequence: `\C`"),
    ("a{1001}", "invalid repeat count: `{1001}`"),
    ("[z-a]", "invalid character class range: `z-a`"),
    ("(a", "missing closing ): `(a`"),
    ("[a", "missing closing ]: `[a`"),
    ("*", "missing argument to repetition operator: `*`"),
    (r"\p{Foo}", r"invalid character class range: `\p{Foo}`"),
    ("a)", "unexpected ): `a)`"),
    ("a{2,1}", "invalid repeat count: `{2,1}`"),
    ("a\\", "trailing backslash at end of expression: ``"),
    ("(?P<>a)", "invalid named capture: `(?P<>`"),
    ("(?P<a-b>x)", "invalid named capture: `(?P<a-b>`"),
    ("(?z)", "invalid or unsupported Perl syntax: `(?z`"),
    (r"\x{}", r"invalid escape sequence: `\x{}`"),
    (r"\x{41", r"invalid escape sequence: `\x{41`"),
    (r"\xZ1", r"invalid escape sequence: `\xZ1`"),
    ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
]


def crd(pattern: str) -> str:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "s": {"type": "string", "pattern": pattern}}}}}
    return json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Widget"}, "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]}})


@cache
def validator(pattern: str, engine: str) -> Validator:
    return Validator(parse_crd(crd(pattern), "my-crd.yaml"), engine=engine)


def verdict(pattern: str, value: str, engine: str) -> bool:
    outcome = validator(pattern, engine).validate(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"s": value}})
    assert all(p.message.endswith(f"should match '{pattern}'") for p in outcome.errors), outcome.errors
    return outcome.ok


def re2_search(pattern: str, value: str) -> bool | None:
    """C++ RE2's verdict (google-re2), None where it is not installed."""
    try:
        import re2  # type: ignore[import-not-found]
    except ImportError:
        return None
    return re2.search(pattern, value) is not None


@pytest.mark.parametrize(("pattern", "value", "expected"), RE2_VERDICTS)
def test_a_pattern_is_judged_as_re2_judges_it_by_both_engines(pattern: str, value: str, expected: bool) -> None:
    assert re2_search(pattern, value) in (None, expected), "the table's verdict is RE2's"
    assert {engine: verdict(pattern, value, engine) for engine in ENGINES} == dict.fromkeys(ENGINES, expected)


@pytest.mark.parametrize(("pattern", "reason"), RE2_REFUSES)
def test_a_pattern_re2_refuses_is_an_error_naming_the_field(pattern: str, reason: str) -> None:
    with pytest.raises(CRDError) as caught:
        parse_crd(crd(pattern), "my-crd.yaml")
    field = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[s].pattern"
    assert str(caught.value) == (f"my-crd.yaml: {field}: Invalid value: {json.dumps(pattern)}: must be a valid "
                                 f"regular expression, but isn't: error parsing regexp: {reason}")


def test_a_unicode_script_is_refused_only_by_the_engine_that_cannot_read_it() -> None:
    """Python's re has no script property: the reference engine says so; jsonschema-rs reads it."""
    assert translate(r"\p{Greek}", "ecma") == r"\p{Script=Greek}"
    assert verdict(r"^\p{Greek}$", "α", "jsonschema-rs") and not verdict(r"^\p{Greek}$", "a", "jsonschema-rs")
    with pytest.raises(PatternError, match="Unicode script"):
        verdict(r"^\p{Greek}$", "α", "jsonschema")


def test_case_folding_is_go_s_simple_folding_applied_before_negation() -> None:
    assert translate("(?i)k", "ecma") == "[Kk\u212a]"  # U+212A KELVIN SIGN
    assert translate("(?i)i", "ecma") == "[Ii]"  # the dotless i folds only in Turkic rules
    assert translate(r"(?i)\W", "python") == "[^0-9A-Z_a-z\u017f\u212a]"


def test_what_reads_the_same_everywhere_is_written_as_it_was() -> None:
    shipped = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
    assert translate(shipped, "ecma") == shipped
    assert translate(shipped, "python") == shipped[:-1] + r"\Z"


#: RE2's classes (doc.go), as sets of characters: the model the property holds both engines to
WORD = set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
MODEL = {
    r"\s": set("\t\n\f\r "), r"\d": set("0123456789"), r"\w": WORD, ".": None,
    "[[:space:]]": set("\t\n\v\f\r "), "[[:alpha:]]": WORD - set("0123456789_"),
}
TRICKY = ["\n", "\r", "\v", "\f", "\t", " ", "\u00a0", "\u2028", "\u0663", "é", "_", "a", "1"]


def in_class(token: str, negated: bool, ch: str) -> bool:
    members = MODEL[token]
    inside = ch != "\n" if members is None else ch in members
    return inside is not negated


def negated_token(token: str) -> str:
    if token.startswith("\\"):
        return token.upper()
    return r"\n" if token == "." else token.replace("[:", "[:^", 1)


def at_boundary(value: str, i: int) -> bool:
    return (i > 0 and value[i - 1] in WORD) != (i < len(value) and value[i] in WORD)


@settings(max_examples=150, deadline=None)
@given(token=st.sampled_from(sorted(MODEL)), negated=st.booleans(),
       value=st.text(alphabet=st.sampled_from(TRICKY), max_size=4), engine=st.sampled_from(ENGINES))
def test_re2_classes_anchors_and_boundaries_on_the_tricky_characters(token: str, negated: bool, value: str,
                                                                      engine: str) -> None:
    written = negated_token(token) if negated else token
    expected = all(in_class(token, negated, ch) for ch in value)
    assert verdict(f"^{written}*$", value, engine) is expected
    assert verdict(r"\b", value, engine) is any(at_boundary(value, i) for i in range(len(value) + 1))
    assert verdict(r"\B", value, engine) is not all(at_boundary(value, i) for i in range(len(value) + 1))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_oneof_of_patterns_counts_its_matches_with_the_engine_they_were_written_for(engine: str) -> None:
    """kube-openapi's oneOf detail counts the alternatives that match: each is checked by the engine
    whose dialect its patterns were written in (``$`` is ``\\Z`` to Python's re, no pattern to jsonschema-rs)."""
    text = json.loads(crd("^x$"))
    text["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["s"] = {
        "type": "string", "oneOf": [{"pattern": "^a$"}, {"pattern": "^a|b$"}]}
    check = Validator(parse_crd(json.dumps(text), "my-crd.yaml"), engine=engine)

    def messages(value: str) -> list[str]:
        outcome = check.validate({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"s": value}})
        return [p.message for p in outcome.errors]

    assert messages("b") == []
    assert [m.rsplit(". ", 1)[-1] for m in messages("c")] == ["Found none valid"]
    assert [m.rsplit(". ", 1)[-1] for m in messages("a")] == ["Found 2 valid alternatives"]


#: every ASCII character, and one from outside ASCII of each kind the classes could be widened to
ASCII_AND_BEYOND = [chr(cp) for cp in range(0x80)] + ["\u00a0", "\u00e9", "\u0663", "\u212a", "\u2028"]


def _each_engine_agrees_with_re2(pattern: str, values: list[str]) -> dict[str, list[str]]:
    """The values on which an engine's verdict differs from C++ RE2's, by engine."""
    wrong: dict[str, list[str]] = {}
    for engine in ENGINES:
        wrong[engine] = [v for v in values if verdict(pattern, v, engine) is not re2_search(pattern, v)]
    return wrong


def _re2_or_skip() -> None:
    pytest.importorskip("re2", reason="google-re2 (C++ RE2, whose syntax Go's copies) is the reference here")


@pytest.mark.parametrize("negated", [False, True], ids=["class", "negated"])
@pytest.mark.parametrize("name", sorted(POSIX_CLASSES))
def test_each_ascii_class_takes_exactly_the_characters_re2_takes(name: str, negated: bool) -> None:
    """A CRD pattern with ``[[:punct:]]`` or ``[[:^xdigit:]]`` takes, on both engines, exactly the
    characters RE2 takes: every member of the table, checked on all of ASCII and past it."""
    _re2_or_skip()
    pattern = f"^[[:{'^' if negated else ''}{name}:]]$"
    assert _each_engine_agrees_with_re2(pattern, ASCII_AND_BEYOND) == dict.fromkeys(ENGINES, [])


@pytest.mark.parametrize("inside", [False, True], ids=["bare", "in-brackets"])
@pytest.mark.parametrize("escape", [c for name in sorted(PERL_CLASSES) for c in (name, name.upper())])
def test_each_perl_class_takes_exactly_the_characters_re2_takes(escape: str, inside: bool) -> None:
    """``\\d``, ``\\s``, ``\\w`` and their negations take, on both engines, exactly RE2's ASCII sets,
    on their own and inside a bracketed class."""
    _re2_or_skip()
    pattern = f"^[\\{escape}]$" if inside else f"^\\{escape}$"
    assert _each_engine_agrees_with_re2(pattern, ASCII_AND_BEYOND) == dict.fromkeys(ENGINES, [])


@cache
def _general_categories() -> dict[str, str]:
    """Each Unicode general category Go's unicode.Categories names (the two-letter ones but Cn, which
    is no table there, and their one-letter unions), with the first character of each two-letter one."""
    first: dict[str, str] = {}
    for cp in range(0x30000):
        category = unicodedata.category(chr(cp))
        if category != "Cn":
            first.setdefault(category, chr(cp))
    return first | {letter: "" for letter in {c[0] for c in first}}


@pytest.mark.parametrize("category", sorted(_general_categories()))
def test_each_unicode_category_is_read_as_re2_reads_it(category: str) -> None:
    """``\\p{Lu}``, ``\\p{Me}``, ``\\P{N}``... are accepted by both engines (RE2 has each) and take
    the characters RE2 takes: one of each category, surrogates aside (no UTF-8 text holds one)."""
    _re2_or_skip()
    samples = [ch for c, ch in sorted(_general_categories().items()) if ch and c != "Cs"]
    for written in (f"^\\p{{{category}}}$", f"^\\P{{{category}}}$"):
        assert _each_engine_agrees_with_re2(written, samples) == dict.fromkeys(ENGINES, [])


#: characters that would change what a class or a pattern means if one were written unescaped
PROBES = ["0", "5", "9", "-", "\\", "]", "[", "^", "x", "X", "k", "K", "s", "S", "&", "~", "|", "\n", "\u00e9",
          "\u212a", "\u017f", "\u0131", "\u0130"]


def _engine_verdicts(pattern: str, values: list[str]) -> dict[str, list[bool]]:
    """Each engine's verdict on each value, given the pattern as the validator writes it for it."""
    import jsonschema
    import jsonschema_rs

    rust = jsonschema_rs.Draft202012Validator({"pattern": translate(pattern, "ecma")})
    python = jsonschema.Draft202012Validator({"pattern": translate(pattern, "python")})
    return {"jsonschema-rs": [rust.is_valid(v) for v in values], "jsonschema": [python.is_valid(v) for v in values]}


@pytest.mark.parametrize("shape", ["^{c}$", "^[{c}]$", "^[{c}0-9]$", "^[0{c}9]$", "^[^{c}]$", "^a{c}*b$",
                                   "(?i)^{c}$", "(?i)^[^{c}]$"])
def test_every_ascii_character_written_by_its_code_is_matched_as_re2_matches_it(shape: str) -> None:
    """Each ASCII character, given to RE2 as ``\\x{HH}``, alone or inside a class beside a range, is
    written back for each engine (plain, backslashed, or by its code) so that it means itself and
    nothing else, and under ``(?i)`` its case-folding orbit (KELVIN SIGN and LONG S included): both
    engines take exactly what RE2 takes, the character and the probes."""
    _re2_or_skip()
    wrong = {}
    for cp in range(0x80):
        pattern = shape.format(c=f"\\x{{{cp:02X}}}")
        values = [chr(cp), *PROBES] if "a" not in shape else [f"a{chr(cp) * 2}b", "ab", *(f"a{p}b" for p in PROBES)]
        expected = [re2_search(pattern, v) for v in values]
        found = {engine: [v for v, got, want in zip(values, verdicts, expected, strict=True) if got is not want]
                 for engine, verdicts in _engine_verdicts(pattern, values).items()}
        if any(found.values()):
            wrong[pattern] = found
    assert wrong == {}


#: refusals whose excerpt Go's parser cuts otherwise than this one does (regexp/syntax parse.go):
#: parseEscape reports the text read up to the digit that broke ``\x{...}`` (``s[:len(s)-len(t)]``,
#: C++ RE2 says the same: ``\x{110000``, ``\x{z``); parsePerlFlags takes ``(?<`` for a named capture
#: since Go 1.22 and, with no ``>``, reports the whole rest of the pattern
GO_EXCERPTS = [
    (r"\x{110000}", r"invalid escape sequence: `\x{110000`"),
    (r"\x{zz}", r"invalid escape sequence: `\x{z`"),
    ("(?<=a)b", "invalid named capture: `(?<=a)b`"),
    ("(?<!a)b", "invalid named capture: `(?<!a)b`"),
]


@pytest.mark.parametrize(("pattern", "reason"), GO_EXCERPTS)
def test_a_refused_pattern_is_quoted_as_go_quotes_it(pattern: str, reason: str) -> None:
    with pytest.raises(CRDError) as caught:
        parse_crd(crd(pattern), "my-crd.yaml")
    assert str(caught.value).endswith(f"error parsing regexp: {reason}")


def _shipped_pattern(*path: str) -> str:
    """A ``pattern`` of the shipped CRD's storage version, by its property path."""
    from tests.conftest import crd_named

    version = next(v for v in crd_named("builtin").document["spec"]["versions"] if v.get("storage"))
    node = version["schema"]["openAPIV3Schema"]
    for step in path:
        node = node[step] if step in ("items", "additionalProperties") else node["properties"][step]
    return node["pattern"]


def _mirrors() -> dict[str, tuple[str, Callable[[str], tuple[str, bool]]]]:
    """Every Python regex of the product that stands for a pattern of the CRD or of Kubernetes, as
    (the pattern it mirrors, anchored; what the product makes of a value: the text that pattern must
    judge and the product's own verdict on it). Kubernetes' patterns are apimachinery's
    (pkg/util/validation/validation.go), as Go's source spells them."""
    from memcached_gitops.reconciler.client.shards import lease_name
    from memcached_gitops.reconciler.decisions.status import deployment_verdict
    from memcached_gitops.render.companions import object_name
    from memcached_gitops.schemas import objectmeta
    from memcached_gitops.schemas.quantities import strict_quantity

    label = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
    subdomain = f"^{label}(\\.{label})*$"
    qualified = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

    def reason(value: str) -> tuple[str, bool]:
        failure = {"type": "ReplicaFailure", "status": "True", "reason": value}
        dep = {"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "conditions": [failure]}}
        return value, deployment_verdict(dep).failure_reason == value

    return {
        "condition-reason": (_shipped_pattern("status", "conditions", "items", "reason"), reason),
        "condition-type": (_shipped_pattern("status", "conditions", "items", "type"),
                           lambda v: (v, not objectmeta.qualified_name_errors(v))),
        "quantity": (_shipped_pattern("spec", "resources", "limits", "additionalProperties"),
                     lambda v: (v, strict_quantity(v) is not None)),
        "dns1123-label": (f"^{label}$", lambda v: (v, not objectmeta.dns1123_label_errors(v))),
        "dns1123-subdomain": (subdomain, lambda v: (v, not objectmeta.dns1123_subdomain_errors(v))),
        "label-value": (f"^({qualified})?$", lambda v: (v, not objectmeta.label_value_errors(v))),
        "companion-name": ("^[a-z]([-a-z0-9]*[a-z0-9])?$", lambda v: (object_name(v), True)),  # a Service's: DNS-1035
        "lease-name": (subdomain, lambda v: (lease_name(v), True)),
    }


#: letters and digits past ASCII that Python's ``\w``, ``\d``, ``str.isalnum`` and ``int`` take
#: (é, ß, Arabic-Indic 3, Roman numeral eight, fullwidth F, KELVIN SIGN), each where a value starts,
#: inside it and where it ends; and an ASCII value of each shape beside them
NON_ASCII = ["\u00e9", "\u00df", "\u0663", "\u2167", "\uff26", "\u212a"]
SHAPES = ["{c}1", "a{c}1", "a1{c}", "1.{c}", "{c}Gi", "1e{c}", "x.io/{c}a", "a{c}.b"]
ASCII_SAMPLES = ["a1", "1.5", "128Mi", "1e3", "x.io/Ready", "a-b.c", "FailedCreate", "q:x_1"]


@pytest.mark.parametrize("mirror", sorted(_mirrors()))
def test_each_python_regex_that_mirrors_a_kubernetes_pattern_agrees_with_it_past_ascii(mirror: str) -> None:
    """Python's ``\\w``, ``\\d`` and ``str.isalnum`` are Unicode; Go's regexp (the API server's) reads
    ``[A-Za-z0-9_]`` and its own ``\\w`` as ASCII. A mirror that takes ``é`` or ``٣`` passes a value the
    API server refuses (a status write that is a 422, a resource quantity read as 3Gi, a Service or
    Lease name no API server admits): each agrees with the pattern it stands for, judged by RE2."""
    re2 = pytest.importorskip("re2", reason="google-re2 (C++ RE2, whose syntax Go's copies) is the reference here")
    pattern, product = _mirrors()[mirror]
    samples = [s.format(c=c) for s in SHAPES for c in NON_ASCII] + ASCII_SAMPLES
    wrong = {}
    for value in samples:
        text, takes = product(value)
        if takes is not (re2.search(pattern, text) is not None):
            wrong[value] = (text, takes)
    assert wrong == {}
