"""The pre-commit hook as pre-commit runs it: this repository as the hook's repository and a user's
repository beside it, both committed, and the environment pre-commit runs with."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import copy_package_sources

HOOK = "memcached-gitops-validate"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false",
                    "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True)


def commit_all(repo: Path) -> None:
    """``git init`` ``repo`` and commit everything in it (pre-commit's ``--all-files`` reads the index)."""
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")


def hook_and_user_repositories(tmp: Path, user: Path) -> tuple[Path, Path, dict[str, str]]:
    """Commit the hook's repository (tmp/hooks) and the user's files (``user``, already laid out);
    (hooks, user, the environment pre-commit runs with, its cache under tmp)."""
    hooks = tmp / "hooks"
    copy_package_sources(hooks, extra=(".pre-commit-hooks.yaml",))
    for repo in (hooks, user):
        commit_all(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))}
    env.update(PRE_COMMIT_HOME=str(tmp / "cache"), PRE_COMMIT_COLOR="never")
    return hooks, user, env
