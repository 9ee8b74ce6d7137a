"""The delete verb: a companion (Service, budget) the CR no longer asks for. Its siblings are
write_apply.py and write_status.py; cycle.py decides what to delete (decisions/companions.py)."""

from __future__ import annotations

from ..client.api import APIError, KubeAPI, is_not_found, object_path
from ..decisions.vocabulary import Resource

#: Background propagation, as kubectl delete sends by default: the object goes at once, what it owns after.
DELETE_OPTIONS = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}


def delete(api: KubeAPI, resource: Resource, namespace: str, name: str) -> None:
    """DELETE ``namespace/name``; one already gone (404) is what was asked. Raises any other APIError."""
    try:
        api.request("DELETE", object_path(*resource.gvr, namespace, name), body=dict(DELETE_OPTIONS))
    except APIError as exc:
        if not is_not_found(exc):
            raise
