"""The example Application runs in a restricted AppProject, both valid under Argo CD's own CRDs
(argoproj/argo-cd 37ee0097cf manifests/crds/, read from ../shared/upstream/argocd/crds),
and the project admits exactly what the plugin emits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas import Validator, load_crd

from tests.conftest import REPO
from tests.support.argocd import sidecar_env
from tests.upstream import needs_upstream, upstream

ARGOCD = REPO / "examples" / "gitops-repo" / "argocd"
CRDS = upstream("argocd/crds")


def one(path: Path) -> dict:
    [doc] = list(iter_documents(path.read_bytes()))
    return doc.value


@needs_upstream
def test_the_application_and_its_project_are_valid_under_argo_cds_crds() -> None:
    for example, crd in (("application.yaml", "application-crd.yaml"), ("appproject.yaml", "appproject-crd.yaml")):
        outcome = Validator(load_crd(str(CRDS / crd))).validate(one(ARGOCD / example))
        assert outcome.ok and not outcome.warnings, (example, outcome.errors, outcome.warnings)


def test_the_project_admits_the_plugins_output_and_nothing_cluster_scoped() -> None:
    project, application = one(ARGOCD / "appproject.yaml"), one(ARGOCD / "application.yaml")
    spec = project["spec"]
    assert application["spec"]["project"] == project["metadata"]["name"]
    assert spec["sourceRepos"] == [application["spec"]["source"]["repoURL"]]
    assert {d["namespace"] for d in spec["destinations"]} == {application["spec"]["destination"]["namespace"]}
    assert spec["clusterResourceWhitelist"] == []
    allowed = {(k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]}
    # what the plugin emits for the example's directory, with the example's parameters
    app_dir = REPO / "examples" / "gitops-repo" / application["spec"]["source"]["path"]
    params = application["spec"]["source"]["plugin"]["parameters"]
    env = {**os.environ, **sidecar_env(), "ARGOCD_APP_PARAMETERS": json.dumps(params)}  # the sidecar's operator env too
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "argocd-generate", "."], cwd=app_dir, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    emitted = {(d.value["apiVersion"].rpartition("/")[0], d.value["kind"]) for d in iter_documents(proc.stdout)}
    assert emitted <= allowed, emitted - allowed
    assert ("", "ConfigMap") in allowed and {p["name"]: p["string"] for p in params}["pass-through-kinds"] == "ConfigMap"


def test_the_project_admits_what_the_readmes_example_renders(tmp_path: Path) -> None:
    # the README's CR (cut out of README.md) turns its PodMonitor on: a project that refused it would
    # fail the first sync of a user who starts from the README
    from tests.support.readme import readme_example

    project, application = one(ARGOCD / "appproject.yaml"), one(ARGOCD / "application.yaml")
    allowed = {(k["group"], k["kind"]) for k in project["spec"]["namespaceResourceWhitelist"]}
    (tmp_path / "cache.yaml").write_text(readme_example())
    params = application["spec"]["source"]["plugin"]["parameters"]
    env = {**os.environ, **sidecar_env(), "ARGOCD_APP_PARAMETERS": json.dumps(params)}
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "argocd-generate", "."], cwd=tmp_path, env=env,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    emitted = {(d.value["apiVersion"].rpartition("/")[0], d.value["kind"]) for d in iter_documents(proc.stdout)}
    assert ("monitoring.coreos.com", "PodMonitor") in emitted
    assert emitted <= allowed, emitted - allowed
