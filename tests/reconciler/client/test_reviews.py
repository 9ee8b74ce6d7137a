"""The token and access reviews behind /metrics (reconciler/client/reviews.py), in-process: the exact
bodies sent to the API server, how its answers are read, and how long each answer is kept.

tests/reconciler/orchestration/test_metrics_auth.py runs the same code over HTTPS against the fake API server (transcript 41)
and the real-cluster test against a kube-apiserver; here every field of a request and every bound of
the caches is pinned, with the API replaced by a recorder and time by a clock the test moves.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.reconciler.client.reviews import ACCESS_REVIEWS, AUTHENTICATED, TOKEN_REVIEWS, AccessReviews, TTLCache, User

from tests.support.clock import ManualClock


class API:
    """Records each request; answers with the next of ``answers`` (raised when it is an exception)."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, str, Any, str]] = []

    def request(self, method: str, path: str, body: Any = None, verb: str = "") -> Any:
        self.requests.append((method, path, body, verb))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def token_answer(authenticated: Any = True, **user: Any) -> dict[str, Any]:
    return {"status": {"authenticated": authenticated, "user": user}}


def reviews(api: API, clock: ManualClock, **kwargs: Any) -> AccessReviews:
    return AccessReviews(api, clock=clock, **kwargs)  # type: ignore[arg-type]


def test_the_defaults_are_controller_runtimes() -> None:
    r = AccessReviews(API())  # type: ignore[arg-type]
    assert (r.authn_ttl, r.allow_ttl, r.deny_ttl) == (60.0, 300.0, 30.0)
    assert r.tokens.max_entries == r.decisions.max_entries == 1024
    assert TOKEN_REVIEWS == "/apis/authentication.k8s.io/v1/tokenreviews"
    assert ACCESS_REVIEWS == "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    assert AUTHENTICATED == "system:authenticated"


def test_the_served_process_reviews_20_new_tokens_at_once_then_5_a_second_and_knows_a_valid_one_for_an_hour() -> None:
    """The metrics server's reviews take the defaults (main.py ``AccessReviews(reviewer)``): strangers
    spraying tokens cost the API server at most 20 TokenReviews at once, then 5 a second, and a token
    the API server authenticated is reviewed again from a bucket of its own for an hour after its last
    review (Prometheus scrapes every 30 s: its token is never refused 429 while strangers keep the
    bucket of new tokens empty), and no longer past that hour."""
    from memcached_gitops.reconciler.client.reviews import RateLimited

    clock = ManualClock(1000.0)
    stranger = token_answer(False)
    api = API(token_answer(username="prom"), *[stranger] * 44, token_answer(username="prom"), *[stranger] * 20,
              token_answer(username="prom"))
    r = reviews(api, clock)
    assert r.authenticate("prometheus") is not None

    def spray(count: int, prefix: str) -> None:
        for i in range(count):
            assert r.authenticate(f"{prefix}-{i}") is None
        with pytest.raises(RateLimited):
            r.authenticate(f"{prefix}-over")

    spray(19, "burst")
    clock.now += 1.0
    spray(5, "second")
    clock.now = 1000.0 + 3599.0  # the cache's minute long past, the hour not
    spray(20, "hour")
    assert r.authenticate("prometheus") is not None, "known: reviewed from its own bucket"
    clock.now += 3600.5  # an hour and more after its last review
    spray(20, "later")
    with pytest.raises(RateLimited):
        r.authenticate("prometheus")


def test_a_token_review_is_sent_as_the_api_server_expects_and_its_user_read() -> None:
    api, clock = API(token_answer(username="system:serviceaccount:monitoring:prometheus", uid="u-1",
                                  groups=["system:serviceaccounts"], extra={"b": ["2", "3"], "a": None})), ManualClock(1000.0)
    user = reviews(api, clock).authenticate("secret-token")
    assert api.requests == [("POST", TOKEN_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                       "spec": {"token": "secret-token"}}, "tokenreview")]
    assert user == User("system:serviceaccount:monitoring:prometheus", "u-1", ("system:serviceaccounts", AUTHENTICATED),
                        (("a", ()), ("b", ("2", "3"))))


@pytest.mark.parametrize("answer", [token_answer(False, username="x"), token_answer("true", username="x"),
                                    token_answer(None, username="x"), {"status": {}}, {}, None])
def test_only_authenticated_true_is_a_user(answer: Any) -> None:
    assert reviews(API(answer), ManualClock(1000.0)).authenticate("t") is None


def test_a_user_gets_system_authenticated_once_and_missing_fields_are_empty() -> None:
    assert User.from_review({}) == User("", "", (AUTHENTICATED,), ())
    assert User.from_review({"username": "x", "groups": [AUTHENTICATED, "g"]}).groups == (AUTHENTICATED, "g")
    assert User.from_review({"username": "x", "groups": None, "extra": None}) == User("x", "", (AUTHENTICATED,), ())
    assert User.from_review({"username": 7, "uid": 8}) == User("7", "8", (AUTHENTICATED,), ())


def test_a_tokens_answer_is_kept_a_minute_by_its_hash_whatever_it_was() -> None:
    clock = ManualClock(1000.0)
    api = API(token_answer(username="a"), token_answer(False), token_answer(username="a2"), token_answer(username="b"))
    r = reviews(api, clock)
    assert r.authenticate("ta") == r.authenticate("ta") and len(api.requests) == 1
    assert list(r.tokens.entries) == [hashlib.sha256(b"ta").digest()], "never the token itself"
    assert r.authenticate("bad") is None and r.authenticate("bad") is None and len(api.requests) == 2, "a refusal is kept too"
    clock.now += 59.999
    assert r.authenticate("ta").name == "a" and len(api.requests) == 2
    clock.now += 0.001  # 60 s: the deadline itself is past
    assert r.authenticate("ta").name == "a2" and len(api.requests) == 3
    assert r.authenticate("tb").name == "b" and len(api.requests) == 4


def access_answer(allowed: Any, denied: Any = None, reason: Any = "RBAC: allowed by ClusterRoleBinding") -> dict[str, Any]:
    status: dict[str, Any] = {"allowed": allowed, "reason": reason}
    if denied is not None:
        status["denied"] = denied
    return {"status": status}


def test_an_access_review_is_sent_for_the_non_resource_path_with_the_whole_user() -> None:
    api, clock = API(access_answer(True), access_answer(True)), ManualClock(1000.0)
    r = reviews(api, clock)
    user = User("jane", "u-2", ("dev", AUTHENTICATED), (("scopes", ("a", "b")),))
    assert r.authorize(user, "get", "/metrics") == (True, "RBAC: allowed by ClusterRoleBinding")
    assert api.requests == [("POST", ACCESS_REVIEWS, {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "jane", "groups": ["dev", AUTHENTICATED], "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
                 "uid": "u-2", "extra": {"scopes": ["a", "b"]}}}, "subjectaccessreview")]
    r.authorize(User("sa"), "head", "/metrics")
    assert api.requests[1][2]["spec"] == {"user": "sa", "groups": [], "nonResourceAttributes": {"path": "/metrics", "verb": "head"}}, \
        "no uid and no extra when the user has none"


@pytest.mark.parametrize(("answer", "decision"), [
    (access_answer(True), (True, "RBAC: allowed by ClusterRoleBinding")),
    (access_answer(True, denied=True), (False, "RBAC: allowed by ClusterRoleBinding")),
    (access_answer(True, denied=False), (True, "RBAC: allowed by ClusterRoleBinding")),
    (access_answer("true"), (False, "RBAC: allowed by ClusterRoleBinding")),
    (access_answer(False, reason=None), (False, "None")),
    ({"status": {"allowed": False}}, (False, "")),
    ({}, (False, "")),
    (None, (False, "")),
])
def test_only_allowed_true_and_not_denied_is_allowed(answer: Any, decision: tuple[bool, str]) -> None:
    assert reviews(API(answer), ManualClock(1000.0)).authorize(User("u"), "get", "/metrics") == decision


def test_an_allowed_answer_is_kept_five_minutes_a_denied_one_thirty_seconds_per_user_verb_and_path() -> None:
    clock = ManualClock(1000.0)
    api = API(access_answer(True), access_answer(False), access_answer(True), access_answer(True), access_answer(True),
              access_answer(False), access_answer(True))
    r = reviews(api, clock)
    alice, bob = User("alice"), User("bob")
    assert r.authorize(alice, "get", "/metrics")[0] and r.authorize(alice, "get", "/metrics")[0]
    assert not r.authorize(bob, "get", "/metrics")[0] and not r.authorize(bob, "get", "/metrics")[0]
    assert len(api.requests) == 2
    r.authorize(alice, "post", "/metrics")
    r.authorize(alice, "get", "/other")
    r.authorize(User("alice", "uid"), "get", "/metrics")
    assert len(api.requests) == 5, "the verb, the path and the whole user are the key"
    clock.now += 29.999
    assert not r.authorize(bob, "get", "/metrics")[0] and len(api.requests) == 5
    clock.now += 0.001
    assert not r.authorize(bob, "get", "/metrics")[0] and len(api.requests) == 6, "denied: asked again after 30 s"
    clock.now += 269.999  # 299.999 s after alice's answer
    assert r.authorize(alice, "get", "/metrics")[0] and len(api.requests) == 6
    clock.now += 0.001
    assert r.authorize(alice, "get", "/metrics")[0] and len(api.requests) == 7, "allowed: asked again after 300 s"


def test_an_access_decision_is_kept_for_the_whole_user_its_groups_and_extra_included() -> None:
    """Two tokens of one user name and uid may carry other groups or extra (an OIDC token minted before
    and after a change of groups): the SubjectAccessReview judged the user it was sent, so each is asked
    for, and one's answer is never the other's (k8s.io/apiserver's webhook authorizer keys its cache on
    the whole SubjectAccessReview spec)."""
    clock = ManualClock(1000.0)
    api = API(access_answer(True), access_answer(False), access_answer(False), access_answer(True))
    r = reviews(api, clock)
    readers = User("jane", "u-1", ("metrics-readers", AUTHENTICATED))
    assert r.authorize(readers, "get", "/metrics")[0]
    assert not r.authorize(User("jane", "u-1", (AUTHENTICATED,)), "get", "/metrics")[0], "other groups: asked again"
    scoped = User("jane", "u-1", ("metrics-readers", AUTHENTICATED), (("scopes", ("none",)),))
    assert not r.authorize(scoped, "get", "/metrics")[0], "other extra: asked again"
    assert r.authorize(User("jane", "u-1", ("metrics-readers", "admins", AUTHENTICATED)), "get", "/metrics")[0]
    assert [body["spec"]["groups"] for _, _, body, _ in api.requests] == [
        ["metrics-readers", AUTHENTICATED], [AUTHENTICATED], ["metrics-readers", AUTHENTICATED],
        ["metrics-readers", "admins", AUTHENTICATED]]
    assert r.authorize(readers, "get", "/metrics")[0] and len(api.requests) == 4, "the same user again: from the cache"


def test_the_ttls_given_are_the_ones_kept() -> None:
    clock = ManualClock(1000.0)
    api = API(token_answer(username="a"), token_answer(username="a"), access_answer(True), access_answer(True),
              access_answer(False), access_answer(False))
    r = reviews(api, clock, authn_ttl=5.0, allow_ttl=7.0, deny_ttl=3.0)
    r.authenticate("t")
    clock.now += 5.0
    r.authenticate("t")
    r.authorize(User("a"), "get", "/metrics")
    clock.now += 6.9
    r.authorize(User("a"), "get", "/metrics")
    clock.now += 0.1
    r.authorize(User("a"), "get", "/metrics")
    r.authorize(User("b"), "get", "/metrics")
    clock.now += 3.0
    r.authorize(User("b"), "get", "/metrics")
    assert [p for _, p, _, _ in api.requests] == [TOKEN_REVIEWS] * 2 + [ACCESS_REVIEWS] * 4


def test_the_caches_keep_at_most_max_entries_dropping_the_oldest_first() -> None:
    clock = ManualClock(1000.0)
    cache: TTLCache[int] = TTLCache(2, clock)
    cache.put("a", 1, 10.0)
    cache.put("b", 2, 10.0)
    cache.put("a", 3, 10.0)  # put again: now the newest
    cache.put("c", 4, 10.0)
    assert list(cache.entries) == ["a", "c"] and cache.get("b") == (False, None) and cache.get("a") == (True, 3)
    r = reviews(API(*(token_answer(username=str(n)) for n in range(5))), clock, max_entries=3)
    for n in range(5):
        r.authenticate(f"token-{n}")
    assert len(r.tokens.entries) == 3 and r.decisions.max_entries == 3
    assert cache.get("missing") == (False, None)


def test_tokens_not_in_the_cache_are_reviewed_at_a_bounded_rate_and_cached_ones_always() -> None:
    """Random tokens (issue 47: 1,500 of them made 1,488 TokenReviews): at most the burst, then
    ``review_rate`` a second; a token already reviewed is answered from the cache meanwhile."""
    from memcached_gitops.reconciler.client.reviews import RateLimited

    clock = ManualClock(1000.0)
    api = API(*[token_answer(False)] * 100)
    reviews = AccessReviews(api, clock=clock, review_rate=2.0, review_burst=5)  # type: ignore[arg-type]
    for i in range(5):
        assert reviews.authenticate(f"random-{i}") is None
    with pytest.raises(RateLimited):
        reviews.authenticate("random-5")
    assert reviews.authenticate("random-0") is None, "cached: no review needed"
    assert len(api.requests) == 5
    clock.now += 1.0  # two more permits
    reviews.authenticate("random-6")
    reviews.authenticate("random-7")
    with pytest.raises(RateLimited):
        reviews.authenticate("random-8")
    assert len(api.requests) == 7


def test_a_token_seen_valid_is_reviewed_again_however_many_strangers_spray_tokens() -> None:
    """Strangers' random tokens keep the bucket of new tokens empty; Prometheus's token, authenticated
    before, is reviewed again when its minute is up from a bucket of its own, not refused 429."""
    from memcached_gitops.reconciler.client.reviews import RateLimited

    clock = ManualClock(1000.0)
    api = API(token_answer(True, username="prometheus"), *[token_answer(False)] * 4, token_answer(True, username="prometheus"))
    reviews = AccessReviews(api, clock=clock, review_rate=0.001, review_burst=5)  # type: ignore[arg-type]
    assert reviews.authenticate("prometheus-token") is not None
    for i in range(4):
        reviews.authenticate(f"random-{i}")
    with pytest.raises(RateLimited):
        reviews.authenticate("random-4")
    clock.now += 61  # the token's answer expired; the new tokens' bucket is still empty
    with pytest.raises(RateLimited):
        reviews.authenticate("random-5")
    user = reviews.authenticate("prometheus-token")
    assert user is not None and user.name == "prometheus"
    assert sum(1 for r in api.requests if r[2]["spec"]["token"] == "prometheus-token") == 2


def test_a_token_refused_once_is_a_strangers_however_often_it_comes_back() -> None:
    """Only a token the API server authenticated is drawn from the known tokens' bucket: bad tokens sent
    again once their minute is up stay in the new tokens' bucket, so however many come back they never
    drain the one Prometheus's token is reviewed again from."""
    from memcached_gitops.reconciler.client.reviews import RateLimited

    clock = ManualClock(1000.0)
    api = API(token_answer(True, username="prometheus"), *[token_answer(False)] * 3, token_answer(True, username="prometheus"))
    reviews = AccessReviews(api, clock=clock, review_rate=0.02, review_burst=2)  # type: ignore[arg-type]  # one a 50 s
    assert reviews.authenticate("prometheus-token") is not None
    for i in range(3):  # one bad token now, one 50 s later, one 100 s later: each let in by the new tokens' bucket
        assert reviews.authenticate(f"bad-{i}") is None
        clock.now += 50
    clock.now -= 35  # 115 s on: bad-0's and bad-1's answers expired, and Prometheus's
    for i in range(2):
        with pytest.raises(RateLimited):
            reviews.authenticate(f"bad-{i}")
    user = reviews.authenticate("prometheus-token")
    assert user is not None and user.name == "prometheus"


def test_a_token_authenticated_again_stays_known_for_known_ttl_from_its_last_review() -> None:
    """Each time the API server authenticates a token again, it is remembered for ``known_ttl`` from then: Prometheus's
    token, re-reviewed every minute from the known tokens' bucket, never becomes a stranger's however long the process
    runs, so strangers spraying tokens never get its scrapes answered 429."""
    from memcached_gitops.reconciler.client.reviews import RateLimited

    clock = ManualClock(1000.0)
    api = API(token_answer(True, username="prometheus"), token_answer(False), *[token_answer(True, username="prometheus")] * 2)
    reviews = AccessReviews(api, clock=clock, review_rate=0.001, review_burst=2, known_ttl=100.0)  # type: ignore[arg-type]
    assert reviews.authenticate("prometheus-token") is not None
    assert reviews.authenticate("random-0") is None
    with pytest.raises(RateLimited):
        reviews.authenticate("random-1")  # the new tokens' bucket is empty from here on
    clock.now += 61  # 1061: its answer expired, it is known (until 1100): reviewed again from its own bucket
    assert reviews.authenticate("prometheus-token") is not None
    clock.now += 61  # 1122: past the first known_ttl, within the one its second review started
    user = reviews.authenticate("prometheus-token")
    assert user is not None and user.name == "prometheus"
    assert sum(1 for r in api.requests if r[2]["spec"]["token"] == "prometheus-token") == 3


@pytest.mark.parametrize("authn_ttl", [60.0, 5.0])
def test_a_refused_tokens_answer_is_kept_as_long_as_an_authenticated_ones(authn_ttl: float) -> None:
    """A TokenReview's answer is kept for one TTL whatever it said (controller-runtime's authentication CacheTTL): a
    token the API server refused is answered from the cache for ``authn_ttl``, not asked again sooner; the shorter
    ``deny_ttl`` is the authorizer's, for SubjectAccessReviews. A stranger re-sending a refused token costs one review
    a minute, not two."""
    clock = ManualClock(1000.0)
    api = API(token_answer(False), token_answer(False))
    r = reviews(api, clock, authn_ttl=authn_ttl)
    assert r.authenticate("refused") is None
    clock.now += authn_ttl - 0.001
    assert r.authenticate("refused") is None and len(api.requests) == 1
    clock.now += 0.001
    assert r.authenticate("refused") is None and len(api.requests) == 2


def test_a_review_the_api_server_fails_is_not_kept_and_still_spends_a_permit() -> None:
    """While the API server refuses our TokenReviews (403: no RBAC for them, or a 500), no answer is kept, so the same
    token is reviewed again next time, and each failed review spends its permit as an answered one does: the
    reviews sent stay within the bucket's rate however many scrapes (or strangers) keep coming."""
    from memcached_gitops.reconciler.client.api import APIError
    from memcached_gitops.reconciler.client.reviews import RateLimited

    clock = ManualClock(1000.0)
    api = API(*[APIError(403, "tokenreviews.authentication.k8s.io is forbidden")] * 3, APIError(500, "etcd"), token_answer(username="p"))
    r = reviews(api, clock, review_rate=1.0, review_burst=3)
    for _ in range(3):
        with pytest.raises(APIError):
            r.authenticate("prometheus-token")
    with pytest.raises(RateLimited):
        r.authenticate("prometheus-token")
    assert len(api.requests) == 3 and not r.tokens.entries and not r.known.entries
    clock.now += 1.0  # one permit more
    with pytest.raises(APIError):
        r.authenticate("another-token")
    with pytest.raises(RateLimited):
        r.authenticate("prometheus-token")
    clock.now += 1.0
    assert r.authenticate("prometheus-token") == User("p", "", (AUTHENTICATED,), ()) and len(api.requests) == 5


_steps = st.lists(st.sampled_from((0.0, 0.0, 0.1, 0.25, 0.5, 1.0, 3.0, 30.0)), min_size=1, max_size=40)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from((0.5, 2.0, 5.0)), st.sampled_from((1, 3, 20)), _steps)
def test_the_review_bucket_grants_at_most_its_burst_and_rate_in_any_window_and_all_of_its_burst_after_a_rest(
        rate: float, burst: int, steps: list[float]) -> None:
    """Whatever the spacing of the reviews asked for (at once, a little apart, after a long rest), the
    permits granted between any two asks are at most ``burst + rate * (time between them)``; and once the
    bucket has rested ``burst / rate`` seconds, ``burst`` asks at one instant are all granted."""
    from memcached_gitops.reconciler.client.reviews import TokenBucket

    clock = ManualClock(1000.0)
    bucket = TokenBucket(rate, burst, clock)
    granted: list[tuple[float, bool]] = []
    for step in steps:
        clock.now += step
        granted.append((clock.now, bucket.take()))
    for i, (start, _) in enumerate(granted):
        for end, _ in granted[i:]:
            within = sum(ok for t, ok in granted[i:] if t <= end)
            assert within <= burst + rate * (end - start) + 1e-9, (start, end, granted)
    clock.now += burst / rate + 1e-6  # (a microsecond more: the clock's floats are not exact)
    assert all(bucket.take() for _ in range(burst)), "rested: the whole burst is there again"
