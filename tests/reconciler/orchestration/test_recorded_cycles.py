"""Every output of one ``reconcile --once`` cycle, in each cluster state and mode, is the one recorded
in tests/golden/cycles/ (tests/support/cycles.py says what a cell records and what it normalises).

The other tests check one property each; this one holds the whole of what a user sees (exit code,
log, requests, the cluster afterwards) in states and modes they combine: a change anywhere in the
reconciler that alters any of it in any cell shows here as a difference, with the command that
records it again when the change is intended."""

from __future__ import annotations

import difflib

import pytest

from tests.support.cycles import GOLDEN, STATES, record

RECORD = "python -m tests.record_cycles {}"


@pytest.mark.parametrize("state", STATES)
def test_the_cycle_shows_what_was_recorded(state: str) -> None:
    recorded = (GOLDEN / f"{state}.yaml").read_text(encoding="utf-8")
    now = record(state)
    if now != recorded:
        diff = list(difflib.unified_diff(recorded.splitlines(), now.splitlines(), f"recorded {state}.yaml", "this run",
                                         lineterm="", n=2))
        shown = "\n".join(diff[:120]) + (f"\n... {len(diff) - 120} more lines" if len(diff) > 120 else "")
        pytest.fail(f"the outputs of state {state!r} differ from tests/golden/cycles/{state}.yaml:\n{shown}\n"
                    f"(if the change is intended: {RECORD.format(state)}, and review the difference)", pytrace=False)


def test_every_state_is_recorded_and_every_recording_is_a_state() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.yaml")) == sorted(STATES)
