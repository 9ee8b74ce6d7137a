"""LIST then WATCH one kind into an in-memory store, and tell a handler about every change.

The reflector of client-go, for plain dicts:

- Try the streaming list first (``sendInitialEvents=true``); a server that refuses it answers
  with an ERROR event (transcript 33), after which this informer uses LIST + WATCH for good.
- LIST (paginated; all pages share the first page's resourceVersion, transcript 11), replace
  the store, and report the differences as ADDED / MODIFIED / DELETED.
- WATCH from that resourceVersion with ``allowWatchBookmarks`` and a bounded ``timeoutSeconds``.
  The server closes the stream at ``timeoutSeconds`` without a final event (30, 33); the next
  WATCH resumes from the last resourceVersion seen, an event's or a BOOKMARK's (33).
- An ERROR event with a 410 Status (``too old resource version``, 32) means: LIST again.
- A connection that cannot be opened or breaks (an API server restart) is retried with capped
  exponential backoff and jitter, from the last resourceVersion.
- A stream that stays silent longer than the server's heartbeat (a BOOKMARK at least every
  minute from the watch cache, and one shortly before ``timeoutSeconds``, 30) plus a grace
  period is dead: it is dropped and re-opened (nolar/kopf#1276 lost such watches).
- A 400 or 404 answer (a malformed selector, an unknown resource, 32) is a clear error that
  stops the informer, not a retry loop.

LIST pages are of 500 items (client-go's default): an informer lists only at start and after a
410, so a few more requests then cost nothing, while a page of 5,000 Deployments is tens of
megabytes of JSON held at once. The store keeps only what the reconciler reads: CRs and Pods lose ``managedFields``, Pods are
cut to their metadata (and asked for as PartialObjectMetadata), Deployments keep everything,
because their managedFields name the culprit of a drift.
"""

from __future__ import annotations

import json
import logging
import random
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memcached_gitops.foundation.backoff import doubled
from memcached_gitops.foundation.clocks import monotonic_seconds
from memcached_gitops.foundation.digits import is_digits

from .api import APIError, KubeAPI, WatchDropped, WatchSilent, collection_path, is_not_found

log = logging.getLogger("memcached_gitops.informer")

Key = tuple[str, str]  # (namespace, name)
#: The Accept headers for metadata-only lists and watches, with plain JSON as the fallback (client-go's).
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#: The BOOKMARK annotation that ends a streaming list's initial events (KEP-3157).
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True)
class Kind:
    """One collection to mirror."""

    name: str  # Memcached | Deployment | Pod
    group: str
    version: str
    plural: str
    selector: str | None = None
    metadata_only: bool = False
    keep_managed_fields: bool = False


def slim(kind: Kind, obj: dict[str, Any], like: Any = None) -> dict[str, Any]:
    """What the store keeps of an object, compacted (see ``compact``; ``like``: the stored version)."""
    meta = obj.get("metadata") or {}
    if kind.metadata_only:
        keep = ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences", "deletionTimestamp")
        slimmed: dict[str, Any] = compact({"metadata": {k: meta[k] for k in keep if k in meta}}, like=like)
        return slimmed
    if not kind.keep_managed_fields and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    compacted: dict[str, Any] = compact(obj, like=like)
    return compacted


#: Subtrees that thousands of cached objects hold in identical copies: a Deployment's pod spec
#: (every rendering has the same containers, probes and security context) and the ``f:spec``
#: part of each managedFields entry. One copy of each is kept (the cache is read, never written
#: in place); the table is bounded so that a cluster of all-different objects cannot grow it.
_SHARED: dict[str, Any] = {}
_SHARED_MAX = 4096


def _share_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


#: Where the shared subtrees are (from an object's root, and from a managedFields entry's), and the
#: paths that lead to them or to managedFields: below any other path nothing is shared, and
#: ``_intern`` walks it without a path.
_SHARED_AT = frozenset({("spec", "template", "spec"), ("fieldsV1", "f:spec")})
_MANAGED_FIELDS = ("metadata", "managedFields")
_WITH_PATH = _SHARED_AT | {(), ("spec",), ("spec", "template"), ("fieldsV1",), ("metadata",), _MANAGED_FIELDS}


def compact(value: Any, path: tuple[str, ...] = (), like: Any = None) -> Any:
    """A copy with interned keys and short strings (one string object for each label key, manager
    name or field name, not one per object), and the subtrees above shared between objects.
    At 10,000 Deployments this takes the cache from about 26 KiB to a few KiB per Deployment.

    It runs on every watch event before the event is handed on (a Deployment's drift waits for it),
    so it walks as little as it can:

    - ``like`` is the version the store holds (compacted already): a subtree equal to its
      counterpart there is that counterpart, found by one comparison in C. A MODIFIED event
      differs from the stored version in a few fields (a drift, a resourceVersion, a status), so
      only the paths down to those are walked. Equal means equal as Python compares JSON values
      (1 == 1.0 == true); the API server writes each path with one JSON type (a Deployment from Go
      structs, a CR by its structural schema), so an equal subtree is the same JSON.
    - a subtree that may be shared is looked up in the shared table by its JSON before it is
      walked (its copy there is compacted already): a pod spec or a manager's ``f:spec`` seen
      before is not walked again."""
    if isinstance(value, (dict, list)) and like == value:
        return like  # (a scalar is not taken from it: true == 1, and a string is interned anyway)
    if isinstance(value, dict):
        key = None
        if path in _SHARED_AT:
            key = _share_key(value)  # interning and sharing change no value, so no JSON either
            found = _SHARED.get(key)
            if found is not None:
                return found
        # a subtree that enters the shared table is built from the event alone: what other objects
        # will share is the event's JSON, whatever the stored version holds
        before = like if isinstance(like, dict) and key is None else {}
        out: dict[str, Any] = {}
        for k, v in value.items():
            below = path + (k,)
            out[sys.intern(k)] = compact(v, below, before.get(k)) if below in _WITH_PATH else _intern(v, before.get(k))
        if key is not None and len(_SHARED) < _SHARED_MAX:
            _SHARED[key] = out
        return out
    if isinstance(value, list):
        earlier = like if isinstance(like, list) else []
        if path == _MANAGED_FIELDS:  # each entry from a root of its own, matched by its position
            return [compact(v, (), earlier[n] if n < len(earlier) else None) for n, v in enumerate(value)]
        return [_intern(v) for v in value]
    return _intern(value)


def _intern(value: Any, like: Any = None) -> Any:
    """``compact`` away from the paths to a shared subtree: keys and short strings interned."""
    if isinstance(value, (dict, list)) and like == value:
        return like
    if isinstance(value, dict):
        return {sys.intern(k): _intern(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_intern(v) for v in value]
    if isinstance(value, str) and len(value) <= 64:
        return sys.intern(value)
    return value


#: Marks what a LIST keeps of an object outside the share (``Informer._initial``): its version only.
OUTSIDE = "outsideShare"


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def _rv(obj: dict[str, Any] | None) -> int | None:
    value = str(((obj or {}).get("metadata") or {}).get("resourceVersion"))  # absent: "None", no number
    return int(value) if is_digits(value) else None


class Store:
    """A thread-safe map of key -> object for one kind.

    With ``keep`` (``reconcile --shards``: this replica's share), only the objects it keeps are
    stored; of the others only the resourceVersion is remembered (``_versions``: a few dozen bytes
    an object instead of kilobytes), so that when the share grows ``fill`` can take the newly kept
    objects from a LIST without ever storing a version older than one the watch already delivered
    (a deleted object is no longer in ``_versions``: a LIST taken before its deletion cannot bring
    it back)."""

    def __init__(self, keep: Callable[[dict[str, Any]], bool] | None = None) -> None:
        self._lock = threading.Lock()
        self._items: dict[Key, dict[str, Any]] = {}
        self.keep = keep
        self._versions: dict[Key, int | None] = {}

    def get(self, key: Key) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(key)

    def values(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> list[Key]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def put(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            key = key_of(obj)
            if self.keep is not None:
                self._versions[key] = _rv(obj)
                if not self.keep(obj):
                    return self._items.pop(key, None)
            old = self._items.get(key)
            self._items[key] = obj
            return old

    def holds(self, key: Key) -> bool:
        with self._lock:
            return key in self._items

    def remove(self, key: Key) -> dict[str, Any] | None:
        with self._lock:
            self._versions.pop(key, None)
            return self._items.pop(key, None)

    def prune(self) -> int:
        """Drop the stored objects that ``keep`` no longer keeps (the share shrank); how many."""
        if self.keep is None:
            return 0
        with self._lock:
            gone = [k for k, o in self._items.items() if not self.keep(o)]
            for k in gone:
                del self._items[k]
        return len(gone)

    def fill(self, objs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Key]]:
        """Store the objects of a LIST that ``keep`` keeps now and the store lacks: those whose
        version is the one the watch last delivered, or newer. Returns them, and the keys whose
        watch version is newer than the LIST's (to be read again)."""
        added: list[dict[str, Any]] = []
        stale: list[Key] = []
        with self._lock:
            for obj in objs:
                key = key_of(obj)
                if key in self._items or key not in self._versions or obj.get(OUTSIDE) or (self.keep is not None and not self.keep(obj)):
                    continue  # held already; deleted since the LIST (or not yet seen: its ADDED comes); not kept
                known, listed = self._versions[key], _rv(obj)
                if known is not None and listed is not None and listed < known:
                    stale.append(key)
                    continue
                self._items[key] = obj
                self._versions[key] = listed
                added.append(obj)
        return added, stale

    def put_if_newer(self, obj: dict[str, Any]) -> bool:
        """Write-through after our own write, so that the next reconcile does not work from the
        state before it. Kept only when its resourceVersion is newer than the stored one, compared
        as integers as client-go's MutationCache does (etcd revisions); the WATCH event that
        follows replaces it anyway."""
        with self._lock:
            key = key_of(obj)
            old, new = _rv(self._items.get(key)), _rv(obj)
            if old is not None and (new is None or new <= old):
                return False
            if self.keep is not None:
                self._versions[key] = new
                if not self.keep(obj):
                    return False
            self._items[key] = obj
            return True

    def replace(self, objs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        """Replace everything after a LIST; the differences as (type, object, old) events."""
        fresh = {key_of(o): o for o in objs}
        if self.keep is not None:
            versions = {k: _rv(o) for k, o in fresh.items()}
            fresh = {k: o for k, o in fresh.items() if not o.get(OUTSIDE) and self.keep(o)}
        with self._lock:
            if self.keep is not None:
                self._versions = versions
            old_items, self._items = self._items, fresh
        events: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        for key, obj in fresh.items():
            old = old_items.get(key)
            if old is None:
                events.append(("ADDED", obj, None))
            elif (old.get("metadata") or {}).get("resourceVersion") != (obj.get("metadata") or {}).get("resourceVersion"):
                events.append(("MODIFIED", obj, old))
        events += [("DELETED", old, old) for key, old in old_items.items() if key not in fresh]
        return events


class Expired(Exception):
    """The resourceVersion to watch from is gone (410): LIST again."""


class StreamingRefused(Exception):
    """The server does not serve streaming lists (transcript 33)."""


#: handler(kind, event type, object, previous object or None, monotonic arrival time)
Handler = Callable[[str, str, dict[str, Any], "dict[str, Any] | None", float], None]


class Informer:
    """Mirrors one kind in one scope (a namespace, or all) into ``store``, in its own thread."""

    def __init__(self, api: KubeAPI, kind: Kind, handler: Handler, *, namespace: str | None = None,
                 metrics: Any = None, watch_timeout: int = 300, heartbeat: float = 60.0, silence_grace: float = 10.0,
                 backoff_base: float = 0.2, backoff_cap: float = 30.0, page_size: int = 500,
                 streaming_list: bool = True, keep: Callable[[dict[str, Any]], bool] | None = None,
                 clock: Callable[[], float] = monotonic_seconds) -> None:
        self.api, self.kind, self.handler, self.namespace, self.metrics = api, kind, handler, namespace, metrics
        self.clock = clock  # monotonic seconds: the arrival of a LIST's objects, and the loop's progress
        self.watch_timeout, self.silence_grace = watch_timeout, silence_grace
        #: the longest a live stream stays quiet: the heartbeat BOOKMARK, or the close at timeoutSeconds
        self.silence_limit = min(heartbeat, watch_timeout) + silence_grace
        self.backoff_base, self.backoff_cap, self.page_size = backoff_base, backoff_cap, page_size
        self.streaming_list = streaming_list
        self.store = Store(keep)
        self.synced = threading.Event()
        self.stop = threading.Event()
        self.error: str = ""  # set when the informer gave up (a request the server will never accept)
        self.resource_version: str | None = None
        self._failures = 0
        #: when the loop last made progress (an event, a BOOKMARK, a LIST, a reconnection): a loop that
        #: is alive moves it at least every silence_limit, since a quiet stream is dropped then
        self.active_at = self.clock()
        #: beyond this without progress the loop is stuck (a handler that never returns, a read that
        #: never times out, a server that accepts connections and never answers), and only a restart
        #: helps: the liveness probe says so (``stalled``). A live loop moves active_at at least every
        #: silence_limit (an answered reopening, _opened), and a failure waits at most backoff_cap
        #: before the next try: 100 s with the defaults, so with the overlay's probe (10 s, twice) a
        #: stalled process is restarted within about two minutes.
        self.stall_limit = self.silence_limit + backoff_cap
        self.started = False

    @property
    def path(self) -> str:
        return collection_path(self.kind.group, self.kind.version, self.kind.plural, self.namespace)

    def start(self) -> Informer:
        self.started, self.active_at = True, self.clock()
        threading.Thread(target=self.run, daemon=True, name=f"informer-{self.kind.plural}").start()
        return self

    # ---- the loop
    def run(self) -> None:
        while not self.stop.is_set():
            try:
                if self.resource_version is None:
                    self._initial_state()
                opened = self.clock()
                self._watch()
                if self.clock() - opened < self.watch_timeout - 1:
                    # a real server closes at timeoutSeconds (30, 33); earlier is a restart or a proxy
                    raise WatchDropped("the stream closed before timeoutSeconds")
                self._failures = 0
                self._restarted("closed", progress=True)  # closed at timeoutSeconds: resume at once
            except Expired:
                log.info("%s: resourceVersion %s expired; listing again", self.kind.plural, self.resource_version)
                self.resource_version = None
                self._restarted("expired", progress=True)  # the server answered (410)
            except WatchSilent as exc:
                log.warning("%s: the watch went silent (%s); reconnecting", self.kind.plural, exc)
                self._restarted("silent")
            except (WatchDropped, APIError) as exc:
                if isinstance(exc, APIError) and exc.status in (400, 404, 405, 406, 415, 422):
                    self.error = f"{self.kind.plural}: the API server refuses the request: {exc}"
                    log.error("%s", self.error)
                    self.synced.set()  # nobody waits forever for a sync that cannot come
                    return
                self._restarted("dropped" if isinstance(exc, WatchDropped) else f"http-{exc.status}")
                self._backoff(exc)
            except Exception as exc:  # a malformed event: start from a fresh LIST
                log.exception("%s: unexpected failure in the informer: %s", self.kind.plural, exc)
                self.resource_version = None
                self._restarted("error")
                self._backoff(exc)

    def _restarted(self, reason: str, progress: bool = False) -> None:
        """A watch ended for ``reason``. It moves the liveness clock only when the server answered
        (``progress``): a watch gone silent, dropped or refused is what a stalled informer looks like,
        and reconnection attempts that keep failing must not hide it (/healthz then fails)."""
        if progress:
            self.active_at = self.clock()
        if self.metrics is not None and not self.stop.is_set():
            self.metrics.watch_restarts.labels(self.kind.name, reason).inc()

    def _backoff(self, exc: BaseException) -> None:
        delay = doubled(self.backoff_base, self._failures, self.backoff_cap) * random.uniform(0.5, 1.5)
        self._failures += 1
        log.warning("%s: %s; retrying in %.2fs", self.kind.plural, exc, delay)
        self.stop.wait(delay)

    # ---- initial state
    def _initial_state(self) -> None:
        if self.streaming_list:
            try:
                self._streaming_list()
                return
            except StreamingRefused as exc:
                log.info("%s: streaming list refused (%s); using LIST + WATCH", self.kind.plural, exc)
                self.streaming_list = False
        self._list()

    def _list(self) -> None:
        self._replace(*self._list_items())

    def _list_items(self) -> tuple[list[dict[str, Any]], str | None]:
        accept = METADATA_LIST if self.kind.metadata_only else None
        items: list[dict[str, Any]] = []
        version = None
        for page in self.api.list_pages(self.path, self.kind.selector, self.page_size, accept=accept):
            version = version or (page.get("metadata") or {}).get("resourceVersion")
            items += [self._initial(o) for o in page.get("items") or []]
        return items, version

    def _initial(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of the initial state as the store takes it: slimmed, or with a share (``keep``)
        and outside it, only its name and resourceVersion, so that a LIST of 30,000 objects never
        holds them all at once (the peak is what the process keeps)."""
        if self.store.keep is not None and not self.store.keep(obj):
            meta = obj.get("metadata") or {}
            return {OUTSIDE: True, "metadata": {k: meta[k] for k in ("namespace", "name", "resourceVersion") if k in meta}}
        return slim(self.kind, obj)

    def refill(self, emit: bool = True) -> int:
        """The share grew (``reconcile --shards``): LIST, store the newly kept objects (an object the
        watch has since seen newer is read again with a GET), and tell the handler of each as ADDED
        (unless ``emit`` is False: the caller visits them itself). Runs beside the watch, in the
        caller's thread; the store's versions keep the two consistent."""
        items, _ = self._list_items()
        added, stale = self.store.fill(items)
        for ns, name in stale:
            try:
                fresh = self.api.request("GET", f"{collection_path(self.kind.group, self.kind.version, self.kind.plural, ns)}/{name}",
                                         accept=METADATA_WATCH if self.kind.metadata_only else None)
            except APIError as exc:
                if not is_not_found(exc):
                    raise
                continue
            more, _ = self.store.fill([slim(self.kind, fresh)])
            added += more
        arrived = self.clock()
        for obj in added if emit else ():
            self._emit("ADDED", obj, None, arrived)
        return len(added)

    def _replace(self, items: list[dict[str, Any]], version: str | None) -> None:
        arrived = self.clock()
        for type_, obj, old in self.store.replace(items):
            self._emit(type_, obj, old, arrived)
        self.resource_version = version
        self.active_at = arrived
        self.synced.set()

    def _streaming_list(self) -> None:
        """sendInitialEvents: ADDED per object, then a BOOKMARK marked as the end (KEP-3157)."""
        query = self._query() | {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"}
        query.pop("resourceVersion", None)
        initial: list[dict[str, Any]] = []
        for event, _ in self.api.watch(self.path, query, self.silence_limit, self._accept()):
            type_, obj = event.get("type"), event.get("object") or {}
            if type_ == "ERROR":
                raise StreamingRefused(obj.get("message", "an ERROR event"))
            if type_ == "BOOKMARK":
                annotations = (obj.get("metadata") or {}).get("annotations") or {}
                if annotations.get(INITIAL_EVENTS_END) == "true":
                    self._replace(initial, obj["metadata"]["resourceVersion"])
                    return
                continue
            if type_ == "ADDED":
                initial.append(self._initial(obj))
        raise StreamingRefused("the stream ended before the end of its initial events")

    # ---- watching
    def _accept(self) -> str | None:
        return METADATA_WATCH if self.kind.metadata_only else None

    def _query(self) -> dict[str, Any]:
        query: dict[str, Any] = {"allowWatchBookmarks": "true", "timeoutSeconds": str(self.watch_timeout)}
        if self.resource_version:
            query["resourceVersion"] = self.resource_version
        if self.kind.selector:
            query["labelSelector"] = self.kind.selector
        return query

    def _events(self) -> Iterator[tuple[dict[str, Any], float]]:
        """The WATCH's events. Gone as the WATCH's answer (a watch served without the watch cache), not
        as an ERROR event in its stream (transcript 32), is the same expiry: LIST again, as client-go's
        reflector does on either (isExpiredError). A LIST's 410 (an expired continue token) is an
        ordinary failure: retried with backoff, from its first page."""
        try:
            yield from self.api.watch(self.path, self._query(), self.silence_limit, self._accept(), opened=self._opened)
        except APIError as exc:
            if exc.status == 410:
                raise Expired(exc.message) from exc
            raise

    def stalled(self, now: float | None = None) -> str | None:
        """Why this informer is stuck, or None: no progress for ``stall_limit`` seconds while running
        (kopf#787 and #957: watches that stall silently until a restart)."""
        if not self.started or self.stop.is_set() or self.error:
            return None  # an informer that gave up logged why; a restart would not change the server's answer
        quiet = (self.clock() if now is None else now) - self.active_at
        if quiet <= self.stall_limit:
            return None
        return f"{self.kind.plural} informer: no event, LIST or reconnection for {quiet:.0f}s (limit {self.stall_limit:.0f}s)"

    def _opened(self) -> None:
        """The server answered a WATCH (200): progress, even if the stream stays quiet. On a quiet
        kind a real kube-apiserver may send no BOOKMARK for minutes (the kit's v1.36.2 did not within
        70 s), so the watch goes silent and is reopened: each answered reopening is the server alive.
        An attempt it never answers (a stopped process, a dead proxy) is not."""
        self.active_at = self.clock()

    def _watch(self) -> None:
        for event, arrived in self._events():
            self.active_at = arrived
            if self.stop.is_set():
                return
            type_, obj = event.get("type", ""), event.get("object") or {}
            if self.metrics is not None:
                self.metrics.watch_events.labels(self.kind.name, type_).inc()
            if type_ not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"):
                raise WatchDropped(f"not a watch event: {str(event)[:200]}")
            if type_ == "ERROR":
                if obj.get("code") == 410:
                    raise Expired(obj.get("message", ""))
                raise WatchDropped(f"ERROR event: {obj.get('message', obj)}")
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if type_ == "BOOKMARK":
                self.resource_version = version or self.resource_version
                continue
            obj = slim(self.kind, obj, self.store.get(key_of(obj)))
            if type_ == "DELETED":
                old = self.store.remove(key_of(obj))
            else:
                old = self.store.put(obj)
            self.resource_version = version or self.resource_version
            self._failures = 0
            if self.store.keep is None or old is not None or self.store.holds(key_of(obj)):
                self._emit(type_, obj, old, arrived)  # (another replica's share: nothing to tell)

    def _emit(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, arrived: float) -> None:
        try:
            self.handler(self.kind.name, type_, obj, old, arrived)
        except Exception:  # a handler bug must not kill the watch
            log.exception("%s: event handler failed", self.kind.plural)
