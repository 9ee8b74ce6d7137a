"""A work queue of CR keys with client-go's workqueue semantics.

- A key is queued at most once: adding a key that is waiting is a no-op (``dirty``).
- A key is never handed to two workers at once: a key added while it is being processed waits
  in ``dirty`` and is queued again by ``done`` (``processing``).
- Failures are put back with ``add_rate_limited``: the larger of a per-key exponential backoff
  (5 ms doubling to 1000 s, client-go's ItemExponentialFailureRateLimiter) and an overall token
  bucket (10 per second, burst 100, client-go's BucketRateLimiter), as client-go's
  DefaultControllerRateLimiter combines them. ``forget`` resets a key's failures after a success.
- ``get`` blocks on a Condition variable and wakes the moment a key is added: nothing between an
  event and its reconcile waits on a timer or polls. Only delayed re-adds (a backoff) wait, on a
  single thread that sleeps until the earliest is due.
- Each kind of waiter has a Condition of its own, on one lock: workers (``_available``), the delay
  thread (``_delays``) and ``wait_idle`` (``_idle``). ``notify`` wakes the longest waiter of its
  Condition; on one shared Condition a key's wake-up could go to the delay thread or to
  ``wait_idle``, which go back to sleep, and the key waited for the next event.

Time is an input: ``clock`` is read for every deadline, and ``release_due`` is the one place a
delayed key comes due. With ``delay_thread=False`` nothing runs in the background, and a test
moves its own clock and calls ``release_due`` (tests/reconciler/client/test_workqueue_model.py drives the queue so
against a model of client-go's rules).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from memcached_gitops.foundation.backoff import doubled
from memcached_gitops.foundation.clocks import monotonic_seconds

#: the type of a queue's keys (the controller's: namespace and name)
K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


@dataclass
class ExponentialBackoff(Generic[K]):
    """Per-key delay ``base * 2**failures``, capped."""

    base: float = 0.005
    cap: float = 1000.0
    failures: dict[K, int] = field(default_factory=dict)

    def when(self, key: K) -> float:
        n = self.failures.get(key, 0)
        self.failures[key] = n + 1
        return doubled(self.base, n, self.cap)

    def forget(self, key: K) -> None:
        self.failures.pop(key, None)


@dataclass
class TokenBucket:
    """An overall rate limit: ``rate`` tokens a second, at most ``burst`` saved up. ``reserve``
    takes a token and answers how long to wait for it (golang.org/x/time/rate's Reserve)."""

    rate: float = 10.0
    burst: int = 100
    clock: Callable[[], float] = monotonic_seconds
    tokens: float | None = None
    last: float = 0.0

    def reserve(self) -> float:
        now = self.clock()
        if self.tokens is None:
            self.tokens, self.last = float(self.burst), now
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


class QueueObserver(Protocol[K_contra]):
    """What client-go's workqueue tells its metrics (util/workqueue/metrics.go ``queueMetrics``):
    a key newly queued (``add``; a key already waiting is not), taken by a worker (``get``), and
    let go (``done``). Called under the queue's lock: an observer only records."""

    def added(self, key: K_contra) -> None: ...

    def taken(self, key: K_contra) -> None: ...

    def finished(self, key: K_contra) -> None: ...


@dataclass(frozen=True)
class Pending(Generic[K]):
    """A snapshot of what a queue holds, taken under its lock: the keys waiting in order, those being
    processed, when each waiting or re-added key was first added, and the delayed keys' due times."""

    queued: tuple[K, ...]
    processing: frozenset[K]
    dirty: dict[K, float]
    delayed: tuple[tuple[float, K], ...]
    delay_thread: bool  # the queue runs a thread of its own to release delayed keys


class WorkQueue(Generic[K]):
    def __init__(self, backoff: ExponentialBackoff[K] | None = None, bucket: TokenBucket | None = None,
                 clock: Callable[[], float] = monotonic_seconds, delay_thread: bool = True,
                 observer: QueueObserver[K] | None = None) -> None:
        self.backoff: ExponentialBackoff[K] = backoff or ExponentialBackoff()
        self.bucket = bucket or TokenBucket(clock=clock)
        self.clock = clock
        self._lock = threading.RLock()
        self._available = threading.Condition(self._lock)  # workers in get: a key was queued
        self._delays = threading.Condition(self._lock)  # the delay thread: a delayed key was added
        self._idle = threading.Condition(self._lock)  # wait_idle: the last key being processed is done
        self._queue: deque[K] = deque()
        self._dirty: dict[K, float] = {}  # key -> when it was first added since it was last taken
        self._processing: set[K] = set()
        self._shutting_down = False
        self._delayed: list[tuple[float, int, K]] = []
        self._seq = itertools.count()
        self._delay_thread: threading.Thread | None = None
        self._start_delay_thread = delay_thread
        self.observer = observer

    # ---- adding
    def add(self, key: K, arrived: float | None = None) -> None:
        """Queue ``key`` (``arrived``: when the event that caused it was read, for latency)."""
        with self._lock:
            if self._shutting_down or key in self._dirty:
                return
            self._dirty[key] = arrived if arrived is not None else self.clock()
            if self.observer is not None:
                self.observer.added(key)
            if key in self._processing:
                return  # done() queues it again
            self._queue.append(key)
            self._available.notify()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._lock:
            if self._shutting_down:
                return
            heapq.heappush(self._delayed, (self.clock() + delay, next(self._seq), key))
            if self._delay_thread is None and self._start_delay_thread:
                self._delay_thread = threading.Thread(target=self._release_delayed, daemon=True, name="workqueue-delay")
                self._delay_thread.start()
            self._delays.notify()  # the delay thread may need to wake earlier

    def add_rate_limited(self, key: K) -> None:
        with self._lock:
            delay = max(self.backoff.when(key), self.bucket.reserve())
        self.add_after(key, delay)

    def forget(self, key: K) -> None:
        with self._lock:
            self.backoff.forget(key)

    def failures(self, key: K) -> int:
        with self._lock:
            return self.backoff.failures.get(key, 0)

    def release_due(self) -> float | None:
        """Queue every delayed key that is due by the clock, as ``add`` would (a key a worker holds
        waits in ``dirty`` for its ``done``); the time until the next one is due, or None."""
        with self._lock:
            while self._delayed and not self._shutting_down:
                due, _, key = self._delayed[0]
                wait = due - self.clock()
                if wait > 0:
                    return wait
                heapq.heappop(self._delayed)
                if key not in self._dirty:
                    self._dirty[key] = self.clock()
                    if self.observer is not None:
                        self.observer.added(key)
                    if key not in self._processing:
                        self._queue.append(key)
                        self._available.notify()
            return None

    def _release_delayed(self) -> None:
        with self._lock:
            while not self._shutting_down:
                self._delays.wait(self.release_due())  # the lock is reentrant

    # ---- taking
    def get(self, timeout: float | None = None) -> tuple[K, float] | None:
        """The next key and when it was first added; None once shut down (or after ``timeout``)."""
        with self._lock:
            while not self._queue and not self._shutting_down:
                if not self._available.wait(timeout):
                    return None
            if self._shutting_down:
                return None
            key = self._queue.popleft()
            self._processing.add(key)
            arrived = self._dirty.pop(key)
            if self.observer is not None:
                self.observer.taken(key)
            return key, arrived

    def done(self, key: K) -> None:
        with self._lock:
            if self.observer is not None and key in self._processing:
                self.observer.finished(key)
            self._processing.discard(key)
            if key in self._dirty and not self._shutting_down:
                self._queue.append(key)
                self._available.notify()
            elif not self._processing:
                self._idle.notify_all()

    def shut_down(self) -> None:
        """Workers' ``get`` returns None from now on; keys being processed finish (``done``)."""
        with self._lock:
            self._shutting_down = True
            self._delayed.clear()
            for waiters in (self._available, self._delays, self._idle):
                waiters.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Until no key is being processed (after shut_down: the current items are drained)."""
        deadline = None if timeout is None else self.clock() + timeout
        with self._lock:
            while self._processing:
                remaining = None if deadline is None else deadline - self.clock()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining)
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)

    def pending(self) -> Pending[K]:
        """What the queue holds now, read-only: for the metrics and the tests, which must not reach
        into the queue's state while a worker changes it."""
        with self._lock:
            return Pending(tuple(self._queue), frozenset(self._processing), dict(self._dirty),
                           tuple((due, key) for due, _, key in sorted(self._delayed)), self._delay_thread is not None)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down
