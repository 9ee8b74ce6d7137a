"""The product's packages pass the strict type check (pyproject.toml's [tool.mypy], run by
tests/typecheck.py), and the repository passes its lint (pyproject.toml's [tool.ruff])."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.typecheck import CHECKED, TREE, link_tree, run_mypy

needs_mypy = pytest.mark.skipif(find_spec("mypy") is None, reason="mypy is not installed (the test extra installs it)")
needs_ruff = pytest.mark.skipif(find_spec("ruff") is None, reason="ruff is not installed (the test extra installs it)")


@needs_mypy
def test_the_product_packages_pass_the_strict_type_check() -> None:
    done = run_mypy(CHECKED)
    assert done.returncode == 0, f"mypy on {', '.join(CHECKED)}:\n{done.stdout}"


@needs_mypy
def test_the_type_check_fails_on_a_strict_error(tmp_path: Path) -> None:
    """The check can fail: a module with an unannotated function (an error only under strict) and
    a plain type error is refused, with pyproject.toml's configuration."""
    (tmp_path / "careless.py").write_text("def double(x):\n    return x * 2\n\n\ncount: int = 'three'\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "careless.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "careless.py:1: error: Function is missing a type annotation  [no-untyped-def]" in output
    assert 'careless.py:5: error: Incompatible types in assignment (expression has type "str", variable has type "int")' in output


@needs_ruff
def test_the_repository_passes_ruff() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_mypy
def test_a_mixed_clock_comparison_fails_the_type_check(tmp_path: Path) -> None:
    """A deadline from one clock compared with an instant of the other is a type error
    (foundation/clocks.py), as is subtracting them; a comparison within one clock is not."""
    (tmp_path / "clocks_mixed.py").write_text(
        "from memcached_gitops.foundation.clocks import Monotonic, WallTime\n\n"
        "same: bool = Monotonic(1.0) < Monotonic(2.0) + 0.5\n"
        "mixed: bool = Monotonic(1.0) < WallTime(2.0)\n"
        "gap: float = WallTime(3.0) - Monotonic(1.0)\n")
    link_tree()
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "clocks_mixed.py"],
                          cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "MYPYPATH": str(TREE)})
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    errors = [line for line in output.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["4", "5"], output
    assert 'Unsupported operand types for < ("Monotonic" and "WallTime")' in errors[0]
