"""The Flux path (examples/flux) on a real kube-apiserver (opt-in).

Runs when MEMCACHED_GITOPS_E2E_KUBECONFIG names a kubeconfig of a disposable cluster. It installs
Flux's own CRDs, vendored with their commits (../shared/upstream/flux/SOURCE.md), and ours, then
asks the server (``kubectl apply --dry-run=server --validate=strict``) about every object of the
example, as Flux's controllers would send them:

- the cluster's Flux objects (GitRepository, Kustomizations) under flux-system;
- (a) the CRs the ``caches`` Kustomization applies: ``kustomize build apps/caches`` put in its
  targetNamespace, as kustomize-controller does;
- (b) what CI renders from them (``memcached-gitops render``), put in the same namespace.

A misspelt field in a Kustomization is refused by the server, and by our validator with Flux's CRD
(the check can fail). Skipped with the reason otherwise: no kube-apiserver can be installed from the
package registries this project's CI reaches.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from memcached_gitops.schemas import Validator, load_crd

from tests.conftest import REPO
from tests.differential import builtin_crd_text, kubectl
from tests.upstream import needs_upstream, upstream

KUBECONFIG = os.environ.get("MEMCACHED_GITOPS_E2E_KUBECONFIG")
pytestmark = pytest.mark.skipif(
    not KUBECONFIG,
    reason="no real cluster: set MEMCACHED_GITOPS_E2E_KUBECONFIG to a disposable cluster's kubeconfig to run these",
)
FLUX = REPO / "examples" / "flux"
CRDS = upstream("flux")
TARGET_NAMESPACE = "shop"  # the caches Kustomizations' targetNamespace


def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([kubectl(), "--kubeconfig", str(KUBECONFIG), *args], input=stdin, text=True, capture_output=True,
                          check=check, timeout=120)


@pytest.fixture(scope="module")
def cluster() -> None:
    """Flux's CRDs and ours, Established; the flux-system and target namespaces."""
    for crd in sorted(CRDS.glob("*.yaml")):
        run("apply", "--server-side", "--force-conflicts", "-f", str(crd))
    run("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=builtin_crd_text())
    run("wait", "--for=condition=Established", "--timeout=60s", "crd/memcacheds.cache.example.com",
        *(f"crd/{p.name.split('_', 1)[1].removesuffix('.yaml')}.{p.name.split('_', 1)[0]}" for p in sorted(CRDS.glob("*.yaml"))))
    existing = run("get", "namespaces", "-o", "name").stdout.split()
    for ns in ("flux-system", TARGET_NAMESPACE):
        if f"namespace/{ns}" not in existing:
            run("create", "namespace", ns)


def in_namespace(text: str, namespace: str) -> str:
    """kustomize-controller's targetNamespace: every namespaced object goes there."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        d.setdefault("metadata", {})["namespace"] = namespace
    return yaml.safe_dump_all(docs, sort_keys=False)


def dry_run(text: str) -> subprocess.CompletedProcess[str]:
    return run("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text, check=False)


def test_the_clusters_flux_objects_are_accepted_by_the_server(cluster: None) -> None:
    files = sorted((FLUX / "clusters").rglob("*.yaml"))
    assert files
    for path in files:
        answer = run("apply", "--dry-run=server", "--validate=strict", "-f", str(path), check=False)
        assert answer.returncode == 0, (path, answer.stderr)
        assert "Warning" not in answer.stderr, (path, answer.stderr)


def test_the_crs_flux_applies_and_what_ci_renders_from_them_are_accepted(cluster: None) -> None:
    built = run("kustomize", str(FLUX / "apps" / "caches")).stdout
    assert "kind: Memcached" in built
    answer = dry_run(in_namespace(built, TARGET_NAMESPACE))
    assert answer.returncode == 0 and "Warning" not in answer.stderr, answer.stderr
    rendered = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "-"], input=built, text=True,
                              capture_output=True, check=True).stdout
    kinds = {d["kind"] for d in yaml.safe_load_all(rendered) if d}
    assert {"Deployment", "Service"} <= kinds, kinds
    answer = dry_run(in_namespace(rendered, TARGET_NAMESPACE))
    assert answer.returncode == 0 and "Warning" not in answer.stderr, answer.stderr


@needs_upstream
def test_a_misspelt_kustomization_field_is_refused_by_the_server_and_by_us(cluster: None) -> None:
    text = (FLUX / "clusters" / "prod" / "caches.yaml").read_text().replace("  wait: true", "  wiat: true")
    assert "wiat" in text
    answer = dry_run(text)
    assert answer.returncode != 0 and "wiat" in answer.stderr, answer.stderr
    obj = yaml.safe_load(text)
    errors = Validator(load_crd(str(CRDS / "kustomize.toolkit.fluxcd.io_kustomizations.yaml"))).validate(obj).errors
    assert ("spec", "wiat") in [e.path for e in errors], errors


@needs_upstream
def test_the_vendored_crds_are_the_ones_the_server_serves(cluster: None) -> None:
    """The versions the examples use are served (a stale vendored CRD would pass the offline check only)."""
    for path, version in ((CRDS / "kustomize.toolkit.fluxcd.io_kustomizations.yaml", "v1"),
                          (CRDS / "source.toolkit.fluxcd.io_gitrepositories.yaml", "v1")):
        group = Path(path).name.split("_", 1)[0]
        served = run("api-resources", f"--api-group={group}", "-o", "name").stdout
        assert served.strip(), group
        assert run("get", "--raw", f"/apis/{group}/{version}").returncode == 0
