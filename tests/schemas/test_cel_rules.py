"""x-kubernetes-validations (CEL) rules: where they run and how the API server words a rejection.

Source (kube-apiserver v1.36.2): staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/
cel/validation.go (``validateExpressions``, ``evalMessageExpression``, ``ruleMessageOrDefault``,
``ruleErrorString``), its validation_test.go for the exact strings, and apimachinery's
field.Error ``ErrorBody`` (a value of ``field.OmitValueType{}`` leaves the value out). No recorded
transcript has a CRD with rules; the expected strings below are written from those sources.
"""

from __future__ import annotations

import ast

import pytest
from memcached_gitops.foundation.excerpt import excerpt
from memcached_gitops.schemas import cel_rules
from memcached_gitops.schemas.cel_rules import check_rules, has_rules
from memcached_gitops.schemas.validator import format_path

from tests.conftest import validate_text
from tests.validator_cases import cr


@pytest.fixture(autouse=True)
def fresh_verdicts() -> None:
    """Each test evaluates its rules anew: a verdict remembered from an earlier test (or process,
    under mutation testing) would hide what the evaluation does now."""
    cel_rules._evaluated.cache_clear()


def rules(*items: dict, type_: str = "object", **extra: object) -> dict:
    return {"type": type_, "x-kubernetes-validations": list(items), **extra}


# --- the verdicts and messages through the validator (tests/data/crd-all-keywords.yaml)


def test_a_false_rule_on_an_object_names_the_path_and_the_message_but_not_the_value() -> None:
    # validation.go: value = field.OmitValueType{} for "object" and "array";
    # validation_test.go: "Invalid value: failed rule: self.m == 2"
    outcome = validate_text(cr("size: 5\ncontainerPort: 80"), "all")
    assert [(p.field, p.message) for p in outcome.errors] == [
        ("spec", "Invalid value: sizes above 4 need the default port")
    ]


def test_a_false_rule_on_a_string_quotes_the_value_and_names_the_rule() -> None:
    # validation_test.go: `root.apiVersion: Invalid value: "v2": failed rule: self == "v1"`
    outcome = validate_text(cr("ref: other"), "all")
    assert [(p.field, p.message) for p in outcome.errors] == [
        ("spec.ref", "Invalid value: \"other\": failed rule: self.startsWith('ref-')")
    ]


def test_a_rule_that_holds_adds_nothing() -> None:
    assert validate_text(cr("size: 5\nref: ref-a"), "all").ok


# --- which nodes a rule applies to


def test_a_rule_on_list_items_runs_for_every_item_at_its_index() -> None:
    # validation_test.go: `root[1]: Invalid value: 2: gotta be odd`
    schema = {"type": "array", "items": rules({"rule": "int(self) % 2 == 1", "message": "gotta be odd"}, type_="number")}
    assert check_rules([1, 2, 3, 4], schema) == [((1,), "Invalid value: 2: gotta be odd"),
                                                 ((3,), "Invalid value: 4: gotta be odd")]


def test_a_list_is_walked_only_where_the_schema_gives_its_items() -> None:
    schema = {"type": "object", "properties": {"free": {"type": "array"}},
              "x-kubernetes-validations": [{"rule": "true"}]}
    assert check_rules({"free": [{"x": 1}]}, schema) == []
    assert check_rules({"free": {"x": 1}}, {"type": "object", "properties": {"free": {"type": "object"}}}) == []


def test_a_rule_on_additional_properties_runs_for_every_value_of_the_map() -> None:
    options = {"type": "object",
               "additionalProperties": rules({"rule": "self.size() <= 3", "message": "at most 3 characters"}, type_="string")}
    schema = {"type": "object", "properties": {"options": options}}
    assert check_rules({"options": {"a": "abc", "b": "abcd"}}, schema, ("spec",)) == [
        (("spec", "options", "b"), 'Invalid value: "abcd": at most 3 characters')
    ]


def test_additional_properties_true_gives_undeclared_keys_no_rules() -> None:
    schema = {"type": "object", "additionalProperties": True,
              "properties": {"name": rules({"rule": "self != 'x'", "message": "not x"}, type_="string")}}
    assert check_rules({"name": "x", "other": {"a": 1}}, schema) == [(("name",), 'Invalid value: "x": not x')]


def test_a_declared_property_does_not_take_the_rules_of_additional_properties() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}},
              "additionalProperties": rules({"rule": "false"}, type_="string")}
    assert check_rules({"name": "x"}, schema) == []


def test_every_failing_rule_of_a_node_is_reported_in_order() -> None:
    schema = rules({"rule": "self.a > 1", "message": "a above 1"}, {"rule": "self.a > 2", "message": "a above 2"},
                   {"rule": "self.a > 0"})
    assert check_rules({"a": 1}, schema, ("spec",)) == [
        (("spec",), "Invalid value: a above 1"), (("spec",), "Invalid value: a above 2")
    ]


def test_rules_of_a_node_and_of_its_children_are_all_reported() -> None:
    schema = rules({"rule": "self.size() == 0", "message": "must be empty"}, type_="array",
                   items=rules({"rule": "self != 'b'", "message": "not b"}, type_="string"))
    assert check_rules(["a", "b"], schema, ("spec", "hosts")) == [
        (("spec", "hosts"), "Invalid value: must be empty"),
        (("spec", "hosts", 1), 'Invalid value: "b": not b'),
    ]


def test_a_null_value_is_not_validated() -> None:
    # validation.go: "We only validate non-null values"
    schema = {"type": "object", "properties": {"comment": rules({"rule": "false"}, type_="string", nullable=True)}}
    assert check_rules({"comment": None}, schema) == []


def test_transition_rules_and_empty_rules_do_not_run_on_create() -> None:
    # a create has no old object (transition rules are skipped); compilation.go: an empty rule is no rule
    schema = rules({"rule": "self.a == oldSelf.a"}, {"rule": "  "}, {"message": "no rule at all"})
    assert check_rules({"a": 1}, schema) == []


def test_has_rules_finds_a_rule_wherever_it_is_declared() -> None:
    rule = [{"rule": "true"}]
    assert not has_rules({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}})
    assert has_rules({"type": "object", "properties": {"a": {"type": "array", "items": {"x-kubernetes-validations": rule}}}})
    assert has_rules({"type": "object", "properties": {"m": {"additionalProperties": {"x-kubernetes-validations": rule}}}})
    assert has_rules({"type": "object", "properties": {"s": {"x-kubernetes-validations": rule}}})


# --- the words of a rejection


def test_field_path_moves_the_error_to_the_named_field() -> None:
    # validation.go: currentFldPath.Child(NormalizedRuleFieldPath)
    limits = {"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}}}
    schema = rules({"rule": "self.limits.min <= self.limits.max", "message": "min above max", "fieldPath": ".limits.min"},
                   properties={"limits": limits})
    [(path, message)] = check_rules({"limits": {"min": 3, "max": 1}}, schema, ("spec",))
    assert (format_path(path), message) == ("spec.limits.min", "Invalid value: min above max")


LIMITS = {"type": "object", "properties": {
    "a": {"type": "object", "properties": {"bbb.c": {"type": "integer"}, "x": {"type": "integer"}}},
    "foo": {"type": "object", "additionalProperties": {"type": "string"}},
    "'foo'bar": {"type": "string"}, "white space": {"type": "string"}, "tab\there": {"type": "string"},
    "back\\slash": {"type": "string"}, "scalar": {"type": "string"},
}}


def field_path_error(field_path: str) -> str:
    """The field a false rule on LIMITS (at spec) is reported at, formatted as the validator does."""
    schema = dict(LIMITS, **{"x-kubernetes-validations": [{"rule": "false", "message": "m", "fieldPath": field_path}]})
    [(path, message)] = check_rules({}, schema, ("spec",))
    assert message == "Invalid value: m"
    return format_path(path)


def test_field_path_is_normalized_as_the_server_does() -> None:
    # validation_test.go TestValidateFieldPath: the same field paths and their normalized forms
    assert field_path_error(".a") == "spec.a"
    assert field_path_error(".a['bbb.c']") == "spec.a.bbb.c"  # one property named "bbb.c"
    assert field_path_error(".foo.subAdd") == "spec.foo[subAdd]"  # a key of an additionalProperties map
    assert field_path_error(".foo['subAdd']") == "spec.foo[subAdd]"
    assert field_path_error("['\\'foo\\'bar']") == "spec.'foo'bar"
    assert field_path_error(".white space") == "spec.white space"
    assert field_path_error("['white space']") == "spec.white space"
    assert field_path_error("['tab\\there']") == "spec.tab\there"
    assert field_path_error("['back\\\\slash']") == "spec.back\\slash"


#: the escapes validation.go ``unescapeSingleQuote`` knows (its switch: a b f n r t v ' and backslash);
#: any other character after a backslash is "invalid escape char"
GO_SINGLE_QUOTE_ESCAPES = "abfnrtv'\\"


@pytest.mark.parametrize("escape", [chr(cp) for cp in range(0x21, 0x7F)])
def test_each_escape_of_a_quoted_field_path_step_is_read_as_the_server_reads_it(escape: str) -> None:
    """``['a\\vb']`` names the property whose name holds a vertical tab: each escape the server knows
    is read as a Go string literal reads it, and the error lands on that field; after any other
    character the field path names nothing (the server refuses such a CRD) and the error stays at the rule."""
    name = "a" + (ast.literal_eval(f"'\\{escape}'") if escape in GO_SINGLE_QUOTE_ESCAPES else escape) + "b"
    readings = {name, f"a{escape}b", f"a\\{escape}b"}  # whatever a lenient reader could land on
    schema = {"type": "object", "properties": {n: {"type": "string"} for n in readings},
              "x-kubernetes-validations": [{"rule": "false", "message": "m", "fieldPath": f"['a\\{escape}b']"}]}
    [(path, message)] = check_rules({}, schema, ("spec",))
    assert (path, message) == ((("spec", name) if escape in GO_SINGLE_QUOTE_ESCAPES else ("spec",)), "Invalid value: m")


def test_a_field_path_that_names_no_field_leaves_the_error_at_the_rule() -> None:
    # ValidFieldPath errors (the API server refuses such a CRD): the rule's node is all that is left
    for field_path in [". a", ".a.bb[b", ".a['bbb.c'", ".", ".nope", ".a.x.y", ".scalar.y", "['white\\qspace']",
                       "['white\\Xspace']", "a", ".foo.k.deeper"]:
        assert field_path_error(field_path) == "spec", field_path


def test_an_evaluation_error_names_the_schema_type_and_stays_at_the_node() -> None:
    # validation.go: field.Invalid(fldPath, sts.Type, "%v evaluating rule: %v", err, ruleErrorString(rule)),
    # at fldPath (fieldPath only moves a false rule); the error's own words are cel-python's
    # ("no such member in mapping"), where cel-go says "no such key: missing"
    schema = rules({"rule": "self.missing == 1", "fieldPath": ".missing"})
    assert check_rules({"a": 1}, schema, ("spec",)) == [
        (("spec",), "Invalid value: \"object\": no such member in mapping: 'missing' evaluating rule: self.missing == 1")
    ]


def test_an_evaluation_error_on_a_node_without_a_type_names_the_empty_type() -> None:
    # x-kubernetes-int-or-string has no type: sts.Type is ""
    port = {"x-kubernetes-int-or-string": True, "x-kubernetes-validations": [{"rule": "self > 0", "message": "positive"}]}
    schema = {"type": "object", "properties": {"port": port}}
    [(path, message)] = check_rules({"port": "http"}, schema, ("spec",))
    assert path == ("spec", "port")
    assert message.startswith('Invalid value: "": found no matching overload')
    assert message.endswith(" evaluating rule: positive")
    # a false rule there quotes the value, whatever its type
    assert check_rules({"port": -1}, schema, ("spec",)) == [(("spec", "port"), "Invalid value: -1: positive")]


def test_an_error_without_words_is_named_by_its_type(monkeypatch) -> None:
    class Failing:
        def evaluate(self, activation: dict) -> None:
            raise RecursionError()

    monkeypatch.setattr(cel_rules, "_program", lambda expression: Failing())
    assert check_rules({}, rules({"rule": "deep"})) == [
        ((), 'Invalid value: "object": RecursionError evaluating rule: deep')
    ]


def test_an_evaluation_error_names_the_message_instead_of_the_rule_when_there_is_one() -> None:
    # validation.go ruleErrorString: the trimmed message when there is one
    schema = rules({"rule": "self.a / self.b == 1", "message": "  a must equal b  "}, type_="object")
    [(path, message)] = check_rules({"a": 1, "b": 0}, schema, ("spec",))
    assert path == ("spec",) and message.startswith('Invalid value: "object": ')
    assert message.endswith(" evaluating rule: a must equal b")


def test_the_message_and_the_rule_are_trimmed() -> None:
    # ruleMessageOrDefault: strings.TrimSpace(rule.Message), else "failed rule: " + TrimSpace(rule.Rule)
    with_message = rules({"rule": "false", "message": "  no  "}, type_="integer")
    without = rules({"rule": "  self > 5 ", "message": ""}, type_="integer")
    assert check_rules(3, with_message) == [((), "Invalid value: 3: no")]
    assert check_rules(3, without) == [((), "Invalid value: 3: failed rule: self > 5")]


def test_booleans_and_numbers_are_written_as_go_writes_them() -> None:
    assert check_rules(True, rules({"rule": "!self", "message": "m"}, type_="boolean")) == [((), "Invalid value: true: m")]
    assert check_rules(0.5, rules({"rule": "self > 1.0", "message": "m"}, type_="number")) == [((), "Invalid value: 0.5: m")]


def test_message_expression_gives_the_message_when_it_evaluates_to_a_string() -> None:
    schema = rules({"rule": "self.size <= 3", "message": "too big",
                    "messageExpression": "'size ' + string(self.size) + ' is above 3 '"})
    assert check_rules({"size": 7}, schema, ("spec",)) == [(("spec",), "Invalid value: size 7 is above 3")]


def test_message_expression_falls_back_to_the_message_as_the_server_does() -> None:
    # evalMessageExpression: an evaluation error, a non-string, an empty string, a line break or more
    # than 5 KiB (MaxEvaluatedMessageExpressionSizeBytes) -> ruleMessageOrDefault
    fallbacks = ["self.nothing", "self.size", "'  '", "'two\\nlines'", "'" + "y" * 5121 + "'"]
    for expression in fallbacks:
        schema = rules({"rule": "self.size <= 3", "message": "too big", "messageExpression": expression})
        assert check_rules({"size": 7}, schema) == [((), "Invalid value: too big")], expression
    schema = rules({"rule": "self.size <= 3", "messageExpression": "self.nothing"})
    assert check_rules({"size": 7}, schema) == [((), "Invalid value: failed rule: self.size <= 3")]


def test_a_message_expression_of_exactly_5_kib_is_kept() -> None:
    schema = rules({"rule": "false", "message": "m", "messageExpression": "'" + "y" * 5120 + "'"})
    assert check_rules({}, schema) == [((), "Invalid value: " + "y" * 5120)]


# --- the quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go): its own documented examples
# (numbered ids: an expression as a test id is no node id a test runner can pass back to pytest)
QUANTITY_EXAMPLES = [
    "quantity('200M').compareTo(quantity('0.2G')) == 0",
    "quantity('50M').compareTo(quantity('50Mi')) == -1",
    "quantity('50Mi').compareTo(quantity('50M')) == 1",
    "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
    "!quantity('50Mi').isGreaterThan(quantity('100Mi'))",
    "quantity('50M').isLessThan(quantity('100M'))",
    "!quantity('100M').isLessThan(quantity('50M'))",
    "quantity('50000000G').isInteger()",
    "quantity('50k').isInteger()",
    "!quantity('9999999999999999999999999999999999999G').isInteger()",
    "quantity('50k').asInteger() == 50000",
    "quantity('50k').sub(20000).asApproximateFloat() == 30000.0",
    "quantity('50k').add(quantity('20k')) == quantity('70k')",
    "quantity('50k').add(20) == quantity('50020')",
    "quantity('50k').sub(quantity('20k')) == quantity('30k')",
    "quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')",
    "isQuantity('1.3G') && isQuantity('1.3Gi') && isQuantity('10000k')",
    "!isQuantity('1,3G') && !isQuantity('200K') && !isQuantity('Three') && !isQuantity('Mi') && !isQuantity(' 1')",
    "sign(quantity('-1m')) == -1 && sign(quantity('0')) == 0 && sign(quantity('1Ki')) == 1",
]


@pytest.mark.parametrize("expression", QUANTITY_EXAMPLES, ids=[f"example-{i}" for i in range(len(QUANTITY_EXAMPLES))])
def test_the_quantity_library_answers_its_documented_examples(expression: str) -> None:
    assert check_rules({}, rules({"rule": expression})) == []


def test_a_quantity_that_does_not_parse_is_an_evaluation_error_in_parse_quantitys_words() -> None:
    """Recorded on kube-apiserver v1.36.2 (a rule ``sign(quantity(...)) >= 0`` on a limit of "x"): the
    server's words, which ours cut to the excerpt length that every message of ours keeps to."""
    server = ("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    [(path, message)] = check_rules({"cpu": "x"}, rules({"rule": "sign(quantity(self.cpu)) >= 0"}))
    assert message == f'Invalid value: "object": {excerpt(server)} evaluating rule: sign(quantity(self.cpu)) >= 0'
    assert path == ()


def test_as_integer_beyond_what_an_integer_holds_is_an_evaluation_error() -> None:
    """Recorded on kube-apiserver v1.36.2: ``quantity('1m').asInteger()``."""
    [(path, message)] = check_rules({"m": "1m"}, rules({"rule": "quantity(self.m).asInteger() > 0"}))
    assert message.startswith('Invalid value: "object": cannot convert value to integer evaluating rule')


def test_the_library_refuses_what_is_not_a_quantity_or_a_string() -> None:
    [(path, message)] = check_rules({"m": 1}, rules({"rule": "quantity(self.m).isInteger()"}))
    assert "no such overload" in message


@pytest.mark.parametrize(("expression", "holds"), [
    ("quantity('9223372036854775807').isInteger()", True),   # int64's bounds, both included (Quantity.AsInt64)
    ("quantity('-9223372036854775808').isInteger()", True),
    ("quantity('9223372036854775808').isInteger()", False),
    ("quantity('-9223372036854775809').isInteger()", False),
    ("quantity('1.5').isInteger()", False),
    ("sign(quantity('500m')) == 1", True),                   # between 0 and 1: still positive
    ("quantity('1').add(true) == quantity('2')", None),      # no such overload: an error, not a verdict
    ("quantity('1').compareTo(1) == 0", None),
    ("isQuantity(1)", None),
    ("quantity('2').asApproximateFloat() == 2.0", True),
], ids=[f"edge-{i}" for i in range(10)])
def test_the_quantity_library_at_its_edges(expression: str, holds: bool | None) -> None:
    problems = check_rules({}, rules({"rule": expression}))
    if holds is None:
        assert len(problems) == 1 and "evaluating rule" in problems[0][1]
    else:
        assert (problems == []) == holds, problems


def test_a_quantity_equals_only_a_quantity_of_the_same_value() -> None:
    from decimal import Decimal

    from memcached_gitops.schemas.cel_quantity import Quantity

    assert Quantity(Decimal("0.2")) == Quantity(Decimal("0.20")) and hash(Quantity(Decimal(1))) == hash(Quantity(Decimal("1.0")))
    assert Quantity(Decimal(1)) != Quantity(Decimal(2)) and Quantity(Decimal(1)) != "1"
