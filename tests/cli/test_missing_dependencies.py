"""A dependency the install lacks is one line naming what installs it, exit 2, never a traceback.

Each case runs the console script's main in a fresh interpreter whose import system refuses one
module (a finder first on ``sys.meta_path`` that raises ModuleNotFoundError for it, as Python does
for a module that is not installed, and that ``importlib.util.find_spec`` passes on), so the real
command path meets the absence where it first needs the module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BLOCKER = """
import sys
BLOCKED = {blocked!r}

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Absent())
sys.argv = ["memcached-gitops", *{args!r}]
from memcached_gitops.entry import main
main()
"""

README_CR = """apiVersion: cache.example.com/v1alpha1
kind: Memcached
metadata: {name: sessions, namespace: shop}
spec:
  size: 3
  resources: {limits: {memory: 1Gi, cpu: "2"}, requests: {memory: 1Gi, cpu: 500m}}
"""


def run_without(blocked: set[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = BLOCKER.format(blocked=sorted(blocked), args=args)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)


def assert_one_line(proc: subprocess.CompletedProcess[str], names: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert names in proc.stderr, proc.stderr


@pytest.fixture
def cr(tmp_path: Path) -> Path:
    path = tmp_path / "cache.yaml"
    path.write_text(README_CR)
    return path


@pytest.mark.parametrize("command", ["validate", "render"])
def test_without_cel_python_the_crds_rules_say_how_to_repair_the_install(cr: Path, command: str) -> None:
    proc = run_without({"celpy"}, [command, str(cr)], cr.parent)
    assert_one_line(proc, "install memcached-gitops again")
    assert "cel-python" in proc.stderr


@pytest.mark.parametrize("module", ["kubernetes", "prometheus_client", "cryptography"])
@pytest.mark.parametrize("command", [["diff"], ["reconcile", "--once"]])
def test_without_a_module_of_the_cluster_extra_a_cluster_command_names_the_extra(
        cr: Path, module: str, command: list[str]) -> None:
    args = [*command, str(cr)] if command == ["diff"] else command
    proc = run_without({module}, args, cr.parent)
    assert_one_line(proc, "pip install 'memcached-gitops[cluster]'")


@pytest.mark.parametrize("module", ["kubernetes", "prometheus_client", "cryptography", "celpy", "lark"])
def test_an_import_that_fails_past_the_up_front_check_is_one_line_too(module: str, tmp_path: Path) -> None:
    # the up-front checks cannot see every import (a module present but broken, one imported deep in a
    # command): the console script's guard turns any of these into the same one line
    code = (f"import sys\nfrom memcached_gitops.commands import guarded\n"
            f"def command():\n    raise ModuleNotFoundError('No module named {module}', name='{module}.sub')\n"
            "guarded(command)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert_one_line(proc, "memcached-gitops")


def test_an_import_error_of_our_own_code_keeps_its_traceback(tmp_path: Path) -> None:
    # a bug is not a missing extra: it must stay loud
    code = ("from memcached_gitops.commands import guarded\n"
            "def command():\n    raise ModuleNotFoundError('No module named x', name='memcached_gitops.nothing')\n"
            "guarded(command)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 1 and "Traceback" in proc.stderr


def test_without_kustomize_an_overlay_names_the_extra_that_brings_kubectl(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources: [cache.yaml]\n")
    (app / "cache.yaml").write_text(README_CR)
    empty = tmp_path / "nothing"
    empty.mkdir()
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "render", str(app)], capture_output=True, text=True,
                          env={"PATH": str(empty), "HOME": str(tmp_path)}, cwd=REPO, timeout=60)
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.returncode != 0 and "pip install 'memcached-gitops[kustomize]'" in proc.stderr
