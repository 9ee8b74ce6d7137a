"""Record the outputs of the commands that need no cluster (tests/support/cli_outputs.py) as
tests/golden/cli/COMMAND.yaml, which tests/cli/test_recorded_outputs.py compares each run with.

    python -m tests.record_cli_outputs            # every command
    python -m tests.record_cli_outputs krm        # the commands named

Run it after an intended change of what a command prints, writes or exits with, and read the
difference (``git diff tests/golden/cli``) before committing it: a recorded output is the
product's behaviour, reviewed.
"""

from __future__ import annotations

import os
import sys
import tempfile

from tests.support.cli_outputs import GOLDEN, RUNS, record


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        print(f"no such command: {', '.join(unknown)} (known: {', '.join(RUNS)})", file=sys.stderr)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in names or list(RUNS):
        fd, tmp = tempfile.mkstemp(dir=GOLDEN, prefix=f".{name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(record(name))
        os.replace(tmp, GOLDEN / f"{name}.yaml")
        print(f"recorded {GOLDEN / name}.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
