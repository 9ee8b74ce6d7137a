"""Benchmarks of the reconciler against the fake API server (real HTTP, the official client).

Run:  python bench/reconcile_cycle.py [--crs 1000] [--drift 0.1]
Prints, for N CRs: requests and writes of a steady-state cycle, requests and time of a cycle
where a fraction of the Deployments drifted (kubectl scale), the cycle wall time, and the same
figures for the per-object algorithm of the kubebuilder tutorial (GET the CR, GET its
Deployment, update the Deployment when size differs, LIST its Pods, update status every time).
The fake runs in the same process, so wall times include its work too. Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy, object_path  # noqa: E402
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler  # noqa: E402
from memcached_gitops.schemas import load_crd  # noqa: E402

from fakeapi.server import DeploymentController, FakeAPIServer  # noqa: E402


def seed(api: FakeAPIServer, n: int, namespaces: int = 10) -> None:
    for i in range(n):
        ns = f"team-{i % namespaces}"
        if ("", "namespaces", "", ns) not in api.objects:
            api._store_namespace(ns)
        body = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                "metadata": {"name": f"cache-{i}", "namespace": ns}, "spec": {"size": 1 + i % 3}}
        code, _, data = api.handle("POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds?fieldManager=kubectl-create",
                                   {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/json"}, json.dumps(body).encode())
        assert code == 201, data


def drift(api: FakeAPIServer, n: int, fraction: float) -> int:
    count = 0
    for i in range(0, n, max(1, round(1 / fraction)) if fraction else n + 1):
        ns = f"team-{i % 10}"
        code, _, _ = api.handle("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/cache-{i}/scale",
                                {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/merge-patch+json"},
                                json.dumps({"spec": {"replicas": 5}}).encode())
        assert code == 200
        count += 1
    return count


def measure(api: FakeAPIServer, fn) -> tuple[float, int, int]:
    api.reset_log()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    return elapsed, len(api.log), len(api.writes())


def tutorial_cycle(client: KubeAPI, api: FakeAPIServer) -> None:
    """The kubebuilder tutorial's Reconcile, once per CR (as a full resync would call it)."""
    crs = list(client.list_all("/apis/cache.example.com/v1alpha1/memcacheds"))
    for cr in crs:
        ns, name = cr["metadata"]["namespace"], cr["metadata"]["name"]
        cr = client.request("GET", object_path("cache.example.com", "v1alpha1", "memcacheds", ns, name))
        dep = client.request("GET", object_path("apps", "v1", "deployments", ns, name))
        if dep["spec"]["replicas"] != cr["spec"]["size"]:
            dep["spec"]["replicas"] = cr["spec"]["size"]
            client.request("PUT", object_path("apps", "v1", "deployments", ns, name), body=dep, verb="update")
        client.request("GET", f"/api/v1/namespaces/{ns}/pods", {"labelSelector": f"app.kubernetes.io/instance={name}"}, verb="list")
        status = dict(cr.get("status") or {})
        status["conditions"] = status.get("conditions") or []
        cr["status"] = status
        client.request("PUT", object_path("cache.example.com", "v1alpha1", "memcacheds", ns, name, "status"), body=cr, verb="update")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=1000)
    parser.add_argument("--drift", type=float, default=0.1)
    args = parser.parse_args()
    print(f"command: python bench/reconcile_cycle.py --crs {args.crs} --drift {args.drift}\n")
    with FakeAPIServer(namespaces=()) as api:
        seed(api, args.crs)
        client = KubeAPI.connect(host=api.url, retry=RetryPolicy(attempts=3, base=0.01, cap=0.05))
        rec = Reconciler(client, load_crd(), Options(events=True))
        t, req, wr = measure(api, rec.run_cycle)
        print(f"first cycle (creates {args.crs} Deployments): {t:6.2f} s, {req} requests, {wr} writes")
        DeploymentController(api).sync(available=True)
        t, req, wr = measure(api, rec.run_cycle)
        print(f"availability cycle (status writes):       {t:6.2f} s, {req} requests, {wr} writes")
        t, req, wr = measure(api, rec.run_cycle)
        print(f"steady-state cycle:                        {t:6.2f} s, {req} requests, {wr} writes   (target: <= 4 requests, 0 writes)")
        drifted = drift(api, args.crs, args.drift)
        report = None

        def cycle() -> None:
            nonlocal report
            report = rec.run_cycle()

        t, req, wr = measure(api, cycle)
        applies = sum(1 for r in api.log if r.content_type == "application/apply-patch+yaml" and "/deployments/" in r.path)
        status_writes = sum(1 for r in api.log if r.path.endswith("/status"))
        events = sum(1 for r in api.log if r.path.endswith("/events"))
        print(f"cycle with {drifted} drifted Deployments:      {t:6.2f} s, {req} requests, {wr} writes = "
              f"{applies} applies + {status_writes} status applies + {events} events   (target: one apply per drifted Deployment)")
        t, req, wr = measure(api, rec.run_cycle)
        print(f"next cycle:                                {t:6.2f} s, {req} requests, {wr} writes")
        t, req, wr = measure(api, rec.run_cycle)
        print(f"steady state again:                        {t:6.2f} s, {req} requests, {wr} writes   (cycle target: < 2 s for 1,000 CRs)")
        drift(api, args.crs, args.drift)
        t, req, wr = measure(api, lambda: tutorial_cycle(client, api))
        print(f"\nper-object tutorial algorithm, same cluster with {drifted} drifted: {t:6.2f} s, {req} requests, {wr} writes")
        t, req, wr = measure(api, lambda: tutorial_cycle(client, api))
        print(f"per-object tutorial algorithm, steady state:            {t:6.2f} s, {req} requests, {wr} writes")


if __name__ == "__main__":
    main()
