"""The work queue against a model of client-go's workqueue rules, driven at random (issue 25).

hypothesis' stateful testing runs random sequences of add, add_after, add_rate_limited, get,
done, forget and the passing of time on a WorkQueue whose clock is the test's own (no background
thread: ``release_due`` is called as the clock moves), and checks each answer against the model:

- client-go util/workqueue queue.go: a key is queued at most once (``dirty``); a key being
  processed is never handed out again before its ``done``, and one added meanwhile is queued by
  ``done``; keys come out in the order they were queued;
- delaying_queue.go: a delayed key comes due at its time, and is then added as ``add`` adds it;
- default_rate_limiters.go: the delay of ``add_rate_limited`` is the larger of the per-key
  exponential backoff (5 ms doubling, capped at 1000 s, reset by ``forget``) and the token
  bucket's wait (10 a second, burst 100).
"""

from __future__ import annotations

import heapq
import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from memcached_gitops.reconciler.client.workqueue import WorkQueue

from tests.support.clock import ManualClock

KEYS = st.sampled_from(["a", "b", "c", "d"])
DELAYS = st.sampled_from([0.0, 0.001, 0.005, 0.01, 0.05, 0.2, 1.0])


class Model:
    """client-go's rules, written plainly."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.queue: list[str] = []
        self.dirty: dict[str, float] = {}  # key -> when it was added (latency counts from it)
        self.processing: set[str] = set()
        self.delayed: list[tuple[float, int, str]] = []
        self.seq = itertools.count()
        self.failures: dict[str, int] = {}
        self.tokens, self.last = 100.0, clock.now

    def add(self, key: str) -> None:
        if key in self.dirty:
            return
        self.dirty[key] = self.clock.now
        if key not in self.processing:
            self.queue.append(key)

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
        else:
            heapq.heappush(self.delayed, (self.clock.now + delay, next(self.seq), key))

    def rate_limit_delay(self, key: str) -> float:
        n = self.failures.get(key, 0)
        self.failures[key] = n + 1
        backoff = min(1000.0, 0.005 * 2**n)
        self.tokens = min(100.0, self.tokens + (self.clock.now - self.last) * 10.0)
        self.last = self.clock.now
        self.tokens -= 1
        bucket = 0.0 if self.tokens >= 0 else -self.tokens / 10.0
        return max(backoff, bucket)

    def release_due(self) -> None:
        while self.delayed and self.delayed[0][0] <= self.clock.now:
            self.add(heapq.heappop(self.delayed)[2])

    def get(self) -> tuple[str, float] | None:
        if not self.queue:
            return None
        key = self.queue.pop(0)
        self.processing.add(key)
        return key, self.dirty.pop(key)

    def done(self, key: str) -> None:
        self.processing.discard(key)
        if key in self.dirty:
            self.queue.append(key)


class WorkQueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(1000.0)
        self.queue = WorkQueue(clock=self.clock, delay_thread=False)
        self.model = Model(self.clock)
        self.held: list[str] = []  # keys a worker holds, in the order it got them

    @rule(key=KEYS)
    def add(self, key: str) -> None:
        self.queue.add(key)
        self.model.add(key)

    @rule(key=KEYS, delay=DELAYS)
    def add_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)
        self.model.add_after(key, delay)

    @rule(key=KEYS)
    def add_rate_limited(self, key: str) -> None:
        self.queue.add_rate_limited(key)
        self.model.add_after(key, self.model.rate_limit_delay(key))

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.queue.forget(key)
        self.model.failures.pop(key, None)
        assert self.queue.failures(key) == 0

    @rule(seconds=st.sampled_from([0.001, 0.004, 0.005, 0.01, 0.1, 0.5, 2.0, 30.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds
        self.queue.release_due()
        self.model.release_due()

    @rule()
    def get(self) -> None:
        got = self.queue.get(timeout=0)
        expected = self.model.get()
        assert got == expected
        if expected is not None:
            assert expected[0] not in self.held, "a key was handed to a second worker"
            self.held.append(expected[0])

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(self.held))
        self.held.remove(key)
        self.queue.done(key)
        self.model.done(key)

    @invariant()
    def same_queue(self) -> None:
        assert len(self.queue) == len(self.model.queue)
        pending = self.queue.pending()
        assert list(pending.queued) == self.model.queue
        assert set(pending.processing) == self.model.processing == set(self.held)
        assert pending.dirty == self.model.dirty
        assert not pending.delay_thread, "time is the test's: no thread of its own"

    @invariant()
    def same_failures(self) -> None:
        for key in "abcd":
            assert self.queue.failures(key) == self.model.failures.get(key, 0)


WorkQueueMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)
test_the_work_queue_follows_client_gos_rules = WorkQueueMachine.TestCase
