"""Benchmarks of hostile input: peak memory for a 1 GB input, and unknown-key scaling.

Run:  python bench/untrusted_input.py [--gigabytes 1] [--streamed-mb 50] [--only-nodes]

1. Peak RSS of ``memcached-gitops validate`` on a 1 GB file of CRs, and the time to refuse a 14 MB
   and a 100 MB file (a regular file is refused on its size, before a byte is parsed),  (generated in a temporary
   directory, deleted afterwards): with the default cap (10M, as Argo CD's
   --max-combined-directory-manifests-size) the input is refused after 10 MB are read; with the
   cap raised, ``--streamed-mb`` MB are validated (documents are parsed one at a time, the valid
   CRs are kept, so memory grows with the input and the cap is what bounds it).
2. Seconds to validate one CR with 5k/10k/20k/40k unknown keys under ``spec`` (one error per key):
   linear growth is the point (it was quadratic: 39 s for 20k).
3. Seconds to read a 10,000-deep flow sequence (the nesting limit) and to refuse 50,000 levels.
4. Peak RSS of ``validate .`` and ``argocd-generate`` (the Argo CD plugin, sidecar limit 256Mi) on the
   costliest shapes per byte, a flow list of empty maps (``x: [{},{},...]``) and of one-letter scalars,
   just under and just over the run's node budget (``MAX_NODES``), and of the kustomize graph check
   on a chain of eight 256 KiB kustomization files of empty maps (its own ``MAX_GRAPH_NODES``).
Not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = (HERE.parent / "examples" / "crs" / "memcached-sample.yaml").read_text()
PROBE = (
    "import resource, runpy, sys; sys.argv=['memcached-gitops', *sys.argv[1:]]; code = 0\n"
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


def peak(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """(peak RSS in MiB, exit code, seconds) of one run in a fresh process."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd,
                          env=None if env is None else {**os.environ, **env})
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


def flow_list(item: str, count: int) -> str:
    """A ConfigMap whose ``x`` is a flow list of ``count`` items ``item``."""
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nx: [" + (item + ",") * (count - 1) + item + "]\n"


def node_budget() -> None:
    """Section 4: the worst shapes per byte at the node budgets of the run and of the graph check."""
    from memcached_gitops.foundation.kustomize_graph import MAX_GRAPH_NODES
    from memcached_gitops.foundation.yamlreader import MAX_NODES

    plugin = {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": "*", "ARGOCD_ENV_PASS_THROUGH_KINDS": "ConfigMap"}
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp)
        (app / "memcached-sample.yaml").write_text(SAMPLE)
        for item, what in (("{}", "empty maps"), ("a", "scalars")):
            for count in (MAX_NODES - 100, MAX_NODES + 100):
                (app / "cm.yaml").write_text(flow_list(item, count))
                size = (app / "cm.yaml").stat().st_size
                for args, env, label in ((("validate", "."), None, "validate ."),
                                         (("argocd-generate",), plugin, "argocd-generate (ConfigMap passed through)")):
                    rss, code, secs = peak(*args, cwd=app, env=env)
                    print(f"{count:,} {what} ({size:,} bytes), budget {MAX_NODES:,}: {label}: exit {code}, "
                          f"peak RSS {rss} MiB, {secs:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "memcached-sample.yaml").write_text(SAMPLE)
        n = (256 * 1024 - 200) // 3
        for depth in range(8):
            folder.mkdir(exist_ok=True)
            head = "resources: [memcached-sample.yaml, k]\n" if depth == 0 else "resources: [k]\n" if depth < 7 else ""
            (folder / "kustomization.yaml").write_text(head + "metadata: {x: [" + "{}," * n + "{}]}\n")
            folder = folder / "k"
        rss, code, secs = peak("argocd-generate", cwd=Path(tmp))
        print(f"graph check, 8 chained kustomization files of 256 KiB of empty maps, budget {MAX_GRAPH_NODES:,}: "
              f"exit {code}, peak RSS {rss} MiB, {secs:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--streamed-mb", type=int, default=50)
    parser.add_argument("--only-nodes", action="store_true", help="section 4 alone")
    args = parser.parse_args()
    print(f"# python {sys.version.split()[0]}; command: python bench/untrusted_input.py "
          f"--gigabytes {args.gigabytes:g} --streamed-mb {args.streamed_mb}{' --only-nodes' if args.only_nodes else ''}")
    if args.only_nodes:
        node_budget()
        return
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
    node_budget()


if __name__ == "__main__":
    main()
