"""Resolving links as the kernel does, and finding programs on PATH's absolute entries only."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from memcached_gitops.foundation.links import real_path
from memcached_gitops.foundation.programs import find_program


def test_a_loop_of_links_is_eloop_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError) as loop:
        real_path(str(tmp_path / "a"))
    assert (loop.value.errno, loop.value.strerror, loop.value.filename) == (errno.ELOOP, os.strerror(errno.ELOOP), str(tmp_path / "a"))


def test_a_path_that_exists_or_not_resolves_as_realpath_does(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "l").symlink_to("d")
    for path in (tmp_path / "l", tmp_path / "l" / "missing", tmp_path / "dangling"):
        assert real_path(str(path)) == os.path.realpath(path)


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("#!/bin/sh\n")
    (folder / name).chmod(0o755)
    return folder / name


def test_a_program_is_found_on_absolute_entries_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty or relative PATH entry is the working directory, a checkout: never looked in."""
    monkeypatch.chdir(tmp_path)
    _program(tmp_path, "tool")
    _program(tmp_path / "rel", "tool")
    real = _program(tmp_path / "bin", "tool")
    monkeypatch.setenv("PATH", os.pathsep.join(["", "rel", ".", str(tmp_path / "bin")]))
    assert find_program("tool") == str(real)
    monkeypatch.setenv("PATH", os.pathsep.join(["", "rel"]))
    assert find_program("tool") is None
    monkeypatch.delenv("PATH")
    assert find_program("sh") in ("/bin/sh", "/usr/bin/sh"), "no PATH: the system's default path"
