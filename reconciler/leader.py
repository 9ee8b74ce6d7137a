"""Leader election on a coordination.k8s.io/v1 Lease, so that two replicas never reconcile at once.

The algorithm of client-go's leaderelection package: read the Lease; create it when absent; take
it when it is held by nobody or its holder let it expire (renewTime + leaseDurationSeconds in the
past); renew it while held. Every write carries the resourceVersion read, so two candidates
racing get one 200 and one 409 (transcript 15). Times are MicroTime with exactly six fractional
digits (anything else is a 400). Releasing on shutdown clears holderIdentity with a merge patch
conditional on the resourceVersion.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from .api import APIError, KubeAPI, collection_path, object_path

log = logging.getLogger("memcached_gitops.leader")


def micro_time(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


class LeaderElector:
    def __init__(self, api: KubeAPI, namespace: str, identity: str, name: str = "memcached-gitops-leader",
                 duration: int = 15, clock: Any = None) -> None:
        self.api, self.namespace, self.identity, self.name, self.duration = api, namespace, identity, name, duration
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.lease: dict[str, Any] | None = None

    @property
    def path(self) -> str:
        return object_path("coordination.k8s.io", "v1", "leases", self.namespace, self.name)

    def try_acquire_or_renew(self) -> bool:
        """True when this process holds the Lease after the call."""
        now = self.clock()
        try:
            lease = self.api.request("GET", self.path)
        except APIError as exc:
            if exc.status != 404:
                log.warning("cannot read the Lease: %s", exc)
                return False
            return self._create(now)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        renewed = spec.get("renewTime")
        duration = dt.timedelta(seconds=spec.get("leaseDurationSeconds", self.duration))
        expired = not renewed or parse_micro_time(renewed) + duration < now
        if holder and holder != self.identity and not expired:
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
            return True
        except APIError as exc:
            if exc.status == 409:  # another candidate wrote first
                self.lease = None
                return False
            raise

    def _create(self, now: dt.datetime) -> bool:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration,
                         "acquireTime": micro_time(now), "renewTime": micro_time(now), "leaseTransitions": 0}}
        try:
            path = collection_path("coordination.k8s.io", "v1", "leases", self.namespace)
            self.lease = self.api.request("POST", path, body=body, verb="create")
            return True
        except APIError as exc:
            if exc.status == 409:
                return False
            raise

    def release(self) -> None:
        """Give the Lease up on shutdown so that the next replica need not wait for it to expire."""
        if not self.lease:
            return
        patch = {"metadata": {"resourceVersion": self.lease["metadata"]["resourceVersion"]}, "spec": {"holderIdentity": None}}
        try:
            self.api.request("PATCH", self.path, body=patch, content_type="application/merge-patch+json", verb="patch")
        except APIError as exc:
            log.warning("could not release the Lease: %s", exc)
        self.lease = None
