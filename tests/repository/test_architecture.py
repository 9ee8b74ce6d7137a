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


#: The process clocks a module could read directly; foundation/clocks.py alone reads them.
CLOCK_FUNCTIONS = frozenset({"monotonic", "time", "perf_counter"})
CLOCKS = REPO / "foundation" / "clocks.py"
#: Modules that still read a clock of their own, each to move to foundation/clocks.py (then leave this set).
CLOCK_READERS_LEFT: frozenset[str] = frozenset()


def clock_reads(source: str) -> list[int]:
    """The lines where ``source`` reads (or hands on) a process clock of the time module:
    ``time.monotonic()``, ``clock=time.monotonic``, ``from time import monotonic``."""
    tree = ast.parse(source)
    return sorted([n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                   and n.value.id == "time" and n.attr in CLOCK_FUNCTIONS]
                  + [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "time"
                     and any(a.name in CLOCK_FUNCTIONS for a in n.names)])


@pytest.mark.parametrize("path", [p for p in product_files() if p != CLOCKS], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_clock_is_read_through_foundation_clocks(path: Path) -> None:
    """A deadline from one clock compared with another's instant is off by decades (foundation/clocks.py):
    the instants come from its Clock (or its ``monotonic_seconds``), injected so tests can drive them."""
    reads = clock_reads(path.read_text())
    if path.relative_to(REPO).as_posix() in CLOCK_READERS_LEFT:
        assert reads, f"{path.relative_to(REPO)} reads no clock of its own now: take it out of CLOCK_READERS_LEFT"
        return
    assert reads == [], f"{path.relative_to(REPO)} reads the time module's clock at lines {reads}: use foundation/clocks.py"


def test_the_clock_check_sees_each_way_of_reading_the_clock() -> None:
    """The check can fail: a call, a clock handed on as a default, and an import of the function are seen."""
    source = ("import time\nfrom time import perf_counter\n\n\ndef f(clock=time.monotonic):\n    return time.time()\n")
    assert clock_reads(source) == [2, 5, 6]
    assert clock_reads("import time\n\n\ndef f():\n    time.sleep(1)\n") == []


#: Tables recorded from the API server (every kind it serves, the kinds it bans as owners): its
#: names, not the names of what the product renders, reads and writes.
SERVER_TABLES = frozenset({"src/memcached_gitops/lists.py", "schemas/objectmeta.py"})
IDENTITIES = REPO / "foundation" / "identities.py"
PRODUCT = REPO / "foundation" / "product.py"


def spelled_once() -> frozenset[str]:
    """The names foundation/identities.py spells: kinds, grouped apiVersions, annotation and label
    names, Lease names (a core apiVersion, ``v1``, is too short to be told from other words); and
    the product's name, foundation/product.py's."""
    from memcached_gitops.foundation import identities, product

    assigned = {t.id for n in ast.parse(IDENTITIES.read_text()).body if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}  # its own, not the product's NAME it imports
    resources = [v for v in vars(identities).values() if isinstance(v, identities.Resource)]
    names = {v for k, v in vars(identities).items() if k in assigned and isinstance(v, str)}
    return frozenset(names | {r.kind for r in resources} | {r.api_version for r in resources if r.group} | {product.NAME})


def identity_literals(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    return sorted((n.lineno, n.value) for n in ast.walk(ast.parse(source))
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names)


@pytest.mark.parametrize("path", [p for p in product_files() if p not in (IDENTITIES, PRODUCT)],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_identity_is_spelled_in_foundation_identities_only(path: Path) -> None:
    """A kind, an apiVersion, an annotation or a Lease name spelled twice can change in one place
    only: the renderer and the reconciler would then name two different things."""
    if path.relative_to(REPO).as_posix() in SERVER_TABLES:
        return
    found = identity_literals(path.read_text(), spelled_once())
    assert found == [], f"{path.relative_to(REPO)} spells names of foundation/identities.py: {found}"


def test_the_identity_check_sees_a_name_spelled_again() -> None:
    names = spelled_once()
    assert {"Memcached", "apps/v1", "PodDisruptionBudget", "cache.example.com/reconcile", "memcached-gitops-leader",
            "app.kubernetes.io/instance", "memcached-gitops"} <= names
    assert identity_literals('KIND = "Memcached"\nx = {"apiVersion": "apps/v1"}\n"""Memcached"""\n', names) == [
        (1, "Memcached"), (2, "apps/v1"), (3, "Memcached")]
