"""The probe and metrics HTTP server: /healthz, /readyz and /metrics, bounded against hostile clients
(a request timeout, a bound on connections, one log line per failed connection)."""

from __future__ import annotations

import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from .metrics import Metrics

#: A connection that has not sent its whole request within this many seconds is closed, so idle or
#: half-sent connections cannot hold threads (a kubelet probe or a Prometheus scrape takes milliseconds).
REQUEST_TIMEOUT = 5.0
#: Connections served at once; more are closed at once, unread, instead of starting a thread each.
MAX_CONNECTIONS = 32


class BoundedHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer with at most MAX_CONNECTIONS threads, and a one-line log (never a
    traceback in the JSON log) for a client that goes away or times out."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any, max_connections: int = MAX_CONNECTIONS) -> None:
        super().__init__(address, handler)
        self.slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: refuse at once rather than queue a thread
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        logging.getLogger(__name__).debug("metrics server: %s from %s: %s", type(error).__name__, client_address, error)


def serve(metrics: Metrics, port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Start the probe and metrics server in a daemon thread (``host``: --metrics-bind-address)."""

    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT  # socketserver sets it on the connection: a slow or idle client is dropped

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            ctype = "text/plain; charset=utf-8"
            if self.path == "/healthz":
                ok, text = metrics.liveness()
                code, data = (200 if ok else 503), text.encode()
            elif self.path == "/readyz":
                ok, text = metrics.readiness()
                code, data = (200 if ok else 503), text.encode()
            elif self.path == "/metrics":
                code, data, ctype = 200, metrics.render(), CONTENT_TYPE_LATEST
            else:
                code, data = 404, b"not found\n"
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = BoundedHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics-server").start()
    return server
