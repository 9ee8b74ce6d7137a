"""The API server's errors: a Status body and the exception that carries it to the response.

One vocabulary for every part of the fake, as k8s.io/apimachinery/pkg/api/errors is for the real
server: ``NewNotFound``, ``NewConflict``, ``NewInvalid``, ``NewBadRequest``, ``NewForbidden``, with
the messages, reasons and details the recorded transcripts show. A part raises ``APIError``; the
HTTP handler turns it into the response (a Status as JSON, or plain text when the body is a string,
as the server's own 404 for an unknown path is).
"""

from __future__ import annotations

from typing import Any

from .resources import Resource


class APIError(Exception):
    def __init__(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(str(body)[:200])
        self.code, self.body, self.headers = code, body, headers or {}


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def not_found(res: Resource, name: str) -> APIError:
    details = {"name": name, **({"group": res.group} if res.group else {}), "kind": res.plural}
    return APIError(404, status_body(404, "NotFound", f'{res.group_resource} "{name}" not found', details))


def conflict_modified(res: Resource, name: str) -> APIError:
    details = {"name": name, **({"group": res.group} if res.group else {}), "kind": res.plural}
    message = (f'Operation cannot be fulfilled on {res.group_resource} "{name}": the object has been modified; '
               "please apply your changes to the latest version and try again")
    return APIError(409, status_body(409, "Conflict", message, details))


def invalid(res: Resource, name: str, causes: list[tuple[str, str, str]]) -> APIError:
    """422 from field errors: causes are (reason, field, message)."""
    parts = [f"{f}: {m}" for _, f, m in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    kind_group = f"{res.kind}.{res.group}" if res.group and res.group != "events.k8s.io" else res.kind
    details = {"name": name, **({"group": res.group} if res.group and res.group != "events.k8s.io" else {}), "kind": res.kind,
               "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes]}
    return APIError(422, status_body(422, "Invalid", f'{kind_group} "{name}" is invalid: {joined}', details))


def bad_request(message: str) -> APIError:
    return APIError(400, status_body(400, "BadRequest", message))


def forbidden(group: str, plural: str, name: str | None, reason: str) -> APIError:
    """kube-apiserver's NewForbidden: the group resource (no subresource), the name when the URL has one (34, 37)."""
    prefix = f"{plural}.{group}" if group else plural
    message = f'{prefix} "{name}" is forbidden: {reason}' if name else f"{prefix} is forbidden: {reason}"
    details = {**({"name": name} if name else {}), **({"group": group} if group else {}), "kind": plural}
    return APIError(403, status_body(403, "Forbidden", message, details))
