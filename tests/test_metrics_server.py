"""The probe and metrics server under hostile clients: idle or half-sent connections cannot hold
threads (a request timeout and a bound on connections), and a client that goes away leaves one
debug line, never a traceback in the JSON log."""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.request

import pytest
from memcached_gitops.reconciler import metrics as metrics_module
from memcached_gitops.reconciler.metrics import Metrics, serve


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(metrics_module, "REQUEST_TIMEOUT", 0.5)
    server = serve(Metrics(), 0, "127.0.0.1")
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
