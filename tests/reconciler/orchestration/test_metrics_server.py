"""The probe and metrics server under hostile clients: idle or half-sent connections cannot hold
threads (a request timeout and a bound on connections), and a client that goes away leaves one
debug line, never a traceback in the JSON log."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
from memcached_gitops.reconciler.orchestration import serving as metrics_module
from memcached_gitops.reconciler.orchestration.metrics import Metrics
from memcached_gitops.reconciler.orchestration.serving import METRICS, PROBES, serve


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(metrics_module, "REQUEST_TIMEOUT", 0.5)
    metrics = Metrics()
    server = serve(metrics, 0, "127.0.0.1")
    server.served_metrics = metrics  # for the tests: the Metrics whose checks /healthz asks
    yield server
    server.shutdown()
    server.server_close()


def get(server, path: str = "/healthz") -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}{path}", timeout=5) as response:
        return response.status


def test_half_sent_requests_hold_no_more_than_the_bound_and_time_out(server) -> None:
    before = threading.active_count()
    idle = []
    for _ in range(200):
        s = socket.create_connection(server.server_address)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
        idle.append(s)
    time.sleep(0.2)
    assert threading.active_count() - before <= metrics_module.MAX_CONNECTIONS, "one thread per connection, at most the bound"
    time.sleep(1.0)  # past the request timeout: the half-sent ones are closed and their slots freed
    assert get(server) == 200
    for s in idle:
        s.close()


def test_a_client_that_goes_away_is_one_debug_line_not_a_traceback(server, capsys, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        server.handle_error(None, ("127.0.0.1", 1))
    assert capsys.readouterr().err == ""
    assert [r.getMessage() for r in caplog.records] == [
        "metrics server: ConnectionResetError from ('127.0.0.1', 1): [Errno 104] Connection reset by peer"]


def test_probes_and_metrics_still_answer(server) -> None:
    assert get(server, "/healthz") == 200 and get(server, "/metrics") == 200



def test_healthz_fails_while_a_check_says_why(server) -> None:
    """A liveness probe that cannot fail cannot restart a process whose watches stopped moving."""
    from urllib.error import HTTPError

    problem: list[str] = []
    server.served_metrics.health_checks.append(lambda: problem[0] if problem else None)
    assert get(server) == 200
    problem.append("deployments informer: no event, LIST or reconnection for 200s (limit 100s)")
    with pytest.raises(HTTPError) as failed:
        get(server)
    assert failed.value.code == 503 and b"unhealthy: deployments informer: no event" in failed.value.read()


def test_an_informer_is_stalled_only_while_running_and_past_its_limit() -> None:
    from memcached_gitops.reconciler.client.informer import Informer, Kind

    informer = Informer(None, Kind("Deployment", "apps", "v1", "deployments"), lambda *a: None, heartbeat=60, silence_grace=10,
                        watch_timeout=300, backoff_cap=30)
    assert informer.stall_limit == 70 + 30
    informer.active_at -= 1000
    assert informer.stalled() is None, "not started (a standby's informers): never stalled"
    informer.started = True
    assert "no event, LIST or reconnection for 1000s" in (informer.stalled() or "")
    informer.active_at = time.monotonic() - 101
    assert "deployments informer: no event, LIST or reconnection for 101s (limit 100s)" == informer.stalled()
    informer.active_at = time.monotonic() - 99
    assert informer.stalled() is None
    informer.active_at = time.monotonic() - 1000
    informer.error = "deployments: the API server refuses the request: 404"
    assert informer.stalled() is None, "gave up on an answer a restart would not change: logged, not a restart loop"
    informer.stop.set()
    assert informer.stalled() is None, "stopped on purpose (leadership lost, shutdown)"


@pytest.mark.parametrize("flag", ["--health-probe-port", "--metrics-port"])
def test_a_port_another_reconciler_holds_is_one_line_naming_the_flag(flag: str, tmp_path) -> None:
    """A second reconciler on the same host (8081 or 8443 taken): exit 2, one line, no traceback."""
    import json
    import subprocess
    import sys

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                                      "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                                      "users": [{"name": "u", "user": {"token": "t"}}],
                                      "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        ports = {"--health-probe-port": "0", "--metrics-port": "0", flag: port}
        proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "reconcile", "--kubeconfig", str(kubeconfig),
                               "--no-leader-elect", "--health-probe-bind-address", "127.0.0.1", "--metrics-bind-address",
                               "127.0.0.1", *[a for item in ports.items() for a in item]], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"error: cannot listen on 127.0.0.1:{port} ({flag}): Address already in use\n"


def _connect(server, source: str = "127.0.0.1") -> socket.socket:
    s = socket.socket()
    s.bind((source, 0))
    s.connect(server.server_address)
    return s


def _closed_by_server(s: socket.socket, seconds: float) -> bool:
    """Whether the server closed ``s`` while it sent a byte every 0.1 s for ``seconds``."""
    s.settimeout(0.1)
    for _ in range(int(seconds / 0.1)):
        try:
            s.sendall(b"X")
            if s.recv(1024) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def test_a_client_trickling_a_byte_at_a_time_is_cut_at_the_requests_deadline(server) -> None:
    """Each byte comes well within the per-read timeout (0.5 s here); the request's deadline cuts it."""
    slow = _connect(server)
    slow.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
    try:
        assert _closed_by_server(slow, seconds=5.0), "a byte every 0.1 s held the connection past its deadline"
    finally:
        slow.close()
    assert get(server) == 200


def test_headers_over_the_cap_get_431_before_anything_else() -> None:
    metrics = Metrics()
    asked: list[str] = []
    server = serve(metrics, 0, "127.0.0.1", paths=("/metrics",), guard=lambda m, p, a: asked.append(a) or (401, "Unauthorized"))
    try:
        s = socket.create_connection(server.server_address)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-Flood-%d: %s\r\n" % (i, b"a" * 1000) for i in range(12)))
        answer = s.recv(4096)
        s.close()
        assert answer.startswith(b"HTTP/1.0 431 "), answer[:60]
        assert asked == [], "refused before the guard (and its TokenReview) is reached"
        small = socket.create_connection(server.server_address)
        small.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n")
        assert small.recv(4096).startswith(b"HTTP/1.0 401 ") and asked == ["Bearer t"]
        small.close()
    finally:
        server.shutdown()
        server.server_close()


def _held(server, count: int) -> None:
    """Wait (at most 10 s) until ``server`` holds ``count`` connections."""
    deadline = time.monotonic() + 10
    while len(server.held) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(server.held) == count


def test_one_client_cannot_take_every_slot_and_probes_answer_while_metrics_are_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client holding connections gets its share (MAX_PER_CLIENT) and the kubelet (another
    address) still gets /healthz; a server whose every slot is held by many addresses refuses one
    of them a second slot, while a newcomer takes the oldest slot of the biggest holder."""
    monkeypatch.setattr(metrics_module, "REQUEST_TIMEOUT", 30.0)  # the hogs stay for the whole test
    probes, metrics = serve(Metrics(), 0, "127.0.0.1", paths=PROBES), serve(Metrics(), 0, "127.0.0.1", paths=METRICS)
    hogs = [_connect(probes, "127.0.0.2") for _ in range(metrics_module.MAX_CONNECTIONS)]
    crowd = [_connect(metrics, f"127.0.1.{i}") for i in range(metrics_module.MAX_CONNECTIONS)]
    try:
        _held(probes, metrics_module.MAX_PER_CLIENT)
        assert get(probes, "/healthz") == 200, "the probe's address still has its share"
        _held(metrics, metrics_module.MAX_CONNECTIONS)
        again = _connect(metrics, "127.0.1.0")
        assert _closed_by_server(again, seconds=2.0), "full, and this address holds a slot already: refused"
        again.close()
        assert get(metrics, "/metrics") == 200, "a newcomer is served, in the slot of the oldest of the biggest holders"
        assert get(probes, "/healthz") == 200
    finally:
        for s in hogs + crowd:
            s.close()
        for server in (probes, metrics):
            server.shutdown()
            server.server_close()


def test_a_query_string_does_not_hide_the_path(server) -> None:
    """Prometheus appends its scrape config's ``params``: /metrics?x=y is /metrics."""
    assert get(server, "/metrics?format=prometheus&x=y") == 200 and get(server, "/healthz?verbose") == 200


def test_readyz_names_no_other_replica() -> None:
    metrics = Metrics()
    metrics.ready = True
    metrics.holder = "memcached-gitops-7d9f-abcde"
    ok, text = metrics.readiness()
    assert ok and text == "ready: standby\n" and "abcde" not in text
    metrics.leader = True
    assert metrics.readiness() == (True, "ready: this replica leads\n")


def test_a_request_line_over_the_cap_is_answered_414(server) -> None:
    """A URL over HEADER_LIMIT is refused with 414 URI Too Long, not a connection dropped unanswered."""
    s = socket.create_connection(server.server_address)
    s.sendall(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = s.recv(4096)
    s.close()
    assert answer.startswith(b"HTTP/1.0 414 "), answer[:60]
    assert get(server) == 200


def test_metrics_are_in_the_text_exposition_format_and_probes_in_plain_text(server) -> None:
    """/metrics says which exposition format and version its body is in, the one
    prometheus_client's generate_latest writes (its CONTENT_TYPE_LATEST, ``text/plain;
    version=...``): a scraper chooses its parser from the answer's Content-Type (Prometheus
    model/textparse), and a bare ``text/plain`` does not say which text format it is. The probes
    answer plain UTF-8 text."""
    from prometheus_client import CONTENT_TYPE_LATEST

    port = server.server_address[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert response.headers["Content-Type"] == CONTENT_TYPE_LATEST
        assert response.headers["Content-Type"].startswith("text/plain; version=")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
        assert response.headers["Content-Type"] == "text/plain; charset=utf-8"


def test_plain_metrics_beside_a_probe_port_of_their_own_serve_metrics_alone() -> None:
    """``--no-metrics-secure`` with a probe port (main.py ``start_servers``): the metrics port serves
    /metrics and nothing else, as controller-runtime's metrics server does; the probes are on
    --health-probe-port. Only with no probe port does the metrics port answer the probes too."""
    from memcached_gitops.reconciler.orchestration.main import Serving, start_servers

    from tests.support.metrics_endpoint import free_port

    metrics = Metrics()
    metrics.ready = True
    for probe_port, probes_on_metrics_port in ((free_port(), False), (0, True)):
        metrics_port = free_port()
        servers = start_servers(None, metrics, Serving(metrics_port=metrics_port, metrics_bind_address="127.0.0.1",
                                                       metrics_secure=False, health_probe_port=probe_port,
                                                       health_probe_bind_address="127.0.0.1"))
        try:
            url = f"http://127.0.0.1:{metrics_port}"
            with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
                assert response.status == 200
            for path in PROBES:
                try:
                    with urllib.request.urlopen(f"{url}{path}", timeout=5) as response:
                        status = response.status
                except urllib.error.HTTPError as exc:
                    status = exc.code
                assert status == (200 if probes_on_metrics_port else 404), (path, probe_port, status)
        finally:
            for s in servers:
                s.shutdown()
                s.server_close()


def test_a_newcomer_to_a_full_server_takes_the_oldest_slot_of_the_biggest_holder() -> None:
    """When every slot is held, a client that holds none takes a slot from the client holding the
    most (its oldest one), never from a client holding one: the kubelet's probe displaces the
    stranger with many connections, not another lone client that came first."""
    from http.server import BaseHTTPRequestHandler

    server = metrics_module.BoundedHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler, max_connections=4, per_client=3)
    sockets = [socket.socket() for _ in range(6)]
    lone, first, second, third, newcomer, late = sockets
    try:
        assert server._admit(lone, "10.0.0.1")  # the oldest slot of all, held by a client with one
        for s in (first, second, third):
            assert server._admit(s, "10.0.0.2")
        assert server._admit(newcomer, "10.0.0.3")
        assert list(server.held) == [lone, second, third, newcomer], "the biggest holder's oldest slot was taken"
        assert server.clients == {"10.0.0.1": 1, "10.0.0.2": 2, "10.0.0.3": 1}
        assert not server._admit(late, "10.0.0.1"), "full, and this client holds a slot already"
    finally:
        for s in sockets:
            s.close()
        server.server_close()


def test_a_port_that_cannot_be_opened_closes_the_servers_already_started() -> None:
    """start_servers opens the probe port first: when the metrics port is then refused (ListenError),
    the probe server is shut down and its port released, so the process that exits 2 (or a caller
    that tries other ports) holds no listener."""
    from memcached_gitops.reconciler.orchestration.main import ListenError, Serving, start_servers

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        probe_port = free.getsockname()[1]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        serving = Serving(metrics_port=taken.getsockname()[1], metrics_bind_address="127.0.0.1", metrics_secure=False,
                          health_probe_port=probe_port, health_probe_bind_address="127.0.0.1")
        with pytest.raises(ListenError, match="--metrics-port"):
            start_servers(None, Metrics(), serving)
    with socket.socket() as again:
        again.bind(("127.0.0.1", probe_port))  # EADDRINUSE while the probe server still listens


def test_the_request_line_and_headers_may_fill_the_cap_exactly() -> None:
    """HEADER_LIMIT bytes of request line and headers are read; one byte more is refused (431, or
    414 when the request line alone is over it)."""
    import http.client
    import io

    limit = metrics_module.HEADER_LIMIT
    line = b"GET /metrics HTTP/1.1\r\n"
    header = b"X-Fill: " + b"a" * (limit - len(line) - len(b"X-Fill: \r\n") - 2) + b"\r\n"
    request = line + header + b"\r\n"
    assert len(request) == limit
    cap = metrics_module.HeaderCap(io.BytesIO(request), limit)
    assert [cap.readline(65537) for _ in range(3)] == [line, header, b"\r\n"]
    over = metrics_module.HeaderCap(io.BytesIO(line + b"X" + header + b"\r\n"), limit)
    assert [over.readline(65537) for _ in range(2)] == [line, b"X" + header]
    with pytest.raises(http.client.LineTooLong):  # the blank line that ends the headers is the byte over
        over.readline(65537)
    with pytest.raises(metrics_module.RequestLineTooLong):
        metrics_module.HeaderCap(io.BytesIO(b"GET /" + b"a" * limit + b" HTTP/1.1\r\n"), limit).readline(65537)


def test_a_port_of_0_switches_its_server_off() -> None:
    """--health-probe-port=0 and --metrics-port=0 (kubebuilder's "0" disables the metrics server):
    no server is started, not one on a port the kernel picks."""
    from memcached_gitops.reconciler.orchestration.main import Serving, start_servers

    assert start_servers(None, Metrics(), Serving(metrics_port=0, metrics_secure=False, health_probe_port=0)) == []
    assert start_servers(None, Metrics(), Serving(metrics_port=0, health_probe_port=0)) == [], "secure or not"




def free_port() -> int:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return int(free.getsockname()[1])

@pytest.mark.parametrize(("metrics_on", "secure", "probes_on"), [
    (m, s, p) for m in (True, False) for s in (True, False) for p in (True, False)])
def test_the_certificate_is_read_only_for_a_secure_metrics_server_that_is_on(tmp_path, metrics_on: bool, secure: bool,
                                                                              probes_on: bool) -> None:
    """--metrics-cert-dir is read by the HTTPS metrics server alone: with --metrics-port=0 or
    --no-metrics-secure a folder without its pair (a Secret mounted for later) is no error and the
    servers asked for start; with both on, it is the one line naming the flag, and nothing starts."""
    from memcached_gitops.reconciler.orchestration.main import ListenError, Serving, start_servers

    serving = Serving(metrics_port=free_port() if metrics_on else 0, metrics_bind_address="127.0.0.1", metrics_secure=secure,
                      metrics_cert_dir=str(tmp_path), health_probe_port=free_port() if probes_on else 0,
                      health_probe_bind_address="127.0.0.1")
    if metrics_on and secure:
        with pytest.raises(ListenError, match="--metrics-cert-dir"):
            start_servers(None, Metrics(), serving)
        return
    servers = start_servers(None, Metrics(), serving)
    try:
        assert len(servers) == metrics_on + probes_on
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_a_client_whose_connections_all_ended_holds_no_share() -> None:
    """A client's count of held slots goes when its last connection ends: a scrape from a new Pod
    address every few seconds leaves nothing behind, and the biggest holder is one that holds slots."""
    from http.server import BaseHTTPRequestHandler

    server = metrics_module.BoundedHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler, max_connections=4, per_client=3)
    sockets = [socket.socket() for _ in range(3)]
    try:
        for s, client in zip(sockets, ("10.0.0.1", "10.0.0.2", "10.0.0.2"), strict=True):
            assert server._admit(s, client)
        server._release(sockets[0])
        server._release(sockets[1])
        assert server.clients == {"10.0.0.2": 1}
        server._release(sockets[2])
        server._release(sockets[2])  # a connection ended twice (its thread and a failed start) counts once
        assert (server.clients, server.held) == ({}, {})
    finally:
        for s in sockets:
            s.close()
        server.server_close()


def test_a_certificate_folder_without_its_pair_is_one_line_naming_the_flag(tmp_path) -> None:
    """--metrics-cert-dir naming a folder without tls.crt and tls.key (a Secret not mounted, a typo)
    is a ListenError naming the flag (the command's one line and exit 2), not a traceback, and no
    server is left running."""
    from memcached_gitops.reconciler.orchestration.main import ListenError, Serving, start_servers

    ports = []
    for _ in range(2):
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            ports.append(free.getsockname()[1])
    serving = Serving(metrics_port=ports[0], metrics_bind_address="127.0.0.1", metrics_cert_dir=str(tmp_path),
                      health_probe_port=ports[1], health_probe_bind_address="127.0.0.1")
    with pytest.raises(ListenError, match="--metrics-cert-dir") as refused:
        start_servers(None, Metrics(), serving)
    assert f"{tmp_path / 'tls.crt'}: No such file or directory" in str(refused.value), "which file of the pair is missing"
    for port in ports:
        with socket.socket() as again:
            again.bind(("127.0.0.1", port))


def test_a_connection_whose_thread_cannot_start_gives_its_slot_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection admitted but whose thread cannot be started (the process out of threads) gives
    its slot and its client's share back at once: failures to start never add up to a server that
    refuses the kubelet's probes."""
    from http.server import BaseHTTPRequestHandler

    server = metrics_module.BoundedHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler, max_connections=4, per_client=3)
    sockets = [socket.socket() for _ in range(5)]

    def cannot_start(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    try:
        monkeypatch.setattr(threading.Thread, "start", cannot_start)
        for s in sockets:  # more than the client's share: each slot given back, none refused
            with contextlib.suppress(RuntimeError):
                server.process_request(s, ("10.0.0.1", 40000))
        assert (server.clients, server.held) == ({}, {}), "no slot held by a connection that was never served"
        monkeypatch.undo()
        assert server._admit(sockets[0], "10.0.0.1"), "the client still has its whole share"
    finally:
        for s in sockets:
            s.close()
        server.server_close()


# ---- the connection slots and the header cap, against reference models
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: ("admit", client) or ("release", n): the n-th slot held, oldest first (modulo how many are held)
slot_steps = st.lists(st.one_of(st.tuples(st.just("admit"), st.integers(0, 3)), st.tuples(st.just("release"), st.integers(0, 9))),
                      max_size=40)


@settings(max_examples=100, deadline=None)
@given(max_connections=st.integers(1, 5), per_client=st.integers(1, 3), steps=slot_steps)
def test_slots_follow_the_per_client_share_and_a_newcomer_displaces_the_oldest_slot_of_a_biggest_holder(
        max_connections: int, per_client: int, steps: list[tuple[str, int]]) -> None:
    """Any sequence of connections and departures from a few addresses, any bounds: a client at its
    share is refused; a client already holding a slot is refused when every slot is held; a client
    holding none is admitted, and when every slot is held it takes the oldest slot among those of the
    clients holding the most (never a slot of a client holding fewer); ``clients`` counts each
    client's slots and names no client without one."""
    from http.server import BaseHTTPRequestHandler

    server = metrics_module.BoundedHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler, max_connections=max_connections,
                                              per_client=per_client)
    model: list[tuple[socket.socket, str]] = []  # (connection, client), oldest first
    opened: list[socket.socket] = []
    try:
        for op, n in steps:
            if op == "release":
                if model:
                    sock, _ = model.pop(n % len(model))
                    server._release(sock)
                continue
            client, sock = f"10.0.0.{n}", socket.socket()
            opened.append(sock)
            counts = {c: sum(1 for _, o in model if o == c) for _, c in model}
            mine = counts.get(client, 0)
            expected = mine < per_client and (len(model) < max_connections or mine == 0)
            assert server._admit(sock, client) == expected, (client, counts)
            if expected:
                if len(model) >= max_connections:
                    most = max(counts.values())
                    model.remove(next((s, o) for s, o in model if counts[o] == most))
                model.append((sock, client))
            assert list(server.held) == [s for s, _ in model]
            assert server.clients == {c: sum(1 for _, o in model if o == c) for _, c in model}
    finally:
        for sock in opened:
            sock.close()
        server.server_close()


@settings(max_examples=100, deadline=None)
@given(limit=st.integers(4, 120), sizes=st.lists(st.integers(0, 60), min_size=1, max_size=6))
def test_the_cap_counts_the_request_line_and_every_header_line_together(limit: int, sizes: list[int]) -> None:
    """Request line and header lines of any lengths: each is read whole while the bytes read so far,
    this line included, are within the cap; the first line past it is refused, as 414 when it is the
    request line (RequestLineTooLong) and as 431 when it is a header line (LineTooLong, never the 414 one)."""
    import http.client
    import io

    lines = [b"x" * size + b"\r\n" for size in sizes]
    cap = metrics_module.HeaderCap(io.BytesIO(b"".join(lines)), limit)
    read = 0
    for i, line in enumerate(lines):
        read += len(line)
        if read <= limit:
            assert cap.readline(65537) == line
            continue
        with pytest.raises(http.client.LineTooLong) as refused:
            cap.readline(65537)
        assert (refused.type is metrics_module.RequestLineTooLong) == (i == 0), (i, refused.type)
        break


@settings(max_examples=100, deadline=None)
@given(order=st.integers(1, 3).flatmap(lambda k: st.permutations(["10.0.0.1"] * k + ["10.0.0.2"] * k)),
       churn=st.lists(st.integers(0, 5), max_size=6))
def test_between_clients_holding_as_many_slots_the_newcomer_takes_the_oldest_slot(order: list[str], churn: list[int]) -> None:
    """Two clients holding the same number of slots fill the server, in any order, and some of their
    connections end and come back (which changes which of the two arrived last): a newcomer takes
    the oldest slot held, whichever of the two holds it."""
    from http.server import BaseHTTPRequestHandler

    server = metrics_module.BoundedHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler, max_connections=len(order),
                                              per_client=len(order) // 2)
    opened: list[socket.socket] = []

    def connect(client: str) -> socket.socket:
        sock = socket.socket()
        opened.append(sock)
        assert server._admit(sock, client)
        return sock

    try:
        for client in order:
            connect(client)
        for n in churn:
            sock, (client, _) = list(server.held.items())[n % len(order)]
            server._release(sock)
            connect(client)
        oldest = next(iter(server.held))
        connect("10.0.0.3")
        assert oldest not in server.held and len(server.held) == len(order)
    finally:
        for sock in opened:
            sock.close()
        server.server_close()



def shipped_container() -> dict:
    """The reconciler container of the shipped Deployment (kustomize/overlays/deployment)."""
    import yaml

    from tests.conftest import REPO

    manifest = yaml.safe_load((REPO / "kustomize" / "overlays" / "deployment" / "deployment.yaml").read_text())
    [container] = manifest["spec"]["template"]["spec"]["containers"]
    return container


@pytest.mark.parametrize("kind", sorted(k for k in shipped_container() if k.endswith("Probe")))
def test_each_probe_the_shipped_deployment_sends_is_served_and_can_fail(server, kind: str) -> None:
    """The kubelet asks the path and port the shipped Deployment names, on the port the process is told
    to serve its probes on: each path is served (a 404 restarts the process in a loop, or keeps it out
    of the Service for ever) and answers 503 while its own condition fails: liveness while a health
    check says why (a stalled informer), readiness before the first sync. 200 to 399 is success to the kubelet."""
    from urllib.error import HTTPError

    container = shipped_container()
    probe = container[kind]["httpGet"]
    args = container["args"]
    port = next(p["containerPort"] for p in container["ports"] if p["name"] == probe["port"])
    assert str(port) == args[args.index("--health-probe-port") + 1], f"{kind} asks a port the probes are not served on"
    metrics = server.served_metrics
    problem: list[str] = []
    metrics.health_checks.append(lambda: problem[0] if problem else None)
    metrics.ready = True
    assert get(server, probe["path"]) == 200
    if kind == "livenessProbe":
        problem.append("deployments informer stalled")
    else:
        metrics.ready = False
    with pytest.raises(HTTPError) as failed:
        get(server, probe["path"])
    assert failed.value.code == 503


def test_a_burst_of_a_full_servers_connections_and_a_probe_is_queued_while_the_server_is_not_accepting(server) -> None:
    """Connections that arrive while the accept loop is busy wait in the kernel's listen backlog: a
    burst as large as the server serves at once (scrapers, a token sprayer), plus a kubelet probe, must
    all be queued. With socketserver's backlog of 5 the kernel drops the SYNs past the sixth, and each
    dropped client (the probe among them) waits a second or more for a retransmit, past the probe's
    timeoutSeconds: the admission logic that keeps probes working under a flood never sees them."""
    server.shutdown()  # the accept loop stops; the socket, still listening, keeps its backlog
    burst = metrics_module.MAX_CONNECTIONS + 1
    clients: list[socket.socket] = []
    try:
        for n in range(burst):
            client = socket.socket()
            clients.append(client)
            client.settimeout(5)
            try:
                client.connect(server.server_address)
            except OSError as error:
                pytest.fail(f"connection {n + 1} of a burst of {burst} was not queued: {error!r}")
    finally:
        for client in clients:
            client.close()
