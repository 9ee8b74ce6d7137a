"""The event-driven mode over real HTTP against the fake API server (which serves WATCH as
transcripts 30-33 show). Each scenario asserts on the fake's state and on its request log,
whose receive times are taken as the API server's audit log takes them.

The resync period is an hour in these scenarios (unless a scenario is about the resync), so a
correction seen within seconds came from a WATCH event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from memcached_gitops.foundation.clocks import SYSTEM_CLOCK, Monotonic, WallTime
from memcached_gitops.reconciler.client.informer import Kind
from memcached_gitops.reconciler.decisions.fights import FightDetector
from memcached_gitops.reconciler.orchestration.controller import Controller, Settings
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.schemas import load_crd

from fakeapi.server import FakeAPIServer, Fault
from tests.support.controller import HOUR, SCALE, client, replicas, running, settle, wait_for
from tests.support.fakecluster import CR_PATH, DEP_PATH, condition, cr_status, deployment, make_cr, patch


def deployment_writes(api: FakeAPIServer, since: float = 0.0) -> list:
    return [r for r in api.writes() if "/deployments/" in r.path and r.received >= since]


def lists(api: FakeAPIServer, since: float = 0.0) -> list:
    return [r for r in api.log if r.method == "GET" and r.query.get("watch") != "true" and r.received >= since
            and r.path.rsplit("/", 1)[-1] in ("memcacheds", "deployments", "pods")]


def test_a_new_cr_costs_an_apply_of_each_object_and_one_status_write_then_nothing(cluster: FakeAPIServer) -> None:
    with running(cluster):
        started = time.monotonic()
        make_cr(cluster, "a", size=2)
        wait_for(lambda: condition(cluster, "a", "Available"), what="status")
        settle(cluster)
        writes = [f"{r.method} {r.path}" for r in cluster.writes() if r.received >= started and r.user_agent.startswith("memcached")]
        assert sorted(writes) == ["PATCH /api/v1/namespaces/default/services/a-memcached",
                                  "PATCH /apis/apps/v1/namespaces/default/deployments/a",
                                  "PATCH /apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/a/status",
                                  "PATCH /apis/policy/v1/namespaces/default/poddisruptionbudgets/a-memcached",
                                  "POST /api/v1/namespaces/default/events"], \
            "one Event names the three objects; the status write's MODIFIED event ends in no write"
        # no LIST after the first sync: a foreign Pod with the CR's labels, which keeps the new Service and budget
        # from being created, is in the cache of every Pod our selectors could select
        assert lists(cluster, started) == []
        assert [r.method for r in cluster.log if r.received >= started and r.path.endswith("/deployments/a")] == ["PATCH"], \
            "no GET: the name index says no Deployment holds the name (a foreign one would be read, never taken over)"


@pytest.mark.parametrize("change", ["scale", "set-image", "delete"])
def test_drift_is_corrected_from_the_event(cluster: FakeAPIServer, change: str) -> None:
    make_cr(cluster, "a")
    with running(cluster) as controller:
        wait_for(lambda: condition(cluster, "a", "Available"))
        settle(cluster)
        cluster.reset_log()
        if change == "scale":
            patch(cluster, SCALE, {"spec": {"replicas": 5}}, "application/merge-patch+json")
            wait_for(lambda: replicas(cluster) == 1, what="the scale undone")
        elif change == "set-image":
            body = {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "memcached"}],
                                                   "containers": [{"name": "memcached", "image": "memcached:1.5"}]}}}}
            patch(cluster, DEP_PATH.format(ns="default", name="a"), body, "application/strategic-merge-patch+json",
                  "?fieldManager=kubectl-set")
            wait_for(lambda: deployment(cluster, "a")["spec"]["template"]["spec"]["containers"][0]["image"] != "memcached:1.5")
        else:
            cluster.handle("DELETE", DEP_PATH.format(ns="default", name="a"), {"User-Agent": "kubectl/v1.37.1"}, b"")
            wait_for(lambda: deployment(cluster, "a") is not None, what="the Deployment re-created")
        settle(cluster)
        ours = [r for r in cluster.writes() if r.user_agent.startswith("memcached") and "/deployments/" in r.path]
        assert len(ours) == 1, "one apply per correction"
        status_writes = [r for r in cluster.writes() if r.path.endswith("/status")]
        assert len(status_writes) <= 1, "at most one status write per correction"
        assert lists(cluster) == []
        latency = "memcached_gitops_drift_correction_latency_seconds_count"
        if change != "delete":  # observed once the correction's answer is back, which may come after the write is seen
            wait_for(lambda: controller.metrics.value(latency) >= 1, what="the correction's latency observed")
        assert controller.metrics.value(latency) == (0 if change == "delete" else 1)


def test_a_spec_change_and_a_new_cr_are_acted_on_from_the_event(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    with running(cluster):
        wait_for(lambda: replicas(cluster) == 1)
        patch(cluster, CR_PATH.format(ns="default") + "/a", {"spec": {"size": 3}}, "application/merge-patch+json")
        wait_for(lambda: replicas(cluster) == 3, what="the new size")
        make_cr(cluster, "b", ns="shop", size=2)
        wait_for(lambda: cluster.get("apps", "deployments", "shop", "b"), what="b's Deployment")


def test_a_resync_that_finds_nothing_writes_nothing_and_lists_nothing(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    with running(cluster, settings=Settings(workers=2, resync=0.3, watch_timeout=30)) as controller:
        wait_for(lambda: condition(cluster, "a", "Available"))
        settle(cluster)
        cluster.reset_log()
        resyncs = controller.resyncs
        wait_for(lambda: controller.resyncs >= resyncs + 3, what="three resyncs")
        assert cluster.writes() == [] and lists(cluster) == []


@pytest.mark.parametrize("fault", ["expired", "dropped", "silent", "restart"])
def test_watch_failures_are_recovered(cluster: FakeAPIServer, fault: str) -> None:
    """410 (32), a cut stream, a stream gone silent, an API server restart: the drift made meanwhile is still corrected."""
    make_cr(cluster, "a")
    settings = Settings(workers=2, resync=HOUR, watch_timeout=30, heartbeat=0.5 if fault == "silent" else 60, silence_grace=0.5)
    with running(cluster, settings=settings) as controller:
        wait_for(lambda: condition(cluster, "a", "Available"))
        settle(cluster)
        cluster.reset_log()
        if fault == "expired":
            cluster.compact()
            cluster.drop_watches()
        elif fault == "dropped":
            cluster.drop_watches()
        elif fault == "silent":
            cluster.silence_watches()
        else:
            cluster.restart(downtime=0.3)
        patch(cluster, SCALE, {"spec": {"replicas": 4}}, "application/merge-patch+json")
        wait_for(lambda: replicas(cluster) == 1, timeout=15, what="the scale undone after the fault")
        restarts = {reason: controller.metrics.value("memcached_gitops_watch_restarts_total", {"kind": "Deployment", "reason": reason})
                    for reason in ("expired", "dropped", "silent")}
        if fault == "expired":
            assert restarts["expired"] >= 1 and lists(cluster), "a 410 leads to a new LIST"
        elif fault == "silent":
            assert restarts["silent"] >= 1
        else:
            assert restarts["dropped"] >= 1
        if fault == "restart":
            assert restarts["expired"] >= 1, "the restarted server's history starts anew: resuming is a 410, then a LIST"


def fight_until_degraded(cluster: FakeAPIServer, fighter: Callable[[], None], stop: threading.Event, linger: float) -> float:
    """Run ``fighter`` until the CR ``a`` is Degraded by a fight, ``linger`` seconds more, then stop it;
    when it started (monotonic)."""
    t = threading.Thread(target=fighter, daemon=True)
    started = time.monotonic()
    t.start()
    try:
        wait_for(lambda: condition(cluster, "a", "Degraded").get("reason") == "FieldManagerFight", what="Degraded")
        time.sleep(linger)
    finally:
        stop.set()
        t.join()
    return started


def test_a_fight_with_a_second_writer_is_detected_backed_off_and_reported(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    stop = threading.Event()

    def fighter() -> None:  # an HPA-like writer that wants 4 replicas, reacting at once
        while not stop.is_set():
            if replicas(cluster) != 4:
                cluster.handle("PATCH", SCALE, {"User-Agent": "autoscaler/1.0", "Content-Type": "application/merge-patch+json"},
                               b'{"spec":{"replicas":4}}')
            time.sleep(0.002)

    detector = FightDetector(threshold=3, window=60, base=1.0, cap=4.0)
    with running(cluster, fights=detector) as controller:
        wait_for(lambda: condition(cluster, "a", "Available"))
        settle(cluster)
        started = fight_until_degraded(cluster, fighter, stop, linger=4)
        elapsed = time.monotonic() - started
        degraded = condition(cluster, "a", "Degraded")
        assert degraded["status"] == "True"
        assert ".spec.replicas" in degraded["message"] and "autoscaler (scale)" in degraded["message"]
        applies = [r for r in deployment_writes(cluster, started) if r.user_agent.startswith("memcached")]
        # 4 corrections to detect it, then one per backoff (1 s, 2 s, 4 s): far from hundreds a second
        assert 4 <= len(applies) <= 4 + 4, f"{len(applies)} applies in {elapsed:.1f}s"
        assert controller.metrics.value("memcached_gitops_fights_total", {"field": ".spec.replicas", "manager": "autoscaler (scale)"}) >= 1
        warnings = [o for k, o in cluster.objects.items() if k[1] == "events" and o.get("reason") == "FightDetected"]
        assert warnings and warnings[0]["type"] == "Warning" and "autoscaler (scale)" in warnings[0]["message"]


def test_a_fight_over_a_field_of_the_budget_is_detected_backed_off_and_names_the_budget(cluster: FakeAPIServer) -> None:
    """The companions' corrections feed the fight detector as the Deployment's do: a bot that keeps
    setting the budget's maxUnavailable back is a fight of the PodDisruptionBudget, named as such."""
    budget = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/a-memcached"
    make_cr(cluster, "a", size=3)
    stop = threading.Event()

    def fighter() -> None:  # a platform bot that wants maxUnavailable 2, reacting at once
        while not stop.is_set():
            live = cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached")
            if live is not None and live["spec"].get("maxUnavailable") != 2:
                cluster.handle("PATCH", budget + "?fieldManager=platform-bot",
                               {"User-Agent": "platform-bot/1.0", "Content-Type": "application/merge-patch+json"},
                               b'{"spec":{"maxUnavailable":2}}')
            time.sleep(0.002)

    detector = FightDetector(threshold=3, window=60, base=1.0, cap=4.0)
    with running(cluster, fights=detector) as controller:
        wait_for(lambda: cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached"), what="the budget")
        settle(cluster)
        started = fight_until_degraded(cluster, fighter, stop, linger=2)
        message = condition(cluster, "a", "Degraded")["message"]
        assert message.startswith(".spec.maxUnavailable of PodDisruptionBudget default/a-memcached was corrected "), message
        assert "field manager platform-bot;" in message
        applies = [r for r in cluster.writes() if r.received >= started and "/poddisruptionbudgets/" in r.path
                   and r.user_agent.startswith("memcached")]
        assert 4 <= len(applies) <= 4 + 3, f"4 corrections to detect it, then one per backoff (1 s, 2 s): {len(applies)}"
        assert controller.metrics.value("memcached_gitops_fights_total",
                                        {"field": "PodDisruptionBudget .spec.maxUnavailable", "manager": "platform-bot"}) >= 1
        warnings = [o for k, o in cluster.objects.items() if k[1] == "events" and o.get("reason") == "FightDetected"]
        assert warnings and "PodDisruptionBudget default/a-memcached" in warnings[0]["message"]


def test_detect_only_reports_drift_and_never_writes_a_deployment(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    make_cr(cluster, "b")
    Reconciler(client(cluster), load_crd(), Options()).run_cycle()  # a's and b's Deployments exist
    patch(cluster, SCALE, {"spec": {"replicas": 3}}, "application/merge-patch+json")
    cluster.reset_log()
    with running(cluster, detect_only=True) as controller:
        wait_for(lambda: condition(cluster, "a", "Degraded").get("reason") == "DriftDetected", what="drift reported")
        make_cr(cluster, "c")
        wait_for(lambda: condition(cluster, "c", "Degraded").get("reason") == "DriftDetected", what="c reported")
        settle(cluster)
        assert deployment_writes(cluster) == [], "no write to any Deployment"
        assert deployment(cluster, "c") is None and replicas(cluster) == 3
        message = condition(cluster, "a", "Degraded")["message"]
        assert ".spec.replicas: live 3, desired 1 (set by kubectl (scale))" in message
        assert controller.metrics.value("memcached_gitops_drift_detected_total", {"field": ".spec.replicas"}) >= 1
        events = [o for k, o in cluster.objects.items() if k[1] == "events" and o.get("reason") == "DriftDetected"]
        assert {e["involvedObject"]["name"] for e in events} == {"a", "c"}
    assert condition(cluster, "b", "Degraded")["status"] == "False"


def test_detect_only_in_the_once_mode(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    patch(cluster, SCALE, {"spec": {"replicas": 3}}, "application/merge-patch+json")
    cluster.reset_log()
    report = Reconciler(client(cluster), load_crd(), Options(detect_only=True)).run_cycle()
    assert [o.action for o in report.outcomes] == ["drifted"]
    assert deployment_writes(cluster) == [] and replicas(cluster) == 3
    assert condition(cluster, "a", "Degraded")["reason"] == "DriftDetected"


def test_two_replicas_never_both_write(cluster: FakeAPIServer) -> None:
    """From the request log: while one replica leads, the other writes nothing but its Lease tries."""
    make_cr(cluster, "a")
    # client-go's 15 / 10 / 2 scaled down, not so far that a busy machine's stalled renewal lets the Lease
    # expire while replica-1 still leads (the standby then takes it, rightly, and the release is a 409)
    lease = (4.0, 3.0, 0.2)
    with running(cluster, identity="replica-1", elect=True, lease=lease) as one:
        with running(cluster, identity="replica-2", elect=True, lease=lease, wait_leader=False) as two:
            wait_for(lambda: two.metrics.ready)
            # the leader creates the Deployment on its own time: scaling it before then is a 404 (a busy machine)
            wait_for(lambda: deployment(cluster, "a"), what="the leader's Deployment")
            for n in range(3):
                patch(cluster, SCALE, {"spec": {"replicas": 3 + n}}, "application/merge-patch+json")
                wait_for(lambda: replicas(cluster) == 1)
            assert one.metrics.leader and not two.metrics.leader
            wait_for(lambda: two.metrics.holder == "replica-1", what="the standby reads who holds the Lease")
            one.stop.set()  # SIGTERM: drains, releases the Lease
            wait_for(lambda: two.leading.is_set(), timeout=15, what="the standby takes over")
            patch(cluster, SCALE, {"spec": {"replicas": 5}}, "application/merge-patch+json")
            wait_for(lambda: replicas(cluster) == 1, what="corrected by the new leader")
    # As the API server saw it (the request log's arrival times, as an audit log stamps them): the
    # standby took the released Lease before the old term could have expired, so it did not wait out
    # the lease duration.
    lease_writes = [r for r in cluster.log if "/leases/" in r.path and r.method in ("PATCH", "PUT") and r.status == 200]
    released = next(r.received for r in lease_writes if r.user_agent.endswith("replica-1") and b'"holderIdentity": null' in r.body)
    taken = next(r.received for r in lease_writes if r.user_agent.endswith("replica-2") and r.received > released)
    assert taken - released < lease[0], "a released Lease is taken before its term would have run out"
    writes = [r for r in cluster.writes() if "/leases/" not in r.path and r.user_agent.startswith("memcached")]
    by_replica = [r.user_agent.rsplit(" ", 1)[-1] for r in writes]
    first_two = by_replica.index("replica-2")
    assert set(by_replica[:first_two]) == {"replica-1"} and set(by_replica[first_two:]) == {"replica-2"}, by_replica


def test_a_leader_that_cannot_renew_stops_writing_within_the_deadline(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    deadline = 1.0
    with running(cluster, elect=True, lease=(1.5, deadline, 0.1)) as controller:
        wait_for(lambda: condition(cluster, "a", "Available"))
        cluster.faults.append(Fault(method="PUT", path_contains="/leases/", status=500, times=10_000))
        refused_from = time.monotonic()
        wait_for(lambda: not controller.leading.is_set(), timeout=5, what="leadership lost")
        lost = time.monotonic() - refused_from
        patch(cluster, SCALE, {"spec": {"replicas": 4}}, "application/merge-patch+json")
        time.sleep(0.5)
        assert replicas(cluster) == 4, "no correction once leadership is lost"
        renewals = [r.received for r in cluster.log if "/leases" in r.path and r.method in ("POST", "PUT") and r.status in (200, 201)]
        last_write = max(r.received for r in cluster.writes() if "/leases/" not in r.path and r.user_agent.startswith("memcached"))
        assert last_write < renewals[-1] + deadline, "every write within the renew deadline of the last renewal"
        assert lost < deadline + 0.5
        assert controller.metrics.value("memcached_gitops_leader") == 0
        cluster.faults.clear()
        wait_for(lambda: replicas(cluster) == 1, timeout=5, what="corrected once the Lease is renewed again")


def test_sigterm_drains_the_current_item_and_releases_the_lease(cluster: FakeAPIServer) -> None:
    make_cr(cluster, "a")
    fault = Fault(method="PATCH", path_contains="/deployments/a", status=0, delay=0.8, times=1)
    cluster.faults.append(fault)
    with running(cluster, elect=True, lease=(15, 10, 2)) as controller:
        wait_for(lambda: fault.times == 0, what="the apply taken by the fault")
        time.sleep(0.2)  # the apply is in flight
        controller.stop.set()
    assert controller.exit_code == 0  # type: ignore[attr-defined]
    assert deployment(cluster, "a") is not None, "the CR being reconciled was finished"
    lease = cluster.get("coordination.k8s.io", "leases", "default", "memcached-gitops-leader")
    assert lease["spec"].get("holderIdentity") is None, "released"


def test_a_malformed_request_stops_with_a_clear_error(cluster: FakeAPIServer) -> None:
    kube = client(cluster)
    reconciler = Reconciler(kube, load_crd(), Options())
    controller = Controller(reconciler, Metrics(), None, Settings(workers=1, resync=HOUR))
    for informer in controller.informers["Pod"]:  # a selector the server cannot parse (32)
        informer.kind = Kind("Pod", "", "v1", "pods", "a in (", metadata_only=True)
    started = time.monotonic()
    assert controller.run(first_sync_timeout=10) == 2
    assert time.monotonic() - started < 5
    assert "HTTP 400" in controller.error and "pods" in controller.error
    assert sum(1 for r in cluster.log if "/pods" in r.path) <= 2, "not a retry loop"


def test_metrics_and_probes_say_who_leads(cluster: FakeAPIServer) -> None:
    """/metrics is scraped over HTTP and parsed with prometheus_client's own parser; /readyz names the leader."""
    import urllib.error
    import urllib.request

    from memcached_gitops.reconciler.orchestration.serving import serve
    from prometheus_client.parser import text_string_to_metric_families

    def scrape(port: int) -> dict:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}

    make_cr(cluster, "a")
    lease = (15, 10, 0.1)
    with running(cluster, identity="replica-1", elect=True, lease=lease) as one:
        with running(cluster, identity="replica-2", elect=True, lease=lease, wait_leader=False) as two:
            servers = [serve(c.metrics, 0, "127.0.0.1") for c in (one, two)]
            ports = [s.server_address[1] for s in servers]
            try:
                wait_for(lambda: condition(cluster, "a", "Available"))
                patch(cluster, SCALE, {"spec": {"replicas": 3}}, "application/merge-patch+json")
                wait_for(lambda: one.metrics.value("memcached_gitops_drift_corrections_total", {"field": ".spec.replicas"}))
                wait_for(lambda: two.metrics.holder == "replica-1")
                leader, standby = scrape(ports[0]), scrape(ports[1])
                assert leader[("memcached_gitops_leader", ())] == 1 and standby[("memcached_gitops_leader", ())] == 0
                assert standby[("memcached_gitops_lease_holder", (("identity", "replica-1"),))] == 1
                assert leader[("memcached_gitops_drift_corrections_total", (("field", ".spec.replicas"),))] == 1
                assert leader[("memcached_gitops_drift_correction_latency_seconds_count", ())] == 1
                assert leader[("memcached_gitops_watch_events_total", (("kind", "Deployment"), ("type", "MODIFIED")))] >= 2
                assert leader[("memcached_gitops_api_requests_total", (("verb", "apply"),))] >= 2
                assert leader[("memcached_gitops_work_duration_seconds_count", ())] >= 2
                assert ("memcached_gitops_workqueue_depth", ()) in leader
                ready = [urllib.request.urlopen(f"http://127.0.0.1:{p}/readyz").read().decode() for p in ports]
                assert ready == ["ready: this replica leads\n", "ready: standby\n"], "/readyz names no other replica: it answers anyone"
                assert urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/healthz").status == 200
            finally:
                for s in servers:
                    s.shutdown()


def test_not_ready_before_the_first_sync() -> None:
    import urllib.error
    import urllib.request

    from memcached_gitops.reconciler.orchestration.serving import serve

    metrics = Metrics()
    server = serve(metrics, 0, "127.0.0.1")
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/readyz")
        assert err.value.code == 503
    finally:
        server.shutdown()


def annotate(cluster: FakeAPIServer, name: str, value: str) -> None:
    patch(cluster, CR_PATH.format(ns="default") + "/" + name,
          {"metadata": {"annotations": {"cache.example.com/reconcile": value}}}, "application/merge-patch+json")


def test_one_cr_can_be_paused_or_set_to_detect_only_by_its_annotation(cluster: FakeAPIServer) -> None:
    """Flux's reconcile: disabled, and the per-object detect-only Flux users ask for: a person's say
    on one cache, the rest corrected as usual (in both modes, the CR's annotation wins over nothing)."""
    for name in ("paused", "watched", "normal"):
        make_cr(cluster, name)
    Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    annotate(cluster, "paused", "disabled")
    annotate(cluster, "watched", "detect-only")
    for name in ("paused", "watched", "normal"):
        patch(cluster, DEP_PATH.format(ns="default", name=name) + "/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    cluster.reset_log()
    report = Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    actions = {o.name: o.action for o in report.outcomes}
    assert actions == {"paused": "suspended", "watched": "drifted", "normal": "corrected"}
    assert deployment(cluster, "paused")["spec"]["replicas"] == 3 and deployment(cluster, "watched")["spec"]["replicas"] == 3
    assert deployment(cluster, "normal")["spec"]["replicas"] == 1
    writes = [r.path for r in cluster.log if r.method in ("PATCH", "PUT", "POST")]
    assert [p for p in writes if "/paused" in p] == [CR_PATH.format(ns="default") + "/paused/status"], \
        "nothing is written for a paused CR but the status that says so"
    [paused] = cr_status(cluster, "paused")["conditions"]
    assert (paused["type"], paused["status"], paused["reason"]) == ("Ready", "False", "ReconcileDisabled"), \
        "the conditions replaced by one: an old DriftDetected or Ready=True would say what is no longer watched"
    assert cr_status(cluster, "paused")["reason"] == "ReconcileDisabled"
    cluster.reset_log()
    Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    assert not [r for r in cluster.log if r.method != "GET" and "/paused" in r.path], "said once"
    annotate(cluster, "paused", "enabled")
    Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    assert deployment(cluster, "paused")["spec"]["replicas"] == 1, "leaving it resumes"
    assert {c["type"] for c in cr_status(cluster, "paused")["conditions"]} >= {"Available", "Progressing", "Degraded", "Ready"}
    assert "cache.example.com/reconcile: detect-only" in condition(cluster, "watched", "Degraded")["message"]
    annotate(cluster, "paused", "enabeld")  # a typo is said, not taken for enabled
    report = Reconciler(client(cluster), load_crd(), Options()).run_cycle()
    assert {o.name: o.action for o in report.outcomes}["paused"] == "invalid"
    assert "Unsupported value: 'enabeld'" in condition(cluster, "paused", "Degraded")["message"]


def test_a_stuck_informer_fails_the_liveness_probe_of_a_running_controller(cluster: FakeAPIServer) -> None:
    """kopf#787 and #957: a watch that stalls silently until a restart. Here the controller's own
    liveness check sees an informer that made no progress past its limit, and names it."""
    make_cr(cluster, "a")
    with running(cluster) as controller:
        wait_for(lambda: controller.metrics.ready, what="synced")
        assert controller.metrics.liveness() == (True, "ok\n")
        [deployments] = controller.informers["Deployment"]
        deployments.stall_limit = -1.0  # any quiet is past it: as if its thread had hung (events cannot race the check)
        ok, text = controller.metrics.liveness()
        assert not ok and text.startswith("unhealthy: deployments informer: no event, LIST or reconnection for")
    assert controller.metrics.liveness() == (True, "ok\n"), "stopped informers are not stuck ones"


def test_a_change_to_the_service_or_budget_is_put_back_from_its_watch_event(cluster: FakeAPIServer) -> None:
    """The Service and budget have informers of their own: a person's edit comes as an event and is
    corrected by one apply; the budget is deleted when the CR asks for one Pod; the CR's events
    (not a resync) drive both."""
    svc = "/api/v1/namespaces/default/services/a-memcached"
    with running(cluster):
        make_cr(cluster, "a", size=2)
        wait_for(lambda: cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached"), what="the budget")
        settle(cluster)
        started = time.monotonic()
        patch(cluster, svc, {"spec": {"selector": {"app.kubernetes.io/name": "other"}}}, "application/merge-patch+json")
        wait_for(lambda: cluster.get("", "services", "default", "a-memcached")["spec"]["selector"]["app.kubernetes.io/name"]
                 == "memcached", what="the selector put back")
        settle(cluster)
        ours = [f"{r.method} {r.path}" for r in cluster.writes() if r.received >= started and r.user_agent.startswith("memcached")]
        assert ours.count(f"PATCH {svc}") == 1, ours
        patch(cluster, CR_PATH.format(ns="default") + "/a", {"spec": {"size": 1}}, "application/merge-patch+json")
        wait_for(lambda: cluster.get("policy", "poddisruptionbudgets", "default", "a-memcached") is None, what="the budget gone")
        settle(cluster)
        assert lists(cluster, started) == [], "no LIST: events only"


def test_the_printer_columns_fill_in_once_the_crd_can_be_read_without_a_restart(cluster: FakeAPIServer) -> None:
    """The issue's finding 4: started before its RBAC let it read the CRD, the reconciler wrote only
    conditions and nodes, and READY and STATUS stayed empty until a restart."""
    cluster.faults.append(Fault(method="GET", path_contains="/customresourcedefinitions/memcacheds.cache.example.com", status=403, times=1))
    make_cr(cluster, "a")
    settings = Settings(workers=1, resync=HOUR, watch_timeout=30, silence_grace=1, schema_retry=0.2)
    with running(cluster, settings=settings):
        wait_for(lambda: condition(cluster, "a", "Ready"), what="the first status")
        wait_for(lambda: cr_status(cluster, "a").get("ready") == "0/1", what="the READY column, once the CRD is readable")
        assert cr_status(cluster, "a")["reason"]


def test_the_crd_once_read_is_not_read_again_and_the_resync_keeps_its_interval(cluster: FakeAPIServer) -> None:
    """The served CRD is read again only while it could not be read: once read (at the start or by a
    retry), no more GETs of it every schema_retry, and no extra resync of every CR with them (the
    resync's period is --interval's, never schema_retry's)."""
    crd_path = "/customresourcedefinitions/memcacheds.cache.example.com"
    cluster.faults.append(Fault(method="GET", path_contains=crd_path, status=403, times=1))
    make_cr(cluster, "a")
    settings = Settings(workers=1, resync=HOUR, watch_timeout=30, silence_grace=1, schema_retry=0.2)
    with running(cluster, settings=settings) as controller:
        wait_for(lambda: cr_status(cluster, "a").get("ready") == "0/1", what="the READY column, once the CRD is readable")
        read = [r for r in cluster.log if r.method == "GET" and crd_path in r.path]
        time.sleep(1.5)  # several schema_retry periods
        again = [r for r in cluster.log if r.method == "GET" and crd_path in r.path]
        resyncs = controller.resyncs
    assert len(read) == 2 and len(again) == 2, "refused once, read once, then never again"
    assert resyncs == 1, "one resync when the CRD became readable, none after"


class _StalledClock:
    """The system's clocks, the monotonic one moved forward at once by ``stall`` (a paused VM, a node
    suspended, a CPU-throttled container: the process runs again long after it last looked)."""

    def __init__(self) -> None:
        self.stall = 0.0

    def monotonic(self) -> Monotonic:
        return Monotonic(SYSTEM_CLOCK.monotonic().seconds + self.stall)

    def wall(self) -> WallTime:
        return SYSTEM_CLOCK.wall()


def test_after_a_stall_of_many_periods_the_resync_runs_once_and_keeps_its_period(cluster: FakeAPIServer) -> None:
    """A resync is due one period after the last one ran, not after the last one was due: a process that
    wakes from a stall of ten periods resyncs once (every CR queued once), never ten times in a row."""
    make_cr(cluster, "a")
    clock = _StalledClock()
    controller = Controller(Reconciler(client(cluster), load_crd(), Options()), Metrics(), None,
                            Settings(workers=1, resync=60.0, watch_timeout=30, silence_grace=1), clock=clock)
    thread = threading.Thread(target=controller.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: controller.metrics.ready, what="the first sync")
        settle(cluster)
        before = controller.resyncs
        clock.stall += 600.0
        wait_for(lambda: controller.resyncs > before, timeout=60, what="the resync due after the stall")
        time.sleep(2.5)  # the run loop looks at least once a second
        assert controller.resyncs == before + 1
    finally:
        controller.stop.set()
        thread.join(30)
