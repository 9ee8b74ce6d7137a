"""The built wheel, installed as a user installs it: one import namespace, a light plain install.

The wheel is built from exactly what the Dockerfile's build stage copies, offline (the build
backend comes from the test environment, ``--no-build-isolation``), and installed with pip into a
fresh venv. Its dependencies are not downloaded again: the plain install's dependency closure is
read from the wheel's own metadata and linked into the venv from the test environment, so the
venv holds that closure and nothing else, and ``pip check`` confirms it is complete.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import DATA, REPO, copy_package_sources
from tests.locks import TEST_LOCK, read_lock

EXAMPLES = REPO / "examples" / "crs"


def _closure(requirements: list[str]) -> dict[str, md.Distribution]:
    """The installed distributions a list of requirements pulls in (no extras), recursively."""
    env = {"extra": ""}
    found: dict[str, md.Distribution] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in found or (req.marker and not req.marker.evaluate(env)):
            continue
        found[name] = dist = md.distribution(req.name)
        todo += [Requirement(r) for r in dist.requires or []]
    return found


def _link_into(dist: md.Distribution, site: Path) -> None:
    """Make an installed distribution (its files and its dist-info) visible in another site-packages."""
    for file in dist.files or []:
        if ".." in file.parts or file.parts[0] == "__pycache__":
            continue  # console scripts live outside site-packages; the venv does not need them
        target = site / file
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(Path(str(dist.locate_file(file))).resolve())


class Install:
    def __init__(self, wheel: Path, venv: Path) -> None:
        self.wheel, self.venv = wheel, venv
        self.python = venv / "bin" / "python"
        self.site = Path(subprocess.check_output(
            [self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "MEMCACHED_IMAGE"}
        return subprocess.run([self.venv / "bin" / "memcached-gitops", *args], capture_output=True, text=True, env=env,
                              cwd=self.venv, timeout=60)

    def metadata(self) -> md.PackageMetadata:
        with zipfile.ZipFile(self.wheel) as z:
            name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            return md.PathDistribution(zipfile.Path(z, name).parent).metadata  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    tmp = tmp_path_factory.mktemp("wheel")
    src, dist, venv = tmp / "src", tmp / "dist", tmp / "venv"
    copy_package_sources(src)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", dist, src], check=True, timeout=300)
    [wheel] = dist.glob("*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    result = Install(wheel, venv)
    for dependency in _closure(result.metadata().get_all("Requires-Dist") or []).values():
        _link_into(dependency, result.site)
    subprocess.run(pip + ["--python", result.python, "install", "--no-deps", "--no-index", wheel], check=True, timeout=300)
    return result


def test_the_wheel_installs_one_top_level_name(install: Install) -> None:
    with zipfile.ZipFile(install.wheel) as z:
        names = z.namelist()
        [top_level] = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert z.read(top_level).decode().split() == ["memcached_gitops"]
    assert {n.split("/")[0] for n in names} == {"memcached_gitops", top_level.split("/")[0]}
    for package in ("foundation", "foundation/yamlreader", "render", "schemas", "reconciler", "reconciler/decisions", "reconciler/client",
                    "reconciler/orchestration"):
        assert f"memcached_gitops/{package}/__init__.py" in names
    assert {"memcached_gitops/schemas/memcached-crd.yaml", "memcached_gitops/schemas/memcached-crd.json"} <= set(names)
    # what pip actually put into site-packages, from the installed RECORD
    installed = md.Distribution.at(next(install.site.glob("memcached_gitops-*.dist-info")))
    tops = {f.parts[0] for f in installed.files or [] if ".." not in f.parts}
    assert tops == {"memcached_gitops", top_level.split("/")[0]}
    scripts = [f.name for f in installed.files or [] if ".." in f.parts and "__pycache__" not in f.parts]
    assert scripts == ["memcached-gitops"]


def test_a_plain_install_leaves_the_kubernetes_client_out(install: Install) -> None:
    requires = [Requirement(r) for r in install.metadata().get_all("Requires-Dist") or []]
    plain = {canonicalize_name(r.name) for r in requires if not r.marker or r.marker.evaluate({"extra": ""})}
    cluster = {canonicalize_name(r.name) for r in requires if r.marker and r.marker.evaluate({"extra": "cluster"})}
    assert "kubernetes" not in plain and "kubernetes" in cluster
    assert "kubernetes" not in _closure([str(r) for r in requires])
    check = subprocess.run([sys.executable, "-m", "pip", "--python", install.python, "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    probe = subprocess.run([install.python, "-c", "import importlib.util as u; print(u.find_spec('kubernetes'))"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "None"


def test_validate_and_render_work_in_a_plain_install(install: Install) -> None:
    ok = install.cli("validate", str(EXAMPLES))
    assert ok.returncode == 0, ok.stderr
    bad = install.cli("validate", str(DATA / "bad-crs.yaml"))
    assert bad.returncode == 1 and f"{DATA / 'bad-crs.yaml'}:7:3: Memcached/too-big: spec.size:" in bad.stderr
    rendered = install.cli("render", str(EXAMPLES / "memcached-sample.yaml"))
    assert rendered.returncode == 0, rendered.stderr
    assert "kind: Deployment" in rendered.stdout and "name: memcached-sample" in rendered.stdout


@pytest.mark.parametrize("args", [("reconcile", "--once"), ("diff", str(EXAMPLES / "memcached-sample.yaml"))])
def test_cluster_commands_say_what_to_install(install: Install, args: tuple[str, ...]) -> None:
    proc = install.cli(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"error: {args[0]} talks to a cluster and needs the Kubernetes client: pip install 'memcached-gitops[cluster]'"]


def test_the_container_image_installs_the_cluster_and_kustomize_extras() -> None:
    # the image every kustomize overlay runs (kustomize/components/image) is the Dockerfile's; the Argo CD
    # sidecar runs it too, and builds overlays with the kubectl (embedded kustomize) of the [kustomize] extra
    text = (REPO / "Dockerfile").read_text()
    assert "memcached-gitops[cluster,kustomize]" in text.split("\nFROM ")[-1]
    assert "--require-hashes -r requirements/image.txt" in text


def test_the_test_extra_and_so_ci_install_the_cluster_extra() -> None:
    test_extra = [Requirement(r) for r in md.requires("memcached-gitops") or [] if 'extra == "test"' in r]
    assert any(canonicalize_name(r.name) == "memcached-gitops" and "cluster" in r.extras for r in test_extra)
    # CI installs the lock of the [test] extra, which therefore pins the Kubernetes client
    assert "-r requirements/test.txt" in (REPO / ".ci" / "run").read_text()
    assert "kubernetes" in read_lock(TEST_LOCK)
