"""The HTTP handler: what kube-apiserver's handler chain does with a request around the verbs,
over a real socket on 127.0.0.1.

- Routing: ``/api/v1`` and ``/apis/GROUP/VERSION``, per namespace or across all, the status and
  scale subresources. An unknown path is a plain-text ``404 page not found``; an unknown resource
  in a built-in group version is a NotFound Status (32, 12). Discovery documents for a group and
  for a group version.
- Every request is authorized (admission.py), then served: GET, LIST and WATCH here; POST, PUT
  and PATCH by the verbs (verbs.py, fieldmanager.py for an apply); DELETE by the store
  (storage.py). An ``APIError`` from any part becomes the response.
- LIST with ``labelSelector`` (a malformed one is a 400, 32), ``fieldSelector``, and chunking with
  ``limit``/``continue`` ("API Concepts"): the list's resourceVersion stays that of the first
  chunk; ``remainingItemCount`` only without selectors; ``resourceVersion=0`` ignores ``limit``; a
  continue token that does not decode is a 400 naming Go's JSON error. A custom resource's list
  has sorted keys and an empty ``continue``.
- WATCH (``?watch=true``; rules and their transcripts in watch.py) for every resource, per
  namespace or across all, with ``labelSelector``, ``resourceVersion``, ``allowWatchBookmarks``,
  ``timeoutSeconds`` (default 1800) and ``sendInitialEvents``, one chunk per JSON line (30).
  ``Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`` (``...List`` for a
  LIST) serves metadata only.
- Also: a request log (``LoggedRequest``) and fault injection (``Fault``: status, Retry-After,
  latency, a dropped connection, a WATCH that goes wrong).

``APIHandler`` is one part of ``FakeAPIServer`` (server.py); ``http_handler`` gives the socket
side the class that hands each request to it.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from . import selectors
from .errors import APIError, bad_request, status_body
from .resources import BUILTINS, Resource
from .resources import truthy as _truthy
from .reviews import ACCESS_REVIEWS, TOKEN_REVIEWS
from .storage import _event_view
from .watch import PARTIAL_LIST, Expired, WatchCache, WatchStream, as_partial, partial_metadata_view

REVIEW_PATHS = {TOKEN_REVIEWS, ACCESS_REVIEWS}


def _get_field(obj: dict[str, Any], dotted: str) -> Any:
    cur: Any = obj
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur




class _HTTPServer(ThreadingHTTPServer):
    """The listening side, which can stop listening for a while (a restart) and knows its open
    connections so that a restart can cut them."""

    daemon_threads = True

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.connections: set[socket.socket] = set()
        self.stopped = False

    def serve_in_background(self) -> None:
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop_listening(self, for_good: bool = True) -> None:
        self.stopped = self.stopped or for_good
        self.shutdown()
        self.server_close()

    def refuse_for(self, seconds: float) -> None:
        """Cut every connection and refuse new ones for ``seconds``, then listen on the same port again."""
        self.stop_listening(for_good=False)
        for conn in list(self.connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def reopen() -> None:
            time.sleep(seconds)
            if self.stopped:
                return
            self.socket = socket.socket(self.address_family, self.socket_type)
            self.server_bind()
            self.server_activate()
            self.serve_forever(poll_interval=0.05)

        threading.Thread(target=reopen, daemon=True).start()


@dataclass
class Fault:
    """An injected failure: the next ``times`` matching requests answer ``status`` (after ``delay`` s).

    With ``watch`` set, the matching WATCH requests are opened (200) but go wrong instead:
    ``"expired"`` sends the 410 ERROR event and closes, ``"silent"`` sends nothing at all and never
    closes (until cut), ``"drop"`` cuts the connection right after the response headers.
    """

    method: str | None = None
    path_contains: str = ""
    status: int = 500
    times: int = 1
    retry_after: int | None = None
    delay: float = 0.0
    body: dict[str, Any] | None = None
    drop_connection: bool = False
    watch: str = ""  # "", "expired", "silent" or "drop": what happens to a matching WATCH
    user_agent: str = ""  # only requests whose User-Agent starts with it (a client's writes, not a person's)


@dataclass
class LoggedRequest:
    """One request as the fake received it. ``received`` (time.monotonic()) and ``received_at``
    (time.time()) are taken when the request line and headers have been read, before any work,
    as the API server's audit log stamps a request: latency between a client's write and a
    controller's answering write is the difference of their ``received``."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    user_agent: str
    content_type: str = ""
    received: float = field(default_factory=time.monotonic)
    received_at: float = field(default_factory=time.time)
    body: bytes = b""  # what was sent (a test reads what an apply carried)

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")


def http_handler(fake: APIHandler) -> type[BaseHTTPRequestHandler]:
    """The request handler class for one fake: the server makes one per connection, and each
    request on it is answered by ``fake.handle``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = -1  # headers and body leave in one segment: no Nagle / delayed-ACK stall

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.server.connections.add(self.connection)  # type: ignore[attr-defined]

        def finish(self) -> None:
            self.server.connections.discard(self.connection)  # type: ignore[attr-defined]
            super().finish()

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            code, headers, payload = fake.handle(
                self.command, self.path, dict(self.headers.items()), body
            )
            if code == -1:  # injected dropped connection
                self.close_connection = True
                self.connection.close()
                return
            if isinstance(payload, WatchStream):
                self._stream(code, headers, payload)
                return
            self.send_response(code)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

        def _stream(self, code: int, headers: dict[str, str], stream: WatchStream) -> None:
            """A WATCH: 200, then one chunk per JSON line, as the API server streams them (30)."""
            self.send_response(code)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                self.wfile.flush()
                for line in stream.lines():
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                if stream.state == "dropped":  # cut: no final chunk, the connection goes
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:  # the client went away
                stream.state = "closed"
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler


class APIHandler:
    """The request path: faults, the log, routing, discovery, LIST and opening a WATCH."""

    lock: threading.RLock  # a request is served under it
    rv: int
    objects: dict[tuple[str, str, str, str], dict[str, Any]]
    resources: dict[tuple[str, str], Resource]
    watch_cache: WatchCache
    watches: list[WatchStream]  # the open WATCH streams
    log: list[LoggedRequest]
    faults: list[Fault]

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes | WatchStream]:
        received, received_at = time.monotonic(), time.time()
        split = urlsplit(raw_path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        ua = headers.get("User-Agent", "")
        ctype = headers.get("Content-Type", "").split(";")[0].strip()
        fault = self._take_fault(method, split.path, query, ua)
        if fault is not None and not fault.watch:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.drop_connection:
                self.log.append(LoggedRequest(method, split.path, query, -1, ua, ctype, received, received_at))
                return -1, {}, b""
            if fault.status:
                extra = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                reason = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}.get(fault.status, "")
                payload = fault.body or status_body(fault.status, reason, f"injected fault {fault.status}")
                self.log.append(LoggedRequest(method, split.path, query, fault.status, ua, ctype, received, received_at))
                return fault.status, {"Content-Type": "application/json", **extra}, json.dumps(payload).encode()
        with self.lock:
            try:
                code, payload, extra = self._dispatch(method, split.path, query, ua, ctype, body, headers.get("Accept"))
                out_headers = {"Content-Type": "application/json", **extra}
                data = payload if isinstance(payload, (bytes, WatchStream)) else json.dumps(payload).encode()
                if isinstance(data, WatchStream) and fault is not None:
                    self._spoil_watch(data, fault.watch)
            except APIError as exc:
                code, out_headers = exc.code, {"Content-Type": "application/json", **exc.headers}
                if isinstance(exc.body, str):
                    out_headers["Content-Type"] = "text/plain; charset=utf-8"
                    data = exc.body.encode()
                else:
                    data = json.dumps(exc.body).encode()
            self.log.append(LoggedRequest(method, split.path, query, code, ua, ctype, received, received_at, body or b""))
            return code, out_headers, data

    def _take_fault(self, method: str, path: str, query: dict[str, str], ua: str = "") -> Fault | None:
        with self.lock:
            for f in self.faults:
                if (f.times > 0 and (f.method is None or f.method == method) and f.path_contains in path
                        and ua.startswith(f.user_agent)):
                    if f.watch and not _truthy(query.get("watch")):
                        continue
                    f.times -= 1
                    return f
        return None

    def _spoil_watch(self, stream: WatchStream, how: str) -> None:
        if how == "expired":
            stream.error = status_body(410, "Expired", f"too old resource version: {stream.rv} ({self.rv})")
        elif how == "silent":
            stream.state = "silent"
            stream.initial = []
        elif how == "drop":
            stream.state = "dropped"

    def _dispatch(self, method: str, path: str, query: dict[str, str], ua: str, ctype: str, body: bytes, accept: str | None = None):
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 2:
            group = parts[1]
            if len(parts) == 2:
                return 200, self._discovery_group(group), {}
            version, rest = parts[2], parts[3:]
            if not rest:
                return 200, self._discovery_version(group, version), {}
        else:
            raise APIError(404, "404 page not found\n")
        namespace = None
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
            namespace, rest = rest[1], rest[2:]
        if tuple([group, *rest]) in REVIEW_PATHS and version == "v1":
            return self._review(group, rest[0], method, ua, body)
        res = self.resources.get((group, rest[0])) if rest else None
        if res is None and any(r.group == group and r.version == version and not r.custom for r in BUILTINS):
            # a built-in group version answers an unknown resource with a Status, a CRD's group with plain text (32, 12)
            raise APIError(404, status_body(404, "NotFound", "the server could not find the requested resource", {}))
        if res is None or res.version != version:
            raise APIError(404, "404 page not found\n")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub and not ((sub == "status" and res.status) or (sub == "scale" and res.scale)):
            raise APIError(404, "404 page not found\n")
        self._authorize(method, res, sub, name, query, namespace)
        ns = namespace or ""
        if name is None:
            if method == "GET" and _truthy(query.get("watch")):
                return 200, self._watch(res, namespace, query, accept), {}
            if method == "GET":
                return 200, self._list(res, namespace, query, accept), {}
            if method == "POST":
                return self._create(res, ns, query, ua, ctype, body)
            raise APIError(405, status_body(405, "MethodNotAllowed", "method not allowed"))
        if method == "GET":
            obj = self._must_get(res, ns, name)
            return 200, self._scale_view(res, obj) if sub == "scale" else obj, {}
        if method == "PUT":
            return self._update(res, ns, name, sub, query, ua, body)
        if method == "PATCH":
            return self._patch(res, ns, name, sub, query, ua, ctype, body)
        if method == "DELETE":
            return self._delete(res, ns, name, body)
        raise APIError(405, status_body(405, "MethodNotAllowed", "method not allowed"))

    def _discovery_group(self, group: str) -> dict[str, Any]:
        versions = sorted({r.version for r in self.resources.values() if r.group == group})
        if not versions:
            raise APIError(404, "404 page not found\n")
        gv = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gv, "preferredVersion": gv[0]}

    def _discovery_version(self, group: str, version: str) -> dict[str, Any]:
        found = [r for r in self.resources.values() if r.group == group and r.version == version]
        if not found:
            raise APIError(404, "404 page not found\n")
        resources = []
        for r in found:
            digest = base64.b64encode(uuid.uuid5(uuid.NAMESPACE_URL, f"{r.group}/{r.version}/{r.plural}").bytes[:8]).decode()
            resources.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced, "kind": r.kind,
                              "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
                              "storageVersionHash": digest})
            if r.status:
                resources.append({"name": f"{r.plural}/status", "singularName": "", "namespaced": r.namespaced,
                                  "kind": r.kind, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}", "resources": resources}

    def _list(self, res: Resource, namespace: str | None, query: dict[str, str], accept: str | None = None) -> dict[str, Any]:
        selector = query.get("labelSelector", "")
        try:
            requirements = selectors.parse(selector)
        except selectors.SelectorError as exc:  # a malformed selector is a plain 400 (32)
            raise bad_request(str(exc)) from None
        fsel = query.get("fieldSelector", "")
        group = "" if res.plural == "events" else res.group
        keys = sorted(k for k in self.objects if k[0] == group and k[1] == res.plural and (namespace is None or k[2] == namespace))
        list_rv = str(self.rv)
        start_after = None
        token = query.get("continue")
        if token:
            try:
                decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
                start_after, list_rv = tuple(decoded["start"]), str(decoded["rv"])
            except Exception:  # the server's message names the JSON decoding failure, as Go's json does
                raise bad_request(f"invalid continue token: continue key is not valid: {_go_json_error(token)}") from None
        limit = int(query.get("limit") or 0)
        if query.get("resourceVersion") == "0":
            limit = 0
        items, last_key, more = [], None, False
        for k in keys:
            if start_after is not None and list(k) <= list(start_after):
                continue
            if limit and len(items) >= limit:
                more = True
                break
            obj = _event_view(res, self.objects[k]) if res.plural == "events" else self.objects[k]
            last_key = k
            if selector and not selectors.matches(requirements, obj["metadata"].get("labels")):
                continue
            if fsel and not all(str(_get_field(obj, f.split("=")[0])) == f.split("=", 1)[1] for f in fsel.split(",")):
                continue
            items.append(self._list_item(res, obj))
        meta: dict[str, Any] = {"resourceVersion": list_rv}
        if more and last_key is not None:
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"v": "meta.k8s.io/v1", "rv": int(list_rv), "start": list(last_key)}).encode()
            ).decode().rstrip("=")
            if not selector and not fsel:
                meta["remainingItemCount"] = sum(1 for k in keys if list(k) > list(last_key))
        if partial_metadata_view(accept or "") == PARTIAL_LIST:  # metadata only, chosen by the Accept header
            return {"kind": PARTIAL_LIST, "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": [as_partial(i) for i in items]}
        if res.custom:
            meta.setdefault("continue", "")
            return {"apiVersion": res.api_version, "items": items, "kind": f"{res.kind}List",
                    "metadata": dict(sorted(meta.items()))}
        return {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta, "items": items}

    def _list_item(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        item = copy.deepcopy(obj)
        if not res.custom:
            item.pop("kind", None)
            item.pop("apiVersion", None)
        return item

    def _watch(self, res: Resource, namespace: str | None, query: dict[str, str], accept: str | None) -> WatchStream:
        """Open a WATCH (called under the lock, so its start is consistent with the store)."""
        try:
            requirements = selectors.parse(query.get("labelSelector", ""))
        except selectors.SelectorError as exc:
            raise bad_request(str(exc)) from None
        resource = ("" if res.plural == "events" else res.group, res.plural)
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        timeout = float(query.get("timeoutSeconds") or 1800)  # the apiserver's default is 30-60 min
        path = ("/apis/" if res.group else "/api/") + res.api_version + (f"/namespaces/{namespace}" if namespace else "") + f"/{res.plural}"
        stream = WatchStream(self.watch_cache, resource, res.kind, res.api_version, path, namespace, requirements, self.rv,
                             timeout, bookmarks, partial=partial_metadata_view(accept or "") is not None)
        rv = query.get("resourceVersion", "")
        if _truthy(query.get("sendInitialEvents")):
            if bookmarks:  # the streaming list, refused by that cluster's storage (33)
                stream.error = status_body(500, "InternalError", "a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled")
                return stream
            rv = ""
        if rv in ("", "0"):  # start from the current state: an ADDED per object first (33; API Concepts)
            keys = sorted(k for k in self.objects if k[:2] == resource)
            stream.initial = [copy.deepcopy(self.objects[k]) for k in keys if stream._selected(k, self.objects[k])]
        else:
            try:
                stream.rv = int(rv)
                self.watch_cache.since(resource, stream.rv)
            except ValueError:
                raise bad_request(f"invalid resource version: {rv}") from None
            except Expired as exc:  # HTTP 200, then one ERROR event and the close (32)
                stream.error = status_body(410, "Expired", f"too old resource version: {rv} ({exc.floor})")
        with self.watch_cache.cond:
            self.watches.append(stream)
        return stream


def _go_json_error(token: str) -> str:
    """encoding/json's complaint about a continue token that base64-decodes to non-JSON."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except Exception:
        return "illegal base64 data"
    first = raw[:1].decode("latin-1") or " "
    shown = first if first.isprintable() and first.isascii() else f"\\u{ord(first):04x}"
    return f"invalid character '{shown}' looking for beginning of value"
