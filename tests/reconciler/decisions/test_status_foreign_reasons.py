"""A Deployment's failure reason, copied onto the Memcached's conditions, held against the shipped CRD:
the Deployment's conditions have no pattern and no maxLength of their own (apps/v1 DeploymentCondition),
the Memcached's do (metav1.Condition: a CamelCase word of at most 1,024 characters)."""

from __future__ import annotations

import pytest
from memcached_gitops.reconciler.decisions.status import Observation, desired_status

from tests.conftest import crd_named
from tests.reconciler.decisions.test_status import dep


def status_errors(status: dict) -> list[str]:
    """What the API server would say of ``status`` written to the shipped CRD (its schema of ``status``,
    checked by the jsonschema package)."""
    import jsonschema

    version = next(v for v in crd_named("builtin").document["spec"]["versions"] if v.get("storage"))
    schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message[:120]}"
            for e in jsonschema.Draft202012Validator(schema).iter_errors(status)]


@pytest.mark.parametrize("reason", ["Failed Create", "quota exceeded: pods", "F" * 1100], ids=["space", "words", "long"])
def test_a_deployments_failure_reason_of_any_spelling_leaves_a_status_the_crd_admits(reason: str) -> None:
    """Whoever may write a Deployment's status (``kubectl edit --subresource=status``, a tool that
    manages the Deployment, the Deployment applied by Argo CD and only observed here) can give its
    ReplicaFailure condition any reason; copied as it is onto Degraded, Stalled and Ready, it makes the
    whole status write one the API server refuses (422), and the CR keeps its old conditions while the
    reconciler retries."""
    deployment = dep(avail=0, upd=2, conds=[{"type": "ReplicaFailure", "status": "True", "reason": reason, "message": "x"}])
    status = desired_status(Observation(3, 2, deployment, ()), None, "2026-01-01T00:00:00Z")
    assert status_errors(status) == []


def _crd_reason_schema() -> dict:
    """The shipped CRD's schema of ``status.conditions[].reason`` (pattern, maxLength)."""
    version = next(v for v in crd_named("builtin").document["spec"]["versions"] if v.get("storage"))
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    return status["properties"]["conditions"]["items"]["properties"]["reason"]


#: reasons with a letter or a digit past ASCII (where Python's ``\w`` and ``str.isalnum`` take it and
#: Go's ``[A-Za-z0-9]`` does not), at the start, inside and at the end; and ASCII ones beside them
NON_ASCII_REASONS = ["FailedCr\u00e9ate", "Failed\u0663", "Quota\u00dfExceeded", "\u00c9chec", "\uff26ailedCreate",
                     "Failed_\u2167", "FailedCreate", "quota:exceeded_1"]


@pytest.mark.parametrize("reason", NON_ASCII_REASONS)
def test_a_deployments_failure_reason_is_copied_only_if_the_crds_ascii_pattern_takes_it(reason: str) -> None:
    """The API server judges a condition's reason with Go's regexp, whose ``[A-Za-z0-9_]`` is ASCII:
    a ReplicaFailure reason with ``é`` or an Arabic-Indic digit, copied onto Degraded, Stalled and Ready,
    would make every status write of the CR a 422 (the CR keeps stale conditions). Such a reason is
    said as ``ReplicaFailure`` with the Deployment's word kept in the message; one the CRD's pattern
    takes (as RE2, Go's syntax, reads it) is copied as it is."""
    re2 = pytest.importorskip("re2", reason="google-re2 (C++ RE2, whose syntax Go's copies) is the reference")
    schema = _crd_reason_schema()
    admitted = re2.search(schema["pattern"], reason) is not None and len(reason) <= schema["maxLength"]
    deployment = dep(avail=0, upd=2, conds=[{"type": "ReplicaFailure", "status": "True", "reason": reason, "message": "x"}])
    status = desired_status(Observation(3, 2, deployment, ()), None, "2026-01-01T00:00:00Z")
    degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
    assert (degraded["reason"], reason in degraded["message"]) == ((reason, False) if admitted else ("ReplicaFailure", True))
    assert status_errors(status) == []
