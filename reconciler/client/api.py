"""The one module that talks to the API server, through the official kubernetes client's HTTP stack.

It uses the client's configuration loading (kubeconfig, context, in-cluster service account),
authentication, TLS and connection pool, and sends raw requests so that the reconciler works on
plain dicts (no model classes to deserialize, which also keeps list calls cheap).

Failures that may pass (HTTP 429, 500 other than a schema error, 502, 503 and 504, connection
errors and timeouts) are retried with capped exponential backoff and full jitter. Every request is
counted by verb for the metrics and the benchmarks.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from memcached_gitops.foundation.backoff import doubled
from memcached_gitops.foundation.clocks import SYSTEM_CLOCK
from memcached_gitops.foundation.product import NAME, version

log = logging.getLogger("memcached_gitops.api")
#: Writes without a fieldManager (Events) are attributed to the User-Agent up to its first "/" (22).
USER_AGENT = f"{NAME}/{version()} (python kubernetes client)"


class APIError(Exception):
    """An answer the reconciler cannot use: ``status`` is the HTTP code (0: no answer at all)."""

    def __init__(self, status: int, message: str, body: Any = None) -> None:
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status, self.message, self.body = status, message, body

    @property
    def reason(self) -> str:
        return (self.body or {}).get("reason", "") if isinstance(self.body, dict) else ""


def is_not_found(exc: BaseException) -> bool:
    """The object (or its resource) does not exist: 404, as apimachinery's ``errors.IsNotFound``."""
    return isinstance(exc, APIError) and exc.status == 404


def is_conflict(exc: BaseException) -> bool:
    """Someone else wrote first: 409 (a resourceVersion that moved on, or a name already taken on a
    create: ``AlreadyExists``), as apimachinery's ``errors.IsConflict`` and ``IsAlreadyExists``."""
    return isinstance(exc, APIError) and exc.status == 409


def is_forbidden(exc: BaseException) -> bool:
    """Not allowed (RBAC): 403, as apimachinery's ``errors.IsForbidden``."""
    return isinstance(exc, APIError) and exc.status == 403


class WatchSilent(Exception):
    """A WATCH stream on which nothing, not even its close, arrived in time."""


class WatchDropped(Exception):
    """A WATCH that could not be opened, or whose connection broke."""


def _is_timeout(exc: BaseException) -> bool:
    import socket

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, (TimeoutError, socket.timeout)) or "timed out" in str(cause).lower():
            return True
        cause = cause.__cause__ or cause.__context__
    return False


@dataclass
class RetryPolicy:
    """Capped exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff And Jitter")."""

    attempts: int = 5
    base: float = 0.2
    cap: float = 5.0
    sleep: Any = time.sleep

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after:
            try:
                wait = float(retry_after)
            except ValueError:
                wait = -1.0
            # RFC 9110 delay-seconds are digits: a negative or NaN wait (a proxy's, never an API server's) is
            # not one time.sleep takes (ValueError), so it leaves the jitter as a header that is no number does
            if wait >= 0:
                return min(wait, self.cap * 4)
        return random.uniform(0, doubled(self.base, attempt, self.cap))


def _transient(status: int, body: Any) -> bool:
    if status == 429 or status in (502, 503, 504):
        return True
    if status == 500:
        message = body.get("message", "") if isinstance(body, dict) else str(body)
        return "field not declared in schema" not in message  # a schema mismatch will not pass
    return False


#: Idle connections kept open to the API server: one for each thread that may hold one at once (up to
#: 64 workers, 16 companion writes beside them, a watch per informer and namespace, the Lease, the
#: reviews). The kubernetes client keeps ``cpu_count * 5`` (10 on two cores) and urllib3 closes each
#: connection given back past that, so that the next request pays a new TLS handshake
#: (tests/reconciler/client/test_connections.py). Only connections in use are ever opened.
KEPT_CONNECTIONS = 128


def kubeconfig_list_context(kubeconfig_env: str) -> str | None:
    """The current-context of a $KUBECONFIG list as kubectl reads it: the first file that sets a
    non-empty one decides (client-go's loading rules, tools/clientcmd/loader.go, merge the files'
    non-map fields from the last to the first, never over a value with an empty one). The kubernetes
    Python client lets each later file overwrite it, even with "" (config/kube_config.py,
    KubeConfigMerger.load_config), and would talk to another cluster than kubectl. None for a single
    file, or when no file sets one: the client's own reading is then kubectl's."""
    import yaml

    paths = [p for p in kubeconfig_env.split(os.pathsep) if p]
    if len(paths) < 2:
        return None
    for path in paths:
        try:
            with open(os.path.expanduser(path), encoding="utf-8") as file:
                document = yaml.safe_load(file)
        except (OSError, yaml.YAMLError):
            continue  # a missing or unreadable entry is skipped, as client-go skips it
        current = document.get("current-context") if isinstance(document, dict) else None
        if isinstance(current, str) and current:
            return current
    return None


@dataclass
class KubeAPI:
    """Raw JSON requests over a kubernetes.client.ApiClient."""

    client: Any  # kubernetes.client.ApiClient
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 30.0
    requests: Counter[str] = field(default_factory=Counter)  # by verb
    #: client-go's rest_client_requests_total: every attempt by (code, method, host), the code "<error>"
    #: when no answer came (k8s.io/client-go rest/request.go ``sanitize``, rest/with_retry.go ``After``)
    results: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    stop: threading.Event | None = None
    #: The manager of writes without a fieldManager is the part before the first "/" (transcript 22),
    #: so a replica may add its identity after it and stay the same manager.
    user_agent: str = USER_AGENT
    #: When set and False, every write is refused here, before it is sent: a replica that is not
    #: (or no longer) the leader never writes, whatever a worker was doing.
    may_write: Any = None

    @classmethod
    def connect(cls, kubeconfig: str | None = None, context: str | None = None, host: str | None = None,
                **kwargs: Any) -> KubeAPI:
        """Configuration as kubectl finds it: --kubeconfig / $KUBECONFIG / ~/.kube/config, else in-cluster."""
        from kubernetes import client, config

        configuration = client.Configuration()
        if host:
            configuration.host = host
        else:
            if kubeconfig is None and context is None:
                context = kubeconfig_list_context(os.environ.get("KUBECONFIG", ""))
            try:
                config.load_kube_config(  # type: ignore[no-untyped-call]  # the kubernetes client's loaders are unannotated
                    config_file=kubeconfig, context=context, client_configuration=configuration)
            except Exception:  # no kubeconfig: we are a pod, or nothing is configured
                if kubeconfig or context:
                    raise
                config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]  # as above
        configuration.retries = False  # retries are ours, with jitter and Retry-After
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, KEPT_CONNECTIONS)
        return cls(client=client.ApiClient(configuration), **kwargs)

    def request(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
                content_type: str = "application/json", verb: str | None = None, accept: str | None = None) -> Any:
        """One request, retried while the failure may pass; returns the decoded JSON body."""
        url = self.client.configuration.host.rstrip("/") + path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": accept or "application/json", "Content-Type": content_type, "User-Agent": self.user_agent}
        self.client.update_params_for_auth(headers, None, ["BearerToken"], path, method, body)
        # The client serializes JSON bodies itself; an apply body (JSON is YAML) is sent as text.
        data = json.dumps(body) if isinstance(body, (dict, list)) and not content_type.endswith("json") else body
        verb = verb or method.lower()
        def stopped() -> bool:  # a write only while this replica leads (or holds the CR's shard)
            return method != "GET" and self.may_write is not None and not self.may_write()

        for attempt in range(self.retry.attempts):
            if stopped():  # before every attempt: the Lease can be lost while a retry waits out its backoff
                raise APIError(0, "writes are stopped: not the leader, or not this replica's CR")
            self.requests[verb] += 1
            status, payload, retry_after = self._send(method, url, headers, data)
            self.count_result(status, method)
            if 200 <= status < 300:
                return payload
            if status and not _transient(status, payload):
                message = payload.get("message", "") if isinstance(payload, dict) else str(payload)[:200]
                raise APIError(status, message, payload)
            if attempt + 1 == self.retry.attempts or (self.stop is not None and self.stop.is_set()) or stopped():
                message = payload.get("message", "") if isinstance(payload, dict) else str(payload)[:200]
                raise APIError(status, message or "no answer", payload)
            delay = self.retry.delay(attempt, retry_after)
            log.warning("retrying %s %s after %s in %.2fs", method, path, status or "connection error", delay)
            self.retry.sleep(delay)
        raise AssertionError("unreachable")

    def count_result(self, status: int, method: str) -> None:
        """One attempt's answer, as client-go counts it: the status code, or ``<error>`` without one."""
        host = urlsplit(self.client.configuration.host).netloc or "none"
        self.results[(str(status) if status else "<error>", method, host)] += 1

    def _send(self, method: str, url: str, headers: dict[str, str], data: Any) -> tuple[int, Any, str | None]:
        try:
            response = self.client.rest_client.request(method, url, headers=dict(headers), body=data,
                                                       _request_timeout=self.timeout)
            raw = response.read()
        except Exception as exc:  # urllib3 connection errors and timeouts, wrapped or not
            log.debug("request failed: %s", exc)
            return 0, str(exc), None
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")
        return response.status, payload, response.headers.get("Retry-After")

    # ---- typed helpers
    def list_all(self, path: str, label_selector: str | None = None, limit: int = 500) -> Iterator[dict[str, Any]]:
        """Every item of a collection, page by page (limit/continue)."""
        for page in self.list_pages(path, label_selector, limit):
            yield from page.get("items") or []

    def list_pages(self, path: str, label_selector: str | None = None, limit: int = 500,
                   accept: str | None = None) -> Iterator[dict[str, Any]]:
        """The pages of a LIST; all share the first page's resourceVersion (transcript 11)."""
        query: dict[str, Any] = {"limit": limit}
        if label_selector:
            query["labelSelector"] = label_selector
        while True:
            page = self.request("GET", path, query, verb="list", accept=accept)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            query["continue"] = token

    def watch(self, path: str, query: dict[str, Any], read_timeout: float, accept: str | None = None,
              opened: Callable[[], None] | None = None) -> Iterator[tuple[dict[str, Any], float]]:
        """One WATCH: each event (one JSON object a line, transcripts 30-33) with the monotonic time it was read.

        Returns when the server closes the stream (at ``timeoutSeconds``). Raises APIError for an
        HTTP error answer (400, 404: a plain Status, transcript 32), ``WatchSilent`` when nothing
        arrived for ``read_timeout`` seconds and ``WatchDropped`` when the connection broke.
        ``opened`` is called when the server has answered 200: the stream is open (it may stay quiet).
        """
        url = self.client.configuration.host.rstrip("/") + path + "?" + urlencode({**query, "watch": "true"})
        headers = {"Accept": accept or "application/json", "User-Agent": self.user_agent}
        self.client.update_params_for_auth(headers, None, ["BearerToken"], path, "GET", None)
        self.requests["watch"] += 1
        try:
            response = self.client.rest_client.request("GET", url, headers=headers,
                                                       _request_timeout=(self.timeout, read_timeout)).response
        except Exception as exc:  # connection refused, reset, timeout
            self.count_result(0, "GET")
            raise WatchDropped(str(exc)) from exc
        self.count_result(response.status, "GET")
        try:
            if response.status != 200:
                raw = response.data
                try:
                    payload = json.loads(raw) if raw else None
                except ValueError:
                    payload = raw.decode(errors="replace")
                message = payload.get("message", "") if isinstance(payload, dict) else str(payload)[:200]
                raise APIError(response.status, message, payload)
            if opened is not None:
                opened()
            buffer = bytearray()
            while True:
                try:
                    chunk = response.read1(1 << 16)
                except Exception as exc:
                    if _is_timeout(exc):
                        raise WatchSilent(f"no data for {read_timeout:g}s") from exc
                    raise WatchDropped(str(exc)) from exc
                if not chunk:
                    return
                buffer += chunk
                start = 0
                while (end := buffer.find(b"\n", start)) >= 0:
                    line = bytes(buffer[start:end]).strip()
                    start = end + 1
                    if line:
                        yield json.loads(line), SYSTEM_CLOCK.monotonic().seconds
                del buffer[:start]
        finally:
            response.close()

    def apply(self, path: str, obj: dict[str, Any], field_manager: str, dry_run: bool = False) -> dict[str, Any]:
        """Server-side apply (application/apply-patch+yaml; JSON is YAML) with force."""
        query = {"fieldManager": field_manager, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        applied: dict[str, Any] = self.request("PATCH", path, query, obj, content_type="application/apply-patch+yaml", verb="apply")
        return applied


def collection_path(group: str, version: str, plural: str, namespace: str | None = None) -> str:
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    return f"{base}/namespaces/{quote(namespace)}/{plural}" if namespace else f"{base}/{plural}"


def object_path(group: str, version: str, plural: str, namespace: str, name: str, sub: str = "") -> str:
    return collection_path(group, version, plural, namespace) + f"/{quote(name)}" + (f"/{sub}" if sub else "")
