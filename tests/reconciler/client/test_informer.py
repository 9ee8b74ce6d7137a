"""The informer against a scripted HTTP stub: each request gets the next scripted answer.

The answers are shaped after transcripts 30-33 (one JSON event a line, a BOOKMARK before the
close, a 410 ERROR event, a refused streaming list, a 400 Status for a malformed selector).
The scenarios against the fake API server are in test_controller.py.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.informer import Informer, Kind, Store, slim
from memcached_gitops.reconciler.orchestration.metrics import Metrics

DEPLOYMENTS = Kind("Deployment", "apps", "v1", "deployments", selector="app.kubernetes.io/managed-by=memcached-gitops",
                   keep_managed_fields=True)
PODS = Kind("Pod", "", "v1", "pods", selector="app.kubernetes.io/managed-by=memcached-gitops", metadata_only=True)


def dep(name: str, rv: str, replicas: int = 1) -> dict[str, Any]:
    return {"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "managedFields": [{"manager": "m"}]},
            "spec": {"replicas": replicas}}


class Stub:
    """Answers requests from a script: ``(status, body)`` for a LIST, ``(status, [events or ("sleep", s)])``
    for a WATCH. Records each request's query."""

    def __init__(self, script: list[tuple[int, Any]]) -> None:
        self.script, self.requests = list(script), []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                stub.requests.append((url.path, query, self.headers.get("Accept")))
                status, body = stub.script.pop(0) if stub.script else (200, [("sleep", 30)])
                if not isinstance(body, list):
                    data = json.dumps(body).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                opened = time.monotonic()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                for item in body:
                    if isinstance(item, tuple) and item[0] == "drop":  # the connection breaks mid-stream
                        self.wfile.write(b"ff\r\n{")
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    if isinstance(item, tuple):
                        time.sleep(item[1])
                        continue
                    line = json.dumps(item).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                if "timeoutSeconds" in query and status == 200 and not any(i.get("type") == "ERROR" for i in body if isinstance(i, dict)):
                    time.sleep(max(0.0, opened + float(query["timeoutSeconds"]) - time.monotonic()))  # closes at timeoutSeconds
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()


def run_informer(script: list[tuple[int, Any]], kind: Kind = DEPLOYMENTS, until=None, **kwargs: Any):
    stub = Stub(script)
    events: list[tuple[str, str]] = []
    api = KubeAPI.connect(host=stub.url, retry=RetryPolicy(attempts=1))
    metrics = Metrics()
    inf = Informer(api, kind, lambda k, t, o, old, at: events.append((t, o["metadata"]["name"])), namespace="ns",
                   metrics=metrics, backoff_base=0.01, backoff_cap=0.05, **kwargs)
    inf.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (until(inf, events) if until else inf.error):
        time.sleep(0.01)
    inf.stop.set()
    stub.close()
    return inf, events, stub.requests, metrics


LIST = (200, {"kind": "DeploymentList", "metadata": {"resourceVersion": "288"}, "items": [dep("a", "280")]})
REFUSED = (200, [{"type": "ERROR", "object": {
    "kind": "Status", "code": 500, "reason": "InternalError",
    "message": "a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled"}}])


def test_list_then_watch_from_its_version_and_resume_from_the_bookmark() -> None:
    """Transcripts 30 and 33: watch from the LIST's resourceVersion; resume from the last one seen."""
    script = [REFUSED, LIST,
              (200, [{"type": "ADDED", "object": dep("b", "289")}, {"type": "MODIFIED", "object": dep("a", "290", 3)},
                     {"type": "BOOKMARK",
                      "object": {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"resourceVersion": "297"}}}]),
              (200, [{"type": "DELETED", "object": dep("b", "298")}])]
    inf, events, requests, metrics = run_informer(script, until=lambda i, e: ("DELETED", "b") in e, watch_timeout=1)
    assert events == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    streaming, listing, first, second = (r[1] for r in requests[:4])
    assert streaming["sendInitialEvents"] == "true", "the streaming list is tried first"
    assert "watch" not in listing and listing["labelSelector"] == DEPLOYMENTS.selector
    assert first["resourceVersion"] == "288" and first["allowWatchBookmarks"] == "true" and first["timeoutSeconds"] == "1"
    assert second["resourceVersion"] == "297", "resumed from the BOOKMARK"
    assert inf.store.get(("ns", "a"))["spec"]["replicas"] == 3
    assert inf.store.get(("ns", "a"))["metadata"]["managedFields"], "Deployments keep managedFields"
    assert inf.store.get(("ns", "b")) is None
    assert inf.store.keys() == [("ns", "a")], "a BOOKMARK moves the resourceVersion and is never an object of the store"
    assert metrics.value("memcached_gitops_watch_events_total", {"kind": "Deployment", "type": "MODIFIED"}) == 1
    assert metrics.value("memcached_gitops_watch_restarts_total", {"kind": "Deployment", "reason": "closed"}) >= 1
    assert metrics.value("memcached_gitops_watch_restarts_total", {"kind": "Deployment", "reason": "dropped"}) == 0
    assert all("sendInitialEvents" not in r[1] for r in requests[2:]), "a refused streaming list is not tried again"


def test_410_leads_to_a_new_list_and_the_differences_are_reported() -> None:
    """Transcript 32: a 410 ERROR event, then a fresh LIST."""
    expired = (200, [{"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                                                  "reason": "Expired", "message": "too old resource version: 288 (351)"}}])
    relist = (200, {"kind": "DeploymentList", "metadata": {"resourceVersion": "355"}, "items": [dep("a", "342", 2), dep("c", "350")]})
    inf, events, requests, metrics = run_informer([REFUSED, LIST, expired, relist],
                                                  until=lambda i, e: i.resource_version == "355" and len(e) >= 3)
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "c")]
    assert "watch" not in requests[3][1], "a LIST after the 410"
    assert metrics.value("memcached_gitops_watch_restarts_total", {"kind": "Deployment", "reason": "expired"}) == 1


def test_a_malformed_request_is_a_clear_error_not_a_retry_loop() -> None:
    """Transcript 32: a malformed labelSelector is a plain 400 Status."""
    bad = (400, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "BadRequest", "code": 400,
                 "message": "unable to parse requirement: found '', expected: ',', ')' or identifier"})
    inf, events, requests, _ = run_informer([REFUSED, bad])
    assert "HTTP 400" in inf.error and "unable to parse requirement" in inf.error
    time.sleep(0.2)
    assert len(requests) == 2


def test_a_silent_watch_is_detected_and_reopened() -> None:
    silent = (200, [("sleep", 3)])
    inf, events, requests, metrics = run_informer(
        [REFUSED, LIST, silent, (200, [{"type": "MODIFIED", "object": dep("a", "300", 2)}])],
        until=lambda i, e: ("MODIFIED", "a") in e, watch_timeout=1, silence_grace=0.3)
    assert metrics.value("memcached_gitops_watch_restarts_total", {"kind": "Deployment", "reason": "silent"}) == 1
    assert requests[3][1]["resourceVersion"] == "288"


def test_a_streaming_list_that_is_served_fills_the_store() -> None:
    """KEP-3157's initial events and end BOOKMARK (not recorded: the recorded server refused it)."""
    served = (200, [{"type": "ADDED", "object": dep("a", "280")},
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "290",
                                                                 "annotations": {"k8s.io/initial-events-end": "true"}}}}])
    inf, events, requests, _ = run_informer([served, (200, [("sleep", 2)])], until=lambda i, e: bool(e))
    assert events == [("ADDED", "a")] and inf.synced.is_set() and inf.resource_version == "290"
    assert len(requests) <= 2 and all("sendInitialEvents" not in r[1] for r in requests[1:]), "no LIST after a served streaming list"


def test_pods_are_asked_for_and_kept_as_metadata_only() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "5", "labels": {"x": "y"}, "managedFields": [{}]},
           "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}}
    inf, events, requests, _ = run_informer([REFUSED, (200, {"metadata": {"resourceVersion": "9"}, "items": [pod]})], kind=PODS,
                                            until=lambda i, e: bool(e))
    assert "as=PartialObjectMetadataList" in requests[1][2]
    assert inf.store.get(("ns", "p")) == {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "5", "labels": {"x": "y"}}}


def test_crs_lose_managed_fields_and_write_through_keeps_the_newest() -> None:
    cr_kind = Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds")
    assert "managedFields" not in slim(cr_kind, dep("a", "1"))["metadata"]
    store = Store()
    store.put(dep("a", "10"))
    assert store.put_if_newer(dep("a", "12"))
    assert not store.put_if_newer(dep("a", "11")), "an older answer never replaces a newer event"
    assert store.get(("ns", "a"))["metadata"]["resourceVersion"] == "12"


def test_a_dropped_connection_is_retried_from_the_last_version() -> None:
    dropped = (200, [{"type": "MODIFIED", "object": dep("a", "289", 2)}, ("drop", 0)])
    inf, events, requests, metrics = run_informer([REFUSED, LIST, dropped, (200, [{"type": "MODIFIED", "object": dep("a", "290", 3)}])],
                                                  until=lambda i, e: e.count(("MODIFIED", "a")) == 2, watch_timeout=1)
    assert metrics.value("memcached_gitops_watch_restarts_total", {"kind": "Deployment", "reason": "dropped"}) == 1
    assert requests[3][1]["resourceVersion"] == "289"


def test_the_cache_shares_identical_pod_specs_and_keeps_values() -> None:
    from memcached_gitops.render import render

    def rendered(name: str) -> dict[str, Any]:
        d = render({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"size": 1, "containerPort": 11211}})[0]
        d["metadata"]["managedFields"] = [{"manager": "memcached-gitops", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]
        return d

    a, b = rendered("a"), rendered("b")
    sa, sb = slim(DEPLOYMENTS, json.loads(json.dumps(a))), slim(DEPLOYMENTS, json.loads(json.dumps(b)))
    assert sa == a and sb == b, "compaction changes no value"
    assert sa["spec"]["template"]["spec"] is sb["spec"]["template"]["spec"], "one copy of an identical pod spec"
    assert sa["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"] is sb["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
    assert sa["metadata"]["labels"] is not sb["metadata"]["labels"]


def test_a_relist_hands_the_controller_the_previous_object_and_the_arrival_time() -> None:
    """The controller compares old and new (a kept selector's Pod labels, an HPA's target): after a
    410, the relist's MODIFIED event carries the object as the store had it."""
    expired = (200, [{"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                                                  "reason": "Expired", "message": "too old resource version: 288 (351)"}}])
    relist = (200, {"kind": "DeploymentList", "metadata": {"resourceVersion": "355"}, "items": [dep("a", "342", 2)]})
    stub = Stub([REFUSED, LIST, expired, relist])
    seen: list[tuple[str, Any, Any, Any]] = []
    api = KubeAPI.connect(host=stub.url, retry=RetryPolicy(attempts=1))
    inf = Informer(api, DEPLOYMENTS, lambda k, t, o, old, at: seen.append((t, o, old, at)), namespace="ns",
                   backoff_base=0.01, backoff_cap=0.05)
    started = time.monotonic()
    inf.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(seen) < 2:
        time.sleep(0.01)
    inf.stop.set()
    stub.close()
    (added, new, none, first_at), (modified, now, before, at) = seen[:2]
    assert (added, none, modified) == ("ADDED", None, "MODIFIED")
    assert before["metadata"]["resourceVersion"] == "280" and now["metadata"]["resourceVersion"] == "342"
    assert started <= first_at <= at <= time.monotonic()
