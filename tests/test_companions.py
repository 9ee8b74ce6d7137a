"""decisions/companions.py, pure: whose Service or budget it is, and what the reconciler may do to it."""

from __future__ import annotations

import copy

import pytest
from memcached_gitops.reconciler.decisions.companions import Move, relation, selecting, steps, with_owner
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
    assert [(s.resource.kind, s.move) for s in steps(CR, one_pod, ours, NAMES)] == [
        ("Service", Move.KEEP), ("PodDisruptionBudget", Move.DELETE)]
    for theirs in (controlled_by(budget(), "u-2"), unlabelled(budget()), budget()):
        live = {("Service", "m-memcached"): service, ("PodDisruptionBudget", "m-memcached"): theirs}
        assert [s.move for s in steps(CR, one_pod, live, NAMES)] == [Move.KEEP], "never someone else's"


def test_missing_ones_are_created_and_gitops_applied_ones_observed_unless_adopted() -> None:
    wanted = companions()
    assert [s.move for s in steps(CR, wanted, {}, NAMES)] == [Move.CREATE, Move.CREATE]
    applied = {("Service", "m-memcached"): wanted[0], ("PodDisruptionBudget", "m-memcached"): wanted[1]}
    assert [s.move for s in steps(CR, wanted, applied, NAMES)] == [Move.OBSERVE, Move.OBSERVE]
    adopted = steps(CR, wanted, applied, NAMES, adopt=True)
    assert [s.move for s in adopted] == [Move.CORRECT, Move.CORRECT]
    assert all(s.body is not None and s.body["metadata"]["ownerReferences"][0]["uid"] == "u-1" for s in adopted)
    assert [d.field for d in adopted[0].drift] == [".metadata.ownerReferences[uid=\"u-1\"]"]


def test_a_kept_selector_is_what_they_select() -> None:
    kept = {"matchLabels": {"app.kubernetes.io/name": "memcached-operator", "app.kubernetes.io/instance": "m"}}
    service, pdb = (selecting(o, kept) for o in companions())
    assert service["spec"]["selector"] == kept["matchLabels"] and pdb["spec"]["selector"] == kept
    assert selecting(companions()[0], None) == companions()[0]
