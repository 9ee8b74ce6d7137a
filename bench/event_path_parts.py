"""Where the time goes between a Deployment's watch event and our apply, on a real kube-apiserver.

Runs the event-driven controller in this process against a running kit (../shared/realk8s: start.sh),
in a namespace of 20 Memcacheds, scales each Deployment with ``kubectl scale`` and prints, for the
reconciles that corrected the drift, the medians and maxima of:

- event -> worker: from the watch line decoded to a worker taking the key, in three parts: the
  informer's cache update (event -> handler), the handler (-> queued), and the queue's hand-off to a
  waiting worker thread (queued -> worker);
- worker -> apply sent: the reconcile up to the apply (cache reads, the desired Deployment, compare);
- of which desired, compare: the desired Deployment (validation and rendering, or the kept one) and the drift;
- apply round trip: the apply request until its answer.

The latency the API server sees adds the watch's delivery and the HTTP send; bench/latency_interleaved.py
measures that from the audit log. With ``--audit-log`` (the kit started with audit logging, as below)
each correction's latency by the audit log (kubectl's scale received -> our apply received) is split
into the watch's delivery (scale received -> our watch line decoded), our process (-> apply sent) and
the send (-> apply received), and the slowest rounds are printed with their three parts.

    ~/.realk8s/start.sh && python bench/event_path_parts.py --kubeconfig ~/.realk8s/kubeconfig --kubectl ~/.realk8s/bin/kubectl
    EXTRA_KAS_ARGS="--audit-policy-file=../shared/realk8s/peers/audit-policy.yaml --audit-log-path=/tmp/parts-audit.log \
      --audit-log-mode=blocking" ~/.realk8s/start.sh && python bench/event_path_parts.py --kubeconfig ~/.realk8s/kubeconfig \
      --kubectl ~/.realk8s/bin/kubectl --audit-log /tmp/parts-audit.log
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import subprocess
import threading
import time
import uuid
from pathlib import Path

from memcached_gitops.reconciler.client.api import KubeAPI
from memcached_gitops.reconciler.decisions import plan
from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.schemas import load_crd

HERE = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--scales", type=int, default=40)
    parser.add_argument("--audit-log", type=Path, help="the kit's audit log (see above): split the latency it shows")
    args = parser.parse_args()
    wall = time.time() - time.monotonic()  # monotonic -> wall clock, to meet the audit log's timestamps

    def k(*argv: str, stdin: str | None = None) -> None:
        subprocess.run([args.kubectl, "--kubeconfig", args.kubeconfig, *argv], input=stdin, text=True, check=True, capture_output=True)

    ns = f"parts-{uuid.uuid4().hex[:6]}"
    k("apply", "--server-side", "-f", str(HERE / "schemas" / "memcached-crd.yaml"))
    k("wait", "--for=condition=Established", "crd/memcacheds.cache.example.com")
    k("create", "namespace", ns)
    k("apply", "-n", ns, "-f", "-", stdin="".join(
        f"---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: c{i}}}\nspec: {{size: {i % 3 + 1}}}\n"
        for i in range(20)))
    api = KubeAPI.connect(args.kubeconfig)
    reconciler = Reconciler(api, load_crd(), Options(namespaces=(ns,)))
    controller = Controller(reconciler, Metrics(), None, Settings(workers=4, resync=3600))
    current = threading.local()
    samples: list[dict[str, float]] = []

    def timed(name: str, f):
        """``f``, adding its duration to the current reconcile's ``name``."""
        def wrapper(*a, **kw):
            began = time.monotonic()
            try:
                return f(*a, **kw)
            finally:
                stamp = getattr(current, "stamp", None)
                if stamp is not None:
                    stamp[name] = stamp.get(name, 0.0) + time.monotonic() - began
        return wrapper

    reconcile = controller.reconcile

    handler_at: dict[float, float] = {}  # an event's arrival -> its handler called (Deployment events)
    queued_at: dict[float, float] = {}  # an event's arrival -> its key put on the work queue

    def traced_handler(handler):
        def wrapper(kind, type_, obj, old, arrived):
            handler_at[arrived] = time.monotonic()
            handler(kind, type_, obj, old, arrived)
        return wrapper

    add = controller.queue.add

    def traced_add(key, arrived=None):
        if arrived is not None:  # stamped before the add: a worker may take the key before add returns
            queued_at.setdefault(arrived, time.monotonic())
        add(key, arrived)

    controller.queue.add = traced_add  # type: ignore[method-assign]
    for informer in controller.informers["Deployment"]:
        informer.handler = traced_handler(informer.handler)

    def traced(key, arrived):
        current.stamp = {"event": arrived, "worker": time.monotonic(), "name": key[1]}
        if arrived in handler_at and arrived in queued_at:
            current.stamp["handler"], current.stamp["queued"] = handler_at[arrived], queued_at[arrived]
        try:
            return reconcile(key, arrived)
        finally:
            if "sent" in current.stamp:
                samples.append(current.stamp)
            current.stamp = None

    controller.reconcile = traced  # type: ignore[method-assign]
    request = api.request

    def traced_request(method, path, query=None, body=None, content_type="application/json", verb=None, accept=None):
        stamp = getattr(current, "stamp", None)
        deployment_apply = verb == "apply" and "/deployments/" in path and stamp is not None and "sent" not in stamp
        if deployment_apply:
            stamp["sent"] = time.monotonic()
        out = request(method, path, query, body, content_type, verb, accept)
        if deployment_apply:
            stamp["answered"] = time.monotonic()
        return out

    api.request = traced_request  # type: ignore[method-assign]
    reconciler.desired_for = timed("desired", reconciler.desired_for)  # type: ignore[method-assign]
    plan.compare = timed("compare", plan.compare)
    pauses: list[tuple[int, float]] = []  # (generation, seconds) of each garbage collection while measuring
    began: list[float] = []

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            began[:] = [time.monotonic()]
        elif began:
            pauses.append((info["generation"], time.monotonic() - began[0]))

    class Connections(logging.Handler):
        """urllib3's "Starting new HTTPS connection": a TLS handshake inside a request's send."""

        def __init__(self) -> None:
            super().__init__(logging.DEBUG)
            self.opened = 0

        def emit(self, record: logging.LogRecord) -> None:
            self.opened += record.getMessage().startswith("Starting new")

    connections = Connections()
    pool_log = logging.getLogger("urllib3.connectionpool")

    thread = threading.Thread(target=controller.run, daemon=True)
    thread.start()
    time.sleep(5)
    samples.clear()
    gc.callbacks.append(on_gc)
    pool_log.addHandler(connections)
    pool_log.setLevel(logging.DEBUG)
    for n in range(args.scales):
        k("scale", "deployment", f"c{n % 20}", "-n", ns, "--replicas=7")
        time.sleep(0.3)
    time.sleep(1)
    gc.callbacks.remove(on_gc)
    pool_log.removeHandler(connections)
    controller.stop.set()
    thread.join(10)
    k("delete", "namespace", ns, "--wait=false")

    def line(label: str, values: list[float]) -> None:
        values = sorted(v * 1000 for v in values)
        print(f"{label:24s} median {statistics.median(values):6.2f} ms   max {values[-1]:6.2f} ms")

    print(f"{len(samples)} corrections")
    line("event -> worker", [s["worker"] - s["event"] for s in samples])
    split = [s for s in samples if "queued" in s]
    line("  event -> handler", [s["handler"] - s["event"] for s in split])
    line("  handler -> queued", [s["queued"] - s["handler"] for s in split])
    line("  queued -> worker", [s["worker"] - s["queued"] for s in split])
    line("worker -> apply sent", [s["sent"] - s["worker"] for s in samples])
    line("  of which desired", [s.get("desired", 0.0) for s in samples])
    line("  of which compare", [s.get("compare", 0.0) for s in samples])
    line("apply round trip", [s["answered"] - s["sent"] for s in samples])
    print(f"new connections opened while measuring: {connections.opened}")
    for generation in (0, 1, 2):
        times = [t for g, t in pauses if g == generation]
        if times:
            print(f"garbage collections of generation {generation}: {len(times)}, longest {max(times) * 1000:.2f} ms")
    if args.audit_log:
        audit_split(args.audit_log, ns, samples, wall)
    audit = f" --audit-log {args.audit_log}" if args.audit_log else ""
    print(f"reproduce: python bench/event_path_parts.py --kubeconfig {args.kubeconfig} --kubectl {args.kubectl} "
          f"--scales {args.scales}{audit}")


def audit_split(log: Path, ns: str, samples: list[dict], wall: float) -> None:
    """Each correction's latency by the audit log, in three parts: the watch's delivery, our process, the send;
    and from kubectl's scale answered to our apply received (bench/floor_parts.py prints the floor's the same way)."""
    from latency_interleaved import answers, corrections, spread  # bench/, beside this script

    events = [json.loads(line) for line in log.read_text().splitlines()]
    answered = answers(events)
    rounds = []
    for name, scaled, fixed in corrections(events, ns):
        mine = next((s for s in samples if s["name"] == name and scaled <= s["event"] + wall and fixed is not None
                     and s["sent"] + wall <= fixed), None)
        if mine is not None:
            rounds.append({"total": fixed - scaled, "delivery": mine["event"] + wall - scaled, "process": mine["sent"] - mine["event"],
                           "send": fixed - (mine["sent"] + wall), "answer -> fix": fixed - answered[scaled]})
    if not rounds:
        print("by the audit log, no correction matched")
        return
    print(f"by the audit log, {len(rounds)} corrections matched (p10 / median / max):")
    for part in ("total", "delivery", "process", "send", "answer -> fix"):
        print(f"  {part:14s} " + " / ".join(f"{v:6.2f}" for v in spread([r[part] * 1000 for r in rounds])) + " ms")
    print("  the slowest five (total = delivery + process + send, ms):")
    for r in sorted(rounds, key=lambda r: -r["total"])[:5]:
        print(f"    {r['total'] * 1000:6.2f} = {r['delivery'] * 1000:6.2f} + {r['process'] * 1000:6.2f} + {r['send'] * 1000:6.2f}")


if __name__ == "__main__":
    main()
