"""The seams where the reconciler's components meet, each held by an invariant checked at every step.

A bug at a seam shows only when two components meet in a particular order (a worker that runs
between two statements of another thread, an informer that is slow to sync, a deadline from one
clock compared with the other). Each test here states the invariant, lets the test choose the order
(an injection point that pauses one thread at a named step until another has run, a LIST delayed
by the fake API server, an injected clock far from the wall clock) and checks the invariant at
every step, so that any edit of the kind breaks it, not one particular edit:

- leadership: every key queued when a replica becomes the leader is reconciled, none dropped,
  also when a worker takes a key between the two steps of becoming the leader, and at the scale
  of tens of thousands of CRs;
- start-up: nothing is written before every informer has synced, whichever informer is slow;
- the informer: every handler sees the store already holding the event's version;
- clocks: a CR parked by a fight or a failure always comes back, within the backoff's bound.

No test waits on a fixed sleep: each waits for a condition with a generous bound.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from memcached_gitops.foundation.clocks import SYSTEM_CLOCK
from memcached_gitops.reconciler.client.informer import key_of
from memcached_gitops.reconciler.decisions.fights import FightDetector
from memcached_gitops.reconciler.decisions.vocabulary import RECONCILE_ANNOTATION
from memcached_gitops.reconciler.orchestration.controller import Controller, Result, Settings

from fakeapi.server import FakeAPIServer, Fault
from tests.support.controller import HOUR, running, wait_for
from tests.support.fakecluster import CR_PATH, DEP_PATH, annotate, create_hpa, deployment, hpa_scales, make_cr, patch, reconciler_for, scale
from tests.support.unwired import cr, make

OURS = "memcached-gitops"
MERGE = "application/merge-patch+json"



# ---- leadership: every queued key is reconciled or still queued, never dropped
class Tracked:
    """A controller's work as its workers see it: each key reconciled, each key a worker let go."""

    def __init__(self, c: Controller) -> None:
        self.c, self.lock = c, threading.Lock()
        self.reconciled: set[Any] = set()
        self.done: set[Any] = set()
        done = c.queue.done

        def reconcile(key: Any, arrived: float) -> Result:
            with self.lock:
                self.reconciled.add(key)
            return Result(done=True)

        def finished(key: Any) -> None:
            done(key)
            with self.lock:
                self.done.add(key)

        c.reconcile = reconcile  # type: ignore[method-assign]
        c.queue.done = finished  # type: ignore[method-assign]

    def workers(self, n: int) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.c._work, daemon=True, name=f"worker-{i}") for i in range(n)]
        for t in threads:
            t.start()
        return threads

    def stop(self, threads: list[threading.Thread]) -> None:
        self.c.queue.shut_down()
        for t in threads:
            t.join(10)


def idle(c: Controller) -> bool:
    """Nothing queued and no worker busy."""
    return len(c.queue) == 0 and c.queue.wait_idle(0)


def not_leading(n: int) -> tuple[Controller, list[tuple[str, str]]]:
    """A replica with ``n`` CRs in its cache that is not the leader (yet)."""
    c = make(settings=Settings(workers=4, resync=HOUR))
    c.leading.clear()
    crs = [cr(f"c{i}", ns=("default", "shop")[i % 2]) for i in range(n)]
    c.informers["Memcached"][0].store.replace(crs)  # as the first LIST leaves it
    return c, sorted(key_of(o) for o in crs)


def pause_after_first_add(c: Controller, tracked: Tracked) -> list[str]:
    """The injection point: the thread that queues keys stops after its first ``add`` until a worker
    has taken that key and let it go, so a worker runs between the queueing and what follows it."""
    add, seen = c.queue.add, []

    def paused(key: Any, *args: Any, **kwargs: Any) -> None:
        add(key, *args, **kwargs)
        if not seen:
            seen.append(key)
            wait_for(lambda: key in tracked.done, timeout=10, what=f"a worker to take {key}")

    c.queue.add = paused  # type: ignore[method-assign]
    return seen


def test_a_worker_that_runs_while_the_replica_becomes_leader_drops_no_key() -> None:
    c, keys = not_leading(50)
    tracked = Tracked(c)
    threads = tracked.workers(2)
    try:
        seen = pause_after_first_add(c, tracked)
        c.started_leading()
        assert seen, "becoming the leader queues the cache's CRs"
        wait_for(lambda: idle(c), what="the queue drained")
        wait_for(lambda: tracked.reconciled == set(keys), timeout=10, what="every CR reconciled")
    finally:
        tracked.stop(threads)
    assert tracked.reconciled == set(keys)


def test_twenty_thousand_crs_are_all_reconciled_when_leadership_comes_while_workers_run() -> None:
    """At scale nothing is paused: the workers race the thread that becomes the leader."""
    c, keys = not_leading(20_000)
    tracked = Tracked(c)
    threads = tracked.workers(4)
    try:
        c.started_leading()
        wait_for(lambda: len(tracked.done) == len(keys) or tracked.reconciled == set(keys), timeout=60,
                 what="every queued CR taken by a worker")
        wait_for(lambda: tracked.reconciled == set(keys), timeout=30,
                 what=f"every CR reconciled ({len(keys) - len(tracked.reconciled)} dropped)")
    finally:
        tracked.stop(threads)


def test_keys_queued_while_not_leading_are_all_served_once_leading() -> None:
    """Events that come to a standby are let go (nothing is written); becoming the leader queues the
    whole cache again, so none of them is lost."""
    c, keys = not_leading(200)
    tracked = Tracked(c)
    threads = tracked.workers(2)
    try:
        for key in keys:
            c.queue.add(key)
        wait_for(lambda: tracked.done >= set(keys), what="the standby's workers let the events go")
        assert not tracked.reconciled, "a standby reconciles nothing"
        c.started_leading()
        wait_for(lambda: tracked.reconciled == set(keys), what="every CR reconciled once leading")
    finally:
        tracked.stop(threads)


# ---- start-up: nothing is written until every informer has synced
#: Each informer's first request (its LIST, or its streaming WATCH) as the fake sees its path.
FIRST_READ = {
    "Memcached": "/apis/cache.example.com/v1alpha1/memcacheds",
    "Deployment": "/apis/apps/v1/deployments",
    "Pod": "/api/v1/pods",
    "HorizontalPodAutoscaler": "/apis/autoscaling/v2/horizontalpodautoscalers",
}
DELAY = 1.5


def our_writes(api: FakeAPIServer) -> list[Any]:
    """Our writes to the objects we serve (Leases and Events are not the cluster's state)."""
    return [r for r in api.writes() if r.user_agent.startswith(OURS) and "/leases" not in r.path and "/events" not in r.path]


@pytest.mark.parametrize("slow", sorted(FIRST_READ))
def test_nothing_is_written_before_every_informer_has_synced(cluster: FakeAPIServer, slow: str) -> None:
    """A restart on a cluster that holds every kind of state: an HPA that owns a Deployment's
    replicas, a CR whose replicas are an ignored path, a paused CR with drift, one in the other
    namespace, every status up to date. Whichever informer's first read is slow, no write comes
    before it has answered, and what belongs to others stays."""
    make_cr(cluster, "a", size=1)
    make_cr(cluster, "b", ns="shop", size=2)
    make_cr(cluster, "m", size=1)
    make_cr(cluster, "p", size=1)
    rec = reconciler_for(cluster)
    rec.run_cycle()
    create_hpa(cluster)
    hpa_scales(cluster, 3)
    annotate(cluster, "m", "/spec/replicas")  # m's replicas are a person's: scaled by hand, never corrected
    scale(cluster, "m", 4)
    patch(cluster, CR_PATH.format(ns="default") + "/p", {"metadata": {"annotations": {RECONCILE_ANNOTATION: "disabled"}}}, MERGE)
    scale(cluster, "p", 5)  # p is paused: its drift stays
    rec.run_cycle()
    cluster.reset_log()
    cluster.faults.append(Fault(method="GET", path_contains=FIRST_READ[slow], status=0, delay=DELAY))
    started = time.monotonic()
    with running(cluster) as c:
        wait_for(lambda: time.monotonic() - started > DELAY and idle(c), what="the first sync's work done")
        first = [r for r in cluster.log if r.method == "GET" and r.path.startswith(FIRST_READ[slow])]
        assert first, f"the {slow} informer read its kind"
        answered = first[0].received + DELAY
        early = [f"{r.method} {r.path}" for r in our_writes(cluster) if r.received < answered]
        assert early == [], f"written before the {slow} informer had synced"
    assert deployment(cluster, "a")["spec"]["replicas"] == 3, "the HPA's replicas stay"
    assert deployment(cluster, "m")["spec"]["replicas"] == 4, "an ignored path stays"
    assert deployment(cluster, "p")["spec"]["replicas"] == 5, "a paused CR's drift stays"


# ---- the informer: a handler sees the store already holding the event's version
class StoreChecked(Controller):
    """Checks, at every event handed to the controller, that the informer's store already says what
    the event says: the object at the event's version, or (DELETED) no object."""

    def on_event(self, kind: str, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, arrived: float) -> None:
        stored = self.caches.cached(kind, key_of(obj)) if kind in ("Memcached", "Deployment") else self.stored(kind, obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        seen = None if stored is None else (stored.get("metadata") or {}).get("resourceVersion")
        expected = None if type_ == "DELETED" else version
        self.checked.append((kind, type_, expected == seen))
        super().on_event(kind, type_, obj, old, arrived)

    def stored(self, kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        ns = key_of(obj)[0]
        for informer in self.informers[kind]:
            if informer.namespace in (None, ns):
                return informer.store.get(key_of(obj))
        return None


def test_every_handler_sees_the_store_already_holding_the_events_version(cluster: FakeAPIServer,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from memcached_gitops.reconciler.orchestration import controller as module

    StoreChecked.checked = []  # type: ignore[attr-defined]
    monkeypatch.setattr(module, "Controller", StoreChecked)
    monkeypatch.setattr("tests.support.controller.Controller", StoreChecked)
    make_cr(cluster, "a", size=1)
    with running(cluster):
        make_cr(cluster, "b", size=2)
        # a's Deployment too: a and b go to two workers, and b's can be applied first; patching a's
        # before it exists is a 404 (the test's race, not the product's: a slow first apply of a).
        wait_for(lambda: has_deployment(cluster, "a") and has_deployment(cluster, "b"), what="a's and b's Deployments")
        patch(cluster, DEP_PATH.format(ns="default", name="a"), {"spec": {"replicas": 4}}, MERGE)
        wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, what="a's drift corrected")
        create_hpa(cluster, target="b", min_replicas=2)
        cluster.handle("DELETE", "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/b",
                       {"User-Agent": "kubectl/v1.37.1"}, b"")
        wait_for(lambda: any(k == "Memcached" and t == "DELETED" for k, t, _ in StoreChecked.checked), what="the deletion")
    checked = StoreChecked.checked
    kinds = {(k, t) for k, t, _ in checked}
    assert {("Memcached", "ADDED"), ("Memcached", "MODIFIED"), ("Deployment", "MODIFIED"), ("Memcached", "DELETED"),
            ("HorizontalPodAutoscaler", "ADDED")} <= kinds, kinds
    wrong = [(k, t) for k, t, ok in checked if not ok]
    assert wrong == [], "a handler ran before the store held the event's version"


def has_deployment(api: FakeAPIServer, name: str) -> bool:
    return deployment(api, name) is not None


# ---- clocks: a parked CR always comes back
def parked(fights: FightDetector) -> bool:
    return fights.wait(("default", "a"), SYSTEM_CLOCK.monotonic()) > 0


def test_a_cr_parked_by_a_fight_comes_back_after_its_backoff(cluster: FakeAPIServer) -> None:
    """A fight parks the CR for the backoff (base 0.3 s, cap 0.6 s here); once the other writer stops,
    the next correction comes within the cap. A deadline taken from another clock than the one it is
    compared with parks it for years (the wall clock is 1.7e9 s from the monotonic one)."""
    fights = FightDetector(threshold=1, window=2.0, base=0.3, cap=0.6)
    make_cr(cluster, "a", size=1)
    path = DEP_PATH.format(ns="default", name="a")
    with running(cluster, fights=fights):
        wait_for(lambda: has_deployment(cluster, "a"), what="the Deployment")
        for _ in range(3):  # kubectl keeps undoing the correction: a fight
            patch(cluster, path, {"spec": {"replicas": 5}}, MERGE)
            wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1 or parked(fights), what="corrected, or parked")
        wait_for(lambda: fights.active(("default", "a"), SYSTEM_CLOCK.monotonic()) is not None, what="the fight")
        patch(cluster, path, {"spec": {"replicas": 5}}, MERGE)
        stopped = time.monotonic()
        wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, timeout=10, what="the correction after the backoff")
        assert time.monotonic() - stopped < 0.6 + 5, "within the cap (and a busy machine's slack)"
        waits = [fights.wait(("default", "a"), SYSTEM_CLOCK.monotonic())]
    assert waits[0] <= fights.cap


def test_a_cr_whose_apply_failed_is_retried_within_the_queues_backoff(cluster: FakeAPIServer) -> None:
    """An apply that fails (every attempt of the client's) puts the CR back with the rate limiter's
    backoff, and the retry corrects the drift."""
    make_cr(cluster, "a", size=1)
    path = DEP_PATH.format(ns="default", name="a")
    with running(cluster) as c:
        wait_for(lambda: has_deployment(cluster, "a"), what="the Deployment")
        cluster.faults.append(Fault(method="PATCH", path_contains="/deployments/a", status=500, times=3))  # our first apply, all attempts
        live = deployment(cluster, "a")
        live["spec"]["replicas"] = 5
        code, _, data = cluster.handle("PUT", path, {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/json"},
                                       json.dumps(live).encode())  # kubectl edit: an update, not a PATCH
        assert code == 200, data
        wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, timeout=15, what="the retried correction")
        assert c.metrics.value("memcached_gitops_workqueue_retries_total") >= 1


