"""``reconcile --shards`` on the fake API server at 30,000 CRs: first sync and RSS per replica, for 1 and 3 replicas.

Run:  python bench/shards_fake.py [--crs 30000] [--replicas 1 3] [--size 1]

The fake runs in this process with N CRs, each with its Deployment, Pods and status as the
reconciler leaves them (bench/event_driven.py's ``populate``). Each replica is the real console
script in a subprocess (``memcached-gitops reconcile --shards``), so its RSS is its own. Printed per
replica: the time from its start to its first complete sync (its own log line), the CRs in its cache
once the ring has settled, its RSS then (current and peak), and the writes of the first pass (0 in a
cluster that needs nothing). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from event_driven import kubeconfig, peak_rss_mib, populate, wait  # noqa: E402

from fakeapi.server import FakeAPIServer  # noqa: E402


def start(config: str, name: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, "-m", "memcached_gitops", "reconcile", "--shards", "--kubeconfig", config,
                             "--metrics-port", "0", "--health-probe-port", "0", "--lease-namespace", "default", "--log-level", "info"],
                            env={**os.environ, "POD_NAME": name}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict = {"synced": None, "members": None, "cached": None}

    def read_log() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if m := re.search(r"caches synced in ([0-9.]+)s: (\d+) Memcacheds", line):
                seen["synced"], seen["cached"] = float(m.group(1)), int(m.group(2))
            if m := re.search(r"shard members ([^:]+): (\d+) objects dropped from the caches, (\d+) added", line):
                seen["members"] = m.group(1)

    threading.Thread(target=read_log, daemon=True).start()
    return proc, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=30000)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--size", type=int, default=1, help="replicas (Pods) per CR")
    args = parser.parse_args()
    print(f"command: python bench/shards_fake.py --crs {args.crs} --replicas {' '.join(map(str, args.replicas))} --size {args.size}\n")
    with FakeAPIServer(namespaces=("default",)) as api, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        populate(api, args.crs, args.size)
        gc.collect()
        gc.freeze()
        print(f"cluster: {args.crs} CRs with their Deployments and Pods (built in {time.perf_counter() - t0:.0f} s)")
        config = kubeconfig(api.url, tmp)
        for n in args.replicas:
            api.reset_log()
            procs = [start(config, f"shard-{i}") for i in range(n)]
            try:
                for _, seen in procs:
                    wait(lambda seen=seen: seen["synced"] is not None, 900)
                wait(lambda: False, 5.0)  # the ring settles; the first pass runs
                writes = [r for r in api.log if r.is_write and "/leases" not in r.path]
                print(f"{n} replica(s):")
                for i, (proc, seen) in enumerate(procs):
                    print(f"  shard-{i}: first sync {seen['synced']:.1f} s with {seen['cached']} CRs cached; "
                          f"RSS {peak_rss_mib(proc.pid, 'VmRSS'):.0f} MiB (peak {peak_rss_mib(proc.pid):.0f})")
                print(f"  writes in the first pass: {len(writes)}")
            finally:
                for proc, _ in procs:
                    proc.terminate()
                for proc, _ in procs:
                    proc.wait(30)
            wait(lambda: False, 1.0)


if __name__ == "__main__":
    main()
