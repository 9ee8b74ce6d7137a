"""A clock a test moves by hand.

It implements ``foundation.clocks.Clock`` (``monotonic()`` and ``wall()`` give typed instants) for
the controller; called, it gives the float monotonic seconds the client classes take as
``monotonic=``/``clock=`` (work queue, token bucket, shard ring, elector, metrics, reviews); and
``datetime()`` is the wall time as a ``datetime``, for a Lease's MicroTimes. All read ``now``,
seconds since ``start``, which a test sets or moves with ``advance``.
"""

from __future__ import annotations

import datetime as dt

from memcached_gitops.foundation.clocks import Monotonic, WallTime

EPOCH = dt.datetime(2026, 11, 25, 12, 0, 0, tzinfo=dt.UTC)


class ManualClock:
    """Time stands still until a test moves it."""

    def __init__(self, now: float = 0.0, start: dt.datetime = EPOCH) -> None:
        self.now = now
        self.start = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def monotonic(self) -> Monotonic:
        return Monotonic(self.now)

    def wall(self) -> WallTime:
        return WallTime(self.start.timestamp() + self.now)

    def datetime(self) -> dt.datetime:
        return self.start + dt.timedelta(seconds=self.now)


class SteppingBack:
    """A host whose wall clock an NTP step moves an hour back at every reading, while its monotonic
    clock moves on by ``tick`` at every reading, from ``start``; ``ticks`` counts the monotonic readings."""

    def __init__(self, start: float = 1000.0, tick: float = 0.25) -> None:
        self.start, self.tick = start, tick
        self.ticks = self.walls = 0

    def monotonic(self) -> Monotonic:
        self.ticks += 1
        return Monotonic(self.start + self.tick * self.ticks)

    def wall(self) -> WallTime:
        self.walls += 1
        return WallTime(EPOCH.timestamp() - 3600.0 * self.walls)

    @property
    def latest(self) -> float:
        """The last monotonic reading, in seconds."""
        return self.start + self.tick * self.ticks
