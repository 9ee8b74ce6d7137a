"""The floor's own parts, split as ``event_path_parts.py --audit-log`` splits ours, on a real kube-apiserver.

The floor is ../shared/realk8s/peers/floor_watch.py (one watch, a merge PATCH back, the kubernetes
client's models). Its loop runs here in a thread, with two stamps added and nothing else changed: when
the client's watch reader hands over a line (before decoding) and when the PATCH is about to be sent.
With the audit log's timestamps, each correction is split, as ours is, into the delivery (kubectl's
scale received -> line read), the floor's process (-> PATCH sent) and the send (-> PATCH received).
Each part is also printed from the scale's answer (the audit's ResponseComplete), which the watch event
may precede: what the reaction takes once the server has written the scale.

Optional, never in CI: run with a python that has the kubernetes client (the peers' venv), against the
kit of ../shared/realk8s, which this script starts with audit logging and stops.

    /tmp/peersvenv/bin/python bench/floor_parts.py --kit ~/.realk8s --peers ../shared/realk8s/peers
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
from pathlib import Path

from latency_interleaved import answers, corrections, spread  # bench/, beside this script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kit", type=Path, default=Path.home() / ".realk8s")
    parser.add_argument("--peers", type=Path, required=True)
    parser.add_argument("--scales", type=int, default=60)
    args = parser.parse_args()
    import kubernetes
    from kubernetes.watch import watch as watch_module

    kit, kc, audit = args.kit, str(args.kit / "kubeconfig"), Path("/tmp/memcached-gitops-floor-audit.log")
    audit.unlink(missing_ok=True)
    env = {**os.environ, "EXTRA_KAS_ARGS": f"--audit-policy-file={args.peers / 'audit-policy.yaml'} --audit-log-path={audit} "
                                          "--audit-log-mode=blocking"}
    subprocess.run([str(kit / "start.sh")], env=env, check=True, capture_output=True)

    def k(*argv: str) -> None:
        subprocess.run([str(kit / "bin" / "kubectl"), "--kubeconfig", kc, *argv], check=True, capture_output=True)

    try:
        k("create", "namespace", "floor")
        for i in range(20):
            k("create", "deployment", f"c{i}", "-n", "floor", "--image=memcached:1.6.26-alpine3.19", f"--replicas={i % 3 + 1}")
            k("annotate", "deployment", f"c{i}", "-n", "floor", f"floor/size={i % 3 + 1}")
        read_at: list[float] = []
        lines = watch_module.iter_resp_lines

        def stamped(resp):  # the client's line reader, each line's time noted as it is handed over
            for line in lines(resp):
                read_at.append(time.time())
                yield line

        watch_module.iter_resp_lines = stamped
        kubernetes.config.load_kube_config(kc)
        apps = kubernetes.client.AppsV1Api()
        stamps: dict[str, list[tuple[float, float]]] = {}

        def floor() -> None:  # floor_watch.py's loop, with the two stamps
            try:
                for ev in kubernetes.watch.Watch().stream(apps.list_namespaced_deployment, "floor", _preload_content=True):
                    d, line = ev["object"], read_at[-1]
                    want = (d.metadata.annotations or {}).get("floor/size")
                    if ev["type"] != "DELETED" and want is not None and d.spec.replicas != int(want):
                        stamps.setdefault(d.metadata.name, []).append((line, time.time()))
                        apps.patch_namespaced_deployment(d.metadata.name, "floor", {"spec": {"replicas": int(want)}})
            except Exception:  # the kit stopped under the watch: the measurement is over
                return

        threading.Thread(target=floor, daemon=True).start()
        time.sleep(3)
        for n in range(args.scales):
            k("scale", "deployment", f"c{n % 20}", "-n", "floor", "--replicas=7")
            time.sleep(0.3)
        time.sleep(1)
        events = [json.loads(line) for line in audit.read_text().splitlines()]
    finally:
        subprocess.run([str(kit / "stop.sh")], capture_output=True)
    answered = answers(events)
    rounds = []
    for name, scaled, fixed in corrections(events, "floor"):
        mine = next((s for s in stamps.get(name, []) if scaled <= s[0] and fixed is not None and s[1] <= fixed), None)
        if mine is not None:
            rounds.append({"total": fixed - scaled, "delivery": mine[0] - scaled, "process": mine[1] - mine[0],
                           "send": fixed - mine[1], "answer -> fix": fixed - answered[scaled]})
    if not rounds:
        raise SystemExit("no correction of the floor matched in the audit log")
    print(f"the floor, by the audit log, {len(rounds)} corrections matched (p10 / median / max):")
    for part in ("total", "delivery", "process", "send", "answer -> fix"):
        print(f"  {part:14s} " + " / ".join(f"{v:6.2f}" for v in spread([r[part] * 1000 for r in rounds])) + " ms")
    print(f"reproduce: python bench/floor_parts.py --kit {kit} --peers {args.peers} --scales {args.scales}")


if __name__ == "__main__":
    main()
