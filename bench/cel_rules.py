"""What the CRD's CEL rules cost ``render``: CRs with ``spec.resources`` (whose rules the validator
evaluates with cel-python) beside the same CRs without, one CR and a thousand.

Run:  python bench/cel_rules.py [--runs 5]
Prints the median wall time of each ``memcached-gitops render`` (a fresh process each) and the
command to reproduce. A CR without resources never imports cel-python; one with them pays for its
import and parser (once a process) and its evaluation (remembered per distinct value: the thousand
CRs here draw 30 distinct resources). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = shutil.which("memcached-gitops") or str(Path(sys.executable).with_name("memcached-gitops"))


def crs(count: int, resources: bool, seed: int = 1) -> str:
    draw = random.Random(seed)
    docs = []
    for i in range(count):
        mem, cpu = draw.choice([64, 128, 256, 512, 1024, 2048]), draw.choice(["100m", "250m", "500m", "1", "2"])
        block = (f"  resources:\n    limits: {{memory: {mem}Mi, cpu: '{cpu}'}}\n    requests: {{memory: {mem}Mi, cpu: 100m}}\n"
                 if resources else "")
        docs.append(f"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: c{i}, namespace: shop}}\n"
                    f"spec:\n  size: 2\n{block}")
    return "---\n".join(docs)


def median_seconds(path: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([CLI, "render", str(path)], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for count in (1, 1000):
            figures = []
            for resources in (False, True):
                path = Path(tmp, f"{count}-{resources}.yaml")
                path.write_text(crs(count, resources))
                figures.append(median_seconds(path, args.runs))
            print(f"{count:>5} CR(s): without resources {figures[0]:.2f} s, with {figures[1]:.2f} s "
                  f"(+{figures[1] - figures[0]:.2f} s)")
    print(f"command: {sys.executable} bench/cel_rules.py --runs {args.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
