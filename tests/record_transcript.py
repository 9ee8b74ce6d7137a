"""Record an exchange with a real kube-apiserver as a transcript the fake API server replays.

    python -m tests.record_transcript KUBECONFIG 39   # writes tests/fixtures/apiserver-transcripts/39-*.json

Each scenario is a list of requests, sent in order over the kubernetes client's own HTTP stack with
the recorded User-Agent; each answer is kept whole (status and decoded body). A request may take a
value from an earlier answer (``{uid:N}``: the uid in answer N), as tests/fake_apiserver/test_fake_apiserver_replay.py
does on replay. Opt-in, never in CI: it needs a disposable cluster (../shared/realk8s).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from memcached_gitops.reconciler.client.api import KubeAPI
from memcached_gitops.render import render

from tests.support.go_operator import MANAGER_UA, operator_sdk_labels

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


KCM_UA = "kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format"


def _hpa_scale_handoff(ns: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """What kube-controller-manager's HPA controller sends (seen in a real audit log: GET then PUT of
    the scale subresource, autoscaling/v1 Scale with the resourceVersion it read), around our applies."""
    ours = render({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "mc", "namespace": ns},
                   "spec": {"size": 1, "containerPort": 11211}})[0]
    without_replicas = json.loads(json.dumps(ours))
    del without_replicas["spec"]["replicas"]
    copied = json.loads(json.dumps(ours))
    copied["spec"]["replicas"] = 3
    deployment = f"/apis/apps/v1/namespaces/{ns}/deployments/mc"
    apply = {"fieldManager": "memcached-gitops", "force": "true"}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "mc", "namespace": ns},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "mc"}, "minReplicas": 3, "maxReplicas": 5,
                    "metrics": [{"type": "Resource",
                                 "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}}

    def ex(note: str, method: str, path: str, body: Any = None, query: dict | None = None, ua: str = OURS_UA,
           ctype: str = "application/json", setup: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"note": note, "request": {"method": method, "path": path, "query": query or {}, "content_type": ctype,
                                                         "body": body, "user_agent": ua}}
        if setup:
            out["setup"] = True
        return out

    meta = {
        "title": "An HorizontalPodAutoscaler's scale writes, and our applies around them",
        "what_it_shows": (
            "The HPA controller (kube-controller-manager) GETs the Deployment's scale subresource and PUTs an autoscaling/v1 "
            "Scale with the resourceVersion it read: the Deployment's replicas change, a kube-controller-manager / Update / "
            "subresource scale entry (without time) takes spec.replicas, and our Apply entry loses it. Our apply without "
            "replicas then changes nothing; our apply with the live value makes replicas co-owned; our apply with another "
            "value (force) takes replicas back in one write and the scale entry disappears."),
        "recorded_from": "kube-apiserver v1.36.2 (etcd 3.5.1, no controllers running); the HPA controller's two requests as a "
                         "real kube-controller-manager sent them (its audit log)",
        "namespace": ns,
        "observations": [
            "PUT .../deployments/mc/scale by kube-controller-manager: 200 with the Scale; the Deployment's generation moves",
            "managedFields afterwards: memcached-gitops Apply (no f:replicas), kube-controller-manager Update subresource scale "
            "(f:spec.f:replicas, no time)",
            "our apply without replicas: a no-op (resourceVersion unchanged), replicas stay 3",
            "our apply with replicas 3 (the live value): 200, replicas co-owned by both entries",
            "our apply with replicas 1 and force: 200, replicas 1 in one write, the scale entry gone",
        ],
    }
    return meta, [
        ex("setup: a fresh namespace for this transcript", "POST", "/api/v1/namespaces",
           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, ua=PYTHON_UA, setup=True),
        ex("our Deployment, replicas 1", "PATCH", deployment, json.dumps(ours), apply, ctype="application/apply-patch+yaml"),
        ex("an HPA on it, created with kubectl", "POST", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers", hpa,
           {"fieldManager": "kubectl-create"}, ua=KUBECTL_UA),
        ex("the HPA controller reads the scale", "GET", deployment + "/scale", ua=KCM_UA),
        ex("the HPA controller writes it (its minReplicas)", "PUT", deployment + "/scale",
           {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "mc", "namespace": ns, "resourceVersion": "{rv:3}"},
            "spec": {"replicas": 3}}, ua=KCM_UA),
        ex("the Deployment afterwards", "GET", deployment),
        ex("our apply without replicas (the HPA owns them)", "PATCH", deployment, json.dumps(without_replicas), apply,
           ctype="application/apply-patch+yaml"),
        ex("our apply with the live value", "PATCH", deployment, json.dumps(copied), apply, ctype="application/apply-patch+yaml"),
        ex("the HPA deleted: our apply with spec.size again", "PATCH", deployment, json.dumps(ours), apply,
           ctype="application/apply-patch+yaml"),
        ex("the HPAs of the namespace, as the once-per-cycle mode lists them", "GET",
           f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"),
    ]


def _kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    import subprocess

    kubectl = str(Path(kubeconfig).parent / "bin" / "kubectl")
    return subprocess.run([kubectl, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True,
                          check=True).stdout


def record_reviews(kubeconfig: str) -> Path:
    """41: TokenReview and SubjectAccessReview as the metrics server sends them, by a ServiceAccount
    (its token only: the admin's client certificate would win), before and after its RBAC grants.
    Tokens are replaced by ``<token:NAME>`` and the JTI credential id by ``<jti>`` in what is kept."""
    import urllib3

    ns = "tx41-reviews"
    _kubectl(kubeconfig, "create", "namespace", ns)
    for sa in ("reconciler", "scraper", "stranger"):
        _kubectl(kubeconfig, "create", "serviceaccount", sa, "-n", ns)
    tokens = {sa: _kubectl(kubeconfig, "create", "token", sa, "-n", ns).strip() for sa in ("reconciler", "scraper", "stranger")}
    api = KubeAPI.connect(kubeconfig)
    host = api.client.configuration.host.rstrip("/")
    pool = urllib3.PoolManager(ca_certs=api.client.configuration.ssl_ca_cert)
    grant_auth = ("create", "clusterrole", "tx41-metrics-auth", "--verb=create", "--resource=tokenreviews.authentication.k8s.io,"
                  "subjectaccessreviews.authorization.k8s.io")
    bind_auth = ("create", "clusterrolebinding", "tx41-metrics-auth", "--clusterrole=tx41-metrics-auth",
                 f"--serviceaccount={ns}:reconciler")
    grant_reader = ("create", "clusterrole", "tx41-metrics-reader", "--verb=get", "--non-resource-url=/metrics")
    bind_reader = ("create", "clusterrolebinding", "tx41-metrics-reader", "--clusterrole=tx41-metrics-reader",
                   f"--serviceaccount={ns}:scraper")

    def token_review(token: str) -> dict[str, Any]:
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}

    def access_review(user: str, path: str = "/metrics", verb: str = "get") -> dict[str, Any]:
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": f"system:serviceaccount:{ns}:{user}", "groups": groups,
                         "nonResourceAttributes": {"path": path, "verb": verb}}}

    tr, sar = "/apis/authentication.k8s.io/v1/tokenreviews", "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    steps: list[tuple[str, tuple[tuple[str, ...], ...], str, dict[str, Any]]] = [
        ("a TokenReview before any grant: 403", (), tr, token_review(tokens["scraper"])),
        ("a SubjectAccessReview before any grant: 403", (), sar, access_review("scraper")),
        ("after create on both reviews is granted: the scraper's token", (grant_auth, bind_auth), tr, token_review(tokens["scraper"])),
        ("a token no one issued", (), tr, token_review("not-a-token")),
        ("an empty token", (), tr, token_review("")),
        ("may the scraper get /metrics, before the reader role is bound: no", (), sar, access_review("scraper")),
        ("after the reader role is bound to the scraper: yes", (grant_reader, bind_reader), sar, access_review("scraper")),
        ("another path (the reader role names /metrics only)", (), sar, access_review("scraper", "/metrics/extra")),
        ("another verb", (), sar, access_review("scraper", "/metrics", "create")),
        ("a user with no grant", (), sar, access_review("stranger")),
        ("a review with neither attributes", (), sar, {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                                                       "spec": {"user": "someone"}}),
    ]
    exchanges = []
    for note, admin, path, body in steps:
        for args in admin:
            _kubectl(kubeconfig, *args)
        response = pool.request("POST", host + path, body=json.dumps(body).encode(), headers={
            "Content-Type": "application/json", "Accept": "application/json", "User-Agent": OURS_UA,
            "Authorization": f"Bearer {tokens['reconciler']}"})
        exchanges.append({"note": note, "admin_before": [" ".join(a) for a in admin], "request": {
            "method": "POST", "path": path, "query": {}, "content_type": "application/json", "body": body, "user_agent": OURS_UA},
            "response": {"status": response.status, "body": json.loads(response.data)}})
    text = json.dumps(exchanges)
    for sa, token in tokens.items():
        text = text.replace(token, f"<token:{sa}>")
    text = re.sub(r"JTI=[0-9a-f-]{36}", "<jti>", text)
    meta = {"title": "TokenReview and SubjectAccessReview, as the secure metrics server sends them",
            "what_it_shows": (
                "Sent with the token of ServiceAccount reconciler, which first has no grant on the reviews: 403 for both. "
                "With create on tokenreviews and subjectaccessreviews (kubebuilder's metrics-auth role), a TokenReview of a "
                "ServiceAccount token answers 201 with status.authenticated and the user (username, uid, groups, extra); an "
                "unknown or empty token; a SubjectAccessReview of a non-resource URL answers 201, allowed false with no reason "
                "before the metrics-reader ClusterRole is bound, allowed true with RBAC's reason after; other paths and verbs "
                "are not covered by the role."),
            "recorded_from": "kube-apiserver v1.36.2 (etcd 3.5.1), --authorization-mode=Node,RBAC, "
                             "--api-audiences=https://kubernetes.default.svc",
            "namespace": ns,
            "notes": ["recorded by python -m tests.record_transcript KUBECONFIG 41",
                      "the administrator's steps (kubectl, client certificate) are listed in each exchange's admin_before, "
                      "run before its request",
                      "tokens appear as <token:SERVICEACCOUNT>, the credential id as <jti>"]}
    out = HERE / "41-token-and-access-reviews.json"
    out.write_text(json.dumps({**meta, "exchanges": json.loads(text)}, indent=1) + "\n")
    return out


SCENARIOS = {"39": ("39-adopt-go-operator-deployment", "tx39-adopt-rec2", _adopt_go_operator),
             "40": ("40-hpa-scale-handoff", "tx40-hpa-rec", _hpa_scale_handoff)}


def _fill(value: Any, answers: list[dict[str, Any]]) -> Any:
    text = json.dumps(value)
    text = re.sub(r"\{uid:(\d+)\}", lambda m: answers[int(m.group(1))]["metadata"]["uid"], text)
    text = re.sub(r"\{rv:(\d+)\}", lambda m: answers[int(m.group(1))]["metadata"]["resourceVersion"], text)
    return json.loads(text)


def send(pool: Any, host: str, request: dict[str, Any]) -> dict[str, Any]:
    """One recorded request sent as it is written (``pool``: the kubernetes client's urllib3 pool);
    the answer as a transcript keeps it: status, decoded body, Warning headers when any."""
    body = request["body"]
    data = body.encode() if isinstance(body, str) else None if body is None else json.dumps(body).encode()
    query = "&".join(f"{k}={v}" for k, v in request["query"].items())
    headers = {"User-Agent": request["user_agent"], "Accept": "application/json"}
    if request["content_type"]:
        headers["Content-Type"] = request["content_type"]
    response = pool.request(request["method"], host + request["path"] + ("?" + query if query else ""), body=data, headers=headers)
    text = response.data.decode()
    try:
        decoded: Any = json.loads(text)
    except ValueError:
        decoded = text
    answer: dict[str, Any] = {"status": response.status, "body": decoded}
    warnings = response.headers.getlist("Warning")
    if warnings:
        answer["warnings"] = warnings
    return answer


def record(kubeconfig: str, number: str) -> Path:
    stem, ns, scenario = SCENARIOS[number]
    meta, exchanges = scenario(ns)
    api = KubeAPI.connect(kubeconfig)
    pool, host = api.client.rest_client.pool_manager, api.client.configuration.host.rstrip("/")
    answers: list[dict[str, Any]] = []
    for exchange in exchanges:
        request = exchange["request"] = _fill(exchange["request"], answers)
        exchange["response"] = send(pool, host, request)
        decoded = exchange["response"]["body"]
        answers.append(decoded if isinstance(decoded, dict) else {})
    out = HERE / f"{stem}.json"
    notes = [f"recorded by python -m tests.record_transcript KUBECONFIG {number}"]
    out.write_text(json.dumps({**meta, "notes": notes, "exchanges": exchanges}, indent=1) + "\n")
    return out


if __name__ == "__main__":
    print(record_reviews(sys.argv[1]) if sys.argv[2] == "41" else record(sys.argv[1], sys.argv[2]))
