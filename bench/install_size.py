"""What an install costs a CI job: the plain install against the one with the [cluster] extra.

Run:  python bench/install_size.py
Builds the wheel, then for each of ``memcached-gitops`` and ``memcached-gitops[cluster]`` creates a
fresh venv and runs ``pip install --no-cache-dir`` of the wheel, printing the wall time, the venv's
size on disk and the number of distributions installed. Dependencies come from the configured
package index, as in CI; times depend on the network. Not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _distributions(venv: Path) -> int:
    listed = subprocess.run([venv / "bin" / "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True)
    return len(listed.stdout.splitlines())


def main() -> None:
    print("command: python bench/install_size.py")
    print(f"python {sys.version.split()[0]}; pip install --no-cache-dir into a fresh venv (dependencies from the index)\n")
    with tempfile.TemporaryDirectory() as tmp:
        dist = Path(tmp) / "dist"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, str(REPO)], check=True,
                       cwd=tmp)
        [wheel] = dist.glob("*.whl")
        for extra in ("", "[cluster]"):
            venv = Path(tmp) / f"venv{extra}"
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            base, before = _size(venv), _distributions(venv)
            start = time.perf_counter()
            subprocess.run([venv / "bin" / "pip", "install", "-q", "--no-cache-dir", f"memcached-gitops{extra} @ {wheel.as_uri()}"],
                           check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}, stderr=subprocess.DEVNULL)
            seconds = time.perf_counter() - start
            count = _distributions(venv) - before
            print(f"memcached-gitops{extra:10s} {seconds:5.1f} s   {(_size(venv) - base) / 1e6:6.1f} MB   {count} distributions")


if __name__ == "__main__":
    main()
