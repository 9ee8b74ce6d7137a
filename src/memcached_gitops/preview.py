"""``memcached-gitops preview --base REF``: what a pull request changes in the rendering, before it merges.

The repository is read twice, as Argo CD and Flux would read it: at the merge base of REF and
HEAD (as GitHub shows a pull request), checked out with ``git worktree add --detach`` into a
temporary folder that is removed afterwards, and as the working tree is now. The working tree and
the index are never touched. Each side goes through the one reading path of every other command
(foundation/files.py's walk and confinement, foundation/kustomize.py's builds with their allow-list
and limits, pipeline.py's validation and rendering); rendered_diff.py compares the two and
preview_report.py prints the result.

An application is what a GitOps tool would be pointed at: each folder holding a kustomization
file (its ``kustomize build``, as ``argocd-generate`` reads it), and each other folder's own
manifest files. Bad input on either side (a CR the API server would refuse, an overlay that does
not build) is part of the preview, with its file and line, and makes the exit code 2.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator

from memcached_gitops.foundation.files import InputBudget, InputError, Source, manifest_sources, open_sources
from memcached_gitops.foundation.kustomize import Builds
from memcached_gitops.foundation.product import NAME
from memcached_gitops.foundation.programs import find_program
from memcached_gitops.schemas import Validator

from .commands import echo, input_budget, max_objects
from .pipeline import TooManyObjects, process
from .preview_report import markdown_report, text_report
from .rendered_diff import AppPreview, Side, compare

EXIT_SAME, EXIT_CHANGED, EXIT_ERROR = 0, 1, 2


class PreviewError(RuntimeError):
    """The preview cannot be made at all (not a git repository, an unknown REF); one line."""


def _git() -> str:
    """git's absolute path (foundation/programs.py: never a committed ``./git``)."""
    found = find_program("git")
    if found is None:
        raise PreviewError("git is not on PATH (its absolute entries); preview compares two commits with it")
    return found


def git(*args: str, cwd: str | None = None) -> str:
    """A git command's stdout, or a PreviewError with git's own last line. Hooks are off: checking
    out the base must run nothing from the repository's configuration."""
    proc = subprocess.run([_git(), "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise PreviewError(f"git {args[0]}: {lines[-1] if lines else f'exit code {proc.returncode}'}")
    return proc.stdout.strip()


def repository_paths(paths: list[str]) -> list[str]:
    """The paths, relative to the working directory, each inside the repository (both sides are read
    at the same place below the repository's top)."""
    top = os.path.realpath(git("rev-parse", "--show-toplevel"))
    here = os.path.realpath(".")
    out = []
    for path in paths:
        full = os.path.normpath(os.path.join(here, path))
        if os.path.commonpath([full, top]) != top:
            raise PreviewError(f"{path}: outside the repository {top}")
        out.append(os.path.relpath(full, here))
    return out


@contextlib.contextmanager
def inside(folder: str) -> Iterator[None]:
    """Work in ``folder`` (both sides then name files alike: ``apps/cache.yaml``, never a temporary path)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def base_checkout(ref: str) -> Iterator[tuple[str, str]]:
    """(the folder matching the working directory in a checkout of the merge base, its commit)."""
    if ref.startswith("-") or not ref.strip():
        raise PreviewError(f"--base {ref!r}: not a branch or commit")  # git would read it as one of its options
    try:
        git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except PreviewError:
        raise PreviewError(f"--base {ref}: no such branch, tag or commit in this repository (not fetched?)") from None
    try:
        commit = git("merge-base", ref, "HEAD")
    except PreviewError:  # git says nothing when the two histories share no commit
        raise PreviewError(f"{ref} and HEAD have no common commit (a shallow clone? check out with fetch-depth: 0)") from None
    prefix = git("rev-parse", "--show-prefix")
    with tempfile.TemporaryDirectory(prefix="memcached-gitops-preview-") as tmp:
        tree = os.path.join(tmp, "base")
        git("worktree", "add", "--detach", "--quiet", tree, commit)
        try:
            folder = os.path.join(tree, prefix)
            os.makedirs(folder, exist_ok=True)  # a folder the branch added: the base side holds nothing there
            yield folder, commit
        finally:
            subprocess.run([_git(), "worktree", "remove", "--force", tree], capture_output=True, stdin=subprocess.DEVNULL)
            subprocess.run([_git(), "worktree", "prune"], capture_output=True, stdin=subprocess.DEVNULL)


def applications(paths: list[str]) -> dict[str, list[Source]]:
    """Each application under ``paths`` (relative to the working directory) and its sources: a
    kustomization folder is built; files inside one are read only through its build."""
    manifests, kustomize_files = manifest_sources([p for p in paths if os.path.lexists(p)])
    apps: dict[str, list[Source]] = {}
    for source in manifests:
        if source.built:
            name = os.path.normpath(source.name)
            apps[name] = [Source(name, source.path, True, True)]
    for found in kustomize_files:
        folder = os.path.normpath(os.path.dirname(found.name) or ".")
        apps.setdefault(folder, [Source(folder, folder, True, True)])
    built = [app + os.sep for app in apps]
    for source in manifests:
        name = os.path.normpath(source.name)  # ./apps/a.yaml -> apps/a.yaml, as git and GitHub name it
        if not source.built and not any(name.startswith(b) or b == "." + os.sep for b in built):
            apps.setdefault(os.path.dirname(name) or ".", []).append(source._replace(name=name))
    return apps


def read_side(paths: list[str], validator: Validator, image: str, budget: InputBudget, limit: int) -> dict[str, Side]:
    """Every application under ``paths`` rendered, as argocd-generate with include-input emits it:
    the CRs with their defaults, the other objects, and what the CRs render to. The side's builds
    share one deadline and cap, each confined to the working directory (the side's checkout)."""
    here = os.path.realpath(".") + os.sep  # kustomize names files by their full path: the base's would be a temporary one

    def problems(lines: list[str]) -> list[str]:
        return [line.replace(here, "") for line in lines]

    try:
        apps = applications(paths)
    except InputError as exc:
        return {" ".join(paths): Side([], problems(exc.problems))}
    sides = {}
    builds, nodes = Builds(), budget.nodes()  # the side's applications share its bytes, its builds and its YAML nodes
    for app, sources in sorted(apps.items()):
        try:
            result = process(open_sources(sources, budget, builds), validator, image, True, max_objects=limit, nodes=nodes)
        except InputError as exc:
            sides[app] = Side([], problems(exc.problems))
            continue
        except TooManyObjects as exc:
            sides[app] = Side([], [str(exc)])
            continue
        objects = result.crs + result.others + result.rendered
        sides[app] = Side(objects, problems([f.text() for f in result.errors]))
    return sides


def preview(ref: str, paths: list[str], validator: Validator, image: str, budget: tuple[InputBudget, InputBudget],
            limit: int = 20_000) -> tuple[str, list[AppPreview]]:
    """(the base commit, each application's preview) for ``paths`` between the merge base of ``ref`` and the working tree."""
    paths = repository_paths(paths)
    with base_checkout(ref) as (folder, commit):
        missing = [p for p in paths if not os.path.lexists(p) and not os.path.lexists(os.path.join(folder, p))]
        if missing:
            raise PreviewError(f"{missing[0]}: no such file or directory, at the base or in the working tree")
        with inside(folder):
            base = read_side(paths, validator, image, budget[0], limit)
    head = read_side(paths, validator, image, budget[1], limit)
    return commit, compare(base, head, validator.crd.kind)


def exit_code(previews: list[AppPreview]) -> int:
    """2 when either side had bad input, else 1 when anything changed, else 0 (diff's codes)."""
    if any(p.problems for p in previews):
        return EXIT_ERROR
    return EXIT_CHANGED if any(p.changes for p in previews) else EXIT_SAME


def run_preview(base: str, paths: list[str], format: str, validator: Validator, image: str, max_input: str | None) -> int:
    """The command: the report on stdout, its exit code returned; a preview that cannot be made is one line on stderr and 2."""
    try:
        commit, previews = preview(base, paths, validator, image, (input_budget(max_input), input_budget(max_input)),
                                   limit=max_objects(None))
    except PreviewError as exc:
        echo(f"error: {exc}", err=True)
        return EXIT_ERROR
    if format == "markdown":
        command = shlex.join([NAME, "preview", "--base", base, *paths])
        echo(markdown_report(previews, base, commit, command).rstrip("\n"))
    else:
        echo(text_report(previews, base, commit).rstrip("\n"))
    return exit_code(previews)
