"""TokenReview and SubjectAccessReview (transcript 41): create-only resources, never stored.

- The caller needs ``create`` on ``tokenreviews.authentication.k8s.io`` or
  ``subjectaccessreviews.authorization.k8s.io`` (cluster scope): else 403 in RBAC's words.
- A TokenReview answers 201 with the spec echoed (the token too), a managedFields entry of the
  caller's manager (operation Update, the spec's leaves), and a status: for a token the fake knows
  (``tokens``: token -> status.user), ``authenticated: true``, the user and the API audiences; for
  any other, ``user: {}`` and ``error: "invalid bearer token"`` (no ``authenticated`` key). An
  empty token is 400 ``token is required for TokenReview in authentication``.
- A SubjectAccessReview answers 201 with ``allowed: true`` and RBAC's reason when a non-resource
  grant (``grant_non_resource``) of the user or one of its groups covers the path and verb, else
  ``allowed: false`` with no reason. A spec with neither ``nonResourceAttributes`` nor
  ``resourceAttributes`` is 422.

Recorded (41): the ServiceAccount subject's reason, the non-resource grant and its absence, every
status and error above. Assumed, not recorded: the reason's wording for a ``User`` or ``Group``
subject (RBAC's describeSubject), and a review of *resource* attributes, which the fake always
answers ``allowed: false`` (no grant to others is modelled).
"""

from __future__ import annotations

import json
from typing import Any

from . import fields as F
from .errors import APIError, status_body
from .fieldmanager import manager_from_user_agent
from .resources import GENERIC_TYPES

TOKEN_REVIEWS = ("authentication.k8s.io", "tokenreviews")
ACCESS_REVIEWS = ("authorization.k8s.io", "subjectaccessreviews")
REVIEWS = {TOKEN_REVIEWS: "TokenReview", ACCESS_REVIEWS: "SubjectAccessReview"}


class Reviews:
    """The two review resources; ``tokens`` and the non-resource grants are the test's to set."""

    tokens: dict[str, dict[str, Any]]
    non_resource_grants: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]  # (binding, subject, urls, verbs)
    api_audiences: tuple[str, ...] = ("https://kubernetes.default.svc",)

    def grant_non_resource(self, subject: str, urls: tuple[str, ...], verbs: tuple[str, ...], binding: str = "metrics-reader",
                           role: str = "metrics-reader") -> None:
        """A ClusterRole ``role`` of ``nonResourceURLs`` and ``verbs`` bound to ``subject`` (a user, a
        ServiceAccount's user name, or a group) by the ClusterRoleBinding ``binding``."""
        self.non_resource_grants.append((f'ClusterRoleBinding "{binding}" of ClusterRole "{role}"', subject, urls, verbs))

    def _review(self, group: str, plural: str, method: str, ua: str, body: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        if method != "POST":
            raise APIError(405, status_body(405, "MethodNotAllowed", "method not allowed"))
        self._require(group, plural, None, "create", None, None)  # type: ignore[attr-defined]  # Authorizer's
        obj = json.loads(body or b"{}")
        spec = obj.get("spec") or {}
        kind = REVIEWS[(group, plural)]
        if kind == "TokenReview":
            if not spec.get("token"):
                raise APIError(400, status_body(400, "BadRequest", "token is required for TokenReview in authentication"))
            user = self.tokens.get(spec["token"])
            status: dict[str, Any] = ({"authenticated": True, "user": user, "audiences": list(self.api_audiences)}
                                      if user else {"user": {}, "error": "invalid bearer token"})
        else:
            if not spec.get("nonResourceAttributes") and not spec.get("resourceAttributes"):
                message = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
                raise APIError(422, status_body(422, "Invalid", f'.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
                                                f"Invalid value: null: {message}",
                                                {"group": "authorization.k8s.io", "causes": [{
                                                    "reason": "FieldValueInvalid", "message": f"Invalid value: null: {message}",
                                                    "field": "spec.resourceAttributes"}]}))
            status = self._access(spec)
        fields = F.to_fields_v1(F.applied_set({"spec": spec}, GENERIC_TYPES))
        entry = {"manager": manager_from_user_agent(ua), "operation": "Update", "apiVersion": f"{group}/v1",
                 "time": self.clock(), "fieldsType": "FieldsV1", "fieldsV1": fields}  # type: ignore[attr-defined]  # the fake's clock
        return 201, {"kind": kind, "apiVersion": f"{group}/v1", "metadata": {"managedFields": [entry]}, "spec": spec,
                     "status": status}, {}

    def _access(self, spec: dict[str, Any]) -> dict[str, Any]:
        attrs = spec.get("nonResourceAttributes")
        if not attrs:  # resource attributes: the fake's RBAC is the caller's only; no grant of others is modelled
            return {"allowed": False}
        path, verb = str(attrs.get("path", "")), attrs.get("verb")
        subjects = {spec.get("user", "")} | set(spec.get("groups") or ())
        for binding, subject, urls, verbs in self.non_resource_grants:
            if subject not in subjects or not ("*" in verbs or verb in verbs):
                continue
            if any(u == path or (u.endswith("*") and path.startswith(u[:-1])) for u in urls):
                return {"allowed": True, "reason": f"RBAC: allowed by {binding} to {_subject(subject, spec)}"}
        return {"allowed": False}


def _subject(subject: str, spec: dict[str, Any]) -> str:
    """How RBAC's reason names a binding's subject (41): ``ServiceAccount "NAME/NAMESPACE"``."""
    if subject.startswith("system:serviceaccount:") and subject.count(":") == 3:
        namespace, name = subject.split(":")[2:]
        return f'ServiceAccount "{name}/{namespace}"'
    return f'Group "{subject}"' if subject in (spec.get("groups") or ()) else f'User "{subject}"'
