"""Benchmarks of hostile input: peak memory for a 1 GB input, and unknown-key scaling.

Run:  python bench/untrusted_input.py [--gigabytes 1] [--streamed-mb 50]

1. Peak RSS of ``memcached-gitops validate`` on a 1 GB file of CRs, and the time to refuse a 14 MB
   and a 100 MB file (a regular file is refused on its size, before a byte is parsed),  (generated in a temporary
   directory, deleted afterwards): with the default cap (10M, as Argo CD's
   --max-combined-directory-manifests-size) the input is refused after 10 MB are read; with the
   cap raised, ``--streamed-mb`` MB are validated (documents are parsed one at a time, the valid
   CRs are kept, so memory grows with the input and the cap is what bounds it).
2. Seconds to validate one CR with 5k/10k/20k/40k unknown keys under ``spec`` (one error per key):
   linear growth is the point (it was quadratic: 39 s for 20k).
3. Seconds to read a 10,000-deep flow sequence (the nesting limit) and to refuse 50,000 levels.
Not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = (HERE.parent / "examples" / "crs" / "memcached-sample.yaml").read_text()
PROBE = (
    "import resource, runpy, sys; sys.argv=['memcached-gitops', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('memcached_gitops', run_name='__main__')\n"
    "except SystemExit as e:\n    code = e.code\n"
    "sys.stderr.write(f'@@ {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} {code}\\n')\n"
)


def write_crs(path: Path, size: int) -> int:
    """CR documents until ``size`` bytes; returns how many."""
    block = "".join(f"---\n{SAMPLE.replace('memcached-sample', f'cache-{i}')}" for i in range(1000)).encode()
    written = n = 0
    with path.open("wb") as f:
        while written < size:
            f.write(block)
            written += len(block)
            n += 1000
    return n


def peak(*args: str) -> tuple[int, str, float]:
    """(peak RSS in MiB, exit code, seconds) of one run in a fresh process."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    line = next(x for x in proc.stderr.splitlines() if x.startswith("@@ "))
    rss_kb, code = line.split()[1:]
    return int(rss_kb) // 1024, code, elapsed


def unknown_keys(n: int) -> float:
    from memcached_gitops.render import DEFAULT_IMAGE
    from memcached_gitops.schemas import Validator, load_crd

    from memcached_gitops.pipeline import process

    text = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: many}\nspec:\n"
    text += "".join(f"  k{i}: {i}\n" for i in range(n))
    validator = Validator(load_crd())
    start = time.perf_counter()
    result = process([("many.yaml", text)], validator, DEFAULT_IMAGE, do_render=False)
    elapsed = time.perf_counter() - start
    assert len(result.errors) == n
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--streamed-mb", type=int, default=50)
    args = parser.parse_args()
    print(f"# python {sys.version.split()[0]}; command: python bench/untrusted_input.py "
          f"--gigabytes {args.gigabytes:g} --streamed-mb {args.streamed_mb}")
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.yaml"
        n = write_crs(big, int(args.gigabytes * 1e9))
        rss, code, secs = peak("validate", str(big))
        print(f"{args.gigabytes:g} GB input ({big.stat().st_size:,} bytes, {n:,} CRs), default cap 10M: exit {code}, "
              f"peak RSS {rss} MiB, {secs:.2f} s")
        for megabytes in (14, 100):
            big.unlink()
            write_crs(big, megabytes * 1_000_000)
            best = min(peak("validate", str(big))[2] for _ in range(5))
            print(f"{megabytes} MB file over the 10M cap: refused on its size before any YAML is read, "
                  f"{best * 1000:.0f} ms for the whole process (best of 5)")
        big.unlink()
        n = write_crs(big, args.streamed_mb * 1_000_000)
        rss, code, secs = peak("validate", "--max-input-size", "2G", str(big))
        print(f"{args.streamed_mb} MB input ({n:,} CRs), cap raised to 2G: exit {code}, peak RSS {rss} MiB, {secs:.2f} s "
              "(read one document at a time, but validate keeps every CR for its report: the cap is what bounds memory)")
    baseline, _, _ = peak("--version")
    print(f"baseline (--version): peak RSS {baseline} MiB")
    for n in (5_000, 10_000, 20_000, 40_000):
        secs = unknown_keys(n)
        print(f"{n:>6} unknown keys under spec: {secs:.3f} s ({secs / n * 1e6:.1f} µs per key)")
    from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents

    for depth in (10_000, 50_000):
        text = "a: " + "[" * depth + "]" * depth + "\n"
        start = time.perf_counter()
        try:
            list(iter_documents(text))
            verdict = "read"
        except YAMLInputError as exc:
            verdict = exc.message
        print(f"{depth:>6}-deep flow sequence: {verdict} in {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
