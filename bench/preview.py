"""The cost of ``memcached-gitops preview --base main`` against its floor, two plain renders.

Run:  python bench/preview.py [--runs 5]

A git repository of 1,000 CRs over 20 kustomize overlays (50 each) is made in a temporary folder,
with a base commit on ``main`` and a pull request's commit checked out. The preview renders the
repository twice (the merge base, from a temporary ``git worktree``, and the working tree) and
compares the two; its floor is what those two renderings cost without it:
``memcached-gitops render overlays/team-00 ... overlays/team-19`` run twice, one process each
(the same kustomize builds, the same validation and rendering). Two pull requests: one CR's size
changed (the usual review), and every CR's memory changed (4,000 objects to diff). Prints the
median seconds of each and the ratio preview / floor; the goal is at most 1.2. Not a test:
nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CR = ("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: {name}\nspec:\n  size: 2\n"
      "  resources:\n    limits:\n      memory: 128Mi\n")
OVERLAYS, PER_OVERLAY = 20, 50
COMMAND = [sys.executable, "-m", "memcached_gitops"]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def make_repository(repo: Path, change_all: bool) -> list[str]:
    """The repository with its two commits; returns the overlays' folders."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "user.name", "bench")
    folders = []
    for o in range(OVERLAYS):
        folder = repo / "overlays" / f"team-{o:02}"
        folder.mkdir(parents=True)
        (folder / "kustomization.yaml").write_text(f"namespace: team-{o:02}\nresources:\n- caches.yaml\n")
        (folder / "caches.yaml").write_text("---\n".join(CR.format(name=f"cache-{i:03}") for i in range(PER_OVERLAY)))
        folders.append(f"overlays/team-{o:02}")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    for o in range(OVERLAYS) if change_all else [7]:
        path = repo / "overlays" / f"team-{o:02}" / "caches.yaml"
        text = path.read_text()
        path.write_text(text.replace("128Mi", "256Mi") if change_all else text.replace("size: 2", "size: 3", 1))
    git(repo, "commit", "-qam", "pull request")
    return folders


def timed(args: list[str], repo: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=repo, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: exit {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed


def measure(repo: Path, folders: list[str], runs: int) -> tuple[float, float]:
    """(median seconds of the preview, median seconds of two renders), runs interleaved."""
    previews, floors = [], []
    for _ in range(runs):
        floors.append(timed([*COMMAND, "render", *folders], repo) + timed([*COMMAND, "render", *folders], repo))
        previews.append(timed([*COMMAND, "preview", "--base", "main"], repo))
    return statistics.median(previews), statistics.median(floors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    print(f"python bench/preview.py --runs {runs}   ({os.cpu_count()} CPUs; {OVERLAYS * PER_OVERLAY:,} CRs over {OVERLAYS} overlays)")
    for label, change_all in (("one CR's size changed", False), ("every CR's memory changed", True)):
        with tempfile.TemporaryDirectory() as tmp:
            repo = Path(tmp) / "repo"
            folders = make_repository(repo, change_all)
            preview, floor = measure(repo, folders, runs)
        print(f"{label:28} preview --base main: {preview:.2f} s   two renders (the floor): {floor:.2f} s   "
              f"ratio {preview / floor:.2f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
