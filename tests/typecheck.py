"""The strict type check of the product's packages (pyproject.toml's [tool.mypy]).

mypy finds a module by its path, and this repository keeps its folders apart from the import
names they install as (pyproject.toml's package-dir: ``foundation/`` is
``memcached_gitops.foundation``, ``src/memcached_gitops/`` is ``memcached_gitops``). Neither the
editable install (an import hook mypy does not run) nor the work tree gives mypy that layout. So the
check runs over a tree of symlinks with the installed layout, ``build/typecheck/memcached_gitops/``,
made afresh from package-dir each time, first on mypy's search path; mypy's messages name the
files in the repository again.

    python -m tests.typecheck                          # the packages in CHECKED
    python -m tests.typecheck memcached_gitops.render  # the packages named
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TREE = REPO / "build" / "typecheck"
#: the packages mypy checks, each with its subpackages that live in its folder
CHECKED = (
    "memcached_gitops.foundation",
    "memcached_gitops.render",
    "memcached_gitops.schemas",
    "memcached_gitops",
    "memcached_gitops.reconciler",
)


def package_dirs() -> dict[str, Path]:
    """Import name -> folder in the repository, from pyproject.toml's package-dir."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {package: REPO / folder for package, folder in setuptools["package-dir"].items()}


def link_tree(tree: Path = TREE) -> dict[Path, Path]:
    """The installed layout as symlinks under ``tree``; returns each linked place -> its folder."""
    if tree.exists():
        shutil.rmtree(tree)
    links: dict[Path, Path] = {}
    for package, folder in sorted(package_dirs().items()):
        place = tree.joinpath(*package.split("."))
        place.mkdir(parents=True, exist_ok=True)
        for entry in folder.iterdir():
            if entry.name != "__pycache__" and not (place / entry.name).exists():
                (place / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
        links[place] = folder
    return links


def modules(package: str) -> list[str]:
    """Every module of ``package`` in its own folder (subpackages mapped elsewhere are not in it)."""
    folder = package_dirs()[package]
    names = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        names.append(".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts))))
    return names


def run_mypy(packages: tuple[str, ...] = CHECKED, *extra: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``python -m mypy`` with pyproject.toml's configuration over ``packages``; its output names repository files."""
    links = link_tree()
    args = [arg for package in packages for name in modules(package) for arg in ("-m", name)]
    env = {**os.environ, "MYPYPATH": str(TREE)}
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), *extra, *args],
                          cwd=cwd, env=env, capture_output=True, text=True)
    output = done.stdout + done.stderr
    # longest place first: memcached_gitops/foundation before memcached_gitops
    for place, folder in sorted(links.items(), key=lambda link: -len(str(link[0]))):
        for spelled in (str(place), os.path.relpath(place, cwd)):
            output = output.replace(spelled + os.sep, os.path.relpath(folder, cwd) + os.sep)
    return subprocess.CompletedProcess(done.args, done.returncode, output, "")


if __name__ == "__main__":
    done = run_mypy(tuple(sys.argv[1:]) or CHECKED)
    print(done.stdout, end="")
    sys.exit(done.returncode)
