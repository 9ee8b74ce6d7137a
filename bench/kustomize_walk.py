"""What the walk of a kustomization graph (foundation/kustomize_graph.py) costs before each build, beside
the build itself (``kubectl kustomize``), and how soon it refuses a diamond of bases.

Three repositories in a temporary folder: one overlay with a base, a component, patches and a
generator (the usual shape); a chain of 100 bases; a diamond whose 9 levels kustomize would load
1,023 times. Each walk is timed with ``timeit`` (median of 5 repeats); the build once, as the
plugin runs it. Not a test: nothing here asserts a time.

    python bench/kustomize_walk.py
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
import timeit
from pathlib import Path

from memcached_gitops.foundation.kustomize_graph import GraphRefused, check_graph

CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: %s}\nspec: {size: 1}\n"


def usual(root: Path) -> Path:
    (root / "base").mkdir()
    (root / "base" / "cr.yaml").write_text(CR % "a")
    (root / "base" / "kustomization.yaml").write_text("resources: [cr.yaml]\n")
    (root / "team").mkdir()
    (root / "team" / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                                      "labels: [{pairs: {team: shop}}]\n")
    app = root / "prod"
    app.mkdir()
    (app / "size.yaml").write_text(CR % "a")
    (app / "kustomization.yaml").write_text("namespace: prod\nresources: [../base]\ncomponents: [../team]\n"
                                            "patches: [{path: size.yaml}]\nconfigMapGenerator: [{name: s, literals: [a=b]}]\n")
    return app


def chain(root: Path, length: int = 100) -> Path:
    for i in range(length):
        (root / f"c{i}").mkdir()
        text = f"resources: [../c{i + 1}]\nnamePrefix: p{i}-\n" if i + 1 < length else "resources: [cr.yaml]\n"
        (root / f"c{i}" / "kustomization.yaml").write_text(text)
    (root / f"c{length - 1}" / "cr.yaml").write_text(CR % "deep")
    return root / "c0"


def diamond(root: Path, levels: int = 9) -> Path:
    for i in range(levels):
        for side in "ab":
            folder = root / f"{side}{i}"
            folder.mkdir()
            last = i + 1 == levels
            names = "cr.yaml" if last else f"../a{i + 1}, ../b{i + 1}"
            (folder / "kustomization.yaml").write_text(f"namePrefix: {side}{i}-\nresources: [{names}]\n")
            if last:
                (folder / "cr.yaml").write_text(CR % side)
    (root / "top").mkdir()
    (root / "top" / "kustomization.yaml").write_text("resources: [../a0, ../b0]\n")
    return root / "top"


def main() -> None:
    print("python bench/kustomize_walk.py")
    for name, make in (("usual overlay", usual), ("chain of 100 bases", chain), ("diamond, 9 levels", diamond)):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / name.replace(" ", "-").replace(",", "")
            root.mkdir()
            app = make(root)

            def walk(app: Path = app, root: Path = root) -> str:
                try:
                    check_graph(str(app), str(root))
                    return "passed"
                except GraphRefused:
                    return "refused"

            verdict = walk()
            times = timeit.repeat(walk, number=1, repeat=5)
            started = time.perf_counter()
            built = subprocess.run(["kubectl", "kustomize", str(app)], capture_output=True)
            build = time.perf_counter() - started
            print(f"{name}: walk {statistics.median(times) * 1000:.1f} ms ({verdict}); "
                  f"kubectl kustomize {build * 1000:.0f} ms (exit {built.returncode}, {len(built.stdout)} bytes)")


if __name__ == "__main__":
    main()
