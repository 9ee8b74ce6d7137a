"""Fight detection: another writer keeps undoing one of our corrections. Pure (the clock is given).

With millisecond reactions, the reconciler and an HPA, a script or another controller that want
a different value would trade writes hundreds of times a second. A fight is the same field of
the same object (the Deployment, the Service or the budget: each correction is counted with its
kind and name, so that a Service's field never adds up with a Deployment's) corrected against the
same other field manager more than ``threshold`` times within ``window`` seconds. The CR then
backs off (all its objects: one key) for a delay that doubles with each fight in a row (``base``
up to ``cap``); a correction made after the backoff that is undone again is another fight, so the
write rate stays bounded by one per delay. The fight is over once the
field has stayed corrected for ``window`` seconds after the backoff ended.

Thresholds, with Crossplane's XR watch circuit breaker as the reference (a token bucket of 100
events refilled at one per second; open for five minutes, one probe every 30 seconds): that
breaker counts every event of every composed resource, so it needs a large burst. This one
counts only corrections of one field against one named manager, a much narrower signal, so a
small threshold is safe: a person who runs ``kubectl scale`` twice in a minute is not a fight;
an HPA (15 s sync period) undoing us four times in two minutes is. Defaults: more than 3
corrections within 120 s; backoff 10 s doubling to 300 s (Crossplane's open period).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from memcached_gitops.foundation.backoff import doubled
from memcached_gitops.foundation.clocks import Monotonic

from .drift import Drift
from .vocabulary import DEPLOYMENTS


class Correction(NamedTuple):
    """One field our apply put back, on which object: its kind and ``namespace/name``. The drift
    names the managers that had set the live value (the candidates for a fight)."""

    kind: str
    name: str
    drift: Drift


@dataclass(frozen=True)
class Fight:
    """A field of the object ``kind`` ``name`` (namespace/name) that ``manager`` keeps undoing; the CR
    waits ``delay`` seconds."""

    field: str
    manager: str
    corrections: int
    window: float
    delay: float
    name: str
    kind: str = DEPLOYMENTS.kind

    @property
    def label(self) -> str:
        """The field as the metrics name it: a companion's after its kind, as the drift counters do."""
        return self.field if self.kind == DEPLOYMENTS.kind else f"{self.kind} {self.field}"

    @property
    def message(self) -> str:
        times = "once" if self.corrections == 1 else f"{self.corrections} times"  # the first after a backoff
        return (f"{self.field} of {self.kind} {self.name} was corrected {times} in "
                f"{self.window:g}s and set back each time by field manager {self.manager}; "
                f"corrections paused for {self.delay:g}s (another controller, an HPA or a script is fighting this Memcached)")


@dataclass
class _State:
    level: int = 0  # fights in a row: the backoff doubles with each
    until: Monotonic = Monotonic(0.0)  # no reconcile before this instant
    last: Fight | None = None


@dataclass
class FightDetector:
    threshold: int = 3
    window: float = 120.0
    base: float = 10.0
    cap: float = 300.0
    _corrections: dict[tuple[object, str, str, str, str], deque[Monotonic]] = field(default_factory=dict)
    _states: dict[object, _State] = field(default_factory=dict)

    def record(self, key: object, name: str, path: str, manager: str, now: Monotonic, kind: str = DEPLOYMENTS.kind) -> Fight | None:
        """A correction of ``path`` of the CR ``key``'s object ``kind`` ``name`` whose live value
        ``manager`` had set; a Fight when it is one too many. The backoff is the CR's (one key).
        A fight that is over by ``now`` is ended first: whether anyone asked ``active`` in between
        (nothing need, between two resyncs) must not decide whether this correction is a fight."""
        self._end_if_over(key, now)
        times = self._corrections.setdefault((key, kind, name, path, manager), deque())
        times.append(now)
        while times and times[0] < now - self.window:
            times.popleft()
        state = self._states.get(key)
        again = state is not None and state.last is not None and (
            (state.last.kind, state.last.name, state.last.field, state.last.manager) == (kind, name, path, manager))
        if len(times) <= self.threshold and not again:
            return None
        state = state or self._states.setdefault(key, _State())
        state.level += 1
        delay = doubled(self.base, state.level - 1, self.cap)
        state.until = now + delay
        state.last = Fight(path, manager, len(times), self.window, delay, name, kind)
        times.clear()  # the next fight needs new corrections after the backoff
        return state.last

    def wait(self, key: object, now: Monotonic) -> float:
        """Seconds this CR must still wait before it may be reconciled (0: go ahead)."""
        state = self._states.get(key)
        return max(0.0, state.until - now) if state else 0.0

    def active(self, key: object, now: Monotonic) -> Fight | None:
        """The fight to report on the CR's status, until it has been quiet for ``window`` after its backoff."""
        self._end_if_over(key, now)
        state = self._states.get(key)
        return state.last if state else None

    def _end_if_over(self, key: object, now: Monotonic) -> None:
        """Forget the CR's fight (its level and its corrections) once it has been quiet for ``window``
        after its backoff: the next correction counts from nothing again."""
        state = self._states.get(key)
        if state is not None and now > state.until + self.window:
            self.forget(key)

    def forget(self, key: object) -> None:
        self._states.pop(key, None)
        for k in [k for k in self._corrections if k[0] == key]:
            del self._corrections[k]
