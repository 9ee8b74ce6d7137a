"""Plant hand-made mutants one at a time, run the tests that must catch each, restore the file.

Shared by mutation/seams.py (edits where components meet) and mutation/modes.py (edits visible only
in a mode of the whole process): each names its mutants as ``name -> (file, old text, new text,
tests)``. The file is restored from the text read, never from git, so the run refuses to start
while a file it would edit has uncommitted changes.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: name -> (path under the root, the text replaced (once in the file), its replacement, the tests to run)
Mutants = dict[str, tuple[str, str, str, list[str]]]


def run(name: str, mutants: Mutants, script: str) -> bool:
    """Plant one mutant, run its tests; True when they caught it."""
    path, old, new, tests = mutants[name]
    file = ROOT / path
    text = file.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{name}: the text to mutate is not in {path} once; update {script}")
    file.write_text(text.replace(old, new))
    try:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                              capture_output=True, text=True, timeout=1800)
        failed = [line.split("::", 1)[1].split(" ")[0] for line in proc.stdout.splitlines() if line.startswith("FAILED")]
        caught = proc.returncode != 0
        print(f"{'caught ' if caught else 'SURVIVED'}  {name}  ({time.monotonic() - started:.0f} s)"
              + (f": {', '.join(failed)}" if failed else ""), flush=True)
        return caught
    finally:
        file.write_text(text)


def main(names: list[str], mutants: Mutants, script: str, label: str) -> int:
    """Run the named mutants (all when none is named); exit 0 only when every one was caught."""
    names = names or list(mutants)
    dirty = subprocess.run(["git", "diff", "--quiet", "--", *{mutants[n][0] for n in names}], cwd=ROOT).returncode
    if dirty:
        raise SystemExit(f"{script}: commit or stash the changes of the files it mutates first")
    caught = sum(run(n, mutants, script) for n in names)
    print(f"{label}: {caught} of {len(names)} mutants caught ({100 * caught / len(names):.0f}%)")
    return 0 if caught == len(names) else 1
