"""Drift-correction latency of memcached-gitops, kopf and the floor, interleaved on one real kube-apiserver.

Each round scales one Deployment of each contestant with ``kubectl scale`` (in a rotating order), so a
slow moment of the machine falls on all three alike. Latency is read from the API server's audit log,
as ../shared/realk8s/peers/latency.py reads it: from the requestReceivedTimestamp of kubectl's scale to
that of the first write to the same Deployment by anyone else. Never by polling. It also prints each
contestant's time from the scale *answered* (the audit's stageTimestamp) to the correction received,
which leaves out the server's own write of the scale, the same for all three.

- floor: ``floor_watch.py`` (one watch, a merge PATCH back; no cache, queue, validation or status);
- kopf 1.45: ``kopf_memcached.py``;
- ours: ``memcached-gitops reconcile --interval 10m`` (the event-driven mode), this checkout.

Optional, never in CI: needs the kit of ../shared/realk8s (``--kit``), its peers/ (``--peers``) and a venv
with kopf and kubernetes (``--peers-venv``).

    python bench/latency_interleaved.py --kit ~/.realk8s --peers ../shared/realk8s/peers --peers-venv /tmp/peersvenv
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
N = 20  # Deployments c0..c19 per contestant, size i % 3 + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kit", type=Path, default=Path.home() / ".realk8s")
    parser.add_argument("--peers", type=Path, required=True)
    parser.add_argument("--peers-venv", type=Path, required=True)
    parser.add_argument("--venv", type=Path, default=HERE / ".venv", help="a venv with this checkout installed")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--detail", action="store_true", help="print each round's three latencies (a slow moment shows in all three)")
    args = parser.parse_args()
    kit, kc = args.kit, str(args.kit / "kubeconfig")
    audit = Path("/tmp/memcached-gitops-interleaved-audit.log")
    audit.unlink(missing_ok=True)
    env = {**os.environ, "EXTRA_KAS_ARGS": f"--audit-policy-file={args.peers / 'audit-policy.yaml'} --audit-log-path={audit} "
                                          "--audit-log-mode=blocking"}
    subprocess.run([str(kit / "start.sh")], env=env, check=True, capture_output=True)
    procs: list[subprocess.Popen] = []

    def k(*argv: str, stdin: str | None = None) -> None:
        subprocess.run([str(kit / "bin" / "kubectl"), "--kubeconfig", kc, *argv], input=stdin, text=True, check=True,
                       capture_output=True)

    try:
        k("apply", "--server-side", "-f", str(HERE / "schemas" / "memcached-crd.yaml"))
        k("wait", "--for=condition=Established", "crd/memcacheds.cache.example.com")
        crs = "".join(f"---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: c{i}}}\n"
                      f"spec: {{size: {i % 3 + 1}}}\n" for i in range(N))
        for ns in ("floor", "kopf", "ours"):
            k("create", "namespace", ns)
        for i in range(N):
            k("create", "deployment", f"c{i}", "-n", "floor", "--image=memcached:1.6.26-alpine3.19", f"--replicas={i % 3 + 1}")
            k("annotate", "deployment", f"c{i}", "-n", "floor", f"floor/size={i % 3 + 1}")
        k("apply", "-n", "kopf", "-f", "-", stdin=crs)
        k("apply", "-n", "ours", "-f", "-", stdin=crs)
        penv = {**os.environ, "KUBECONFIG": kc}
        procs.append(subprocess.Popen([str(args.peers_venv / "bin" / "python"), str(args.peers / "floor_watch.py")],
                                      env={**penv, "NS": "floor"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([str(args.peers_venv / "bin" / "kopf"), "run", "--standalone", "--namespace", "kopf",
                                       str(args.peers / "kopf_memcached.py")], env=penv,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([str(args.venv / "bin" / "memcached-gitops"), "reconcile", "--interval", "10m", "--namespace", "ours",
                                       "--kubeconfig", kc, "--lease-namespace", "ours", "--metrics-port", "0", "--health-probe-port", "0"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(10)  # every Deployment created and every peer quiet
        start = len(audit.read_text().splitlines())
        order = ["floor", "kopf", "ours"]
        for r in range(args.rounds):
            i = r % N
            for ns in order[r % 3:] + order[:r % 3]:
                k("scale", "deployment", f"c{i}", "-n", ns, "--replicas=7")
                time.sleep(0.4)
            if i == N - 1:
                time.sleep(1)  # every c_i corrected before it is scaled again
        time.sleep(2)
        events = [json.loads(line) for line in audit.read_text().splitlines()[start:]]
        results = {ns: latencies(events, ns) for ns in order}
        answered = answers(events)  # the part after the server answered kubectl's scale, the same for all three
        reactions = {ns: [(fixed - answered[scaled]) * 1000 for _, scaled, fixed in corrections(events, ns) if fixed is not None]
                     for ns in order}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)
        subprocess.run([str(kit / "stop.sh")], capture_output=True)
    if args.detail:
        for r in range(max(len(v) for v in results.values())):
            print(f"round {r:3d}: " + "  ".join(f"{ns} {results[ns][r]:6.1f} ms" for ns in order if r < len(results[ns])))
    for ns in order:
        lat = sorted(results[ns])
        print(f"{ns:6s} over {len(lat)}: median {statistics.median(lat):.1f} ms, p90 {lat[int(0.9 * (len(lat) - 1))]:.1f} ms, "
              f"max {lat[-1]:.1f} ms")
    print("from kubectl's scale answered (the audit's stageTimestamp) to the correction received, p10 / median: " +
          ", ".join(f"{ns} {spread(v)[0]:.1f} / {spread(v)[1]:.1f} ms" for ns, v in reactions.items()))
    floor = statistics.median(results["floor"])
    print(f"ours / floor (medians): {statistics.median(results['ours']) / floor:.2f}x; kopf / floor: "
          f"{statistics.median(results['kopf']) / floor:.2f}x")
    print(f"reproduce: python bench/latency_interleaved.py --kit {kit} --peers {args.peers} --peers-venv {args.peers_venv} "
          f"--rounds {args.rounds}")


def received(event: dict) -> float:
    """An audit event's requestReceivedTimestamp, as seconds of the wall clock."""
    return datetime.datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()


def spread(values: list[float]) -> tuple[float, float, float]:
    """p10, median and max of some figures (the parts tables of event_path_parts.py and floor_parts.py too)."""
    ordered = sorted(values)
    return ordered[len(ordered) // 10], statistics.median(ordered), ordered[-1]


def answer(event: dict) -> float:
    """An audit event's stageTimestamp (at ResponseComplete: the answer written), as seconds of the wall clock."""
    return datetime.datetime.fromisoformat(event["stageTimestamp"].replace("Z", "+00:00")).timestamp()


def answers(events: list[dict]) -> dict[float, float]:
    """kubectl's scales: received -> answered. A watch event may precede the answer (it follows etcd's write)."""
    return {received(e): answer(e) for e in events if e.get("stage") == "ResponseComplete"
            and (e.get("objectRef") or {}).get("subresource") == "scale"}


def corrections(events: list[dict], ns: str) -> list[tuple[str, float, float | None]]:
    """(Deployment, kubectl's scale received, the next write to it by anyone else received, or None)."""
    writes = sorted((e for e in events if e.get("stage") == "ResponseComplete" and e.get("verb") in ("patch", "update", "create")
                     and (e.get("objectRef") or {}).get("resource") == "deployments" and (e.get("objectRef") or {}).get("namespace") == ns),
                    key=received)
    out = []
    for n, e in enumerate(writes):
        ref = e["objectRef"]
        if not (e.get("userAgent", "").startswith("kubectl") and ref.get("subresource") == "scale"):
            continue
        fix = next((f for f in writes[n + 1:] if f["objectRef"].get("name") == ref.get("name") and not f["objectRef"].get("subresource")
                    and not f.get("userAgent", "").startswith("kubectl")), None)  # (with a controller-manager: not its status writes)
        out.append((ref.get("name"), received(e), received(fix) if fix else None))
    return out


def latencies(events: list[dict], ns: str) -> list[float]:
    """Milliseconds from each kubectl scale to the next write to that Deployment by anyone else."""
    return [(fixed - scaled) * 1000 if fixed is not None else float("inf") for _, scaled, fixed in corrections(events, ns)]


if __name__ == "__main__":
    sys.exit(main())
