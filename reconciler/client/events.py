"""core/v1 Events on a Memcached, in the shape client-go's record.EventRecorder writes (``kubectl
describe`` shows them). Best effort: a failed POST is logged, never raised, since an Event only
tells what the status and the log already say."""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

from memcached_gitops.foundation.product import NAME

from ..decisions.vocabulary import EVENTS, bounded
from .api import APIError, KubeAPI, collection_path

log = logging.getLogger("memcached_gitops.reconciler")


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Posts Events for a CR; ``enabled`` False (``--no-events``, ``--dry-run``) posts none."""

    def __init__(self, api: KubeAPI, enabled: bool = True) -> None:
        self.api, self.enabled = api, enabled

    def warn_once(self, cr: dict[str, Any], reason: str, message: str) -> None:
        """A Warning for a state that persists: only when the CR's Degraded condition is not already saying
        it, True (a failure) or False (news such as SelectorOverlap that is no failure)."""
        degraded: dict[str, Any] = next((c for c in (cr.get("status") or {}).get("conditions") or [] if c.get("type") == "Degraded"), {})
        if degraded.get("reason") == reason and degraded.get("message") == message:
            return
        self.record(cr, "Warning", reason, message)

    def record(self, cr: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """A core/v1 Event, the record.EventRecorder shape that ``kubectl describe`` shows."""
        if not self.enabled:
            return
        ns, name = cr["metadata"].get("namespace", ""), cr["metadata"]["name"]
        now = now_rfc3339()
        event = {
            "apiVersion": EVENTS.api_version, "kind": EVENTS.kind,
            "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": ns},
            "involvedObject": {"apiVersion": cr["apiVersion"], "kind": cr["kind"], "name": name, "namespace": ns,
                               "uid": cr["metadata"].get("uid", "")},
            "reason": str(reason), "message": bounded(message), "type": type_, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "source": {"component": NAME},
            "reportingComponent": NAME, "reportingInstance": NAME,
        }
        try:
            self.api.request("POST", collection_path(*EVENTS.gvr, ns), body=event, verb="create")
        except APIError as exc:  # an Event is best effort
            log.warning("could not record event %s on %s/%s: %s", reason, ns, name, exc)
