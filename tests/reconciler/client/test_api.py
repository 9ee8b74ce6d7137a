"""The client's own requests against the fake API server: paging keeps the label selector on every
page, and a 429's Retry-After is the wait (client-go's rest client: ``checkWait``)."""

from __future__ import annotations

import json
import pathlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from memcached_gitops.reconciler.client.api import APIError, KubeAPI, RetryPolicy, collection_path

from fakeapi.server import FakeAPIServer, Fault

LEASES = collection_path("coordination.k8s.io", "v1", "leases", "default")


def _lease(name: str, labels: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name, "labels": labels}}


def test_every_page_of_a_list_keeps_the_label_selector() -> None:
    """The continue token does not carry the selector: a LIST of 500 per page that dropped it on the
    second page would let a namespace's unlabelled Deployments into the informer's cache."""
    with FakeAPIServer(namespaces=("default",)) as server:
        api = KubeAPI.connect(host=server.url)
        for i in range(6):
            api.request("POST", LEASES, body=_lease(f"l{i}", {"app": "x"} if i % 2 == 0 else {}))
        names = [o["metadata"]["name"] for o in api.list_all(LEASES, label_selector="app=x", limit=2)]
        assert names == ["l0", "l2", "l4"]
        pages = [r for r in server.log if r.method == "GET" and "/leases" in r.path]
        assert len(pages) >= 2 and all(r.query.get("labelSelector") == "app=x" for r in pages), [r.query for r in pages]


def test_a_429s_retry_after_is_the_wait() -> None:
    """Priority and Fairness say how long to wait; a jittered backoff of milliseconds would come back
    at once and be throttled again."""
    slept: list[float] = []
    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method="GET", path_contains="/leases", status=429, retry_after=3, times=1))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=3, base=0.01, cap=5.0, sleep=slept.append))
        assert list(api.list_all(LEASES)) == []
    assert slept == [3.0]


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_a_transient_answer_is_tried_again_and_a_lasting_one_is_not(status: int) -> None:
    """client-go's rest client retries 429 and the gateway's 5xx answers (a proxy or an aggregated API in
    front of the API server: 502, 503, 504) after a backoff; a 4xx but 429 is the answer."""
    slept: list[float] = []
    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method="GET", path_contains="/leases", status=status, times=1))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=3, base=0.01, cap=5.0, sleep=slept.append))
        assert list(api.list_all(LEASES)) == []
        assert len(slept) == 1
        server.faults.append(Fault(method="GET", path_contains="/leases", status=400, times=1))
        with pytest.raises(APIError):
            list(api.list_all(LEASES))
        assert len(slept) == 1, "a 400 is not tried again"


@pytest.mark.parametrize("lost", ["before-the-answer", "while-waiting"])
def test_a_write_is_not_tried_again_once_writes_are_stopped(lost: str) -> None:
    """A write answered 503 waits and is sent again, but only while this replica may write: the Lease
    (or the shard's hold) can be lost before the answer comes or while the backoff waits, and a retry
    sent then would be a write by a replica that no longer leads, beside the new leader's."""
    leading = [True]

    def sleep(_: float) -> None:
        if lost == "while-waiting":
            leading[0] = False

    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method="POST", path_contains="/leases", status=503, times=1))
        if lost == "before-the-answer":
            answer = server.handle

            def losing(method: str, raw_path: str, headers: dict[str, str], body: bytes):  # noqa: ANN202
                leading[0] = False  # the renewal failed while the request was on the wire
                return answer(method, raw_path, headers, body)

            server.handle = losing  # type: ignore[method-assign]
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=3, base=0.01, cap=5.0, sleep=sleep))
        api.may_write = lambda: leading[0]
        with pytest.raises(APIError) as caught:
            api.request("POST", LEASES, body=_lease("l", {}))
        assert [r.method for r in server.log if "/leases" in r.path] == ["POST"], "sent once, never again"
        said = {"while-waiting": (0, "writes are stopped: not the leader, or not this replica's CR"),
                "before-the-answer": (503, "injected fault 503")}[lost]
        assert (caught.value.status, caught.value.message) == said


@pytest.mark.parametrize(("status", "body", "message"), [
    (422, {"kind": "Status", "message": "spec.size: Invalid value: 4", "reason": "Invalid"}, "spec.size: Invalid value: 4"),
    (503, {"kind": "Status", "message": "etcd is busy", "reason": "ServiceUnavailable"}, "etcd is busy"),
    (503, {"kind": "Status", "reason": "ServiceUnavailable"}, "no answer"),
])
def test_an_error_carries_the_servers_status_message_and_body(status: int, body: dict, message: str) -> None:
    """The Status body's message is the error's words (the CR's Degraded condition and the log say them),
    the body kept for its reason; an answer tried again until the attempts run out keeps its last words,
    and every attempt is counted once by its verb, as client-go's rest_client_requests_total counts."""
    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method="POST", path_contains="/leases", status=status, times=3, body=body))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=3, base=0.01, cap=5.0, sleep=lambda _: None))
        with pytest.raises(APIError) as caught:
            api.request("POST", LEASES, body=_lease("l", {}))
        tried = 3 if status == 503 else 1
        assert (caught.value.status, caught.value.message, caught.value.reason) == (status, message, body["reason"])
        assert str(caught.value) == f"HTTP {status}: {message}"
        assert api.requests["post"] == tried and len([r for r in server.log if "/leases" in r.path]) == tried


def test_a_request_says_who_sends_it_and_what_it_sends_and_takes() -> None:
    """The User-Agent names the product (the audit log's userAgent, and the field manager the API
    server derives when none is given: transcript 22); JSON is asked for and sent as JSON, an apply's
    YAML as its own content type."""
    with FakeAPIServer(namespaces=("default",)) as server:
        api = KubeAPI.connect(host=server.url)
        api.request("POST", LEASES, body=_lease("l", {}))
        api.request("PATCH", LEASES + "/l?fieldManager=x&force=true", body=_lease("l", {"a": "b"}),
                    content_type="application/apply-patch+yaml")
        [post, apply] = [r for r in server.log if "/leases" in r.path]
        assert post.user_agent == api.user_agent and post.user_agent.startswith("memcached-gitops/")
        assert (post.content_type, apply.content_type) == ("application/json", "application/apply-patch+yaml")
        assert server.get("coordination.k8s.io", "leases", "default", "l")["metadata"]["labels"] == {"a": "b"}


class _Recorder(ThreadingHTTPServer):
    """A bare HTTP server that keeps each request's line and headers and answers a JSON body (a WATCH:
    one event line, then the end of the stream): what the client puts on the wire, read off the wire."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                recorder.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                watch = "watch=true" in self.path
                body = b'{"type": "ADDED", "object": {"metadata": {"name": "a"}}}\n' if watch else b'{"items": []}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def test_the_kubeconfigs_token_and_server_reach_the_wire_on_requests_and_watches(tmp_path: pathlib.Path) -> None:
    """A kubeconfig's user token is the request's ``Authorization: Bearer`` header (an API server answers
    401 without it), on a WATCH as on any request, and the kubeconfig's server is where both go."""
    with _Recorder() as recorder:
        threading.Thread(target=recorder.serve_forever, daemon=True).start()
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "k", "cluster": {"server": f"http://127.0.0.1:{recorder.server_port}/"}}],
            "users": [{"name": "u", "user": {"token": "s3cret-token"}}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
        api = KubeAPI.connect(kubeconfig=str(kubeconfig))
        assert api.request("GET", "/api/v1/namespaces/default/pods") == {"items": []}
        opened: list[bool] = []
        events = [event for event, _ in api.watch("/api/v1/namespaces/default/pods", {"resourceVersion": "7"}, 5.0,
                                                  opened=lambda: opened.append(True))]
        recorder.shutdown()
    assert events == [{"type": "ADDED", "object": {"metadata": {"name": "a"}}}] and opened == [True]
    [(get_path, get_headers), (watch_path, watch_headers)] = recorder.seen
    assert get_path == "/api/v1/namespaces/default/pods"
    assert watch_path.startswith("/api/v1/namespaces/default/pods?") and "watch=true" in watch_path and "resourceVersion=7" in watch_path
    for headers in (get_headers, watch_headers):
        assert headers.get("authorization") == "Bearer s3cret-token"
        assert headers.get("accept") == "application/json" and headers.get("user-agent", "").startswith("memcached-gitops/")
