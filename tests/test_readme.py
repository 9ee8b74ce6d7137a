"""The README's quick start is what CI runs and what a new user types."""

from __future__ import annotations

import re

from .conftest import REPO


def _commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quick)


def test_quick_start_has_an_install_and_run_and_an_install_and_test_command() -> None:
    run, test = _commands()
    assert "pip install" in run and "memcached-gitops render examples/" in run
    assert "pip install" in test and "pytest" in test


def test_ci_runs_the_readme_test_command_exactly() -> None:
    _, test = _commands()
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert test in ci


def test_the_test_command_installs_the_lock_with_hashes_and_the_project_without_dependencies() -> None:
    # every distribution comes hash-checked from requirements/test.txt; the project adds none of its own
    _, test = _commands()
    installs = [step for step in test.split(" && ") if " install " in step]
    assert installs == [".venv/bin/pip install -q --require-hashes -r requirements/test.txt",
                        ".venv/bin/pip install -q --no-deps --no-build-isolation ."]
