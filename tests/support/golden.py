"""Recorded outputs (characterization): a table of named cases, a function that runs one and says
everything it showed as text, and a folder of golden files, one per case. ``record_main`` writes
them (each atomically); ``assert_recorded`` compares a run with its file and fails with the
difference and the command that records it again."""

from __future__ import annotations

import difflib
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest


def record_main(golden: Path, names: Iterable[str], record: Callable[[str], str], argv: list[str]) -> int:
    """Record the cases named in ``argv`` (all without), as ``golden``/NAME.yaml."""
    known = list(names)
    unknown = [n for n in argv if n not in known]
    if unknown:
        print(f"no such case: {', '.join(unknown)} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    golden.mkdir(parents=True, exist_ok=True)
    for name in argv or known:
        fd, tmp = tempfile.mkstemp(dir=golden, prefix=f".{name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(record(name))
        os.replace(tmp, golden / f"{name}.yaml")
        print(f"recorded {golden / name}.yaml")
    return 0


def assert_recorded(golden: Path, name: str, now: str, again: str) -> None:
    """``now`` is ``golden``/NAME.yaml, or the test fails with the difference (its first 120 lines)."""
    recorded = (golden / f"{name}.yaml").read_text(encoding="utf-8")
    if now == recorded:
        return
    diff = list(difflib.unified_diff(recorded.splitlines(), now.splitlines(), f"recorded {name}.yaml", "this run", lineterm="", n=2))
    shown = "\n".join(diff[:120]) + (f"\n... {len(diff) - 120} more lines" if len(diff) > 120 else "")
    pytest.fail(f"the outputs of {name!r} differ from {golden.relative_to(golden.parent.parent.parent)}/{name}.yaml:\n{shown}\n"
                f"(if the change is intended: {again} {name}, and review the difference)", pytrace=False)


def assert_all_recorded(golden: Path, names: Iterable[str]) -> None:
    """Every case has its file and every file its case (a case renamed leaves no stale file)."""
    assert sorted(p.stem for p in golden.glob("*.yaml")) == sorted(names)
