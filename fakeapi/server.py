"""An in-process fake kube-apiserver on 127.0.0.1 that the real kubernetes client talks to.

It implements the parts of the Kubernetes API the reconciler uses, following the API
documentation ("API Concepts": resourceVersion, LIST chunking with limit/continue, generation;
"Server-Side Apply": field ownership, conflicts, force; "Status" subresources; JSON merge patch
RFC 7386; JSON patch RFC 6902) and the recorded kube-apiserver v1.36.2 exchanges in
tests/fixtures/apiserver-transcripts (tests/fake_apiserver/test_fake_apiserver_replay.py replays every one).
It never looks at what the reconciler would like: where the docs and the recordings disagree,
the recordings win (see their README's "Surprises").

``FakeAPIServer`` is composed of the parts the API server itself is split into, a module each:

- handler.py: the HTTP side: routing, discovery, LIST with limit/continue, opening a WATCH,
  metadata-only views, the request log and fault injection;
- reviews.py: TokenReview and SubjectAccessReview (create-only, never stored);
- admission.py: RBAC authorization (optional: a ClusterRole's rules), the
  OwnerReferencesPermissionEnforcement admission plugin (behind a switch), and each resource's
  defaulting, pruning and validation;
- verbs.py: create, update and the non-apply patches, the status and scale subresources;
- fieldmanager.py: managedFields and server-side apply (fields.py: the field sets themselves);
- storage.py: the object store (resourceVersion, uid, generation, deletion), whose every change
  goes to the watch cache;
- watch.py: the watch cache and the WATCH streams served from it;
- errors.py: the Status errors; resources.py, defaults.py, selectors.py: the types served, the
  Deployment's defaults, label selectors.

``DeploymentController`` (controllers.py) plays the controller (status and pods). This module holds
the composition, its lifecycle (a context manager) and the controls tests break things with:

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

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas.crd import builtin_crd_text

from .admission import Admission, Authorizer
from .controllers import DeploymentController
from .errors import APIError, bad_request, conflict_modified, invalid, not_found, status_body
from .fieldmanager import FieldManager, manager_from_user_agent
from .handler import APIHandler, Fault, LoggedRequest, _HTTPServer, http_handler
from .resources import BUILTINS, Resource
from .reviews import Reviews
from .storage import Storage, _RecordingStore
from .verbs import Verbs, json_patch, merge_patch, strategic_merge_patch
from .watch import WatchCache, WatchStream

#: What tests and benchmarks import from fakeapi.server, wherever in the package it is defined.
__all__ = [
    "APIError", "DeploymentController", "FakeAPIServer", "Fault", "LoggedRequest", "bad_request", "conflict_modified",
    "invalid", "json_patch", "manager_from_user_agent", "merge_patch", "not_found", "status_body", "strategic_merge_patch",
]


@dataclass
class FakeAPIServer(APIHandler, Verbs, FieldManager, Admission, Authorizer, Reviews, Storage):
    """The fake. Use as a context manager: ``with FakeAPIServer() as api: api.url``."""

    crd_texts: list[str] = field(default_factory=lambda: [builtin_crd_text()])
    rbac_rules: list[dict[str, Any]] | None = None  # a ClusterRole's rules; None: allow everything
    namespaces: tuple[str, ...] = ("default",)
    watch_window: int = 10_000  # changes of each resource a WATCH can resume from; older is 410 (32)
    #: kube-apiserver's --enable-admission-plugins=OwnerReferencesPermissionEnforcement (OpenShift has it on)
    owner_references_permission_enforcement: bool = False
    rbac_user: str = "system:serviceaccount:test:reconciler"  # who the RBAC-checked requests come from
    #: TokenReview (reviews.py): the tokens the fake's authenticator knows, each with its status.user
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lock = threading.RLock()
        self.rv = 100
        self.watch_cache = WatchCache(self.watch_window, self.rv)
        self.watches: list[WatchStream] = []  # open WATCH streams
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = _RecordingStore(self._record)  # (group, plural, ns, name)
        self.log: list[LoggedRequest] = []
        self.non_resource_grants = []
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
        self._httpd = _HTTPServer(("127.0.0.1", 0), http_handler(self))
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
    # Read under the lock a request is served under (handler.handle): a write's object and its log entry
    # become visible together, so a test that sees a write's effect also finds the write in the log.
    # A guarantee of these test helpers, not a rule of the real server, and no transcript in
    # ../shared/apiserver-transcripts shows it: a real kube-apiserver writes an audit event's
    # ResponseComplete stage after the object is stored, so a test on a real cluster that reads the
    # object and then the audit log must wait for the audit entry.
    def get(self, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            obj = self.objects.get((group, plural, namespace, name))
            return copy.deepcopy(obj) if obj else None

    def writes(self) -> list[LoggedRequest]:
        with self.lock:
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







