"""The apply verb: the writes of a correction, for the Deployment and its companions alike, and
their failures. Its siblings are write_delete.py (a companion no longer wanted) and write_status.py
(the status subresource); cycle.py decides, these modules send.

One correction is, in order: the JSON patch that takes back a person's fields (decisions/revoke.py,
as Flux's kustomize-controller does before its apply), the JSON patch that removes what the apply
cannot (fields we own and no longer want, drift.py's ``unwanted``), then the server-side apply of
the rendering with our field manager. A refused write is a ``WriteFailure``: named by its object,
carrying the API server's message, and telling whether a retry at the backoff's pace can help.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..client.api import KubeAPI, object_path
from ..decisions.drift import Drift, removal_patch
from ..decisions.vocabulary import DEPLOYMENTS, Resource

#: Answers that the same request will get again until something changes (the object, the CR, the
#: RBAC): reported, and retried at the resync or on a change, not at the backoff's pace.
PERMANENT = frozenset({400, 403, 422})


@dataclass(frozen=True)
class WriteFailure:
    """A write the API server refused (or that got no answer: ``status`` 0)."""

    kind: str
    name: str  # namespace/name
    verb: str  # apply, delete
    status: int
    message: str

    @property
    def permanent(self) -> bool:
        return self.status in PERMANENT

    def describe(self) -> str:
        code = f"HTTP {self.status}: " if self.status else ""
        return f"{self.kind} {self.name}: {self.verb} refused: {code}{self.message}"


def correct(api: KubeAPI, resource: Resource, namespace: str, name: str, desired: dict[str, Any], drift: list[Drift],
            live: dict[str, Any] | None, field_manager: str, revocation: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The object ``namespace/name`` as the API server answered the apply; raises APIError."""
    path = object_path(*resource.gvr, namespace, name)
    if live is not None and revocation:
        api.request("PATCH", path, query={"fieldManager": field_manager}, body=revocation,
                    content_type="application/json-patch+json", verb="patch")
    if live is not None and any(d.unwanted for d in drift):
        api.request("PATCH", path, query={"fieldManager": field_manager}, body=removal_patch(live, drift),
                    content_type="application/json-patch+json", verb="patch")
    return api.apply(path, desired, field_manager)


def apply_deployment(api: KubeAPI, namespace: str, name: str, desired: dict[str, Any], drift: list[Drift],
                     live: dict[str, Any] | None, field_manager: str, revocation: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The Deployment ``namespace/name`` as the API server answered the apply; raises APIError."""
    return correct(api, DEPLOYMENTS, namespace, name, desired, drift, live, field_manager, revocation)
