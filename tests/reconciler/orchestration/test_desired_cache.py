"""The desired Deployment kept per CR (uid, generation): a Deployment event costs no validation or
rendering, and nothing stale is ever applied (a spec change, a CR re-created under the same name)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.orchestration import desired_cache
from memcached_gitops.reconciler.orchestration.cycle import Reconciler

from fakeapi.server import FakeAPIServer
from tests.support.crs import memcached_cr
from tests.support.fakecluster import reconciler_for


def cr(name: str = "a", uid: str = "u-1", generation: int = 1, size: int = 1) -> dict:
    return memcached_cr(name, "default", {"size": size}, uid=uid, generation=generation, resourceVersion="7")


@pytest.fixture
def rec():
    with FakeAPIServer(namespaces=("default",)) as api:
        yield reconciler_for(api)


def counting(rec: Reconciler) -> list[int]:
    calls = [0]
    validate = rec.validator.validate

    def counted(obj):
        calls[0] += 1
        return validate(obj)

    rec.validator.validate = counted  # type: ignore[method-assign]
    return calls


def test_the_same_generation_is_validated_and_rendered_once(rec: Reconciler) -> None:
    calls = counting(rec)
    first, _ = rec.desired_for(cr())
    again, _ = rec.desired_for({**cr(), "status": {"nodes": ["p"]}, "metadata": {**cr()["metadata"], "resourceVersion": "8"}})
    assert calls == [1], "a status write or a Deployment event needs no new validation"
    assert again is first
    assert first["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_a_new_generation_or_a_new_uid_is_rendered_again(rec: Reconciler) -> None:
    calls = counting(rec)
    one, _ = rec.desired_for(cr(size=1))
    two, _ = rec.desired_for(cr(generation=2, size=2))
    assert two["spec"]["replicas"] == 2 and calls == [2]
    recreated, _ = rec.desired_for(cr(uid="u-2", generation=2, size=2))  # deleted and created again: generation starts over
    assert recreated["metadata"]["ownerReferences"][0]["uid"] == "u-2" and calls == [3]
    assert one["spec"]["replicas"] == 1, "what was handed out before is never changed"


def test_an_invalid_cr_keeps_its_problems_and_no_deployment(rec: Reconciler) -> None:
    calls = counting(rec)
    bad = cr(size=7)
    assert rec.desired_for(bad)[0] is None and rec.desired_for(copy.deepcopy(bad))[0] is None
    problems = rec.desired_for(bad)[1]
    assert calls == [1] and [p.field for p in problems] == ["spec.size"]


def test_without_uid_or_generation_nothing_is_reused(rec: Reconciler) -> None:
    calls = counting(rec)
    loose = cr()
    del loose["metadata"]["generation"]
    rec.desired_for(loose)
    rec.desired_for(loose)
    assert calls == [2]


def test_the_kept_set_is_bounded_least_recently_used_first(rec: Reconciler, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(desired_cache, "DESIRED_KEPT", 3)
    calls = counting(rec)
    for name in "abcd":
        rec.desired_for(cr(name, uid=f"u-{name}"))
    assert len(rec.desired.kept) == 3 and calls == [4]
    rec.desired_for(cr("b", uid="u-b"))  # kept: no validation, and now the most recent
    assert calls == [4]
    rec.desired_for(cr("a", uid="u-a"))  # dropped first
    assert calls == [5]
    assert list(rec.desired.kept) == [("default", "d"), ("default", "b"), ("default", "a")]


def test_the_cr_given_is_never_changed_by_its_validation(rec: Reconciler) -> None:
    """The validator defaults the CR it checks in place (spec.containerPort), but the CR given is the
    informer cache's, read by every worker and the next compare: its rendering works on a copy."""
    given = cr()
    before = copy.deepcopy(given)
    desired, problems = rec.desired_for(given)
    assert desired is not None and not problems
    assert given == before


# ---- property: any sequence of CRs, namespaces and names shared, uids and generations moving
_SIZES = {None: 1, 1: 1, 2: 3, 3: 2}  # the spec a generation carries (a new spec is a new generation)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(("default", "other")), st.sampled_from(("a", "b")), st.sampled_from((1, 2)),
                          st.sampled_from((1, 2, 3, None))), min_size=1, max_size=12))
def test_each_cr_is_rendered_once_per_uid_and_generation_and_always_its_own(rec: Reconciler, visits: list) -> None:
    """What comes back is always the CR's own rendering (its namespace, name, uid and generation's
    spec), and a CR is validated again only when its uid or generation moved since its last visit, or
    when it has no generation: two CRs of one name in two namespaces are two CRs."""
    cache = desired_cache.DesiredCache(rec.validator, rec.options.image)
    calls = [0]
    validate = rec.validator.validate

    def counted(obj):
        calls[0] += 1
        return validate(obj)

    cache.validator = type("Counting", (), {"validate": staticmethod(counted)})()
    last: dict = {}
    expected_calls = 0
    for namespace, name, incarnation, generation in visits:
        uid = f"{namespace}/{name}/{incarnation}"  # deleted and created again: another uid
        given = memcached_cr(name, namespace, {"size": _SIZES[generation]}, resourceVersion="7")
        given["metadata"].update({"uid": uid, **({"generation": generation} if generation is not None else {})})
        version = (uid, generation)
        if last.get((namespace, name)) != version or None in version:
            expected_calls += 1
        last[(namespace, name)] = version
        desired, problems = cache.desired_for(given)
        assert desired is not None and not problems
        assert (desired["metadata"]["namespace"], desired["metadata"]["name"], desired["spec"]["replicas"]) == (
            namespace, name, _SIZES[generation])
        assert desired["metadata"]["ownerReferences"][0]["uid"] == uid
        assert calls[0] == expected_calls, (namespace, name, version)
