"""Record the outputs of ``reconcile --once`` in each cluster state and mode (tests/support/cycles.py)
as tests/golden/cycles/STATE.yaml, which tests/reconciler/orchestration/test_recorded_cycles.py
compares each run with.

    python -m tests.record_cycles            # every state
    python -m tests.record_cycles new-cr     # the states named

Run it after an intended change of what the reconciler logs, sends or leaves in the cluster, and
read the difference (``git diff tests/golden/cycles``) before committing it: a recorded output is the
product's behaviour, reviewed.
"""

from __future__ import annotations

import os
import sys
import tempfile

from tests.support.cycles import GOLDEN, STATES, record


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in STATES]
    if unknown:
        print(f"no such state: {', '.join(unknown)} (known: {', '.join(STATES)})", file=sys.stderr)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in names or list(STATES):
        fd, tmp = tempfile.mkstemp(dir=GOLDEN, prefix=f".{name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(record(name))
        os.replace(tmp, GOLDEN / f"{name}.yaml")
        print(f"recorded {GOLDEN / name}.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
