"""Record the outputs of the commands that need no cluster (tests/support/cli_outputs.py) as
tests/golden/cli/COMMAND.yaml, which tests/cli/test_recorded_outputs.py compares each run with.

    python -m tests.record_cli_outputs            # every command
    python -m tests.record_cli_outputs krm        # the commands named

Run it after an intended change of what a command prints, writes or exits with, and read the
difference (``git diff tests/golden/cli``) before committing it: a recorded output is the
product's behaviour, reviewed.
"""

from __future__ import annotations

import sys

from tests.support.cli_outputs import GOLDEN, RUNS, record
from tests.support.golden import record_main

if __name__ == "__main__":
    sys.exit(record_main(GOLDEN, RUNS, record, sys.argv[1:]))
