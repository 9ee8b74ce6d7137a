"""Mutation testing with mutmut 3, one group of modules at a time (mutation/groups.toml).

mutmut names a mutant after its file's path (``render/deployment.py`` is ``render.deployment``)
and makes the tests import the mutated copy by putting ``mutants/`` and ``mutants/src`` first on
``sys.path``. This repository maps its folders into one namespace with setuptools package-dir
(``render/`` is ``memcached_gitops.render``), so neither holds here: the tests import
``memcached_gitops.render``, which the editable install resolves to the unmutated folder. So the
group is run in a staging tree with the installed layout, ``.mutation/GROUP/src/memcached_gitops/``
(the folders of pyproject.toml's package-dir copied into it), where path and module name agree again.

    python mutation/run.py GROUP [--max-children N] [--only PATTERN ...]    # just mutate GROUP

``--only`` runs the mutants whose names match the patterns (fnmatch, as ``mutmut run NAME`` takes
them: ``'*cycle.xǁReconcilerǁ_create_beside*'``), and scores those alone: the functions a change
touched, in a module whose whole group would take hours.

Prints the run time, the counts, the score and every surviving mutant that
mutation/equivalent.md does not list. Exit status 1 when such a survivor exists.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "memcached_gitops"
#: folder in the repository -> its place in the installed layout, read from pyproject.toml's package-dir
FOLDERS = {folder: "src/" + package.replace(".", "/")
           for package, folder in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].items()}
EQUIVALENT = ROOT / "mutation" / "equivalent.md"
KILLED = {"killed", "timeout", "caught by type check"}


#: Appended to the staged copy of tests/conftest.py. mutmut runs the tests once to learn which
#: tests call which function, then forks a worker per mutant from that process: a function cache
#: (``load_crd``, ``crd_named``, a compiled CEL program) filled by an earlier test would hand the
#: mutant's tests the unmutated result, and the stats run would not see those tests call the cached
#: functions at all. Emptying every cache before each test makes each test compute what it reads.
FRESH_CACHES = """

# --- appended by mutation/run.py: every test starts with empty function caches ---
import sys as _mutation_sys


@pytest.fixture(autouse=True)
def _mutation_fresh_caches():
    for _name, _module in list(_mutation_sys.modules.items()):
        if _module is not None and (_name.startswith("memcached_gitops") or _name.endswith("conftest")):
            for _value in list(vars(_module).values()):
                if callable(getattr(_value, "cache_clear", None)):
                    _value.cache_clear()
    yield
"""


def staged(path: str) -> str:
    """``render/*.py`` -> ``src/memcached_gitops/render/*.py``."""
    for folder, target in sorted(FOLDERS.items(), key=lambda f: -len(f[0])):
        if path == folder or path.startswith(folder + "/"):
            return target + path[len(folder):]
    raise SystemExit(f"mutation/groups.toml: {path} is not under {', '.join(FOLDERS)}")


def stage(group: dict, where: Path) -> None:
    """The installed layout, the tests, and a setup.cfg with this group's mutmut settings
    (mutmut reads setup.cfg when pyproject.toml has no [tool.mutmut])."""
    if where.exists():
        shutil.rmtree(where)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder, target in FOLDERS.items():
        shutil.copytree(ROOT / folder, where / target, ignore=ignore, dirs_exist_ok=True)
    # tests read examples/ (the golden render), kustomize/ (the shipped CRD and manifests) and docs/ (the guides'
    # steps), and import fakeapi
    data = list(dict.fromkeys(["tests", "fakeapi", "examples", "kustomize", "docs", *group.get("data", [])]))
    for folder in data:
        shutil.copytree(ROOT / folder, where / folder, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", where / "pyproject.toml")
    with open(where / "tests" / "conftest.py", "a", encoding="utf-8") as conftest:
        conftest.write(FRESH_CACHES)
    missing = [t for t in group["tests"] if not (ROOT / t).is_file()]
    if missing:
        raise SystemExit(f"mutation/groups.toml: no such test file: {', '.join(missing)}")
    lines = ["[mutmut]", f"source_paths = src/{PACKAGE}", "also_copy ="] + [f"    {d}" for d in data if d != "tests"] + ["only_mutate ="]
    lines += [f"    {staged(p)}" for p in group["mutate"]]
    lines += ["pytest_add_cli_args =", "    -p", "    no:cacheprovider", "    -q"]
    if group.get("skip"):  # slow property tests: random inputs make a random, slow verdict per mutant
        lines += ["    -k", "    " + " and ".join(f"not {name}" for name in group["skip"])]
    lines += [f"    {arg}" for arg in group.get("args", [])]  # e.g. a derandomized hypothesis profile
    lines += ["pytest_add_cli_args_test_selection ="] + [f"    {t}" for t in group["tests"]]
    if group.get("isolation"):  # "forkserver": tests that leave threads (servers, pools) behind are not fork-safe
        lines += [f"process_isolation = {group['isolation']}"]
    (where / "setup.cfg").write_text("\n".join(lines) + "\n")


def results(where: Path) -> dict[str, str]:
    """mutant name -> status, from mutmut's own result files."""
    sys.path.insert(0, str(where))
    from mutmut.stats import status_by_exit_code

    out: dict[str, str] = {}
    for meta in (where / "mutants").rglob("*.meta"):
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        out.update({name: status_by_exit_code[code] for name, code in codes.items()})
    return out


def equivalents() -> set[str]:
    """The mutant names listed (in backquotes, first column) in mutation/equivalent.md."""
    if not EQUIVALENT.exists():
        return set()
    return set(re.findall(r"^\|\s*`([^`]+__mutmut_\d+)`", EQUIVALENT.read_text(), flags=re.M))


def larger_stack() -> None:
    """A 1 GiB C stack for mutmut and its workers. The loader reads 10,000 nested levels with
    Python recursion, which needs no C stack since 3.11; mutmut's trampoline puts a C call in each
    level, and the default 8 MiB overflows (a segmentation fault in the first run)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    wanted = 1 << 30
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_STACK, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))


def main() -> int:
    groups = tomllib.loads((ROOT / "mutation" / "groups.toml").read_text())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("group", choices=sorted(groups))
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--only", nargs="+", default=[], metavar="PATTERN", help="mutant names (fnmatch) to run and score")
    args = parser.parse_args()
    where = ROOT / ".mutation" / args.group
    stage(groups[args.group], where)
    mutmut = Path(sys.executable).with_name("mutmut")
    started = time.monotonic()
    run = subprocess.run(["nice", "-n", "10", str(mutmut), "run", "--max-children", str(args.max_children), *args.only], cwd=where,
                         preexec_fn=larger_stack,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.monotonic() - started
    (where / "mutmut-run.log").write_text(run.stdout)
    if run.returncode != 0:
        print(run.stdout[-4000:])
        print(f"mutmut run failed (exit {run.returncode}); log: {where / 'mutmut-run.log'}")
        return 2
    status = results(where)
    if args.only:
        status = {n: s for n, s in status.items() if any(fnmatch.fnmatch(n, p) for p in args.only)}
    known = equivalents()
    counts: dict[str, int] = {}
    for s in status.values():
        counts[s] = counts.get(s, 0) + 1
    killed = sum(n for s, n in counts.items() if s in KILLED)
    survivors = sorted(n for n, s in status.items() if s not in KILLED)
    unexplained = [n for n in survivors if n not in known]
    equivalent = len(survivors) - len(unexplained)
    considered = len(status) - equivalent
    score = 100.0 * killed / considered if considered else 100.0
    print(f"group {args.group}: {len(status)} mutants in {elapsed:.0f} s (nice -n 10, {args.max_children} workers)")
    print("  " + ", ".join(f"{s}: {n}" for s, n in sorted(counts.items())))
    print(f"  score {score:.1f}% = {killed} killed / ({len(status)} mutants - {equivalent} listed as equivalent)")
    print(f"  raw score {100.0 * killed / len(status) if status else 100.0:.1f}% (equivalent mutants counted as survivors)")
    for name in unexplained:
        print(f"  {status[name]}: {name}    (mutmut show {name}, run in {where.relative_to(ROOT)})")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
