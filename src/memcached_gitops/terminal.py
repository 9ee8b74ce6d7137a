"""Colour and a progress line, for a person at a terminal only: never in a pipe, a file or CI.

- Colour (``--color=auto|always|never``, kubectl's and git's spelling): ``auto`` colours only when
  the stream is a terminal, ``NO_COLOR`` is unset or empty (no-color.org) and ``TERM`` is not
  ``dumb``. Without colour the bytes are exactly what they were before colour existed, so a pipe, a
  log and the pre-commit hook's output never change.
- Progress: after about a second of work, one line on stderr that rewrites itself ("checked 1,204
  of 5,000 files"), cleared at the end; only when stderr is a terminal and ``CI`` is unset.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import TextIO, TypeVar

from memcached_gitops.foundation.clocks import monotonic_seconds

T = TypeVar("T")
RESET = "\x1b[0m"
BOLD, RED, YELLOW = "\x1b[1m", "\x1b[31m", "\x1b[33m"
#: Seconds of work before a progress line appears (kubectl and pip show none for short work either).
PROGRESS_AFTER = 1.0


class ColorMode(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def use_color(mode: ColorMode | str, stream: TextIO, environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether to colour what goes to ``stream`` under ``mode`` (see the module's docstring)."""
    if mode == ColorMode.never:
        return False
    if mode == ColorMode.always:
        return True
    return bool(getattr(stream, "isatty", lambda: False)()) and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def paint(line: str, severity: str = "error") -> str:
    """A diagnostic ``WHERE: ...: MESSAGE`` with its place in bold and its message red (an error) or
    yellow (a warning)."""
    where, sep, rest = line.partition(": ")
    colour = YELLOW if severity == "warning" else RED
    return f"{BOLD}{where}{RESET}{sep}{colour}{rest}{RESET}" if sep else f"{colour}{line}{RESET}"


def shows_progress(stream: TextIO = sys.stderr, environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and not environ.get("CI")


def with_progress(items: Iterable[T], what: str, total: int | None = None, stream: TextIO = sys.stderr,
                  clock: Callable[[], float] = monotonic_seconds, enabled: bool | None = None) -> Iterator[T]:
    """``items`` as they are, with a progress line on ``stream`` once the work has taken PROGRESS_AFTER
    seconds (at most ten updates a second), cleared when done."""
    if not (shows_progress(stream) if enabled is None else enabled):
        yield from items
        return
    started, shown, count = clock(), 0.0, 0
    try:
        for item in items:
            yield item
            count += 1
            now = clock()
            if now - started >= PROGRESS_AFTER and now - shown >= 0.1:
                shown = now
                of = f" of {total:,}" if total is not None else ""
                stream.write(f"\r\x1b[K{what} {count:,}{of} files")
                stream.flush()
    finally:
        if shown:
            stream.write("\r\x1b[K")
            stream.flush()
