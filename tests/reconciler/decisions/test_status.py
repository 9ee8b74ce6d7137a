"""status.py as a pure mapping: the exact conditions (type, status, reason, message,
observedGeneration) for each state a cycle can observe, and the Deployment controller's verdict.
The reasons and messages are what ``kubectl describe``, kstatus and Argo CD show users."""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.decisions.ownership import spec_manager
from memcached_gitops.reconciler.decisions.status import (
    Observation,
    columns,
    deployment_verdict,
    desired_conditions,
    desired_status,
    status_reason,
)
from memcached_gitops.schemas import Validator, load_crd
from memcached_gitops.schemas.crd import parse_crd

from tests.support.crs import memcached_cr


def dep(gen: int = 1, observed: int = 1, avail: int = 0, upd: int = 0, conds: list | None = None) -> dict:
    status = {"observedGeneration": observed, "availableReplicas": avail, "updatedReplicas": upd}
    return {"metadata": {"generation": gen}, "status": status | ({"conditions": conds} if conds else {})}


AS_EXPECTED = ("Degraded", "False", "AsExpected", "the reconciler can manage this Memcached", 3)
CASES = {
    "missing": (Observation(3, 2, None, ()), [
        ("Available", "False", "DeploymentMissing", "the Deployment does not exist yet", 3),
        ("Progressing", "False", "NotProgressing", "no rollout under way", 3), AS_EXPECTED,
        ("Reconciling", "True", "Progressing", "the Deployment does not exist yet", 3)]),
    "invalid": (Observation(3, 0, dep(), (), "InvalidSpec", "spec.size: too big"), [
        ("Available", "False", "InvalidSpec", "spec.size: too big", 3),
        ("Progressing", "False", "NotProgressing", "no rollout under way", 3),
        ("Degraded", "True", "InvalidSpec", "spec.size: too big", 3), ("Stalled", "True", "InvalidSpec", "spec.size: too big", 3)]),
    "not-owned": (Observation(3, 2, dep(avail=2, upd=2), (), "ResourceNotOwned", "not ours"), [
        ("Available", "False", "ResourceNotOwned", "not ours", 3),
        ("Progressing", "False", "NotProgressing", "no rollout under way", 3),
        ("Degraded", "True", "ResourceNotOwned", "not ours", 3), ("Stalled", "True", "ResourceNotOwned", "not ours", 3)]),
    "complete": (Observation(3, 2, dep(avail=2, upd=2), ()), [
        ("Available", "True", "MinimumReplicasAvailable", "2 of 2 replicas available", 3),
        ("Progressing", "False", "ReconcileComplete", "the Deployment matches the CR", 3), AS_EXPECTED]),
    "complete-with-more-than-asked": (Observation(3, 2, dep(avail=3, upd=3), ()), [
        ("Available", "True", "MinimumReplicasAvailable", "3 of 2 replicas available", 3),
        ("Progressing", "False", "ReconcileComplete", "the Deployment matches the CR", 3), AS_EXPECTED]),
    "not-observed": (Observation(3, 2, dep(gen=2, observed=1), ()), [
        ("Available", "False", "DeploymentUnavailable", "waiting for the Deployment controller to observe generation 2", 3),
        ("Progressing", "True", "RollingOut", "waiting for the Deployment controller to observe generation 2", 3), AS_EXPECTED,
        ("Reconciling", "True", "Progressing", "waiting for the Deployment controller to observe generation 2", 3)]),
    "rolling-out": (Observation(3, 2, dep(avail=1, upd=2), ()), [
        ("Available", "False", "DeploymentUnavailable", "1 of 2 replicas available", 3),
        ("Progressing", "True", "RollingOut", "waiting for 2 available replicas", 3), AS_EXPECTED,
        ("Reconciling", "True", "Progressing", "1 of 2 replicas available", 3)]),
    "available-but-updating": (Observation(3, 2, dep(avail=2, upd=1), ()), [
        ("Available", "True", "MinimumReplicasAvailable", "2 of 2 replicas available", 3),
        ("Progressing", "True", "RollingOut", "waiting for 2 available replicas", 3), AS_EXPECTED,
        ("Reconciling", "True", "Progressing", "2 of 2 replicas available", 3)]),
    "gitops-applied": (Observation(3, 2, dep(avail=2, upd=2), (), applied_by="argocd-controller", drift_note="1 field(s) differ"), [
        ("Available", "True", "MinimumReplicasAvailable", "2 of 2 replicas available", 3),
        ("Progressing", "False", "ReconcileComplete", "the rollout is complete", 3),
        ("Degraded", "False", "GitOpsApplied", "the Deployment is applied by argocd-controller (no controller ownerReference): "
         "observed, never written; reconcile --adopt takes it over; 1 field(s) differ", 3)]),
    "gitops-applied-no-drift": (Observation(3, 2, dep(avail=2, upd=2), (), applied_by="kubectl"), [
        ("Available", "True", "MinimumReplicasAvailable", "2 of 2 replicas available", 3),
        ("Progressing", "False", "ReconcileComplete", "the rollout is complete", 3),
        ("Degraded", "False", "GitOpsApplied", "the Deployment is applied by kubectl (no controller ownerReference): "
         "observed, never written; reconcile --adopt takes it over", 3)]),
    "not-adopted": (Observation(3, 2, dep(avail=2, upd=2), (), applied_by="manager", inherited_selector="app.kubernetes.io/name=project"), [
        ("Available", "True", "MinimumReplicasAvailable", "2 of 2 replicas available", 3),
        ("Progressing", "False", "ReconcileComplete", "the rollout is complete", 3),
        ("Degraded", "False", "NotAdopted", "the Deployment was created for this Memcached by manager with a selector of its own "
         "(app.kubernetes.io/name=project): observed, never written; reconcile --adopt takes it over in place, keeping that selector",
         3)]),
    "autoscaled": (Observation(3, 4, dep(avail=4, upd=4), (), autoscaler="web"), [
        ("Available", "True", "MinimumReplicasAvailable",
         "4 of 4 replicas available; replicas follow HorizontalPodAutoscaler web, not spec.size", 3),
        ("Progressing", "False", "ReconcileComplete", "the Deployment matches the CR", 3), AS_EXPECTED]),
    "selector-overlap": (Observation(3, 2, dep(avail=2, upd=2), (), overlap="shares Pods with Deployment(s) ns/b"), [
        ("Available", "True", "MinimumReplicasAvailable", "2 of 2 replicas available", 3),
        ("Progressing", "False", "ReconcileComplete", "the Deployment matches the CR", 3),
        ("Degraded", "False", "SelectorOverlap", "shares Pods with Deployment(s) ns/b", 3)]),
    "replica-failure-without-words": (Observation(3, 2, dep(upd=2, conds=[{"type": "ReplicaFailure", "status": "True"}]), ()), [
        ("Available", "False", "DeploymentUnavailable", "0 of 2 replicas available", 3),
        ("Progressing", "True", "RollingOut", "waiting for 2 available replicas", 3),
        ("Degraded", "True", "ReplicaFailure", "", 3), ("Stalled", "True", "ReplicaFailure", "", 3)]),
}


_READY = ("True", "Ready", "the cache is available at its desired replicas")
#: Ready, the summary, for each case: True when Available and neither Progressing nor Degraded, else
#: the reason that matters now (the failure, else why it is unavailable, else the rollout).
READY = {
    "missing": ("False", "DeploymentMissing", "the Deployment does not exist yet"),
    "invalid": ("False", "InvalidSpec", "spec.size: too big"),
    "not-owned": ("False", "ResourceNotOwned", "not ours"),
    "complete": _READY, "complete-with-more-than-asked": _READY, "gitops-applied": _READY, "gitops-applied-no-drift": _READY,
    "not-adopted": _READY, "autoscaled": _READY, "selector-overlap": _READY,
    "not-observed": ("False", "DeploymentUnavailable", "waiting for the Deployment controller to observe generation 2"),
    "rolling-out": ("False", "DeploymentUnavailable", "1 of 2 replicas available"),
    "available-but-updating": ("False", "RollingOut", "waiting for 2 available replicas"),
    "replica-failure-without-words": ("False", "ReplicaFailure", ""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_conditions_for_each_state(case: str) -> None:
    obs, expected = CASES[case]
    expected = [*expected[:3], ("Ready", *READY[case], 3), *expected[3:]]
    got = [(c["type"], c["status"], c["reason"], c["message"], c["observedGeneration"]) for c in desired_conditions(obs)]
    assert got == expected
    assert all(set(c) == {"type", "status", "reason", "message", "observedGeneration"} for c in desired_conditions(obs))


def test_a_message_is_cut_at_the_condition_limit() -> None:
    [available, *_] = desired_conditions(Observation(1, 1, None, (), "InvalidSpec", "x" * 40000))
    assert len(available["message"]) == 32768


def test_the_verdict_counts_only_for_the_observed_generation() -> None:
    assert deployment_verdict({"status": {"observedGeneration": 1}}).observed, "generation defaults to 1"
    assert not deployment_verdict({"status": {"observedGeneration": 2}}).observed
    assert not deployment_verdict({"status": {}}).observed
    verdict = deployment_verdict({"metadata": {"generation": 4}, "status": {"observedGeneration": 4}})
    assert (verdict.generation, verdict.available_replicas, verdict.updated_replicas, verdict.failure_reason,
            verdict.failure_message) == (4, 0, 0, "", "")


def test_an_autoscaler_is_the_one_named_for_the_replicas_even_when_others_set_them() -> None:
    """An HPA that scales the Deployment is who sets its replicas: the Available message names it alone,
    not the managers an ignore-paths would leave them to (the column says the same)."""
    obs = Observation(3, 4, dep(avail=4, upd=4), (), autoscaler="web", replicas_by="kubectl (scale)")
    [available, *_] = desired_conditions(obs)
    assert available["message"] == "4 of 4 replicas available; replicas follow HorizontalPodAutoscaler web, not spec.size"
    assert columns(obs, desired_conditions(obs))["replicasOwner"] == "HorizontalPodAutoscaler/web"


@pytest.mark.parametrize(("progressing", "failure", "expected"), [
    ({"status": "False", "reason": "ProgressDeadlineExceeded"}, None, ("ProgressDeadlineExceeded", "")),
    ({"status": "True", "reason": "ProgressDeadlineExceeded"}, None, ("", "")),
    ({"status": "False", "reason": "NewReplicaSetAvailable"}, None, ("", "")),
    ({"status": "True", "reason": "ReplicaSetUpdated"}, {"status": "True", "reason": "FailedCreate", "message": "quota\n  exceeded"},
     ("FailedCreate", "quota exceeded")),
    (None, {"status": "True"}, ("ReplicaFailure", "")),
    (None, {"status": "False", "reason": "FailedCreate"}, ("", "")),
])
def test_the_deployment_controllers_failure_reasons(progressing: dict | None, failure: dict | None, expected: tuple) -> None:
    conds = [{"type": "Progressing", **progressing}] if progressing else []
    conds += [{"type": "ReplicaFailure", **failure}] if failure else []
    verdict = deployment_verdict(dep(conds=conds))
    assert (verdict.failure_reason, verdict.failure_message) == expected


def test_a_progress_deadline_exceeded_is_the_verdict_even_beside_a_replica_failure() -> None:
    """A rollout the Deployment controller gave up on (Progressing=False, ProgressDeadlineExceeded) while
    ReplicaFailure=True still says why (a quota that refused its Pods until the deadline passed): the
    verdict is the deadline's, as the Deployment itself says. Progressing=False, and Degraded and Stalled
    with its reason and message, not a rollout still under way."""
    conds = [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
              "message": 'ReplicaSet "a-5d4f" has timed out progressing.'},
             {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "exceeded quota: pods"}]
    for order in (conds, conds[::-1]):
        verdict = deployment_verdict(dep(upd=1, conds=order))
        assert (verdict.failure_reason, verdict.failure_message) == (
            "ProgressDeadlineExceeded", 'ReplicaSet "a-5d4f" has timed out progressing.')
        by_type = {c["type"]: c for c in desired_conditions(Observation(3, 2, dep(upd=1, conds=order), ()))}
        assert (by_type["Progressing"]["status"], by_type["Progressing"]["reason"]) == ("False", "ProgressDeadlineExceeded")
        assert (by_type["Degraded"]["status"], by_type["Degraded"]["reason"]) == ("True", "ProgressDeadlineExceeded")
        assert (by_type["Stalled"]["reason"], by_type["Ready"]["reason"]) == ("ProgressDeadlineExceeded", "ProgressDeadlineExceeded")


#: What can hold at once, highest first: a person's pause, the reconciler's own failure, the
#: Deployment controller's give-up, a ReplicaFailure, a rollout under way, a selector overlap (news).
PRECEDENCE = ("paused", "own", "deadline", "replica-failure", "rolling", "overlap")


def _observation(states: tuple[str, ...]) -> Observation:
    conds = ([{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "timed out"}]
             if "deadline" in states else [])
    conds += ([{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota"}]
              if "replica-failure" in states else [])
    deployment = dep(avail=1 if "rolling" in states else 2, upd=2, conds=conds)
    own = ("ApplyFailed", "HTTP 422") if "own" in states else ("", "")
    return Observation(3, 2, deployment, (), *own, overlap="shares Pods" if "overlap" in states else "",
                       paused="paused by a person" if "paused" in states else "")


@pytest.mark.parametrize("states", list(itertools.combinations(PRECEDENCE, 2)), ids="+".join)
def test_of_any_two_states_at_once_the_higher_is_the_crs_reason(states: tuple[str, ...]) -> None:
    """Each pair of states that can hold together, both ways of reading it: the STATUS column and Ready
    say the higher of the two (PRECEDENCE), as each alone would say it; never the lower, never news."""
    def told(conditions: list[dict]) -> tuple[str, str]:
        return status_reason(conditions), next(c["reason"] for c in conditions if c["type"] == "Ready")

    alone = {state: told(desired_conditions(_observation((state,)))) for state in states}
    assert len({column for column, _ in alone.values()}) == 2, alone  # the two are told apart when alone
    higher = min(states, key=PRECEDENCE.index)
    assert told(desired_conditions(_observation(states))) == alone[higher], alone


def test_spec_manager_counts_leaves_and_keeps_the_first_of_equals() -> None:
    def entry(manager: str | None, spec: dict, subresource: str = "") -> dict:
        named = {"manager": manager} if manager else {}
        return {**named, "fieldsV1": {"f:spec": spec}, **({"subresource": subresource} if subresource else {})}
    deep = {"f:template": {"f:spec": {"f:a": {}, "f:b": {}}}}
    assert spec_manager({"metadata": {"managedFields": [entry("flat", {"f:x": {}, "f:y": {}, "f:z": {}}), entry("deep", deep)]}}) == "flat"
    assert spec_manager({"metadata": {"managedFields": [entry("one", {"f:x": {}}), entry("two", {"f:y": {}})]}}) == "one"
    assert spec_manager({"metadata": {"managedFields": [entry("solo", {"f:x": {}})]}}) == "solo"
    assert spec_manager({"metadata": {"managedFields": [entry("scaler", {"f:replicas": {}}, "scale")]}}) == ""
    assert spec_manager({"metadata": {"managedFields": [entry(None, {"f:x": {}})]}}) == ""
    assert spec_manager({"metadata": {"managedFields": [entry("a", {"f:x": {}, "f:y": {}}), entry("b", deep | {"f:c": {}})]}}) == "b"


# ---- the printer columns (kubectl get memcached): READY, STATUS, and -o wide's IMAGE and REPLICAS-BY
STATUS_COLUMN = {
    "missing": "DeploymentMissing", "invalid": "InvalidSpec", "not-owned": "ResourceNotOwned", "complete": "Available",
    "complete-with-more-than-asked": "Available", "not-observed": "Progressing", "rolling-out": "Progressing",
    "available-but-updating": "Progressing", "gitops-applied": "GitOpsApplied", "gitops-applied-no-drift": "GitOpsApplied",
    "replica-failure-without-words": "ReplicaFailure", "not-adopted": "NotAdopted", "autoscaled": "Available",
    "selector-overlap": "SelectorOverlap",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_status_column_is_the_reason_that_matters_now(case: str) -> None:
    obs = CASES[case][0]
    assert status_reason(desired_conditions(obs)) == STATUS_COLUMN[case]


def test_a_failure_wins_over_a_rollout_and_a_rollout_over_news() -> None:
    rolling_and_fighting = Observation(3, 2, dep(avail=1, upd=2), (), "FieldManagerFight", "kubectl (scale) sets .spec.replicas")
    assert status_reason(desired_conditions(rolling_and_fighting)) == "FieldManagerFight"
    overlap_rolling = Observation(3, 2, dep(avail=1, upd=2), (), overlap="shares Pods")
    assert status_reason(desired_conditions(overlap_rolling)) == "Progressing"
    overlap_done = Observation(3, 2, dep(avail=2, upd=2), (), overlap="shares Pods")
    assert status_reason(desired_conditions(overlap_done)) == "SelectorOverlap"
    not_adopted = Observation(3, 2, dep(avail=2, upd=2), (), applied_by="manager", inherited_selector="app=x")
    assert status_reason(desired_conditions(not_adopted)) == "NotAdopted"


def _with_containers(d: dict, *containers: dict) -> dict:
    return {**d, "spec": {"template": {"spec": {"containers": list(containers)}}}}


def test_ready_image_and_who_sets_the_replicas() -> None:
    live = _with_containers(dep(avail=1, upd=2), {"name": "sidecar", "image": "envoy:1"}, {"name": "memcached", "image": "memcached:1.6"})
    obs = Observation(3, 2, live, ())
    assert columns(obs, desired_conditions(obs)) == {"ready": "1/2", "reason": "Progressing", "image": "memcached:1.6",
                                                     "replicasOwner": "spec.size"}
    not_observed = Observation(3, 2, _with_containers(dep(gen=2, observed=1, avail=2), {"name": "x", "image": "other:2"}), ())
    assert columns(not_observed, desired_conditions(not_observed))["ready"] == "0/2", "an older spec's count does not count"
    assert columns(not_observed, desired_conditions(not_observed))["image"] == "other:2", "no memcached container: the first"
    hpa = Observation(3, 4, live, (), autoscaler="web")
    assert columns(hpa, desired_conditions(hpa))["replicasOwner"] == "HorizontalPodAutoscaler/web"
    argo = Observation(3, 2, live, (), applied_by="argocd-controller")
    assert columns(argo, desired_conditions(argo))["replicasOwner"] == "argocd-controller"
    missing = Observation(3, 2, None, ())
    assert columns(missing, desired_conditions(missing)) == {"ready": "0/2", "reason": "DeploymentMissing", "image": "",
                                                             "replicasOwner": "spec.size"}
    long = Observation(3, 2, _with_containers(dep(), {"name": "memcached", "image": "r/" + "i" * 5000}), (), autoscaler="h" * 600)
    out = columns(long, desired_conditions(long))
    assert len(out["image"]) == 4096 and len(out["replicasOwner"]) == 512, "within the CRD's maxLength, or the status write is refused"


def test_the_columns_are_written_only_where_the_crd_declares_them() -> None:
    obs = Observation(3, 2, dep(avail=2, upd=2), ())
    tutorial = desired_status(obs, None, "2026-01-01T00:00:00Z", declared=frozenset({"conditions", "nodes"}))
    assert set(tutorial) == {"conditions", "nodes"}
    ours = desired_status(obs, None, "2026-01-01T00:00:00Z")
    assert {"ready", "reason", "image", "replicasOwner"} <= set(ours)


def test_a_condition_carries_only_the_fields_the_served_crd_declares_for_one() -> None:
    """A served CRD whose condition items declare fewer fields (an older Memcached CRD without
    observedGeneration or lastTransitionTime) gets conditions of those fields alone: an undeclared
    field is a 500 for the whole status apply (transcript 23)."""
    obs = Observation(3, 2, dep(avail=2, upd=2), ())
    status = desired_status(obs, None, "2026-01-01T00:00:00Z", condition_fields=frozenset({"type", "status", "reason", "message"}))
    assert status["conditions"] and all(set(c) == {"type", "status", "reason", "message"} for c in status["conditions"])


def test_the_nodes_kept_are_the_first_by_name_whatever_order_the_pods_come_in() -> None:
    """status.nodes is bounded after sorting: the same Pods give the same list in any order (a cache's
    order is not a status change), and the names kept are the first MAX_NODES by name."""
    from memcached_gitops.reconciler.decisions.status import MAX_NODES

    pods = tuple(f"pod-{i:05d}" for i in range(MAX_NODES + 10))
    status = desired_status(Observation(3, 2, dep(avail=2, upd=2), pods[::-1]), None, "2026-01-01T00:00:00Z")
    assert status["nodes"] == list(pods[:MAX_NODES])


def test_status_nodes_is_bounded() -> None:
    """Any Pod with the selector's labels is listed, so a flood of them must not grow the CR without a bound."""
    from memcached_gitops.reconciler.decisions.status import MAX_NODES, desired_status

    pods = tuple(f"pod-{i:05d}" for i in range(5000))
    status = desired_status(Observation(3, 2, dep(avail=2, upd=2), pods), None, "2026-01-01T00:00:00Z")
    assert status["nodes"] == sorted(pods)[:MAX_NODES] and MAX_NODES == 512


def test_ready_is_false_while_a_surge_rollouts_new_pods_are_not_ready() -> None:
    """The issue's finding 4: after a take-over the old Pods stay available while the new ones are
    Pending (maxUnavailable 0): available alone said Ready=True. As ``kubectl rollout status``: no old
    Pod left and every updated one available."""
    surging = dep(avail=2, upd=2)
    surging["status"]["replicas"] = 4  # two old Pods available, two new Pending
    conditions = {c["type"]: c for c in desired_conditions(Observation(3, 2, surging, ()))}
    assert (conditions["Available"]["status"], conditions["Progressing"]["status"]) == ("True", "True")
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "RollingOut")
    done = dep(avail=2, upd=2)
    done["status"]["replicas"] = 2
    assert {c["type"]: c for c in desired_conditions(Observation(3, 2, done, ()))}["Ready"]["status"] == "True"


def _kubectl_rollout_status_done(replicas: int, updated: int, available: int, size: int) -> bool:
    """kubectl's DeploymentStatusViewer (polymorphichelpers/rollout_status.go), once the generation is
    observed: it waits while "n out of size new replicas have been updated", while "n old replicas are
    pending termination" and while "n of m updated replicas are available"."""
    return updated >= size and replicas <= updated and available >= updated


#: (status.replicas, updatedReplicas, availableReplicas) with spec.size 2
ROLLOUT_STATES = {
    "scale-down-3-to-2-one-updated-pod-not-ready": (3, 3, 2),
    "scale-down-3-to-2-the-third-pod-terminating": (3, 2, 2),
    "scale-down-done": (2, 2, 2),
    "surge-new-pods-pending": (4, 2, 2),
    "new-pods-not-yet-created": (2, 1, 2),
    "one-pod-not-ready": (2, 2, 1),
}


@pytest.mark.parametrize("state", sorted(ROLLOUT_STATES))
def test_ready_is_true_only_where_kubectl_rollout_status_would_return(state: str) -> None:
    """``kubectl wait --for=condition=Ready`` on the CR and ``kubectl rollout status`` on its
    Deployment answer the same question: while spec.size goes from 3 to 2 the Deployment can count 3
    updated Pods of which 2 are available, and kubectl still waits ("2 of 3 updated replicas are
    available"); a Ready=True (STATUS Available) there lets a pipeline go on while a Pod of the new
    template has never become ready."""
    replicas, updated, available = ROLLOUT_STATES[state]
    deployment = dep(avail=available, upd=updated)
    deployment["status"]["replicas"] = replicas
    obs = Observation(3, 2, deployment, ())
    conditions = {c["type"]: c for c in desired_conditions(obs)}
    done = _kubectl_rollout_status_done(replicas, updated, available, 2)
    assert conditions["Ready"]["status"] == ("True" if done else "False"), conditions["Ready"]
    assert conditions["Progressing"]["status"] == ("False" if done else "True"), conditions["Progressing"]
    assert columns(obs, list(conditions.values()))["reason"] == ("Available" if done else "Progressing")


def test_a_paused_cr_has_one_condition_that_says_so_and_its_column() -> None:
    obs = Observation(3, 2, dep(avail=2, upd=2), (), paused="reconciliation is paused")
    status = desired_status(obs, {"conditions": [{"type": "Degraded", "status": "True", "reason": "DriftDetected"}]}, "now")
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Ready", "False", "ReconcileDisabled", "reconciliation is paused")]
    assert (status["reason"], status["ready"]) == ("ReconcileDisabled", "2/2")


NOW, THEN = "2026-11-28T12:00:00Z", "2026-11-01T08:00:00Z"


@pytest.mark.parametrize(("previous", "expected"), [
    ({"type": "Ready", "status": "True", "lastTransitionTime": THEN}, THEN),  # unchanged: kept
    ({"type": "Ready", "status": "False", "lastTransitionTime": THEN}, NOW),  # flipped: now
    ({"type": "Ready", "status": "True"}, NOW),  # another writer's, without one: now, never absent
    ({"type": "Ready", "status": "True", "lastTransitionTime": None}, NOW),
    ({"type": "Ready", "status": "True", "lastTransitionTime": ""}, NOW),
    (None, NOW),  # a new condition
])
def test_every_condition_carries_a_transition_time(previous: dict | None, expected: str) -> None:
    """metav1.Condition's lastTransitionTime is required (a date-time): the status apply must never send
    it null or empty, even when the live condition came without one (another writer, an older CRD)."""
    from memcached_gitops.reconciler.decisions.status import with_transition_times

    [out] = with_transition_times([{"type": "Ready", "status": "True", "reason": "R", "message": "m"}],
                                  [previous] if previous else [], NOW)
    assert out["lastTransitionTime"] == expected


def test_a_status_is_written_when_any_field_of_ours_differs_and_only_then() -> None:
    """The status apply is sent when a field it carries differs from the live status, any one of them:
    ``nodes`` alone (a Pod replaced by another of a new name: ``kubectl get memcached -o yaml`` lists
    the Pods there), a column alone. Fields the apply does not carry (another writer's) never make it
    differ, so an unchanged CR costs no write."""
    from memcached_gitops.reconciler.decisions.status import status_differs

    obs = Observation(3, 2, dep(gen=3, observed=3, avail=2, upd=2), ("m-1", "m-2"))
    live = desired_status(obs, None, "2026-11-28T12:00:00Z")
    assert not status_differs(desired_status(obs, live, "2026-11-28T12:05:00Z"), live)
    assert not status_differs(live, {**live, "someoneElses": "x"})
    replaced = Observation(3, 2, dep(gen=3, observed=3, avail=2, upd=2), ("m-1", "m-3"))
    assert status_differs(desired_status(replaced, live, "2026-11-28T12:05:00Z"), live)
    assert status_differs(live, {k: v for k, v in live.items() if k != "image"})
    assert status_differs(live, None)


# ---- properties: the transition time of each condition against every previous status, in any order
_TYPES = ("Available", "Progressing", "Degraded", "Ready", "Reconciling", "Stalled")
_STATUSES = ("True", "False", "Unknown")
_TIMES = (THEN, "2026-10-01T00:00:00Z", "", None)


@st.composite
def _previous_conditions(draw: st.DrawFn) -> list:
    types = draw(st.lists(st.sampled_from(_TYPES), unique=True, max_size=len(_TYPES)))
    out = []
    for t in types:
        c = {"type": t, "status": draw(st.sampled_from(_STATUSES)), "reason": draw(st.sampled_from(("A", "B"))), "message": "m"}
        time = draw(st.sampled_from((*_TIMES, "absent")))
        out.append(c if time == "absent" else {**c, "lastTransitionTime": time})
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_TYPES), st.sampled_from(_STATUSES), st.sampled_from(("A", "B"))),
                unique_by=lambda c: c[0], min_size=1, max_size=len(_TYPES)),
       _previous_conditions(), st.randoms(use_true_random=False))
def test_each_condition_keeps_its_own_types_time_while_its_status_stays(now_conditions: list, previous: list, rnd) -> None:
    """API conventions: a condition's lastTransitionTime is the previous one of the same type when its
    status did not change (whatever its reason, message or place in the list), and now otherwise."""
    from memcached_gitops.reconciler.decisions.status import with_transition_times

    conditions = [{"type": t, "status": s, "reason": r, "message": "x", "observedGeneration": 2} for t, s, r in now_conditions]
    rnd.shuffle(previous)
    out = with_transition_times(conditions, previous, NOW)
    by_type = {p["type"]: p for p in previous}
    for c, o in zip(conditions, out, strict=True):
        old = by_type.get(c["type"])
        kept = old is not None and old["status"] == c["status"] and old.get("lastTransitionTime")
        assert o == {**c, "lastTransitionTime": old["lastTransitionTime"] if kept else NOW}, (c, old)


@pytest.mark.parametrize("owner", ["autoscaler", "replicas_by", "applied_by"])
def test_the_longest_columns_others_names_can_make_pass_the_crds_status_schema(owner: str) -> None:
    """The image and who sets the replicas come from others' objects: an HPA's name (a DNS subdomain, up to
    253 characters, behind "HorizontalPodAutoscaler/"), field managers' names (up to 128 each), an image
    of any length. Whatever they are, the columns written pass the shipped CRD's status schema: the API
    server would refuse the whole status write (422), and the CR would show nothing at all."""
    from memcached_gitops.schemas import Validator, load_crd

    live = _with_containers(dep(avail=1, upd=1), {"name": "memcached", "image": "registry.example/" + "i" * 5000})
    named = {"autoscaler": "h" * 253, "replicas_by": ", ".join(f"{n}" * 128 for n in "abcdef"), "applied_by": "m" * 128}
    obs = Observation(3, 2, live, (), **{owner: named[owner]})
    status = desired_status(obs, None, "2026-11-29T12:00:00Z")
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "web", "namespace": "shop"},
          "spec": {"size": 2}, "status": status}
    outcome = Validator(load_crd()).validate(cr)
    # the status is judged as a status a file gives (a warning each); the first says a create would drop it
    assert outcome.ok and [w.field for w in outcome.warnings] == ["status"], outcome.warnings


def _status_problems(status: dict) -> list[tuple[str, str]]:
    """What the shipped CRD's schema refuses in ``status``, as the status subresource validates an
    update of it (the same schema; the validator drops status on create, so the subresource is taken
    off a copy of the CRD here)."""
    document = copy.deepcopy(load_crd().document)
    for version in document["spec"]["versions"]:
        version.pop("subresources", None)
    cr = memcached_cr("c", "shop", {"size": 1}) | {"status": status}
    outcome = Validator(parse_crd(json.dumps(document), "crd.json")).validate(cr)
    return [(p.field, p.message) for p in outcome.errors if p.field != "<root>"]


def _failing(reason: str, image: str = "memcached:1.6") -> dict:
    failure = {"type": "ReplicaFailure", "status": "True", "reason": reason, "message": "m" * 40000}
    return _with_containers(dep(conds=[failure]), {"name": "memcached", "image": image})


def _declared_status() -> dict:
    return load_crd().document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]


def test_a_status_built_from_overlong_outside_text_fits_the_crds_bounds() -> None:
    """The image, the autoscaler's or the applier's name, the Deployment's message and a spec error
    quoting the CR come from other people's text: what the status carries of each is cut to the
    bound the shipped CRD declares (maxLength), and no further, or the API server refuses the whole
    status write."""
    declared = _declared_status()
    long_image = _failing("FailedCreate", "r/" + "i" * 9000)
    for obs in (Observation(3, 2, long_image, (), "InvalidSpec", "x" * 40000, autoscaler="h" * 900),
                Observation(3, 2, long_image, (), applied_by="m" * 900, inherited_selector="app=x")):
        status = desired_status(obs, None, "2026-01-01T00:00:00Z")
        assert _status_problems(status) == []
        assert (len(status["image"]), len(status["replicasOwner"])) == (
            declared["image"]["maxLength"], declared["replicasOwner"]["maxLength"])
    invalid = Observation(3, 2, long_image, (), "InvalidSpec", "x" * 40000)
    [available, *_] = desired_status(invalid, None, "2026-01-01T00:00:00Z")["conditions"]
    assert len(available["message"]) == declared["conditions"]["items"]["properties"]["message"]["maxLength"]


def test_text_at_the_crds_bound_is_kept_whole() -> None:
    """An image or a manager's name exactly as long as the CRD allows is written as it is."""
    declared = _declared_status()
    image = "r/" + "i" * (declared["image"]["maxLength"] - 2)
    owner = "m" * declared["replicasOwner"]["maxLength"]
    status = desired_status(Observation(3, 2, _failing("FailedCreate", image), (), applied_by=owner), None, "2026-01-01T00:00:00Z")
    assert (status["image"], status["replicasOwner"]) == (image, owner)
    assert _status_problems(status) == []


@pytest.mark.parametrize("reason", ["Failed create", "quota:exceeded!", "F" * 2000])
def test_a_deployments_failure_reason_is_written_only_in_a_form_the_crds_condition_reason_takes(reason: str) -> None:
    """A Deployment's condition reason is free text to the API server (apps/v1 DeploymentCondition has
    no pattern or maxLength); the CR's condition reason is a metav1.Condition's (pattern, maxLength
    1024 in the shipped CRD). Whatever the Deployment says, the status written must be one the API
    server takes, or every status write for this CR is refused while the Deployment says it."""
    status = desired_status(Observation(3, 2, _failing(reason), ()), None, "2026-01-01T00:00:00Z")
    assert _status_problems(status) == []
