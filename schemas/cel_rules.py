"""``x-kubernetes-validations`` (CEL) rules, evaluated as the API server does on create.

Semantics (Kubernetes docs, "Validation rules"; apiextensions-apiserver/pkg/apiserver/schema/cel):
``self`` is the value of the node that declares the rule, after defaulting; a rule that is false
fails with its ``message`` (or the value of ``messageExpression``), or ``failed rule: <rule>``,
at the node's path plus ``fieldPath`` when given. Transition rules (those that use ``oldSelf``)
only run on updates and are skipped here: a render or validate is always a create.

cel-python is a dependency of every install (a validator that cannot judge a rule would pass what
the server refuses), imported only when a value reaches a rule: a CR without ``spec.resources``
(where the shipped CRD's rules are) keeps ``render`` and ``validate`` fast to start.
"""

from __future__ import annotations

import codecs
import json
import re
from functools import lru_cache
from typing import Any

from memcached_gitops.foundation.excerpt import excerpt, quote_value

Problem = tuple[tuple[str | int, ...], str]
_OLD_SELF = re.compile(r"\boldSelf\b")
#: staging/src/k8s.io/apiserver/pkg/apis/cel/config.go MaxEvaluatedMessageExpressionSizeBytes
MAX_MESSAGE_BYTES = 5 * 1024
#: one step of a rule's fieldPath: ``.name`` or ``['quoted name']`` (validation.go ValidFieldPath)
_FIELD_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]")
#: the characters unescapeSingleQuote accepts after a backslash; any other is an error
_ESCAPED = "abfnrtv'\\"


def has_rules(schema: dict[str, Any]) -> bool:
    """Whether any node of the schema declares x-kubernetes-validations."""
    if schema.get("x-kubernetes-validations"):
        return True
    children = list((schema.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            children.append(schema[key])
    return any(has_rules(c) for c in children)


@lru_cache(maxsize=256)
def _program(expression: str) -> Any:
    import celpy  # deferred: only CRDs with rules pay for it

    from .cel_quantity import FUNCTIONS

    env = celpy.Environment()
    return env.program(env.compile(expression), functions=FUNCTIONS)  # type: ignore[arg-type]  # celpy's Result union


def check_rules(value: Any, schema: dict[str, Any], path: tuple[str | int, ...] = ()) -> list[Problem]:
    """Evaluate every rule that applies to ``value`` and its children."""
    problems: list[Problem] = []
    if value is None:  # validation.go: "We only validate non-null values"
        return problems
    for rule in schema.get("x-kubernetes-validations") or []:
        problems += _check_one(value, schema, rule, path)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, additional if isinstance(additional, dict) else None)
            if sub is not None:
                problems += check_rules(item, sub, path + (key,))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problems += check_rules(item, schema["items"], path + (i,))
    return problems


def _check_one(value: Any, schema: dict[str, Any], rule: dict[str, Any], path: tuple[str | int, ...]) -> list[Problem]:
    """One rule on one value, worded as apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go
    words it: an evaluation error names the schema's type at the node's own path; a false rule names
    the value (not for an object or an array) at the node's path plus ``fieldPath``."""
    expression = str(rule.get("rule", ""))
    if not expression.strip() or _OLD_SELF.search(expression):  # compilation.go: an empty rule is no rule
        return []
    text = json.dumps(value, sort_keys=True)
    ok, reason = _evaluated(expression, text)
    if reason is not None:  # a compile or evaluation error is a rejection on the server too
        kind = quote_value(schema.get("type", ""))
        return [(path, f"Invalid value: {kind}: {excerpt(reason)} evaluating rule: {_rule_error_string(rule)}")]
    if ok:
        return []
    field = _normalized_field_path(str(rule.get("fieldPath", "")), schema)
    where = path + (field,) if field else path  # currentFldPath.Child(NormalizedRuleFieldPath)
    detail = _evaluated_message(rule, text)
    if detail is None:
        message = rule.get("message")
        detail = message.strip() if message else f"failed rule: {_rule_error_string(rule)}"
    if schema.get("type") in ("object", "array"):  # field.OmitValueType{}: the value is left out
        return [(where, f"Invalid value: {detail}")]
    return [(where, f"Invalid value: {quote_value(value)}: {detail}")]


@lru_cache(maxsize=4096)
def _evaluated(expression: str, value: str) -> tuple[bool, str | None]:
    """A rule's verdict on a value (its JSON text): whether it holds, or the words of its compile or
    evaluation error. Remembered: a rule is a pure function of ``self``, and the CRs of one repository
    share their values (the same resources, tolerations) while cel-python takes milliseconds a rule."""
    from celpy.adapter import json_to_cel

    try:
        ok = _program(expression).evaluate({"self": json_to_cel(json.loads(value))})
        if isinstance(ok, Exception):  # celpy may return an evaluation error as the value
            raise ok
    except Exception as exc:
        # celpy's errors carry their words first, then the Python exception behind them
        return False, str(exc.args[0]) if exc.args else type(exc).__name__
    return bool(ok), None


def _evaluated_message(rule: dict[str, Any], value: str) -> str | None:
    """The value of ``messageExpression``, or None where the server falls back to ``message``
    (validation.go evalMessageExpression: an error, not a string, empty, a line break, over 5 KiB)."""
    from celpy.adapter import json_to_cel

    source = rule.get("messageExpression")
    if not source:
        return None
    try:
        result = _program(source).evaluate({"self": json_to_cel(json.loads(value))})
    except Exception:
        return None
    if not isinstance(result, str):  # also an evaluation error celpy returns as the value
        return None
    text = result.strip()
    if not text or "\n" in text or len(text.encode()) > MAX_MESSAGE_BYTES:
        return None
    return text


def _rule_error_string(rule: dict[str, Any]) -> str:
    """validation.go ruleErrorString: the message when there is one, else the rule, trimmed."""
    message = rule.get("message")
    return message.strip() if message else str(rule["rule"]).strip()


def _normalized_field_path(field_path: str, schema: dict[str, Any]) -> str:
    """A rule's fieldPath as validation.go ValidFieldPath normalizes it: ``.a['b.c']`` is the
    property ``b.c`` of ``a`` (written ``a.b.c``); a step into additionalProperties is a key,
    written ``m[k]``. "" when it names no field of the schema: the API server refuses such a CRD,
    and the error stays at the rule's node."""
    out, at = "", 0
    while at < len(field_path):
        step = _FIELD_PATH_STEP.match(field_path, at)
        if step is None or not isinstance(schema, dict):
            return ""
        name = step[1] if step[1] is not None else _unescape(step[2])
        if name is None:
            return ""
        at = step.end()
        if schema.get("properties") is not None:
            if name not in schema["properties"]:
                return ""
            out, schema = f"{out}.{name}" if out else name, schema["properties"][name]
        elif schema.get("additionalProperties") is not None:
            out, schema = f"{out}[{name}]", schema["additionalProperties"]
        else:
            return ""
    return out


def _unescape(quoted: str) -> str | None:
    """validation.go unescapeSingleQuote: None for an escape it does not know."""
    parts = re.split(r"\\(.)", quoted)  # text, escaped char, text, ...
    if any(c not in _ESCAPED for c in parts[1::2]):
        return None
    return "".join(codecs.decode("\\" + p, "unicode_escape") if i % 2 else p for i, p in enumerate(parts))
