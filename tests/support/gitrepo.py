"""Real git repositories of two commits, as a pull request makes them: a base branch ``main`` and a
checked-out branch ``pr`` that changes it (for ``preview --base main``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: commits of a fixed time and author: the same files make the same commit ids, which reports print
FIXED = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_AUTHOR_NAME": "ci",
         "GIT_AUTHOR_EMAIL": "ci@example.com", "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, env={**os.environ, **FIXED}).stdout


def two_commits(repo: Path, base: dict[str, str], change: dict[str, str | None]) -> Path:
    """A repository whose ``main`` holds ``base`` and whose checked-out branch ``pr`` changes it (None deletes a file)."""
    repo.mkdir(exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "ci")
    write(repo, base)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    write(repo, change)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pull request")
    return repo


def write(repo: Path, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
