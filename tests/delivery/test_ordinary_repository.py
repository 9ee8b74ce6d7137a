"""First contact: an ordinary GitOps repository holds YAML and JSON of every sort beside the CRs.

One rule in every front end that scans a repository (pipeline.is_kubernetes_object): a document
with no kind that is not ours (our group or kind) is not a Kubernetes object, so it is passed over and counted, and
``-v`` names each by file and line. Half an object keeps the server's verdict, and so does every
document under ``--require-objects`` and on standard input. Checked with the real pre-commit and the
Action's own steps, which must pass such a repository and still fail on a bad CR, naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import BAD_CR as BAD
from tests.conftest import GOOD_CR as GOOD
from tests.support.action import Runner
from tests.support.cli import assert_clean_failure, run
from tests.support.precommit import HOOK, git, hook_and_user_repositories

ORDINARY = {
    "charts/cache/values.yaml": "replicaCount: 2\nimage:\n  repository: memcached\n  tag: '1.6'\n",
    "charts/cache/Chart.yaml": "apiVersion: v2\nname: cache\nversion: 0.1.0\n",  # Helm's, not Kubernetes': has no kind
    "docker-compose.yml": "services:\n  cache:\n    image: memcached:1.6\n",
    ".github/workflows/ci.yaml": "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: [{run: make}]\n",
    "ci/workflow.yml": "on: [push]\njobs: {}\n",
    "package.json": '{"name": "site", "version": "1.0.0"}\n',
    "lists/hosts.yaml": "- a.example\n- b.example\n",
    "empty.yaml": "",
    "comments.yaml": "# nothing here yet\n---\n# nor here\n",
    "apps/caches.yaml": GOOD,
}


def lay_out(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_validate_passes_an_ordinary_repository_and_names_what_it_passed_over(tmp_path: Path) -> None:
    repo = lay_out(tmp_path / "repo", ORDINARY)
    proc = run("validate", "-v", str(repo))
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert err.splitlines()[-1].startswith("1 Memcached valid, 0 error(s), 0 warning(s)")
    assert "document(s) that are not Kubernetes objects passed over" in err.splitlines()[-1]
    for name in ("charts/cache/values.yaml:1", "charts/cache/Chart.yaml:1", "docker-compose.yml:1", "ci/workflow.yml:1", "package.json:1",
                 "lists/hosts.yaml:1", "empty.yaml: no document", "comments.yaml: no document"):
        assert f"{repo}/{name}" in err, name
    assert ".github" not in err, "hidden directories are not walked"
    quiet = run("validate", str(repo)).stderr.decode()
    assert "passed over" in quiet and "values.yaml" not in quiet, "without -v only the count"


def test_render_and_argocd_generate_skip_them_too(tmp_path: Path) -> None:
    repo = lay_out(tmp_path / "repo", ORDINARY)
    proc = run("render", str(repo))
    assert proc.returncode == 0 and b"kind: Deployment" in proc.stdout, proc.stderr.decode()
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "argocd-generate", "."], cwd=repo, capture_output=True)
    assert proc.returncode == 0 and b"kind: Deployment" in proc.stdout, proc.stderr.decode()


@pytest.mark.parametrize(("text", "message"), [
    ("kind: Memcached\nmetadata: {name: a}\nspec: {size: 1}\n", "apiVersion: apiVersion not set"),
    ("apiVersion: cache.example.com/v1alpha1\nmetadata: {name: a}\n", "kind: kind not set"),
    ("apiVersion: cache.example.com/v1alpha1\nkind: ''\n", "kind: kind not set"),
    ("kind: ConfigMap\nmetadata: {name: a}\n", "apiVersion: apiVersion not set"),
])
def test_half_an_object_keeps_the_servers_verdict(tmp_path: Path, text: str, message: str) -> None:
    repo = lay_out(tmp_path / "repo", {**ORDINARY, "apps/half.yaml": text})
    err = assert_clean_failure(run("validate", str(repo)))
    assert f"{repo}/apps/half.yaml:" in err and message in err


def test_require_objects_keeps_kubectls_verdict_for_every_document(tmp_path: Path) -> None:
    repo = lay_out(tmp_path / "repo", ORDINARY)
    err = assert_clean_failure(run("validate", "--require-objects", str(repo)))
    assert f"{repo}/docker-compose.yml:1:1: apiVersion: apiVersion not set" in err
    assert (f"{repo}/lists/hosts.yaml:1:1: invalid object to validate: a document must be a Kubernetes object (a map), "
            "not a list of 2 items") in err


def test_the_action_passes_an_ordinary_repository_and_fails_a_bad_cr(runner: Runner, tmp_path: Path) -> None:
    ws = lay_out(tmp_path / "ws", ORDINARY)
    code, out, _ = runner.run(ws, steps=slice(1, None), paths=".", render_to="out/rendered.yaml")
    assert code == 0, out
    assert "kind: Deployment" in (ws / "out" / "rendered.yaml").read_text()
    (ws / "apps" / "bad.yaml").write_text(BAD)
    code, out, _ = runner.run(ws, steps=slice(1, None), paths=".")
    assert code == 1
    assert "::error file=apps/bad.yaml,line=7,col=3,title=Memcached/bad::spec.sizee: unknown field" in out


def test_the_real_pre_commit_passes_an_ordinary_repository_and_fails_a_bad_cr(tmp_path: Path) -> None:
    hooks, user, env = hook_and_user_repositories(tmp_path, lay_out(tmp_path / "user", ORDINARY))

    def try_repo() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK, "--all-files"],
                              cwd=user, env=env, capture_output=True, text=True, timeout=600)

    proc = try_repo()
    assert proc.returncode == 0 and "Passed" in proc.stdout, proc.stdout + proc.stderr
    (user / "apps" / "bad.yaml").write_text(BAD)
    git(user, "add", "-A")
    proc = try_repo()
    assert proc.returncode == 1 and "Failed" in proc.stdout, proc.stdout + proc.stderr
    assert 'apps/bad.yaml:7:3: Memcached/bad: spec.sizee: unknown field "spec.sizee"' in proc.stdout


@pytest.mark.parametrize("text", [
    '[{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "a"}, "spec": {"size": 1}}]\n',
    "- {apiVersion: cache.example.com/v1alpha1, kind: Memcached, metadata: {name: a}, spec: {size: 1}}\n",
    '[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, 1]\n',
])
@pytest.mark.parametrize("command", ["validate", "render"])
def test_an_array_of_objects_at_the_top_of_a_file_is_refused_as_kubectl_refuses_it(tmp_path: Path, text: str, command: str) -> None:
    # kubectl validates each document before decoding it (cli-runtime pkg/resource/visitor.go StreamVisitor.Visit:
    # ValidateSchema, then infoForData); under --validate=strict|warn that is kubectl pkg/validation/schema.go
    # paramVerifyingSchema.ValidateBytes, whose GetObjectKind (pkg/util/openapi/validation/validation.go) says
    # "invalid object to validate" for anything but a map: an array is never read as a list of objects
    repo = lay_out(tmp_path / "repo", {**ORDINARY, "apps/caches.json": text})
    err = assert_clean_failure(run(command, str(repo / "apps")))
    assert f"{repo}/apps/caches.json:1:1: invalid object to validate: a document must be a Kubernetes object (a map)" in err
