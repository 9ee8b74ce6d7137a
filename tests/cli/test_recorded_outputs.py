"""Every output of the commands that need no cluster, in each recorded run, is the one recorded in
tests/golden/cli/ (tests/support/cli_outputs.py says what a run records and what it normalises).

The other tests of tests/cli check one property each; this one holds the whole of what a user sees
(exit code, stdout, stderr, the files written) across inputs, options, layouts and the ways Argo
CD and kustomize run the commands: a change that alters any of it shows here as a difference, with
the command that records it again when the change is intended."""

from __future__ import annotations

import difflib

import pytest

from tests.support.cli_outputs import GOLDEN, RUNS, record

RECORD = "python -m tests.record_cli_outputs {}"


@pytest.mark.parametrize("command", RUNS)
def test_the_command_shows_what_was_recorded(command: str) -> None:
    recorded = (GOLDEN / f"{command}.yaml").read_text(encoding="utf-8")
    now = record(command)
    if now != recorded:
        diff = list(difflib.unified_diff(recorded.splitlines(), now.splitlines(), f"recorded {command}.yaml", "this run",
                                         lineterm="", n=2))
        shown = "\n".join(diff[:120]) + (f"\n... {len(diff) - 120} more lines" if len(diff) > 120 else "")
        pytest.fail(f"the outputs of {command!r} differ from tests/golden/cli/{command}.yaml:\n{shown}\n"
                    f"(if the change is intended: {RECORD.format(command)}, and review the difference)", pytrace=False)


def test_every_command_is_recorded_and_every_recording_is_a_command() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.yaml")) == sorted(RUNS)
