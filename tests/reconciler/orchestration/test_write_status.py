"""The status verb in-process (reconciler/orchestration/write_status.py): what a reconcile sends to the
CR's status subresource, and when it sends nothing. A recording stand-in for the API client answers
each apply, so every request body, every refusal and every log line is seen without a server;
the reconciles against the fake API server are in test_reconcile_now.py and test_deployment_status.py."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from memcached_gitops.reconciler.client.api import APIError
from memcached_gitops.reconciler.decisions.status import Observation, desired_status
from memcached_gitops.reconciler.decisions.vocabulary import REQUESTED_AT_ANNOTATION, REQUESTED_AT_LIMIT
from memcached_gitops.reconciler.orchestration.write_status import declared_fields, requested_at, write_status

NOW = "2026-01-02T03:04:05Z"
PATH = "/apis/cache.example.com/v1alpha1/namespaces/team-a/memcacheds/sessions/status"
MANAGER = "memcached-gitops-status"
OBS = Observation(generation=3, size=1, deployment=None, pods=("sessions-0",))


class Recorder:
    """The API client's ``apply``: records (path, body, manager) and answers the body, or raises ``fail``."""

    def __init__(self, fail: APIError | None = None) -> None:
        self.applied: list[tuple[str, dict[str, Any], str]] = []
        self.fail = fail

    def apply(self, path: str, body: dict[str, Any], manager: str) -> dict[str, Any]:
        self.applied.append((path, body, manager))
        if self.fail is not None:
            raise self.fail
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "8"}}


def cr(status: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None, name: str = "sessions") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team-a", "uid": "u-1", "generation": 3}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": meta, "spec": {"size": 1},
            **({"status": status} if status is not None else {})}


def current(obs: Observation = OBS, **extra: Any) -> dict[str, Any]:
    """The status a reconcile of ``obs`` wrote before, plus ``extra``: what is live when nothing changed."""
    return {**desired_status(obs, {}, NOW), **extra}


def write(api: Recorder, the_cr: dict[str, Any], obs: Observation = OBS, declared: frozenset[str] | None = None,
          condition_fields: frozenset[str] | None = None, reported: set[tuple[str, str]] | None = None,
          **kw: Any) -> tuple[dict[str, Any] | None, bool]:
    return write_status(api, PATH, the_cr, obs, lambda: NOW, MANAGER, declared, condition_fields,  # type: ignore[arg-type]
                        reported=set() if reported is None else reported, **kw)


def sent(api: Recorder) -> dict[str, Any]:
    [(_, body, _)] = api.applied
    return body["status"]


def test_an_unchanged_status_sends_no_request() -> None:
    api = Recorder()
    assert write(api, cr(current())) == (None, False)
    assert api.applied == []


def test_a_changed_status_is_applied_to_the_status_subresource_under_the_status_manager_with_only_name_and_namespace() -> None:
    """Server-side apply of the status alone: a body with spec, uid or labels would claim fields under
    the status manager, and a wrong manager would take the status from the one that owns it."""
    api = Recorder()
    written, deferred = write(api, cr({}))
    [(path, body, manager)] = api.applied
    assert (path, manager) == (PATH, MANAGER)
    assert body == {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                    "metadata": {"name": "sessions", "namespace": "team-a"}, "status": desired_status(OBS, {}, NOW)}
    assert written is not None and written["metadata"]["resourceVersion"] == "8" and deferred is False


def test_a_reconcile_now_request_is_reported_handled_in_the_status() -> None:
    api = Recorder()
    write(api, cr(current(), {REQUESTED_AT_ANNOTATION: "2026-01-02T03:00:00Z"}))
    assert sent(api)["lastHandledReconcileAt"] == "2026-01-02T03:00:00Z"


def test_a_request_at_the_crds_length_limit_is_handled_and_one_longer_keeps_the_last_handled() -> None:
    """status.lastHandledReconcileAt has maxLength REQUESTED_AT_LIMIT in the CRD: a value of that length
    is accepted there, so it is handled; a longer one would make the API server refuse the whole status."""
    api = Recorder()
    write(api, cr(current(), {REQUESTED_AT_ANNOTATION: "a" * REQUESTED_AT_LIMIT}))
    assert sent(api)["lastHandledReconcileAt"] == "a" * REQUESTED_AT_LIMIT
    api = Recorder()
    too_long = {REQUESTED_AT_ANNOTATION: "a" * (REQUESTED_AT_LIMIT + 1)}
    assert write(api, cr(current(lastHandledReconcileAt="before"), too_long)) == (None, False)
    assert api.applied == [], "the last handled request is kept: nothing changed"


def test_an_empty_or_absent_request_keeps_the_last_handled_one_in_the_status() -> None:
    """Our apply owns lastHandledReconcileAt: leaving it out when the annotation goes would remove it."""
    for request in ({REQUESTED_AT_ANNOTATION: ""}, {REQUESTED_AT_ANNOTATION: None}, None, {}):
        api = Recorder()
        write(api, cr({**current(lastHandledReconcileAt="before"), "observedGeneration": 2}, request))
        assert sent(api)["lastHandledReconcileAt"] == "before", request


def test_no_request_ever_handled_writes_no_last_handled_field() -> None:
    api = Recorder()
    write(api, cr({}, {REQUESTED_AT_ANNOTATION: ""}))
    assert "lastHandledReconcileAt" not in sent(api)


def test_a_paused_cr_does_not_report_a_new_request_handled() -> None:
    """A paused CR reconciles nothing, so ``kubectl wait`` for the request must not see it handled."""
    paused = Observation(generation=3, size=1, deployment=None, pods=("sessions-0",), paused="reconcile disabled")
    api = Recorder()
    write(api, cr(current(paused, lastHandledReconcileAt="before"), {REQUESTED_AT_ANNOTATION: "new"}), paused)
    assert api.applied == [], "the last handled request stays, nothing else changed"


def test_requested_at_reads_the_annotation_or_nothing() -> None:
    assert requested_at(cr(annotations={REQUESTED_AT_ANNOTATION: "now"})) == "now"
    assert requested_at(cr(annotations={REQUESTED_AT_ANNOTATION: None})) == ""
    assert requested_at(cr(annotations=None)) == requested_at({"metadata": {"annotations": None}}) == requested_at({}) == ""


def test_a_crd_without_the_last_handled_or_served_by_field_gets_neither() -> None:
    """An older CRD that does not declare them: kube-apiserver answers an undeclared status field with a
    500, so the status is written without them."""
    declared = frozenset({"observedGeneration", "conditions", "nodes"})
    api = Recorder()
    write(api, cr({}, {REQUESTED_AT_ANNOTATION: "now"}), declared=declared, served_by="replica-0")
    assert set(sent(api)) <= declared


def test_served_by_is_written_and_cut_to_a_names_length() -> None:
    api = Recorder()
    write(api, cr(current()), served_by="r" * 300)
    assert sent(api)["servedBy"] == "r" * 253


def test_only_served_by_out_of_date_is_left_for_later_when_lazy() -> None:
    """With --shards, servedBy moving on every CR at once is written at the caller's pace, not by every
    reconcile: nothing is sent and the caller is told it was left."""
    api = Recorder()
    assert write(api, cr(current(servedBy="replica-0")), served_by="replica-1", lazy_served_by=True) == (None, True)
    assert api.applied == []
    assert write(api, cr(current(servedBy="replica-1")), served_by="replica-1", lazy_served_by=True) == (None, False)
    assert api.applied == []


def test_a_real_change_is_written_with_served_by_even_when_lazy() -> None:
    api = Recorder()
    older = {**current(servedBy="replica-0"), "observedGeneration": 2}
    written, deferred = write(api, cr(older), served_by="replica-1", lazy_served_by=True)
    assert written is not None and deferred is False
    assert sent(api)["servedBy"] == "replica-1" and sent(api)["observedGeneration"] == 3


def test_served_by_out_of_date_is_written_at_once_when_not_lazy() -> None:
    api = Recorder()
    written, deferred = write(api, cr(current(servedBy="replica-0")), served_by="replica-1")
    assert written is not None and deferred is False and sent(api)["servedBy"] == "replica-1"


def test_a_cr_deleted_meanwhile_is_no_error() -> None:
    api = Recorder(APIError(404, 'memcacheds.cache.example.com "sessions" not found'))
    assert write(api, cr({})) == (None, False)


def test_an_undeclared_status_field_is_logged_once_per_cr_and_the_cycle_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """kube-apiserver v1.36 answers a status field the served CRD does not declare with a 500 (transcript 23):
    the operator is told once per CR, not on every reconcile."""
    api = Recorder(APIError(500, ".status.servedBy: field not declared in schema"))
    reported: set[tuple[str, str]] = set()
    with caplog.at_level(logging.ERROR, logger="memcached_gitops.reconciler"):
        assert write(api, cr({}), reported=reported) == (None, False)
        assert write(api, cr({}), reported=reported) == (None, False)
        assert write(api, cr({}, name="other"), reported=reported) == (None, False)
    lines = [r.getMessage() for r in caplog.records]
    said = "the served CRD does not declare a status field we write: .status.servedBy: field not declared in schema"
    assert lines == [f"team-a/sessions: {said}", f"team-a/other: {said}"]
    assert reported == {("team-a", "sessions"), ("team-a", "other")}


@pytest.mark.parametrize("status, message", [(500, "etcdserver: request timed out"), (422, "field not declared in schema"),
                                             (409, "conflict")])
def test_any_other_refusal_of_the_status_is_raised(status: int, message: str) -> None:
    api = Recorder(APIError(status, message))
    with pytest.raises(APIError) as raised:
        write(api, cr({}))
    assert raised.value.status == status


def crd(*versions: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"versions": list(versions)}}


def version(name: str, status: dict[str, Any] | None) -> dict[str, Any]:
    return {"name": name, "schema": {"openAPIV3Schema": {"properties": {} if status is None else {"status": status}}}}


def test_the_served_crds_status_fields_are_those_of_the_version_read() -> None:
    served = crd(version("v1alpha1", {"properties": {"nodes": {}}}),
                 version("v1beta1", {"properties": {"nodes": {}, "conditions": {"items": {"properties": {"type": {}, "status": {}}}}}}))
    assert declared_fields(served, "v1beta1") == (frozenset({"nodes", "conditions"}), frozenset({"type", "status"}))
    assert declared_fields(served, "v1alpha1") == (frozenset({"nodes"}), None)


def test_a_status_that_keeps_unknown_fields_or_an_unknown_version_limits_nothing() -> None:
    free = {"x-kubernetes-preserve-unknown-fields": True, "properties": {"nodes": {}}}
    assert declared_fields(crd(version("v1alpha1", free)), "v1alpha1") == (None, None)
    assert declared_fields(crd(version("v1alpha1", {"properties": {"nodes": {}}})), "v2") == (None, None)
    assert declared_fields({}, "v1alpha1") == (None, None)


def test_a_version_without_a_status_schema_declares_no_status_field() -> None:
    assert declared_fields(crd(version("v1alpha1", None)), "v1alpha1") == (frozenset(), None)


def test_a_condition_that_did_not_change_keeps_its_transition_time() -> None:
    """``kubectl describe`` and ``kubectl wait`` read lastTransitionTime as when the condition last flipped:
    a status write for another reason (a new generation) must not move it."""
    earlier = "2025-12-31T00:00:00Z"
    before = desired_status(Observation(generation=2, size=1, deployment=None, pods=("sessions-0",)), {}, earlier)
    api = Recorder()
    write(api, cr(before))
    assert sent(api)["observedGeneration"] == 3
    assert {c["type"]: c["lastTransitionTime"] for c in sent(api)["conditions"]} == {
        c["type"]: earlier for c in before["conditions"]}


def test_a_crd_whose_conditions_declare_fewer_fields_gets_conditions_with_those_alone() -> None:
    """A condition field the served CRD does not declare is an HTTP 500 on kube-apiserver v1.36 (transcript 23)."""
    api = Recorder()
    write(api, cr({}), condition_fields=frozenset({"type", "status", "reason"}))
    assert sent(api)["conditions"] and all(set(c) == {"type", "status", "reason"} for c in sent(api)["conditions"])


def test_a_crd_whose_conditions_declare_only_type_and_status_still_gets_a_status() -> None:
    """desired_status's promise: an older or foreign CRD gets less, not a crash. Its conditions declare no
    reason (the v1beta1 shape test_reconciler.py's declared_fields test reads), and the STATUS column is
    still worked out from the whole conditions: dropping their reason first made every status write a
    KeyError, the CR's status never written."""
    api = Recorder()
    write(api, cr({}), condition_fields=frozenset({"type", "status"}))
    assert sent(api)["conditions"] and all(set(c) == {"type", "status"} for c in sent(api)["conditions"])


def test_a_one_character_request_is_handled() -> None:
    api = Recorder()
    write(api, cr(current(), {REQUESTED_AT_ANNOTATION: "1"}))
    assert sent(api)["lastHandledReconcileAt"] == "1"


def test_a_crd_that_declares_the_last_handled_and_served_by_fields_gets_them() -> None:
    declared = frozenset({"observedGeneration", "conditions", "nodes", "lastHandledReconcileAt", "servedBy"})
    api = Recorder()
    write(api, cr({}, {REQUESTED_AT_ANNOTATION: "now"}), declared=declared, served_by="replica-0")
    assert (sent(api)["lastHandledReconcileAt"], sent(api)["servedBy"]) == ("now", "replica-0")
