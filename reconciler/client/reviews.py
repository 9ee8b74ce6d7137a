"""Who sent a request, and may they read it: the API server's TokenReview and SubjectAccessReview,
asked as controller-runtime's secure metrics filter asks them (pkg/metrics/filters/filters.go), so a
Prometheus that scrapes a kubebuilder operator scrapes us with the same ServiceAccount and ClusterRole.

- A bearer token is authenticated by a TokenReview (no audiences: the API server's own); the answer,
  authenticated or not, is kept for ``authn_ttl`` (controller-runtime: CacheTTL one minute).
- The user (with ``system:authenticated`` among its groups) is authorized by a SubjectAccessReview
  of a non-resource request (the path, and the HTTP method in lower case as the verb); an allowed
  answer is kept for ``allow_ttl`` (five minutes), a denied one for ``deny_ttl`` (thirty seconds),
  as DelegatingAuthorizerConfig's AllowCacheTTL and DenyCacheTTL.
- Both caches keep at most ``max_entries`` answers, oldest out first, so a client sending a new
  token per request cannot grow memory; tokens are kept only as their SHA-256.
- A token not in the cache is reviewed only while a token bucket allows (``review_rate`` a second,
  ``review_burst`` at once): a stranger sending random tokens would otherwise make us send the API
  server a TokenReview each (issue 47 measured 119 a second). Past it, RateLimited, answered 429.
  A Prometheus whose token is cached is not concerned; its first scrape in a flood may be refused
  until a review is allowed again. A token once authenticated is remembered (its hash, ``known_ttl``,
  an hour) and reviewed again, when its answer expires, from a bucket of its own: strangers spraying
  tokens keep the first bucket empty, never the second, so Prometheus's minutely re-review passes.
- A SubjectAccessReview is made per user, verb and path; the server asks only of the paths it
  serves (serving.py), so a valid token cannot make one per request by varying the path.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from memcached_gitops.foundation.clocks import monotonic_seconds

from .api import KubeAPI

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
#: k8s.io/apiserver's AuthenticatedGroupAdder adds it to every authenticated user that lacks it.
AUTHENTICATED = "system:authenticated"

V = TypeVar("V")


@dataclass(frozen=True)
class User:
    """user.Info as a TokenReview's status.user gives it."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_review(cls, user: dict[str, Any]) -> User:
        extra = user.get("extra") or {}
        groups = tuple(user.get("groups") or ())
        return cls(str(user.get("username", "")), str(user.get("uid", "")),
                   groups if AUTHENTICATED in groups else groups + (AUTHENTICATED,),
                   tuple(sorted((str(k), tuple(v or ())) for k, v in extra.items())))


@dataclass
class TTLCache(Generic[V]):
    """Answers kept until their deadline, at most ``max_entries`` of them (the oldest goes first)."""

    max_entries: int
    clock: Callable[[], float]
    entries: OrderedDict[Any, tuple[float, V]] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: Any) -> tuple[bool, V | None]:
        with self.lock:
            hit = self.entries.get(key)
            if hit is None or hit[0] <= self.clock():
                return False, None
            return True, hit[1]

    def put(self, key: Any, value: V, ttl: float) -> None:
        with self.lock:
            self.entries.pop(key, None)
            self.entries[key] = (self.clock() + ttl, value)
            while len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)


class RateLimited(Exception):
    """Too many tokens not in the cache to review now."""


@dataclass
class TokenBucket:
    """``rate`` permits a second, at most ``burst`` saved up; ``take`` spends one if there is one."""

    rate: float
    burst: float
    clock: Callable[[], float]
    lock: threading.Lock = field(default_factory=threading.Lock)
    level: float = field(init=False)
    stamp: float = field(init=False)

    def __post_init__(self) -> None:
        self.level, self.stamp = self.burst, self.clock()

    def take(self) -> bool:
        with self.lock:
            now = self.clock()
            self.level = min(self.burst, self.level + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.level < 1:
                return False
            self.level -= 1
            return True


class AccessReviews:
    """Authenticate a bearer token and authorize a non-resource request, through the API server."""

    def __init__(self, api: KubeAPI, *, authn_ttl: float = 60.0, allow_ttl: float = 300.0, deny_ttl: float = 30.0,
                 max_entries: int = 1024, review_rate: float = 5.0, review_burst: float = 20.0,
                 known_ttl: float = 3600.0, clock: Callable[[], float] = monotonic_seconds) -> None:
        self.api = api
        self.new_tokens = TokenBucket(review_rate, review_burst, clock)
        self.known_tokens = TokenBucket(review_rate, review_burst, clock)
        self.known: TTLCache[bool] = TTLCache(max_entries, clock)
        self.known_ttl = known_ttl
        self.authn_ttl, self.allow_ttl, self.deny_ttl = authn_ttl, allow_ttl, deny_ttl
        self.tokens: TTLCache[User | None] = TTLCache(max_entries, clock)
        self.decisions: TTLCache[tuple[bool, str]] = TTLCache(max_entries, clock)

    def authenticate(self, token: str) -> User | None:
        """The token's user, or None when the API server says it is not authenticated.
        Raises APIError when the API server could not be asked (we may not create TokenReviews),
        RateLimited when too many tokens not in the cache came in too short a time."""
        key = hashlib.sha256(token.encode()).digest()
        found, user = self.tokens.get(key)
        if found:
            return user
        bucket = self.known_tokens if self.known.get(key)[0] else self.new_tokens
        if not bucket.take():
            raise RateLimited("too many tokens to review")
        review = self.api.request("POST", TOKEN_REVIEWS, body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}, verb="tokenreview")
        status = (review or {}).get("status") or {}
        user = User.from_review(status.get("user") or {}) if status.get("authenticated") is True else None
        self.tokens.put(key, user, self.authn_ttl)
        if user is not None:
            self.known.put(key, True, self.known_ttl)
        return user

    def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` the non-resource ``path``, and the API server's reason.
        Raises APIError when the API server could not be asked."""
        key = (user, verb, path)
        found, decision = self.decisions.get(key)
        if found and decision is not None:
            return decision
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "nonResourceAttributes": {"path": path, "verb": verb}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = self.api.request("POST", ACCESS_REVIEWS, body={
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}, verb="subjectaccessreview")
        status = (review or {}).get("status") or {}
        decision = (status.get("allowed") is True and status.get("denied") is not True, str(status.get("reason", "")))
        self.decisions.put(key, decision, self.allow_ttl if decision[0] else self.deny_ttl)
        return decision
