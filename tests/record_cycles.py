"""Record the outputs of ``reconcile`` in each cluster state and mode (tests/support/cycles.py) as
tests/golden/cycles/STATE.yaml, which tests/reconciler/orchestration/test_recorded_cycles.py
compares each run with.

    python -m tests.record_cycles            # every state
    python -m tests.record_cycles new-cr     # the states named

Run it after an intended change of what the reconciler logs, sends or leaves in the cluster, and
read the difference (``git diff tests/golden/cycles``) before committing it: a recorded output is the
product's behaviour, reviewed.
"""

from __future__ import annotations

import sys

from tests.support.cycles import GOLDEN, STATES, record
from tests.support.golden import record_main

if __name__ == "__main__":
    sys.exit(record_main(GOLDEN, STATES, record, sys.argv[1:]))
