"""Leader election on a coordination.k8s.io/v1 Lease, so that two replicas never reconcile at once.

The algorithm of client-go's leaderelection package: read the Lease; create it when absent; take
it when it is held by nobody or its holder let it expire; renew it while held. Expiry is judged as
client-go judges it, by this replica's own clock: the Lease is valid while the record it read has
not changed for leaseDurationSeconds since this replica first saw it (client-go's observedTime;
kubernetes/leaderelection/leaderelection.py ``observed_time_milliseconds`` in the Python client).
The renewTime a holder writes is another host's wall clock: a holder whose clock runs behind would
look expired while it renews, and one whose clock runs ahead would hold a dead Lease for as long.
Every write carries the resourceVersion read, so two candidates racing get one 200 and one 409
(transcript 15). Times are MicroTime with exactly six fractional
digits (anything else is a 400). Releasing on shutdown clears holderIdentity with a merge patch
conditional on the resourceVersion.

``run`` does it in its own thread with client-go's timings: a 15 s lease, a 10 s renew deadline
and a 2 s retry period. The leader renews every retry period (one PUT of the Lease it holds; a
GET only after a conflict), a standby tries every retry period (with client-go's jitter). A
leader that has not renewed within the renew deadline, counted from when its last successful
renewal was sent, stops leading at once: ``is_leader`` turns False by the clock even while a
renewal hangs, so no write starts after the deadline, 5 s before another replica may take over.
``monotonic`` (the deadline's clock) and ``clock`` (the Lease's wall time) are inputs, and ``step``
is one try of ``run``'s loop, so tests drive time themselves (tests/reconciler/client/test_leader_time.py).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from memcached_gitops.foundation.clocks import monotonic_seconds
from memcached_gitops.foundation.identities import LEADER_LEASE, LEASES

from .api import APIError, KubeAPI, collection_path, is_conflict, is_not_found, object_path

log = logging.getLogger("memcached_gitops.leader")


def micro_time(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, api: KubeAPI, namespace: str, identity: str, name: str = LEADER_LEASE,
                 duration: int = 15, clock: Any = None, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 monotonic: Callable[[], float] = monotonic_seconds) -> None:
        self.api, self.namespace, self.identity, self.name, self.duration = api, namespace, identity, name, duration
        self.renew_deadline, self.retry_period = renew_deadline, retry_period
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))  # wall time, for the Lease's MicroTimes
        self.monotonic = monotonic  # the deadline's time: an input, so tests can move it
        self.lease: dict[str, Any] | None = None
        self.holder = ""  # who held the Lease at the last read
        self._leading = False
        self._renewed_at = 0.0  # monotonic time the last successful renewal was sent
        self._observed: tuple[str, float] | None = None  # the Lease record last read, and when (monotonic) it was first seen
        self._lock = threading.Lock()

    def is_leader(self) -> bool:
        """Leading, and renewed within the deadline (checked by the clock, not by the thread)."""
        with self._lock:
            return self._leading and self.monotonic() - self._renewed_at < self.renew_deadline

    def run(self, stop: threading.Event, on_started: Callable[[], None], on_stopped: Callable[[], None],
            on_holder: Callable[[str], None] | None = None) -> None:
        """Campaign, lead and renew until ``stop`` is set; call back on each change of leadership."""
        while not stop.is_set():
            stop.wait(self.step(on_started, on_stopped, on_holder))

    def step(self, on_started: Callable[[], None], on_stopped: Callable[[], None],
             on_holder: Callable[[str], None] | None = None) -> float:
        """One try to acquire or renew, and the callbacks it calls for; how long to wait until the next."""
        sent = self.monotonic()
        try:
            ok = self.try_acquire_or_renew()
        except APIError as exc:
            log.warning("Lease %s/%s: %s", self.namespace, self.name, exc)
            ok = False
        if on_holder:
            on_holder(self.holder)
        with self._lock:
            was = self._leading
            if ok:
                self._leading, self._renewed_at = True, sent  # the deadline counts from the send
            elif was and self.monotonic() - self._renewed_at >= self.renew_deadline:
                self._leading = False
            now_leading = self._leading
        if now_leading and not was:
            log.info("became the leader (%s)", self.identity)
            on_started()
        elif was and not now_leading:
            log.error("could not renew the Lease within %gs: stopped leading", self.renew_deadline)
            on_stopped()
        if was and now_leading and not ok:
            # the clock may run out before the next try: stop the workers exactly at the deadline
            return max(0.0, min(self.retry_period, self._renewed_at + self.renew_deadline - self.monotonic()))
        return self.retry_period if now_leading else self.retry_period * random.uniform(1.0, 2.2)

    @property
    def path(self) -> str:
        return object_path(*LEASES.gvr, self.namespace, self.name)

    def try_acquire_or_renew(self) -> bool:
        """True when this process holds the Lease after the call."""
        now = self.clock()
        if self.lease is not None and self._renew(now):
            return True
        try:
            lease = self.api.request("GET", self.path)
        except APIError as exc:
            if not is_not_found(exc):
                log.warning("cannot read the Lease: %s", exc)
                return False
            return self._create(now)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        self.holder = holder or ""
        if holder and holder != self.identity and not self._expired(spec):
            self.lease = None
            return False
        new_spec = dict(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = micro_time(now)
            new_spec["leaseTransitions"] = spec.get("leaseTransitions", 0) + 1  # as client-go counts it
        new_spec.update({"holderIdentity": self.identity, "leaseDurationSeconds": self.duration, "renewTime": micro_time(now)})
        body = {**lease, "spec": new_spec}
        try:
            self.lease = self.api.request("PUT", self.path, body=body, verb="update")
            self.holder = self.identity
            return True
        except APIError as exc:
            if is_conflict(exc):  # another candidate wrote first
                self.lease = None
                return False
            raise

    def _expired(self, spec: dict[str, Any]) -> bool:
        """True once the record ``spec`` has stayed the same for its leaseDurationSeconds by this
        replica's monotonic clock (client-go's isLeaseValid: observedTime + duration is not After(now))."""
        record, now = json.dumps(spec, sort_keys=True), self.monotonic()
        if self._observed is None or self._observed[0] != record:
            self._observed = (record, now)
        duration = float(spec.get("leaseDurationSeconds", self.duration))
        return self._observed[1] + duration <= now

    def _renew(self, now: dt.datetime) -> bool:
        """The leader's fast path: one PUT of the Lease it holds. A 409 (someone else wrote it) or a 404
        (someone deleted it) falls back to the slow path, which reads it and takes or creates it
        (client-go's tryAcquireOrRenew: "falling back to slow path")."""
        assert self.lease is not None
        body = {**self.lease, "spec": {**self.lease["spec"], "renewTime": micro_time(now)}}
        try:
            self.lease = self.api.request("PUT", self.path, body=body, verb="update")
            return True
        except APIError as exc:
            if not (is_conflict(exc) or is_not_found(exc)):
                raise
            self.lease = None
            return False

    def _create(self, now: dt.datetime) -> bool:
        body = {"apiVersion": LEASES.api_version, "kind": LEASES.kind, "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration,
                         "acquireTime": micro_time(now), "renewTime": micro_time(now), "leaseTransitions": 0}}
        try:
            path = collection_path(*LEASES.gvr, self.namespace)
            self.lease = self.api.request("POST", path, body=body, verb="create")
            self.holder = self.identity
            return True
        except APIError as exc:
            if is_conflict(exc):
                return False
            raise

    def release(self) -> None:
        """Give the Lease up on shutdown so that the next replica need not wait for it to expire."""
        with self._lock:
            self._leading = False
        if not self.lease:
            return
        patch = {"metadata": {"resourceVersion": self.lease["metadata"]["resourceVersion"]}, "spec": {"holderIdentity": None}}
        try:
            self.api.request("PATCH", self.path, body=patch, content_type="application/merge-patch+json", verb="patch")
        except APIError as exc:
            log.warning("could not release the Lease: %s", exc)
        self.lease = None
