"""The whole ``reconcile`` process in each of its modes, and every output a user sees from it.

Each replica is the real command (tests/modes_launcher.py: the console script with shorter Lease
timings) in a process of its own, against the fake API server and its request log. The modes:
a single replica (``--no-leader-elect``), a leader and a standby, three shards, ``--once`` and
``--detect-only``; the phases: starting (an informer's first read held back), running, losing and
regaining the Lease, and SIGTERM while a reconcile is on the wire (a Deployment apply the fake holds
for ``HELD`` seconds). In every cell the outputs a person reads are checked, not the internals:

- ``/metrics`` scraped with an allowed token (200), a denied one (403) and none (401), on every
  replica: a standby and every shard answer scrapes as the leader does;
- ``/healthz`` and ``/readyz`` on the probe port;
- the CR's status conditions and its Events;
- the request log: every write of ours falls inside a term of the Lease, or the share, it was made
  under, and a Lease is released (or a shard's Lease deleted) only after the last write returned.

The metric values of a real cycle (no step stubbed) are held to physical bounds in
``test_a_single_replica``: every histogram's sum within [0, count x the test's own duration], the
request counts those of the request log, and every label value the shipped alerts and dashboard
select found in the scrape.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from memcached_gitops.reconciler.client.api import USER_AGENT
from memcached_gitops.reconciler.client.shards import lease_name, owner
from prometheus_client.parser import text_string_to_metric_families

from fakeapi.server import DeploymentController, FakeAPIServer, Fault, LoggedRequest
from tests.conftest import REPO
from tests.support.fakecluster import DEP_PATH, condition, deployment, make_cr, patch, write_kubeconfig
from tests.support.metrics_endpoint import free_port, scrape, service_account
from tests.support.monitoring import DASHBOARD, RULES

#: A Lease of 3 s, renewed within 2 s, tried every 0.3 s (client-go's 15 / 10 / 2, scaled down).
LEASE = (3, 2.0, 0.3)
LEADER_LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/memcached-gitops-leader"
CRD = "memcacheds.cache.example.com"
HELD = 1.5  # how long the fake holds the apply that is on the wire at SIGTERM
MERGE = "application/merge-patch+json"
TOKENS = {"allowed": "scraper-token", "denied": "stranger-token", "none": None}
SCRAPER, STRANGER = "system:serviceaccount:monitoring:prometheus", "system:serviceaccount:monitoring:stranger"
EXPECTED = {"allowed": 200, "denied": 403, "none": 401}


@pytest.fixture
def cluster() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(namespaces=("default", "shop"),
                       tokens={"scraper-token": service_account(SCRAPER), "stranger-token": service_account(STRANGER)}) as api:
        api.grant_non_resource(SCRAPER, ("/metrics",), ("get",), "prometheus-metrics", "memcached-gitops-metrics-reader")
        yield api


def wait_for(predicate: Callable[[], object], timeout: float = 20.0, what: str = "", replicas: tuple[Replica, ...] = ()) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        for r in replicas:
            assert r.proc.poll() is None, f"{r.identity} exited {r.proc.returncode}: {r.stderr()[-2000:]}"
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or predicate}: " + " | ".join(r.stderr()[-1500:] for r in replicas))


HANDED: set[int] = set()


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def port() -> int:
    """A free port no replica of this session was given yet (a port just freed is often handed again)."""
    while (found := free_port()) in HANDED:
        pass
    HANDED.add(found)
    return found


class Replica:
    """One ``reconcile`` process: its probes, its /metrics, its writes in the request log, its exit."""

    def __init__(self, cluster: FakeAPIServer, folder: Path, identity: str, *args: str, lease: bool = True) -> None:
        self.cluster, self.identity = cluster, identity
        self.err = folder / f"{identity}.log"
        env = {**os.environ, "POD_NAME": identity, "MODES_LEASE": ",".join(map(str, LEASE)) if lease else ""}
        kubeconfig = str(write_kubeconfig(folder, cluster.url))
        for _ in range(5):  # a port found free may be taken by another process before ours binds it: start again
            self.started = time.monotonic()  # every duration the process exports lies within its life
            self.probe, self.metrics = port(), port()
            command = [sys.executable, "-m", "tests.modes_launcher", "reconcile", "--kubeconfig", kubeconfig,
                       "--lease-namespace", "default", "--workers", "2", "--metrics-port", str(self.metrics),
                       "--health-probe-port", str(self.probe), "--metrics-bind-address", "127.0.0.1",
                       "--health-probe-bind-address", "127.0.0.1", *args]
            with self.err.open("wb") as err:
                self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
            if not self._lost_a_port(command):
                return

    def _lost_a_port(self, command: list[str]) -> bool:
        """Whether the process exited because a port it was given was taken meanwhile; False once every port it asks
        for accepts connections (a TCP connect, as a kubelet's tcpSocket probe), or when it exits for another reason.
        ``--once`` (a CronJob's cycle) opens no port."""
        if "--once" in command:
            return False
        ports = [int(command[len(command) - 1 - command[::-1].index(flag) + 1]) for flag in ("--metrics-port", "--health-probe-port")]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return "Address already in use" in self.stderr()
            if all(_accepts(p) for p in ports if p):
                return False
            time.sleep(0.05)
        return False

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def get(self, path: str) -> tuple[int, str]:
        """A probe, as the kubelet sends it (plain HTTP, no credentials); (0, why) when nothing answers."""
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.probe, timeout=5)
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        except OSError as exc:
            return 0, str(exc)

    def listening(self) -> bool:
        try:
            scrape(self.metrics, None, None)
            return True
        except OSError:
            return False

    def scrapes(self) -> dict[str, tuple[int, str]]:
        """/metrics with an allowed token, a denied one and none."""
        return {who: scrape(self.metrics, token, None) for who, token in TOKENS.items()}

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        status, body = scrape(self.metrics, TOKENS["allowed"], None)
        assert status == 200, body
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(body) for s in f.samples}

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples().get((name, tuple(sorted(labels.items()))))

    def ours(self, r: LoggedRequest) -> bool:
        return r.user_agent == f"{USER_AGENT} {self.identity}"

    def writes(self) -> list[LoggedRequest]:
        """This replica's writes to the cluster's state (not its Lease, not the metrics reviews)."""
        return [r for r in self.cluster.writes() if self.ours(r) and "/leases" not in r.path and not r.path.endswith("reviews")]

    def terminate(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def replicas(cluster: FakeAPIServer, tmp_path: Path) -> Iterator[Callable[..., Replica]]:
    started: list[Replica] = []

    def start(identity: str, *args: str, lease: bool = True) -> Replica:
        started.append(Replica(cluster, tmp_path, identity, *args, lease=lease))
        return started[-1]

    yield start
    for r in started:
        r.kill()


# ---- what every cell checks
def assert_scrapes(*rs: Replica) -> None:
    """Every replica, leading or not, answers scrapes as controller-runtime's filter does."""
    for r in rs:
        scraped = r.scrapes()
        answers = {who: status for who, (status, _) in scraped.items()}
        assert answers == EXPECTED, f"{r.identity}: {answers}: {r.stderr()[-1500:]}"
        body = scraped["allowed"][1]
        assert_physical({(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(body)
                         for s in f.samples}, time.monotonic() - r.started)


def assert_probes(r: Replica, ready: str) -> None:
    """/healthz 200; /readyz 200 saying ``ready`` (or 503 when ``ready`` is empty)."""
    assert r.get("/healthz")[0] == 200, r.identity
    status, text = r.get("/readyz")
    assert (status, ready in text) == ((200, True) if ready else (503, True)), (r.identity, status, text)


def assert_served(cluster: FakeAPIServer, name: str, ns: str = "default") -> None:
    """The CR's status says Available and Ready, and its Events say what was done (an Event is posted
    after the status it goes with: awaited, as a loaded machine may post it a moment later)."""
    assert condition(cluster, name, "Available", ns).get("status") == "True", name
    assert condition(cluster, name, "Ready", ns).get("status") == "True", name
    assert wait_for(lambda: events(cluster, name, ns), what=f"an Event on {ns}/{name}"), f"no Event on {ns}/{name}"


def events(cluster: FakeAPIServer, name: str, ns: str = "default") -> list[dict[str, Any]]:
    with cluster.lock:
        return [e for (g, p, n, _), e in list(cluster.objects.items())
                if (g, p, n) == ("", "events", ns) and (e.get("involvedObject") or {}).get("name") == name]


def lease_writes(cluster: FakeAPIServer, r: Replica, path: str = LEADER_LEASE) -> list[LoggedRequest]:
    """``r``'s successful writes of the Lease at ``path``: its creation (a POST to the collection) too."""
    collection, name = path.rsplit("/", 1)
    return [w for w in cluster.writes() if r.ours(w) and 200 <= w.status < 300
            and (w.path == path or (w.path == collection and f'"name": "{name}"'.encode() in w.body))]


def assert_within_terms(cluster: FakeAPIServer, r: Replica, lease_path: str = LEADER_LEASE) -> None:
    """Each write of ``r`` arrived within the renew deadline of a successful write of its Lease
    (a term lasts that long after its last renewal was sent, fence of leader.py), and none after it
    released or deleted the Lease."""
    held = [w.received for w in lease_writes(cluster, r, lease_path) if not released(w)]
    end = min((w.received for w in lease_writes(cluster, r, lease_path) if released(w)), default=float("inf"))
    for w in r.writes():
        inside = any(t <= w.received <= t + LEASE[1] + 0.25 for t in held)  # 0.25 s: a busy machine's send-to-arrival
        assert inside and w.received < end, f"{r.identity}: {w.method} {w.path} outside its term"


def released(w: LoggedRequest) -> bool:
    """The Lease given up: holderIdentity cleared (leader.py) or the shard's Lease deleted."""
    return w.method == "DELETE" or (w.method == "PATCH" and b'"holderIdentity": null' in w.body)


def hold_apply(cluster: FakeAPIServer, name: str, held: float = HELD) -> Fault:
    """The fake holds the next apply of ``name``'s Deployment for ``held`` seconds: a write on the wire."""
    fault = Fault(method="PATCH", path_contains=DEP_PATH.format(ns="default", name=name), status=0, delay=held)
    cluster.faults.append(fault)
    return fault


def assert_drained_before_release(cluster: FakeAPIServer, r: Replica, name: str, lease_path: str, held: float = HELD) -> None:
    """SIGTERM with ``name``'s apply on the wire: this replica still wrote the CR's status and Event,
    and let its Lease go only after its last write had returned."""
    mine = r.writes()
    status = [w for w in mine if w.path.endswith(f"/memcacheds/{name}/status")]
    assert status, f"{r.identity} left {name} half-done: its status was not written"
    release = [w for w in lease_writes(cluster, r, lease_path) if released(w)]
    assert release, f"{r.identity} never released its Lease"
    returned = max(w.received + (held if w.path == DEP_PATH.format(ns="default", name=name) else 0.0) for w in mine)
    assert release[0].received >= returned, f"{r.identity}'s Lease was released while a write was on the wire"


def available(cluster: FakeAPIServer, name: str, rs: Any) -> None:
    """Until ``name``'s Deployment is applied, then rolled out by the Deployment controller (played
    by the fake), and the CR's status says so."""
    rs = rs if isinstance(rs, tuple) else (rs,)
    wait_for(lambda: deployment(cluster, name), what=f"{name}'s Deployment", replicas=rs)
    DeploymentController(cluster).sync()
    wait_for(lambda: condition(cluster, name, "Available").get("status") == "True", what=f"{name} Available", replicas=rs)


def settle(cluster: FakeAPIServer, quiet: float = 0.5) -> None:
    """Until nothing but Lease renewals and reviews has arrived for ``quiet`` seconds."""
    def still() -> bool:
        last = max((w.received for w in cluster.writes() if "/leases" not in w.path and not w.path.endswith("reviews")), default=0.0)
        return time.monotonic() - last >= quiet
    wait_for(still, what="quiet")


# ---- the cells
def test_a_single_replica_through_start_drift_and_sigterm(cluster: FakeAPIServer, replicas: Callable[..., Replica]) -> None:
    """--no-leader-elect: starting (the Memcached informer's first read held back), running, a
    correction, metric values within physical bounds, SIGTERM with an apply on the wire (the CR's
    status still written)."""
    began = time.monotonic()
    make_cr(cluster, "a", size=1)
    foreign(cluster, "f")
    make_cr(cluster, "f", size=1)  # its Deployment's name is taken: Degraded, not Ready
    cluster.faults.append(Fault(method="GET", path_contains="/apis/cache.example.com/v1alpha1/memcacheds", status=0, delay=2.0))
    r = replicas("single", "--no-leader-elect")
    wait_for(lambda: r.get("/healthz")[0] == 200 and r.listening(), what="the servers", replicas=(r,))
    assert_probes(r, "")  # starting: not ready while an informer has not synced
    assert_scrapes(r)
    assert r.writes() == [], "nothing written before the caches synced"
    available(cluster, "a", (r,))
    wait_for(lambda: condition(cluster, "f", "Degraded").get("status") == "True", what="f Degraded", replicas=(r,))
    settle(cluster)
    assert_probes(r, "this replica leads")
    assert_served(cluster, "a")
    patch(cluster, DEP_PATH.format(ns="default", name="a") + "/scale", {"spec": {"replicas": 5}}, MERGE)
    wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, what="the scale undone", replicas=(r,))
    settle(cluster)
    assert_scrapes(r)
    samples = r.samples()
    assert_metric_bounds(samples, time.monotonic() - began, r, cluster)
    assert_dashboard_and_alert_labels_match(samples)
    fault = hold_apply(cluster, "slow")
    make_cr(cluster, "slow", size=1)
    wait_for(lambda: fault.times == 0, what="the apply on the wire", replicas=(r,))
    assert r.terminate() == 0
    held = [w for w in r.writes() if w.path == DEP_PATH.format(ns="default", name="slow")]
    assert held and [w for w in r.writes() if w.path.endswith("/memcacheds/slow/status")], "the CR in flight finished"


def foreign(cluster: FakeAPIServer, name: str) -> None:
    """A Deployment of that name applied by someone else (no owner, not our labels)."""
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    code, _, data = cluster.handle("POST", "/apis/apps/v1/namespaces/default/deployments?fieldManager=kubectl-create",
                                   {"User-Agent": "kubectl/v1.37.1", "Content-Type": "application/json"}, json.dumps(body).encode())
    assert code == 201, data


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def assert_metric_bounds(samples: Samples, duration: float, r: Replica, cluster: FakeAPIServer) -> None:
    """Physical bounds (assert_physical), the request counts those of the request log, the one
    correction counted once, the CRs and the leadership as they are."""
    assert_physical(samples, duration)
    assert samples[("memcached_gitops_drift_correction_latency_seconds_count", ())] == 1, "one correction"
    assert samples[("memcached_gitops_crs", ())] == 2
    assert samples[("memcached_gitops_leader", ())] == 1
    logged: dict[tuple[str, str], int] = {}
    for w in cluster.log:
        if r.ours(w) and w.method in ("PATCH", "PUT", "DELETE"):
            logged[(str(w.status), w.method)] = logged.get((str(w.status), w.method), 0) + 1
    counted = {(dict(lbl)["code"], dict(lbl)["method"]): int(v) for (n, lbl), v in samples.items()
               if n == "rest_client_requests_total" and dict(lbl)["method"] in ("PATCH", "PUT", "DELETE")}
    assert counted == logged, "rest_client_requests_total is what the API server received"


def assert_physical(samples: Samples, duration: float) -> None:
    """Every histogram's observations within [0, ``duration``] (a wall-clock time minus a monotonic
    one is 1.7e9 s), every gauge non-negative and the durations among them within ``duration`` too."""
    histograms = {name[: -len("_count")] for name, _ in samples if name.endswith("_count")}
    for h in sorted(histograms):
        for (name, labels), count in samples.items():
            if name != f"{h}_count":
                continue
            total = samples[(f"{h}_sum", labels)]
            assert 0 <= total <= count * duration, f"{h}{dict(labels)}: sum {total} of {count} observations in a {duration:.1f}s test"
            inf = samples[(f"{h}_bucket", tuple(sorted({**dict(labels), "le": "+Inf"}.items())))]
            assert inf == count, h
    gauges = [(n, lbl, v) for (n, lbl), v in samples.items() if not n.endswith(("_total", "_created", "_bucket", "_count", "_sum"))]
    for name, labels, value in gauges:
        assert value >= 0, f"{name}{dict(labels)} = {value}"
        if name.endswith("_seconds"):
            assert value <= duration, f"{name}{dict(labels)} = {value}s in a {duration:.1f}s test"


#: label="value" and label=~"a|b" inside a selector's braces
MATCHER = re.compile(r'(\w+)\s*(=~|!=|=)\s*"([^"]*)"')


def selectors() -> list[tuple[str, str, str, str]]:
    """(where, metric, label, value pattern) of every equality and regex matcher the shipped alerts and
    dashboard select series with."""
    exprs = [(f"alert {g_r['alert']}", g_r["expr"]) for g in RULES["spec"]["groups"] for g_r in g["rules"]]
    exprs += [(f"panel {p['title']}", t["expr"]) for p in DASHBOARD["panels"] for t in p["targets"]]
    found = []
    for where, expr in exprs:
        for metric, inner in re.findall(r"([a-zA-Z_:][\w:]*)\{([^}]*)\}", expr):
            for label, op, value in MATCHER.findall(inner):
                if op != "!=":
                    found.append((where, metric, label, value))
    return found


def assert_dashboard_and_alert_labels_match(samples: Samples) -> None:
    """Each matcher of the shipped alerts and dashboard selects a series the real process exports
    (with a served CR and a Degraded one in the cluster), so no panel or alert is silently empty."""
    wanted = selectors()
    assert wanted, "the monitoring component selects by label"
    for where, metric, label, pattern in wanted:
        values = {dict(lbl).get(label) for (name, lbl) in samples if name == metric or name == f"{metric}_total"
                  or (metric.endswith(("_bucket", "_total")) and name == metric)}
        assert any(v is not None and re.fullmatch(pattern, v) for v in values), \
            f"{where}: {metric}{{{label}=~{pattern!r}}} matches no exported series (values {sorted(map(str, values))})"


def test_a_leader_and_a_standby_then_sigterm_with_a_reconcile_in_flight(cluster: FakeAPIServer,
                                                                      replicas: Callable[..., Replica]) -> None:
    make_cr(cluster, "a", size=1)
    leader = replicas("leader")
    wait_for(lambda: "this replica leads" in leader.get("/readyz")[1], what="the leader", replicas=(leader,))
    standby = replicas("standby")
    wait_for(lambda: "ready: standby" in standby.get("/readyz")[1], what="the standby ready", replicas=(standby,))
    assert "leader" not in standby.get("/readyz")[1]  # an unauthenticated probe is not told who leads
    available(cluster, "a", (leader,))
    assert_scrapes(leader, standby)
    assert standby.value("memcached_gitops_leader") == 0 and leader.value("memcached_gitops_leader") == 1
    assert_served(cluster, "a")
    assert standby.writes() == [], "a standby writes nothing"
    fault = hold_apply(cluster, "slow")
    make_cr(cluster, "slow", size=1)
    wait_for(lambda: fault.times == 0, what="the apply on the wire", replicas=(leader,))
    assert leader.terminate() == 0
    assert_drained_before_release(cluster, leader, "slow", LEADER_LEASE)
    assert_within_terms(cluster, leader)
    wait_for(lambda: "this replica leads" in standby.get("/readyz")[1], what="the standby takes over", replicas=(standby,))
    make_cr(cluster, "b", size=1)
    available(cluster, "b", (standby,))
    available(cluster, "slow", (standby,))
    assert_served(cluster, "slow")
    assert_scrapes(standby)
    assert_within_terms(cluster, standby)
    assert standby.terminate() == 0


def test_a_leader_renews_its_lease_while_a_reconcile_in_flight_at_sigterm_outlasts_the_renew_deadline(
        cluster: FakeAPIServer, replicas: Callable[..., Replica]) -> None:
    """SIGTERM with an apply on the wire for longer than the renew deadline (a slow API server): the
    leader goes on renewing its Lease until the reconcile has ended, as controller-runtime stops leader
    election only after its runnables, so the CR's status and Event are written within its term (not
    refused by a fence that ran out: a CR left half-done), and the Lease is released after them."""
    make_cr(cluster, "a", size=1)
    leader = replicas("leader")
    wait_for(lambda: "this replica leads" in leader.get("/readyz")[1], what="the leader", replicas=(leader,))
    available(cluster, "a", (leader,))
    held = LEASE[1] + 1.0
    fault = hold_apply(cluster, "slow", held)
    make_cr(cluster, "slow", size=1)
    wait_for(lambda: fault.times == 0, what="the apply on the wire", replicas=(leader,))
    assert leader.terminate() == 0
    assert_drained_before_release(cluster, leader, "slow", LEADER_LEASE, held)
    assert_within_terms(cluster, leader)
    assert events(cluster, "slow"), "the in-flight reconcile's Event"


def test_a_leader_that_loses_its_lease_stops_writing_and_comes_back(cluster: FakeAPIServer,
                                                                   replicas: Callable[..., Replica]) -> None:
    """Its renewals refused for longer than the renew deadline: it stops leading (readyz, the leader
    gauge), writes nothing, still answers scrapes, and corrects the drift made meanwhile once back."""
    make_cr(cluster, "a", size=1)
    r = replicas("replica")
    available(cluster, "a", (r,))
    settle(cluster)
    cluster.faults.append(Fault(method="PUT", path_contains=LEADER_LEASE, status=500, times=12))
    wait_for(lambda: "standby" in r.get("/readyz")[1], what="the Lease lost", replicas=(r,))
    assert r.value("memcached_gitops_leader") == 0
    assert_scrapes(r)
    lost = time.monotonic()
    patch(cluster, DEP_PATH.format(ns="default", name="a") + "/scale", {"spec": {"replicas": 4}}, MERGE)
    wait_for(lambda: "this replica leads" in r.get("/readyz")[1], what="the Lease regained", replicas=(r,))
    regained = min(w.received for w in lease_writes(cluster, r) if w.received > lost)
    wait_for(lambda: deployment(cluster, "a")["spec"]["replicas"] == 1, what="the drift corrected", replicas=(r,))
    fix = [w for w in r.writes() if "/deployments/a" in w.path and w.received > lost]
    assert fix and fix[0].received >= regained, "no write while the Lease was lost"
    assert_within_terms(cluster, r)
    assert_scrapes(r)
    assert r.terminate() == 0


def test_three_shards_each_serve_their_share_and_a_leaving_one_drains_first(cluster: FakeAPIServer,
                                                                           replicas: Callable[..., Replica]) -> None:
    names = [f"shard-{i}" for i in range(3)]
    shards = [replicas(n, "--shards") for n in names]
    wait_for(lambda: all(s.get("/readyz")[0] == 200 for s in shards), what="the shards ready", replicas=tuple(shards))
    wait_for(lambda: all(s.value("memcached_gitops_shard_members") == 3 for s in shards), what="a ring of three",
             replicas=tuple(shards))
    crs = [f"c{i}" for i in range(6)]
    for name in crs:
        make_cr(cluster, name, size=1)
    for name in crs:
        available(cluster, name, tuple(shards))
    settle(cluster)
    assert_scrapes(*shards)
    for name in crs:
        assert_served(cluster, name)
        writer = {s.identity for s in shards for w in s.writes() if f"/{name}" in w.path or f"/{name}-" in w.path}
        assert writer == {owner(f"default/{name}", names)}, f"{name} written by {writer}"
    # the CR's status names the replica serving it as its shard's Lease does (POD_NAME, not the host's name)
    holders = {n: cluster.get("coordination.k8s.io", "leases", "default", lease_name(n))["spec"]["holderIdentity"] for n in names}
    assert holders == {n: n for n in names}
    wait_for(lambda: all((cluster.get("cache.example.com", "memcacheds", "default", name)["status"].get("servedBy")
                          == owner(f"default/{name}", names)) for name in crs), what="status.servedBy naming each CR's shard",
             replicas=tuple(shards))
    assert sum(s.value("memcached_gitops_shard_owned_crs") or 0 for s in shards) == len(crs)
    leaving = next(s for s in shards if s.identity == owner("default/slow", names))
    fault = hold_apply(cluster, "slow")
    make_cr(cluster, "slow", size=1)
    wait_for(lambda: fault.times == 0, what="the apply on the wire", replicas=tuple(shards))
    assert leaving.terminate() == 0
    lease = f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{lease_name(leaving.identity)}"
    assert_drained_before_release(cluster, leaving, "slow", lease)
    assert_within_terms(cluster, leaving, lease)
    rest = [s for s in shards if s is not leaving]
    wait_for(lambda: all(s.value("memcached_gitops_shard_members") == 2 for s in rest), what="the ring of two", replicas=tuple(rest))
    available(cluster, "slow", tuple(rest))
    assert_served(cluster, "slow")
    assert_scrapes(*rest)
    assert [s.terminate() for s in rest] == [0, 0]


def test_once_serves_every_cr_and_exits(cluster: FakeAPIServer, replicas: Callable[..., Replica]) -> None:
    """--once: one LIST-based cycle, no server (nothing to scrape in a CronJob), exit 0."""
    make_cr(cluster, "a", size=1)
    make_cr(cluster, "b", ns="shop", size=2)
    r = replicas("cronjob", "--once", lease=False)
    assert r.proc.wait(60) == 0, r.stderr()
    assert deployment(cluster, "a") and deployment(cluster, "b", "shop")
    DeploymentController(cluster).sync()  # rolled out; the next run's status says so
    again = replicas("cronjob-2", "--once", lease=False)
    assert again.proc.wait(60) == 0, again.stderr()
    assert_served(cluster, "a")
    assert_served(cluster, "b", "shop")
    assert r.get("/healthz")[0] == 0, "--once serves no probe"
    assert not [w for w in cluster.log if "/leases" in w.path], "--once takes no Lease"


def test_once_at_sigterm_finishes_the_cr_on_the_wire_and_stops(cluster: FakeAPIServer, replicas: Callable[..., Replica]) -> None:
    """A CronJob's Pod deleted mid-run (the kubelet's SIGTERM): --once finishes the CR whose apply is on
    the wire (its status still written: never left half-done), takes no next CR, says the cycle
    stopped early, and exits by itself with 2 (a cycle that did not handle every CR), not by the signal."""
    make_cr(cluster, "slow", size=1)
    make_cr(cluster, "z", size=1)  # after "slow" in the cycle's order
    fault = hold_apply(cluster, "slow")
    r = replicas("cronjob", "--once", lease=False)
    wait_for(lambda: fault.times == 0, what="the apply on the wire", replicas=(r,))
    assert r.terminate() == 2, r.stderr()
    assert [w for w in r.writes() if w.path.endswith("/memcacheds/slow/status")], "the CR in flight finished"
    assert deployment(cluster, "z") is None, "no CR is taken after SIGTERM"
    assert "stopped before every CR was handled" in r.stderr()


def test_detect_only_reports_and_writes_no_deployment(cluster: FakeAPIServer, replicas: Callable[..., Replica]) -> None:
    make_cr(cluster, "a", size=1)
    r = replicas("detector", "--detect-only")
    wait_for(lambda: condition(cluster, "a", "Degraded").get("reason") == "DriftDetected", what="the drift reported", replicas=(r,))
    settle(cluster)
    assert_probes(r, "this replica leads")
    assert_scrapes(r)
    assert deployment(cluster, "a") is None
    assert not [w for w in r.writes() if "/deployments/" in w.path], "--detect-only writes no Deployment"
    assert any(e["type"] == "Warning" for e in events(cluster, "a")), "a Warning Event tells the drift"
    assert sum(v for (n, _), v in r.samples().items() if n == "memcached_gitops_drift_detected_total") >= 1
    assert_within_terms(cluster, r)
    assert r.terminate() == 0


def test_a_shard_that_loses_its_lease_stops_writing_its_share_moves_and_it_comes_back(cluster: FakeAPIServer,
                                                                                    replicas: Callable[..., Replica]) -> None:
    """One shard's renewals refused past its fence: it writes nothing outside its term, the others take
    its share (a drift of one of its CRs is corrected by another), every replica answers scrapes
    throughout, and it rejoins the ring as a new incarnation once its renewals go through."""
    names = [f"shard-{i}" for i in range(3)]
    shards = [replicas(n, "--shards") for n in names]
    out = shards[0]
    crs = [f"c{i}" for i in range(40) if owner(f"default/c{i}", names) == out.identity][:2] + ["c-other"]
    wait_for(lambda: all(s.get("/readyz")[0] == 200 and s.listening() for s in shards), what="the shards ready", replicas=tuple(shards))
    wait_for(lambda: all(s.value("memcached_gitops_shard_members") == 3 for s in shards), what="a ring of three", replicas=tuple(shards))
    for name in crs:
        make_cr(cluster, name, size=1)
    for name in crs:
        available(cluster, name, tuple(shards))
    lease = f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{lease_name(out.identity)}"
    cluster.faults.append(Fault(method="PUT", path_contains=lease, status=500, times=25))
    rest = shards[1:]
    wait_for(lambda: all(s.value("memcached_gitops_shard_members") == 2 for s in rest), what="its share moved", replicas=tuple(shards))
    assert_scrapes(*shards)
    moved = time.monotonic()
    patch(cluster, DEP_PATH.format(ns="default", name=crs[0]) + "/scale", {"spec": {"replicas": 4}}, MERGE)
    wait_for(lambda: deployment(cluster, crs[0])["spec"]["replicas"] == 1, what="corrected by another", replicas=tuple(shards))
    fixed_by = {s.identity for s in shards for w in s.writes() if w.received > moved and f"/deployments/{crs[0]}" in w.path}
    assert fixed_by and out.identity not in fixed_by, fixed_by
    wait_for(lambda: all(s.value("memcached_gitops_shard_members") == 3 for s in shards), what="back in the ring", replicas=tuple(shards))
    assert_within_terms(cluster, out, lease)
    assert_scrapes(*shards)
    assert [s.terminate() for s in shards] == [0, 0, 0]


def plain(port: int, path: str) -> int:
    """``path`` over plain HTTP with no credentials (a kubelet probe, or a scrape of an insecure
    /metrics); 0 when nothing answers there as HTTP."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", path)
        status = conn.getresponse().status
        conn.close()
        return status
    except (OSError, http.client.HTTPException):
        return 0


#: The serving flags (kubebuilder v4's) -> what each port answers, as (probe port, metrics port):
#: "tls" is /metrics over HTTPS behind the reviews, "plain" a path over HTTP, "-" nothing listening.
SERVING_FORMS = {
    "default": ((), {"probe": {"/healthz": 200, "/readyz": 200, "/metrics": 404}, "metrics": "tls"}),
    "insecure metrics": (("--no-metrics-secure",),
                         {"probe": {"/healthz": 200, "/readyz": 200, "/metrics": 404},
                          "metrics": {"/metrics": 200, "/healthz": 404, "/readyz": 404}}),
    "insecure metrics, no probe port": (("--no-metrics-secure", "--health-probe-port", "0"),
                                        {"probe": "-", "metrics": {"/metrics": 200, "/healthz": 200, "/readyz": 200}}),
    "no metrics port": (("--metrics-port", "0"), {"probe": {"/healthz": 200, "/readyz": 200, "/metrics": 404}, "metrics": "-"}),
    "secure metrics, no probe port": (("--health-probe-port", "0"), {"probe": "-", "metrics": "tls"}),
}


@pytest.mark.parametrize("form", SERVING_FORMS)
def test_each_serving_form_answers_each_path_on_its_port(cluster: FakeAPIServer, replicas: Callable[..., Replica], form: str) -> None:
    """Every form of the serving flags, as the Deployment's args can set them: a probe or a scrape
    pointed at the port the docs name answers, and no path is served where it is not meant to be
    (the last flag of a repeated option is the one click keeps: the replica's own ports come first)."""
    args, expected = SERVING_FORMS[form]
    r = replicas("server", "--no-leader-elect", *args)
    answers = {"probe": r.probe, "metrics": r.metrics}

    def up(what: str) -> bool:
        want = expected[what]
        if want == "tls":
            return scrape_status(answers[what]) == 200
        return want == "-" or all(plain(answers[what], path) == 200 for path in ("/readyz", "/metrics") if want.get(path) == 200)
    wait_for(lambda: all(up(what) for what in answers), what="the servers up and ready", replicas=(r,))
    for what, port in answers.items():
        want = expected[what]
        if want == "-":
            assert plain(port, "/healthz") == 0 and scrape_status(port) == 0, f"{form}: something listens on the {what} port"
        elif want == "tls":
            assert {who: scrape(port, token, None)[0] for who, token in TOKENS.items()} == EXPECTED, form
            assert scrape(port, TOKENS["allowed"], None, "/healthz")[0] == 404, f"{form}: a probe path on the secure metrics port"
        else:
            assert {path: plain(port, path) for path in want} == want, f"{form}: the {what} port"
    assert r.terminate() == 0


def scrape_status(port: int) -> int:
    """/metrics over HTTPS with the allowed token; 0 when nothing answers there as HTTPS."""
    try:
        return scrape(port, TOKENS["allowed"], None)[0]
    except (OSError, http.client.HTTPException):
        return 0


@pytest.mark.parametrize("mode", ["event-driven", "--once"])
def test_a_namespaced_replica_reads_and_writes_only_its_namespace(cluster: FakeAPIServer, replicas: Callable[..., Replica],
                                                                   mode: str) -> None:
    """``--namespace shop`` (kustomize/namespaced's install, a Role in one namespace), as a Deployment
    or a CronJob: it serves that namespace's CR and never reads or writes another namespace, nor
    anything cluster-wide but the CRD and the reviews; a leader's Lease is where --lease-namespace puts it."""
    make_cr(cluster, "a", size=1)
    make_cr(cluster, "b", ns="shop", size=1)
    if mode == "--once":
        r = replicas("team", "--once", "--namespace", "shop", lease=False)
        assert r.proc.wait(60) == 0, r.stderr()
        assert deployment(cluster, "b", "shop")
    else:
        r = replicas("team", "--namespace", "shop", "--lease-namespace", "shop")
        wait_for(lambda: deployment(cluster, "b", "shop"), what="b's Deployment", replicas=(r,))
        DeploymentController(cluster).sync()
        wait_for(lambda: condition(cluster, "b", "Available", "shop").get("status") == "True", what="b Available", replicas=(r,))
        settle(cluster)
        assert_served(cluster, "b", "shop")
        assert_scrapes(r)
        assert [w for w in cluster.writes() if r.ours(w) and w.path.startswith("/apis/coordination.k8s.io/v1/namespaces/shop/leases")]
        assert r.terminate() == 0
    assert deployment(cluster, "a") is None and not condition(cluster, "a", "Available"), "a CR of another namespace untouched"
    paths = {w.path.split("?")[0] for w in cluster.log if r.ours(w)}
    elsewhere = sorted(p for p in paths if "/namespaces/" in p and "/namespaces/shop/" not in p)
    assert not elsewhere, elsewhere
    cluster_wide = sorted(p for p in paths if "/namespaces/" not in p and not p.endswith(("reviews", f"customresourcedefinitions/{CRD}")))
    assert not cluster_wide, cluster_wide


def two_contexts(folder: Path, url: str) -> Path:
    """A kubeconfig whose current context names a server nobody listens on; ``fake`` is the cluster."""
    path = folder / "two-contexts"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{url}"}}}}, {{name: gone, cluster: {{server: "http://127.0.0.1:9"}}}}]
users: [{{name: tester, user: {{token: test-token}}}}]
contexts: [{{name: fake, context: {{cluster: fake, user: tester}}}}, {{name: gone, context: {{cluster: gone, user: tester}}}}]
current-context: gone
""")
    return path


@pytest.mark.parametrize("given", ["flags", "environment"])
def test_the_commands_options_reach_what_it_writes(cluster: FakeAPIServer, replicas: Callable[..., Replica], tmp_path: Path,
                                                   given: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The options a CronJob's or a Deployment's args set, each seen in what the process does:
    --field-manager in every apply of what it renders and their managedFields (the status keeps its own
    manager, docs/architecture.md), --image (or MEMCACHED_IMAGE) in the
    Deployment, --context choosing the kubeconfig's cluster, --log-level debug in the log."""
    make_cr(cluster, "a", size=1)
    image = "mirror.example/memcached:1.6.31"
    args = ["--once", "--kubeconfig", str(two_contexts(tmp_path, cluster.url)), "--context", "fake",
            "--field-manager", "team-gitops", "--log-level", "debug"]
    if given == "flags":
        args += ["--image", image]
    else:
        monkeypatch.setenv("MEMCACHED_IMAGE", image)  # the replica's process inherits the environment
    r = replicas("cronjob", *args, lease=False)
    assert r.proc.wait(60) == 0, r.stderr()
    live = deployment(cluster, "a")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == image
    assert {(m["manager"], m["operation"]) for m in live["metadata"]["managedFields"]} == {("team-gitops", "Apply")}
    applies = [w for w in cluster.writes() if r.ours(w) and w.content_type == "application/apply-patch+yaml"]
    managers = {"status" if w.path.endswith("/status") else w.path.rsplit("/", 2)[-2]: w.query.get("fieldManager") for w in applies}
    assert managers == {"deployments": "team-gitops", "services": "team-gitops", "status": "memcached-gitops-status"}, managers
    assert any(json.loads(line).get("level") == "debug" for line in r.stderr().splitlines() if line.startswith("{")), r.stderr()[-2000:]


def test_an_event_driven_dry_run_writes_nothing_and_takes_no_lease(cluster: FakeAPIServer, replicas: Callable[..., Replica]) -> None:
    """``reconcile --dry-run`` without --once (a preview of the controller beside the one in charge):
    it watches, reports what it would do in its log and metrics, answers probes and scrapes, and sends
    no write at all: no Deployment, no status, no Event, no Lease (it leads nothing)."""
    make_cr(cluster, "a", size=1)
    r = replicas("preview", "--dry-run")
    wait_for(lambda: "default/a: not written (dry run): created the Deployment" in r.stderr() and r.get("/readyz")[0] == 200,
             what="the creation it would make logged, and the replica ready", replicas=(r,))
    said = [json.loads(line)["msg"] for line in r.stderr().splitlines() if line.startswith("{")]
    assert not [m for m in said if m.startswith("default/a: created")], "a dry run never says it created"
    settle(cluster)
    assert_scrapes(r)
    mine = [w for w in cluster.writes() if r.ours(w) and not w.path.endswith("reviews")]
    assert mine == [], [(w.method, w.path) for w in mine]
    assert deployment(cluster, "a") is None and not events(cluster, "a")
    counted = {n: sum(v for (name, _), v in r.samples().items() if name == n)
               for n in ("memcached_gitops_drift_corrections_total", "memcached_gitops_drift_detected_total")}
    assert counted["memcached_gitops_drift_corrections_total"] == 0, "nothing was corrected: the dashboard must not say so"
    assert counted["memcached_gitops_drift_detected_total"] >= 1, counted
    assert r.terminate() == 0
