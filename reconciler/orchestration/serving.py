"""The probe and metrics HTTP servers, bounded against hostile clients (a request timeout, a bound on
connections, one log line per failed connection).

As kubebuilder v4 serves them (its cmd/main.go and config/default): the probes, /healthz and
/readyz, over plain HTTP on a port of their own (the kubelet sends no credentials), and /metrics
over HTTPS, where every scrape's bearer token is authenticated (TokenReview) and its user
authorized to GET /metrics (SubjectAccessReview) by the API server, answered as controller-runtime's
filter answers (pkg/metrics/filters/filters.go): 401 ``Unauthorized`` with no token, 500
``Authentication failed`` for a token the API server does not accept or could not review, 403
``Authorization denied for user NAME``, 500 ``Authorization for user NAME failed`` when the
SubjectAccessReview could not be made.
``--no-metrics-secure`` serves all three over plain HTTP on one port, as before."""

from __future__ import annotations

import logging
import ssl
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from ..client.api import APIError
from ..client.reviews import AccessReviews
from .metrics import Metrics
from .tls import ServingCertificate

log = logging.getLogger(__name__)
PROBES = ("/healthz", "/readyz")
METRICS = ("/metrics",)
#: (HTTP method, path, Authorization header) -> None to serve, or the (status, text) to answer instead.
Guard = Callable[[str, str, str], "tuple[int, str] | None"]

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
        log.debug("metrics server: %s from %s: %s", type(error).__name__, client_address, error)


class TLSHTTPServer(BoundedHTTPServer):
    """Each accepted connection wrapped in TLS; the handshake is made in the connection's own thread
    (Handler.setup), under the request timeout, so a client that never finishes it holds one slot."""

    def __init__(self, address: tuple[str, int], handler: Any, certificate: ServingCertificate) -> None:
        super().__init__(address, handler)
        self.certificate = certificate

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        return self.certificate.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


def bearer_guard(reviews: AccessReviews) -> Guard:
    """controller-runtime's WithAuthenticationAndAuthorization (filters.go @86a0d40e L99-137): the
    token of ``Authorization: Bearer`` (read as k8s.io/apiserver's bearertoken authenticator reads it)
    authenticated, then its user authorized for the request's method, lower-cased, on its path.

    A token the API server refuses is, as there, an authentication *error* (bearertoken.go turns
    "not authenticated" into ``invalid bearer token``), so 500 ``Authentication failed``; only a
    missing or non-Bearer header is 401. Unlike there, a refused token is logged at debug level,
    not as an error, so that strangers cannot fill the log; a review the API server could not make
    is an error line."""

    def check(method: str, path: str, authorization: str) -> tuple[int, str] | None:
        parts = authorization.strip().split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return 401, "Unauthorized"
        try:
            user = reviews.authenticate(parts[1])
        except APIError as exc:
            log.error("metrics server: authentication failed: cannot create a TokenReview: %s", exc)
            return 500, "Authentication failed"
        if user is None:
            log.debug("metrics server: authentication failed: invalid bearer token")
            return 500, "Authentication failed"
        try:
            allowed, reason = reviews.authorize(user, method.lower(), path)
        except APIError as exc:
            log.error("metrics server: cannot create a SubjectAccessReview for user %s: %s", user.name, exc)
            return 500, f"Authorization for user {user.name} failed"
        if not allowed:
            log.debug("metrics server: authorization denied for user %s: %s", user.name, reason)
            return 403, f"Authorization denied for user {user.name}"
        return None

    return check


def serve(metrics: Metrics, port: int, host: str = "0.0.0.0", *, paths: tuple[str, ...] = PROBES + METRICS,
          guard: Guard | None = None, certificate: ServingCertificate | None = None,
          name: str = "metrics-server") -> ThreadingHTTPServer:
    """Start a server of ``paths`` in a daemon thread: over TLS with ``certificate``, each request of
    /metrics first passed by ``guard`` (``host``: --metrics-bind-address or --health-probe-bind-address)."""

    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT  # socketserver sets it on the connection: a slow or idle client is dropped

        def setup(self) -> None:
            super().setup()
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.do_handshake()  # under the timeout set just above

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            ctype = "text/plain; charset=utf-8"
            # the filter wraps the whole server, as controller-runtime's does: no path is told to a stranger
            refused = guard("GET", self.path.split("?")[0], self.headers.get("Authorization", "")) if guard else None
            if refused:
                code, data = refused[0], (refused[1] + "\n").encode()
            elif self.path not in paths:
                code, data = 404, b"not found\n"
            elif self.path == "/healthz":
                ok, text = metrics.liveness()
                code, data = (200 if ok else 503), text.encode()
            elif self.path == "/readyz":
                ok, text = metrics.readiness()
                code, data = (200 if ok else 503), text.encode()
            else:
                code, data, ctype = 200, metrics.render(), CONTENT_TYPE_LATEST
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = TLSHTTPServer((host, port), Handler, certificate) if certificate else BoundedHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name=name).start()
    return server
