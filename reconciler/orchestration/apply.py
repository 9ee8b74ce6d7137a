"""The one write of a correction: server-side apply of the rendered Deployment with our field
manager, after a JSON patch that removes what the apply cannot (fields we own and no longer
want, drift.py's ``unwanted``)."""

from __future__ import annotations

from typing import Any

from ..client.api import KubeAPI, object_path
from ..decisions.drift import Drift, removal_patch
from ..decisions.vocabulary import DEPLOYMENTS


def apply_deployment(api: KubeAPI, namespace: str, name: str, desired: dict[str, Any], drift: list[Drift],
                     live: dict[str, Any] | None, field_manager: str) -> dict[str, Any]:
    """The Deployment ``namespace/name`` as the API server answered the apply; raises APIError."""
    path = object_path(*DEPLOYMENTS.gvr, namespace, name)
    if live is not None and any(d.unwanted for d in drift):
        api.request("PATCH", path, query={"fieldManager": field_manager}, body=removal_patch(live, drift),
                    content_type="application/json-patch+json", verb="patch")
    return api.apply(path, desired, field_manager)
