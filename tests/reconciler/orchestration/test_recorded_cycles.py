"""Every output of one ``reconcile --once`` cycle, in each cluster state and mode, is the one recorded
in tests/golden/cycles/ (tests/support/cycles.py says what a cell records and what it normalises).

The other tests check one property each; this one holds the whole of what a user sees (exit code,
log, requests, the cluster afterwards) in states and modes they combine: a change anywhere in the
reconciler that alters any of it in any cell shows here as a difference, with the command that
records it again when the change is intended."""

from __future__ import annotations

import pytest
import yaml

from tests.support.cycles import DIFFED, GOLDEN, STATES, record, run_diff
from tests.support.golden import assert_all_recorded, assert_recorded


@pytest.mark.parametrize("state", STATES)
def test_the_cycle_shows_what_was_recorded(state: str) -> None:
    assert_recorded(GOLDEN, state, record(state), "python -m tests.record_cycles")


def test_every_state_is_recorded_and_every_recording_is_a_state() -> None:
    assert_all_recorded(GOLDEN, STATES)


@pytest.mark.parametrize("state", DIFFED)
def test_diff_in_this_process_shows_what_the_command_recorded(state: str) -> None:
    """The recorded ``diff`` cell, run by typer's runner in this process rather than in a process
    of its own: the same exit, lines and requests (and what the mutation tests of diff.py read)."""
    recorded = yaml.safe_load((GOLDEN / f"{state}.yaml").read_text())
    [cell] = [c for c in recorded["cells"] if c["mode"] == "diff"]
    assert run_diff(state, in_process=True) == cell, "python -m tests.record_cycles " + state
