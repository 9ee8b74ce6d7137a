"""Install memcached-gitops each way a user gets it, then run what that user runs.

Run:  python3 .ci/install_paths.py [--source DIR] [--only NAME ...]
(.ci/run runs it after the suite). ``--source`` is the checkout to install (default: this one); the
checks and the every-field CR come from this script's own checkout, so the script can judge an
older checkout too. Each path gets its own fresh venv, pip's cache off (PIP_NO_CACHE_DIR), and the
commands are read from the files a user follows, never restated here:

- readme:     README command 1 (the Quick start's first ``sh`` block), run as written in a copy of the checkout;
- action:     action.yml's steps (install, Validate, Render), their ``run:`` scripts with the env the runner gives;
- image:      the Dockerfile's RUN commands, stage by stage, ``pip`` being the stage's venv (no Docker engine here);
- pre-commit: the hook through the real pre-commit (``pre-commit try-repo``), its environment in a fresh PRE_COMMIT_HOME.

In each: ``validate`` and ``render`` of the README's example CR (cut out of README.md), of a CR that
sets every field of the CRD (.ci/every-field.yaml; tests/delivery/test_install_paths.py checks it still does)
and of every directory of examples/; ``argocd-generate`` for the image. Every command must exit 0
with no traceback. Prints, for each path, the distributions installed, the venv's size, the
start-up of ``validate`` on one CR, and the wall time. Exits 1 on the first path that fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
EVERY_FIELD = HERE / "every-field.yaml"
#: Example folders that only ``kustomize build --enable-alpha-plugins --enable-exec`` builds (a KRM
#: exec function): validate never builds a kustomization that names a plugin that is not built in (a
#: warning where nested, an error with --strict-build, the Action's default, as Argo CD and Flux could
#: not build it either), so the folder around it is checked without it, and this says so.
EXEC_ONLY = ("gitops-repo/krm",)


class Failed(Exception):
    """A command of an install path failed: its words are the report."""


def sh(command: list[str] | str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one command; a non-zero exit or a traceback anywhere in its output is a failure."""
    shell = isinstance(command, str)
    done = subprocess.run(command, cwd=cwd, env=env, shell=shell, executable="/bin/bash" if shell else None,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    shown = command if shell else shlex.join(command)
    if done.returncode != 0 or "Traceback (most recent call last)" in done.stdout + done.stderr:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise Failed(f"`{shown}` exited {done.returncode} in {cwd}:\n{tail}")
    return done


def environment(**extra: str) -> dict[str, str]:
    """The caller's environment, pip's cache off, no venv of the caller's on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if "/.venv/" not in p + "/")
    env.update(PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def copy_checkout(source: Path, into: Path) -> Path:
    """The files git tracks in ``source`` (as a fresh clone has them), with the work tree's content."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=source, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (source / name).is_file():
            shutil.copy2(source / name, target)
    return into


def readme_example(readme: str) -> str:
    """The README's example CR: the first ``yaml`` block of its section "What a Memcached renders to"."""
    section = readme.split("## What a Memcached renders to", 1)[1]
    return re.findall(r"```yaml\n(.+?)```", section, re.S)[0]


def readme_install(readme: str) -> str:
    """README command 1: the Quick start's first ``sh`` block."""
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quick)[0]


def inputs(source: Path, work: Path) -> list[Path]:
    """What every path validates and renders, as paths relative to ``work/repo``: a copy of the
    checkout (the repository a user runs the checks at the top of, as CI, the hook and the Action
    do: kustomize builds stay under it) holding the README's CR and the every-field CR under in/,
    and each examples/ directory."""
    repo = copy_checkout(source, work / "repo")
    for name in ("readme-example", "every-field"):
        (repo / "in" / name).mkdir(parents=True)
    (repo / "in" / "readme-example" / "memcached.yaml").write_text(readme_example((source / "README.md").read_text()))
    shutil.copy(EVERY_FIELD, repo / "in" / "every-field" / "memcached.yaml")
    examples = []
    for folder in sorted(p for p in (source / "examples").iterdir() if p.is_dir()):
        skipped = [source / "examples" / e for e in EXEC_ONLY if (source / "examples" / e).parent == folder]
        if skipped:
            print(f"  {', '.join(str(s.relative_to(source)) for s in skipped)}: built only with kustomize's exec plugins, "
                  f"not by validate; {folder.relative_to(source)} is checked folder by folder without it")
        kept = sorted(p for p in folder.iterdir() if p.is_dir() and p not in skipped and not p.name.startswith("."))
        examples += kept if skipped else [folder]
    relative = [p.relative_to(source) for p in examples]
    return [Path("in/readme-example/memcached.yaml"), Path("in/every-field/memcached.yaml"), *relative]


def check_cli(cli: Path, paths: list[Path], cwd: Path, env: dict[str, str]) -> None:
    """validate and render each input with the installed command."""
    for path in paths:
        sh([str(cli), "validate", "--", str(path)], cwd, env)
        sh([str(cli), "render", "--", str(path)], cwd, env)


def startup(cli: Path, cr: Path, env: dict[str, str], runs: int = 5) -> float:
    """Median wall time of ``validate`` on one CR, a fresh process each."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([str(cli), "validate", str(cr)], env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def describe(venv: Path, env: dict[str, str]) -> str:
    """The distributions a venv holds and its size on disk."""
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"], env=env,
                            capture_output=True, text=True, check=True).stdout.split()
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    names = [line.split("==")[0] for line in listed if not line.startswith(("pip==", "setuptools=="))]
    return f"{len(names)} distributions, {size / 2**20:.0f} MiB: {', '.join(sorted(names, key=str.lower))}"


def readme_path(source: Path, work: Path, paths: list[Path]) -> Path:
    """README command 1, as written, in a copy of the checkout."""
    checkout = copy_checkout(source, work / "checkout")
    env = environment()
    sh(readme_install((source / "README.md").read_text()), checkout, env)
    check_cli(checkout / ".venv" / "bin" / "memcached-gitops", paths, work / "repo", env)
    return checkout / ".venv"


def action_steps(source: Path) -> dict[str, dict[str, object]]:
    import yaml

    steps = yaml.safe_load((source / "action.yml").read_text())["runs"]["steps"]
    return {step.get("id") or step["name"]: step for step in steps}


def step_env(step: dict[str, object], inputs: dict[str, str], runner_temp: Path) -> dict[str, str]:
    """A step's ``env:`` with ``${{ inputs.X }}`` and ``${{ runner.temp }}`` replaced as the runner does."""
    def value(text: str) -> str:
        text = re.sub(r"\$\{\{\s*runner\.temp\s*\}\}", str(runner_temp), text)
        return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m[1]], text)

    return {name: value(str(text)) for name, text in (step.get("env") or {}).items()}  # type: ignore[union-attr]


def step_runs(step: dict[str, object], inputs: dict[str, str]) -> bool:
    """Whether a step runs: a ``run:`` step whose ``if:`` is absent or, of the forms
    ``inputs.X == 'v'`` / ``inputs.X != 'v'`` (joined by ``&&``), true. A condition of another form
    is not guessed: the step is passed over, and said."""
    if "run" not in step:
        return False
    condition = str(step.get("if", "")).strip()
    for part in filter(None, (c.strip() for c in condition.split("&&"))):
        test = re.fullmatch(r"inputs\.([\w-]+)\s*(==|!=)\s*'([^']*)'", part)
        if test is None:
            print(f"  step {step.get('name')!r}: its condition {condition!r} is not read here; passed over")
            return False
        if (inputs.get(test[1], "") == test[3]) != (test[2] == "=="):
            return False
    return True


def action_path(source: Path, work: Path, paths: list[Path]) -> Path:
    """action.yml's install step as the runner runs it, then its Validate and Render steps on each
    input, with the action's default inputs but ``paths`` and ``render-to``."""
    import yaml

    steps = action_steps(source)
    declared = yaml.safe_load((source / "action.yml").read_text())["inputs"]
    action = copy_checkout(source, work / "action")  # the ref in `uses:`, checked out by the runner
    runner_temp = work / "runner-temp"
    runner = {"GITHUB_ACTION_PATH": str(action), "GITHUB_OUTPUT": str(work / "github-output"),
              "GITHUB_WORKSPACE": str(work / "repo")}
    for path in paths:
        inputs = {name: str(spec.get("default", "")) for name, spec in declared.items()}
        inputs.update({"paths": str(path), "render-to": str(work / "out" / "rendered.yaml")})
        for name, step in steps.items():
            if (path != paths[0] and str(name).startswith("Install")) or not step_runs(step, inputs):
                continue  # installed once, as in one job
            sh(str(step["run"]), work / "repo", environment(**runner, **step_env(step, inputs, runner_temp)))
    return runner_temp / "memcached-gitops"


def dockerfile_stages(text: str) -> list[list[str]]:
    """The RUN commands of each stage (continuation lines joined), in order."""
    stages: list[list[str]] = []
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        word = line.strip().split(" ", 1)[0].upper()
        if word == "FROM":
            stages.append([])
        elif word == "RUN" and stages:
            stages[-1].append(line.strip()[4:])
    return stages


def image_path(source: Path, work: Path, paths: list[Path]) -> Path:
    """The Dockerfile's RUN commands, stage by stage: the build stage in /src (a copy of the checkout),
    the final one with the wheels the first one made; ``pip``/``python`` are each stage's venv."""
    checkout = copy_checkout(source, work / "src")
    wheels = work / "wheels"
    venv = work / "image"
    for n, commands in enumerate(dockerfile_stages((source / "Dockerfile").read_text())):
        stage = work / f"stage{n}" if n == 0 else venv
        sh(["python3", "-m", "venv", str(stage)], work, environment())
        site = next((stage / "lib").glob("python3*/site-packages"))
        for command in commands:
            command = command.replace("/wheels", str(wheels)).replace("/usr/local/lib/python3.11/site-packages", str(site))
            command = re.sub(r"(^|&& )(pip|python) ", rf"\1{stage}/bin/\2 ", command)
            sh(command, checkout, environment())
    env = environment(PATH=f"{venv / 'bin'}:{environment()['PATH']}")
    check_cli(venv / "bin" / "memcached-gitops", paths, work / "repo", env)
    for path in paths:  # as the cmp-server runs the plugin: in the application's folder of the checkout,
        # generate where discover matches (a folder with no Memcached is not the plugin's)
        app = path if (work / "repo" / path).is_dir() else path.parent
        app_env = {**env, "ARGOCD_APP_SOURCE_PATH": str(app)}
        cli = str(venv / "bin" / "memcached-gitops")
        if sh([cli, "argocd-discover", "."], work / "repo" / app, app_env).stdout.strip():
            generated = sh([cli, "argocd-generate", "."], work / "repo" / app, app_env)
            print(f"  argocd-generate in {app}: {generated.stdout.count('kind: ')} objects")
    return venv


def precommit_path(source: Path, work: Path, paths: list[Path]) -> Path | None:
    """The hook through the real pre-commit, in a git repository holding the inputs. try-repo builds
    the hook's environment (``pip install .`` of the repository, as for README command 1) in a
    temporary store it removes, so there is no venv left to describe (None)."""
    repo = work / "repo"
    files = [str(f.relative_to(repo)) for path in paths for f in sorted((repo / path).rglob("*") if (repo / path).is_dir()
                                                                        else [repo / path]) if f.is_file()]
    home = work / "pre-commit-home"
    env = environment(PRE_COMMIT_HOME=str(home), GIT_AUTHOR_NAME="ci", GIT_AUTHOR_EMAIL="ci@localhost",
                      GIT_COMMITTER_NAME="ci", GIT_COMMITTER_EMAIL="ci@localhost")
    sh(["git", "init", "-q"], repo, env)
    sh(["git", "add", "-A"], repo, env)
    precommit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    sh([precommit, "try-repo", str(source), "memcached-gitops-validate", "--files", *files], repo, env)
    return None


PATHS: dict[str, Callable[[Path, Path, list[Path]], Path | None]] = {
    "readme": readme_path, "action": action_path, "image": image_path, "pre-commit": precommit_path}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=HERE.parent)
    parser.add_argument("--only", nargs="*", choices=sorted(PATHS), default=sorted(PATHS))
    args = parser.parse_args()
    source, failed = args.source.resolve(), []
    for name in args.only:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"install-{name}-") as tmp:
            work = Path(tmp)
            paths = inputs(source, work)
            try:
                venv = PATHS[name](source, work, paths)
            except Failed as exc:
                print(f"install path {name}: FAILED after {time.perf_counter() - started:.0f} s\n{exc}", flush=True)
                failed.append(name)
                continue
            took = f"install path {name}: ok in {time.perf_counter() - started:.0f} s"
            if venv is None:
                print(took, flush=True)
                continue
            cli = venv / "bin" / "memcached-gitops"
            print(f"{took}; validate of the README's CR starts in {startup(cli, work / 'repo' / paths[0], environment()):.2f} s; "
                  f"{describe(venv, environment())}", flush=True)
    print(f"install-paths: {len(args.only) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
