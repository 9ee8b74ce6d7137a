"""The repository commits no other project's file (issue 45).

Other projects' files (upstream CRDs, testdata samples, install manifests) are read by the tests from
../shared/upstream (tests/upstream.py). This check holds that none is committed here, under any name:
by content (the sha256 of every file there, and every sha256 its SOURCE.md files list), by name (a
file name that only an upstream project uses), and by a licence or copyright header that is not ours.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from tests.upstream import REPO, UPSTREAM, needs_upstream

#: names every project uses for its own files: a file of ours may carry them
GENERIC_NAMES = {"README.md", "SOURCE.md", "kustomization.yaml", "LICENSE", ".gitignore"}
#: header words that mark a file as carrying another author's licence or copyright
#: (spelled in pieces, so that this file does not match itself)
FOREIGN_HEADER = re.compile("|".join(["Copy" + r"right (?:\(c\)|©|\d{4})", "SPDX-" + "License-Identifier",
                                       "Licensed " + "under the", "Permission is " + "hereby granted"]))
HEADER_LINES = 40
#: contents this short (an empty __init__.py) say nothing of where a file came from
TRIVIAL_BYTES = 64


def committed() -> list[Path]:
    """Every file `git ls-files` lists (the index: what a commit would hold), that exists in the work tree."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    return [REPO / n.decode() for n in names if n and (REPO / n.decode()).is_file()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@cache
def upstream_fingerprints() -> tuple[frozenset[str], frozenset[str]]:
    """(the sha256 of every upstream file and every sha256 a SOURCE.md lists, the upstream files' distinctive names)."""
    files = [p for p in UPSTREAM.rglob("*") if p.is_file()]
    hashes = {sha256(p) for p in files if p.stat().st_size > TRIVIAL_BYTES}
    for source in UPSTREAM.rglob("SOURCE.md"):
        hashes |= set(re.findall(r"\b[0-9a-f]{64}\b", source.read_text()))
    names = {p.name for p in files} - GENERIC_NAMES
    return frozenset(hashes), frozenset(names)


def foreign_header(path: Path) -> str | None:
    """The first header line (of the first 40) that names a licence or copyright, unless it is ours."""
    try:
        with path.open(encoding="utf-8") as f:
            head = [next(f, "") for _ in range(HEADER_LINES)]
    except UnicodeDecodeError:
        return None  # binary files are caught by their hash
    for line in head:
        if FOREIGN_HEADER.search(line) and "memcached-gitops" not in line:
            return line.strip()
    return None


@needs_upstream
def test_no_committed_file_is_an_upstream_projects_file() -> None:
    hashes, names = upstream_fingerprints()
    assert len(hashes) > 20 and names, f"{UPSTREAM} holds too little to check against"
    found = [f"{p.relative_to(REPO)}: the content of an upstream file" for p in committed()
             if p.stat().st_size > TRIVIAL_BYTES and sha256(p) in hashes]
    found += [f"{p.relative_to(REPO)}: an upstream file's name" for p in committed() if p.name in names]
    assert not found, "third-party files are kept in ../shared/upstream, never committed:\n" + "\n".join(found)


def test_no_committed_file_carries_another_projects_licence_header() -> None:
    found = [f"{p.relative_to(REPO)}: {line[:80]}" for p in committed() if (line := foreign_header(p))]
    assert not found, "a file with another project's licence or copyright header:\n" + "\n".join(found)


@needs_upstream
@pytest.mark.parametrize("kind", ["content", "name", "licence header"])
def test_the_check_finds_a_committed_upstream_file(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: an upstream file staged in a scratch repository under each disguise is found."""
    crd = UPSTREAM / "flux" / "kustomize.toolkit.fluxcd.io_kustomizations.yaml"
    hashes, names = upstream_fingerprints()
    if kind == "content":
        staged = tmp_path / "ours.yaml"
        staged.write_bytes(crd.read_bytes())
        assert sha256(staged) in hashes
    elif kind == "name":
        staged = tmp_path / crd.name
        staged.write_text("kind: Mine\n")
        assert staged.name in names
    else:
        staged = tmp_path / "main.go"
        staged.write_text("/*\nCopyright 2024 The Kubernetes authors.\n\nLicensed under the Apache License, Version 2.0\n*/\n")
        assert foreign_header(staged) == "Copyright 2024 The Kubernetes authors."
    ours = tmp_path / "ours.py"
    ours.write_text('"""Copyright 2026 the memcached-gitops authors."""\n')
    assert foreign_header(ours) is None
