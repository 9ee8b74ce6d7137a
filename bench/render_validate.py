"""Benchmarks of the CI path: cold start, render and validate of 10,000 CRs, peak memory.

Run:  python bench/render_validate.py [--crs 10000] [--runs 5]
Each figure is the median of --runs runs of the real console script in a fresh process, printed
beside its floor (``python -c pass`` for start-up; for rendering, libyaml parsing the same input
and dumping the same output documents). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "examples" / "crs" / "memcached-sample.yaml"
TARGETS = {"cold": 0.150, "yaml_ratio": 1.5, "json": 1.5, "validate": 1.0}


def make_input(path: Path, n: int) -> None:
    """n CRs in one multi-document file, with a spread of names, namespaces and sizes."""
    with path.open("w") as f:
        for i in range(n):
            f.write(
                f"---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: cache-{i}\n"
                f"  namespace: team-{i % 7}\nspec:\n  size: {1 + i % 3}\n  containerPort: 11211\n"
            )


def timed(cmd: list[str], runs: int, stdin: Path | None = None) -> tuple[float, int]:
    """Median wall time of ``cmd`` and the peak RSS (KiB) of its children."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with open(stdin or os.devnull, "rb") as inp:
            subprocess.run(cmd, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


FLOOR = """
import sys, yaml
from yaml import CSafeLoader, CSafeDumper
docs = list(yaml.load_all(open(sys.argv[1], 'rb'), Loader=CSafeLoader))
out = list(yaml.load_all(open(sys.argv[2], 'rb'), Loader=CSafeLoader))
import time; t = time.perf_counter()
list(yaml.load_all(open(sys.argv[1], 'rb'), Loader=CSafeLoader))
sys.stdout.write(yaml.dump_all(out, Dumper=CSafeDumper, sort_keys=False, default_flow_style=False, explicit_start=True))
sys.stderr.write(str(time.perf_counter() - t))
"""


def floor_seconds(inp: Path, rendered: Path, runs: int) -> float:
    """libyaml parse of the input + libyaml dump of the rendered documents (loaded beforehand)."""
    times = []
    for _ in range(runs):
        p = subprocess.run([sys.executable, "-c", FLOOR, str(inp), str(rendered)], capture_output=True, check=True)
        times.append(float(p.stderr))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    exe = shutil.which("memcached-gitops")
    if not exe:
        sys.exit("memcached-gitops is not on PATH: pip install . first")
    # a run holds at most MEMCACHED_GITOPS_MAX_OBJECTS objects (20,000 by default): 10,000 CRs and their
    # 26,666 rendered objects are more, so the bound is raised for the measured runs (and said so)
    bound = os.environ.setdefault("MEMCACHED_GITOPS_MAX_OBJECTS", str(max(20_000, 4 * args.crs)))
    print(f"command: python bench/render_validate.py --crs {args.crs} --runs {args.runs}  (MEMCACHED_GITOPS_MAX_OBJECTS={bound})")
    print(f"python {sys.version.split()[0]} on {os.uname().machine}, {os.cpu_count()} cores; medians of {args.runs} runs\n")

    base, _ = timed([sys.executable, "-c", "pass"], args.runs * 4)
    cold, _ = timed([exe, "render", str(SAMPLE)], args.runs * 4)
    print(f"cold start, render 1 CR:        {cold * 1000:7.1f} ms   "
          f"(python -c pass: {base * 1000:.1f} ms; target < {TARGETS['cold'] * 1000:.0f} ms)")

    with tempfile.TemporaryDirectory() as tmp:
        inp, rendered = Path(tmp) / "crs.yaml", Path(tmp) / "out.yaml"
        make_input(inp, args.crs)
        with rendered.open("wb") as out:
            subprocess.run([exe, "render", str(inp)], stdout=out, check=True)
        size_mb = inp.stat().st_size / 1e6
        print(f"input: {args.crs} CRs in one file ({size_mb:.1f} MB)\n")

        render_yaml, _ = timed([exe, "render", str(inp)], args.runs)
        floor = floor_seconds(inp, rendered, args.runs)
        ratio = render_yaml / floor
        print(f"render -> YAML:                 {render_yaml:7.2f} s    floor (libyaml parse + dump): {floor:.2f} s; "
              f"ratio {ratio:.2f}x (target <= {TARGETS['yaml_ratio']}x)")
        render_json, _ = timed([exe, "render", "-o", "json", str(inp)], args.runs)
        print(f"render -> JSON (-o json):       {render_json:7.2f} s    (target < {TARGETS['json']} s)")
        validate, _ = timed([exe, "validate", str(inp)], args.runs)
        print(f"validate:                       {validate:7.2f} s    (target < {TARGETS['validate']} s)")
        probe = subprocess.run(
            [sys.executable, "-c",
             "import resource, runpy, sys\nsys.argv = ['memcached-gitops', 'render', sys.argv[1]]\n"
             "try:\n    runpy.run_module('memcached_gitops', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))", str(inp)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
        )
        peak = int(probe.stderr.decode().strip().splitlines()[-1])
        print(f"peak memory, render {args.crs} CRs: {peak / 1024:7.1f} MiB RSS")


if __name__ == "__main__":
    main()
