"""Requests per new CR and the time to serve a burst of new CRs, event-driven, against the fake API server.

Run:  python bench/new_cr_requests.py [--crs 1000] [--size 2] [--workers 4]

The fake and the controller (``reconcile``'s event-driven mode, its workers as threads) run in this
process, so wall times include the fake's work and share one interpreter; ``--latency`` holds each
of the reconciler's requests as a loaded API server would (the fake's own work is a fraction of a
millisecond), which is what the workers and the side-by-side writes wait on: compare runs of this script
with each other, never with a real API server. The CRs are created once the first sync is done, one
after another; the script waits until every CR has a status written, then prints, from the fake's
request log (stamped as the API server's audit log is): the reconciler's requests per CR by kind,
the time from the first CR to the last status, and the last Deployment apply after the last CR.
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy  # noqa: E402
from memcached_gitops.reconciler.orchestration.controller import DEFAULT_WORKERS, Controller, Settings  # noqa: E402
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler  # noqa: E402
from memcached_gitops.reconciler.orchestration.metrics import Metrics  # noqa: E402
from memcached_gitops.schemas import load_crd  # noqa: E402

from fakeapi.server import FakeAPIServer, Fault  # noqa: E402

CRS = "/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds"


def kind_of(method: str, path: str) -> str:
    parts = path.strip("/").split("/")
    if method == "PATCH":
        return "status" if parts[-1] == "status" else f"apply {parts[-2]}"
    if method == "POST":
        return f"create {parts[-1]}"
    return f"{method} {parts[-2] if method == 'GET' and parts[-2] in ('deployments', 'services', 'poddisruptionbudgets') else parts[-1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=2, help="spec.size of each CR (2 or more: a budget too)")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    parser.add_argument("--latency", type=float, default=0.02,
                        help="seconds each of the reconciler's requests waits before it is served, outside the fake's lock "
                             "(a loaded real API server answered in 8-60 ms); 0: none")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the WATCHes cut when the fake stops
    with FakeAPIServer(namespaces=("default",)) as api:
        kube = KubeAPI.connect(host=api.url, retry=RetryPolicy(attempts=3, base=0.01, cap=0.05), user_agent="memcached-gitops/bench")
        controller = Controller(Reconciler(kube, load_crd(), Options()), Metrics(), None,
                                Settings(workers=args.workers, resync=3600, watch_timeout=300, silence_grace=1))
        thread = threading.Thread(target=controller.run, daemon=True)
        thread.start()
        while not (controller.metrics.ready and controller.leading.is_set()):
            time.sleep(0.01)
        if args.latency:
            api.faults.append(Fault(status=0, delay=args.latency, times=10**9, user_agent="memcached-gitops"))
        api.reset_log()
        created: list[float] = []
        for i in range(args.crs):
            body = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                    "metadata": {"name": f"c{i}", "namespace": "default"}, "spec": {"size": args.size}}
            code, _, data = api.handle("POST", CRS.format(ns="default") + "?fieldManager=kubectl-create",
                                       {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/json"}, json.dumps(body).encode())
            assert code == 201, data
            created.append(time.monotonic())
        while sum(1 for r in list(api.log) if r.method == "PATCH" and r.path.endswith("/status")) < args.crs:
            time.sleep(0.05)
        time.sleep(0.5)  # the status writes' own events, answered by no write
        controller.stop.set()
        thread.join(30)
        ours = [r for r in list(api.log) if r.user_agent.startswith("memcached") and r.query.get("watch") != "true"
                and "/leases" not in r.path]
        counts = collections.Counter(kind_of(r.method, r.path) for r in ours)
        last_status = max(r.received for r in ours if r.path.endswith("/status"))
        last_deployment = max(r.received for r in ours if r.method == "PATCH" and "/deployments/" in r.path)
        print(f"command: python bench/new_cr_requests.py --crs {args.crs} --size {args.size} --workers {args.workers} "
              f"--latency {args.latency}")
        print(f"requests per new CR: {len(ours) / args.crs:.2f}  (" +
              ", ".join(f"{k} {v / args.crs:.2f}" for k, v in sorted(counts.items())) + ")")
        print(f"first CR to last status: {last_status - created[0]:.2f} s; "
              f"last Deployment apply {1000 * (last_deployment - created[-1]):.0f} ms after the last CR")


if __name__ == "__main__":
    main()
