"""Peak memory of the Argo CD plugin's generate against its input: RSS per MB in.

Run:  python bench/generate_memory.py [--crs 1000 5000 25000]

Tiny CRs (about 100 bytes each, the worst case: each renders to a Deployment, a headless Service
and a PodDisruptionBudget of about 3.7 KB of YAML) in one file of a temporary application
directory; ``memcached-gitops argocd-generate .`` runs in a fresh process as the cmp-server runs
it, and its peak RSS (getrusage), exit code, seconds and bytes written are printed. Output is
streamed to stdout object by object, and a run holds at most 20,000 objects (--max-objects,
MEMCACHED_GITOPS_MAX_OBJECTS), so the peak stays bounded whatever the 10M input cap admits; the
sidecar's limit is 256Mi (kustomize/components/argocd-cmp). Not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE = (
    "import resource, runpy, sys; sys.argv=['memcached-gitops', 'argocd-generate', '.']\n"
    "try:\n    runpy.run_module('memcached_gitops', run_name='__main__')\n"
    "except SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
    "sys.stderr.write(f'@@ {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} {code}\\n')\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, nargs="+", default=[1000, 5000, 25_000])
    args = parser.parse_args()
    print(f"# python {sys.version.split()[0]}; command: python bench/generate_memory.py --crs {' '.join(map(str, args.crs))}")
    for n in args.crs:
        with tempfile.TemporaryDirectory() as tmp:
            crs = Path(tmp) / "crs.yaml"
            crs.write_text("---\n".join(f"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: c{i}}}\n"
                                        f"spec: {{size: 2}}\n" for i in range(n)))
            size = crs.stat().st_size
            out = Path(tmp) / "out"
            start = time.perf_counter()
            with out.open("wb") as f:
                proc = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp, stdout=f, stderr=subprocess.PIPE, text=True,
                                      env={**os.environ, "ARGOCD_APP_PARAMETERS": "null"})
            secs = time.perf_counter() - start
            rss_kb, code = next(x for x in proc.stderr.splitlines() if x.startswith("@@ ")).split()[1:]
            rss = int(rss_kb) / 1024
            print(f"{n:>6} CRs, {size / 1e6:5.2f} MB in: exit {code}, peak RSS {rss:5.0f} MiB "
                  f"({rss / (size / 1e6):6.1f} MiB per MB in), {out.stat().st_size / 1e6:6.1f} MB out, {secs:5.1f} s")


if __name__ == "__main__":
    main()
