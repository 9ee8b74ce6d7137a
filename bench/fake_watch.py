"""The fake API server's own share of a drift-correction latency: from sending a write to reading
its WATCH event, over real HTTP on 127.0.0.1, with N other Deployments in the store.

Run:  python bench/fake_watch.py [--objects 1000] [--writes 100]
Whatever a controller measures against the fake includes this floor. Not a test.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakeapi.server import FakeAPIServer  # noqa: E402

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str) -> bytes:
    labels = {"app": name}
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
                       "spec": {"selector": {"matchLabels": labels}, "template": {
                           "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "memcached:1.6"}]}}}}).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=100)
    args = parser.parse_args()
    with FakeAPIServer(namespaces=("default",)) as api:
        for i in range(args.objects + 1):
            code, _, _ = api.handle("PATCH", f"{DEPLOYMENTS}/d{i}?fieldManager=bench", {"Content-Type": "application/apply-patch+yaml"},
                                    deployment(f"d{i}"))
            assert code == 201
        port = int(api.url.rsplit(":", 1)[1])
        watcher, writer = http.client.HTTPConnection("127.0.0.1", port), http.client.HTTPConnection("127.0.0.1", port)
        watcher.request("GET", f"{DEPLOYMENTS}?watch=true&resourceVersion={api.rv}&timeoutSeconds=600")
        stream = watcher.getresponse()
        latencies = []
        for n in range(args.writes):
            started = time.perf_counter()
            writer.request("PATCH", f"{DEPLOYMENTS}/d0/scale", body=json.dumps({"spec": {"replicas": 2 + n}}),
                           headers={"Content-Type": "application/merge-patch+json"})
            writer.getresponse().read()
            size = int(stream.fp.readline(), 16)  # one chunk per event
            stream.fp.read(size + 2)
            latencies.append((time.perf_counter() - started) * 1000)
        api.drop_watches()
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    print(f"command: python bench/fake_watch.py --objects {args.objects} --writes {args.writes}")
    print(f"write sent -> its WATCH event read, {args.writes} scale PATCHes with {args.objects} other Deployments stored:")
    print(f"  p50 {pick(0.5):.2f} ms   p90 {pick(0.9):.2f} ms   p99 {pick(0.99):.2f} ms   max {latencies[-1]:.2f} ms")


if __name__ == "__main__":
    main()
