"""An in-process fake kube-apiserver on 127.0.0.1 that the real kubernetes client talks to.

It implements the parts of the Kubernetes API the reconciler uses, following the API
documentation ("API Concepts": resourceVersion, LIST chunking with limit/continue, generation;
"Server-Side Apply": field ownership, conflicts, force; "Status" subresources; JSON merge patch
RFC 7386; JSON patch RFC 6902) and the recorded kube-apiserver v1.36.2 exchanges in
tests/fixtures/apiserver-transcripts (tests/test_fake_apiserver_replay.py replays every one).
It never looks at what the reconciler would like: where the docs and the recordings disagree,
the recordings win (see their README's "Surprises").

Also: a request log and fault injection (status, Retry-After, latency). Optional RBAC enforcement
of a ClusterRole and the OwnerReferencesPermissionEnforcement admission plugin: admission.py.
``DeploymentController`` (controllers.py) plays the controller (status and pods).

WATCH (``?watch=true``; rules and their transcripts in watch.py) for every resource, per namespace
or across all, with ``labelSelector``, ``resourceVersion``, ``allowWatchBookmarks``,
``timeoutSeconds`` (default 1800) and ``sendInitialEvents``. ``Accept:
application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`` (``...List`` for a LIST) serves
metadata only. For tests:

- ``FakeAPIServer(watch_window=N)``: each resource keeps its last N changes; resuming from an older
  resourceVersion gets the 410 ERROR event.
- ``api.drop_watches(path_contains="")``: open streams are cut mid-stream (no final chunk).
- ``api.silence_watches(path_contains="")``: open streams hang: open, but nothing more is sent,
  not even the close, until they are cut.
- ``api.compact()``: forget the history; any earlier resourceVersion is now a 410.
- ``api.restart(downtime=0.2)``: cut every watch and connection, refuse connections for
  ``downtime`` seconds, forget the history; objects survive.
- ``Fault(path_contains=..., watch="expired" | "silent" | "drop")``: the next matching WATCH
  requests fail that way.
- ``api.log``: each ``LoggedRequest`` has ``received`` (time.monotonic()) and ``received_at``
  (time.time()), stamped when the request arrived, as the API server's audit log does.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from memcached_gitops.schemas.crd import builtin_crd_text

from memcached_gitops.yamlreader import iter_documents

from . import selectors
from .admission import Admission, Authorizer
from .controllers import DeploymentController
from .errors import APIError, bad_request, conflict_modified, invalid, not_found, status_body
from .fieldmanager import FieldManager, manager_from_user_agent
from .resources import BUILTINS, Resource
from .storage import Storage, _event_view, _RecordingStore
from .verbs import Verbs, json_patch, merge_patch, strategic_merge_patch
from .watch import PARTIAL_LIST, Expired, WatchCache, WatchStream, as_partial, partial_metadata_view

#: What tests and benchmarks import from fakeapi.server, wherever in the package it is defined.
__all__ = [
    "APIError", "DeploymentController", "FakeAPIServer", "Fault", "LoggedRequest", "bad_request", "conflict_modified",
    "invalid", "json_patch", "manager_from_user_agent", "merge_patch", "not_found", "status_body", "strategic_merge_patch",
]


def _get_field(obj: dict[str, Any], dotted: str) -> Any:
    cur: Any = obj
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def _truthy(value: str | None) -> bool:
    """A boolean query parameter as Go's strconv.ParseBool reads it (the Python client sends True)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


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


@dataclass
class FakeAPIServer(Verbs, FieldManager, Admission, Authorizer, Storage):
    """The fake. Use as a context manager: ``with FakeAPIServer() as api: api.url``."""

    crd_texts: list[str] = field(default_factory=lambda: [builtin_crd_text()])
    rbac_rules: list[dict[str, Any]] | None = None  # a ClusterRole's rules; None: allow everything
    namespaces: tuple[str, ...] = ("default",)
    watch_window: int = 10_000  # changes of each resource a WATCH can resume from; older is 410 (32)
    #: kube-apiserver's --enable-admission-plugins=OwnerReferencesPermissionEnforcement (OpenShift has it on)
    owner_references_permission_enforcement: bool = False
    rbac_user: str = "system:serviceaccount:test:reconciler"  # who the RBAC-checked requests come from

    def __post_init__(self) -> None:
        self.lock = threading.RLock()
        self.rv = 100
        self.watch_cache = WatchCache(self.watch_window, self.rv)
        self.watches: list[WatchStream] = []  # open WATCH streams
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = _RecordingStore(self._record)  # (group, plural, ns, name)
        self.log: list[LoggedRequest] = []
        self.faults: list[Fault] = []
        self.authorized_requests: list[tuple[str, str, str]] = []  # (group, resource, verb), with RBAC on
        self.resources: dict[tuple[str, str], Resource] = {(r.group, r.plural): r for r in BUILTINS}
        self.clock: Callable[[], str] = self._tick
        for ns in self.namespaces:
            self._store_namespace(ns)
        for text in self.crd_texts:
            crd = next(d.value for d in iter_documents(text) if isinstance(d.value, dict))
            self._install_crd(crd, "setup")
        self._httpd: ThreadingHTTPServer | None = None

    # ---- lifecycle
    def __enter__(self) -> FakeAPIServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> str:
        fake = self

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

        self._httpd = _HTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.serve_in_background()
        return self.url

    def stop(self) -> None:
        if self._httpd:
            self.drop_watches()
            self._httpd.stop_listening()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # ---- helpers for tests
    def get(self, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        obj = self.objects.get((group, plural, namespace, name))
        return copy.deepcopy(obj) if obj else None

    def writes(self) -> list[LoggedRequest]:
        return [r for r in self.log if r.is_write]

    def reset_log(self) -> None:
        with self.lock:
            self.log.clear()

    # ---- WATCH and its faults

    def _open_watches(self, path_contains: str) -> list[WatchStream]:
        with self.watch_cache.cond:
            self.watches = [w for w in self.watches if w.state in ("open", "silent")]
            return [w for w in self.watches if path_contains in w.path]

    def drop_watches(self, path_contains: str = "") -> int:
        """Cut the open WATCH streams whose path contains the text, mid-stream, without the final
        chunk (a dropped connection); returns how many."""
        found = self._open_watches(path_contains)
        with self.watch_cache.cond:
            for w in found:
                w.state = "dropped"
            self.watch_cache.cond.notify_all()
        return len(found)

    def silence_watches(self, path_contains: str = "") -> int:
        """The open WATCH streams whose path contains the text hang: the connection stays open but
        sends nothing more, no event, no BOOKMARK, not even the close at timeoutSeconds, until
        drop_watches(), restart() or stop() cuts it (a proxy that lost the stream; nolar/kopf#1276).
        Returns how many."""
        found = self._open_watches(path_contains)
        with self.watch_cache.cond:
            for w in found:
                w.state = "silent"
        return len(found)

    def compact(self) -> None:
        """Forget every change so far: a WATCH from any earlier resourceVersion gets the 410 ERROR
        event (32); open streams go on."""
        with self.lock:
            self.watch_cache.restart(self.rv)

    def restart(self, downtime: float = 0.2) -> None:
        """An API server restart: every open WATCH and connection is cut, new connections are
        refused for ``downtime`` seconds, and the watch history starts at the current
        resourceVersion, so resuming from an older one is a 410 (32). Stored objects survive."""
        with self.lock:
            self.drop_watches()
            self.watch_cache.restart(self.rv)
            if self._httpd is not None:
                self._httpd.refuse_for(downtime)

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

    # ---- the request path
    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes | WatchStream]:
        received, received_at = time.monotonic(), time.time()
        split = urlsplit(raw_path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        ua = headers.get("User-Agent", "")
        ctype = headers.get("Content-Type", "").split(";")[0].strip()
        fault = self._take_fault(method, split.path, query)
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

    def _take_fault(self, method: str, path: str, query: dict[str, str]) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.times > 0 and (f.method is None or f.method == method) and f.path_contains in path:
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

    # ---- routing
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

    # ---- discovery
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

    # ---- LIST
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




def _go_json_error(token: str) -> str:
    """encoding/json's complaint about a continue token that base64-decodes to non-JSON."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except Exception:
        return "illegal base64 data"
    first = raw[:1].decode("latin-1") or " "
    shown = first if first.isprintable() and first.isascii() else f"\\u{ord(first):04x}"
    return f"invalid character '{shown}' looking for beginning of value"


