"""The preview written for a person: text for a terminal or a CI log, Markdown for a pull request.

Pure: rendered_diff.py's AppPreview list in, a string out. Both forms put the summary first (per
application: objects added, changed, removed and renamed by kind, the CR field behind each change,
a rename said once), then each application's diffs. The Markdown form fits GitHub's limit on a
comment's body (65,536 characters): a table, then a collapsed ``<details>`` per application, cut
with a line that says how much was left out and the command that shows all of it locally.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from memcached_gitops.foundation.excerpt import one_line

from .rendered_diff import AppPreview, ObjectChange, ref

#: GitHub's limit on an issue or pull-request comment's body, in characters.
GITHUB_COMMENT_LIMIT = 65_536
ACTIONS = ("added", "changed", "removed", "renamed")
#: Room kept for the truncation line and the closing of a cut section.
_RESERVE = 800


def by_kind(preview: AppPreview, action: str) -> str:
    """``Deployment 1, Service 2`` for one action of one application."""
    counts = preview.counts.get(action)
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) if counts else ""


def causes(preview: AppPreview, with_objects: bool = True) -> list[str]:
    """``CR: field: old -> new (what it changed)``, once per cause; the renames, once each."""
    grouped: dict[str, list[ObjectChange]] = {}
    for change in preview.changes:
        if change.cause:
            grouped.setdefault(change.cause, []).append(change)
    lines = [f"{cause} ({_listed(f'{c.action} {ref(c.key)}' for c in changes)})" if with_objects else cause
             for cause, changes in grouped.items()]
    return lines + preview.renames


def _listed(items: Iterable[str], shown: int = 4) -> str:
    items = list(items)
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def headline(previews: list[AppPreview], base: str, commit: str) -> str:
    changed = sum(1 for p in previews if p.changes)
    failed = sum(1 for p in previews if p.problems)
    text = f"{changed} of {len(previews)} application(s) change between the merge base {commit[:12]} of {base} and the working tree"
    return text + (f"; {failed} cannot be read" if failed else "")


def text_report(previews: list[AppPreview], base: str, commit: str) -> str:
    """The summary (one line per application that changes or cannot be read, its causes indented), then the diffs."""
    out = [headline(previews, base, commit)]
    for p in previews:
        if p.problems:
            out += [f"{p.app}: error ({'base' if side == 'base' else 'pull request'}): {line}" for side, line in p.problems]
        elif p.changes:
            out.append(f"{p.app}: " + "; ".join(f"{a} {by_kind(p, a)}" for a in ACTIONS if by_kind(p, a)))
            out += [f"  {line}" for line in causes(p)]
    for p in previews:
        for change in p.changes:
            out += ["", *change.diff]
    return "\n".join(map(one_line, out)) + "\n"  # a CI log's lines: no input starts one, or a workflow command


#: Markdown's punctuation (CommonMark's ASCII punctuation that starts inline markup), as character references.
_MARKDOWN = {ord(c): f"&#{ord(c)};" for c in "|[]()!*_`~<>\\#"}


def _cell(text: str) -> str:
    """Text safe in a table cell or an HTML element: no markup, no column break, no line break, and no
    Markdown (GitHub renders links and images inside ``<code>`` too): its punctuation as character
    references."""
    return html.escape(one_line(text.replace("\n", " ")), quote=False).translate(_MARKDOWN)  # \r, U+2028 end lines too


def _fence(lines: list[str]) -> str:
    """A code fence longer than any run of backticks in the lines (CommonMark), so none can close it."""
    longest = max((len(m) for line in lines for m in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


def table(previews: list[AppPreview]) -> list[str]:
    rows = ["| application | added | changed | removed | renamed | caused by |", "| --- | --- | --- | --- | --- | --- |"]
    for p in previews:
        if p.problems:
            rows.append(f"| <code>{_cell(p.app)}</code> | :x: cannot be read ({len(p.problems)} problem(s), below) | | | | |")
        elif p.changes:
            cells = [_cell(by_kind(p, a)) for a in ACTIONS]
            rows.append(f"| <code>{_cell(p.app)}</code> | {' | '.join(cells)} | {_cell(_listed(causes(p, with_objects=False), 2))} |")
    return rows


def _fitting(lines: list[str], room: int) -> list[str]:
    """The first of ``lines`` that fit in ``room`` characters, a line break each."""
    shown: list[str] = []
    for line in lines:
        room -= len(line) + 1
        if room < 0:
            break
        shown.append(line)
    return shown


def section(preview: AppPreview, room: int) -> tuple[str, int]:
    """One application's ``<details>``, cut to ``room`` characters: (the text, lines left out).

    Its problems and causes come first, then its diff; whatever does not fit (a thousand invalid
    CRs' lines, a long diff) is cut and counted."""
    said = ", ".join(f"{len([c for c in preview.changes if c.action == a])} {a}" for a in ACTIONS if preview.counts.get(a))
    opening = [f"<details><summary><code>{_cell(preview.app)}</code>: {_cell(said or 'cannot be read')}</summary>", ""]
    items = [f"- {'base' if side == 'base' else 'pull request'}: <code>{_cell(line)}</code>" for side, line in preview.problems]
    items += [f"- {_cell(line)}" for line in causes(preview)]
    lines = [line for change in preview.changes for line in change.diff]
    fence = _fence(lines)
    room -= sum(len(o) + 1 for o in opening) + 2 * len(fence) + 120  # the fences, the cut line, the closing
    items_shown = _fitting(items, room)
    shown = _fitting(lines, room - sum(len(i) + 1 for i in items_shown))
    left = len(items) - len(items_shown) + len(lines) - len(shown)
    body = ["", fence + "diff", *shown, fence] if shown else []
    cut = ["", f"_{left} more line(s) of this application left out._"] if left else []
    return "\n".join(opening + items_shown + body + cut + ["", "</details>", "", ""]), left  # a blank line between sections


def markdown_report(previews: list[AppPreview], base: str, commit: str, command: str,
                    limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The pull-request comment: at most ``limit`` characters, the table first, then a section per application."""
    shown = [p for p in previews if p.changes or p.problems]
    parts = ["### memcached-gitops preview", "", _cell(headline(previews, base, commit)) + ".", ""]
    rows = table(shown) if shown else []
    while rows and sum(len(r) + 1 for r in parts + rows) > limit - 2 * _RESERVE:  # thousands of applications
        rows.pop()
    left_rows = len(shown) + 2 - len(rows) if rows else 0
    parts += rows + ([f"_{left_rows} more row(s) left out._"] if left_rows else []) + ([""] if rows else [])
    text = "\n".join(parts) + "\n"
    left_apps, left_lines = 0, 0
    for p in shown:
        room = limit - _RESERVE - len(text)
        if left_apps or room < _RESERVE:
            left_apps += 1
            left_lines += sum(len(c.diff) for c in p.changes) + len(p.problems) + len(causes(p))
            continue
        part, cut = section(p, room)
        text += part
        left_lines += cut
    if left_apps or left_lines:
        text += (f"\n_Truncated to fit GitHub's {limit:,}-character limit: {left_apps} application section(s) and "
                 f"{left_lines:,} line(s) left out. See everything locally with <code>{_cell(command)}</code>._\n")
    return text
