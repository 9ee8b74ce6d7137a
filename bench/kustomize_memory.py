"""Peak memory of one ``kubectl kustomize`` build, unbounded and under the data-segment limit the
product sets (foundation/kustomize.py ``_memory_bound``): a trivial kustomization (what any build
needs) and a 90 KB alias bomb (ten objects, each a list of 4,000 items named 99 more times).

Each build runs in a child; its peak is the kernel's ru_maxrss of the waited child. Not a test:
nothing here asserts a figure. The unbounded bomb holds about 2 GB for some seconds.

    python bench/kustomize_memory.py [kubectl]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from memcached_gitops.foundation.kustomize import DEFAULT_MAX_MEMORY_MIB

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"


def bomb(docs: int = 10) -> str:
    items = ", ".join(["1"] * 4000)
    return "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b{i}}}\nx:\n  base: &a [{items}]\n"
                   + "".join(f"  k{j}: *a\n" for j in range(99)) for i in range(docs))


def measure(kubectl: str, folder: Path, memory: int | None) -> str:
    """One build in a child of a child, so the peak read is this build's alone."""
    code = ("import resource, subprocess, sys, time\nfrom memcached_gitops.foundation.kustomize import _memory_bound\n"
            f"t = time.monotonic()\np = subprocess.run({[kubectl, 'kustomize', str(folder)]!r}, capture_output=True, "
            f"timeout=120, **_memory_bound({memory!r}))\n"
            "print(f'exit {p.returncode}, {time.monotonic() - t:.1f} s, peak RSS '"
            "f'{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10} MiB, {len(p.stdout)} bytes out')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    kubectl = sys.argv[1] if len(sys.argv) > 1 else shutil.which("kubectl") or "kubectl"
    limit = int(DEFAULT_MAX_MEMORY_MIB * 2**20)
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("trivial", CM), ("alias bomb (90 KB)", bomb())):
            folder = Path(tmp) / name.split()[0]
            folder.mkdir()
            (folder / "r.yaml").write_text(text)
            (folder / "kustomization.yaml").write_text("resources: [r.yaml]\n")
            for memory in (None, limit):
                bound = f"RLIMIT_DATA {memory >> 20} MiB" if memory else "unbounded"
                print(f"{name:20} {bound:22} {measure(kubectl, folder, memory)}")


if __name__ == "__main__":
    main()
