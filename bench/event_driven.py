"""The event-driven reconciler beside today's polling, on the same fake API server.

Run:  python bench/event_driven.py [--crs 1000] [--scales 100] [--quiet 60] [--new 1000] [--clients 8]

The fake runs in this process; the event-driven reconciler runs as the real console script in a
subprocess (``memcached-gitops reconcile``, leader election on), so its peak RSS is its own. Every
latency is read from the fake's request log, whose receive times are stamped as the API server's
audit log stamps them: from the receipt of the ``kubectl scale`` to the receipt of the apply that
undoes it. The polling mode is the LIST-based cycle (``--once``) run in this process.

Prints, for N CRs (each with its Deployment and 3 Pods' worth of replicas in total, see --pods):
  - drift-to-correction latency over --scales scale events (p50, p90, p99, max);
  - requests during a quiet period of --quiet seconds (the issue asks for 10 minutes: the
    count is also given per 10 minutes, scaled);
  - peak RSS of the reconciler with its cache filled, and time from start to the first sync;
  - --new CRs created by --clients concurrent clients: lag from each CR's receipt to its
    Deployment's apply (median, max) and the time until all have one.
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy  # noqa: E402
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler  # noqa: E402
from memcached_gitops.schemas import load_crd  # noqa: E402

from fakeapi.server import DeploymentController, FakeAPIServer  # noqa: E402

KUBECTL = {"User-Agent": "kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722"}
NAMESPACES = 10


def cr_body(i: int, size: int) -> dict:
    return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
            "metadata": {"name": f"cache-{i}", "namespace": f"team-{i % NAMESPACES}"}, "spec": {"size": size}}


def seed(api: FakeAPIServer, n: int, size: int) -> None:
    for ns in range(NAMESPACES):
        api._store_namespace(f"team-{ns}")
    for i in range(n):
        body = json.dumps(cr_body(i, size)).encode()
        code, _, data = api.handle("POST", f"/apis/cache.example.com/v1alpha1/namespaces/team-{i % NAMESPACES}/memcacheds"
                                   "?fieldManager=kubectl-create", {**KUBECTL, "Content-Type": "application/json"}, body)
        assert code == 201, data


def populate(api: FakeAPIServer, n: int, size: int) -> None:
    """N CRs, each with its Deployment, Pods and status as the reconciler leaves them, quickly.

    CRs are created through the fake's request path. The first CR's Deployment is applied by the
    reconciler itself; the others are copies of it with names and uids changed (the fake spends
    tens of milliseconds validating each new Deployment against kubernetes' schema, which would
    make a 10,000-CR cluster take hours to build). Statuses come from the product's own pure
    status code, so the first pass over them finds nothing to write."""
    from memcached_gitops.reconciler.client.events import now_rfc3339
    from memcached_gitops.reconciler.decisions.status import Observation, desired_status

    seed(api, n, size)
    client = KubeAPI.connect(host=api.url, retry=RetryPolicy(attempts=3, base=0.01, cap=0.05))
    Reconciler(client, load_crd(), Options(events=False)).reconcile_cr(
        api.get("cache.example.com", "memcacheds", "team-0", "cache-0"), None, (), None, None)
    template = json.dumps(api.get("apps", "deployments", "team-0", "cache-0"))
    uid0 = api.get("cache.example.com", "memcacheds", "team-0", "cache-0")["metadata"]["uid"]
    for i in range(1, n):
        ns, name = f"team-{i % NAMESPACES}", f"cache-{i}"
        uid = api.objects[("cache.example.com", "memcacheds", ns, name)]["metadata"]["uid"]
        text = template.replace('"cache-0"', f'"{name}"').replace('"team-0"', f'"{ns}"').replace(uid0, uid)
        dep = json.loads(text)
        dep["metadata"]["uid"] = str(uuid.uuid4())
        dep["metadata"]["resourceVersion"] = api._next_rv()
        api.objects[("apps", "deployments", ns, name)] = dep
    DeploymentController(api).sync(available=True)
    pods: dict[tuple[str, str], list[str]] = {}
    for (_, plural, ns, name), obj in api.objects.items():
        if plural == "pods":
            pods.setdefault((ns, obj["metadata"]["labels"]["app.kubernetes.io/instance"]), []).append(name)
    now = now_rfc3339()
    for i in range(n):
        ns, name = f"team-{i % NAMESPACES}", f"cache-{i}"
        cr = api.objects[("cache.example.com", "memcacheds", ns, name)]
        obs = Observation(cr["metadata"].get("generation", 1), size, api.objects[("apps", "deployments", ns, name)],
                          tuple(pods.get((ns, name), ())))
        api.objects[("cache.example.com", "memcacheds", ns, name)] = {
            **cr, "metadata": {**cr["metadata"], "resourceVersion": api._next_rv()}, "status": desired_status(obs, None, now, None, None)}


def percentiles(values: list[float]) -> str:
    if not values:
        return "no samples"
    v = sorted(values)
    pick = lambda q: v[min(len(v) - 1, round(q * (len(v) - 1)))]  # noqa: E731
    return (f"p50 {pick(0.5) * 1000:8.1f} ms   p90 {pick(0.9) * 1000:8.1f} ms   p99 {pick(0.99) * 1000:8.1f} ms   "
            f"max {v[-1] * 1000:8.1f} ms   (n={len(v)})")


def applies_to(api: FakeAPIServer, name: str, since: float, agent: str = "memcached-gitops") -> list:
    return [r for r in list(api.log) if r.method == "PATCH" and r.path.endswith(f"/deployments/{name}")
            and r.user_agent.startswith(agent) and r.received >= since]


def scale(api: FakeAPIServer, ns: str, name: str, replicas: int) -> tuple[float, float]:
    """kubectl scale as sent (transcript 04); the fake's receive time of it, and when it answered."""
    before = len(api.log)
    code, _, _ = api.handle("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale",
                            {**KUBECTL, "Content-Type": "application/merge-patch+json"},
                            json.dumps({"spec": {"replicas": replicas}}).encode())
    answered = time.monotonic()
    assert code == 200
    return api.log[before].received, answered


def wait(predicate, timeout: float, step: float = 0.001) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def scale_latencies(api: FakeAPIServer, n: int, crs: int, timeout: float) -> tuple[list[float], list[float]]:
    """Receipt of each scale to receipt of the apply that undoes it; and from the fake's answer to
    the scale. The wait looks only at the log's new entries, every 2 ms, so that this process (which
    is also the fake) stays out of the fake's way."""
    from_receipt, from_answer = [], []
    for k in range(n):
        i = (k * 7919) % crs
        ns, name = f"team-{i % NAMESPACES}", f"cache-{i}"
        start = len(api.log)
        sent, answered = scale(api, ns, name, 5)
        suffix = f"/deployments/{name}"

        def applied() -> list:
            return [r for r in api.log[start:] if r.method == "PATCH" and r.path.endswith(suffix)  # noqa: B023
                    and r.user_agent.startswith("memcached-gitops")]

        if wait(applied, timeout, step=0.002):
            received = applied()[0].received
            from_receipt.append(received - sent)
            from_answer.append(received - answered)
        time.sleep(0.02)
    return from_receipt, from_answer


def kubeconfig(url: str, directory: str) -> str:
    path = Path(directory) / "kubeconfig"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{url}"}}}}]
users: [{{name: bench, user: {{token: bench}}}}]
contexts: [{{name: fake, context: {{cluster: fake, user: bench}}}}]
current-context: fake
""")
    return str(path)


def peak_rss_mib(pid: int, field: str = "VmHWM") -> float:
    """Peak (VmHWM) or current (VmRSS) resident memory of a process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def create_concurrently(url: str, first: int, count: int, clients: int) -> None:
    """``count`` new CRs POSTed by ``clients`` threads at once, each with its own connection."""
    host = urlsplit(url)

    def client(c: int) -> None:
        conn = http.client.HTTPConnection(host.hostname, host.port)
        for i in range(first + c, first + count, clients):
            body = json.dumps(cr_body(i, 1))
            path = f"/apis/cache.example.com/v1alpha1/namespaces/team-{i % NAMESPACES}/memcacheds?fieldManager=kubectl-create"
            conn.request("POST", path,
                         body, {**KUBECTL, "Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            assert response.status == 201, response.status
        conn.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def fake_costs(api: FakeAPIServer) -> tuple[float, float]:
    """The fake's own time to answer a kubectl scale and to create a Deployment by apply (medians
    of 10, in a namespace of their own): the floor under every latency below."""
    from memcached_gitops.render import render

    api._store_namespace("calibration")
    scales, creates = [], []
    for i in range(10):
        body = cr_body(i, 1)
        body["metadata"]["namespace"] = "calibration"
        body["spec"]["containerPort"] = 11211
        dep = render(body)[0]
        dep["metadata"]["namespace"] = "calibration"
        start = time.perf_counter()
        code, _, data = api.handle("PATCH", f"/apis/apps/v1/namespaces/calibration/deployments/cache-{i}?fieldManager=bench&force=true",
                                   {**KUBECTL, "Content-Type": "application/apply-patch+yaml"}, json.dumps(dep).encode())
        creates.append(time.perf_counter() - start)
        assert code == 201, data
        start = time.perf_counter()
        scale(api, "calibration", f"cache-{i}", 2)
        scales.append(time.perf_counter() - start)
    return statistics.median(scales), statistics.median(creates)


def name_of(i: int) -> tuple[str, str]:
    return f"team-{i % NAMESPACES}", f"cache-{i}"


def burst_lags(api: FakeAPIServer, names: list[str]) -> tuple[list[float], float, float]:
    """Each new CR's receipt to its Deployment's first apply; the spread of the arrivals; the time
    from the first arrival until the last CR has its Deployment. The fake logs no bodies, so the
    k-th CR stored (by resourceVersion) is matched with the k-th POST received."""
    log = list(api.log)
    posts = sorted(r.received for r in log if r.method == "POST" and r.path.endswith("/memcacheds") and r.status == 201)
    stored = sorted((int(api.get("cache.example.com", "memcacheds", *name_of(int(n.split("-")[1])))["metadata"]["resourceVersion"]), n)
                    for n in names)
    arrival = {n: posts[k] for k, (_, n) in enumerate(stored)}
    first_apply: dict[str, float] = {}
    for r in log:
        if r.method == "PATCH" and "/deployments/" in r.path and r.user_agent.startswith("memcached-gitops"):
            first_apply.setdefault(r.path.rsplit("/", 1)[-1], r.received)
    lags = [first_apply[n] - arrival[n] for n in names if n in first_apply]
    return lags, posts[-1] - posts[0], max(first_apply.get(n, float("nan")) for n in names) - posts[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=1000)
    parser.add_argument("--scales", type=int, default=100)
    parser.add_argument("--quiet", type=float, default=60.0)
    parser.add_argument("--new", type=int, default=1000, help="new CRs in the burst (0: no burst)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--size", type=int, default=3, help="replicas (Pods) per CR")
    parser.add_argument("--workers", type=int, default=16, help="the event-driven mode's --workers (its default)")
    parser.add_argument("--poll-interval", type=float, default=30.0, help="the polling mode's --interval (the Deployment overlay's)")
    args = parser.parse_args()
    print(f"command: python bench/event_driven.py --crs {args.crs} --scales {args.scales} --quiet {args.quiet:g} "
          f"--new {args.new} --clients {args.clients} --size {args.size} --workers {args.workers}\n")
    with FakeAPIServer(namespaces=("default",)) as api, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        populate(api, args.crs, args.size)
        pods = sum(1 for k in api.objects if k[1] == "pods")
        gc.collect()
        gc.freeze()  # the fake's own full collections over its store would stall its WATCH streams: not an API server's
        print(f"cluster: {args.crs} CRs, {args.crs} Deployments, {pods} Pods (built in {time.perf_counter() - t0:.0f} s)")
        scale_cost, create_cost = fake_costs(api)
        print(f"the fake's own time (median): {scale_cost * 1000:.1f} ms to answer a kubectl scale, "
              f"{create_cost * 1000:.1f} ms to create a Deployment by apply\n")
        poller = Reconciler(KubeAPI.connect(host=api.url, retry=RetryPolicy(attempts=3, base=0.01, cap=0.05)), load_crd(), Options())

        # ---- polling: the LIST-based cycle
        api.reset_log()
        start = time.perf_counter()
        report = poller.run_cycle()
        cycle = time.perf_counter() - start
        cycle_requests, cycle_writes = len(api.log), len(api.writes())
        print("polling (a LIST-based cycle every --interval; the shipped Deployment mode)")
        print(f"  steady cycle: {cycle:.2f} s, {cycle_requests} requests, {cycle_writes} writes, {len(report.outcomes)} CRs")
        sent = [scale(api, *name_of(i), 5)[0] for i in range(min(args.scales, args.crs))]
        cycle_start = time.monotonic()
        poller.run_cycle()
        within = [applies_to(api, name_of(i)[1], s)[0].received - cycle_start for i, s in enumerate(sent)
                  if applies_to(api, name_of(i)[1], s)]
        print(f"  scale -> correction: the wait for the next cycle (on average {args.poll_interval / 2:g} s, at most "
              f"{args.poll_interval:g} s at --interval {args.poll_interval:g}s), plus the cycle's way to the CR: {percentiles(within)}")
        print(f"  quiet 10 minutes at --interval {args.poll_interval:g}s: {cycle_requests * 600 / args.poll_interval:.0f} requests "
              f"({cycle_requests} a cycle, three of them full LISTs)")

        # ---- event-driven: the console script in a subprocess
        config = kubeconfig(api.url, tmp)
        api.reset_log()
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "memcached_gitops", "reconcile", "--kubeconfig", config, "--metrics-port", "0",
                                 "--health-probe-port", "0", "--lease-namespace", "default", "--log-level", "info",
                                 "--workers", str(args.workers)],
                                env={**os.environ, "POD_NAME": "bench-replica"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        synced: list[float] = []

        def read_log() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                m = re.search(r"caches synced in ([0-9.]+)s", line)
                if m:
                    synced.append(float(m.group(1)))

        threading.Thread(target=read_log, daemon=True).start()
        try:
            wait(lambda: synced, 600)
            wait(lambda: any("/leases" in r.path and r.status in (200, 201) for r in list(api.log)), 30)
            wait(lambda: False, 2.0)  # the first pass over every CR after becoming the leader
            first_pass = [r for r in api.log if r.is_write and "/leases" not in r.path]
            print(f"\nevent-driven (LIST + WATCH into a cache, a work queue, {args.workers} workers; leader election on)")
            print(f"  start to the first complete sync: {synced[0]:.2f} s after the process started listing "
                  f"({time.monotonic() - started:.1f} s including the interpreter's start-up); "
                  f"the first pass over {args.crs} CRs wrote {len(first_pass)} times")
            print(f"  RSS with the cache filled: peak {peak_rss_mib(proc.pid):.0f} MiB, now {peak_rss_mib(proc.pid, 'VmRSS'):.0f} MiB")
            from_receipt, from_answer = scale_latencies(api, args.scales, args.crs, timeout=10)
            print(f"  scale -> correction, {len(from_receipt)} scale events, "
                  "from the fake's receipt of the scale to its receipt of the apply:")
            print(f"    {percentiles(from_receipt)}   (targets: p50 <= 10 ms, p99 <= 50 ms)")
            print(f"    the same from the fake's answer to the scale (without its own {scale_cost * 1000:.0f} ms): "
                  f"{percentiles(from_answer)}")
            wait(lambda: False, 1.0)
            api.reset_log()
            wait(lambda: False, args.quiet)
            log = list(api.log)
            watches = sum(1 for r in log if r.query.get("watch") == "true")
            leases = sum(1 for r in log if "/leases" in r.path)
            others = sum(1 for r in log if r.query.get("watch") != "true" and "/leases" not in r.path)
            print(f"  quiet {args.quiet:g} s: {watches} WATCH re-establishments, {others} other requests (LIST, GET, writes); "
                  f"{leases} Lease renewals (one each 2 s retry period)")
            print("    10 minutes, by the same rules: 6 WATCH re-establishments (3 kinds, timeoutSeconds 300), 0 LIST, 0 writes, "
                  "300 Lease renewals")

            if not args.new:
                return
            api.reset_log()
            names = [name_of(i)[1] for i in range(args.crs, args.crs + args.new)]
            create_concurrently(api.url, args.crs, args.new, args.clients)
            deadline = time.monotonic() + 600
            keys = [("apps", "deployments", *name_of(int(n.split("-")[1]))) for n in names]
            while time.monotonic() < deadline and not all(k in api.objects for k in keys):
                time.sleep(0.05)  # a cheap check: the fake serves the reconciler from this process
            lags, spread, all_done = burst_lags(api, names)
            print(f"  {args.new} new CRs from {args.clients} clients at once (arriving over {spread:.2f} s): "
                  f"lag from a CR's receipt to its Deployment's apply median {statistics.median(lags) * 1000:.0f} ms, "
                  f"max {max(lags) * 1000:.0f} ms; all have "
                  f"Deployments {all_done:.2f} s after the first arrived (target 3 s; the fake alone needs "
                  f"{args.new * create_cost:.1f} s for {args.new} creates)")
            print(f"  peak RSS at the end: {peak_rss_mib(proc.pid):.0f} MiB")
        finally:
            proc.send_signal(signal.SIGTERM)
            print(f"  SIGTERM: exit {proc.wait(60)}")

        api.reset_log()
        names = [name_of(i)[1] for i in range(args.crs + args.new, args.crs + 2 * args.new)]
        create_concurrently(api.url, args.crs + args.new, args.new, args.clients)
        poller.run_cycle()  # the cycle starts the moment the last CR arrived (the best case)
        lags, spread, all_done = burst_lags(api, names)
        print(f"\npolling, {args.new} new CRs the same way, with a cycle starting as the last arrives (the best case; add up to "
              f"{args.poll_interval:g} s): lag median {statistics.median(lags):.2f} s, max {max(lags):.2f} s; all have Deployments "
              f"{all_done:.2f} s after the first arrived")


if __name__ == "__main__":
    main()
