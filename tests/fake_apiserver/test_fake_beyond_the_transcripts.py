"""What the fake answers where no transcript records the exchange, read in kube-apiserver's source.

A write to a subresource (``/status``, ``/scale``) never creates the object: the CR's StatusREST.Update
passes ``forceAllowCreate=false`` to the store ("subresources should never allow create on update",
apiextensions-apiserver pkg/registry/customresource/etcd.go), and the store's Update answers NotFound
for a missing object before it decodes the patch (apiserver pkg/registry/generic/registry/store.go,
``Update``: ``!e.UpdateStrategy.AllowCreateOnUpdate() && !forceAllowCreate``). The body is the store's
NotFound, the one transcript 12 records for a GET of a missing Memcached.
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
