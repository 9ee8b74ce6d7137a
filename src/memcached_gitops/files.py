"""File-system edges of the CLI: finding input files and writing output atomically."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

SUFFIXES = (".yaml", ".yml", ".json")


class InputError(ValueError):
    """A path that cannot be read; the message names it."""


def expand(paths: list[str]) -> list[str]:
    """Files named, and the YAML/JSON files under directories named (recursive, sorted)."""
    out: list[str] = []
    for p in paths:
        if p == "-":
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(
                str(f) for f in path.rglob("*")
                if f.suffix in SUFFIXES and f.is_file() and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
            out += found
        elif path.is_file():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    return out


def open_sources(paths: list[str]) -> Iterator[tuple[str, IO[bytes]]]:
    """(name, binary stream) for each input, opened lazily so only one file is open at a time."""
    for p in paths:
        if p == "-":
            yield "<stdin>", sys.stdin.buffer
            continue
        try:
            f = open(p, "rb")
        except OSError as exc:
            raise InputError(f"{p}: cannot read: {exc.strerror}") from None
        with f:
            yield p, f


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new one, never half."""
    import tempfile  # here, not at the top: it brings shutil and the compression modules, and most runs write to stdout

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
