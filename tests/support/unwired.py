"""A controller built against no server: its informers' stores are filled by the test (``store``),
and a request it sends fails loudly, so a test drives the event handlers and the work queue alone."""

from __future__ import annotations

from typing import Any

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.schemas import load_crd

from tests.support.crs import memcached_cr

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a test that sends a request fails loudly


def make(namespaces: tuple[str, ...] = (), elector: Any = None, settings: Settings | None = None, fights: Any = None,
         **options: Any) -> Controller:
    api = KubeAPI.connect(host=NOWHERE, retry=RetryPolicy(attempts=1))
    reconciler = Reconciler(api, load_crd(), Options(namespaces=namespaces, **options))
    return Controller(reconciler, Metrics(), elector, settings, fights)


def cr(name: str, ns: str = "default", rv: str = "1", **meta: Any) -> dict[str, Any]:
    return memcached_cr(name, ns, {"size": 1}, resourceVersion=rv, uid=f"uid-{name}", **meta)


def store(c: Controller, kind: str, *objs: dict[str, Any], index: int = 0) -> None:
    for obj in objs:
        c.informers[kind][index].store.put(obj)
