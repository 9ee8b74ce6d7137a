"""The Service and budget kept with each CR's rendering (reconciler/orchestration/desired_cache.py
``companions_of``): what the companions' step of a reconcile creates and corrects is read from here, so
a CR must get its own, and none before its rendering is kept."""

from __future__ import annotations

import pytest
from memcached_gitops.reconciler.orchestration.cycle import Reconciler

from fakeapi.server import FakeAPIServer
from tests.support.crs import memcached_cr
from tests.support.fakecluster import reconciler_for


def cr(name: str = "a", namespace: str = "default", size: int = 2, uid: str = "u-1") -> dict:
    return memcached_cr(name, namespace, {"size": size}, uid=uid, generation=1, resourceVersion="7")


@pytest.fixture
def rec():
    with FakeAPIServer(namespaces=("default", "other")) as api:
        yield reconciler_for(api)


def kinds(objects: list[dict]) -> list[tuple[str, str, str]]:
    return sorted((o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects)


def test_a_crs_service_and_budget_are_those_rendered_with_its_deployment(rec: Reconciler) -> None:
    rec.desired.desired_for(cr(size=2))
    companions = rec.desired.companions_of(cr(size=2))
    assert [k for k, _, _ in kinds(companions)] == ["PodDisruptionBudget", "Service"]
    assert {ns for _, ns, _ in kinds(companions)} == {"default"}
    assert all("ownerReferences" not in o["metadata"] for o in companions), "as rendered, without owner"


def test_a_cr_whose_rendering_is_not_kept_has_no_companions_yet(rec: Reconciler) -> None:
    """Nothing is created for a CR before its rendering is known (an invalid or unseen CR)."""
    assert rec.desired.companions_of(cr()) == []
    rec.desired.desired_for(cr("a"))
    assert rec.desired.companions_of(cr("b", uid="u-2")) == []


def test_two_crs_of_one_name_in_two_namespaces_each_get_their_own_companions(rec: Reconciler) -> None:
    rec.desired.desired_for(cr("a", "default", size=1))
    rec.desired.desired_for(cr("a", "other", size=2, uid="u-2"))
    assert [(k, ns) for k, ns, _ in kinds(rec.desired.companions_of(cr("a", "default", size=1)))] == [("Service", "default")]
    assert [(k, ns) for k, ns, _ in kinds(rec.desired.companions_of(cr("a", "other", size=2, uid="u-2")))] == [
        ("PodDisruptionBudget", "other"), ("Service", "other")]


def test_an_invalid_cr_has_no_companions(rec: Reconciler) -> None:
    rec.desired.desired_for(cr(size=7))
    assert rec.desired.companions_of(cr(size=7)) == []


def test_the_companions_handed_out_are_a_copy_of_the_list_kept(rec: Reconciler) -> None:
    """The caller may add to or drop from the list it gets; the next reconcile reads the kept one."""
    rec.desired.desired_for(cr(size=2))
    rec.desired.companions_of(cr(size=2)).clear()
    assert len(rec.desired.companions_of(cr(size=2))) == 2
