"""The Deployments Go operators create, field for field, as their code builds them and as
controller-runtime sends them (a POST by the binary ``manager``: transcript 22). test_adopt_go_operator
says where each seed's labels come from."""

from __future__ import annotations

import json
import re

import pytest

from fakeapi.server import FakeAPIServer
from tests.upstream import needs_upstream, upstream

OPERATOR_SDK = upstream("operator-sdk/testdata/go/v4/memcached-operator/internal/controller/memcached_controller.go")


#: config/manager/manager.yaml's MEMCACHED_IMAGE in the operator-sdk project
OPERATOR_SDK_IMAGE = "memcached:1.6.26-alpine3.19"


#: controller-runtime's user agent for a binary named ``manager`` (kubebuilder's default)
MANAGER_UA = "manager/v0.0.0 (linux/amd64) kubernetes/$Format"


def operator_sdk_labels() -> dict[str, str]:
    """``labelsForMemcached`` of the operator-sdk controller, read from its source."""
    body = re.search(r"func labelsForMemcached\(\) map\[string\]string \{.*?return map\[string\]string\{(.*?)\}",
                     OPERATOR_SDK.read_text(), re.S)
    assert body, "labelsForMemcached not found in the fixture"
    labels = dict(re.findall(r'"([^"]+)":\s*("[^"]*"|imageTag)', body.group(1)))
    return {k: OPERATOR_SDK_IMAGE.split(":")[1] if v == "imageTag" else json.loads(v) for k, v in labels.items()}


def seed_000_labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "project"}


def seed_002_labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "Memcached", "app.kubernetes.io/instance": name,
            "app.kubernetes.io/version": "1.4.36-alpine", "app.kubernetes.io/part-of": "memcached-operator",
            "app.kubernetes.io/created-by": "controller-manager"}


SEEDS = {"seed-000": seed_000_labels, "seed-002": seed_002_labels, "operator-sdk": lambda name: operator_sdk_labels()}
#: the seeds as parameters: operator-sdk's labels are read from its source under ../shared/upstream
SEED_PARAMS = [pytest.param(s, marks=needs_upstream) if s == "operator-sdk" else s for s in sorted(SEEDS)]


def go_operator_deployment(api: FakeAPIServer, cr: dict, labels: dict[str, str], image: str = OPERATOR_SDK_IMAGE) -> dict:
    """POST the Deployment as the Go controllers build it (``deploymentForMemcached``)."""
    meta = cr["metadata"]
    body = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "ownerReferences": [{
            "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}]},  # ctrl.SetControllerReference
        "spec": {
            "replicas": cr["spec"]["size"],
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "image": image, "name": "memcached", "imagePullPolicy": "IfNotPresent",
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1001, "allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]}},
                    "ports": [{"containerPort": 11211, "name": "memcached"}],
                    "command": ["memcached", "-m=64", "-o", "modern", "-v"],
                }],
            }},
        },
    }
    path = f"/apis/apps/v1/namespaces/{meta['namespace']}/deployments"
    code, _, data = api.handle("POST", path, {"User-Agent": MANAGER_UA, "Content-Type": "application/json"}, json.dumps(body).encode())
    assert code == 201, data
    return json.loads(data)
