"""The work queue's client-go semantics: dedup, one worker per key, backoff, rate limit, no timers."""

from __future__ import annotations

import threading
import time

import pytest
from memcached_gitops.reconciler.client.workqueue import ExponentialBackoff, Pending, TokenBucket, WorkQueue

from tests.support.clock import ManualClock


def test_a_waiting_key_is_queued_once() -> None:
    q = WorkQueue()
    q.add("a", arrived=1.0)
    q.add("a", arrived=2.0)
    q.add("b")
    assert len(q) == 2
    assert q.get() == ("a", 1.0), "the earliest arrival is kept: latency counts from the first event"
    assert q.get()[0] == "b"


def test_a_key_is_never_processed_twice_at_once() -> None:
    q = WorkQueue()
    q.add("a")
    key, _ = q.get()
    q.add("a")  # an event while a worker holds it
    assert q.get(timeout=0.05) is None, "not handed to a second worker"
    q.done(key)
    assert q.get(timeout=1)[0] == "a", "queued again once the first worker is done"


def test_get_wakes_on_add_without_polling() -> None:
    q = WorkQueue()
    got: list[float] = []

    def worker() -> None:
        item = q.get()
        got.append(time.monotonic())
        assert item is not None

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.2)  # the worker is now blocked in get()
    added = time.monotonic()
    q.add("a")
    t.join(2)
    assert got and got[0] - added < 0.05


def test_failures_back_off_exponentially_per_key_and_forget_resets() -> None:
    b = ExponentialBackoff(base=0.005, cap=1.0)
    assert [b.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert b.when("b") == 0.005, "per key"
    b.forget("a")
    assert b.when("a") == 0.005
    assert max(b.when("c") for _ in range(20)) == 1.0, "capped"


def test_a_key_that_fails_for_ever_stays_at_the_cap() -> None:
    """A CR refused every time for weeks (1,100 failures at the 1,000 s cap is 12 days) still gets
    the cap, as client-go's ItemExponentialFailureRateLimiter returns its maxDelay once the delay
    would overflow: never an error out of the queue's rate limiting."""
    b = ExponentialBackoff(base=0.005, cap=1000.0)
    assert [b.when("a") for _ in range(1100)][-3:] == [1000.0, 1000.0, 1000.0]


def test_the_overall_bucket_limits_the_rate_after_its_burst() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=10, burst=3, clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert abs(bucket.reserve() - 0.1) < 1e-9
    assert abs(bucket.reserve() - 0.2) < 1e-9
    now[0] = 10.0
    assert bucket.reserve() == 0, "refilled"
    assert [bucket.reserve() for _ in range(2)] == [0, 0], "to its burst"
    assert abs(bucket.reserve() - 0.1) < 1e-9, "and no more: 10 s idle saves up 3 tokens, not 100"


def test_rate_limited_keys_come_back_after_their_delay() -> None:
    q = WorkQueue(backoff=ExponentialBackoff(base=0.1))
    q.add_rate_limited("a")
    assert q.get(timeout=0.03) is None
    start = time.monotonic()
    assert q.get(timeout=2)[0] == "a"
    assert time.monotonic() - start < 0.5
    assert q.failures("a") == 1
    q.forget("a")
    assert q.failures("a") == 0


def test_shut_down_drains_the_current_item_only() -> None:
    q = WorkQueue()
    q.add("a")
    q.add("b")
    key, _ = q.get()
    q.shut_down()
    assert q.get() is None, "nothing new is handed out"
    assert not q.wait_idle(timeout=0.05), "the current item is still being processed"
    q.done(key)
    assert q.wait_idle(timeout=1)


def test_shut_down_drops_the_keys_waiting_out_a_delay() -> None:
    """A queue shut down holds no delayed key any more: the backoffs waiting to come due are dropped
    with it and any added after it is refused, as ``add`` refuses (nothing would ever hand them out),
    so it reads as empty, a delayed key never returns and no delay thread is started for one."""
    clock = ManualClock()
    q = WorkQueue(clock=clock, delay_thread=False)
    q.add_after("a", 5.0)
    q.add_rate_limited("b")
    assert len(q.pending().delayed) == 2
    q.shut_down()
    assert q.pending().delayed == () and q.pending().queued == ()
    q.add_after("c", 1.0)
    q.add_rate_limited("d")
    q.add("e")
    q.add_after("f", 0.0)  # due at once: an add
    assert q.pending().delayed == () and q.pending().queued == () and q.pending().dirty == {} and len(q) == 0
    threaded = WorkQueue()
    threaded.shut_down()
    threaded.add_after("e", 1.0)
    assert threaded.pending() == Pending((), frozenset(), {}, (), False), "no delay thread for a queue shut down"
    clock.advance(10.0)
    assert q.release_due() is None and q.get(timeout=0) is None


def test_the_token_bucket_refills_by_elapsed_time_and_never_asks_for_a_negative_wait() -> None:
    clock = ManualClock(1024.0)
    bucket = TokenBucket(rate=10.0, burst=2, clock=clock)
    assert [bucket.reserve(), bucket.reserve()] == [0.0, 0.0]  # the burst
    assert bucket.reserve() == 0.1 and bucket.reserve() == 0.2  # then one every 1/rate s, queued up
    clock.now += 0.375  # 3.75 tokens' worth: the debt of 2 paid, 1.75 left
    assert bucket.reserve() == 0.0 and bucket.tokens == 0.75
    assert bucket.reserve() == pytest.approx(0.025)  # a quarter of a token short


def test_a_key_added_without_an_arrival_time_arrives_by_the_clock() -> None:
    clock = ManualClock(1000.0)
    q = WorkQueue(clock=clock, delay_thread=False)
    q.add("a")
    q.add_after("b", 5.0)
    clock.now += 5.0
    assert q.release_due() is None
    assert q.get(timeout=0) == ("a", 1000.0) and q.get(timeout=0) == ("b", 1005.0)


def test_an_arrival_time_given_is_kept_even_at_zero() -> None:
    """Only a key added without an arrival time takes the clock's: an event read at monotonic time 0.0
    (a clock that starts at zero) arrived then, and its latency counts from then."""
    clock = ManualClock(1000.0)
    q = WorkQueue(clock=clock, delay_thread=False)
    q.add("a", arrived=0.0)
    q.add("b", arrived=None)
    assert q.get(timeout=0) == ("a", 0.0) and q.get(timeout=0) == ("b", 1000.0)


def test_the_delay_thread_starts_only_when_asked_for_and_never_blocks_exit() -> None:
    manual = WorkQueue(delay_thread=False)
    manual.add_after("a", 10.0)
    assert not manual.pending().delay_thread and manual.release_due() > 9.0
    q = WorkQueue()
    q.add_after("a", 10.0)
    assert q.pending().delay_thread is True  # the snapshot says so too, as a bool
    assert q._delay_thread is not None and q._delay_thread.daemon and q._delay_thread.name == "workqueue-delay"
    q.shut_down()


def test_wait_idle_wakes_when_the_last_key_is_done() -> None:
    q = WorkQueue(clock=ManualClock(1000.0))  # a frozen clock: only done's notify can end the wait
    q.add("a")
    q.add("b")
    keys = [q.get()[0], q.get()[0]]
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(q.wait_idle(timeout=1000.0)), daemon=True)
    waiter.start()
    q.done(keys[0])
    waiter.join(0.2)
    assert waiter.is_alive(), "a key is still being processed"
    q.done(keys[1])
    waiter.join(5.0)
    assert result == [True]


def test_wait_idle_without_a_timeout_waits_for_done() -> None:
    q = WorkQueue()
    assert q.wait_idle() is True  # nothing processing
    q.add("a")
    key, _ = q.get()
    threading.Timer(0.05, q.done, args=(key,)).start()
    assert q.wait_idle() is True and not q.pending().processing


def test_wait_idle_gives_up_after_its_timeout_and_not_before() -> None:
    q = WorkQueue()
    q.add("a")
    q.get()
    start = time.monotonic()
    assert q.wait_idle(timeout=0.2) is False
    assert time.monotonic() - start >= 0.2
    clock = ManualClock(1000.0)
    frozen = WorkQueue(clock=clock)
    frozen.add("a")
    frozen.get()
    assert frozen.wait_idle(timeout=0) is False  # the deadline is now: no wait at all


def waiting(q: WorkQueue, threads: int, bound: float = 5.0) -> None:
    """Until ``threads`` threads wait on the queue's Conditions (each waiter is a lock in its list)."""
    conditions = [v for v in vars(q).values() if isinstance(v, threading.Condition)]
    deadline = time.monotonic() + bound
    while sum(len(c._waiters) for c in conditions) < threads:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the threads never waited"
        time.sleep(0.005)


def worker_after(q: WorkQueue, waiters: int) -> tuple[threading.Thread, list[object]]:
    """A worker blocked in ``get`` behind ``waiters`` threads that waited before it; what it got."""
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(q.get()), daemon=True)
    worker.start()
    waiting(q, waiters + 1)
    return worker, got


@pytest.mark.parametrize("first_waiter", ["the delay thread", "wait_idle"])
def test_an_added_key_wakes_a_worker_whichever_thread_has_waited_longest(first_waiter) -> None:
    """A lost wake-up: ``notify`` wakes the longest waiter. When the delay thread (after any delayed
    add) or a ``wait_idle`` caller waits longer than the workers, an added key's wake-up must still
    reach a worker, not a thread that goes back to sleep and leaves the key queued until the next event."""
    q = WorkQueue()
    if first_waiter == "the delay thread":
        q.add_after("retried", 0.001)
        assert q.get(timeout=5) is not None
        q.done("retried")
        waiting(q, 1)  # the delay thread, with nothing delayed, waits
    else:
        q.add("held")
        assert q.get(timeout=5) is not None  # processed, so wait_idle waits for its done
        threading.Thread(target=q.wait_idle, daemon=True).start()
        waiting(q, 1)
    worker, got = worker_after(q, 1)
    q.add("drifted")
    worker.join(5)
    assert got and got[0][0] == "drifted", "the worker slept on with a key queued"  # type: ignore[index]


def test_a_key_queued_again_by_done_wakes_a_worker_while_wait_idle_waits() -> None:
    """``done`` of a key added while it was processed queues it again: that wake-up goes to a worker
    even when a ``wait_idle`` caller (waiting for another key) has waited longer."""
    q = WorkQueue()
    q.add("a")
    q.add("b")
    assert q.get(timeout=5)[0] == "a"  # type: ignore[index]
    assert q.get(timeout=5)[0] == "b"  # type: ignore[index]
    threading.Thread(target=q.wait_idle, daemon=True).start()
    waiting(q, 1)
    worker, got = worker_after(q, 1)
    q.add("a")  # while it is processed: it waits in dirty
    q.done("a")  # queued again; "b" is still processed, so wait_idle has nothing to wake for
    worker.join(5)
    assert got and got[0][0] == "a"  # type: ignore[index]


def test_a_wake_up_before_idle_does_not_give_wait_idle_its_whole_timeout_again() -> None:
    """``wait_idle(timeout)`` ends at its deadline however often it is woken while keys are still
    processed (here by ``shut_down``): the controller's shutdown bound is 30 s, not 30 s per wake-up."""
    q = WorkQueue()
    q.add("a")
    q.get()
    threading.Timer(0.3, q.shut_down).start()
    start = time.monotonic()
    assert q.wait_idle(timeout=0.6) is False
    assert 0.6 <= time.monotonic() - start < 0.85


def _wait_idle_across_done(q: WorkQueue, key: str) -> list[bool]:
    """What a ``wait_idle`` caller, waiting before ``key`` is done, returns within 5 s of the ``done``."""
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(q.wait_idle(timeout=1000.0)), daemon=True)
    waiter.start()
    waiting(q, 1)
    q.done(key)
    waiter.join(5)
    return result


def test_after_shut_down_done_queues_nothing_again_and_wait_idle_ends() -> None:
    """A key added while a worker held it waits for ``done``; after ``shut_down`` that ``done``
    queues nothing, and the worker's ``done`` is what ``wait_idle`` waits for."""
    q = WorkQueue(clock=ManualClock(1000.0))  # a frozen clock: only done's notify can end the wait
    q.add("a")
    key, _ = q.get()
    q.add("a")  # again, while it is processed
    q.shut_down()
    assert _wait_idle_across_done(q, key) == [True] and len(q) == 0 and q.get(timeout=0) is None


def test_wait_idle_ends_when_the_last_key_processed_is_done_whatever_is_still_queued() -> None:
    """Idle is nothing being processed: after ``shut_down`` the keys still queued are never taken (a
    SIGTERM's drain), so the ``done`` of the last key processed ends ``wait_idle`` however many wait."""
    q = WorkQueue(clock=ManualClock(1000.0))  # a frozen clock: only done's notify can end the wait
    for key in ("a", "b", "c"):
        q.add(key)
    taken, _ = q.get()
    q.shut_down()
    assert _wait_idle_across_done(q, taken) == [True] and len(q) == 2


def test_every_wait_idle_caller_wakes_when_the_last_key_is_done() -> None:
    q = WorkQueue(clock=ManualClock(1000.0))
    q.add("a")
    key, _ = q.get()
    results: list[bool] = []
    waiters = [threading.Thread(target=lambda: results.append(q.wait_idle(timeout=1000.0)), daemon=True) for _ in range(2)]
    for w in waiters:
        w.start()
    waiting(q, 2)
    q.done(key)
    for w in waiters:
        w.join(5)
    assert results == [True, True]


def test_failures_of_many_keys_are_spread_by_the_overall_bucket() -> None:
    """Each key's own backoff starts at 5 ms, but the overall bucket (10 a second after a burst of
    100) spreads many failing keys: the 101st comes due 0.1 s later, the 150th 5 s later."""
    clock = ManualClock(1000.0)
    q = WorkQueue(clock=clock, delay_thread=False)
    for n in range(150):
        q.add_rate_limited(f"k{n}")
    dues = sorted(due - clock.now for due, _ in q.pending().delayed)
    assert dues[99] == pytest.approx(0.005) and dues[100] == pytest.approx(0.1) and dues[149] == pytest.approx(5.0)


def test_a_delayed_key_wakes_the_delay_thread_that_sleeps_with_nothing_to_wait_for() -> None:
    """The delay thread, with nothing delayed, sleeps until told; ``add_after`` tells it."""
    q = WorkQueue()
    q.add_after("first", 0.001)
    assert q.get(timeout=5) is not None
    q.done("first")
    waiting(q, 1)  # the delay thread waits, with no deadline
    q.add_after("second", 0.05)
    item = q.get(timeout=5)
    assert item is not None and item[0] == "second"


def test_a_key_delayed_less_than_the_one_the_delay_thread_waits_for_comes_back_at_its_own_time() -> None:
    """The delay thread sleeps until the earliest delayed key; a key added later with a shorter delay is the
    earliest now and comes back at its own time, not at the other's (a key failing for ever at the 1000 s
    cap never holds back another key's 5 ms retry)."""
    q = WorkQueue()
    q.add_after("later", 60.0)
    waiting(q, 1)  # the delay thread sleeps until "later" is due
    q.add_after("sooner", 0.01)
    start = time.monotonic()
    item = q.get(timeout=5)
    assert item is not None and item[0] == "sooner" and time.monotonic() - start < 2
    q.shut_down()


def test_keys_that_come_due_together_each_wake_a_worker_of_their_own() -> None:
    """Each delayed key that comes due wakes a worker, as ``add`` does: keys due at the same moment (the
    retries after an outage) go to as many idle workers at once, none left queued while a worker sleeps."""
    clock = ManualClock(1000.0)
    q: WorkQueue[str] = WorkQueue(clock=clock, delay_thread=False)
    got: list[object] = []
    workers = [threading.Thread(target=lambda: got.append(q.get(timeout=5)), daemon=True) for _ in range(3)]
    for worker in workers:
        worker.start()
    waiting(q, 3)
    for key in "abc":
        q.add_after(key, 1.0)
    clock.advance(1.0)
    assert q.release_due() is None
    for worker in workers:
        worker.join(10)
    assert sorted(item[0] for item in got if item is not None) == ["a", "b", "c"]  # type: ignore[index]


def test_the_observer_is_told_of_each_add_take_and_done_as_client_gos_metrics_are() -> None:
    """client-go's queue.go calls its metrics' add for a key newly queued (not one waiting already,
    but one held by a worker: it is queued again at done), get when a worker takes a key, done when
    it lets a held key go; a delayed key coming due is an add. The observer hears exactly that."""
    heard: list[tuple[str, str]] = []

    class Observer:
        def added(self, key: str) -> None:
            heard.append(("added", key))

        def taken(self, key: str) -> None:
            heard.append(("taken", key))

        def finished(self, key: str) -> None:
            heard.append(("finished", key))

    now = [100.0]
    q: WorkQueue[str] = WorkQueue(clock=lambda: now[0], delay_thread=False, observer=Observer())
    assert q.observer is not None
    q.add("a")
    q.add("a")  # waiting already
    assert q.get(0) == ("a", 100.0)
    q.add("a")  # held: an add, queued again at done
    q.done("a")
    q.done("b")  # never held: nothing to tell
    q.add_after("c", 5.0)
    now[0] += 5.0
    q.release_due()
    assert heard == [("added", "a"), ("taken", "a"), ("added", "a"), ("finished", "a"), ("added", "c")]


def test_the_controllers_queue_waits_as_client_gos_default_controller_rate_limiter() -> None:
    """The controller's queue takes the defaults (controller.py ``WorkQueue(observer=...)``), which are
    client-go's DefaultControllerRateLimiter (util/workqueue/default_rate_limiters.go): a failing key
    waits 5 ms doubling to 1000 s (``NewItemExponentialFailureRateLimiter(5*time.Millisecond,
    1000*time.Second)``), and failures together go back at 10 a second after a burst of 100
    (``rate.NewLimiter(rate.Limit(10), 100)``). A CR refused for a day waits the same here as under
    the Go operator; a base or cap mistyped hammers the API server or leaves a CR unserved for hours."""
    clock = ManualClock(0.0)
    one: WorkQueue[str] = WorkQueue(clock=clock, delay_thread=False)
    for _ in range(4):
        one.add_rate_limited("a")
    assert [due for due, _ in one.pending().delayed] == [0.005, 0.01, 0.02, 0.04]
    for _ in range(40):
        one.add_rate_limited("b")
    assert one.pending().delayed[-1] == (1000.0, "b"), "capped at 1000 s"

    many: WorkQueue[int] = WorkQueue(clock=clock, delay_thread=False)
    for key in range(102):
        many.add_rate_limited(key)
    waits = dict((key, due) for due, key in many.pending().delayed)
    assert {waits[key] for key in range(100)} == {0.005}, "the burst of 100 waits only its own backoff"
    assert waits[100] == pytest.approx(0.1) and waits[101] == pytest.approx(0.2), "then 10 a second"
