"""The README's quick start is what CI runs and what a new user types."""

from __future__ import annotations

import re

from tests.conftest import REPO


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


def test_the_readme_is_one_screen_and_every_link_of_the_docs_resolves() -> None:
    import yaml

    readme = REPO / "README.md"
    assert len(readme.read_text().splitlines()) <= 150
    pages = [readme, *sorted((REPO / "docs").rglob("*.md"))]
    for page in pages:
        prose = re.sub(r"`[^`\n]*`", "", page.read_text())  # a code span is no link
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(REPO)} links to a missing {target}"
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]

    def files(entries: list) -> list[str]:
        out = []
        for entry in entries:
            for value in entry.values():
                out += files(value) if isinstance(value, list) else [value]
        return out

    listed = files(nav)
    assert sorted(listed) == sorted(str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")), "every page in the nav"
