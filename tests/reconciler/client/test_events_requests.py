"""What the Event recorder (reconciler/client/events.py) sends, request by request: the body the API
server receives, the method and the verb it is counted under, and the line an operator reads when the
POST is refused. test_events.py reads the Events as the fake API server stored them, which fills a
missing apiVersion, kind or namespace from the URL, as kube-apiserver does: the body itself is pinned here."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from memcached_gitops.reconciler.client.api import APIError, KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.events import EventRecorder

from fakeapi.server import FakeAPIServer, Fault


def cr() -> dict[str, Any]:
    return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
            "metadata": {"name": "sessions", "namespace": "team-a", "uid": "0f0e-uid"}, "status": {}}


class Recording:
    """The API client's ``request``: records each call, answers ``fail`` when set."""

    def __init__(self, fail: APIError | None = None) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.fail = fail

    def request(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        if self.fail is not None:
            raise self.fail
        return kwargs.get("body")


def test_the_event_body_sent_is_a_core_v1_event_in_the_crs_namespace() -> None:
    """The body is what kube-apiserver decodes: an unknown key in it is an unknown field (a warning, or a
    refusal under strict field validation), and the Event's namespace must be the URL's."""
    api = Recording()
    EventRecorder(api).record(cr(), "Warning", "ApplyFailed", "HTTP 422: refused")  # type: ignore[arg-type]
    [(args, kwargs)] = api.calls
    assert args == ("POST", "/api/v1/namespaces/team-a/events")
    body = kwargs["body"]
    assert re.fullmatch(r"sessions\.[0-9a-f]+", body["metadata"].pop("name"))
    now = body["firstTimestamp"]
    assert body == {
        "apiVersion": "v1", "kind": "Event", "metadata": {"namespace": "team-a"},
        "involvedObject": {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "sessions",
                           "namespace": "team-a", "uid": "0f0e-uid"},
        "reason": "ApplyFailed", "message": "HTTP 422: refused", "type": "Warning", "count": 1,
        "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "memcached-gitops"},
        "reportingComponent": "memcached-gitops", "reportingInstance": "memcached-gitops"}


def test_an_event_is_one_post_counted_as_a_create_request() -> None:
    """The cycle's request counts and rest_client_requests_total name the verb and the HTTP method: an
    Event is a create, sent as POST (HTTP methods are case-sensitive)."""
    with FakeAPIServer(namespaces=("team-a",)) as server:
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=1, base=0.01, cap=0.01))
        EventRecorder(api).record(cr(), "Normal", "DriftCorrected", "corrected")
        assert [w.method for w in server.writes()] == ["POST"]
    assert dict(api.requests) == {"create": 1}
    assert [(status, method) for status, method, _ in api.results] == [("201", "POST")]


def test_a_refused_event_is_logged_in_exactly_these_words(caplog: pytest.LogCaptureFixture) -> None:
    with FakeAPIServer(namespaces=("team-a",)) as server:
        server.faults.append(Fault(method="POST", path_contains="/events", status=403,
                                   body={"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
                                         "message": "events is forbidden", "code": 403}))
        api = KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=1, base=0.01, cap=0.01))
        with caplog.at_level(logging.WARNING, logger="memcached_gitops.reconciler"):
            EventRecorder(api).record(cr(), "Warning", "DriftDetected", "drift")
    assert [r.getMessage() for r in caplog.records if r.name == "memcached_gitops.reconciler"] == [
        "could not record event DriftDetected on team-a/sessions: HTTP 403: events is forbidden"]


def test_a_failure_other_than_an_api_answer_is_not_swallowed() -> None:
    """Best effort covers the API server's refusals only: a bug in building the Event must surface."""
    api = Recording(fail=None)
    api.request = lambda *a, **k: (_ for _ in ()).throw(TypeError("bug"))  # type: ignore[method-assign]
    with pytest.raises(TypeError):
        EventRecorder(api).record(cr(), "Normal", "DriftCorrected", "corrected")  # type: ignore[arg-type]
