"""Record transcript 44: the rules the fake API server learnt for a person's kubectl edits (issue 50), so
that they are checked against a real kube-apiserver rather than assumed:

- a Service port replaced with ``kubectl patch --type=json`` (ports are keyed by port and protocol), and
  our forced apply then: ``422 spec.ports[1].name: Duplicate value``;
- a JSON patch that replaces ``metadata.managedFields`` (Flux's ssa.PatchReplaceFieldsManagers, guarded
  by a ``test`` of the resourceVersion): the entries are the request's, and our apply then removes the
  person's port;
- kubectl edit's two-way strategic merge patch of a port whose key changes (the new item and
  ``$patch: delete`` of the old);
- the Go operator's finalizer on a deleted Memcached, removed by the guide's JSON patch: the CR goes.

    python -m tests.record_kubectl_edits KUBECONFIG    # writes tests/fixtures/apiserver-transcripts/44-*.json

Sent as tests/record_companions.py sends. Opt-in, never in CI: it needs a disposable cluster. Until it
is recorded, fakeapi/ follows these rules from the documentation (see the docstrings of verbs.py,
storage.py and admission.py, which say so).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from memcached_gitops.reconciler.client.api import KubeAPI
from memcached_gitops.reconciler.decisions.revoke import revocation
from memcached_gitops.render import render

from tests.record_companions import APPLY, CREATE, FORCED, KUBECTL_UA, MERGE, PYTHON_UA, _ex, _fill, _uses
from tests.record_transcript import send

HERE = Path(__file__).parent / "fixtures" / "apiserver-transcripts"
STEM = "44-kubectl-edits-and-managedfields"
NS = "tx44-kubectl-edits"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
PATCHER = {"fieldManager": "kubectl-patch"}


def scenario(ns: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "mc", "namespace": ns},
          "spec": {"size": 2}}
    service = next(o for o in render(cr) if o["kind"] == "Service")
    service["metadata"]["ownerReferences"] = [{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "mc",
                                               "uid": "{uid:1}", "controller": True, "blockOwnerDeletion": True}]
    svc = f"/api/v1/namespaces/{ns}/services/{service['metadata']['name']}"
    cr_path = f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds/mc"
    edit = {"spec": {"$setElementOrder/ports": [{"port": 11300}],
                     "ports": [{"name": "memcached", "port": 11300, "protocol": "TCP", "targetPort": "memcached"},
                               {"$patch": "delete", "port": 11211}]}}
    guide = [{"op": "test", "path": "/metadata/finalizers/0", "value": "cache.example.com/finalizer"},
             {"op": "remove", "path": "/metadata/finalizers/0"}]
    meta = {"title": "A person's kubectl edits of the Service, managedFields replaced by a JSON patch, a finalizer removed",
            "what_it_shows": "see the observations", "namespace": ns,
            "recorded_from": "kube-apiserver v1.36.2 with kube-controller-manager v1.36.2, the CRD of transcript 00"}
    return meta, [
        _ex("setup: a fresh namespace", "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            ua=PYTHON_UA, setup=True),
        _ex("the Memcached (kubectl create -f)", "POST", f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds", cr, CREATE,
            ua=KUBECTL_UA),
        _ex("our apply of the rendered headless Service", "PATCH", svc, json.dumps(service), FORCED, ctype=APPLY),
        _ex("kubectl patch --type=json: the port 11211 replaced by 11299", "PATCH", svc,
            [{"op": "replace", "path": "/spec/ports/0/port", "value": 11299}], PATCHER, ua=KUBECTL_UA, ctype=JSON_PATCH),
        _ex("GET the Service: who owns which port now", "GET", svc),
        _ex("our forced apply as it was: ours beside theirs, one name twice", "PATCH", svc, json.dumps(service), FORCED, ctype=APPLY),
        {**_ex("the revocation (revoke.py, as Flux's PatchReplaceFieldsManagers): test the resourceVersion read, replace "
               "managedFields with kubectl-patch's fields moved into our Apply entry", "PATCH", svc, None,
               {"fieldManager": "memcached-gitops"}, ctype=JSON_PATCH), "_revoke_from": 4},
        _ex("GET the Service: the managedFields as replaced", "GET", svc),
        _ex("our forced apply again", "PATCH", svc, json.dumps(service), FORCED, ctype=APPLY),
        _ex("kubectl edit's two-way strategic merge patch of the port (11211 -> 11300)", "PATCH", svc, edit,
            {"fieldManager": "kubectl-edit"}, ua=KUBECTL_UA, ctype=STRATEGIC),
        _ex("the Go operator's finalizer on the Memcached", "PATCH", cr_path, {"metadata": {"finalizers": ["cache.example.com/finalizer"]}},
            {"fieldManager": "manager"}, ua=KUBECTL_UA, ctype=MERGE),
        _ex("DELETE the Memcached: Terminating", "DELETE", cr_path, None, ua=KUBECTL_UA),
        _ex("the migration guide's JSON patch removing the finalizer", "PATCH", cr_path, guide, PATCHER, ua=KUBECTL_UA, ctype=JSON_PATCH),
        _ex("GET the Memcached afterwards", "GET", cr_path),
    ]


def observations(exchanges: list[dict[str, Any]]) -> list[str]:
    r = [e["response"] for e in exchanges]
    b = [x["body"] if isinstance(x["body"], dict) else {} for x in r]

    def ports(i: int) -> str:
        return json.dumps((b[i].get("spec") or {}).get("ports"))

    def managers(i: int) -> str:
        return json.dumps([(m["manager"], m["operation"], m.get("fieldsV1", {}).get("f:spec", {}).get("f:ports"))
                           for m in (b[i].get("metadata") or {}).get("managedFields", [])])
    return [
        f"json patch of the port: {r[3]['status']}, ports {ports(3)}; managedFields {managers(4)}",
        f"our forced apply after it: {r[5]['status']} {b[5].get('reason')}: {b[5].get('message')}",
        f"the managedFields replacement: {r[6]['status']}; managedFields then {managers(7)}",
        f"our forced apply after the replacement: {r[8]['status']}, ports {ports(8)}; managedFields {managers(8)}",
        f"kubectl edit's strategic patch with $patch: delete: {r[9]['status']}, ports {ports(9)}",
        f"DELETE with the finalizer: {r[11]['status']}, deletionTimestamp set: {'deletionTimestamp' in (b[11].get('metadata') or {})}",
        f"the guide's patch: {r[12]['status']}; GET afterwards: {r[13]['status']}",
    ]


def record(kubeconfig: str, ns: str = NS, out: Path | None = None) -> Path:
    meta, exchanges = scenario(ns)
    api = KubeAPI.connect(kubeconfig)
    pool, host = api.client.rest_client.pool_manager, api.client.configuration.host.rstrip("/")
    answers: list[dict[str, Any]] = []
    for exchange in exchanges:
        time.sleep(exchange.pop("_wait", 0))
        source = exchange.pop("_revoke_from", None)
        if source is not None:  # built from the answer it reads, as the reconciler builds it
            exchange["request"]["body"] = revocation(answers[source], "memcached-gitops", (), ()) or [
                {"op": "test", "path": "/metadata/resourceVersion", "value": answers[source]["metadata"]["resourceVersion"]}]
            exchange["note"] += f" (built from exchanges[{source}].response.body)"
        uses = _uses(exchange["request"])
        request = _fill(exchange["request"], answers)
        if uses:
            exchange.pop("request")
            exchange["request_uses_values_from_earlier_responses"] = uses
        exchange["request"] = request
        exchange["response"] = send(pool, host, request)
        decoded = exchange["response"]["body"]
        answers.append(decoded if isinstance(decoded, dict) else {})
    out = out or HERE / f"{STEM}.json"
    notes = ["recorded by python -m tests.record_kubectl_edits KUBECONFIG",
             "the Service is render()'s for Memcached mc (size 2) with a controller reference to it"]
    out.write_text(json.dumps({**meta, "notes": notes, "exchanges": exchanges, "observations": observations(exchanges)},
                              indent=1) + "\n")
    return out


if __name__ == "__main__":
    # python -m tests.record_kubectl_edits KUBECONFIG [NAMESPACE [OUT]]
    args = sys.argv[1:]
    print(record(args[0], *(args[1:2] or [NS]), *([Path(args[2])] if len(args) > 2 else [])))
