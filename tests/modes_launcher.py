"""``memcached-gitops`` exactly as the console script runs it, with the Lease timings shortened.

tests/reconciler/orchestration/test_modes.py starts the real ``reconcile`` command as a process per replica; losing and
regaining a Lease with client-go's timings (a 15 s lease, a 10 s renew deadline) would take tens of
seconds per case. ``MODES_LEASE="duration,renew_deadline,retry_period"`` gives the leader elector
and the shard ring other defaults; nothing else differs from ``python -m memcached_gitops``.
"""

from __future__ import annotations

import os
from typing import Any

from memcached_gitops.reconciler.client import leader, shards

from memcached_gitops.entry import main


def shorten(timings: str) -> None:
    duration, deadline, retry = (float(t) for t in timings.split(","))
    chosen = {"duration": int(duration), "renew_deadline": deadline, "retry_period": retry}

    class Elector(leader.LeaderElector):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **(chosen | kwargs))

    class Ring(shards.ShardRing):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **(chosen | kwargs))

    leader.LeaderElector = Elector  # type: ignore[misc]  # main.py imports both names when it runs
    shards.ShardRing = Ring  # type: ignore[misc]


if __name__ == "__main__":
    if os.environ.get("MODES_LEASE"):
        shorten(os.environ["MODES_LEASE"])
    main()
