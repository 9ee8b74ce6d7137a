"""The informer's loop (reconciler/client/informer.py Informer.run) driven in-process, without HTTP.

A scripted stand-in for KubeAPI answers ``list_pages`` and ``watch`` and records what the
informer asked for; a fake monotonic clock lets a stream "last" exactly so long. ``run()`` is
called in the test's own thread and ends when the script is used up (``ScriptDone``), or by
itself for a request the server will never accept. So each test takes milliseconds and never
depends on the machine's timing (the HTTP scenarios are in test_informer.py).

Each test names the rule it pins (client-go's reflector, transcripts 30-33, KEP-3157).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.client import informer
from memcached_gitops.reconciler.client.api import APIError, WatchDropped, WatchSilent
from memcached_gitops.reconciler.client.informer import METADATA_LIST, METADATA_WATCH, Informer, Kind, compact, slim
from memcached_gitops.reconciler.orchestration.metrics import Metrics

SELECTOR = "app.kubernetes.io/managed-by=memcached-gitops"
DEPLOYMENTS = Kind("Deployment", "apps", "v1", "deployments", selector=SELECTOR, keep_managed_fields=True)
PODS = Kind("Pod", "", "v1", "pods", selector=SELECTOR, metadata_only=True)
LOGGER = "memcached_gitops.informer"


class ScriptDone(BaseException):
    """The script is used up: ends ``run()`` (a BaseException, which the loop does not catch)."""


def dep(name: str, rv: str, replicas: int = 1) -> dict[str, Any]:
    return {"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "spec": {"replicas": replicas}}


def page(rv: str | None, *items: dict[str, Any], more: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {} if rv is None else {"resourceVersion": rv}
    if more:
        meta["continue"] = more
    return {"metadata": meta, "items": list(items)}


def bookmark(rv: str, end: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"type": "BOOKMARK", "object": {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": meta}}


def ev(type_: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "object": obj}


REFUSED = ("watch", [{"type": "ERROR", "object": {"kind": "Status", "code": 500, "reason": "InternalError",
                                                  "message": "RequestWatchProgress is disabled"}}])


class FakeAPI:
    """``script``: ("list", [pages] or an exception) and ("watch", [events, seconds to pass, or an
    exception]) answered in order. ``calls``: (verb, path, query, read timeout, accept) of the requests
    the script answered."""

    def __init__(self, script: list[tuple[str, Any]], clock: SimpleNamespace) -> None:
        self.script, self.clock, self.calls = list(script), clock, []

    def _next(self, verb: str) -> Any:
        if not self.script:
            raise ScriptDone()
        want, answer = self.script.pop(0)
        assert want == verb, f"the informer asked for a {verb}, the script expected a {want}"
        return answer

    def list_pages(self, path: str, label_selector: str | None = None, limit: int = 500, accept: str | None = None):
        answer = self._next("list")
        self.calls.append(("list", path, {"labelSelector": label_selector, "limit": limit}, None, accept))
        if isinstance(answer, BaseException):
            raise answer
        yield from answer

    def watch(self, path: str, query: dict[str, Any], read_timeout: float, accept: str | None = None,
              opened: Callable[[], None] | None = None):
        """The script's answer; ``opened`` is called unless the answer starts with a failure (no 200)."""
        answer = self._next("watch")
        self.calls.append(("watch", path, dict(query), read_timeout, accept))
        if opened is not None and not (answer and isinstance(answer[0], BaseException)):
            opened()
        for item in answer:
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, (int, float)):
                self.clock.now += item
                continue
            yield item, self.clock.now


class Run:
    """One informer over a FakeAPI, its handler's calls, its backoff waits and its metrics."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, script: list[tuple[str, Any]], kind: Kind = DEPLOYMENTS,
                 handler: Any = None, **kwargs: Any) -> None:
        self.clock = SimpleNamespace(now=1000.0)
        self.clock.monotonic = lambda: self.clock.now
        monkeypatch.setattr(informer.random, "uniform", lambda a, b: (a + b) / 2)  # jitter factor 1 for (0.5, 1.5)
        self.api = FakeAPI(script, self.clock)
        self.metrics = Metrics()
        self.events: list[tuple[Any, ...]] = []
        self.waits: list[float] = []
        kwargs.setdefault("watch_timeout", 1)  # a stream that ends at once closed "at timeoutSeconds"
        self.inf = Informer(self.api, kind, handler or self.record, namespace="ns", metrics=self.metrics, clock=self.clock.monotonic,
                            **kwargs)
        monkeypatch.setattr(self.inf.stop, "wait", lambda delay: self.waits.append(delay) or False)

    def record(self, kind: str, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, arrived: float) -> None:
        self.events.append((kind, type_, obj["metadata"].get("name"), (old or {}).get("metadata", {}).get("resourceVersion"), arrived))

    def run(self) -> Run:
        try:
            self.inf.run()
        except ScriptDone:
            pass
        return self

    def verbs(self) -> list[str]:
        return [c[0] for c in self.api.calls]

    def restarts(self, reason: str) -> float:
        return self.metrics.value("memcached_gitops_watch_restarts_total", {"kind": self.inf.kind.name, "reason": reason})


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


# ---- what the informer asks for
def test_the_defaults_are_client_gos_and_the_watch_caches(monkeypatch) -> None:
    """Defaults: timeoutSeconds 300, a silence limit of the 60 s BOOKMARK heartbeat plus 10 s of grace,
    LIST pages of 500 (client-go's), backoff from 0.2 s doubling to a cap of 30 s."""
    clock = SimpleNamespace(now=0.0)
    clock.monotonic = lambda: clock.now
    monkeypatch.setattr(informer.random, "uniform", lambda a, b: (a + b) / 2)
    api = FakeAPI([REFUSED, ("list", [page("1")]), ("watch", [WatchDropped("x")])] + [("watch", [WatchDropped("x")])] * 9, clock)
    inf = Informer(api, DEPLOYMENTS, lambda *a: None, clock=clock.monotonic)
    waits: list[float] = []
    monkeypatch.setattr(inf.stop, "wait", lambda delay: waits.append(delay) or False)
    with pytest.raises(ScriptDone):
        inf.run()
    assert api.calls[0][2]["timeoutSeconds"] == "300" and api.calls[0][3] == 70.0
    assert api.calls[1][1:3] == ("/apis/apps/v1/deployments", {"labelSelector": SELECTOR, "limit": 500})
    assert waits == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])


def test_streaming_list_then_watch_queries(monkeypatch) -> None:
    """KEP-3157: the streaming list asks sendInitialEvents with resourceVersionMatch=NotOlderThan,
    the label selector, and the silence limit as its read timeout; the WATCH carries the selector too."""
    r = Run(monkeypatch, [("watch", [ev("ADDED", dep("a", "5")), bookmark("9", end=True)]), ("watch", [])],
            heartbeat=20.0, silence_grace=2.0, watch_timeout=30)
    r.run()
    (verb, path, stream, timeout, accept), (verb2, _, watch, timeout2, accept2) = r.api.calls
    assert (verb, verb2, path) == ("watch", "watch", "/apis/apps/v1/namespaces/ns/deployments")
    assert stream == {"allowWatchBookmarks": "true", "timeoutSeconds": "30", "labelSelector": SELECTOR,
                      "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"}
    assert watch == {"allowWatchBookmarks": "true", "timeoutSeconds": "30", "labelSelector": SELECTOR, "resourceVersion": "9"}
    assert timeout == timeout2 == 22.0 and r.api.calls[1][1] == path
    assert accept is None and accept2 is None, "Deployments are asked for whole (their managedFields name a culprit)"


def test_a_metadata_only_kind_asks_for_partial_object_metadata_everywhere(monkeypatch) -> None:
    """Pods are listed and watched as PartialObjectMetadata (client-go's metadata informer), other kinds as JSON."""
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [])], kind=PODS)
    r.run()
    assert [c[4] for c in r.api.calls] == [METADATA_WATCH, METADATA_LIST, METADATA_WATCH]
    # the API server's words for them (client-go metadata informer's Accept), JSON as the fallback
    assert METADATA_LIST == "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    assert METADATA_WATCH == "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [])])
    r.run()
    assert [c[4] for c in r.api.calls] == [None, None, None]


def test_a_list_of_several_pages_keeps_every_page_and_the_first_pages_version(monkeypatch) -> None:
    """Transcript 11: the pages share the first page's resourceVersion; every page's items are stored."""
    pages = [page("10", dep("a", "4"), more="t1"), page("11", dep("b", "5"), more="t2"), page(None, dep("c", "6"))]
    r = Run(monkeypatch, [REFUSED, ("list", pages), ("watch", [])], page_size=2)
    r.run()
    assert r.api.calls[1][2]["limit"] == 2
    assert sorted(r.inf.store.keys()) == [("ns", "a"), ("ns", "b"), ("ns", "c")]
    assert r.api.calls[2][2]["resourceVersion"] == "10"


def test_a_list_without_a_version_is_listed_again(monkeypatch) -> None:
    """With no resourceVersion to resume from, the next round starts with a fresh LIST, not a WATCH from "now"."""
    r = Run(monkeypatch, [REFUSED, ("list", [page(None, dep("a", "4"))]), ("watch", []), ("list", [page("7")]), ("watch", [])])
    r.run()
    assert r.verbs() == ["watch", "list", "watch", "list", "watch"]
    assert r.api.calls[4][2]["resourceVersion"] == "7"


# ---- the streaming list (KEP-3157)
def test_a_streaming_list_passes_ordinary_bookmarks_until_the_end_marker(monkeypatch) -> None:
    """Only the BOOKMARK annotated k8s.io/initial-events-end ends the initial events; an earlier one is skipped."""
    r = Run(monkeypatch, [("watch", [ev("ADDED", dep("a", "5")), bookmark("6"), ev("ADDED", dep("b", "7")), bookmark("8", end=True)]),
                          ("watch", [])])
    r.run()
    assert r.verbs() == ["watch", "watch"], "served: no LIST"
    assert [(e[1], e[2]) for e in r.events] == [("ADDED", "a"), ("ADDED", "b")]
    assert r.api.calls[1][2]["resourceVersion"] == "8"


@pytest.mark.parametrize(("answer", "reason"), [
    ([{"type": "ERROR", "object": {"code": 500, "message": "RequestWatchProgress is disabled"}}, ev("ADDED", dep("a", "1"))],
     "RequestWatchProgress is disabled"),
    ([{"type": "ERROR", "object": {"code": 500}}], "an ERROR event"),
    ([ev("ADDED", dep("a", "1"))], "the stream ended before the end of its initial events"),
])
def test_a_refused_streaming_list_says_why_and_falls_back_to_list_for_good(monkeypatch, caplog, answer, reason) -> None:
    """Transcript 33: an ERROR event (its message, or "an ERROR event"), or a stream that ends before
    the end marker, is a refusal: logged with the reason, then LIST + WATCH, the streaming list never again."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    expired = ("watch", [{"type": "ERROR", "object": {"code": 410, "message": "too old"}}])
    r = Run(monkeypatch, [("watch", answer), ("list", [page("3")]), expired, ("list", [page("4")]), ("watch", [])])
    r.run()
    assert r.verbs() == ["watch", "list", "watch", "list", "watch"]
    assert f"deployments: streaming list refused ({reason}); using LIST + WATCH" in messages(caplog)
    assert r.inf.store.keys() == [], "the refused stream's objects are not kept"


class SyncedAt(threading.Event):
    """An informer's ``synced`` that notes, when it is set, what the store held and how many events the handler had."""

    def __init__(self, run: Run) -> None:
        super().__init__()
        self.run = run
        self.seen: tuple[list[Any], int] | None = None

    def set(self) -> None:
        if self.seen is None:
            self.seen = (sorted(self.run.inf.store.keys()), len(self.run.events))
        super().set()


@pytest.mark.parametrize("initial", ["list", "streaming list"])
def test_an_informer_says_synced_only_once_its_store_holds_the_initial_state_and_its_handler_was_told(monkeypatch, initial) -> None:
    """``synced`` is what a reader waits for before trusting the store (Caches.absent reads a name missing from
    a synced name index as no such object): it is set only after the whole initial state is in the store and
    each object was handed to the handler, as client-go's registration HasSynced is true only once the initial
    list's items were delivered (tools/cache shared_informer.go), by a LIST as by a streaming list's end marker."""
    items = [dep("a", "5"), dep("b", "6")]
    script = ([("list", [page("7", *items)])] if initial == "list" else
              [("watch", [ev("ADDED", items[0]), ev("ADDED", items[1]), bookmark("7", end=True)])])
    r = Run(monkeypatch, [*script, ("watch", [])], streaming_list=initial != "list")
    r.inf.synced = SyncedAt(r)
    r.run()
    assert r.inf.synced.seen == ([("ns", "a"), ("ns", "b")], 2)


# ---- closing, resuming, backing off
def test_a_stream_closed_within_a_second_of_timeout_seconds_is_the_servers_close(monkeypatch, caplog) -> None:
    """Transcripts 30, 33: the server closes at timeoutSeconds; a close more than 1 s earlier is a
    dropped stream (a restart, a proxy), retried with backoff and logged as such."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [4.0]), ("watch", [3.5]), ("watch", [3.999])],
            watch_timeout=5, backoff_base=0.5)
    r.run()
    assert r.restarts("closed") == 1 and r.restarts("dropped") == 2
    assert r.waits == [0.5, 1.0], "no wait after the close at timeoutSeconds"
    assert messages(caplog).count("deployments: the stream closed before timeoutSeconds; retrying in 0.50s") == 1


def test_a_stream_that_ends_at_once_is_dropped(monkeypatch) -> None:
    """A watch that returns immediately with timeoutSeconds=300 did not reach the server's close."""
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [])], watch_timeout=300)
    r.run()
    assert r.restarts("dropped") == 1 and r.restarts("closed") == 0 and len(r.waits) == 1


def test_the_backoff_starts_over_after_a_normal_close_or_an_event(monkeypatch) -> None:
    """client-go's backoff resets once a watch works: after the close at timeoutSeconds, or an event."""
    drop = ("watch", [WatchDropped("reset by peer")])
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), drop, drop, ("watch", [5.0]), drop, drop,
                          ("watch", [ev("ADDED", dep("a", "4")), WatchDropped("reset by peer")]), drop],
            watch_timeout=5, backoff_base=1.0, backoff_cap=100.0)
    r.run()
    assert r.waits == [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]


def test_a_410_is_logged_with_the_expired_version_and_listed_again(monkeypatch, caplog) -> None:
    """Transcript 32: the 410 ERROR event means LIST again, at once (no backoff)."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    r = Run(monkeypatch, [REFUSED, ("list", [page("288", dep("a", "280"), dep("b", "281"))]),
                          ("watch", [{"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}}]),
                          ("list", [page("355", dep("a", "342"), dep("c", "350"))]), ("watch", [])])
    r.run()
    assert "deployments: resourceVersion 288 expired; listing again" in messages(caplog)
    assert r.verbs()[3] == "list" and r.restarts("expired") == 1 and r.waits == []
    assert sorted(e[1:4] for e in r.events[2:]) == [("ADDED", "c", None), ("DELETED", "b", "281"), ("MODIFIED", "a", "280")], \
        "the relist's events carry the object the store had (the controller compares old and new)"


def test_a_silent_watch_is_logged_and_reopened_at_once_from_the_same_version(monkeypatch, caplog) -> None:
    """A stream quiet past heartbeat + grace is dead (nolar/kopf#1276): re-opened without backoff."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    r = Run(monkeypatch, [REFUSED, ("list", [page("288")]), ("watch", [WatchSilent("nothing for 70s")]), ("watch", [])])
    r.run()
    assert "deployments: the watch went silent (nothing for 70s); reconnecting" in messages(caplog)
    assert r.restarts("silent") == 1 and r.waits == []
    assert r.api.calls[3][2]["resourceVersion"] == "288"


@pytest.mark.parametrize("status", [400, 404, 405, 406, 415, 422])
def test_a_request_the_server_will_never_accept_stops_the_informer(monkeypatch, caplog, status) -> None:
    """A 400 (malformed selector), 404 (unknown resource), 405, 406, 415 or 422 is a clear error, not a retry loop."""
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [APIError(status, "no")]), ("watch", [])])
    r.run()
    assert r.inf.error == f"deployments: the API server refuses the request: HTTP {status}: no"
    assert r.inf.synced.is_set() and r.verbs() == ["watch", "list", "watch"] and r.waits == []
    assert [m for m in messages(caplog) if "refuses" in m] == [r.inf.error]


@pytest.mark.parametrize("status", [401, 403, 429, 500, 503])
def test_other_http_errors_are_retried_and_counted_by_status(monkeypatch, caplog, status) -> None:
    """Any other status (or no answer) is retried with backoff, counted as http-STATUS and logged with the error."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [APIError(status, "busy")]), ("watch", [])],
            backoff_base=0.25)
    r.run()
    assert r.inf.error == "" and r.restarts(f"http-{status}") == 1 and r.restarts("dropped") == 0
    assert f"deployments: HTTP {status}: busy; retrying in 0.25s" in messages(caplog)
    assert r.api.calls[3][2]["resourceVersion"] == "3", "resumed from the last version, not listed again"


def test_a_malformed_event_starts_over_from_a_fresh_list(monkeypatch, caplog) -> None:
    """An unexpected failure (a line that is no event object) is logged, counted as "error", backed
    off, and followed by a fresh LIST: what the store holds may be out of step."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [["not", "an", "event"]]), ("list", [page("9")]), ("watch", [])],
            backoff_base=0.25)
    r.run()
    assert r.verbs() == ["watch", "list", "watch", "list", "watch"]
    failure = "'list' object has no attribute 'get'"
    assert f"deployments: unexpected failure in the informer: {failure}" in messages(caplog)
    assert f"deployments: {failure}; retrying in 0.25s" in messages(caplog)
    assert r.restarts("error") == 1 and r.waits == [0.25]


# ---- the events of a WATCH
def test_an_unknown_event_type_drops_the_stream_naming_the_event(monkeypatch, caplog) -> None:
    """Anything but ADDED, MODIFIED, DELETED, BOOKMARK or ERROR is not a watch stream: dropped, with
    the first 200 characters of what arrived in the log; an event without a type counts as type ""."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    weird = {"type": "WEIRD", "object": {"x": "y" * 300}}
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [weird]), ("watch", [{"object": {}}]), ("watch", [])],
            backoff_base=0.25, backoff_cap=0.25)
    r.run()
    assert f"deployments: not a watch event: {str(weird)[:200]}; retrying in 0.25s" in messages(caplog)
    assert r.restarts("dropped") == 2
    assert r.metrics.value("memcached_gitops_watch_events_total", {"kind": "Deployment", "type": ""}) == 1


@pytest.mark.parametrize(("status", "text"), [({"code": 500, "message": "etcd is down"}, "etcd is down"),
                                              ({"code": 500}, "{'code': 500}")])
def test_an_error_event_other_than_410_drops_the_stream_with_its_message(monkeypatch, caplog, status, text) -> None:
    """An ERROR event that is not a 410 is retried from the same version, its message (or the Status) logged."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [{"type": "ERROR", "object": status}]), ("watch", [])],
            backoff_base=0.25)
    r.run()
    assert f"deployments: ERROR event: {text}; retrying in 0.25s" in messages(caplog)
    assert r.api.calls[3][2]["resourceVersion"] == "3" and r.restarts("expired") == 0


def test_a_bookmark_moves_the_version_and_the_stream_goes_on(monkeypatch) -> None:
    """Transcript 33: a BOOKMARK only moves the resourceVersion; the events after it in the same stream are delivered."""
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [bookmark("5"), ev("ADDED", dep("a", "6")), bookmark("8")]),
                          ("watch", [])])
    r.run()
    assert [(e[1], e[2]) for e in r.events] == [("ADDED", "a")]
    assert r.api.calls[3][2]["resourceVersion"] == "8"


def test_a_bookmark_without_a_version_keeps_the_last_one(monkeypatch) -> None:
    """Only a BOOKMARK that carries a resourceVersion moves the version to resume from: one without
    it (no metadata, or an empty one) leaves the last event's, so the next WATCH resumes there instead
    of starting over from a fresh LIST."""
    bare = {"type": "BOOKMARK", "object": {"kind": "Deployment", "apiVersion": "apps/v1"}}
    empty = {"type": "BOOKMARK", "object": {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"resourceVersion": ""}}}
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [ev("ADDED", dep("a", "6")), bare, empty]), ("watch", [])])
    r.run()
    assert r.verbs() == ["watch", "list", "watch", "watch"]
    assert r.api.calls[3][2]["resourceVersion"] == "6" and r.inf.resource_version == "6"


def test_a_watch_ended_by_the_stop_is_no_restart(monkeypatch) -> None:
    """Stopping the informer (the process's shutdown) ends its watch without a reopening: nothing is
    counted in memcached_gitops_watch_restarts_total for it, and no other WATCH is opened."""
    def stop_on_first(*event: Any) -> None:
        r.inf.stop.set()

    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [ev("ADDED", dep("a", "6")), ev("ADDED", dep("b", "7"))])],
            handler=stop_on_first)
    r.run()
    assert r.verbs() == ["watch", "list", "watch"]
    assert r.restarts("closed") == 0 and r.restarts("dropped") == 0


def test_the_handler_gets_the_kind_the_previous_object_and_the_arrival_time(monkeypatch) -> None:
    """handler(kind, type, object, previous object or None, the monotonic time the event was read)."""
    r = Run(monkeypatch, [REFUSED, ("list", [page("3", dep("a", "2"))]),
                          ("watch", [0.5, ev("MODIFIED", dep("a", "4")), 0.25, ev("DELETED", dep("a", "5")), ev("ADDED", dep("b", "6"))]),
                          ("watch", [])])
    r.run()
    assert r.events == [("Deployment", "ADDED", "a", None, 1000.0), ("Deployment", "MODIFIED", "a", "2", 1000.5),
                        ("Deployment", "DELETED", "a", "4", 1000.75), ("Deployment", "ADDED", "b", None, 1000.75)]
    assert r.inf.store.keys() == [("ns", "b")], "a DELETED event removes the object from the store"


def test_a_failing_handler_is_logged_and_the_watch_goes_on(monkeypatch, caplog) -> None:
    """A handler bug must not kill the watch: logged with the kind, the next event still delivered."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    seen: list[str] = []

    def handler(kind: str, type_: str, obj: dict[str, Any], old: Any, arrived: float) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "a":
            raise RuntimeError("handler bug")

    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [ev("ADDED", dep("a", "4")), ev("ADDED", dep("b", "5"))]),
                          ("watch", [])], handler=handler)
    r.run()
    assert seen == ["a", "b"] and r.api.calls[3][2]["resourceVersion"] == "5"
    assert "deployments: event handler failed" in messages(caplog)


def test_the_informer_runs_in_a_named_daemon_thread() -> None:
    """start(): a daemon thread named informer-PLURAL, so a stuck read never keeps the process alive."""
    release = threading.Event()
    mine: list[threading.Thread] = []

    class Blocking:
        def list_pages(self, *a: Any, **k: Any):
            yield page("1")

        def watch(self, *a: Any, **k: Any):
            release.wait(10)
            return iter(())

    before = set(threading.enumerate())  # other tests' informers may still be winding down
    inf = Informer(Blocking(), DEPLOYMENTS, lambda *a: None, streaming_list=False).start()  # type: ignore[arg-type]
    try:
        assert inf.synced.wait(10)
        mine += [t for t in threading.enumerate() if t not in before and t.name == "informer-deployments"]
        assert len(mine) == 1 and mine[0].daemon
    finally:
        inf.stop.set()
        release.set()
    mine[0].join(10)
    assert not mine[0].is_alive()


# ---- what the store keeps
def test_a_metadata_only_object_keeps_what_the_controller_reads() -> None:
    """Pods: name, namespace, uid, resourceVersion, labels, ownerReferences, deletionTimestamp; nothing else."""
    meta = {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "5", "labels": {"a": "b"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}], "deletionTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {"x": "y"}, "managedFields": [{}], "generation": 2}
    assert slim(PODS, {"metadata": meta, "spec": {}, "status": {}}) == {
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences", "deletionTimestamp")}}


def test_a_metadata_only_object_is_compacted_against_its_stored_version_too() -> None:
    """A Pod's event (its status moved) keeps the stored labels and ownerReferences objects."""
    def pod(rv: str) -> dict[str, Any]:
        return {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": rv, "labels": {"app": "a"},
                             "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}]}, "status": {"phase": "Running"}}

    stored = slim(PODS, pod("1"))
    out = slim(PODS, pod("2"), stored)
    assert out == {"metadata": pod("2")["metadata"]}
    assert out["metadata"]["labels"] is stored["metadata"]["labels"]
    assert out["metadata"]["ownerReferences"] is stored["metadata"]["ownerReferences"]


def test_strings_up_to_64_characters_are_one_object_in_the_cache() -> None:
    """compact interns short strings (label keys and values, manager names): two objects' equal
    64-character values are one string object."""
    value = "v" * 64
    one = compact({"metadata": {"labels": {"k": "".join(list(value))}}})
    two = compact({"metadata": {"labels": {"k": "".join(list(value))}}})
    assert one["metadata"]["labels"]["k"] is two["metadata"]["labels"]["k"]
    assert one["metadata"]["labels"]["k"] is sys.intern(value)


def test_managed_fields_go_except_for_deployments_and_nothing_else_goes() -> None:
    """CRs (and HPAs) lose managedFields; Deployments keep them (they name a drift's culprit); the rest of the object stays."""
    meta = {"name": "a", "namespace": "ns", "resourceVersion": "3", "labels": {"x": "y"}, "managedFields": [{"manager": "kubectl"}]}
    cr_kind = Kind("Memcached", "cache.example.com", "v1alpha1", "memcacheds")
    obj = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": meta, "spec": {"size": 2}}
    assert slim(cr_kind, obj) == {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    assert slim(DEPLOYMENTS, obj) == obj
    bare = {"metadata": {"name": "a", "namespace": "ns"}, "spec": {}}
    assert slim(DEPLOYMENTS, bare) == bare and slim(cr_kind, bare) == bare


def test_equal_managed_fields_spec_parts_are_one_object_in_the_cache(monkeypatch) -> None:
    """The f:spec part of each managedFields entry, identical across thousands of Deployments, is kept once."""
    monkeypatch.setattr(informer, "_SHARED", {})

    def deployment(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"app": name},
                             "managedFields": [{"manager": "memcached-gitops", "operation": "Apply",
                                                "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}},
                                                             "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {}}}}}]},
                "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "memcached"}]}}}}

    a, b = compact(deployment("a")), compact(deployment("b"))
    assert a == deployment("a") and b == deployment("b"), "compaction changes no value"
    fa, fb = (d["metadata"]["managedFields"][0]["fieldsV1"] for d in (a, b))
    assert fa["f:spec"] is fb["f:spec"]
    assert fa["f:metadata"] is not fb["f:metadata"], "only the f:spec part is shared"
    assert a["spec"]["template"]["spec"] is b["spec"]["template"]["spec"]
    assert a["spec"] is not b["spec"] and a["metadata"]["labels"] is not b["metadata"]["labels"]


def test_only_the_shared_subtrees_enter_the_shared_table_and_odd_shapes_keep_their_values(monkeypatch) -> None:
    """A Deployment adds its pod spec and its managers' f:spec to the table, nothing else; a value at a
    path that leads towards a shared subtree (a list or a number where a map is usual) is kept as it is."""
    monkeypatch.setattr(informer, "_SHARED", {})
    managed = [{"manager": "m", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]
    obj = {"metadata": {"name": "a", "labels": {"app": "a"}, "managedFields": managed},
           "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c"}]}}},
           "status": {"conditions": [{"type": "Available"}]}}
    assert compact(obj) == obj
    assert sorted(informer._SHARED) == sorted(informer._share_key(v) for v in (obj["spec"]["template"]["spec"], {"f:replicas": {}}))
    for odd in ({"spec": [1, "x", {"k": "v"}]}, {"spec": {"template": [None, 2]}}, {"metadata": ["m", 3.5]}, {"spec": 5},
                {"metadata": {"managedFields": [{"fieldsV1": [1]}, 7]}}, {"spec": {"template": {"spec": [True]}}}):
        assert compact(odd) == odd
    assert compact([1, "y", {"z": [2]}]) == [1, "y", {"z": [2]}]


def test_off_the_paths_to_shared_subtrees_whole_maps_are_interned_without_a_path(monkeypatch) -> None:
    """Labels, annotations and status are handed to ``_intern`` whole (one call each), not walked
    key by key with a path; the pod spec, once in the table, is not walked at all."""
    monkeypatch.setattr(informer, "_SHARED", {})
    obj = {"metadata": {"name": "a", "labels": {"app": "a", "tier": "cache"}}, "status": {"replicas": 1},
           "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}
    compact(obj)
    walked: list[Any] = []
    intern = informer._intern
    monkeypatch.setattr(informer, "_intern", lambda value, like=None: walked.append(value) or intern(value))
    compact(obj)
    assert walked == ["a", {"app": "a", "tier": "cache"}, "a", "cache", {"replicas": 1}, 1, 2], "each map, then (recursing) its values"


def deployment_v(rv: str, replicas: int, image: str = "m:1", managers: tuple[str, ...] = ("memcached-gitops",)) -> dict[str, Any]:
    """A fresh Deployment (no object shared with another call), as a MODIFIED event brings one."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv, "labels": {"app": "a"},
                         "managedFields": [{"manager": m, "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
                                           for m in managers]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}},
                                  "spec": {"containers": [{"name": "memcached", "image": image, "ports": [{"containerPort": 11211}]}]}}},
            "status": {"replicas": replicas, "conditions": [{"type": "Available", "status": "True"}]}}


def test_an_event_compacted_against_the_stored_version_keeps_its_unchanged_subtrees_and_takes_every_change(monkeypatch) -> None:
    """``compact(..., like=stored)``: each subtree equal to its counterpart in the stored version is
    that counterpart (one comparison, no walk), whatever differs is the event's value."""
    monkeypatch.setattr(informer, "_SHARED", {})
    stored = compact(deployment_v("1", 1))
    new = deployment_v("2", 7)
    out = compact(new, like=stored)
    assert out == new
    assert out["metadata"]["labels"] is stored["metadata"]["labels"], "an unchanged map off the shared paths"
    assert out["spec"]["template"] is stored["spec"]["template"] and out["spec"]["selector"] is stored["spec"]["selector"]
    assert out["metadata"]["managedFields"] is stored["metadata"]["managedFields"], "an unchanged list"
    assert out["metadata"] is not stored["metadata"] and out["spec"] is not stored["spec"] and out["status"] is not stored["status"]
    # a change deep in the pod spec: the event's value, the unchanged parts beside it still kept
    changed = compact(deployment_v("3", 1, image="m:2"), like=stored)
    assert changed["spec"]["template"]["spec"]["containers"][0]["image"] == "m:2"
    assert changed["spec"]["template"]["metadata"] is stored["spec"]["template"]["metadata"]
    assert changed["status"] is stored["status"] and changed == deployment_v("3", 1, image="m:2")
    # a key gone, a key new, a map where a list was: nothing of the stored version is kept for them
    odd = deployment_v("4", 1)
    del odd["status"]
    odd["spec"]["paused"] = True
    odd["spec"]["selector"] = [{"app": "a"}]
    assert compact(odd, like=stored) == odd
    assert compact(deployment_v("5", 1), like={"metadata": [], "spec": 1}) == deployment_v("5", 1), "a stored version of another shape"


_leaf = st.sampled_from((None, 0, 1, "memcached:1.6", "x" * 70))
_maps = st.dictionaries(st.sampled_from(("a", "b", "f:spec")), st.one_of(_leaf, st.lists(_leaf, max_size=3)), max_size=2)
_nested = st.recursive(_maps, lambda inner: st.dictionaries(st.sampled_from(("a", "containers")),
                                                            st.one_of(inner, st.lists(inner, max_size=2), _leaf), max_size=2),
                       max_leaves=4)
_versions = st.fixed_dictionaries({}, optional={
    "metadata": st.fixed_dictionaries({"name": st.sampled_from(("d0", "d0", "d1"))}, optional={
        "labels": _maps, "managedFields": st.lists(st.fixed_dictionaries(
            {"manager": st.sampled_from(("memcached-gitops", "kubectl"))}, optional={"fieldsV1": _nested}), max_size=3)}),
    "spec": st.fixed_dictionaries({}, optional={"replicas": _leaf, "template": st.fixed_dictionaries(
        {}, optional={"metadata": _maps, "spec": _nested}), "selector": st.one_of(_maps, st.lists(_maps, max_size=2))}),
    "status": _nested})


@settings(max_examples=100, deadline=None)
@given(st.lists(_versions, min_size=1, max_size=8))
@example([{"spec": {"selector": [{"a": 0}, {"b": 1}]}}, {"spec": {"selector": [{"a": 0}]}}])  # an item gone from the end of a list
def test_a_compacted_event_is_the_events_value_whatever_the_stored_version_and_the_shared_table_hold(versions: list) -> None:
    """A stream of versions of two objects, each compacted against the one stored before it (as the watch
    does), their pod specs and managers' ``f:spec`` parts shared between them: each stored version equals
    its event, whatever the stored version had that the event lacks (a field removed, a label gone, a
    manager's entry dropped), lacks that it has, or holds at another shape."""
    from unittest import mock

    with mock.patch.dict(informer._SHARED, clear=True):
        stored: dict[str, Any] = {}
        for version in versions:
            name = (version.get("metadata") or {}).get("name", "")
            out = compact(version, like=stored.get(name))
            assert out == version, (version, stored.get(name))
            stored[name] = out
        assert all(compact(v) == v for v in versions)


def test_a_scalar_is_never_taken_from_the_stored_version() -> None:
    """true == 1 == 1.0 in Python: a scalar taken from the stored version would keep its JSON type, so
    each walked leaf is the event's. (A whole map or list equal to the stored one is kept: the API
    server writes each path with one JSON type, see ``compact``.)"""
    out = compact({"spec": {"replicas": 1, "paused": True, "x": "new"}, "status": 1.0},
                  like={"spec": {"replicas": True, "paused": 1, "x": "old"}, "status": 1})
    assert type(out["spec"]["replicas"]) is int and type(out["spec"]["paused"]) is bool and type(out["status"]) is float
    assert type(compact(1, like=True)) is int and type(compact(True, like=1)) is bool


def test_a_subtree_for_the_shared_table_is_built_from_the_event_alone(monkeypatch) -> None:
    """A pod spec new to the table is walked without the stored version: the copy other objects will
    share holds the event's values, never one of the stored version's that only compares equal."""
    monkeypatch.setattr(informer, "_SHARED", {})
    stored = compact({"spec": {"template": {"spec": {"a": {"x": 1}, "b": 1}}}})
    compact({"spec": {"template": {"spec": {"a": {"x": True}, "b": 2}}}}, like=stored)
    shared = compact({"spec": {"template": {"spec": {"a": {"x": True}, "b": 2}}}})["spec"]["template"]["spec"]
    assert type(shared["a"]["x"]) is bool


def test_managed_fields_entries_are_matched_by_position_and_a_new_entry_is_compacted_alone(monkeypatch) -> None:
    """kubectl scale adds its entry to managedFields: the entries before it are the stored ones, the new
    one (past the stored list's end) is compacted without a counterpart."""
    monkeypatch.setattr(informer, "_SHARED", {})
    stored = compact(deployment_v("1", 1))
    grown = deployment_v("2", 7, managers=("memcached-gitops", "kubectl"))
    out = compact(grown, like=stored)
    assert out == grown
    assert out["metadata"]["managedFields"][0] is stored["metadata"]["managedFields"][0]
    assert out["metadata"]["managedFields"][1]["manager"] == "kubectl"
    shrunk = compact(deployment_v("3", 1, managers=()), like=out)
    assert shrunk["metadata"]["managedFields"] == []


def test_the_watch_compacts_an_event_against_the_version_it_replaces(monkeypatch) -> None:
    """A MODIFIED event's unchanged subtrees are the stored object's (the handler and the store get them);
    a DELETED event is compacted the same way and removes the object."""
    monkeypatch.setattr(informer, "_SHARED", {})
    r = Run(monkeypatch, [REFUSED, ("list", [page("3", deployment_v("1", 1))]),
                          ("watch", [ev("MODIFIED", deployment_v("2", 7)), ev("DELETED", deployment_v("3", 7))]), ("watch", [])])
    seen: list[dict[str, Any]] = []
    r.inf.handler = lambda kind, type_, obj, old, arrived: seen.append(obj)
    r.run()
    listed, modified, deleted = seen
    assert modified == deployment_v("2", 7) and modified["spec"]["template"] is listed["spec"]["template"]
    assert deleted == deployment_v("3", 7) and deleted["status"] is modified["status"]
    assert r.inf.store.keys() == []


# ---- with a share (reconcile --shards): the store keeps its objects, and of the others only the version
def kept(obj: dict[str, Any]) -> bool:
    return obj["metadata"]["name"].startswith("k")


def test_a_store_with_a_share_keeps_its_objects_and_the_version_of_every_object() -> None:
    store = informer.Store(kept)
    assert store.keep is kept
    assert store.put(dep("k1", "5")) is None and store.holds(("ns", "k1"))
    assert store.put(dep("o1", "6")) is None and not store.holds(("ns", "o1")) and store.keys() == [("ns", "k1")]
    assert store._versions == {("ns", "k1"): 5, ("ns", "o1"): 6}
    assert store.put(dep("k1", "7"))["metadata"]["resourceVersion"] == "5", "the copy it replaces"
    share = {"a"}
    leaving = informer.Store(lambda o: o["metadata"]["name"] in share)
    leaving.put(dep("a", "1"))
    share.clear()
    gone = leaving.put(dep("a", "2"))
    assert gone is not None and gone["metadata"]["resourceVersion"] == "1" and not leaving.holds(("ns", "a"))
    assert leaving._versions == {("ns", "a"): 2}
    plain = informer.Store()
    plain.put(dep("o1", "3"))
    assert plain.holds(("ns", "o1")) and plain._versions == {}, "without a share: every object, no versions"


def test_a_removed_object_is_forgotten_so_a_later_fill_cannot_bring_it_back() -> None:
    store = informer.Store(kept)
    store.put(dep("k1", "5"))
    store.put(dep("o1", "6"))
    assert store.remove(("ns", "k1"))["metadata"]["resourceVersion"] == "5"  # type: ignore[index]
    assert store.remove(("ns", "o1")) is None
    assert store._versions == {}
    assert store.fill([dep("k1", "5"), dep("k2", "6")]) == ([], []), "deleted since the LIST, or not seen yet"


def test_prune_drops_what_the_share_no_longer_keeps_and_counts_it() -> None:
    share = {"a", "b", "c"}
    store = informer.Store(lambda o: o["metadata"]["name"] in share)
    for n, name in enumerate("abc"):
        store.put(dep(name, str(n + 1)))
    share.difference_update({"a", "c"})
    assert store.prune() == 2 and store.keys() == [("ns", "b")]
    assert store._versions == {("ns", "a"): 1, ("ns", "b"): 2, ("ns", "c"): 3}, "the versions stay"
    plain = informer.Store()
    plain.put(dep("a", "1"))
    assert plain.prune() == 0 and plain.holds(("ns", "a"))


def test_fill_stores_the_newly_kept_objects_no_older_than_the_watch_saw() -> None:
    """fill: held already, never seen (its ADDED is coming), a LIST's outside marker, or not kept: skipped.
    Older than the version the watch delivered: read again (stale). The same or newer, or a version
    that is no number: stored, and its version remembered."""
    share: set[str] = set()
    store = informer.Store(lambda o: o["metadata"]["name"] in share)
    for name, rv in (("held", "1"), ("old", "9"), ("same", "4"), ("newer", "4"), ("odd", "4"), ("later", "5"), ("out", "2")):
        store.put(dep(name, rv))
    share.update({"held", "old", "same", "newer", "odd", "later", "unseen"})
    store.put(dep("held", "2"))
    odd = dep("odd", "x")
    marker = {informer.OUTSIDE: True, "metadata": {"name": "later", "namespace": "ns", "resourceVersion": "5"}}
    added, stale = store.fill([dep("held", "1"), dep("unseen", "3"), marker, dep("out", "2"), dep("old", "8"),
                               dep("same", "4"), dep("newer", "6"), odd])
    assert [o["metadata"]["name"] for o in added] == ["same", "newer", "odd"] and stale == [("ns", "old")]
    assert store.get(("ns", "held"))["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    assert sorted(store.keys()) == [("ns", n) for n in ("held", "newer", "odd", "same")]
    assert store._versions[("ns", "newer")] == 6 and store._versions[("ns", "odd")] is None and store._versions[("ns", "old")] == 9
    store.put(dep("k9", "x"))  # outside the share, with a version that is no number: never stale
    share.add("k9")
    assert store.fill([dep("k9", "3")])[0] == [dep("k9", "3")]


def test_our_own_write_through_records_its_version_in_and_out_of_the_share() -> None:
    share = {"k1"}
    store = informer.Store(lambda o: o["metadata"]["name"] in share)
    assert store.put_if_newer(dep("k1", "5")) and store._versions == {("ns", "k1"): 5}
    assert not store.put_if_newer(dep("o1", "7")) and store._versions[("ns", "o1")] == 7 and not store.holds(("ns", "o1"))
    share.add("o1")
    assert store.fill([dep("o1", "6")]) == ([], [("ns", "o1")]), "a LIST older than our own write is read again"


def test_replace_with_a_share_stores_its_objects_and_remembers_every_version() -> None:
    store = informer.Store(kept)
    marker = {informer.OUTSIDE: True, "metadata": {"name": "o2", "namespace": "ns", "resourceVersion": "4"}}
    moved = {informer.OUTSIDE: True, "metadata": {"name": "k5", "namespace": "ns", "resourceVersion": "6"}}  # kept since its LIST
    events = store.replace([dep("k1", "3"), dep("o1", "5"), marker, moved])
    assert [(t, o["metadata"]["name"]) for t, o, _ in events] == [("ADDED", "k1")]
    assert store.keys() == [("ns", "k1")] and store._versions == {("ns", "k1"): 3, ("ns", "o1"): 5, ("ns", "o2"): 4, ("ns", "k5"): 6}
    assert store.fill([dep("o1", "4")]) == ([], []), "o1 is not kept"


def test_an_informer_with_a_share_lists_only_versions_outside_it(monkeypatch) -> None:
    r = Run(monkeypatch, [], keep=kept)
    assert r.inf.store.keep is kept
    full = dep("o1", "5")
    full["metadata"].update({"uid": "u", "labels": {"a": "b"}})
    assert r.inf._initial(full) == {informer.OUTSIDE: True, "metadata": {"name": "o1", "namespace": "ns", "resourceVersion": "5"}}
    assert r.inf._initial({"metadata": {"name": "o2"}}) == {informer.OUTSIDE: True, "metadata": {"name": "o2"}}
    inside = dep("k1", "6")
    inside["metadata"]["uid"] = "u"
    assert r.inf._initial(inside) == inside
    plain = Run(monkeypatch, [])
    assert plain.inf._initial(full) == full and plain.inf.store.keep is None


def test_a_list_whose_pages_carry_no_version_leaves_the_informer_without_one(monkeypatch) -> None:
    r = Run(monkeypatch, [("list", [page(None, dep("a", "1")), page(None)])], streaming_list=False)
    r.inf._list()
    assert r.inf.resource_version is None and r.inf.synced.is_set()
    r = Run(monkeypatch, [("list", [])], streaming_list=False)
    r.inf._list()
    assert r.inf.resource_version is None, "no page at all: no version either"


def test_the_watch_tells_of_an_object_of_the_share_or_one_leaving_it_only(monkeypatch) -> None:
    """With a share, an event of an object neither kept nor held before is news to nobody; one that
    leaves the share (held before) is told with its old copy; one of the share is told."""
    share = {"k1", "k2", "k3"}
    r = Run(monkeypatch, [("list", [page("1", dep("k1", "1"), dep("k2", "1"))]),
                          ("watch", [ev("MODIFIED", dep("o1", "2")), ev("MODIFIED", dep("k1", "3")), ev("MODIFIED", dep("k2", "4")),
                                     ev("ADDED", dep("k3", "5"))])],
            streaming_list=False, keep=lambda o: o["metadata"]["name"] in share)
    original = r.inf.store.put

    def put(obj: dict[str, Any]) -> Any:
        if obj["metadata"]["name"] == "k2" and obj["metadata"]["resourceVersion"] == "4":
            share.discard("k2")  # the share moved before this event
        return original(obj)

    r.inf.store.put = put  # type: ignore[method-assign]
    r.run()
    assert [(e[1], e[2], e[3]) for e in r.events] == [("ADDED", "k1", None), ("ADDED", "k2", None), ("MODIFIED", "k1", "1"),
                                                      ("MODIFIED", "k2", "1"), ("ADDED", "k3", None)]
    assert not r.inf.store.holds(("ns", "k2")) and r.inf.store.holds(("ns", "k3"))


class Refill(FakeAPI):
    """A FakeAPI that answers the GETs of ``refill`` from ``gets`` (name -> object or APIError)."""

    def __init__(self, script: list[tuple[str, Any]], clock: SimpleNamespace, gets: dict[str, Any]) -> None:
        super().__init__(script, clock)
        self.gets = gets

    def request(self, method: str, path: str, accept: str | None = None, **_: Any) -> dict[str, Any]:
        self.calls.append((method, path, None, None, accept))
        answer = self.gets[path.rsplit("/", 1)[1]]
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.mark.parametrize("emit", [True, False, None])
def test_refill_lists_stores_the_newly_kept_reads_the_stale_again_and_tells_of_each(monkeypatch, emit) -> None:
    """A GET answered 404 (deleted since) is skipped and the next stale one is still read; by default
    the handler hears of each object added."""
    share = {"k1"}
    r = Run(monkeypatch, [], streaming_list=False, keep=lambda o: o["metadata"]["name"] in share)
    r.inf.api = Refill([("list", [page("20", dep("k1", "1"), dep("k2", "5"), dep("k3", "5"), dep("k4", "5"))])], r.clock,
                       {"k4": dep("k4", "8"), "k3": APIError(404, "gone")})
    for name, rv in (("k1", "1"), ("k2", "5"), ("k3", "7"), ("k4", "7")):
        r.inf.store.put(dep(name, rv))
    share.update({"k2", "k3", "k4"})
    assert (r.inf.refill() if emit is None else r.inf.refill(emit=emit)) == 2
    assert [c[:2] for c in r.inf.api.calls] == [("list", "/apis/apps/v1/namespaces/ns/deployments"),
                                                ("GET", "/apis/apps/v1/namespaces/ns/deployments/k3"),
                                                ("GET", "/apis/apps/v1/namespaces/ns/deployments/k4")]
    assert [c[4] for c in r.inf.api.calls] == [None, None, None], "whole Deployments"
    assert r.inf.store.get(("ns", "k4"))["metadata"]["resourceVersion"] == "8"  # type: ignore[index]
    assert not r.inf.store.holds(("ns", "k3"))
    assert [(e[1], e[2], e[4]) for e in r.events] == ([] if emit is False else [("ADDED", "k2", 1000.0), ("ADDED", "k4", 1000.0)])


def test_refill_gives_up_on_a_get_the_server_refuses_and_reads_metadata_for_a_metadata_only_kind(monkeypatch) -> None:
    pod = {"metadata": {"name": "k1", "namespace": "ns", "resourceVersion": "9", "uid": "u"}, "spec": {"x": 1}}
    r = Run(monkeypatch, [], kind=PODS, streaming_list=False, keep=kept)
    r.inf.api = Refill([("list", [page("20", {"metadata": {"name": "k1", "namespace": "ns", "resourceVersion": "5"}})])], r.clock,
                       {"k1": pod})
    r.inf.store._versions[("ns", "k1")] = 7
    assert r.inf.refill() == 1
    slimmed = {"metadata": {k: pod["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion")}}
    assert r.inf.api.calls[1][4] == METADATA_WATCH and r.inf.store.get(("ns", "k1")) == slimmed
    r = Run(monkeypatch, [], streaming_list=False, keep=kept)
    r.inf.api = Refill([("list", [page("20", dep("k1", "5"))])], r.clock, {"k1": APIError(500, "etcd")})
    r.inf.store._versions[("ns", "k1")] = 7
    with pytest.raises(APIError):
        r.inf.refill()


def test_a_watch_answered_410_lists_again_and_a_list_answered_410_is_retried_with_backoff(monkeypatch, caplog) -> None:
    """Gone as the HTTP status of a WATCH (no watch cache) means the same as the ERROR event: the
    version is expired, LIST again at once; retrying the WATCH from it would be refused for ever. A
    LIST's 410 (an expired continue token) is retried from its first page, after a backoff."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    r = Run(monkeypatch, [("list", [page("288", dep("a", "280"))]), ("watch", [APIError(410, "too old resource version: 288")]),
                          ("list", APIError(410, "the provided continue parameter is too old")), ("list", [page("355", dep("a", "342"))]),
                          ("watch", [])], streaming_list=False)
    r.run()
    assert r.verbs() == ["list", "watch", "list", "list", "watch"] and r.api.calls[4][2]["resourceVersion"] == "355"
    assert "deployments: resourceVersion 288 expired; listing again" in messages(caplog)
    assert r.restarts("expired") == 1 and r.restarts("http-410") == 1 and r.waits == [0.2]


def test_the_watch_is_timed_from_its_opening_not_from_the_list_before_it(monkeypatch) -> None:
    """A stream that ends at once after a slow LIST is still a dropped stream (a backoff), not the
    server's close at timeoutSeconds."""
    def slow_list():
        r.clock.now += 400.0
        yield page("3")

    r = Run(monkeypatch, [("list", slow_list()), ("watch", [])], watch_timeout=300, streaming_list=False)
    r.run()
    assert r.restarts("dropped") == 1 and r.restarts("closed") == 0 and len(r.waits) == 1


def test_events_after_stop_are_neither_stored_nor_told(monkeypatch) -> None:
    r = Run(monkeypatch, [("list", [page("1")]), ("watch", [ev("ADDED", dep("a", "2")), ev("ADDED", dep("b", "3"))])],
            streaming_list=False)
    r.inf.handler = lambda kind, type_, obj, old, arrived: r.events.append(obj["metadata"]["name"]) or r.inf.stop.set()
    r.run()
    assert r.events == ["a"] and r.inf.store.keys() == [("ns", "a")]


# ---- progress, for the liveness probe (Informer.stalled)
def test_each_step_of_the_loop_moves_the_progress_clock(monkeypatch) -> None:
    """A LIST, each event, a watch the server answered (200), closed at its timeout or expired set
    ``active_at`` to now; a watch gone silent, dropped or refused does not: against a server that
    accepts connections but never answers, attempts are no progress."""
    r = Run(monkeypatch, [("watch", [5, ev("MODIFIED", dep("a", "6"))])], streaming_list=False)
    r.inf.active_at = 0.0
    r.inf._replace([], "5")
    assert r.inf.active_at == 1000.0, "a LIST"
    for reason in ("closed", "expired"):
        r.inf.active_at = 0.0
        r.inf._restarted(reason, progress=True)
        assert r.inf.active_at == 1000.0, reason
    for reason in ("silent", "dropped", "http-503", "error"):
        r.inf.active_at = 0.0
        r.inf._restarted(reason)
        assert r.inf.active_at == 0.0, f"{reason}: no progress"
    r.inf.active_at = 0.0
    seen: list[float] = []
    watch = r.api.watch
    monkeypatch.setattr(r.api, "watch", lambda *a, **k: (seen.append(r.inf.active_at), watch(*a, **k))[1])
    r.inf.active_at = 0.0
    events = r.inf._events()
    assert next(events)[1] == 1005.0 and seen == [0.0], "asked, not yet answered: no progress"
    assert r.inf.active_at == 1000.0, "answered 200 (before the first event): progress"


def test_a_server_that_never_answers_stalls_the_informer(monkeypatch) -> None:
    """Every reconnection fails (a stopped API server): the liveness clock stays where the last answer
    left it, so ``stalled`` says so once the limit has passed."""
    from memcached_gitops.reconciler.client.api import WatchDropped

    r = Run(monkeypatch, [])
    r.inf.active_at = 1000.0
    attempts = []

    def dropped(*args, **kwargs):
        attempts.append(1)
        if len(attempts) >= 3:
            r.inf.stop.set()
        raise WatchDropped("timed out")

    monkeypatch.setattr(r.api, "watch", dropped)
    monkeypatch.setattr(r.inf, "_backoff", lambda exc: None)
    r.inf.resource_version = "5"
    r.inf.started = True
    r.inf.run()
    assert len(attempts) == 3 and r.inf.active_at == 1000.0
    r.inf.stop.clear()
    assert r.inf.stalled(now=1000.0 + r.inf.stall_limit + 1) is not None


def test_stalled_past_the_limit_only_by_the_clock_given(monkeypatch) -> None:
    r = Run(monkeypatch, [])
    monkeypatch.setattr(informer.threading, "Thread", lambda **kw: SimpleNamespace(start=lambda: None))
    assert r.inf.start() is r.inf and r.inf.started and r.inf.active_at == 1000.0
    limit = r.inf.stall_limit
    assert r.inf.stalled(now=1000.0 + limit) is None, "at the limit: not yet"
    said = r.inf.stalled(now=1000.0 + limit + 1)
    assert said == f"deployments informer: no event, LIST or reconnection for {limit + 1:.0f}s (limit {limit:.0f}s)"
    assert r.inf.stalled() is None, "without a time given: the informer's own clock (1000 here)"


@pytest.mark.parametrize(("started", "stopping", "gave_up", "stalled"), [
    (True, False, False, True),
    (False, False, False, False),  # never started (a kind this mode does not watch)
    (True, True, False, False),  # stopping: the process is on its way out
    (True, False, True, False),  # gave up on a request the server refuses (404): logged, and a restart would not help
    (True, True, True, False),
    (False, False, True, False),
])
def test_only_a_running_informer_that_has_not_given_up_is_stalled_when_quiet(monkeypatch, started, stopping, gave_up, stalled) -> None:
    """Quiet past ``stall_limit``, an informer is stalled (the liveness probe restarts the process) only while it
    runs: one not started, stopping, or that gave up on a request the API server will never accept is not, so a
    cluster without the CRD is one error line, not a restart loop. Each condition alone is enough."""
    r = Run(monkeypatch, [("list", APIError(404, "the server could not find the requested resource"))] if gave_up else [],
            streaming_list=False)
    r.run()
    assert bool(r.inf.error) is gave_up
    r.inf.started = started
    if stopping:
        r.inf.stop.set()
    assert (r.inf.stalled(now=r.inf.active_at + r.inf.stall_limit + 1) is not None) is stalled


def test_the_client_says_a_watch_is_open_only_when_the_server_answered_200() -> None:
    """KubeAPI.watch over real HTTP (the fake API server): ``opened`` once on a 200, before any event;
    never for a refused watch (404) or a server that is not there."""
    from memcached_gitops.reconciler.client.api import APIError, KubeAPI, RetryPolicy, WatchDropped

    from fakeapi.server import FakeAPIServer

    with FakeAPIServer(namespaces=("default",)) as cluster:
        api = KubeAPI.connect(host=cluster.url, retry=RetryPolicy(attempts=1))
        calls: list[str] = []
        for _ in api.watch("/apis/apps/v1/namespaces/default/deployments", {"timeoutSeconds": 1}, 5.0,
                           opened=lambda: calls.append("opened")):
            pass
        assert calls == ["opened"]
        with pytest.raises(APIError):
            list(api.watch("/apis/apps/v1/namespaces/default/nothings", {"timeoutSeconds": 1}, 5.0,
                           opened=lambda: calls.append("refused")))
        assert calls == ["opened"]
    nowhere = KubeAPI.connect(host="http://127.0.0.1:9", retry=RetryPolicy(attempts=1))
    with pytest.raises(WatchDropped):
        list(nowhere.watch("/api/v1/pods", {}, 1.0, opened=lambda: calls.append("nowhere")))
    assert calls == ["opened"]


def test_the_loop_moves_the_liveness_clock_when_the_server_answered_and_only_then(monkeypatch) -> None:
    """Through ``run``: an event's arrival and a close at timeoutSeconds move it; a watch gone silent
    does not (the clock stays at its last event); an expiry the server answered (410) moves it again."""
    r = Run(monkeypatch, [("list", [page("3")]), ("watch", [7.0]), ("watch", [3.0, ev("MODIFIED", dep("a", "4")), 2.0,
                                                                             WatchSilent("nothing for 70s")]),
                          ("watch", [APIError(410, "too old resource version: 4")])], streaming_list=False)
    seen: list[tuple[str, float]] = []
    restarted = r.inf._restarted

    def noted(reason: str, progress: bool = False) -> None:
        restarted(reason, progress)
        seen.append((reason, r.inf.active_at))

    monkeypatch.setattr(r.inf, "_restarted", noted)
    r.run()
    assert seen == [("closed", 1007.0), ("silent", 1010.0), ("expired", 1012.0)], seen


def test_an_informer_failing_for_ever_waits_at_the_cap(monkeypatch) -> None:
    """A watch refused for hours (RBAC not granted yet, say): past 1,024 failures in a row the wait is
    still the cap (jittered), never an OverflowError that ends the informer's thread."""
    r = Run(monkeypatch, [REFUSED, ("list", [page("3")]), ("watch", [])], backoff_base=0.2, backoff_cap=30.0)
    r.inf._failures = 1100
    waits: list[float] = []
    monkeypatch.setattr(r.inf.stop, "wait", lambda delay: waits.append(delay))
    r.inf._backoff(WatchDropped("reset by peer"))
    assert len(waits) == 1 and 15.0 <= waits[0] <= 45.0
