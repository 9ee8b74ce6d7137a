"""What the fake answers where the transcripts record no exchange, read in kube-apiserver's source or
following a recorded rule past the values it was recorded with.

A write to a subresource (``/status``, ``/scale``) never creates the object: the CR's StatusREST.Update
passes ``forceAllowCreate=false`` to the store ("subresources should never allow create on update",
apiextensions-apiserver pkg/registry/customresource/etcd.go), and the store's Update answers NotFound
for a missing object before it decodes the patch (apiserver pkg/registry/generic/registry/store.go,
``Update``: ``!e.UpdateStrategy.AllowCreateOnUpdate() && !forceAllowCreate``). The body is the store's
NotFound, the one transcript 12 records for a GET of a missing Memcached.

A resourceVersion is opaque (API conventions, "Concurrency Control and Consistency"): a precondition
matches only the stored value, whatever the two look like as text.

A JSON patch that cannot apply is 422, whatever the reason (apiserver endpoints/handlers/patch.go).
"""

from __future__ import annotations

import json

import pytest

from fakeapi.server import FakeAPIServer
from tests.conftest import TRANSCRIPTS

CR = "/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}


def _recorded_not_found(name: str) -> dict:
    """Transcript 12's body for a missing Memcached, its name put in."""
    body = json.loads((TRANSCRIPTS / "12-error-bodies-404-422.json").read_text())["exchanges"][2]["response"]["body"]
    return json.loads(json.dumps(body).replace("does-not-exist", name))


@pytest.mark.parametrize(("headers", "query"), [(APPLY, "?fieldManager=memcached-gitops-status&force=true"), (MERGE, "")],
                         ids=["apply", "merge-patch"])
def test_a_status_write_to_a_missing_cr_is_not_found_and_creates_nothing(headers: dict[str, str], query: str) -> None:
    status = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "gone"},
              "status": {"nodes": ["x"]}}
    with FakeAPIServer(namespaces=("default",)) as api:
        code, _, data = api.handle("PATCH", f"{CR}/gone/status{query}", headers, json.dumps(status).encode())
        assert (code, json.loads(data)) == (404, _recorded_not_found("gone"))
        code, _, _ = api.handle("GET", f"{CR}/gone", {}, b"")
        assert code == 404, "nothing was created"


LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


@pytest.mark.parametrize("write", ["put", "merge-patch", "apply"])
@pytest.mark.parametrize("sent", ["stale", "future"])
def test_a_resource_version_is_an_opaque_value_matched_exactly_past_a_digit_boundary(write: str, sent: str) -> None:
    """A write that carries metadata.resourceVersion is refused 409 unless it is the stored one
    (transcript 13): the value is opaque, never ordered, so "996" is stale beside "1001" although it
    sorts after it as text, and "1002" is refused though it is newer."""
    with FakeAPIServer(namespaces=("default",)) as api:
        api.rv = 995
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
        code, _, data = api.handle("POST", LEASES, {"Content-Type": "application/json"}, json.dumps(lease).encode())
        assert code == 201, data
        first = json.loads(data)["metadata"]["resourceVersion"]
        for holder in "bcde":  # the stored version goes past 999
            code, _, data = api.handle("PATCH", f"{LEASES}/l", MERGE, json.dumps({"spec": {"holderIdentity": holder}}).encode())
            assert code == 200, data
        now = json.loads(data)["metadata"]["resourceVersion"]
        assert len(now) > len(first), (first, now)
        rv = first if sent == "stale" else str(int(now) + 1)
        stale = {**lease, "metadata": {"name": "l", "resourceVersion": rv}, "spec": {"holderIdentity": "z"}}
        method, path, headers = {"put": ("PUT", f"{LEASES}/l", {"Content-Type": "application/json"}),
                                 "merge-patch": ("PATCH", f"{LEASES}/l", MERGE),
                                 "apply": ("PATCH", f"{LEASES}/l?fieldManager=x&force=true", APPLY)}[write]
        code, _, data = api.handle(method, path, headers, json.dumps(stale).encode())
        assert (code, json.loads(data)["reason"]) == (409, "Conflict"), data


SERVICES = "/api/v1/namespaces/default/services"
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


@pytest.mark.parametrize("ops", [
    [{"op": "test", "path": "/spec/ports/5/port", "value": 1}],
    [{"op": "remove", "path": "/spec/ports/5"}],
    [{"op": "remove", "path": "/spec/ports/-1"}],
    [{"op": "add", "path": "/spec/ports/7", "value": {"port": 2}}],
    [{"op": "replace", "path": "/spec/nothere", "value": 1}],
    [{"op": "test", "path": "/spec/ports/0/port", "value": 1}, {"op": "remove", "path": "/spec/ports/0"}],
], ids=["test-past-the-end", "remove-past-the-end", "negative-index", "add-past-the-end", "replace-a-missing-key", "failed-test"])
def test_a_json_patch_that_cannot_apply_is_422_and_changes_nothing(ops: list[dict]) -> None:
    """kube-apiserver answers every JSON patch error 422 (patch.go ``applyJSPatch``:
    ``NewGenericServerResponse(http.StatusUnprocessableEntity, ...)``), the library's words as the one
    cause; the object stays as it was. The fake used to drop the connection on an index past the end."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    with FakeAPIServer(namespaces=("default",)) as api:
        code, _, data = api.handle("POST", SERVICES, {"Content-Type": "application/json"}, json.dumps(service).encode())
        assert code == 201, data
        before = json.loads(data)
        code, _, data = api.handle("PATCH", f"{SERVICES}/s", JSON_PATCH, json.dumps(ops).encode())
        answer = json.loads(data)
        assert (code, answer["reason"], answer["message"]) == (
            422, "Invalid", "the server rejected our request due to an error in our request"), answer
        [cause] = answer["details"]["causes"]
        assert cause["reason"] == "UnexpectedServerResponse" and any(op["path"] in cause["message"] for op in ops), cause
        assert api.get("", "services", "default", "s") == before


def _condition(reason: str) -> dict:
    return {"type": "Ready", "status": "False", "reason": reason, "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize("reason", ["Failed Create", "F" * 1025], ids=["pattern", "maxLength"])
def test_a_status_the_crds_schema_refuses_is_422_and_one_the_cr_already_had_is_let_through(reason: str) -> None:
    """The API server validates a CR's status against the CRD's schema on every write that carries it
    (a status write of a condition reason that is no metav1.Condition word is a 422 naming the field,
    and the stored status stays), while an invalid value the stored object already had is no error
    on update (CRD validation ratcheting, GA since v1.33). Beyond the transcripts: none records a 422
    of a status write (the body's form is transcript 12's); an assumption until recorded."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c"}, "spec": {"size": 1}}
    with FakeAPIServer(namespaces=("default",)) as api:
        code, _, _ = api.handle("POST", CR, {"Content-Type": "application/json"}, json.dumps(cr).encode())
        assert code == 201
        good = {**cr, "status": {"conditions": [_condition("Good")]}}
        code, _, _ = api.handle("PATCH", f"{CR}/c/status", MERGE, json.dumps(good).encode())
        assert code == 200
        bad = {**cr, "status": {"conditions": [_condition(reason)]}}
        code, _, data = api.handle("PATCH", f"{CR}/c/status", MERGE, json.dumps(bad).encode())
        body = json.loads(data)
        assert (code, body["reason"]) == (422, "Invalid"), body
        assert [c["field"] for c in body["details"]["causes"]] == ["status.conditions[0].reason"], body
        assert api.get("cache.example.com", "memcacheds", "default", "c")["status"]["conditions"][0]["reason"] == "Good"
        with api.lock:  # as a server stored it before the CRD had its bound
            api.objects[("cache.example.com", "memcacheds", "default", "c")]["status"]["conditions"][0]["reason"] = reason
        code, _, data = api.handle("PATCH", f"{CR}/c", MERGE, json.dumps({"spec": {"size": 2}}).encode())
        assert code == 200, data
        ratcheted = {**cr, "status": {"conditions": [_condition(reason)], "nodes": ["a"]}}
        code, _, data = api.handle("PATCH", f"{CR}/c/status", MERGE, json.dumps(ratcheted).encode())
        assert code == 200, data
