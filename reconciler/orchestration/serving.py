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

import http.client
import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memcached_gitops.foundation.clocks import SYSTEM_CLOCK, Monotonic
from prometheus_client import CONTENT_TYPE_LATEST

from ..client.api import APIError
from ..client.reviews import AccessReviews, RateLimited
from .metrics import Metrics
from .tls import ServingCertificate

log = logging.getLogger(__name__)
PROBES = ("/healthz", "/readyz")
METRICS = ("/metrics",)
#: (HTTP method, path, Authorization header) -> None to serve, or the (status, text) to answer instead.
Guard = Callable[[str, str, str], "tuple[int, str] | None"]

#: A connection must have sent its whole request and had its answer within this many seconds of
#: being accepted (TLS handshake included), however it trickles its bytes: a deadline for the
#: request, not a timeout per read, so a client sending a byte a second is cut all the same (a
#: kubelet probe or a Prometheus scrape takes milliseconds).
REQUEST_TIMEOUT = 5.0
#: Connections served at once; more are closed at once, unread, instead of starting a thread each.
MAX_CONNECTIONS = 32
#: Connections one client address may hold at once: a client alone cannot take every slot, so the
#: kubelet's probes (from the node's address) still find one while a stranger holds its share.
MAX_PER_CLIENT = 4
#: The request line and headers together, in bytes (a probe's or a scrape's are a few hundred);
#: more is answered 431 before anything is authenticated, so no client makes the process hold more.
HEADER_LIMIT = 8192
#: How often connections past their deadline are looked for.
REAP_EVERY = 0.1


def _cut(sock: Any) -> None:
    """Shut a connection down under the thread serving it: its blocked read returns at once. The
    plain socket's shutdown, also for a TLS one, whose own would drop its TLS state under the reader."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class BoundedHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer with at most MAX_CONNECTIONS threads, MAX_PER_CLIENT of them per
    client address, each connection cut REQUEST_TIMEOUT after it was accepted, and a one-line log
    (never a traceback in the JSON log) for a client that goes away or is cut.

    When every slot is taken, a client that holds none (a kubelet probing from the node) takes the
    oldest slot of the client that holds the most: strangers with many addresses still cannot keep
    the probes out, they only take each other's slots."""

    daemon_threads = True
    #: The listen backlog: socketserver's 5 drops the SYNs of a burst of clients (each then waits a
    #: second to retry), a kubelet probe among them; refused connections are closed at once anyway.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: Any, max_connections: int = MAX_CONNECTIONS,
                 per_client: int = MAX_PER_CLIENT) -> None:
        self.max_connections, self.per_client = max_connections, per_client
        self.lock = threading.Lock()
        self.clients: dict[str, int] = {}
        self.held: dict[Any, tuple[str, Monotonic]] = {}  # connection -> (client, deadline), oldest first
        self.closed = threading.Event()  # before the bind, whose failure calls server_close
        super().__init__(address, handler)
        threading.Thread(target=self._reap, daemon=True, name="connection-deadlines").start()

    def _forget(self, request: Any) -> None:
        """Under the lock: ``request`` no longer holds a slot."""
        client, _ = self.held.pop(request)
        left = self.clients.pop(client) - 1
        if left > 0:
            self.clients[client] = left

    def _admit(self, request: Any, client: str) -> bool:
        victim = None
        with self.lock:
            mine = self.clients.get(client, 0)
            if mine >= self.per_client or (len(self.held) >= self.max_connections and mine > 0):
                return False
            if len(self.held) >= self.max_connections:
                most = max(self.clients.values())
                victim = next(sock for sock, (owner, _) in self.held.items() if self.clients[owner] == most)
                self._forget(victim)
            self.clients[client] = mine + 1
            self.held[request] = (client, SYSTEM_CLOCK.monotonic() + REQUEST_TIMEOUT)
        if victim is not None:
            _cut(victim)
        return True

    def _release(self, request: Any) -> None:
        with self.lock:
            if request in self.held:
                self._forget(request)

    def _reap(self) -> None:
        while not self.closed.wait(REAP_EVERY):
            now = SYSTEM_CLOCK.monotonic()
            with self.lock:
                late = [sock for sock, (_, deadline) in self.held.items() if deadline <= now]
            for sock in late:
                _cut(sock)

    def process_request(self, request: Any, client_address: Any) -> None:
        client = str(client_address[0]) if isinstance(client_address, tuple) else str(client_address)
        if not self._admit(request, client):
            self.shutdown_request(request)  # this client holds its share, or all are full: refuse at once rather than queue
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def server_close(self) -> None:
        self.closed.set()
        super().server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        log.debug("metrics server: %s from %s: %s", type(error).__name__, client_address, error)


class TLSHTTPServer(BoundedHTTPServer):
    """Each accepted connection wrapped in TLS; the handshake is made in the connection's own thread
    (Handler.setup), within the request's deadline, so a client that never finishes it holds one slot."""

    def __init__(self, address: tuple[str, int], handler: Any, certificate: ServingCertificate) -> None:
        super().__init__(address, handler)
        self.certificate = certificate

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        return self.certificate.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


class RequestLineTooLong(http.client.LineTooLong):
    """The request line alone is over HEADER_LIMIT: answered 414, as http.server answers one over 64 KB."""


class HeaderCap:
    """A request's reader that lets HEADER_LIMIT bytes of request line and headers through, then
    raises http.client.LineTooLong, which http.server answers 431 (its parse_request): a flood of
    headers is refused while it is read, not after it is held."""

    def __init__(self, raw: Any, limit: int) -> None:
        self.raw, self.left, self.first = raw, limit, True

    def readline(self, limit: int | None = -1) -> bytes:
        want = self.left + 1 if limit is None or limit < 0 else min(limit, self.left + 1)
        line: bytes = self.raw.readline(want) if self.left > 0 else b""
        if len(line) > self.left or self.left <= 0:
            self.left = 0
            raise (RequestLineTooLong if self.first else http.client.LineTooLong)(f"request line and headers over {HEADER_LIMIT} bytes")
        self.left -= len(line)
        self.first = False
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


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
        except RateLimited:
            log.debug("metrics server: too many tokens to review: 429")
            return 429, "Too many requests"
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
        timeout = REQUEST_TIMEOUT  # per read, under the server's deadline for the whole request

        def setup(self) -> None:
            super().setup()
            self.rfile = HeaderCap(self.rfile, HEADER_LIMIT)  # type: ignore[assignment]
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.do_handshake()  # within the request's deadline

        def log_message(self, *args: Any) -> None:
            pass

        def handle_one_request(self) -> None:
            """http.server's, with a request line over the cap answered 414 (URI Too Long) rather than
            the connection dropped unanswered: http.server reads that line outside parse_request."""
            try:
                super().handle_one_request()
            except RequestLineTooLong:
                self.requestline, self.request_version, self.command = "", "", ""
                self.close_connection = True
                self.send_error(414)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            ctype = "text/plain; charset=utf-8"
            path = self.path.split("?", 1)[0]  # Prometheus adds its scrape config's params to the query
            # the filter wraps the whole server, as controller-runtime's does: no path is told to a
            # stranger; a path not served is authorized as /metrics, so a valid token sending a new
            # path per request makes no SubjectAccessReview each (answered 404 once allowed)
            asked = path if path in paths else METRICS[0]
            refused = guard("GET", asked, self.headers.get("Authorization", "")) if guard else None
            if refused:
                code, data = refused[0], (refused[1] + "\n").encode()
            elif path not in paths:
                code, data = 404, b"not found\n"
            elif path == "/healthz":
                ok, text = metrics.liveness()
                code, data = (200 if ok else 503), text.encode()
            elif path == "/readyz":
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
