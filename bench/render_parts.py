"""Where the time of rendering 10,000 CRs goes, part by part, beside the libyaml floor, in one process.

Run:  python bench/render_parts.py [--crs 10000] [--runs 5]

bench/render_validate.py times the whole command (start-up included) against the floor (libyaml
parsing the input and dumping the same output documents). This splits the command's work into its
parts, each the median of --runs in-process runs, so that the gap to the floor is explained part by
part: reading (our reader against libyaml's CSafeLoader), validating, rendering, writing (our
dumper against CSafeDumper on the same documents), and the start-up the floor does not pay.
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.render import DEFAULT_IMAGE, write_yaml
from memcached_gitops.render.desired import validate_and_render
from memcached_gitops.schemas import Validator, load_crd
from render_validate import make_input  # bench/, beside this script


def median(runs: int, work: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"command: python bench/render_parts.py --crs {args.crs} --runs {args.runs}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "crs.yaml"
        make_input(path, args.crs)
        data = path.read_bytes()
    validator = Validator(load_crd())
    crs = [d.value for d in iter_documents(data)]
    verdicts = [validator.validate(dict(cr)) for cr in crs]
    manifests = [m for cr in crs for m in validate_and_render(validator, dict(cr), DEFAULT_IMAGE).manifests]

    ours = {
        "read (foundation/yamlreader)": median(args.runs, lambda: list(iter_documents(data))),
        "validate (schemas/validator)": median(args.runs, lambda: [validator.validate(dict(cr)) for cr in crs]),
        "render (render/deployment, companions)": median(
            args.runs, lambda: [validate_and_render(validator, dict(cr), DEFAULT_IMAGE) for cr in crs]) - 0.0,
        "write (render/serialize)": median(args.runs, lambda: write_yaml(manifests, io.StringIO())),
    }
    ours["render (render/deployment, companions)"] -= ours["validate (schemas/validator)"]  # validate_and_render includes it
    floor = {
        "read (CSafeLoader)": median(args.runs, lambda: list(yaml.load_all(data, Loader=yaml.CSafeLoader))),
        "write (CSafeDumper)": median(args.runs, lambda: yaml.dump_all(manifests, io.StringIO(), Dumper=yaml.CSafeDumper,
                                                                       sort_keys=False, default_flow_style=False, explicit_start=True)),
    }
    start = median(max(3, args.runs), lambda: subprocess.run([sys.executable, "-m", "memcached_gitops", "--version"],
                                                             capture_output=True, check=True))
    bare = median(max(3, args.runs), lambda: subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=True))
    print(f"{args.crs} CRs, {len(manifests)} objects written; {sum(v.ok for v in verdicts)} valid\n")
    for name, seconds in ours.items():
        print(f"  ours   {name:42s} {seconds:6.2f} s")
    print(f"  ours   {'start-up (the console script, --version)':42s} {start:6.2f} s  (python -c pass: {bare:.2f} s)")
    for name, seconds in floor.items():
        print(f"  floor  {name:42s} {seconds:6.2f} s")
    total, base = sum(ours.values()) + start, sum(floor.values())
    print(f"\n  ours {total:.2f} s against the floor's {base:.2f} s: {total / base:.2f}x")
    print(f"  gap by part: read {ours['read (foundation/yamlreader)'] - floor['read (CSafeLoader)']:+.2f} s, "
          f"validate {ours['validate (schemas/validator)']:+.2f} s, render {ours['render (render/deployment, companions)']:+.2f} s, "
          f"write {ours['write (render/serialize)'] - floor['write (CSafeDumper)']:+.2f} s, start-up {start:+.2f} s")


if __name__ == "__main__":
    main()
