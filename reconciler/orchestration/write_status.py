"""The status verb: the CR's status through its status subresource, under its own field manager,
only when it changed. Its siblings are write_apply.py and write_delete.py; what the status says is
decisions/status.py's (``desired_status``), what the reconcile observed is cycle.py's."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..client.api import APIError, KubeAPI
from ..decisions.status import Observation, desired_status, status_differs
from ..decisions.vocabulary import REQUESTED_AT_ANNOTATION, REQUESTED_AT_LIMIT

log = logging.getLogger("memcached_gitops.reconciler")


def requested_at(cr: dict[str, Any]) -> str:
    """The CR's reconcile-now request (REQUESTED_AT_ANNOTATION), "" when none."""
    return str((cr.get("metadata", {}).get("annotations") or {}).get(REQUESTED_AT_ANNOTATION) or "")


def declared_fields(crd: dict[str, Any], version: str) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """The status fields the served CRD ``crd`` declares for ``version``, and those of a condition:
    what ``write_status`` may write (None: any, the schema keeps unknown fields or was not found)."""
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == version:
            status = (((v.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}).get("status") or {}
            if status.get("x-kubernetes-preserve-unknown-fields"):
                return None, None
            props = status.get("properties") or {}
            item = ((props.get("conditions") or {}).get("items") or {}).get("properties")
            return frozenset(props), (frozenset(item) if item else None)
    return None, None


def write_status(api: KubeAPI, path: str, cr: dict[str, Any], obs: Observation, clock: Callable[[], str], manager: str,
                 declared: frozenset[str] | None, condition_fields: frozenset[str] | None, *, served_by: str = "",
                 lazy_served_by: bool = False, reported: set[tuple[str, str]]) -> tuple[dict[str, Any] | None, bool]:
    """Apply the status ``obs`` asks for at ``path`` when it changed: the CR as the API server answered
    (None: no write), and whether only ``servedBy`` was out of date and, ``lazy_served_by``, left for
    the caller to write later, at its pace. A CR deleted meanwhile is no error; a field the served CRD
    does not declare is logged once per CR (kept in ``reported``)."""
    live_status = cr.get("status") or {}
    status = desired_status(obs, live_status, clock(), declared, condition_fields)
    requested = requested_at(cr)
    # the request handled, or the last one (kept when the annotation goes, as Flux keeps it, and when
    # a new one is refused: our apply would otherwise remove the field we own)
    fresh = 0 < len(requested) <= REQUESTED_AT_LIMIT and not obs.paused  # a paused CR handles no request
    handled = requested if fresh else str(live_status.get("lastHandledReconcileAt") or "")
    if handled and (declared is None or "lastHandledReconcileAt" in declared):
        status["lastHandledReconcileAt"] = handled
    if served_by and (declared is None or "servedBy" in declared):
        status["servedBy"] = served_by[:253]
        if lazy_served_by and not status_differs({k: v for k, v in status.items() if k != "servedBy"}, live_status):
            return None, status_differs(status, live_status)
    if not status_differs(status, live_status):
        return None, False
    ns, name = cr["metadata"].get("namespace", ""), cr["metadata"]["name"]
    body = {"apiVersion": cr["apiVersion"], "kind": cr["kind"], "metadata": {"name": name, "namespace": ns}, "status": status}
    try:
        return api.apply(path, body, manager), False
    except APIError as exc:
        if exc.status == 404:
            return None, False  # the CR was deleted meanwhile
        if exc.status == 500 and "field not declared in schema" in exc.message:
            if (ns, name) not in reported:
                reported.add((ns, name))
                log.error("%s/%s: the served CRD does not declare a status field we write: %s", ns, name, exc.message)
            return None, False
        raise
