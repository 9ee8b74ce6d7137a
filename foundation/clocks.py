"""Instants of the two clocks, as types that never meet.

A deadline taken from the wall clock and compared with the monotonic one is off by 1.7e9 seconds:
a CR parked "until" such a deadline is never served again. So an instant carries its clock in its
type: ``Monotonic`` (``time.monotonic``: deadlines, waits and latencies inside this process) and
``WallTime`` (``time.time``: what other processes read, such as a Lease's renewTime). Each compares
and subtracts only with its own kind; a mixed comparison is a type error for mypy (the dataclass
plugin types ``__lt__`` with the class itself) and a TypeError at run time. Durations are plain
float seconds. A ``Clock`` is injected wherever a deadline is computed, so tests drive time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Protocol, Self, overload


@dataclass(frozen=True)
class _Instant:
    """An instant in seconds; each clock's subclass compares (its own dataclass ordering, typed with
    the subclass) and subtracts only with its own kind."""

    seconds: float

    def __add__(self, duration: float) -> Self:
        return replace(self, seconds=self.seconds + duration)

    @overload
    def __sub__(self, other: Self) -> float: ...
    @overload
    def __sub__(self, other: float) -> Self: ...
    def __sub__(self, other: Self | float) -> float | Self:
        """The seconds between two instants of one clock, or the instant a duration earlier."""
        if type(other) is type(self):
            return self.seconds - other.seconds
        if isinstance(other, (int, float)):
            return replace(self, seconds=self.seconds - other)
        return NotImplemented


@dataclass(frozen=True, order=True)
class Monotonic(_Instant):
    """An instant of the monotonic clock, in seconds from an arbitrary start."""


@dataclass(frozen=True, order=True)
class WallTime(_Instant):
    """An instant of the wall clock, in seconds since the epoch (what other hosts read)."""


class Clock(Protocol):
    """Where instants come from: the system's clocks, or a test's."""

    def monotonic(self) -> Monotonic: ...

    def wall(self) -> WallTime: ...


class SystemClock:
    """The process's clocks."""

    def monotonic(self) -> Monotonic:
        return Monotonic(time.monotonic())

    def wall(self) -> WallTime:
        return WallTime(time.time())


SYSTEM_CLOCK = SystemClock()


def monotonic_seconds() -> float:
    """The monotonic clock as plain seconds: the default of the clocks still injected as a
    ``Callable[[], float]`` (the work queue, the Lease loops, the review cache, the kustomize and
    certificate timers), so that every reading of the clocks goes through this module."""
    return time.monotonic()
