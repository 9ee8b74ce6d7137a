"""``reconcile --shards`` on a real kube-apiserver: a burst of new CRs served by 1 and by 3 replicas,
then hand-overs (SIGTERM, SIGKILL), all read from the API server's audit log, never by polling.

For each replica count: a fresh kit (etcd + kube-apiserver with an audit log), the CRD, N replicas
of ``memcached-gitops reconcile --shards`` (this checkout's venv), then ``--crs`` new CRs created by
``--clients`` kubectl processes at once. Printed per run:

- until all served: from the first CR's create to the last CR's first Deployment apply;
- per-CR lag: a CR's create to its Deployment's first apply (median, p99, max);
- each replica's RSS (current and peak) and its share of the Deployment writes;
- with 3 replicas, once the burst's writes are done: SIGTERM one, scale 20 of its Deployments at once,
  and the time from the signal to the last correction; then the same after a SIGKILL (the Lease must
  run out: 15 s);
- two writers: CRs whose Deployment or status writes went A, B, A within the 10 s renew deadline.

Optional, never in CI: needs the kit of ../shared/realk8s and its audit policy.

    python bench/shards_real.py --kit ~/.realk8s --audit-policy ../shared/realk8s/peers/audit-policy.yaml --crs 3000
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
NAMESPACES = 10


def stamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def audit_events(path: Path) -> list[dict]:
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue  # a line being written
    return events


def who(event: dict) -> str:
    agent = event.get("userAgent", "")
    return agent.split()[-1] if agent.startswith("memcached-gitops") else ""


def rss_mib(pid: int) -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


class Kit:
    def __init__(self, kit: Path, policy: Path, venv: Path) -> None:
        self.kit, self.kc, self.policy, self.venv = kit, str(kit / "kubeconfig"), policy, venv
        self.audit = Path("/tmp/memcached-gitops-shards-audit.log")
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self) -> None:
        self.audit.unlink(missing_ok=True)
        flags = (f"--audit-policy-file={self.policy} --audit-log-path={self.audit} --audit-log-mode=blocking "
                 "--max-requests-inflight=2000 --max-mutating-requests-inflight=1000")
        env = {**os.environ, "EXTRA_KAS_ARGS": flags}
        subprocess.run([str(self.kit / "start.sh")], env=env, check=True, capture_output=True)
        self.k("apply", "--server-side", "-f", str(HERE / "schemas" / "memcached-crd.yaml"))
        self.k("wait", "--for=condition=Established", "crd/memcacheds.cache.example.com")
        for i in range(NAMESPACES):
            self.k("create", "namespace", f"team-{i}")

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        subprocess.run([str(self.kit / "stop.sh")], capture_output=True)

    def k(self, *argv: str) -> str:
        return subprocess.run([str(self.kit / "bin" / "kubectl"), "--kubeconfig", self.kc, *argv], text=True, check=True,
                              capture_output=True).stdout

    def replica(self, name: str) -> None:
        env = {**os.environ, "POD_NAME": name}
        log = open(f"/tmp/memcached-gitops-{name}.log", "w")  # noqa: SIM115 (kept open for the process)
        self.procs[name] = subprocess.Popen(
            [str(self.venv / "bin" / "memcached-gitops"), "reconcile", "--shards", "--kubeconfig", self.kc, "--lease-namespace", "default",
             "--metrics-port", "0", "--health-probe-port", "0", "--log-level", "info"], env=env, stdout=log, stderr=log)

    def ring(self) -> dict[str, str]:
        leases = json.loads(self.k("get", "leases", "-n", "default", "-l", "cache.example.com/shard-ring", "-o", "json"))["items"]
        return {x["spec"]["holderIdentity"]: x["metadata"].get("annotations", {}).get("cache.example.com/shard-view", "")
                for x in leases}

    def wait_ring(self, names: list[str], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ring = self.ring()
            if set(ring) == set(names) and all(len(v.split(",")) == len(names) for v in ring.values()):
                return
            time.sleep(0.2)
        raise SystemExit(f"the ring did not form: {self.ring()}")

    def create(self, count: int, clients: int) -> None:
        files = []
        for c in range(clients):
            path = Path(f"/tmp/memcached-gitops-crs-{c}.yaml")
            path.write_text("".join(
                f"---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\n"
                f"metadata: {{name: c{i}, namespace: team-{i % NAMESPACES}}}\nspec: {{size: 1}}\n" for i in range(c, count, clients)))
            files.append(path)
        procs = [subprocess.Popen([str(self.kit / "bin" / "kubectl"), "--kubeconfig", self.kc, "create", "-f", str(f)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for f in files]
        for p in procs:
            assert p.wait() == 0, p.stderr.read()

    def served(self, count: int, timeout: float) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = audit_events(self.audit)
            applied = {(e["objectRef"].get("namespace"), e["objectRef"].get("name")) for e in events
                       if who(e) and e["verb"] == "patch" and e["objectRef"].get("resource") == "deployments"
                       and e.get("responseStatus", {}).get("code", 0) < 300}
            if len(applied) >= count:
                return events
            time.sleep(1.0)
        raise SystemExit(f"only {len(applied)} of {count} CRs served")


def burst(kit: Kit, events: list[dict]) -> tuple[list[float], float, dict[str, int]]:
    created = {(e["objectRef"]["namespace"], e["objectRef"]["name"]): stamp(e["requestReceivedTimestamp"]) for e in events
               if e["verb"] == "create" and e["objectRef"].get("resource") == "memcacheds"
               and e.get("responseStatus", {}).get("code") == 201}
    first: dict[tuple[str, str], float] = {}
    writes: dict[str, int] = defaultdict(int)
    for e in events:
        if who(e) and e["verb"] == "patch" and e["objectRef"].get("resource") == "deployments":
            first.setdefault((e["objectRef"]["namespace"], e["objectRef"]["name"]), stamp(e["requestReceivedTimestamp"]))
            writes[who(e)] += 1
    lags = [first[k] - t for k, t in created.items() if k in first]
    return lags, max(first.values()) - min(created.values()), dict(writes)


def owned_by(kit: Kit, name: str, count: int, members: list[str], n: int = 20) -> list[tuple[str, str]]:
    from memcached_gitops.reconciler.client.shards import owner

    keys = [(f"team-{i % NAMESPACES}", f"c{i}") for i in range(count)]
    return [k for k in keys if owner(f"{k[0]}/{k[1]}", members) == name][:n]


def quiet(kit: Kit, seconds: float = 3.0, timeout: float = 300) -> None:
    """Until the replicas have written nothing but Leases for ``seconds`` (the burst's status writes done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = max((stamp(e["requestReceivedTimestamp"]) for e in audit_events(kit.audit)
                    if who(e) and e["verb"] in ("create", "update", "patch", "delete")
                    and e.get("objectRef", {}).get("resource") != "leases"), default=0.0)
        if time.time() - last >= seconds:
            return
        time.sleep(1.0)


def handover(kit: Kit, name: str, sig: int, count: int, members: list[str]) -> tuple[float, list[float]]:
    """Signal one replica, then scale 20 of its Deployments (kubectl, one call per namespace). Returns
    the seconds from the signal to the last correction, and each Deployment's drift latency: its
    scale's receipt to the receipt of the correcting apply, both from the audit log."""
    targets = owned_by(kit, name, count, members)
    kit.procs[name].send_signal(sig)
    signalled = time.time()
    by_ns: dict[str, list[str]] = defaultdict(list)
    for ns, n in targets:
        by_ns[ns].append(n)
    for ns, names in by_ns.items():
        kit.k("scale", "deployment", "-n", ns, "--replicas=4", *names)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        events = audit_events(kit.audit)
        scaled = {}
        for e in events:
            ref = e.get("objectRef", {})
            if ref.get("subresource") == "scale" and e["verb"] == "patch" and stamp(e["requestReceivedTimestamp"]) > signalled:
                scaled[(ref.get("namespace"), ref.get("name"))] = stamp(e["requestReceivedTimestamp"])
        corrected = {}
        for e in events:
            ref = e.get("objectRef", {})
            key = (ref.get("namespace"), ref.get("name"))
            if (who(e) and who(e) != name and e["verb"] == "patch" and ref.get("resource") == "deployments" and not ref.get("subresource")
                    and key in scaled and stamp(e["requestReceivedTimestamp"]) > scaled[key]):
                corrected.setdefault(key, stamp(e["requestReceivedTimestamp"]))
        if len(corrected) == len(targets):
            return max(corrected.values()) - signalled, [corrected[k] - scaled[k] for k in targets]
        time.sleep(0.5)
    raise SystemExit(f"{name}'s CRs were not taken over")


def interleaved(events: list[dict], window: float = 10.0) -> list[str]:
    writes: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for e in events:
        ref = e.get("objectRef", {})
        if who(e) and e["verb"] in ("patch", "update", "create") and ref.get("resource") in ("deployments", "memcacheds"):
            writes[(ref.get("namespace"), ref.get("name"))].append((stamp(e["requestReceivedTimestamp"]), who(e)))
    bad = []
    for key, seq in writes.items():
        seq.sort()
        for (t1, a), (_, b), (t3, c) in zip(seq, seq[1:], seq[2:], strict=False):
            if a == c != b and t3 - t1 < window:
                bad.append(f"{key[0]}/{key[1]}")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kit", type=Path, default=Path.home() / ".realk8s")
    parser.add_argument("--audit-policy", type=Path, required=True)
    parser.add_argument("--venv", type=Path, default=HERE / ".venv", help="a venv with this checkout installed")
    parser.add_argument("--crs", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    print(f"# python bench/shards_real.py --crs {args.crs} --clients {args.clients} --replicas {' '.join(map(str, args.replicas))}")
    for n in args.replicas:
        kit = Kit(args.kit, args.audit_policy.resolve(), args.venv)
        try:
            kit.start()
            members = [f"shard-{i}" for i in range(n)]
            for m in members:
                kit.replica(m)
            kit.wait_ring(members)
            time.sleep(1.0)
            kit.create(args.crs, args.clients)
            events = kit.served(args.crs, timeout=600)
            lags, total, writes = burst(kit, events)
            rss = {m: rss_mib(kit.procs[m].pid) for m in members}
            print(f"{n} replica(s), {args.crs} new CRs from {args.clients} kubectl processes at once:")
            print(f"  all served {total:.1f} s after the first create; per-CR lag median {statistics.median(lags) * 1000:.0f} ms, "
                  f"p99 {pct(lags, 0.99) * 1000:.0f} ms, max {max(lags) * 1000:.0f} ms")
            for m in members:
                print(f"  {m}: RSS {rss[m][0]:.0f} MiB (peak {rss[m][1]:.0f}), Deployment writes {writes.get(m, 0)} "
                      f"({writes.get(m, 0) / max(1, sum(writes.values())):.0%})")
            if n >= 3:
                quiet(kit)
                took, drift = handover(kit, members[-1], signal.SIGTERM, args.crs, members)
                print(f"  SIGTERM {members[-1]}: its 20 scaled Deployments all corrected by the others {took:.2f} s after the signal; "
                      f"scale -> correction median {statistics.median(drift):.2f} s, max {max(drift):.2f} s")
                rest = members[:-1]
                kit.wait_ring(rest)
                quiet(kit)
                took, drift = handover(kit, rest[-1], signal.SIGKILL, args.crs, rest)
                print(f"  SIGKILL {rest[-1]}: its 20 scaled Deployments all corrected by the others {took:.2f} s after the signal; "
                      f"scale -> correction median {statistics.median(drift):.2f} s, max {max(drift):.2f} s")
            bad = interleaved(audit_events(kit.audit))
            print(f"  CRs written A, B, A by two replicas within 10 s: {len(bad)} {bad[:5]}")
        finally:
            kit.stop()


if __name__ == "__main__":
    main()
