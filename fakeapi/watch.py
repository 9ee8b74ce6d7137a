"""WATCH for the fake API server: a per-resource change history and the streams served from it.

It follows the recorded kube-apiserver v1.36.2 watches (tests/fixtures/apiserver-transcripts/30-33)
and, where they are silent, the API documentation ("API Concepts": efficient detection of
changes, watch bookmarks, resourceVersion semantics for watch) and the apiserver's watch cache:

- one JSON object per line, ``{"type", "object"}``; built-in objects carry kind/apiVersion (30);
- a write that changes nothing stores nothing, so it produces no event (30, 31);
- with a labelSelector, leaving the selection is DELETED, entering it is ADDED (30). The DELETED
  object is the one *before* the change (old labels and managedFields) with the change's new
  resourceVersion, as recorded; the observation written beside the recording says "new labels",
  but the recorded event shows the old ones;
- a BOOKMARK (only kind, apiVersion, metadata.resourceVersion; a built-in type also shows its Go
  zero values) two seconds before a ``timeoutSeconds`` close, none when the timeout is 2 s or less
  (30, 31, 33); the close itself sends nothing (33);
- a resourceVersion older than the history gives HTTP 200, one ERROR event with a 410 Status
  ``too old resource version: OLD (OLDEST-1)``, then the close (32); the history keeps the last
  ``window`` changes of each resource, and starts afresh at the current resourceVersion after a
  restart (32, where the restarted apiserver's cache began at the current revision);
- a resourceVersion ahead of the store sends nothing until the timeout (32);
- ``sendInitialEvents=true`` with ``allowWatchBookmarks=true`` is refused with an ERROR event
  carrying a 500 (33; that cluster's etcd lacked RequestWatchProgress); without bookmarks it sends
  an ADDED per matching object, ordered by key, and nothing marks their end (33).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import selectors

Key = tuple[str, str, str, str]  # (group, plural, namespace, name), as the fake's store

#: The Go zero value a BOOKMARK of a built-in type shows besides its resourceVersion (30 for
#: Deployments; Pods assumed from the same rule: a PodSpec's containers are not omitempty).
BOOKMARK_ZERO_VALUES: dict[str, dict[str, Any]] = {
    "Deployment": {"spec": {"replicas": 0, "selector": None, "template": {"metadata": {}, "spec": {"containers": None}},
                            "strategy": {}}, "status": {}},
    "Pod": {"spec": {"containers": None}, "status": {}},
}

#: The media types of the metadata-only view (requested through the Accept header).
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"


def partial_metadata_view(accept: str) -> str | None:
    """``PartialObjectMetadata``/``...List`` when the first JSON media range of Accept asks for it
    (``application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1``), else None."""
    for media_range in accept.split(","):
        parts = [p.strip() for p in media_range.split(";")]
        if parts[0] not in ("application/json", "*/*", "application/*"):
            continue
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if params.get("as") in (PARTIAL, PARTIAL_LIST) and params.get("g") == "meta.k8s.io" and params.get("v") == "v1":
            return params["as"]
        return None
    return None


def as_partial(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": PARTIAL, "apiVersion": "meta.k8s.io/v1", "metadata": copy.deepcopy(obj.get("metadata", {}))}


@dataclass
class Change:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    key: Key
    old: dict[str, Any] | None
    new: dict[str, Any]  # for DELETED: the last state


class Expired(Exception):
    def __init__(self, oldest_minus_one: int) -> None:
        super().__init__(oldest_minus_one)
        self.floor = oldest_minus_one


@dataclass
class WatchCache:
    """The recent changes of each resource (group, plural), as the apiserver's watch cache keeps
    them: a bounded window, so a client resuming from a resourceVersion inside it gets every change
    since, and one from before it gets 410."""

    window: int
    start_rv: int
    histories: dict[tuple[str, str], deque[Change]] = field(default_factory=dict)
    floors: dict[tuple[str, str], int] = field(default_factory=dict)  # oldest deliverable rv - 1
    cond: threading.Condition = field(default_factory=threading.Condition)
    last_rv: int = 0  # the newest change recorded (or start_rv): what a BOOKMARK reports

    def __post_init__(self) -> None:
        self.last_rv = max(self.last_rv, self.start_rv)

    def record(self, change: Change) -> None:
        resource = change.key[:2]
        with self.cond:
            history = self.histories.setdefault(resource, deque())
            self.floors.setdefault(resource, self.start_rv)
            history.append(change)
            self.last_rv = max(self.last_rv, change.rv)
            while len(history) > max(self.window, 1):
                history.popleft()
                self.floors[resource] = history[0].rv - 1
            self.cond.notify_all()

    def since(self, resource: tuple[str, str], rv: int) -> list[Change]:
        """Changes after rv; raises Expired when rv is older than the window (32)."""
        with self.cond:
            floor = self.floors.get(resource, self.start_rv)
            if rv < floor:
                raise Expired(floor)
            newer = []  # from the newest back: costs the number of new changes, not the window
            for change in reversed(self.histories.get(resource, ())):
                if change.rv <= rv:
                    break
                newer.append(change)
            return newer[::-1]

    def restart(self, current_rv: int) -> None:
        """Forget every change: the history begins at current_rv (a restarted apiserver, 32)."""
        with self.cond:
            self.start_rv = self.last_rv = current_rv
            self.histories.clear()
            self.floors.clear()
            self.cond.notify_all()


@dataclass
class WatchStream:
    """One open WATCH. The HTTP handler writes what ``lines()`` yields as chunks; ``dropped`` means
    the connection must be cut without the final chunk."""

    cache: WatchCache
    resource: tuple[str, str]
    kind: str
    api_version: str
    path: str
    namespace: str | None
    selector: list[selectors.Requirement]
    rv: int
    timeout: float
    bookmarks: bool
    partial: bool
    initial: list[dict[str, Any]] = field(default_factory=list)  # synthetic ADDED events, sent first
    error: dict[str, Any] | None = None  # an ERROR event's Status: sent alone, then the close
    opened: float = field(default_factory=time.monotonic)
    state: str = "open"  # open | silent | dropped | closed

    def _selected(self, key: Key, obj: dict[str, Any] | None) -> bool:
        if obj is None or (self.namespace is not None and key[2] != self.namespace):
            return False
        return selectors.matches(self.selector, obj.get("metadata", {}).get("labels"))

    def translate(self, change: Change) -> tuple[str, dict[str, Any]] | None:
        """What this watcher sees of a change (30): the selection before and after decide the type."""
        if change.type == "DELETED":
            return ("DELETED", change.new) if self._selected(change.key, change.new) else None
        was = change.type != "ADDED" and self._selected(change.key, change.old)
        now = self._selected(change.key, change.new)
        if was and now:
            return "MODIFIED", change.new
        if now:
            return "ADDED", change.new
        if was:  # leaving the selection: the object as it was, with the new resourceVersion (30)
            assert change.old is not None
            return "DELETED", {**change.old, "metadata": {**change.old["metadata"], "resourceVersion": str(change.rv)}}
        return None

    def _line(self, kind: str, obj: dict[str, Any]) -> bytes:
        if self.partial and kind != "ERROR":
            obj = as_partial(obj)
        return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"

    def _bookmark(self, resource_version: int) -> bytes:
        rv = str(resource_version)
        if self.partial:
            obj: dict[str, Any] = {"kind": PARTIAL, "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv}}
        else:
            obj = {"kind": self.kind, "apiVersion": self.api_version, "metadata": {"resourceVersion": rv},
                   **copy.deepcopy(BOOKMARK_ZERO_VALUES.get(self.kind, {}))}
        return json.dumps({"type": "BOOKMARK", "object": obj}, separators=(",", ":")).encode() + b"\n"

    def lines(self) -> Iterator[bytes]:
        if self.state == "dropped":
            return
        if self.error is not None:
            yield json.dumps({"type": "ERROR", "object": self.error}, separators=(",", ":")).encode() + b"\n"
            self.state = "closed"
            return
        deadline = self.opened + self.timeout
        # the cacher's heartbeat: every minute, and two seconds before the deadline (none if that has passed)
        next_bookmark = min(self.opened + 60.0, deadline - 2.0) if self.bookmarks and self.timeout > 2.0 else None
        for obj in self.initial:
            yield self._line("ADDED", obj)
        while True:
            pending: list[Change] = []
            bookmark_rv = None
            with self.cache.cond:
                while self.state != "dropped":
                    if self.state == "silent":  # a hung connection: nothing, not even the close, until it is cut
                        self.cache.cond.wait()
                        continue
                    now = time.monotonic()
                    try:
                        pending = self.cache.since(self.resource, self.rv)
                    except Expired:  # the history moved past this watch (it lagged, or a restart): it ends
                        self.state = "dropped"
                        break
                    if pending:
                        break
                    if next_bookmark is not None and next_bookmark <= now < deadline:
                        bookmark_rv = self.cache.last_rv  # every change up to it was delivered
                        break
                    if now >= deadline:
                        break
                    wake = deadline if next_bookmark is None else min(deadline, next_bookmark)
                    self.cache.cond.wait(timeout=max(wake - now, 0.0))
            if self.state == "dropped":
                return
            for change in pending:
                self.rv = change.rv
                seen = self.translate(change)
                if seen is not None:
                    yield self._line(*seen)
            if bookmark_rv is not None:
                yield self._bookmark(bookmark_rv)
                later = min(now + 60.0, deadline - 2.0)
                next_bookmark = later if later > now else None
            if not pending and bookmark_rv is None and time.monotonic() >= deadline:
                self.state = "closed"
                return
