"""Every install command the docs give is one that works: the package is not on PyPI, so a
``pip install memcached-gitops`` (or ``==0.1.0``) can never work as written, and the image is
published nowhere, so the docs must say to build and push it.

Each ``pip install`` of the README, docs/ and examples/ is read and each requirement it names
checked for a form that installs: the checkout (``.``, ``'.[extra]'`` with an extra pyproject.toml
declares), a lock or requirements file that exists, this repository by git (``memcached-gitops @
git+URL@REF``), an extra added to an existing install (``'memcached-gitops[extra]'``), or a
third-party distribution the lock knows. README command 1, action.yml's and the Dockerfile's
commands and the pre-commit hook are run as written by .ci/install_paths.py (after the suite).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

OPTIONS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "--find-links", "-f", "--index-url",
                      "-i", "--extra-index-url", "--target", "-t", "--wheel-dir", "-w"}
GIT = re.compile(r"^memcached-gitops(\[[a-z,]+\])? @ git\+https://github\.com/example/memcached-gitops@[\w.\-]+$")
THIRD_PARTY_BEYOND_THE_LOCK = {"rust-just"}  # docs/reference/installing.md: `just` itself


def doc_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += [p for p in sorted((REPO / "examples").rglob("*")) if p.is_file() and p.suffix in (".md", ".yaml", ".yml", ".sh")]
    return files


def install_commands() -> list[tuple[str, str]]:
    found = []
    for path in doc_files():
        # an inline code span that wraps at the end of a line is one command
        text = re.sub(r"(?<!`)`[^`\n]+\n[^`\n]*`(?!`)", lambda m: m[0].replace("\n", " "), path.read_text())
        for line in text.splitlines():
            for command in re.findall(r"pip install ([^`&|;#\n]+)", line):
                found.append((f"{path.relative_to(REPO)}: {line.strip()}", command.strip()))
    return found


def requirements(command: str) -> list[str]:
    words, out, skip = shlex.split(command.strip().strip(")")), [], False
    for word in words:
        if skip:
            skip = False
            if word.endswith((".txt", ".in")):
                out.append(f"-r {word}")
            continue
        if word in OPTIONS_WITH_VALUE:
            skip = True
        elif not word.startswith("-"):
            out.append(word)
    return out


def extras() -> set[str]:
    return set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def locked() -> set[str]:
    text = (REPO / "requirements" / "test.txt").read_text()
    return {m.lower() for m in re.findall(r"^([A-Za-z0-9_.\-]+)==", text, re.M)}


def works(requirement: str) -> bool:
    """Whether a requirement of a doc's ``pip install`` has a form that installs."""
    if requirement.startswith("-r "):
        return (REPO / requirement[3:]).is_file()
    chosen = re.fullmatch(r"\.(?:\[([a-z,]+)\])?", requirement) or re.fullmatch(r"memcached-gitops\[([a-z,]+)\]", requirement)
    if chosen:
        return set(filter(None, (chosen[1] or "").split(","))) <= extras()
    if requirement.startswith("memcached-gitops"):
        return bool(GIT.match(requirement))  # never the bare name nor a version: not on PyPI
    return requirement.lower() in locked() | THIRD_PARTY_BEYOND_THE_LOCK


COMMANDS = install_commands()


def test_the_docs_give_install_commands() -> None:
    assert len(COMMANDS) >= 8 and any(GIT.match(r) for _, c in COMMANDS for r in requirements(c))


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[w[:90] for w, _ in COMMANDS])
def test_every_install_command_of_the_docs_has_a_form_that_works(where: str, command: str) -> None:
    named = requirements(command)
    assert named, where
    assert all(works(r) for r in named), f"{where}: {[r for r in named if not works(r)]} cannot be installed as written"


@pytest.mark.parametrize("requirement", ["memcached-gitops", "memcached-gitops==0.1.0", ".[nope]", "-r requirements/none.txt",
                                         "memcached-gitops @ git+https://github.com/example/memcached-gitops"])
def test_a_form_that_cannot_work_is_refused(requirement: str) -> None:
    assert not works(requirement)


def test_the_image_is_built_and_pushed_by_the_docs_and_no_doc_pulls_the_placeholder() -> None:
    installing = (REPO / "docs" / "reference" / "installing.md").read_text()
    assert "docker build -t" in installing and "docker push" in installing and "kustomize edit set image" in installing
    for path in doc_files():
        for line in path.read_text().splitlines():
            assert not re.search(r"docker (pull|run)\s+ghcr\.io/example", line), f"{path}: {line}"


