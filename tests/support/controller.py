"""A controller running in a thread against the fake API server, and the waits around it:
``wait_for`` a condition, ``settle`` until no write has arrived for a while."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.leader import LeaderElector
from memcached_gitops.reconciler.client.shards import ShardRing
from memcached_gitops.reconciler.decisions.fights import FightDetector
from memcached_gitops.reconciler.orchestration.controller import Controller, Settings, lease_client
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.schemas import load_crd

from fakeapi.server import FakeAPIServer
from tests.support.fakecluster import DEP_PATH, deployment

HOUR = 3600.0


SCALE = DEP_PATH.format(ns="default", name="a") + "/scale"


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, what: str = "",
             thread: threading.Thread | None = None) -> None:
    """Until ``predicate`` holds; fails at once when ``thread`` (the run or the worker that should
    make it hold) has ended without it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if thread is not None and not thread.is_alive():
            if predicate():
                return
            raise AssertionError(f"{thread.name} ended before {what or predicate}")
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def client(api: FakeAPIServer, identity: str = "replica-1") -> KubeAPI:
    return KubeAPI.connect(host=api.url, retry=RetryPolicy(attempts=3, base=0.01, cap=0.05),
                           user_agent=f"memcached-gitops/0.1.0 {identity}")


@contextlib.contextmanager
def running(api: FakeAPIServer, *, identity: str = "replica-1", elect: bool = False, lease: tuple[float, float, float] = (15, 10, 2),
            settings: Settings | None = None, fights: FightDetector | None = None, wait_leader: bool = True,
            shards: bool = False, **options) -> Iterator[Controller]:
    """A controller in a thread; stopped (as by SIGTERM) at the end. ``controller.exit_code`` after.
    With ``shards``, a member of the shard ring (``lease`` its timings) instead of an elector."""
    kube = client(api, identity)
    reconciler = Reconciler(kube, load_crd(), Options(**options))
    elector, ring = None, None
    duration, deadline, retry = lease
    if elect:
        elector = LeaderElector(lease_client(kube, deadline), "default", identity, duration=int(duration),
                                renew_deadline=deadline, retry_period=retry)
    if shards:
        ring = ShardRing(lease_client(kube, deadline), "default", identity, duration=int(duration), renew_deadline=deadline,
                         retry_period=retry)
    settings = settings or Settings(workers=2, resync=HOUR, watch_timeout=30, silence_grace=1)
    controller = Controller(reconciler, Metrics(), elector, settings, fights, shards=ring)
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(controller.run()), daemon=True)
    controller.thread = thread  # type: ignore[attr-defined]
    thread.start()
    wait_for(lambda: controller.metrics.ready or result, what="the first sync")
    if wait_leader:
        wait_for(lambda: controller.leading.is_set() or result, what="leadership")
    try:
        yield controller
    finally:
        controller.stop.set()
        thread.join(30)
        controller.exit_code = result[0] if result else None  # type: ignore[attr-defined]


def replicas(api: FakeAPIServer, name: str = "a") -> int | None:
    dep = deployment(api, name)
    return dep["spec"]["replicas"] if dep else None


def settle(api: FakeAPIServer, quiet: float = 0.3, timeout: float = 10.0) -> None:
    """Until no write has arrived for ``quiet`` seconds (Lease renewals aside)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = max((r.received for r in api.writes() if "/leases/" not in r.path), default=0.0)
        if time.monotonic() - last >= quiet:
            return
        time.sleep(0.05)
    raise AssertionError("the reconciler never went quiet")
