"""The work of ``validate`` and ``render``, without the command-line framework.

cli.py declares every command and option with typer; what ``validate`` and ``render`` do lives here,
importing neither typer nor click (about 60 ms of start-up), so that entry.py can run the common CI
form ``memcached-gitops validate|render PATH...`` without loading them. Errors are one line on stderr
and end the command with ``SystemExit(code)``, which typer and click let through unchanged.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from memcached_gitops.foundation.excerpt import excerpt, one_line, quote_value, shown_path
from memcached_gitops.foundation.files import (
    BUILT,
    DEFAULT_MAX_INPUT,
    MAX_INPUT_ENV,
    InputBudget,
    InputError,
    linked_output,
    manifest_sources,
    nested_builds,
    open_sources,
    parse_size,
    safe_file_name,
    write_files,
)
from memcached_gitops.foundation.kustomize import KUSTOMIZE_FILE_NAMES, Builds, KustomizeMissing
from memcached_gitops.foundation.product import NAME
from memcached_gitops.render import DEFAULT_IMAGE, to_single, write_json, write_yaml
from memcached_gitops.schemas import CRDError, Validator, load_crd

from .pipeline import Finding, Result, TooManyObjects, kind_as_listed, object_ref, process

EXIT_INVALID, EXIT_USAGE = 1, 2
#: How many objects passed over or held back a message names.
HELD_LISTED = 10


_P = ParamSpec("_P")
_R = TypeVar("_R")


def one_shot(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``command`` with Python's cyclic garbage collector paused.

    A one-shot run keeps every object it reads until it writes them (10,000 CRs are about a million
    dicts and lists), and the collector walks all that is kept, again and again as it grows, to find
    cycles that a run does not make: about a tenth of a 10,000-CR render
    (``python bench/render_validate.py``). Reference counting still frees everything as before; the
    input a run may hold is bounded by --max-input and --max-objects. Never for ``reconcile``, a
    long-lived process.
    """
    @functools.wraps(command)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return command(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused


class OutputFormat(StrEnum):
    yaml = "yaml"
    json = "json"


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    github = "github"


def echo(text: str, err: bool = False) -> None:
    """Write a line: to stdout as it is (YAML, JSON), to stderr as one escaped diagnostic line."""
    print(one_line(text) if err else text, file=sys.stderr if err else sys.stdout)


def fail(message: str, code: int = EXIT_USAGE) -> SystemExit:
    """Print the one-line error; the caller raises what this returns."""
    echo(f"error: {message}", err=True)
    return SystemExit(code)


def make_validator(crd: str | None, strict: bool, paths: Sequence[str] = ()) -> Validator:
    if crd == "-" and "-" in paths:
        raise fail("--crd - and a path - both read standard input; give one of them as a file")
    try:
        return Validator(load_crd(crd), strict=strict)
    except CRDError as exc:
        raise fail(str(exc)) from None


def input_budget(max_input: str | None) -> InputBudget:
    """The total input allowed: --max-input-size, else $MEMCACHED_GITOPS_MAX_INPUT_SIZE, else 10M."""
    try:
        return InputBudget(parse_size(max_input or os.environ.get(MAX_INPUT_ENV) or DEFAULT_MAX_INPUT))
    except ValueError as exc:
        raise fail(f"--max-input-size: {exc}") from None


#: Objects one rendering run may hold and emit (the Deployment, Service and budget of each CR, the
#: CRs, the objects passed through). About 3 KB each in memory: 20,000 keep the Argo CD plugin well
#: under its sidecar's 256Mi, whatever the input cap admits (bench/generate_memory.py).
DEFAULT_MAX_OBJECTS = 20_000
MAX_OBJECTS_ENV = "MEMCACHED_GITOPS_MAX_OBJECTS"


def max_objects(given: int | None) -> int:
    """--max-objects, else $MEMCACHED_GITOPS_MAX_OBJECTS, else DEFAULT_MAX_OBJECTS."""
    value = given if given is not None else os.environ.get(MAX_OBJECTS_ENV) or DEFAULT_MAX_OBJECTS
    try:
        number = int(value)
    except ValueError:
        raise fail(f"{MAX_OBJECTS_ENV}: not a number: {quote_value(value)}") from None
    if number < 1:
        raise fail(f"--max-objects: must be at least 1, not {number}")
    return number


def run_pipeline(paths: list[str], validator: Validator, image: str, do_render: bool, max_input: str | None = None,
                 kustomize_root: str | None = None, require_objects: bool = False, objects_limit: int | None = None,
                 strict_build: bool = False) -> Result:
    budget = input_budget(max_input)
    limit = max_objects(objects_limit) if do_render else None
    try:
        manifests, kustomize_files = manifest_sources(paths)
        if not manifests and not kustomize_files:
            raise InputError(f"{', '.join(paths)}: no *.yaml, *.yml or *.json files found")
        unbuilt: list[str] = []
        nested = nested_builds(kustomize_files, manifests) if not do_render else []
        # validate checks what Argo CD and Flux would deploy: each kustomization's build too, its
        # problems reported, its objects (the files' CRs again) not counted twice
        checked_only = frozenset(s.name + BUILT for s in nested)
        manifests = manifests + nested
        sources = open_sources(manifests, budget, Builds(kustomize_root), unbuilt, strict_build)
        if sys.stderr.isatty():  # a person is watching: a progress line for long work (terminal.py)
            from .terminal import with_progress

            sources = with_progress(sources, "checked", len(manifests) + len(kustomize_files))
        result = process(sources, validator, image, do_render, require_objects, limit, checked_only, budget.nodes())
        result.passed_over += [shown_path(f.name) for f in kustomize_files]  # as the pipeline's own entries: shown
        result.findings += [unbuilt_finding(line, strict_build) for line in unbuilt]
        return result
    except InputError as exc:
        for problem in exc.problems[:-1]:
            echo(f"error: {problem}", err=True)
        raise fail(exc.problems[-1], EXIT_INVALID) from None
    except TooManyObjects as exc:
        raise fail(str(exc), EXIT_INVALID) from None


def warn_unbuilt_overlays(passed_over: list[str], paths: list[str]) -> None:
    """A folder rendered whole reads its files as they are: a kustomization inside it (an overlay's
    namespace, patches, components) is not applied, so what is printed is not what Argo CD or Flux
    deploys from that overlay. Said on stderr, with the folders to name instead."""
    folders = sorted({os.path.dirname(n) or "." for n in passed_over if os.path.basename(n) in KUSTOMIZE_FILE_NAMES})
    if folders:
        shown = ", ".join(map(shown_path, folders[:3])) + (f" and {len(folders) - 3} more" if len(folders) > 3 else "")
        echo(f"warning: {len(folders)} kustomization(s) inside {', '.join(paths)} not built: render reads a folder's files as they "
             f"are, not what an overlay deploys; name a kustomization's folder to render its build ({shown})", err=True)


def unbuilt_finding(line: str, strict_build: bool) -> Finding:
    """A kustomization that could not be built (``DIR (kustomize build): not built, ...``): a warning
    counted in the summary, or with --strict-build an error, since Argo CD and Flux fail to sync
    what kustomize cannot build."""
    where = line[: line.index(BUILT) + len(BUILT)] if BUILT in line else line.partition(": ")[0]
    why = line[len(where):].removeprefix(": ")
    if strict_build:
        return Finding(where, 0, 0, "", "", f"{why} (Argo CD and Flux cannot build it either)")
    return Finding(where, 0, 0, "", "", f"{why} (--strict-build makes this an error)", "warning")


def report_text(findings: list[Finding], color: bool = False) -> None:
    """One line per finding on stderr; with ``color`` (terminal.use_color), its place in bold and its
    message red or yellow, the input's control characters escaped first all the same."""
    for f in findings:
        if color:
            from .terminal import paint

            print(paint(one_line(f.text()), f.severity), file=sys.stderr)
        else:
            echo(f.text(), err=True)


def wants_color(mode: str) -> bool:
    from .terminal import use_color

    return use_color(mode, sys.stderr)


def report_github(findings: list[Finding]) -> None:
    """GitHub Actions workflow commands: annotations on the lines of the pull request."""

    def esc(value: str, prop: bool = False) -> str:
        value = one_line(value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))
        return value.replace(":", "%3A").replace(",", "%2C") if prop else value

    for f in findings:
        level = "warning" if f.severity == "warning" else "error"
        file = f.file if f.file.startswith("<") else os.path.normpath(f.file)  # ./apps/x.yaml -> apps/x.yaml, as GitHub matches paths
        where = f"line={f.line},col={f.column}"
        message = f"{f.field}: {f.message}" if f.field else f.message
        if f.file.endswith(BUILT):  # a line of kustomize's output: the annotation goes on the kustomization file
            folder = os.path.normpath(f.file.removesuffix(BUILT))
            named = (os.path.normpath(os.path.join(folder, n)) for n in KUSTOMIZE_FILE_NAMES)  # "." + a name: no "./"
            file = next((path for path in named if os.path.isfile(path)), folder)
            where, message = "line=1", f"{message} (line {f.line} of its kustomize build)" if f.line else message
        props = f"file={esc(file, True)},{where},title={esc(f.ref or NAME, True)}"
        echo(f"::{level} {props}::{esc(message)}")


def summary(result: Result, kind: str) -> str:
    skipped = f", {result.ignored} other object(s) ignored" if result.ignored else ""
    skipped += f", {len(result.not_objects)} document(s) that are not Kubernetes objects passed over" if result.not_objects else ""
    return f"{len(result.crs)} {kind} valid, {len(result.errors)} error(s), {len(result.warnings)} warning(s){skipped}"


def report_passed_over(result: Result) -> None:
    """``-v``: each document passed over, by file and line, and each object of another kind."""
    for where in result.not_objects:
        echo(f"{where}: passed over", err=True)
    for where in result.passed_over:
        echo(f"{where}: passed over: kustomize's configuration", err=True)


def check_nonempty(result: Result, paths: list[str]) -> None:
    """Empty input is an error; a run given only kustomization files (a pre-commit hook's run on a
    commit that touched one) or files that hold no Kubernetes object is not empty: they are passed over."""
    if result.objects_sent == 0 and not result.findings and not result.passed_over and not result.not_objects:
        # kubectl create/apply: "no objects passed to create" also when every list is empty (KC create.go:311-313)
        what = "no documents found (empty input)" if result.documents == 0 else "no objects found (every list is empty)"
        raise fail(f"{', '.join(paths)}: {what}", EXIT_INVALID)


def resolve_image(image: str | None) -> str:
    value = image or os.environ.get("MEMCACHED_IMAGE") or DEFAULT_IMAGE
    if not value.strip() or any(c.isspace() for c in value):
        raise fail(f"invalid image reference {quote_value(value)}")
    return value


def named(objects: list[dict[str, Any]]) -> str:
    """``Kind/name, Kind/name, ...``: the first HELD_LISTED objects, for a one-line message."""
    return ", ".join(object_ref(o) for o in objects[:HELD_LISTED]) + (", ..." if len(objects) > HELD_LISTED else "")


def file_name(obj: dict[str, Any], output: OutputFormat) -> str:
    """``kind-namespace-name.yaml``, safe whatever the object's fields hold (files.safe_file_name)."""
    meta = obj.get("metadata") or {}
    parts = [str(obj.get("kind", "object")).lower(), str(meta.get("namespace") or ""), str(meta.get("name") or "unnamed")]
    return safe_file_name(parts, output.value)


@one_shot
def validate_files(paths: list[str], crd: str | None = None, strict: bool = True,
                   format: ReportFormat = ReportFormat.text, max_input: str | None = None,
                   require_objects: bool = False, verbose: bool = False, color: str = "auto", strict_build: bool = False) -> None:
    """The validate command (its defaults are the command line's: tests/cli/test_startup.py holds them equal)."""
    validator = make_validator(crd, strict, paths)
    result = run_pipeline(paths, validator, DEFAULT_IMAGE, do_render=False, max_input=max_input, require_objects=require_objects,
                          strict_build=strict_build)
    check_nonempty(result, paths)
    if verbose:
        report_passed_over(result)
    if format is ReportFormat.json:
        report = {"valid": not result.errors, "validCount": len(result.crs), "findings": [f.as_dict() for f in result.findings]}
        echo(json.dumps(report, indent=2))
    elif format is ReportFormat.github:
        report_github(result.findings)
    else:
        report_text(result.findings, wants_color(color))
    echo(summary(result, validator.crd.kind), err=True)
    if result.errors:
        raise SystemExit(EXIT_INVALID)


def render_files(paths: list[str], crd: str | None = None, strict: bool = True, output: OutputFormat = OutputFormat.yaml,
                 output_dir: Path | None = None, include_input: bool = False, image: str | None = None,
                 max_input: str | None = None, require_objects: bool = False, verbose: bool = False, color: str = "auto",
                 objects_limit: int | None = None) -> None:
    """The render command (its defaults are the command line's: tests/cli/test_startup.py holds them equal)."""
    linked = linked_output(output_dir) if output_dir is not None else None
    if linked is not None:
        raise fail(f"--output-dir {linked}")
    render_validated(paths, make_validator(crd, strict, paths), resolve_image(image), output, output_dir, include_input, max_input,
                     require_objects=require_objects, verbose=verbose, color=color, objects_limit=objects_limit)


@one_shot
def render_validated(paths: list[str], validator: Validator, image: str, output: OutputFormat, output_dir: Path | None,
                     include_input: bool, max_input: str | None = None, allow_empty: bool = True,
                     pass_other: Callable[[dict[str, Any]], bool] | None = None, kustomize_root: str | None = None,
                     require_objects: bool = False, verbose: bool = False, color: str = "auto",
                     objects_limit: int | None = None) -> None:
    """The render command's work, shared with the Argo CD plugin's generate (``allow_empty=False``:
    an empty manifest set is an application with no resources, which Argo CD would prune to).

    With ``include_input``, the CRs go along, and the other objects for which ``pass_other`` is true
    (all of them without it); the others held back are named on stderr.
    """
    result = run_pipeline(paths, validator, image, do_render=True, max_input=max_input, kustomize_root=kustomize_root,
                          require_objects=require_objects, objects_limit=objects_limit)
    check_nonempty(result, paths)
    if verbose:
        report_passed_over(result)
    report_text(result.findings, wants_color(color))
    if result.errors:
        echo(summary(result, validator.crd.kind), err=True)
        raise SystemExit(EXIT_INVALID)
    if result.crs and not result.rendered:
        raise fail("the input held Memcached CRs but nothing was rendered; refusing to emit an empty set", EXIT_INVALID)
    others: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []  # what include_input would pass but pass_other keeps back
    for obj in result.others if include_input else ():
        (others if pass_other is None or pass_other(obj) else held).append(obj)
    objects = (result.crs + others if include_input else []) + result.rendered
    if not objects and not allow_empty:
        what = f"no {validator.crd.kind}" + ("" if include_input else " (and include-input is false)")
        what += f" ({len(held)} object(s) of other kinds held back)" if held else ""
        raise fail(f"{', '.join(paths)}: {what}: nothing to generate; refusing to print an empty set", EXIT_INVALID)
    if held:
        kinds = sorted({kind_as_listed(o) for o in held})
        listed = ", ".join(excerpt(k) for k in kinds[:HELD_LISTED]) + (", ..." if len(kinds) > HELD_LISTED else "")
        echo(f"{len(held)} object(s) of other kinds held back: {named(held)} (to emit them, list in pass-through-kinds: {listed})",
             err=True)
    if not result.crs:
        echo(f"warning: no {validator.crd.kind} found in {', '.join(paths)}", err=True)
    elif result.others and not include_input:
        echo(f"{result.ignored} object(s) of other kinds ignored (use --include-input to pass them through): {named(result.others)}",
             err=True)
    elif result.passed_over:  # kustomize's configuration: never a manifest, even with --include-input
        echo(f"{len(result.passed_over)} object(s) of other kinds ignored (kustomize configuration)", err=True)
    warn_unbuilt_overlays(result.passed_over, paths)
    if output_dir is not None:
        try:
            files = [(file_name(obj, output), to_single(obj, output.value), object_ref(obj)) for obj in objects]
            write_files(output_dir, files)
        except InputError as exc:
            for problem in exc.problems[:-1]:
                echo(f"error: {problem}", err=True)
            raise fail(exc.problems[-1], EXIT_INVALID) from None
        echo(f"wrote {len(objects)} file(s) to {output_dir}", err=True)
        return
    (write_json if output is OutputFormat.json else write_yaml)(objects, sys.stdout)


def guarded(command: Callable[[], object]) -> None:
    """Run a command as the console script does: Ctrl-C exits 130, a closed pipe exits 1, and a missing
    dependency exits 2 with one line naming what installs it, without a traceback."""
    try:
        command()
    except KeyboardInterrupt:
        echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except KustomizeMissing as exc:  # the install lacks kustomize (or kubectl): one line, exit 2
        raise fail(str(exc)) from None
    except ImportError as exc:  # a dependency the install lacks: one line naming what installs it, exit 2
        from memcached_gitops.foundation.extras import missing_module

        message = missing_module(exc)
        if message is None:
            raise
        raise fail(message) from None
