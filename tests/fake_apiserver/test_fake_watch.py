"""WATCH in the fake API server, and its faults, seen by a raw HTTP client.

The replay of transcripts 30-33 (test_fake_apiserver_replay.py) checks the recorded behaviour
exchange by exchange; these tests check what the recordings leave to the fake: the size of the
history (the 410 window), metadata-only views, watches across namespaces, and the injected faults
that a controller's watch loop must survive.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from fakeapi.server import DeploymentController, FakeAPIServer, Fault

NS = "default"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
MEMCACHEDS = "/apis/cache.example.com/v1alpha1"
PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def request(api: FakeAPIServer, method: str, path: str, body: Any = None, ctype: str = "application/json",
            accept: str = "application/json") -> tuple[int, Any]:
    url = urlsplit(api.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
    conn.request(method, path, body=data, headers={"Content-Type": ctype, "Accept": accept})
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    return resp.status, json.loads(raw) if raw.startswith(b"{") else raw.decode()


def apply_deployment(api: FakeAPIServer, name: str, labels: dict[str, str] | None = None, ns: str = NS) -> dict[str, Any]:
    labels = labels or {"app.kubernetes.io/managed-by": "memcached-gitops"}
    template = {"metadata": {"labels": {"app": name, **labels}}, "spec": {"containers": [{"name": "c", "image": "memcached:1.6"}]}}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns, "labels": labels},
           "spec": {"selector": {"matchLabels": {"app": name}}, "template": template}}
    status, body = request(api, "PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}?fieldManager=t&force=true",
                           json.dumps(doc), "application/apply-patch+yaml")
    assert status in (200, 201), body
    return body


def scale(api: FakeAPIServer, name: str, replicas: int) -> dict[str, Any]:
    status, body = request(api, "PATCH", f"{DEPLOYMENTS}/{name}/scale", {"spec": {"replicas": replicas}}, "application/merge-patch+json")
    assert status == 200, body
    return body


class RawWatch:
    """A WATCH read line by line in a thread; ``end`` is "closed" (final chunk) or "cut"."""

    def __init__(self, api: FakeAPIServer, path: str, accept: str = "application/json") -> None:
        url = urlsplit(api.url)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        self.conn.request("GET", path, headers={"Accept": accept})
        self.resp = self.conn.getresponse()
        self.events: list[dict[str, Any]] = []
        self.end: str | None = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        # read1 rather than readline: http.client's readline turns a cut chunked stream into an
        # ordinary end, where urllib3 (the kubernetes client) reports "Response ended prematurely"
        buffer = b""
        try:
            while chunk := self.resp.read1(65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                self.events += [json.loads(line) for line in lines]
            self.end = "closed"
        except (http.client.IncompleteRead, ConnectionError, OSError):
            self.end = "cut"

    def wait_for(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.events

    def join(self, timeout: float = 10.0) -> str | None:
        self.thread.join(timeout)
        self.conn.close()
        return self.end


@pytest.fixture
def api():
    with FakeAPIServer(namespaces=(NS, "other")) as fake:
        yield fake


def test_resuming_before_the_window_is_a_410_error_event_then_the_close() -> None:
    """32: HTTP 200, one ERROR event with a 410 Status naming the requested and the oldest-1
    resourceVersion, then the stream ends at once. The window is the fake's ``watch_window``."""
    with FakeAPIServer(namespaces=(NS,), watch_window=2) as api:
        created = int(apply_deployment(api, "a")["metadata"]["resourceVersion"])
        rvs = [int(scale(api, "a", n)["metadata"]["resourceVersion"]) for n in (2, 3, 4)]
        # the window holds the last two changes (rvs[1], rvs[2]): the oldest deliverable is rvs[1]
        old = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={created}&timeoutSeconds=5")
        assert old.resp.status == 200 and old.resp.getheader("Content-Type") == "application/json"
        assert old.join(3) == "closed"
        assert old.events == [{"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"too old resource version: {created} ({rvs[1] - 1})", "reason": "Expired", "code": 410}}]
        inside = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rvs[0]}&timeoutSeconds=1")
        assert inside.join(3) == "closed"
        assert [(e["type"], e["object"]["spec"]["replicas"]) for e in inside.events] == [("MODIFIED", 3), ("MODIFIED", 4)]


def test_compact_turns_every_earlier_resource_version_into_a_410(api: FakeAPIServer) -> None:
    listed = request(api, "GET", DEPLOYMENTS)[1]["metadata"]["resourceVersion"]
    apply_deployment(api, "a")
    api.compact()
    old = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={listed}&timeoutSeconds=5")
    assert old.join(3) == "closed" and old.events[0]["object"]["code"] == 410
    fresh = request(api, "GET", DEPLOYMENTS)[1]["metadata"]["resourceVersion"]  # the cure: a new LIST (32)
    new = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={fresh}&timeoutSeconds=1")
    scale(api, "a", 2)
    assert [e["type"] for e in new.wait_for(1)] == ["MODIFIED"]
    new.join()


def test_memcacheds_across_all_namespaces_and_in_one(api: FakeAPIServer) -> None:
    rv = request(api, "GET", f"{MEMCACHEDS}/memcacheds")[1]["metadata"]["resourceVersion"]
    everywhere = RawWatch(api, f"{MEMCACHEDS}/memcacheds?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    one = RawWatch(api, f"{MEMCACHEDS}/namespaces/other/memcacheds?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    for ns in (NS, "other"):
        cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"}, "spec": {"size": 1}}
        assert request(api, "POST", f"{MEMCACHEDS}/namespaces/{ns}/memcacheds", cr)[0] == 201
    assert everywhere.join() == "closed" and one.join() == "closed"
    assert [(e["type"], e["object"]["metadata"]["namespace"]) for e in everywhere.events] == [("ADDED", NS), ("ADDED", "other")]
    assert [(e["type"], e["object"]["metadata"]["namespace"]) for e in one.events] == [("ADDED", "other")]
    assert all(e["object"]["kind"] == "Memcached" for e in everywhere.events)


def test_a_watch_without_resource_version_starts_with_the_current_objects(api: FakeAPIServer) -> None:
    """API Concepts: an unset resourceVersion starts with a synthetic ADDED per object, then changes."""
    apply_deployment(api, "a")
    apply_deployment(api, "b", {"team": "x"})
    watch = RawWatch(api, f"{DEPLOYMENTS}?watch=true&labelSelector=app.kubernetes.io/managed-by%3Dmemcached-gitops&timeoutSeconds=1")
    watch.wait_for(1)
    scale(api, "a", 2)
    watch.join()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in watch.events] == [("ADDED", "a"), ("MODIFIED", "a")]


def test_pods_as_metadata_only_by_label_selector(api: FakeAPIServer) -> None:
    """The Accept header chooses PartialObjectMetadata for a LIST and for a WATCH (no transcript
    records it; upstream's metadata client sends these media types)."""
    apply_deployment(api, "a")
    DeploymentController(api).sync()
    status, listed = request(api, "GET", f"/api/v1/namespaces/{NS}/pods?labelSelector=app%3Da", accept=PARTIAL_LIST)
    assert status == 200 and listed["kind"] == "PartialObjectMetadataList" and listed["apiVersion"] == "meta.k8s.io/v1"
    assert [set(i) for i in listed["items"]] == [{"kind", "apiVersion", "metadata"}]
    assert listed["items"][0]["kind"] == "PartialObjectMetadata" and listed["items"][0]["metadata"]["labels"]["app"] == "a"
    rv = listed["metadata"]["resourceVersion"]
    watch = RawWatch(api, f"/api/v1/namespaces/{NS}/pods?watch=true&labelSelector=app%3Da&resourceVersion={rv}"
                          "&allowWatchBookmarks=true&timeoutSeconds=3", accept=PARTIAL)
    pod = listed["items"][0]["metadata"]["name"]
    assert request(api, "DELETE", f"/api/v1/namespaces/{NS}/pods/{pod}")[0] == 200
    assert watch.join() == "closed"
    assert [e["type"] for e in watch.events] == ["DELETED", "BOOKMARK"]
    assert all(set(e["object"]) == {"kind", "apiVersion", "metadata"} and e["object"]["kind"] == "PartialObjectMetadata"
               for e in watch.events)


def test_a_malformed_selector_is_a_400_for_list_and_watch(api: FakeAPIServer) -> None:
    message = "unable to parse requirement: found '', expected: ',', ')' or identifier"  # 32
    for query in ("labelSelector=a+in+(", "watch=true&labelSelector=a+in+("):
        status, body = request(api, "GET", f"{DEPLOYMENTS}?{query}")
        assert (status, body["reason"], body["message"]) == (400, "BadRequest", message)
    apply_deployment(api, "a", {"tier": "x"})
    assert [i["metadata"]["name"] for i in request(api, "GET", f"{DEPLOYMENTS}?labelSelector=tier+in+(x,y)")[1]["items"]] == ["a"]
    assert request(api, "GET", f"{DEPLOYMENTS}?labelSelector=tier+notin+(x)")[1]["items"] == []


# ---- faults


def test_drop_watches_cuts_open_streams_mid_stream(api: FakeAPIServer) -> None:
    apply_deployment(api, "a")
    watch = RawWatch(api, f"{DEPLOYMENTS}?watch=true&timeoutSeconds=30")
    assert len(watch.wait_for(1)) == 1
    other = RawWatch(api, f"{MEMCACHEDS}/memcacheds?watch=true&timeoutSeconds=1")
    assert api.drop_watches("/deployments") == 1
    assert watch.join(3) == "cut"
    assert other.join() == "closed"  # only the matching streams are cut


def test_silenced_watches_hang_open_sending_nothing_until_cut(api: FakeAPIServer) -> None:
    rv = apply_deployment(api, "a")["metadata"]["resourceVersion"]
    watch = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3")
    assert api.silence_watches() == 1
    scale(api, "a", 2)
    resumed = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&timeoutSeconds=1")  # a new watch works
    assert resumed.join() == "closed" and [e["type"] for e in resumed.events] == ["MODIFIED"]
    time.sleep(2.5)  # past the BOOKMARK (1 s) and the close (3 s) a live stream would have sent
    assert watch.events == [] and watch.thread.is_alive()
    assert api.drop_watches() == 1
    assert watch.join(3) == "cut" and watch.events == []


def test_watch_faults_for_new_watches(api: FakeAPIServer) -> None:
    rv = apply_deployment(api, "a")["metadata"]["resourceVersion"]
    api.faults += [Fault(path_contains="/deployments", watch="expired"), Fault(path_contains="/deployments", watch="drop"),
                   Fault(path_contains="/deployments", watch="silent")]
    assert request(api, "GET", DEPLOYMENTS)[0] == 200  # a LIST is not a WATCH: untouched
    expired = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&timeoutSeconds=5")
    assert expired.join(3) == "closed" and [e["object"]["code"] for e in expired.events] == [410]
    dropped = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&timeoutSeconds=5")
    assert dropped.resp.status == 200 and dropped.join(3) == "cut"
    silent = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    scale(api, "a", 2)
    time.sleep(1.5)
    assert silent.events == [] and silent.thread.is_alive()  # past its timeoutSeconds, still open
    api.drop_watches()
    assert silent.join(3) == "cut"
    normal = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert normal.join() == "closed" and [e["type"] for e in normal.events] == ["MODIFIED"]


def test_restart_cuts_watches_refuses_connections_then_serves_with_a_fresh_history(api: FakeAPIServer) -> None:
    rv = apply_deployment(api, "a")["metadata"]["resourceVersion"]
    watch = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&timeoutSeconds=30")
    scale(api, "a", 2)
    watch.wait_for(1)
    api.restart(downtime=0.5)
    assert watch.join(3) == "cut"
    with pytest.raises(ConnectionRefusedError):
        request(api, "GET", DEPLOYMENTS)
    time.sleep(0.8)
    status, listed = request(api, "GET", DEPLOYMENTS)
    assert status == 200 and listed["items"][0]["spec"]["replicas"] == 2  # objects survive
    old = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={rv}&timeoutSeconds=5")
    assert old.join(3) == "closed" and old.events[0]["object"]["code"] == 410  # as after the restart in 32
    new = RawWatch(api, f"{DEPLOYMENTS}?watch=true&resourceVersion={listed['metadata']['resourceVersion']}&timeoutSeconds=1")
    scale(api, "a", 3)
    assert new.join() == "closed" and [e["type"] for e in new.events] == ["MODIFIED"]


def test_the_request_log_stamps_each_request_when_it_arrives(api: FakeAPIServer) -> None:
    """As the audit log does: a write held up inside the server keeps its arrival time, so the
    latency from a client's write to the controller's answer is ``answer.received - write.received``."""
    apply_deployment(api, "a")
    api.faults.append(Fault(method="PATCH", path_contains="/scale", status=0, delay=0.5))
    api.reset_log()
    sent_mono, sent_wall = time.monotonic(), time.time()
    scale(api, "a", 3)
    answered = time.monotonic()
    apply_deployment(api, "a")  # the "controller's" correcting write
    scaled, corrected = api.log
    assert sent_mono <= scaled.received < answered - 0.4  # stamped before the 0.5 s spent inside
    assert sent_wall - 1 < scaled.received_at < sent_wall + 0.4
    assert corrected.received - scaled.received >= 0.5


@pytest.mark.parametrize("flag", ["true", "True", "1"])
def test_rbac_reads_a_watch_as_routing_does(flag: str) -> None:
    """The Python client sends watch=True (Go's ParseBool reads it): RBAC must check the verb watch, not list."""
    with FakeAPIServer(rbac_rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]) as api:
        code, _, body = api.handle("GET", f"/api/v1/namespaces/default/pods?watch={flag}", {"User-Agent": "t"}, b"")
        assert code == 403 and b"cannot watch resource" in body
        assert api.authorized_requests == [("", "pods", "watch")]
