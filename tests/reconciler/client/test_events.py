"""The Events posted on a CR: core/v1 Events in the shape client-go's record.EventRecorder writes
(k8s.io/client-go/tools/record/event.go ``makeEvent``: involvedObject from the object's reference,
the Event in the object's namespace, named ``<object name>.<unique hex>``, count 1, first and last
timestamps the same metav1.Time), sent to the fake API server over real HTTP."""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.client.events import EventRecorder
from memcached_gitops.reconciler.decisions.vocabulary import MESSAGE_LIMIT

from fakeapi.server import FakeAPIServer, Fault

#: metav1.Time marshals as RFC 3339 in UTC to the second (apimachinery pkg/apis/meta/v1/time.go
#: ``MarshalJSON``: ``t.UTC().Format(time.RFC3339)``), which is what kubectl describe reads back.
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def cr(namespace: str = "team-a", **status: Any) -> dict[str, Any]:
    return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
            "metadata": {"name": "sessions", "namespace": namespace, "uid": "0f0e-uid"}, "status": status}


@pytest.fixture
def server() -> Iterator[FakeAPIServer]:
    with FakeAPIServer(namespaces=("default", "team-a")) as api:
        yield api


def recorder(server: FakeAPIServer, enabled: bool = True) -> EventRecorder:
    return EventRecorder(KubeAPI.connect(host=server.url, retry=RetryPolicy(attempts=1, base=0.01, cap=0.01)), enabled)


def posted(server: FakeAPIServer) -> list[dict[str, Any]]:
    with server.lock:
        return [o for (_, plural, _, _), o in server.objects.items() if plural == "events"]


def test_an_event_is_posted_in_the_crs_namespace_about_the_cr_as_record_makes_it(server: FakeAPIServer) -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    recorder(server).record(cr(), "Normal", "DriftCorrected", "Deployment sessions-memcached corrected")
    after = dt.datetime.now(dt.UTC)
    [write] = [r for r in server.writes() if r.method == "POST"]
    assert write.path == "/api/v1/namespaces/team-a/events"  # core/v1, the CR's namespace
    [event] = posted(server)
    assert event["metadata"]["namespace"] == "team-a"
    assert re.fullmatch(r"sessions\.[0-9a-f]+", event["metadata"]["name"])
    assert event["involvedObject"] == {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                       "name": "sessions", "namespace": "team-a", "uid": "0f0e-uid"}
    assert (event["type"], event["reason"], event["message"], event["count"]) == (
        "Normal", "DriftCorrected", "Deployment sessions-memcached corrected", 1)
    assert event["source"] == {"component": "memcached-gitops"}
    assert event["reportingComponent"] == event["reportingInstance"] == "memcached-gitops"
    first = event["firstTimestamp"]
    assert RFC3339_UTC.fullmatch(first) and event["lastTimestamp"] == first
    assert before <= dt.datetime.fromisoformat(first) <= after


def test_event_timestamps_are_utc_whatever_the_local_zone(server: FakeAPIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 'Z' says UTC: a local wall time under it would put the Event hours off in kubectl describe."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30, no daylight saving: never equal to UTC
    time.tzset()
    try:
        recorder(server).record(cr(), "Warning", "DriftDetected", "drift")
    finally:
        monkeypatch.undo()
        time.tzset()
    [event] = posted(server)
    stamp = dt.datetime.fromisoformat(event["firstTimestamp"])
    assert abs((dt.datetime.now(dt.UTC) - stamp).total_seconds()) < 60


def test_two_events_in_the_same_second_have_distinct_names(server: FakeAPIServer) -> None:
    """record makes each name unique (``<name>.<hex>``): the second POST is not a 409 AlreadyExists."""
    events = recorder(server)
    events.record(cr(), "Normal", "DriftCorrected", "one")
    events.record(cr(), "Normal", "DriftCorrected", "two")
    assert sorted(e["message"] for e in posted(server)) == ["one", "two"]


def test_an_events_message_is_bounded(server: FakeAPIServer) -> None:
    recorder(server).record(cr(), "Warning", "ApplyFailed", "x" * (MESSAGE_LIMIT + 50))
    [event] = posted(server)
    assert event["message"] == "x" * MESSAGE_LIMIT


def test_warn_once_is_silent_only_while_degraded_says_the_same_reason_and_message(server: FakeAPIServer) -> None:
    events = recorder(server)
    said = {"type": "Degraded", "status": "True", "reason": "ApplyFailed", "message": "HTTP 422: refused"}
    events.warn_once(cr(conditions=[said]), "ApplyFailed", "HTTP 422: refused")
    assert posted(server) == []
    events.warn_once(cr(conditions=[said]), "ApplyFailed", "HTTP 403: forbidden")  # same reason, new words
    events.warn_once(cr(conditions=[said]), "SelectorOverlap", "HTTP 422: refused")  # same words, new reason
    events.warn_once(cr(conditions=[{**said, "type": "Ready"}]), "ApplyFailed", "HTTP 422: refused")  # not Degraded
    assert sorted((e["type"], e["reason"], e["message"]) for e in posted(server)) == [
        ("Warning", "ApplyFailed", "HTTP 403: forbidden"), ("Warning", "ApplyFailed", "HTTP 422: refused"),
        ("Warning", "SelectorOverlap", "HTTP 422: refused")]


def test_warn_once_is_silent_while_a_degraded_false_condition_says_the_same_news(server: FakeAPIServer) -> None:
    """News that is no failure (SelectorOverlap on an inherited Deployment, observed without --adopt) is
    reported on Degraded with status False: while it says the same reason and message, every later
    reconcile (each event, each resync) adds no Warning, as for a failure on Degraded=True."""
    news = {"type": "Degraded", "status": "False", "reason": "SelectorOverlap", "message": "its selector takes in b's Pods"}
    recorder(server).warn_once(cr(conditions=[news]), "SelectorOverlap", "its selector takes in b's Pods")
    assert posted(server) == []


def test_a_disabled_recorder_sends_nothing(server: FakeAPIServer) -> None:
    server.reset_log()
    events = recorder(server, enabled=False)
    events.record(cr(), "Normal", "DriftCorrected", "corrected")
    events.warn_once(cr(), "ApplyFailed", "refused")
    assert server.writes() == []


def test_a_refused_event_is_logged_and_not_raised(server: FakeAPIServer, caplog: pytest.LogCaptureFixture) -> None:
    server.faults.append(Fault(method="POST", path_contains="/events", status=403,
                               body={"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
                                     "message": "events is forbidden", "code": 403}))
    with caplog.at_level(logging.WARNING, logger="memcached_gitops.reconciler"):
        recorder(server).record(cr(), "Warning", "DriftDetected", "drift")
    assert posted(server) == []
    assert "could not record event DriftDetected on team-a/sessions: HTTP 403: events is forbidden" in caplog.text
