"""One renderer, four clients: for the same Memcached, ``render`` (CI), the KRM function (kustomize
and kpt), the Argo CD plugin's ``generate`` (as the sidecar runs it) and the reconciler's applies
(``reconcile --once`` against the fake API server, read from its request log) carry the same
Deployment, Service and budget. Each client adds only what its own contract says: the KRM
function its path and index annotations, the reconciler the controller ownerReference. A client
that drops, adds or changes anything else shows here, for every shape of examples/crs/."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from memcached_gitops.foundation.yamlreader import iter_documents

from fakeapi.server import FakeAPIServer
from tests.conftest import REPO
from tests.support.argocd import generate, repo_server_env
from tests.support.fakecluster import post, reconciler_for

EXAMPLES = REPO / "examples" / "crs"
CRS = [d.value for f in sorted(EXAMPLES.glob("*.yaml")) for d in iter_documents(f.read_text())
       if isinstance(d.value, dict) and d.value.get("kind") == "Memcached"]
WRITTEN = ("Deployment", "Service", "PodDisruptionBudget")  # what the reconciler writes (a PodMonitor is GitOps')


def named(cr: dict[str, Any]) -> dict[str, Any]:
    """The CR with a namespace (render leaves an object without one where the CR had none)."""
    out = copy.deepcopy(cr)
    out["metadata"].setdefault("namespace", "default")
    return out


def by_key(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{o['kind']} {o['metadata'].get('namespace')}/{o['metadata']['name']}": o for o in objects
            if o.get("kind") in WRITTEN}


def rendered(cr: dict[str, Any]) -> dict[str, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "-o", "json", "-"], input=yaml.safe_dump(cr),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return by_key(json.loads(proc.stdout)["items"])


def krm(cr: dict[str, Any]) -> dict[str, dict[str, Any]]:
    item = copy.deepcopy(cr)
    item["metadata"]["annotations"] = {**item["metadata"].get("annotations", {}), "config.kubernetes.io/index": "0",
                                       "internal.config.kubernetes.io/path": "crs/cache.yaml"}
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [item]}
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "krm"], input=json.dumps(rl), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = by_key(yaml.safe_load(proc.stdout)["items"])
    for obj in out.values():  # the function's own contract: where each item goes, read by kustomize/kpt
        notes = obj["metadata"].get("annotations", {})
        for key in [k for k in notes if k.startswith(("config.kubernetes.io/", "internal.config.kubernetes.io/"))]:
            del notes[key]
        if not notes:
            obj["metadata"].pop("annotations", None)
    return out


def argocd(cr: dict[str, Any], tmp: Path) -> dict[str, dict[str, Any]]:
    app = tmp / "app"
    app.mkdir()
    (app / "cache.yaml").write_text(yaml.safe_dump(cr))
    proc = generate(app, repo_server_env(None))
    assert proc.returncode == 0, proc.stderr.decode()
    return by_key([o for o in yaml.safe_load_all(proc.stdout) if o])


def applied(cr: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The bodies of the reconciler's applies for a new CR, its ownerReference taken off."""
    ns = cr["metadata"]["namespace"]
    with FakeAPIServer(namespaces=(ns,)) as api:
        post(api, f"/apis/cache.example.com/v1alpha1/namespaces/{ns}/memcacheds", cr, "?fieldManager=kubectl-create")
        api.reset_log()
        report = reconciler_for(api).run_cycle()
        assert not report.failed, report.outcomes
        bodies = [json.loads(r.body) for r in api.writes() if r.content_type == "application/apply-patch+yaml"]
    out = by_key(bodies)
    for obj in out.values():
        [owner] = obj["metadata"].pop("ownerReferences")
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Memcached", cr["metadata"]["name"], True)
    return out


@pytest.mark.parametrize("cr", CRS, ids=[c["metadata"]["name"] for c in CRS])
def test_every_client_carries_the_same_objects(tmp_path: Path, cr: dict[str, Any]) -> None:
    cr = named(cr)
    expected = rendered(cr)
    assert expected, "render made nothing of the example"
    for client, got in (("krm", krm(cr)), ("argocd-generate", argocd(cr, tmp_path)), ("reconcile", applied(cr))):
        assert sorted(got) == sorted(expected), (client, sorted(got), sorted(expected))
        for key, obj in expected.items():
            assert got[key] == obj, (client, key)
