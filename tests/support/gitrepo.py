"""Real git repositories of two commits, as a pull request makes them: a base branch ``main`` and a
checked-out branch ``pr`` that changes it (for ``preview --base main``)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


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
