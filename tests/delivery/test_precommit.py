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

import pytest
import yaml

from tests.conftest import BAD_CR as BAD
from tests.conftest import GOOD_CR as GOOD
from tests.conftest import REPO
from tests.support.precommit import HOOK, git, hook_and_user_repositories


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


def test_the_hook_is_declared_for_yaml_files_with_filenames() -> None:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == HOOK and hook["language"] == "python"
    assert hook["entry"].split() == ["memcached-gitops", "validate", "--"]
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
    git(user, "init", "-q")
    git(user, "add", "-A")
    git(user, "commit", "-q", "-m", "initial")
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
    git(user, "init", "-q")
    git(user, "add", "-A")
    git(user, "commit", "-q", "-m", "initial")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK, "--all-files"],
                          cwd=user, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "apps/caches/kustomization.yaml:3:3: resources[1]: '../../../outside' leaves the root" in proc.stdout, proc.stdout
    assert "s3cr3t-value" not in proc.stdout + proc.stderr


def test_the_hook_installs_the_locked_versions_of_every_runtime_dependency() -> None:
    """pre-commit installs ``pip install . <additional_dependencies>``: each runtime dependency of the
    lock requirements/runtime.txt (but the build backend) is pinned there to the lock's version, so a
    hook run never takes a release newer than what was tested."""
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    lock = {}
    for line in (REPO / "requirements" / "runtime.txt").read_text().splitlines():
        if line[:1].isalpha():
            name, _, version = line.split()[0].partition("==")
            lock[name] = version
    lock.pop("setuptools")  # the build backend: pip's build isolation picks it (docs/security.md)
    assert sorted(hook.get("additional_dependencies", [])) == sorted(f"{n}=={v}" for n, v in lock.items())


def test_a_kustomization_at_the_root_named_alone_is_built(tmp_path: Path, workspace: tuple[Path, Path, dict[str, str]]) -> None:
    """A commit that changes only the root's kustomization.yaml: pre-commit passes ``kustomization.yaml``,
    no directory; its build (an overlay patch that makes the CR invalid) must fail the hook, never be
    passed over as ``kustomize build ""`` (tests/cli/test_path_forms.py has every client's form)."""
    from tests.support.layouts import FAULT, lay_out

    hooks, _, env = workspace
    user = lay_out(tmp_path, "a kustomization at the root")
    git(user, "init", "-q")
    git(user, "add", "-A")
    git(user, "commit", "-q", "-m", "initial")
    kubectl = {"PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")}  # kustomize, as a user has it
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK, "--files", "kustomization.yaml"],
                          cwd=user, env={**env, **kubectl}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "Failed" in proc.stdout, proc.stdout + proc.stderr
    assert f'. (kustomize build):7:3: Memcached/a: spec.{FAULT}: unknown field "spec.{FAULT}"' in proc.stdout, proc.stdout
