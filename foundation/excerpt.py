"""Bounded excerpts of input for messages: no message ever echoes a whole value or document.

Input comes from strangers (fork pull requests, Argo CD sources) and messages go to public places
(CI logs, the Argo CD UI, Events and conditions). A value is therefore quoted by at most
``EXCERPT_LIMIT`` characters, then ``…``; a whole scalar document only by its type and length.
Pure functions, shared by the validator, the CLI, the KRM function and the reconciler.
"""

from __future__ import annotations

import json
from typing import Any

#: Characters of an input value a message may quote.
EXCERPT_LIMIT = 64
ELLIPSIS = "…"


def excerpt(text: str, limit: int = EXCERPT_LIMIT, *, end: bool = False) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` when something was cut; with ``end``, its last
    ``limit`` characters after the ``…`` (a path, whose end names the file)."""
    if len(text) <= limit:
        return text
    return ELLIPSIS + text[len(text) - limit:] if end else text[:limit] + ELLIPSIS


#: Characters of a path a line of text may show: its end, which names the file. A repository's own
#: names can nest to Linux's 4,096 bytes a path; a line of the log or the terminal shows the end.
PATH_LIMIT = 200


def shown_path(path: str) -> str:
    """``path`` as a line of text shows it: whole up to ``PATH_LIMIT`` characters, else ``…`` and its end.
    Structured output (JSON, annotations) keeps the whole path, which a program matches."""
    return excerpt(path, PATH_LIMIT, end=True)


#: Diagnostics are one line each. A control character from the input (Git can commit a file whose
#: name holds a newline or an escape sequence) is written escaped, so it can neither start a line of
#: its own in a CI log (a forged ``::error`` workflow command, a fake summary) nor drive a terminal.
_ONE_LINE = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if c != 0x09}
_ONE_LINE |= {0x0A: "\\n", 0x0D: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"}
#: Unicode's bidirectional controls (Trojan Source, CVE-2021-42574): a name holding one could show a
#: terminal or a pull request's annotation a different text than the bytes say; each is written escaped.
_ONE_LINE |= {c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


#: GitHub's runner still reads its older command form, ``##[error]…`` or ``##[stop-commands]token``, anywhere in
#: a line (actions/runner src/Runner.Worker/ActionCommandManager.cs, after the ``::`` form that must start it).
_OLD_COMMAND = "##["


def one_line(text: str) -> str:
    """``text`` as one line of a log or a terminal: each control character (``_ONE_LINE``) escaped, and the
    runner's older command form broken (``#\\x23[``), so no input can start or end a workflow command.

    The runner trims a line's leading white space before it looks for ``::`` (actions/runner
    src/Runner.Common/ActionCommand.cs ``TryParseV2``: .NET ``TrimStart``, Unicode's white space), and a
    file named `` ::warning::x.yaml`` starts its own finding's line: such a line's first ``:`` is written
    ``\\x3a``."""
    line = text.translate(_ONE_LINE).replace(_OLD_COMMAND, "#\\x23[")
    body = line.lstrip()
    return line[:len(line) - len(body)] + "\\x3a" + body[1:] if body.startswith("::") else line


#: What stands for the middle cut out of a text by ``excerpt_ends``.
MIDDLE = " … "


def excerpt_ends(text: str, limit: int = EXCERPT_LIMIT) -> str:
    """``text`` if it has at most ``limit`` characters, else its start (a third) and its end with `` … ``
    between, ``limit`` characters in all: for a message of someone else's that quotes input anywhere in it (a
    tool's error line), where the start says what failed and the end why, and no run of more than
    ``limit`` characters of it may be shown, wherever the input is."""
    if len(text) <= limit:
        return text
    head = limit // 3  # what failed is said first, in few words; why, and on what file, at the end
    return text[:head] + MIDDLE + text[len(text) - (limit - len(MIDDLE) - head):]


def quote_value(value: Any) -> str:
    """A value as the API server quotes it in ``Invalid value: …`` (Go's %q / JSON), excerpted.

    Strings are cut before quoting (so the quotes stay balanced); other values are written as
    compact JSON and cut the same way.
    """
    if isinstance(value, str):
        return json.dumps(excerpt(value), ensure_ascii=False)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (ValueError, TypeError):
        text = repr(value)
    return excerpt(text)


def type_and_length(value: Any) -> str:
    """How a non-object document is described: its type and size, never its contents."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number of {len(str(value))} digits"
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return f"a {type(value).__name__}"
