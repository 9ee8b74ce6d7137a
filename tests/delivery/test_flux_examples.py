"""The Flux path (examples/flux): every Flux object is checked against Flux's own CRDs, vendored
with their commits (../shared/upstream/flux/SOURCE.md), by the same validator that judges our CRs;
the CRs it applies build and render; the workflows pin actions by commit and read-only permissions.

kustomize-controller's ``wait: true`` judges each applied object with kstatus (fluxcd/cli-utils
pkg/kstatus/status: observedGeneration, then ``Reconciling=True`` InProgress, ``Stalled=True``
Failed): the reconciler's conditions speak it (tests/reconciler/decisions/test_status.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas import Validator, load_crd

from tests.conftest import REPO
from tests.upstream import needs_upstream, upstream

FLUX = REPO / "examples" / "flux"
CRDS = upstream("flux")
KINDS = {"Kustomization": "kustomize.toolkit.fluxcd.io_kustomizations.yaml",
         "GitRepository": "source.toolkit.fluxcd.io_gitrepositories.yaml"}


def flux_objects() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((FLUX / "clusters").rglob("*.yaml")):
        for d in iter_documents(path.read_bytes()):
            out.append((f"{path.relative_to(FLUX)}:{d.value['kind']}/{d.value['metadata']['name']}", d.value))
    return out


@needs_upstream
@pytest.mark.parametrize(("where", "obj"), flux_objects(), ids=[w for w, _ in flux_objects()])
def test_each_flux_object_is_valid_under_fluxs_own_crd(where: str, obj: dict) -> None:
    validator = Validator(load_crd(str(CRDS / KINDS[obj["kind"]])))
    outcome = validator.validate(obj)
    assert outcome.ok and not outcome.warnings, (where, outcome.errors, outcome.warnings)


@needs_upstream
def test_a_mistake_in_a_flux_object_is_caught() -> None:
    """The check can fail: a misspelled field and a missing required one."""
    validator = Validator(load_crd(str(CRDS / KINDS["Kustomization"])))
    obj = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": {"name": "x", "namespace": "f"},
           "spec": {"interval": "1m", "sourceRef": {"kind": "GitRepository", "name": "s"}, "wiat": True}}
    errors = validator.validate(obj).errors
    assert ("spec", "wiat") in [p.path for p in errors] and ("spec", "prune") in [p.path for p in errors], errors


@needs_upstream
def test_a_status_that_defaulting_adds_is_no_warning_and_a_given_one_is() -> None:
    """Flux's CRDs default status (observedGeneration: -1): the server drops a given status on
    create (status subresource), and defaults it again on read; only a status the user wrote is pointed out."""
    validator = Validator(load_crd(str(CRDS / KINDS["GitRepository"])))
    obj = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": {"name": "x", "namespace": "f"},
           "spec": {"interval": "1m", "url": "https://example.com/x.git"}}
    outcome = validator.validate(dict(obj))
    assert outcome.ok and not outcome.warnings and "status" not in outcome.obj
    outcome = validator.validate({**obj, "status": {"observedGeneration": 3}})
    assert [p.path for p in outcome.warnings] == [("status",)]


def test_the_crs_flux_applies_build_and_render() -> None:
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", str(FLUX / "apps" / "caches")], capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    kinds = sorted(d.value["kind"] for d in iter_documents(proc.stdout))
    assert kinds == ["Deployment", "PodDisruptionBudget", "Service"]
    names = {d.value["metadata"]["name"] for d in iter_documents(proc.stdout) if d.value["kind"] == "Deployment"}
    health = next(d.value for d in iter_documents((FLUX / "clusters/prod/rendered.yaml").read_bytes()))["spec"]["healthChecks"]
    assert {h["name"] for h in health} <= names, "the rendered path's health checks name rendered Deployments"


def _source_root(namespace: str, source_ref: dict) -> Path:
    """The tree a Kustomization's sourceRef checks out: ``flux-system`` is the GitRepository ``flux bootstrap``
    makes for the repository holding clusters/ (the example's own); a GitRepository of the example whose url
    names this project is this repository."""
    import tomllib

    if source_ref["name"] == "flux-system":
        return FLUX
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"]
    [source] = [o for _, o in flux_objects() if o["kind"] == source_ref["kind"] and o["metadata"]["name"] == source_ref["name"]
                and o["metadata"]["namespace"] == source_ref.get("namespace", namespace)]
    assert source["spec"]["url"].rstrip("/").removesuffix(".git").rsplit("/", 1)[1] == project, source["spec"]["url"]
    return REPO


def test_each_kustomizations_path_and_dependencies_are_there_for_flux() -> None:
    """kustomize-controller builds ``spec.path`` in its source's checkout ("kustomization path not found"
    otherwise) and holds a Kustomization until each ``dependsOn`` (a Kustomization, in its own namespace
    unless one is named) is ready: a dependency named wrong waits for ever, and the caches' CRs would be
    applied before the CRD. Each path is a folder of its source that kubectl builds, except the folder the
    render workflow writes; each dependency is a Kustomization of the example."""
    from tests.support.kustomize import KUBECTL, build

    workflow = (FLUX / ".github" / "workflows" / "render.yaml").read_text()
    written = {d.rstrip("/") for d in re.findall(r"render --output-dir (\S+)", workflow)}
    kustomizations = [o for _, o in flux_objects() if o["kind"] == "Kustomization"]
    names = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in kustomizations}
    for obj in kustomizations:
        namespace, spec = obj["metadata"]["namespace"], obj["spec"]
        for dependency in spec.get("dependsOn") or []:
            assert (dependency.get("namespace", namespace), dependency["name"]) in names, (obj["metadata"]["name"], dependency)
        path = spec["path"].removeprefix("./").rstrip("/")
        root = _source_root(namespace, spec["sourceRef"])
        if root == FLUX and path in written:
            continue
        assert (root / path).is_dir(), (obj["metadata"]["name"], root / path)
        if KUBECTL is not None and (root / path / "kustomization.yaml").is_file():
            assert build(root / path), path


@needs_upstream
def test_the_guides_kustomization_is_valid_for_flux_and_waits_for_the_examples_reconciler() -> None:
    """docs/guides/flux.md's Kustomization, as a user copies it beside the example: valid under Flux's CRD,
    and each ``dependsOn`` names a Kustomization of the example (one named wrong is waited for, for ever)."""
    import yaml

    [snippet] = re.findall(r"```yaml\n(.*?)```", (REPO / "docs/guides/flux.md").read_text(), flags=re.S)
    guide = yaml.safe_load(snippet)
    outcome = Validator(load_crd(str(CRDS / KINDS[guide["kind"]]))).validate(guide)
    assert outcome.ok and not outcome.warnings, (outcome.errors, outcome.warnings)
    names = {(o["metadata"]["namespace"], o["metadata"]["name"]) for _, o in flux_objects() if o["kind"] == "Kustomization"}
    namespace = guide["metadata"]["namespace"]
    assert guide["spec"]["dependsOn"] and {(d.get("namespace", namespace), d["name"]) for d in guide["spec"]["dependsOn"]} <= names


@pytest.mark.parametrize("workflow", [FLUX / ".github/workflows/render.yaml",
                                      REPO / "examples/gitops-repo/.github/workflows/memcached.yaml"],
                         ids=["flux", "gitops-repo"])
def test_example_workflows_pin_actions_by_commit_and_read_only(workflow: Path) -> None:
    text = workflow.read_text()
    doc = next(iter_documents(text.encode())).value
    assert doc["permissions"] == {"contents": "read"}
    uses = re.findall(r"uses:\s*(\S+)", text)
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses
    for job in doc["jobs"].values():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert "persist-credentials" in (step.get("with") or {}), "no token left in .git/config unless pushed with"


def test_the_readme_the_workflow_and_the_kustomization_agree_on_the_rendered_layout(tmp_path: Path) -> None:
    # the workflow writes one file per object into --output-dir; the Kustomization applies that
    # directory and health-checks Deployments found there; the README says the same directory
    import yaml

    workflow = (FLUX / ".github" / "workflows" / "render.yaml").read_text()
    [(out_dir, source)] = re.findall(r"render --output-dir (\S+) -- (\S+)", workflow)
    [rendered] = [obj for _, obj in flux_objects() if obj["metadata"]["name"] == "caches-rendered"]
    assert rendered["spec"]["path"].removeprefix("./").rstrip("/") == out_dir.rstrip("/")
    readme = (FLUX / "README.md").read_text()
    assert f"{out_dir.rstrip('/')}/" in readme and "all.yaml" not in readme
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "--output-dir", str(tmp_path / "out"), "--",
                           str(FLUX / source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    written = [yaml.safe_load(p.read_text()) for p in sorted((tmp_path / "out").rglob("*.yaml"))]
    assert len(written) > 1, "one file per object"
    target = rendered["spec"].get("targetNamespace")  # Flux sets it on objects that name none
    deployments = {(o["metadata"].get("namespace", target), o["metadata"]["name"]) for o in written if o["kind"] == "Deployment"}
    for check in rendered["spec"]["healthChecks"]:
        assert (check["namespace"], check["name"]) in deployments, check


@pytest.mark.parametrize("workflow", [FLUX / ".github/workflows/render.yaml",
                                      REPO / "examples/gitops-repo/.github/workflows/memcached.yaml"],
                         ids=["flux", "gitops-repo"])
def test_example_workflows_render_what_is_deployed_and_fail_where_a_sync_fails(workflow: Path) -> None:
    """Rendering a parent of overlays reads their files unbuilt (no namespace, no patch): each render
    step names a folder with a kustomization at its root, as Argo CD and Flux build it, and each
    validate step fails on a kustomization that cannot be built, with kustomize installed."""
    root = workflow.parent.parent.parent
    runs = [step["run"] for job in next(iter_documents(workflow.read_bytes())).value["jobs"].values()
            for step in job["steps"] if "run" in step]
    renders = [r for r in runs if "memcached-gitops render" in r]
    assert renders
    for run in renders:
        folder = run.split(" -- ", 1)[1].split()[0]
        assert (root / folder / "kustomization.yaml").is_file(), f"{run}: {folder} is not a kustomization"
    validates = [r for r in runs if "memcached-gitops validate" in r]
    assert validates and all("--strict-build" in r for r in validates), validates
    assert any("memcached-gitops[kustomize]" in r for r in runs if "pip install" in r)
