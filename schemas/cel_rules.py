"""``x-kubernetes-validations`` (CEL) rules, evaluated as the API server does on create.

Semantics (Kubernetes docs, "Validation rules"; apiextensions-apiserver/pkg/apiserver/schema/cel):
``self`` is the value of the node that declares the rule, after defaulting; a rule that is false
fails with its ``message`` (or the value of ``messageExpression``), or ``failed rule: <rule>``,
at the node's path plus ``fieldPath`` when given. Transition rules (those that use ``oldSelf``)
only run on updates and are skipped here: a render or validate is always a create.

cel-python is imported only when a CRD has rules, so the shipped CRD (which has none) keeps
``render`` and ``validate`` fast to start.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .excerpt import excerpt

Problem = tuple[tuple[str | int, ...], str]
_OLD_SELF = re.compile(r"\boldSelf\b")


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

    env = celpy.Environment()
    return env.program(env.compile(expression))


def check_rules(value: Any, schema: dict[str, Any], path: tuple[str | int, ...] = ()) -> list[Problem]:
    """Evaluate every rule that applies to ``value`` and its children."""
    problems: list[Problem] = []
    if value is None:
        return problems
    for rule in schema.get("x-kubernetes-validations") or []:
        problems += _check_one(value, rule, path)
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


def _check_one(value: Any, rule: dict[str, Any], path: tuple[str | int, ...]) -> list[Problem]:
    import celpy

    expression = rule.get("rule", "")
    if _OLD_SELF.search(expression):
        return []
    where = path + tuple(p for p in str(rule.get("fieldPath", "")).split(".") if p)
    activation = {"self": celpy.json_to_cel(value)}
    try:
        ok = _program(expression).evaluate(activation)
        if isinstance(ok, Exception):  # celpy may return an evaluation error as the value
            raise ok
    except Exception as exc:  # a compile or evaluation error is a rejection on the server too
        return [(where, f"Invalid value: {_kind_of(value)}: rule {expression!r} could not be evaluated: {excerpt(str(exc))}")]
    if bool(ok):
        return []
    message = rule.get("message") or f"failed rule: {expression}"
    if rule.get("messageExpression"):
        try:
            message = str(_program(rule["messageExpression"]).evaluate(activation))
        except Exception:  # the server falls back to message/rule text as well
            pass
    return [(where, f"Invalid value: {_kind_of(value)}: {message}")]


def _kind_of(value: Any) -> str:
    """How the API server names a value's type in a CEL error ("object", "array", or the value)."""
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return repr(value)
