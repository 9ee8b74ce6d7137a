"""Scale-out (``reconcile --shards``): each replica serves a share of the CRs, never two for one CR.

Membership is the Kubernetes API's, nothing of our own: each replica holds a Lease of its own
(``memcached-gitops-shard-<identity>``, labelled ``cache.example.com/shard-ring: <ring>``) and
watches the ring's other Leases. Which replica serves a CR is rendezvous hashing of
``namespace/name`` over the members' identities: every replica computes it alone, a new replica
takes about 1/N of the CRs, and a leaving one hands over only its own.

**Never two writers.** Rendezvous hashing gives the property the protocol rests on: two replicas
that each count the other as a member never both own a CR (each owns it only if its score beats
the other's). A CR can have two writers only where one replica leaves a live one out of its view,
and each way that can happen is closed:

- *Joining.* A replica writes nothing until every other member of its view has published, in its
  own Lease's ``cache.example.com/shard-view`` annotation, a view with the newcomer in it. A member
  publishes a view only after the reconciles it began under an older view have finished (the
  drain), and a write is allowed only for a CR the writer owns in its current view (``may_write``,
  before every request). So when a new member starts writing, the old owners of its share have
  stopped; the old members keep serving the rest of their shares all along.
- *Leaving* (SIGTERM): the replica stops taking CRs, waits for the reconciles in flight, and only
  then deletes its Lease. The others drop it on the DELETED event: a hand-over in milliseconds.
- *Dying, or cut off.* A member is dropped when its Lease has not been renewed for
  ``leaseDurationSeconds`` (15 s) since this replica first saw the last renewal, and a GET (a
  quorum read: a silent watch cannot kill a live peer) shows the same renewal. The confirming
  replica deletes that Lease (conditional on its resourceVersion), so every replica drops it at
  once. The member itself stopped writing 10 s after it *sent* its last successful renewal (the
  fence of leader.py, checked by the clock before every write): 5 s before anyone takes its share.

A replica that lost its fence comes back as a new incarnation (``spec.leaseTransitions`` + 1): the
others' acknowledgements of its old self do not count for the new one. The view is made of
``identity#incarnation`` tokens; ownership hashes identities only, so a comeback moves nothing.

Time is an input (``monotonic``, ``clock``) and ``step`` is one turn of the Lease thread, so tests
drive the protocol themselves (tests/reconciler/client/test_shards.py).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import hashlib
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memcached_gitops.foundation.clocks import monotonic_seconds
from memcached_gitops.foundation.identities import LEASES, RING_LABEL, VIEW_ANNOTATION
from memcached_gitops.foundation.identities import SHARD_LEASE_PREFIX as LEASE_PREFIX
from memcached_gitops.foundation.product import NAME

from .api import APIError, KubeAPI, collection_path, is_conflict, is_not_found, object_path
from .leader import micro_time

log = logging.getLogger("memcached_gitops.shards")

DEFAULT_RING = NAME

Key = tuple[str, str]


def score(member: str, key: str) -> int:
    """The rendezvous weight of a member for a key: 64 bits of BLAKE2b, the same on every replica."""
    return int.from_bytes(hashlib.blake2b(f"{member}\0{key}".encode(), digest_size=8).digest(), "big")


def owner(key: str, members: Iterable[str]) -> str | None:
    """The member that serves ``key`` (highest score; the name breaks a tie), None without members."""
    return max(members, key=lambda m: (score(m, key), m), default=None)


def key_text(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def identity_of(token: str) -> str:
    return token.rpartition("#")[0]


def lease_name(identity: str) -> str:
    """A DNS subdomain name for the replica's Lease (Pod names already are; a host-pid identity may not be)."""
    name = re.sub(r"[^a-z0-9.-]+", "-", identity.lower())
    # every dot-separated part of a DNS subdomain starts and ends with a letter or a digit (transcript 14)
    name = ".".join(part.strip("-") for part in name.split(".") if part.strip("-"))
    return (LEASE_PREFIX + name)[:253].rstrip("-.")


def parse_view(text: str | None) -> frozenset[str]:
    return frozenset(t for t in (text or "").split(",") if t)


@dataclass
class Peer:
    """Another member, as this replica last saw its Lease."""

    token: str  # identity#incarnation
    view: frozenset[str]  # the view it published
    renew: str  # spec.renewTime as read
    seen: float  # monotonic time this renewal was first seen here
    resource_version: str = ""


class ShardRing:
    """This replica's membership, its view of the ring, and the gate on its writes."""

    def __init__(self, api: KubeAPI, namespace: str, identity: str, ring: str = DEFAULT_RING, duration: int = 15,
                 renew_deadline: float = 10.0, retry_period: float = 2.0, monotonic: Callable[[], float] = monotonic_seconds,
                 clock: Callable[[], dt.datetime] | None = None) -> None:
        if renew_deadline >= duration:
            raise ValueError(f"renew deadline {renew_deadline}s is not below the lease duration {duration}s: "
                             "a member must stop writing before the others may take its share")
        self.api, self.namespace, self.identity, self.ring = api, namespace, identity, ring
        self.duration, self.renew_deadline, self.retry_period = duration, renew_deadline, retry_period
        self.monotonic = monotonic
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.name = lease_name(identity)
        self.incarnation = 0
        self.peers: dict[str, Peer] = {}  # by Lease name, this replica's own left out
        self.view: frozenset[str] = frozenset()  # the tokens this replica acts on
        self.published: frozenset[str] | None = None  # the view its Lease says (after the last successful write)
        self.epoch = 0  # counts changes of the view
        self.changed_at = 0.0  # monotonic time of the last change of the view
        self.stopping = False
        #: the ring's Leases have been listed once (after this replica's own was created): until then a
        #: member it does not know yet could be writing anything
        self.listed = False
        self.on_agreed: Callable[[], None] = lambda: None  # the share may have grown: queue it
        self.on_handover: Callable[[float], None] = lambda seconds: None
        self.on_view: Callable[[], None] = lambda: None  # the view changed: the caches' share may have too
        self.wake = threading.Event()  # the Lease thread has something to publish
        self._lease: dict[str, Any] | None = None
        self._renewed_at: float | None = None  # monotonic time the last successful renewal was sent
        self._lapsed = False  # the fence ran out: the next renewal is a new incarnation
        self._holds: Counter[int] = Counter()  # reconciles in flight, by the epoch they began in
        self._agreed_epoch = -1
        self._lock = threading.RLock()
        #: The CR this reconcile holds (``serving``), in a context variable, not a thread-local: the writes a
        #: reconcile sends side by side on the pool (companion_step.concurrently) run in a copy of its
        #: context, so the gate sees their CR too (a thread-local made every pool write "not this replica's CR").
        self._hold: contextvars.ContextVar[tuple[Key, int] | None] = contextvars.ContextVar(f"shard-hold-{id(self)}", default=None)
        self.last_error: APIError | None = None  # the last write's refusal
        self._io = threading.Lock()  # one Lease write at a time: the Lease thread's turn, or release's DELETE
        #: SIGTERM: the members of the last view this replica wrote under (None: it may not write), so
        #: that the reconciles in flight end with their own writes until release() deletes the Lease
        self._leaving: list[str] | None = None

    # ---- the pure part: who may write what, now
    @property
    def token(self) -> str:
        return f"{self.identity}#{self.incarnation}"

    def fenced(self) -> bool:
        """Renewed within the renew deadline, counted from when the renewal was sent."""
        return self._renewed_at is not None and self.monotonic() - self._renewed_at < self.renew_deadline

    @property
    def renewed_at(self) -> float | None:
        """Monotonic time the last successful renewal of this replica's Lease was sent (None: none holds)."""
        return self._renewed_at

    @property
    def holds_lease(self) -> bool:
        """This replica has a Lease of its own in the ring (joined and not released)."""
        return self._lease is not None

    def members(self) -> list[str]:
        """The identities of the view (the hash's members)."""
        return sorted(identity_of(t) for t in self.view)

    def acknowledged(self) -> bool:
        """Every other member of the view has published a view with this replica (this incarnation) in it:
        none of them writes a CR this replica owns."""
        with self._lock:
            if not self.listed or self.token not in self.view:
                return False
            published = {p.token: p.view for p in self.peers.values()}
            return all(self.token in published.get(t, ()) for t in self.view if t != self.token)

    def owns(self, key: Key) -> bool:
        """This replica serves ``key`` in its current view (whether it may write now is ``allowed``)."""
        return owner(key_text(key), self.members()) == self.identity

    def caches(self, key: Key) -> bool:
        """This replica keeps ``key``'s objects in its caches: it owns the CR among the members and itself
        (whether or not its own fence holds this moment, so that a blip does not empty the caches)."""
        with self._lock:
            members = {identity_of(t) for t in self.view} | {self.identity}
        return owner(key_text(key), members) == self.identity

    def cache_members(self) -> frozenset[str]:
        with self._lock:
            return frozenset(identity_of(t) for t in self.view) | {self.identity}

    def allowed(self, key: Key) -> bool:
        with self._lock:
            return not self.stopping and self.fenced() and self.acknowledged() and self.owns(key)

    @contextmanager
    def serving(self, key: Key) -> Iterator[bool]:
        """Hold ``key`` for one reconcile, when it is ours to write now; the view waits for it to end."""
        with self._lock:
            ok = self.allowed(key)
            epoch = self.epoch
            if ok:
                self._holds[epoch] += 1
                token = self._hold.set((key, epoch))
        try:
            yield ok
        finally:
            if ok:
                with self._lock:
                    self._holds[epoch] -= 1
                    self._hold.reset(token)
                    if epoch != self.epoch:
                        self.wake.set()  # a drain may be complete: publish

    def may_write(self) -> bool:
        """The API client's gate, before every write: the calling reconcile's CR is still ours in the
        current view (it may have changed while the reconcile ran), and the fence holds."""
        hold = self._hold.get()
        if hold is None:
            return False
        with self._lock:
            if self.stopping:  # leaving: a reconcile in flight ends (its status, its Event) under the view it began in
                return self._leaving is not None and self.fenced() and owner(key_text(hold[0]), self._leaving) == self.identity
        return self.allowed(hold[0])

    def drained(self) -> bool:
        with self._lock:
            return not any(n for e, n in self._holds.items() if e < self.epoch)

    def _recompute(self) -> None:
        """The view from the peers alive and this replica's fence; a change starts a new epoch."""
        with self._lock:
            view = frozenset(p.token for p in self.peers.values()) | ({self.token} if self.fenced() and not self.stopping else set())
            if view != self.view:
                log.info("shard view: %s", ", ".join(sorted(view)) or "(empty)")
                self.view, self.epoch, self.changed_at = view, self.epoch + 1, self.monotonic()
                self.wake.set()
                self.on_view()

    def _check_agreed(self) -> None:
        """Tell the controller once per view when its share may be written (the share is queued then)."""
        with self._lock:
            fire = self.acknowledged() and self._agreed_epoch != self.epoch
            if fire:
                self._agreed_epoch = self.epoch
                took = self.monotonic() - self.changed_at
        if fire:
            log.info("shard ring of %d members acknowledged this replica; serving its share", len(self.view))
            self.on_handover(took)
            self.on_agreed()

    # ---- what the Lease informer saw
    def on_lease(self, type_: str, lease: dict[str, Any]) -> None:
        meta = lease.get("metadata") or {}
        name = meta.get("name", "")
        if name == self.name:
            return  # this replica knows its own Lease better than any event
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        with self._lock:
            if type_ == "DELETED" or not holder:
                self.peers.pop(name, None)  # gone, or released: it stopped writing before
            else:
                token = f"{holder}#{spec.get('leaseTransitions', 0)}"
                view = parse_view((meta.get("annotations") or {}).get(VIEW_ANNOTATION))
                renew = spec.get("renewTime") or ""
                known = self.peers.get(name)
                seen = known.seen if known and known.token == token and known.renew == renew else self.monotonic()
                self.peers[name] = Peer(token, view, renew, seen, meta.get("resourceVersion", ""))
            self._recompute()
        self._check_agreed()

    # ---- the Lease thread
    def join(self) -> None:
        """Create this replica's Lease (or take over its own from an earlier process of the same name);
        raises the API's refusal (a 403 without the Lease RBAC), which no retry would change."""
        if not self._write(create=True):
            raise self.last_error or APIError(0, "the shard Lease could not be written")
        self._recompute()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set() and not self.stopping:
            with self._io:
                if self.stopping:
                    return  # release began meanwhile: no renewal may follow (or re-create) its DELETE
                wait = self.step()
            self.wake.wait(wait)
            self.wake.clear()

    def step(self) -> float:
        """Renew (publishing the view once drained), drop the peers confirmed dead; the time to the next turn."""
        self._expire_peers()
        due = self._renewed_at is None or self.monotonic() - self._renewed_at >= self.retry_period * 0.9
        with self._lock:
            publish = self.drained() and self.published != self.view
        wrote = (due or publish) and self._write(create=False)
        self._recompute()
        with self._lock:
            if wrote and self.drained() and self.published != self.view:
                self._write(create=False)  # the view changed with this renewal (the fence came back): publish it now
        self._check_agreed()
        return self.next_turn()

    def next_turn(self) -> float:
        """Seconds until the Lease thread's next turn: the retry period, or sooner when this replica's
        fence ends or a peer's Lease runs out (each a change of view); never less than 10 ms."""
        now = self.monotonic()
        turn = self.retry_period
        if self._renewed_at is not None and self.fenced():
            turn = min(turn, max(0.0, self._renewed_at + self.renew_deadline - now))  # the fence's end is a change of view
        for p in list(self.peers.values()):
            turn = min(turn, max(0.0, p.seen + self.duration - now))
        return max(turn, 0.01)

    def _expire_peers(self) -> None:
        now = self.monotonic()
        for name, peer in list(self.peers.items()):
            if now - peer.seen < self.duration:
                continue
            path = object_path(*LEASES.gvr, self.namespace, name)
            try:
                fresh = self.api.request("GET", path)
            except APIError as exc:
                if is_not_found(exc):
                    self.on_lease("DELETED", {"metadata": {"name": name}})
                else:
                    log.warning("cannot confirm shard Lease %s: %s", name, exc)
                continue
            spec = fresh.get("spec") or {}
            token = f"{spec.get('holderIdentity')}#{spec.get('leaseTransitions', 0)}"
            same = (spec.get("renewTime") or "") == peer.renew and token == peer.token
            if not same:
                self.on_lease("MODIFIED", fresh)  # renewed after all: the watch was behind
                continue
            log.warning("shard member %s did not renew for %ss: taking over its share", peer.token, self.duration)
            try:
                self.api.request("DELETE", path, body={"preconditions": {"resourceVersion": fresh["metadata"]["resourceVersion"]}})
            except APIError as exc:
                if not (is_not_found(exc) or is_conflict(exc)):
                    log.warning("cannot delete the expired shard Lease %s: %s", name, exc)
                    continue
                if is_conflict(exc):
                    continue  # it renewed between the GET and the DELETE
            self.on_lease("DELETED", {"metadata": {"name": name}})

    def _body(self, now: dt.datetime) -> tuple[dict[str, Any], frozenset[str]]:
        """The Lease to write, and the view it publishes: the current one once drained, else the last."""
        with self._lock:
            drained = self.drained()
            view = self.view if drained else (self.published or frozenset())
        return {"apiVersion": LEASES.api_version, "kind": LEASES.kind,
                "metadata": {"name": self.name, "namespace": self.namespace, "labels": {RING_LABEL: self.ring},
                             "annotations": {VIEW_ANNOTATION: ",".join(sorted(view))}},
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration,
                         "renewTime": micro_time(now), "leaseTransitions": self.incarnation}}, view

    def _write(self, create: bool) -> bool:
        """One renewal (PUT on the resourceVersion held) or creation; records the send time on success."""
        sent = self.monotonic()
        if self._renewed_at is not None and sent - self._renewed_at >= self.renew_deadline:
            self._lapsed, self._renewed_at = True, None
        if self._lapsed:
            self.incarnation += 1  # the others may have taken our share: come back as somebody new
            self._lapsed = False
        body, view = self._body(self.clock())
        self.last_error = None
        try:
            if self._lease is not None and not create:
                body["metadata"]["resourceVersion"] = self._lease["metadata"]["resourceVersion"]
                body["spec"]["acquireTime"] = self._lease["spec"].get("acquireTime")
                path = object_path(*LEASES.gvr, self.namespace, self.name)
                lease = self.api.request("PUT", path, body=body, verb="update")
            else:
                lease = self._create(body)
        except APIError as exc:
            self.last_error = exc
            if is_not_found(exc) or is_conflict(exc):  # deleted as expired, or written by someone else: start again
                log.warning("shard Lease %s: %s; joining again", self.name, exc)
                self._lease, self._lapsed = None, True
                self._renewed_at = None
            else:
                log.warning("cannot renew shard Lease %s: %s", self.name, exc)
            self._recompute()
            return False
        with self._lock:
            self._lease, self._renewed_at, self.published = lease, sent, view
        return True

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        body["spec"]["acquireTime"] = body["spec"]["renewTime"]
        try:
            created: dict[str, Any] = self.api.request("POST", collection_path(*LEASES.gvr, self.namespace), body=body,
                                                       verb="create")
            return created
        except APIError as exc:
            if not is_conflict(exc):
                raise
        # a Lease of this name from an earlier process: a new incarnation takes it over
        path = object_path(*LEASES.gvr, self.namespace, self.name)
        old = self.api.request("GET", path)
        self.incarnation = max(self.incarnation, int((old.get("spec") or {}).get("leaseTransitions") or 0) + 1)
        body["spec"]["leaseTransitions"] = self.incarnation
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        replaced: dict[str, Any] = self.api.request("PUT", path, body=body, verb="update")
        return replaced

    def release(self, timeout: float = 30.0) -> None:
        """SIGTERM: stop taking CRs, wait for the reconciles in flight, then delete the Lease.

        The reconciles in flight may still write (the others count this replica as a member until
        its Lease is deleted, so none of them owns its CRs), within the fence; nothing is written
        once the DELETE is on its way. Refusing their writes at once would leave a CR half-done: its
        Deployment applied, its status and Event not written until another replica comes to it."""
        with self._lock:
            self._leaving = self.members() if self.acknowledged() else None
            self.stopping = True
            self._recompute()
        deadline = self.monotonic() + timeout
        while self.monotonic() < deadline:
            with self._lock:
                if not any(self._holds.values()):
                    break
            time.sleep(0.005)
        with self._lock:
            self._leaving = None  # a reconcile still running after the timeout writes nothing more
        with self._io:  # after the Lease thread's turn in progress, so the version is the last one written
            if self._lease is None:
                return
            path = object_path(*LEASES.gvr, self.namespace, self.name)
            try:
                self.api.request("DELETE", path, body={"preconditions": {"resourceVersion": self._lease["metadata"]["resourceVersion"]}},
                                 verb="delete")
            except APIError as exc:
                log.warning("could not delete shard Lease %s: %s", self.name, exc)
            self._lease = None
