"""Every output of the commands that need no cluster, in each recorded run, is the one recorded in
tests/golden/cli/ (tests/support/cli_outputs.py says what a run records and what it normalises).

The other tests of tests/cli check one property each; this one holds the whole of what a user sees
(exit code, stdout, stderr, the files written) across inputs, options, layouts and the ways Argo
CD and kustomize run the commands: a change that alters any of it shows here as a difference, with
the command that records it again when the change is intended."""

from __future__ import annotations

import pytest

from tests.support.cli_outputs import GOLDEN, RUNS, record
from tests.support.golden import assert_all_recorded, assert_recorded


@pytest.mark.parametrize("command", RUNS)
def test_the_command_shows_what_was_recorded(command: str) -> None:
    assert_recorded(GOLDEN, command, record(command), "python -m tests.record_cli_outputs")


def test_every_command_is_recorded_and_every_recording_is_a_command() -> None:
    assert_all_recorded(GOLDEN, RUNS)
