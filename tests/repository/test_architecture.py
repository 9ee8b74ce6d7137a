"""docs/architecture.md matches the tree: every file it names exists, and the floors it draws hold
(no module imports from a floor above its own)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

ARCHITECTURE = REPO / "docs" / "architecture.md"
#: folder -> its floor, lowest first; a module may import its own floor and the ones below.
FLOORS = {
    "foundation": 0,
    "schemas": 1,
    "render": 2,
    "reconciler/decisions": 3,
    "reconciler/client": 4,
    "reconciler/orchestration": 5,
    "reconciler": 6,  # its __init__ re-exports the orchestration's entry points
    "src/memcached_gitops": 7,
}
#: import name -> folder
PACKAGES = {
    "memcached_gitops.foundation": "foundation",
    "memcached_gitops.schemas": "schemas",
    "memcached_gitops.render": "render",
    "memcached_gitops.reconciler.decisions": "reconciler/decisions",
    "memcached_gitops.reconciler.client": "reconciler/client",
    "memcached_gitops.reconciler.orchestration": "reconciler/orchestration",
    "memcached_gitops.reconciler": "reconciler",
    "memcached_gitops": "src/memcached_gitops",
}


def folder_of(module: str) -> str:
    return next(folder for name, folder in PACKAGES.items() if module == name or module.startswith(name + "."))


def floor_of_file(path: Path) -> tuple[str, int]:
    rel = path.relative_to(REPO).as_posix()
    folder = max((f for f in FLOORS if rel.startswith(f + "/")), key=len)
    return folder, FLOORS[folder]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """The absolute names of the package's modules that ``path`` imports (relative imports resolved)."""
    folder, _ = floor_of_file(path)
    package = next(name for name, f in PACKAGES.items() if f == folder)
    rel = path.relative_to(REPO / folder).with_suffix("")
    parts = package.split(".") + [p for p in rel.parts if p != "__init__"]
    here = parts if path.name == "__init__.py" else parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
                out += [(node.lineno, name + "." + a.name) if not node.module else (node.lineno, name) for a in node.names]
            elif node.module and node.module.startswith("memcached_gitops"):
                out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("memcached_gitops")]
    return out


def product_files() -> list[Path]:
    return sorted(p for folder in ("foundation", "schemas", "render", "reconciler", "src/memcached_gitops")
                  for p in (REPO / folder).rglob("*.py"))


def test_every_file_the_architecture_names_exists() -> None:
    text = ARCHITECTURE.read_text()
    named = set(re.findall(r"`([\w/.-]+(?:\.py|/))`", text))
    assert len(named) > 30, "the page names the files of both flows"
    missing = sorted(n for n in named if not (REPO / n).exists())
    assert missing == [], f"docs/architecture.md names files that do not exist: {missing}"


def test_every_product_folder_is_on_a_floor_of_the_architecture() -> None:
    folders = {p.parent.relative_to(REPO).as_posix() for p in product_files()}
    text = ARCHITECTURE.read_text()
    for folder in folders:
        top = "reconciler/" if folder.startswith("reconciler") else folder.split("/")[0] + "/"
        if folder.startswith("src/"):
            top = "src/memcached_gitops/"
        assert f"`{top}`" in text, f"{folder} is on no floor of docs/architecture.md"


@pytest.mark.parametrize("path", product_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_module_imports_from_a_floor_above_its_own(path: Path) -> None:
    folder, floor = floor_of_file(path)
    above = [(line, name) for line, name in imported_modules(path) if FLOORS[folder_of(name)] > floor]
    assert above == [], f"{path.relative_to(REPO)} ({folder}) imports from above: {above}"


def test_the_floor_check_sees_an_import_from_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a foundation module that imported the renderer would be caught."""
    fake = REPO / "foundation" / "excerpt.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "from memcached_gitops.render import render\nfrom ..render import x\n"
                        if self == fake else Path.read_bytes(self).decode())
    names = [name for _, name in imported_modules(fake)]
    assert names == ["memcached_gitops.render", "memcached_gitops.render"]
    assert all(FLOORS[folder_of(n)] > floor_of_file(fake)[1] for n in names)
