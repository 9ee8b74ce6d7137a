"""Resolving links as the kernel does, and finding programs on PATH's absolute entries only."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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
    monkeypatch.setenv("PATH", "")
    assert find_program("sh") is None, "an empty PATH is set: no entry to look in (Go's LookPath), not the default"


_ENTRIES = ["a", "b", "c", "d/e"]
_TARGETS = st.sampled_from(["a", "b", "c", "d", "d/e", "d/x", "..", "../a", "../d/e", "missing", "/", "."])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_ENTRIES), _TARGETS), min_size=1, max_size=6),
       st.sampled_from(["a", "b", "c", "d/e", "a/x", "d/e/..", "b/../c", "missing/a"]))
def test_any_tree_of_links_resolves_as_realpath_does_and_a_loop_is_eloop(links: list[tuple[str, str]], asked: str) -> None:
    """Links to files, folders, parents, themselves or nothing, relative or absolute, chained, and a
    path through them: the answer is ``os.path.realpath``'s, or ELOOP where the kernel finds a loop;
    asked again after the links changed, the answer is the new one."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(os.path.realpath(folder))
        (root / "d").mkdir()
        for place, target in links:
            link = root / place
            if not os.path.lexists(link):
                link.symlink_to(target)
        for _ in range(2):
            path = str(root / asked)
            try:
                os.stat(path)
                loop = False
            except OSError as exc:
                loop = exc.errno == errno.ELOOP
            if loop:
                with pytest.raises(OSError) as raised:
                    real_path(path)
                assert raised.value.errno == errno.ELOOP
            else:
                assert real_path(path) == os.path.realpath(path)
            for place, _target in links:  # the links changed: each made a plain folder
                if os.path.islink(root / place):
                    os.unlink(root / place)
                    (root / place).mkdir()
