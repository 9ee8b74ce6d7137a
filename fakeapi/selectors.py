"""Label selectors as the API server parses them (k8s.io/apimachinery/pkg/labels).

A malformed selector is a 400 BadRequest whose message is the parser's complaint, prefixed with
``unable to parse requirement: `` (transcript 32: ``a in (`` gives
``unable to parse requirement: found '', expected: ',', ')' or identifier``). The grammar is
upstream's: ``key``, ``!key``, ``key=v``, ``key==v``, ``key!=v``, ``key in (a,b)``,
``key notin (a,b)``, requirements joined by commas.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Requirement = Callable[[dict[str, str]], bool]

_TOKEN = re.compile(r"\s*(==|!=|=|!|\(|\)|,|[^\s=!(),]+)")


class SelectorError(ValueError):
    """The parser's message, as the server quotes it in the 400 body."""


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            break
        out.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


_OPERATORS = ("=", "==", "!=", "in", "notin")


def parse(text: str) -> list[Requirement]:
    """The requirements of a selector; raises SelectorError with upstream's message."""
    toks = _tokens(text)
    pos = 0

    def peek() -> str:
        return toks[pos] if pos < len(toks) else ""

    def take() -> str:
        nonlocal pos
        tok = peek()
        pos += 1
        return tok

    def identifier(tok: str) -> bool:
        return tok not in ("", "=", "==", "!=", "!", "(", ")", ",")

    reqs: list[Requirement] = []
    while pos < len(toks):
        tok = take()
        if tok == "!":
            key = take()
            if not identifier(key):
                raise SelectorError(f"unable to parse requirement: found '{key}', expected: identifier after '!'")
            reqs.append(lambda labels, k=key: k not in labels)
        elif identifier(tok):
            key = tok
            if peek() in ("", ","):
                reqs.append(lambda labels, k=key: k in labels)
            else:
                op = take()
                if op not in _OPERATORS:
                    raise SelectorError(f"unable to parse requirement: found '{op}', expected: {', '.join(_OPERATORS)}")
                if op in ("in", "notin"):
                    values = _values(take, peek, identifier)
                    if op == "in":
                        reqs.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
                    else:
                        reqs.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
                else:
                    value = take() if identifier(peek()) else ""
                    if op == "!=":
                        reqs.append(lambda labels, k=key, v=value: labels.get(k) != v)
                    else:
                        reqs.append(lambda labels, k=key, v=value: labels.get(k) == v)
        else:
            raise SelectorError(f"found '{tok}', expected: !, identifier, or 'end of string'")
        nxt = take() if pos < len(toks) else ""
        if nxt not in ("", ","):
            raise SelectorError(f"found '{nxt}', expected: ',' or 'end of string'")
    return reqs


def _values(take: Callable[[], str], peek: Callable[[], str], identifier: Callable[[str], bool]) -> set[str]:
    if (tok := take()) != "(":
        raise SelectorError(f"unable to parse requirement: found '{tok}' expected: '('")
    nxt = peek()
    if nxt == ")":
        take()
        return {""}
    if not (identifier(nxt) or nxt == ","):
        raise SelectorError(f"unable to parse requirement: found '{nxt}', expected: ',', ')' or identifier")
    values: set[str] = set()
    while True:
        tok = take()
        if tok == ")":
            return values
        if tok == ",":
            continue
        if not identifier(tok):
            raise SelectorError(f"unable to parse requirement: found '{tok}', expected: ',', or identifier")
        values.add(tok)


def matches(requirements: list[Requirement], labels: dict[str, str] | None) -> bool:
    return all(r(labels or {}) for r in requirements)
