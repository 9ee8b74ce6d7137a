"""Requests a person's tools make to the fake API server, and reads of what it holds: the CR and
Deployment paths, ``make_cr``, ``patch``/``post`` as kubectl sends them, a reconciler built on the
official client, and a kubeconfig that points at the fake."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from memcached_gitops.reconciler.client.api import KubeAPI, RetryPolicy
from memcached_gitops.reconciler.decisions.ignore import ANNOTATION
from memcached_gitops.reconciler.orchestration.cycle import Options, Reconciler
from memcached_gitops.render import render
from memcached_gitops.schemas import Validator, load_crd

from fakeapi.server import FakeAPIServer
from tests.conftest import transcript
from tests.support.crs import memcached_cr

CR_PATH = "/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds"
DEP_PATH = "/apis/apps/v1/namespaces/{ns}/deployments/{name}"


def post(api: FakeAPIServer, path: str, body: dict, query: str = "", ua: str = "kubectl/v1.37.1", ctype: str = "application/json") -> dict:
    code, _, data = api.handle("POST", path + query, {"User-Agent": ua, "Content-Type": ctype}, json.dumps(body).encode())
    assert code in (200, 201), data
    return json.loads(data)


def patch(api: FakeAPIServer, path: str, body, ctype: str, query: str = "", ua: str = "kubectl/v1.37.1") -> dict:
    code, _, data = api.handle("PATCH", path + query, {"User-Agent": ua, "Content-Type": ctype}, json.dumps(body).encode())
    assert code == 200, data
    return json.loads(data)


def make_cr(api: FakeAPIServer, name: str, ns: str = "default", size: int = 1, port: int | None = None) -> dict:
    spec = {"size": size} | ({"containerPort": port} if port else {})
    return post(api, CR_PATH.format(ns=ns), memcached_cr(name, ns, spec), "?fieldManager=kubectl-create&fieldValidation=Strict")


def foreign_service(api: FakeAPIServer, name: str, ns: str = "default") -> dict:
    """A Service created by a person (kubectl), without our labels: invisible to the labelled informers."""
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}}
    return post(api, f"/api/v1/namespaces/{ns}/services", body, "?fieldManager=someone")


def reconciler_for(api: FakeAPIServer, **options) -> Reconciler:
    client = KubeAPI.connect(host=api.url, retry=RetryPolicy(attempts=5, base=0.01, cap=0.05))
    return Reconciler(client, load_crd(), Options(**options))


def deployment(api: FakeAPIServer, name: str, ns: str = "default") -> dict | None:
    return api.get("apps", "deployments", ns, name)


def cr_status(api: FakeAPIServer, name: str, ns: str = "default") -> dict:
    return (api.get("cache.example.com", "memcacheds", ns, name) or {}).get("status") or {}


def condition(api: FakeAPIServer, name: str, ctype: str, ns: str = "default") -> dict:
    return next((c for c in cr_status(api, name, ns).get("conditions", []) if c["type"] == ctype), {})


def writes(api: FakeAPIServer) -> list[str]:
    return [f"{r.method} {r.path}" for r in api.writes()]


def drift_image(api: FakeAPIServer) -> None:
    body = {"spec": {"template": {"spec": {"containers": [{"image": "memcached:1.6.27-alpine3.19", "name": "memcached"}]}}}}
    patch(api, DEP_PATH.format(ns="default", name="m"), body, "application/strategic-merge-patch+json", "?fieldManager=kubectl-set")


def drift_port(api: FakeAPIServer) -> None:
    ops = [{"op": "replace", "path": "/spec/template/spec/containers/0/ports/0/containerPort", "value": 9999}]
    patch(api, DEP_PATH.format(ns="default", name="m"), ops, "application/json-patch+json", "?fieldManager=kubectl-patch")


def write_kubeconfig(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{url}"}}}}]
users: [{{name: tester, user: {{token: test-token}}}}]
contexts: [{{name: fake, context: {{cluster: fake, user: tester}}}}]
current-context: fake
""")
    return path


KCM_UA = "kube-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format"


HPA_PATH = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"


def call(api: FakeAPIServer, method: str, path: str, body=None, ua: str = "kubectl/v1.37.1") -> dict:
    code, _, data = api.handle(method, path, {"User-Agent": ua, "Content-Type": "application/json"},
                               json.dumps(body).encode() if body is not None else b"")
    assert code in (200, 201), data
    return json.loads(data)


def create_hpa(api: FakeAPIServer, target: str = "a", name: str | None = None, min_replicas: int = 3) -> None:
    call(api, "POST", HPA_PATH.format(ns="default"), {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name or target},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                 "minReplicas": min_replicas, "maxReplicas": 5}})


def hpa_scales(api: FakeAPIServer, replicas: int, target: str = "a") -> None:
    """What the HPA controller sends (40): GET the scale, PUT it back with the new replicas."""
    path = DEP_PATH.format(ns="default", name=target) + "/scale"
    scale = call(api, "GET", path, ua=KCM_UA)
    call(api, "PUT", path, {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale["metadata"],
                            "spec": {"replicas": replicas}}, ua=KCM_UA)


def annotate(api: FakeAPIServer, name: str, value: str | None, ns: str = "default") -> None:
    body = {"metadata": {"annotations": {ANNOTATION: value}}}
    patch(api, CR_PATH.format(ns=ns) + f"/{name}", body, "application/merge-patch+json")


def scale(api: FakeAPIServer, name: str, replicas: int, ns: str = "default") -> None:
    # kubectl scale: a merge patch to /scale without fieldManager (transcript 04)
    path = DEP_PATH.format(ns=ns, name=name) + "/scale"
    patch(api, path, {"spec": {"replicas": replicas}}, "application/merge-patch+json")


def argocd_applies(api: FakeAPIServer, name: str = "m", size: int = 2) -> dict:
    """What Argo CD does with ``argocd-generate`` output: a server-side apply as argocd-controller,
    no ownerReference (the CR's uid is not in Git)."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": "default"},
          "spec": {"size": size}}
    rendered = render(Validator(load_crd()).validate(cr).obj)[0]
    assert "ownerReferences" not in rendered["metadata"]
    code, _, data = api.handle("PATCH", DEP_PATH.format(ns="default", name=name) + "?fieldManager=argocd-controller&force=true",
                               {"User-Agent": "argocd-application-controller/v3.2.0", "Content-Type": "application/apply-patch+yaml"},
                               json.dumps(rendered).encode())
    assert code == 201, data
    return json.loads(data)


def argocd_applies_service(api: FakeAPIServer, name: str = "m") -> dict:
    """The Service of ``argocd-generate`` output, applied as Argo CD applies it: no ownerReference."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": "default"},
          "spec": {"size": 1}}
    [service] = [o for o in render(Validator(load_crd()).validate(cr).obj) if o["kind"] == "Service"]
    code, _, data = api.handle("PATCH", f"/api/v1/namespaces/default/services/{service['metadata']['name']}"
                               "?fieldManager=argocd-controller&force=true",
                               {"User-Agent": "argocd-application-controller/v3.2.0", "Content-Type": "application/apply-patch+yaml"},
                               json.dumps(service).encode())
    assert code == 201, data
    return json.loads(data)


CONTROLLER_UA = "kube-controller-manager/v1.36.2 (linux/amd64) kubernetes/98b3519/system:serviceaccount:kube-system:deployment-controller"


def recorded_status(file: str, exchange: int) -> dict:
    ex = transcript(file)["exchanges"][exchange]
    body = ex["response"]["body"] if ex["request"]["method"] == "GET" else ex["request"]["body"]
    return copy.deepcopy(body["status"])


def controller_writes(api: FakeAPIServer, name: str, status: dict) -> None:
    """The Deployment controller's status write: a merge patch to /status (transcript 16)."""
    patch(api, DEP_PATH.format(ns="default", name=name) + "/status", {"status": status}, "application/merge-patch+json",
          ua=CONTROLLER_UA)


def reconciler_on_api_clock(api: FakeAPIServer):
    """A reconciler whose clock moves a second per status write, so that lastTransitionTimes differ."""
    rec = reconciler_for(api)
    rec.clock = api.clock
    return rec
