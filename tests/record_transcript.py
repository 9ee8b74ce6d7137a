"""Record an exchange with a real kube-apiserver as a transcript the fake API server replays.

    python -m tests.record_transcript KUBECONFIG 39   # writes tests/fixtures/apiserver-transcripts/39-*.json

Each scenario is a list of requests, sent in order over the kubernetes client's own HTTP stack with
the recorded User-Agent; each answer is kept whole (status and decoded body). A request may take a
value from an earlier answer (``{uid:N}``: the uid in answer N), as tests/test_fake_apiserver_replay.py
does on replay. Opt-in, never in CI: it needs a disposable cluster (../shared/realk8s).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from memcached_gitops.reconciler.api import KubeAPI
from memcached_gitops.render import render

from .test_adopt_go_operator import MANAGER_UA, operator_sdk_labels

HERE = Path(__file__).parent / "fixtures" / "apiserver-transcripts"
PYTHON_UA = "OpenAPI-Generator/37.0.2/python"
OURS_UA = "memcached-gitops/0.1.0 (python)"
KUBECTL_UA = "kubectl/v1.37.1 (linux/amd64) kubernetes/$Format"


def _adopt_go_operator(ns: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    labels = operator_sdk_labels()
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "mc", "namespace": ns}, "spec": {"size": 2}}
    owner = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "mc", "uid": "{uid:1}",
             "controller": True, "blockOwnerDeletion": True}
    theirs = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mc", "namespace": ns, "ownerReferences": [owner]},
              "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                  "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                  "containers": [{"image": "memcached:1.6.26-alpine3.19", "name": "memcached", "imagePullPolicy": "IfNotPresent",
                                  "securityContext": {"runAsNonRoot": True, "runAsUser": 1001, "allowPrivilegeEscalation": False,
                                                      "capabilities": {"drop": ["ALL"]}},
                                  "ports": [{"containerPort": 11211, "name": "memcached"}],
                                  "command": ["memcached", "-m=64", "-o", "modern", "-v"]}]}}}}
    ours = render({**cr, "spec": {"size": 2, "containerPort": 11211}})[0]
    ours["metadata"]["ownerReferences"] = [owner]
    kept = json.loads(json.dumps(ours))
    kept["spec"]["selector"] = {"matchLabels": labels}
    kept["spec"]["template"]["metadata"]["labels"].update(labels)
    deployment = f"/apis/apps/v1/namespaces/{ns}/deployments/mc"
    apply = {"fieldManager": "memcached-gitops", "force": "true"}
    meta = {
        "title": "Taking over the Deployment a Go operator left running",
        "what_it_shows": (
            "operator-sdk's memcached-operator (testdata/go/v4, 60559f3e) creates its Deployment by POST as the binary 'manager' "
            "(field manager 'manager', operation Update), with a controller reference to the CR and the selector of "
            "labelsForMemcached (managed-by: MemcachedController). A server-side apply of our rendering with our selector is 422 "
            "(the selector is immutable; one cause, spec.selector). The same apply keeping "
            "their selector, and labelling the Pod template as it needs, answers 200: generation 2, our Apply entry beside "
            "manager's Update entry, which keeps only the fields we do not apply, co-owned or not. Applied again, it is a no-op."),
        "recorded_from": "kube-apiserver v1.36.2 (etcd 3.5.1, no controllers running), the tutorial's CRD of transcript 00",
        "namespace": ns,
        # what the recording showed, read from its answers (kept with the scenario, so a new recording keeps them)
        "observations": [
            "POST by User-Agent 'manager/v0.0.0 (linux/amd64) kubernetes/$Format': one managedFields entry, manager 'manager', "
            "operation Update, with every field the server defaulted",
            "our apply with our selector: 422 'spec.selector: Invalid value: {...}: field is immutable', one cause, nothing written",
            "our apply keeping their selector (and their selector's labels on the Pod template): 200, generation 1 -> 2; "
            "entries: memcached-gitops Apply, manager Update",
            "manager's Update entry keeps the fields it set with the values we also apply (replicas, selector, maxSurge, the labels "
            "of its selector) as co-owner; it loses strategy.rollingUpdate.maxUnavailable (which our apply changed) "
            "and the command (changed)",
            "the identical apply again: 200, resourceVersion and generation unchanged (a no-op)",
        ],
    }
    return meta, [
        {"note": "setup: a fresh namespace for this transcript", "setup": True, "request": {
            "method": "POST", "path": "/api/v1/namespaces", "query": {}, "content_type": "application/json",
            "body": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, "user_agent": PYTHON_UA}},
        {"note": "the Memcached, created with kubectl", "request": {
            "method": "POST", "path": f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds",
            "query": {"fieldManager": "kubectl-create"},
            "content_type": "application/json", "body": cr, "user_agent": KUBECTL_UA}},
        {"note": "the Go operator's Deployment, as controller-runtime's client.Create sends it", "request": {
            "method": "POST", "path": f"/apis/apps/v1/namespaces/{ns}/deployments", "query": {}, "content_type": "application/json",
            "body": theirs, "user_agent": MANAGER_UA}},
        {"note": "our rendering with our selector: 422, the selector is immutable", "request": {
            "method": "PATCH", "path": deployment, "query": apply, "content_type": "application/apply-patch+yaml",
            "body": json.dumps(ours), "user_agent": OURS_UA}},
        {"note": "our rendering keeping their selector: the takeover", "request": {
            "method": "PATCH", "path": deployment, "query": apply, "content_type": "application/apply-patch+yaml",
            "body": json.dumps(kept), "user_agent": OURS_UA}},
        {"note": "the same apply again: a no-op", "request": {
            "method": "PATCH", "path": deployment, "query": apply, "content_type": "application/apply-patch+yaml",
            "body": json.dumps(kept), "user_agent": OURS_UA}},
        {"note": "read back", "request": {
            "method": "GET", "path": deployment, "query": {}, "content_type": "application/json", "body": None, "user_agent": OURS_UA}},
    ]


SCENARIOS = {"39": ("39-adopt-go-operator-deployment", "tx39-adopt-rec2", _adopt_go_operator)}


def _fill(value: Any, answers: list[dict[str, Any]]) -> Any:
    text = json.dumps(value)
    text = re.sub(r"\{uid:(\d+)\}", lambda m: answers[int(m.group(1))]["metadata"]["uid"], text)
    return json.loads(text)


def record(kubeconfig: str, number: str) -> Path:
    stem, ns, scenario = SCENARIOS[number]
    meta, exchanges = scenario(ns)
    api = KubeAPI.connect(kubeconfig)
    pool, host = api.client.rest_client.pool_manager, api.client.configuration.host.rstrip("/")
    answers: list[dict[str, Any]] = []
    for exchange in exchanges:
        request = exchange["request"] = _fill(exchange["request"], answers)
        body = request["body"]
        data = body.encode() if isinstance(body, str) else None if body is None else json.dumps(body).encode()
        query = "&".join(f"{k}={v}" for k, v in request["query"].items())
        response = pool.request(request["method"], host + request["path"] + ("?" + query if query else ""), body=data,
                                headers={"Content-Type": request["content_type"], "User-Agent": request["user_agent"],
                                         "Accept": "application/json"})
        text = response.data.decode()
        try:
            decoded: Any = json.loads(text)
        except ValueError:
            decoded = text
        exchange["response"] = {"status": response.status, "body": decoded}
        answers.append(decoded if isinstance(decoded, dict) else {})
    out = HERE / f"{stem}.json"
    notes = [f"recorded by python -m tests.record_transcript KUBECONFIG {number}"]
    out.write_text(json.dumps({**meta, "notes": notes, "exchanges": exchanges}, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(record(sys.argv[1], sys.argv[2]))
