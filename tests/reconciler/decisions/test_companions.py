"""decisions/companions.py, pure: whose Service or budget it is, and what the reconciler may do to it."""

from __future__ import annotations

import copy

import pytest
from memcached_gitops.reconciler.decisions.companions import Move, relation, selecting, steps, with_owner
from memcached_gitops.reconciler.decisions.vocabulary import FIELD_MANAGER
from memcached_gitops.render import render

CR = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
      "metadata": {"name": "m", "namespace": "shop", "uid": "u-1"}, "spec": {"size": 2, "containerPort": 11211}}
NAMES = ["m-memcached"]


def companions(size: int = 2) -> list[dict]:
    return render({**CR, "spec": {**CR["spec"], "size": size}})[1:]


def budget() -> dict:
    return companions()[1]


def controlled_by(obj: dict, uid: str, kind: str = "Memcached") -> dict:
    out = copy.deepcopy(obj)
    out["metadata"]["ownerReferences"] = [{"apiVersion": "x/v1", "kind": kind, "name": "other", "uid": uid, "controller": True}]
    return out


def unlabelled(obj: dict) -> dict:
    out = copy.deepcopy(obj)
    out["metadata"]["labels"] = {"app": "theirs"}
    return out


def relabelled(obj: dict, instance: str) -> dict:
    out = copy.deepcopy(obj)
    out["metadata"]["labels"]["app.kubernetes.io/instance"] = instance
    return out


@pytest.mark.parametrize("obj,expected", [
    (with_owner(budget(), CR), Move.KEEP),
    (controlled_by(budget(), "u-2"), Move.FOREIGN),  # another Memcached's, or the same name's predecessor
    (controlled_by(budget(), "u-1", kind="Other"), Move.KEEP),  # the uid decides: uids are unique
    (budget(), Move.OBSERVE),  # our labels, no controller: Argo CD applied our rendering
    (unlabelled(budget()), Move.FOREIGN),
    (relabelled(budget(), "other"), Move.FOREIGN),  # our labels, another CR's instance
])
def test_whose_it_is(obj: dict, expected: Move) -> None:
    assert relation(obj, CR) is expected


def test_a_budget_no_longer_wanted_is_deleted_only_when_ours() -> None:
    one_pod = companions(size=1)
    assert [o["kind"] for o in one_pod] == ["Service"]
    service = with_owner(one_pod[0], CR)
    ours = {("Service", "m-memcached"): service, ("PodDisruptionBudget", "m-memcached"): with_owner(budget(), CR)}
    assert [(s.resource.kind, s.move) for s in steps(CR, one_pod, ours, NAMES, FIELD_MANAGER)] == [
        ("Service", Move.KEEP), ("PodDisruptionBudget", Move.DELETE)]
    for theirs in (controlled_by(budget(), "u-2"), unlabelled(budget()), budget()):
        live = {("Service", "m-memcached"): service, ("PodDisruptionBudget", "m-memcached"): theirs}
        assert [s.move for s in steps(CR, one_pod, live, NAMES, FIELD_MANAGER)] == [Move.KEEP], "never someone else's"


def test_missing_ones_are_created_and_gitops_applied_ones_observed_unless_adopted() -> None:
    wanted = companions()
    assert [s.move for s in steps(CR, wanted, {}, NAMES, FIELD_MANAGER)] == [Move.CREATE, Move.CREATE]
    applied = {("Service", "m-memcached"): wanted[0], ("PodDisruptionBudget", "m-memcached"): wanted[1]}
    assert [s.move for s in steps(CR, wanted, applied, NAMES, FIELD_MANAGER)] == [Move.OBSERVE, Move.OBSERVE]
    adopted = steps(CR, wanted, applied, NAMES, FIELD_MANAGER, adopt=True)
    assert [s.move for s in adopted] == [Move.CORRECT, Move.CORRECT]
    assert all(s.body is not None and s.body["metadata"]["ownerReferences"][0]["uid"] == "u-1" for s in adopted)
    assert [d.field for d in adopted[0].drift] == [".metadata.ownerReferences[uid=\"u-1\"]"]


def test_a_kept_selector_is_what_they_select() -> None:
    kept = {"matchLabels": {"app.kubernetes.io/name": "memcached-operator", "app.kubernetes.io/instance": "m"}}
    service, pdb = (selecting(o, kept) for o in companions())
    assert service["spec"]["selector"] == kept["matchLabels"] and pdb["spec"]["selector"] == kept
    assert selecting(companions()[0], None) == companions()[0]


@pytest.mark.parametrize("release", ["m", "cache-release-7"])
def test_a_kept_selector_that_names_its_own_instance_keeps_it(release: str) -> None:
    """A Deployment taken over from a Helm release (--adopt) whose Pods carry
    ``app.kubernetes.io/instance: <release>``: the Service and the budget select those Pods by the
    release's value, never the CR's name (no Pod would carry it); a kept selector without the label
    is narrowed to the CR's name."""
    kept = {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": release}}
    service, pdb = (selecting(o, kept) for o in companions())
    assert service["spec"]["selector"]["app.kubernetes.io/instance"] == release
    assert pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == release
    bare = {"matchLabels": {"app.kubernetes.io/name": "memcached"}}
    service, pdb = (selecting(o, bare) for o in companions())
    name = companions()[0]["metadata"]["labels"]["app.kubernetes.io/instance"]
    assert service["spec"]["selector"] == {"app.kubernetes.io/instance": name, "app.kubernetes.io/name": "memcached"}
    assert pdb["spec"]["selector"] == {"matchLabels": service["spec"]["selector"]}


def _described(plan: list) -> list[tuple]:
    return [(s.resource.kind, s.name, s.move, [d.field for d in s.drift]) for s in plan]


def test_each_step_names_its_object_and_carries_what_to_write_or_what_is_there() -> None:
    wanted = companions()
    created = steps(CR, wanted, {}, NAMES, FIELD_MANAGER)
    assert _described(created) == [("Service", "m-memcached", Move.CREATE, []), ("PodDisruptionBudget", "m-memcached", Move.CREATE, [])]
    assert [s.body for s in created] == [with_owner(o, CR) for o in wanted]
    theirs = controlled_by(wanted[0], "u-2")
    foreign = steps(CR, wanted[:1], {("Service", "m-memcached"): theirs}, NAMES, FIELD_MANAGER)
    assert foreign[0].body is theirs and foreign[0].move is Move.FOREIGN and foreign[0].resource.kind == "Service"
    assert foreign[0].drift == ()  # what differs from the rendering is reported, never written: here nothing
    ours = with_owner(wanted[1], CR)
    drifted = copy.deepcopy(ours)
    drifted["spec"]["maxUnavailable"] = 2
    [kept, corrected] = steps(CR, wanted, {("Service", "m-memcached"): with_owner(wanted[0], CR),
                                          ("PodDisruptionBudget", "m-memcached"): drifted}, NAMES, FIELD_MANAGER)
    assert _described([kept, corrected]) == [("Service", "m-memcached", Move.KEEP, []),
                                             ("PodDisruptionBudget", "m-memcached", Move.CORRECT, [".spec.maxUnavailable"])]
    assert kept.body == with_owner(wanted[0], CR) and corrected.body == ours
    gone = steps(CR, companions(size=1), {("PodDisruptionBudget", "m-memcached"): ours}, NAMES, FIELD_MANAGER)
    assert _described(gone)[-1] == ("PodDisruptionBudget", "m-memcached", Move.DELETE, []) and gone[-1].body is ours


def test_a_port_a_person_added_to_our_service_is_theirs_not_drift() -> None:
    """A Service's ports are a map by port and protocol (transcript 42): an extra one is not ours to remove."""
    service = with_owner(companions()[0], CR)
    service["spec"]["ports"].append({"name": "metrics", "port": 9150, "protocol": "TCP", "targetPort": 9150})
    assert _described(steps(CR, companions()[:1], {("Service", "m-memcached"): service}, NAMES, FIELD_MANAGER)) == [
        ("Service", "m-memcached", Move.KEEP, [])]


def test_a_kept_selector_reaches_the_steps_and_is_never_shared() -> None:
    kept = {"matchLabels": {"app.kubernetes.io/name": "memcached-operator", "app.kubernetes.io/instance": "m"}}
    wanted = companions()
    [service, pdb] = steps(CR, wanted, {}, NAMES, FIELD_MANAGER, kept_selector=kept)
    assert service.body["spec"]["selector"] == kept["matchLabels"] and pdb.body["spec"]["selector"] == kept
    pdb.body["spec"]["selector"]["matchLabels"]["x"] = "y"
    assert "x" not in kept["matchLabels"] and wanted[1]["spec"]["selector"]["matchLabels"].get("x") is None
    assert companions()[0]["spec"]["selector"] == wanted[0]["spec"]["selector"], "the rendering is not changed"


def test_the_owner_reference_is_the_controllers_and_blocks_deletion() -> None:
    assert with_owner(budget(), CR)["metadata"]["ownerReferences"] == [{
        "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "m", "uid": "u-1", "controller": True,
        "blockOwnerDeletion": True}]
    assert "ownerReferences" not in budget()["metadata"], "the rendering is not changed"


def test_kept_live_objects_and_observed_drift() -> None:
    wanted = companions()
    live_service = with_owner(wanted[0], CR)
    live_service["status"] = {"loadBalancer": {}}
    [kept] = steps(CR, wanted[:1], {("Service", "m-memcached"): live_service}, NAMES, FIELD_MANAGER)
    assert kept.move is Move.KEEP and kept.body is live_service, "a kept one is the live object, not a write"
    applied = copy.deepcopy(wanted[0])  # Argo CD's copy, with a person's port beside ours and a changed type
    applied["spec"]["ports"].append({"name": "metrics", "port": 9150, "protocol": "TCP", "targetPort": 9150})
    applied["spec"]["type"] = "NodePort"
    [observed] = steps(CR, wanted[:1], {("Service", "m-memcached"): applied}, NAMES, FIELD_MANAGER)
    assert (observed.move, observed.name, [d.field for d in observed.drift]) == (Move.OBSERVE, "m-memcached", [".spec.type"])
    theirs = controlled_by(wanted[0], "u-2")
    [foreign] = steps(CR, wanted[:1], {("Service", "m-memcached"): theirs}, NAMES, FIELD_MANAGER)
    assert (foreign.move, foreign.name) == (Move.FOREIGN, "m-memcached")


def test_selecting_copies_the_selector() -> None:
    kept = {"matchLabels": {"a": "b"}}
    chosen = selecting(budget(), kept)
    chosen["spec"]["selector"]["matchLabels"]["x"] = "y"
    assert kept == {"matchLabels": {"a": "b"}}


def test_ignored_paths_of_a_companion_are_left_to_their_owner_and_listed_apart() -> None:
    """The CR's ``PodDisruptionBudget:`` pointers, followed as the Deployment's (plan.ignoring): not
    drift; left out of an apply made for another field when another manager owns them, carried at
    the live value when we alone do; never reaching another kind's object; observed drift alike."""
    wanted = companions()
    live_budget = with_owner(wanted[1], CR)
    live_budget["spec"]["maxUnavailable"] = 2
    live_budget["metadata"]["managedFields"] = [{"manager": "platform", "operation": "Update",
                                                 "fieldsV1": {"f:spec": {"f:maxUnavailable": {}}}}]
    live = {("Service", "m-memcached"): with_owner(wanted[0], CR), ("PodDisruptionBudget", "m-memcached"): live_budget}
    ignored = {"PodDisruptionBudget": (("spec", "maxUnavailable"),)}
    [_, kept] = steps(CR, wanted, live, NAMES, FIELD_MANAGER, ignored=ignored)
    assert (kept.move, kept.drift, [d.field for d in kept.ignored]) == (Move.KEEP, (), [".spec.maxUnavailable"])
    assert kept.body is live_budget
    other_kind = steps(CR, wanted, live, NAMES, FIELD_MANAGER, ignored={"Service": (("spec", "maxUnavailable"),)})[1]
    assert (other_kind.move, other_kind.ignored) == (Move.CORRECT, ()), "a Service pointer is not the budget's"
    live_budget["metadata"]["labels"]["app.kubernetes.io/name"] = "x"
    [_, corrected] = steps(CR, wanted, live, NAMES, FIELD_MANAGER, ignored=ignored)
    assert corrected.move is Move.CORRECT and [d.field for d in corrected.drift] == [".metadata.labels.app.kubernetes.io/name"]
    assert "maxUnavailable" not in corrected.body["spec"], "another manager's: left out of our apply"
    live_budget["metadata"]["managedFields"] = [{"manager": "shop-gitops", "operation": "Apply",
                                                 "fieldsV1": {"f:spec": {"f:maxUnavailable": {}}}}]
    [_, carried] = steps(CR, wanted, live, NAMES, "shop-gitops", ignored=ignored)
    assert carried.body["spec"]["maxUnavailable"] == 2, "ours alone (our field manager's name given): the live value"
    applied = copy.deepcopy(wanted[1])
    applied["spec"]["maxUnavailable"] = 2
    [_, observed] = steps(CR, wanted, {("PodDisruptionBudget", "m-memcached"): applied}, NAMES, FIELD_MANAGER, ignored=ignored)
    assert (observed.move, observed.drift, [d.field for d in observed.ignored]) == (Move.OBSERVE, (), [".spec.maxUnavailable"])


def service() -> dict:
    return companions()[0]


def with_extra_port(obj: dict) -> dict:
    """Their port beside ours: a Service's ports are a map by port and protocol, so ours is unchanged."""
    out = copy.deepcopy(obj)
    out["spec"]["ports"] = [{"name": "theirs", "port": 9999, "protocol": "TCP"}] + out["spec"]["ports"]
    return out


def test_a_foreign_service_is_compared_with_a_services_list_rules_and_the_budget_is_still_looked_at() -> None:
    theirs = controlled_by(with_extra_port(service()), "u-2")
    theirs["spec"]["selector"] = {"app": "theirs"}
    live = {("Service", "m-memcached"): theirs, ("PodDisruptionBudget", "m-memcached"): with_owner(budget(), CR)}
    found = steps(CR, companions(), live, NAMES, FIELD_MANAGER)
    assert [(s.resource.kind, s.move) for s in found] == [("Service", Move.FOREIGN), ("PodDisruptionBudget", Move.KEEP)]
    assert [d.field for d in found[0].drift] == [".spec.selector"], "their extra port is no drift: ports are keyed"


def test_an_observed_service_is_compared_with_its_kinds_rules_and_kept_as_it_is() -> None:
    live_service = with_extra_port(service())
    live_service["spec"]["selector"] = {"app": "changed"}
    live = {("Service", "m-memcached"): live_service}
    [step, _] = steps(CR, companions(), live, NAMES, FIELD_MANAGER, ignored={"Service": (("spec", "publishNotReadyAddresses"),)})
    assert step.resource.kind == "Service" and step.move is Move.OBSERVE and step.body is live_service
    assert [d.field for d in step.drift] == [".spec.selector"]


def test_a_pointer_with_a_colon_after_the_kind_keeps_it_in_the_pointer() -> None:
    from memcached_gitops.reconciler.decisions.ignore import ignored_paths

    cr = copy.deepcopy(CR)
    cr["metadata"]["annotations"] = {"cache.example.com/ignore-paths": "Service:/metadata/annotations/a:b"}
    assert ignored_paths(cr)["Service"] == (("metadata", "annotations", "a:b"),)


def test_ignoring_keeps_the_kinds_list_rules_after_following_the_pointers_and_needs_no_live_object() -> None:
    from memcached_gitops.foundation.identities import SERVICES
    from memcached_gitops.reconciler.decisions.plan import ignoring
    from memcached_gitops.render.companions import BY_KIND

    desired = with_owner(service(), CR)
    live = with_extra_port(desired)
    planned = ignoring(desired, live, "memcached-gitops", (("spec", "publishNotReadyAddresses"),), BY_KIND[SERVICES.kind].rules)
    assert planned.drift == [] and planned.ignored == []
    created = ignoring(desired, None, "memcached-gitops", (("spec", "publishNotReadyAddresses"),), BY_KIND[SERVICES.kind].rules)
    assert created.desired == desired and created.drift


def test_a_kept_selectors_expressions_reach_the_budget_and_its_labels_the_service() -> None:
    """A Deployment taken over with ``matchExpressions`` in its selector: the budget (a LabelSelector)
    selects by all of it, narrowed to the instance label; the Service (a label map) by its labels."""
    kept = {"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["cache"]}]}
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "a", "namespace": "default"},
          "spec": {"size": 2}}
    objects = {o["kind"]: o for o in render(cr)}
    budget = selecting(objects["PodDisruptionBudget"], kept)["spec"]["selector"]
    assert budget == {"matchLabels": {"app.kubernetes.io/instance": "a", "app": "x"}, "matchExpressions": kept["matchExpressions"]}
    assert selecting(objects["Service"], kept)["spec"]["selector"] == {"app.kubernetes.io/instance": "a", "app": "x"}


@pytest.mark.parametrize("narrowed", [
    {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "m", "tier": "cache"}},
    {"matchLabels": {"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "m"},
     "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
])
def test_a_budgets_selector_is_one_value_so_any_key_added_to_it_is_drift(narrowed: dict) -> None:
    """A PodDisruptionBudget's selector is a LabelSelector, replaced whole (policy/v1
    ``+patchStrategy=replace``, meta/v1 LabelSelector ``+structType=atomic``): a key or expression
    someone added narrows what the budget protects, and is drift taken back with the whole selector,
    not a field of another owner left beside ours."""
    from memcached_gitops.foundation.identities import BUDGETS
    from memcached_gitops.reconciler.decisions.plan import ignoring
    from memcached_gitops.render.companions import BY_KIND

    desired = with_owner(budget(), CR)
    live = copy.deepcopy(desired)
    live["spec"]["selector"] = narrowed
    planned = ignoring(desired, live, "memcached-gitops", (), BY_KIND[BUDGETS.kind].rules)
    assert [(d.path, d.live, d.desired) for d in planned.drift] == [
        ((("f", "spec"), ("f", "selector")), narrowed, desired["spec"]["selector"])]
