"""The client's connections under a burst: every worker, every companion write running beside it and
every watch keeps its connection for the next request. The kubernetes client keeps ``cpu_count * 5``
idle connections per host (kubernetes/client/configuration.py ``connection_pool_maxsize``: 10 on two
cores); past that, urllib3 closes each connection given back (``Connection pool is full, discarding
connection``) and the next request opens a new one, a TLS handshake each on a real API server."""

from __future__ import annotations

import logging

from memcached_gitops.reconciler.orchestration.controller import Settings

from fakeapi.server import FakeAPIServer, Fault
from tests.support.controller import running, wait_for
from tests.support.fakecluster import condition, make_cr

HOUR = 3600.0


def test_a_burst_with_many_workers_keeps_its_connections(cluster: FakeAPIServer, caplog) -> None:
    cluster.faults.append(Fault(status=0, delay=0.02, times=10**9, user_agent="memcached-gitops"))  # a loaded server
    caplog.set_level(logging.WARNING, logger="urllib3.connectionpool")
    names = [f"c{i}" for i in range(48)]
    with running(cluster, settings=Settings(workers=32, resync=HOUR, watch_timeout=30, silence_grace=1)):
        for name in names:
            make_cr(cluster, name, size=2)
        wait_for(lambda: all(condition(cluster, n, "Available") for n in names), timeout=60, what="every status")
    discarded = [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()]
    assert not discarded, f"{len(discarded)} connections closed instead of kept: {discarded[0]}"
