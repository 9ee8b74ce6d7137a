"""The ``memcached-gitops`` command line: a thin shell over the pipeline.

Exit codes: 0 ok, 1 invalid input, 2 usage error. Errors go to stderr, one line each, never a
traceback. Output is written only when the whole input is valid, so a failed run never leaves a
partial stream or a half-written directory behind.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Annotated

import click
import typer

from memcached_gitops.foundation.extras import missing_cluster_client
from memcached_gitops.foundation.files import MAX_INPUT_ENV, InputError, manifest_sources, open_sources
from memcached_gitops.foundation.product import NAME, version
from memcached_gitops.render import DEFAULT_IMAGE, to_yaml
from memcached_gitops.schemas.crd import builtin_crd_text, load_crd

from .commands import (
    DEFAULT_MAX_OBJECTS,
    EXIT_INVALID,
    MAX_OBJECTS_ENV,
    OutputFormat,
    ReportFormat,
    echo,
    guarded,
    render_files,
    validate_files,
)
from .commands import check_nonempty as _check_nonempty
from .commands import fail as _fail
from .commands import input_budget as _budget
from .commands import make_validator as _validator
from .commands import render_validated as _render
from .commands import report_text as _report_text
from .commands import resolve_image as _image
from .commands import run_pipeline as _run

app = typer.Typer(
    name=NAME,
    help="Validate and render Memcached custom resources for GitOps.",
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish and PowerShell
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # -h as kubectl, flux and argocd take it
)

PathsArg = Annotated[list[str], typer.Argument(help="Files or directories (recursive *.yaml/*.yml/*.json), or - for stdin.")]
CrdOpt = Annotated[str | None, typer.Option("--crd", help="Validate against this CRD file instead of the built-in one.")]
StrictOpt = Annotated[
    bool, typer.Option("--strict/--no-strict", help="Unknown fields are errors (as kubectl --validate=strict); otherwise pruned.")
]
RequireObjectsOpt = Annotated[bool, typer.Option(
    "--require-objects", help="Every document must be a Kubernetes object (kubectl apply's verdict); by default documents "
                              "that are not meant as objects (Helm values, Chart.yaml, compose files) and empty files are passed over.")]
VerboseOpt = Annotated[bool, typer.Option("-v", "--verbose", help="Name each document and object passed over, by file and line.")]
ColorOpt = Annotated[str, typer.Option(
    "--color", click_type=click.Choice(["auto", "always", "never"]),
    help="Colour the diagnostics: auto (only on a terminal, unless NO_COLOR is set), always or never.")]
MaxInputOpt = Annotated[str | None, typer.Option(
    "--max-input-size",
    help=f"Refuse input larger than this, all files together [env {MAX_INPUT_ENV}; default 10M = 10,000,000 bytes; Ki/Mi/Gi allowed].")]


def _print_version(value: bool) -> None:
    """``--version``: the package version (its metadata) and the CRD's group/version, as flux and kubeconform print theirs."""
    if not value:
        return
    ours = version()
    crd = load_crd()
    typer.echo(f"memcached-gitops {ours} ({crd.kind} {crd.group}/{crd.storage_version})")
    raise typer.Exit(0)


@app.callback()
def _global_options(
    show_version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                               help="Print the version and the CRD's group/version, then exit.")] = False,
) -> None:
    """Validate and render Memcached custom resources for GitOps."""


MaxObjectsOpt = Annotated[int | None, typer.Option(
    "--max-objects", help=f"Refuse to hold and emit more objects than this [env {MAX_OBJECTS_ENV}; default {DEFAULT_MAX_OBJECTS:,}].")]


@app.command()
def validate(
    paths: PathsArg,
    crd: CrdOpt = None,
    strict: StrictOpt = True,
    format: Annotated[ReportFormat, typer.Option("-o", "--output", "--format",
                                                 help="text (stderr), json or github (stdout); --format is the older spelling.")
                      ] = ReportFormat.text,
    max_input: MaxInputOpt = None,
    require_objects: RequireObjectsOpt = False,
    verbose: VerboseOpt = False,
    color: ColorOpt = "auto",
    strict_build: Annotated[bool, typer.Option(
        "--strict-build", help="A kustomization that cannot be built is an error (Argo CD and Flux fail to sync it), "
                               "not a warning. The GitHub Action sets it.")] = False,
) -> None:
    """Check Memcached CRs as the API server would (kubectl apply --dry-run=server --validate=strict)."""
    validate_files(paths, crd, strict, format, max_input, require_objects, verbose, color, strict_build)


@app.command()
def render(
    paths: PathsArg,
    crd: CrdOpt = None,
    strict: StrictOpt = True,
    output: Annotated[OutputFormat, typer.Option("-o", "--output", help="yaml (a stream) or json (a v1 List).")] = OutputFormat.yaml,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", help="Write one file per object here (atomically).")] = None,
    include_input: Annotated[bool, typer.Option("--include-input", help="Also emit the CRs (defaults applied) and other objects.")] = False,
    image: Annotated[str | None, typer.Option("--image", help=f"memcached image [env MEMCACHED_IMAGE; default {DEFAULT_IMAGE}]")] = None,
    max_input: MaxInputOpt = None,
    require_objects: RequireObjectsOpt = False,
    verbose: VerboseOpt = False,
    color: ColorOpt = "auto",
    objects_limit: MaxObjectsOpt = None,
) -> None:
    """Render Memcached CRs to Deployments (stdout, or --output-dir)."""
    render_files(paths, crd, strict, output, output_dir, include_input, image, max_input, require_objects, verbose, color,
                 objects_limit)


@app.command("argocd-generate")
def argocd_generate(
    path: Annotated[str, typer.Argument(help="The application directory (the plugin runs in it).")] = ".",
    crd: CrdOpt = None,
    max_input: MaxInputOpt = None,
    objects_limit: MaxObjectsOpt = None,
) -> None:
    """The Argo CD Config Management Plugin's generate: objects on stdout, logs on stderr.

    Reads the parameters ``image``, ``include-input`` and ``pass-through-kinds`` as the repo-server
    sends them (ARGOCD_APP_PARAMETERS, which is ``null`` for ``plugin: {}``; PARAM_*), else the
    Application's plugin env ARGOCD_ENV_MEMCACHED_IMAGE / _INCLUDE_INPUT / _PASS_THROUGH_KINDS. By
    default it emits the CRs and their Deployments only; other kinds only up to the sidecar operator's
    ceiling (argocd.pass_through says why). kustomize build options are the operator's
    (MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS), and builds stay under the checkout's root. Fails (non-zero,
    nothing on stdout) rather than print an empty set, which Argo CD would sync as "delete everything".
    """
    from .argocd import PASS_THROUGH_ENV, PluginInputError, pass_through, plugin_settings, repository_root

    try:
        settings = plugin_settings(os.environ)
        passing = pass_through(settings, os.environ.get(PASS_THROUGH_ENV))
    except PluginInputError as exc:
        raise _fail(str(exc), EXIT_INVALID) from None
    _render([path], _validator(crd, True), _image(settings.get("image")), OutputFormat.yaml, None, passing.crs, max_input,
            allow_empty=False, pass_other=passing.passes, kustomize_root=repository_root(os.environ, path),
            objects_limit=objects_limit)


@app.command("argocd-discover")
def argocd_discover(
    path: Annotated[str, typer.Argument(help="The application directory (the plugin runs in it).")] = ".",
    crd: CrdOpt = None,
    max_input: MaxInputOpt = None,
) -> None:
    """The Argo CD plugin's discover: prints the first file holding a Memcached, nothing if none.

    The same walk and reading as argocd-generate (JSON files, quoted kinds and v1 Lists count;
    hidden directories and kustomization files do not), so discover matches exactly the
    directories generate renders. Always exits 0: the cmp-server matches on a non-empty stdout.
    """
    from memcached_gitops.foundation.kustomize import Builds

    from .argocd import first_memcached, repository_root

    validator = _validator(crd, True)
    try:
        manifests, _ = manifest_sources([path])
        budget = _budget(max_input)
        found = first_memcached(open_sources(manifests, budget, Builds(repository_root(os.environ, path))), validator, budget.nodes())
    except InputError as exc:
        for problem in exc.problems:
            echo(f"{problem} (discover: no match)", err=True)
        return
    if found is not None:
        echo(found)


@app.command()
def krm(
    crd: CrdOpt = None,
    image: Annotated[str | None, typer.Option("--image", help="memcached image [env MEMCACHED_IMAGE]")] = None,
    max_input: MaxInputOpt = None,
) -> None:
    """A KRM function (kustomize/kpt): a ResourceList on stdin, a ResourceList on stdout."""
    from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents

    from .krm import shape_problem, transform

    try:
        docs = [d.value for d in iter_documents(_budget(max_input).wrap("<stdin>", sys.stdin.buffer))]
    except YAMLInputError as exc:
        raise _fail(f"<stdin>:{exc.line}:{exc.column}: {exc.message}", EXIT_INVALID) from None
    except InputError as exc:
        raise _fail(str(exc), EXIT_INVALID) from None
    if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != "ResourceList":
        raise _fail("<stdin>: expected one config.kubernetes.io/v1 ResourceList", EXIT_INVALID)
    problem = shape_problem(docs[0])
    if problem:
        raise _fail(f"<stdin>: ResourceList: {problem}", EXIT_INVALID)
    out, failed = transform(docs[0], _validator(crd, True), _image(image))
    sys.stdout.write(to_yaml([out]))
    for r in out.get("results", []):
        where = r.get("file", {}).get("path", "")
        ref = r.get("resourceRef") or {}
        parts = [where, f"{ref.get('kind', '')}/{ref.get('name', '')}" if ref else "", r.get("field", {}).get("path", "")]
        echo(": ".join([p for p in parts if p] + [r["message"]]), err=True)
    if failed:
        raise typer.Exit(EXIT_INVALID)


@app.command()
def schema(
    crd: CrdOpt = None,
    version: Annotated[str | None, typer.Option("--version", help="CRD version (default: the storage version).")] = None,
) -> None:
    """Print the JSON Schema derived from the CRD (for editors and other tools)."""
    validator = _validator(crd, True)
    if version and version not in validator.crd.versions:
        raise _fail(f"version {version!r} is not served by the CRD (served: {', '.join(validator.crd.versions)})")
    typer.echo(json.dumps(validator.json_schema(version), indent=2))


@app.command("crd")
def print_crd() -> None:
    """Print the built-in CustomResourceDefinition (kubectl apply -f -)."""
    sys.stdout.write(builtin_crd_text())


def _require_cluster_client(command: str) -> None:
    """Exit 2 with one line saying what to install when the [cluster] extra is missing."""
    message = missing_cluster_client(command)
    if message:
        raise _fail(message)


def _setup_logging(level: str) -> None:
    """Human-readable lines on a terminal, one JSON object per line otherwise (for log pipelines)."""
    import logging

    class JSONFormatter(logging.Formatter):
        def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
            """RFC 3339 in UTC with milliseconds (``2026-01-02T03:04:05.678Z``), as Go's time.RFC3339 and log
            pipelines parse it; strftime's ``%z`` would write ``+0000``, which time.Parse refuses."""
            from datetime import UTC, datetime

            stamp = datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds")
            return stamp.replace("+00:00", "Z")

        def format(self, record: logging.LogRecord) -> str:
            return json.dumps({"time": self.formatTime(record), "level": record.levelname.lower(),
                               "logger": record.name, "msg": record.getMessage()})

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s") if sys.stderr.isatty() else JSONFormatter())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


#: A duration: a decimal number of ASCII digits and a unit, none for seconds (str.isdigit would take
#: "²" and "٥" too, which float() refuses or reads as another number).
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|s|m|h)?")


def _duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}
    match = _DURATION.fullmatch(text)
    if match is None:
        raise _fail(f"invalid duration {text!r} (use e.g. 30s, 5m)")
    return float(match[1]) * units[match[2]]


NamespaceOpt = Annotated[list[str] | None, typer.Option("--namespace", "-n", help="Only this namespace (repeatable; default all).")]
KubeconfigOpt = Annotated[str | None, typer.Option("--kubeconfig", help="A kubeconfig (default $KUBECONFIG, ~/.kube/config, in-cluster).")]
ContextOpt = Annotated[str | None, typer.Option("--context", help="The kubeconfig context to use.")]


@app.command()
def reconcile(
    once: Annotated[bool, typer.Option(
        "--once", help="One LIST-based cycle (CronJob): exit 0 all handled, 1 some failed, 2 could not run.")] = False,
    interval: Annotated[str | None, typer.Option(
        "--interval", help="Without --once: event-driven (WATCH) until SIGTERM, with a full resync this often [default 10m].")] = None,
    detect_only: Annotated[bool, typer.Option(
        "--detect-only", help="Report drift (status, Events, metrics, log) and never write a Deployment.")] = False,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="CRs reconciled at once (event-driven mode).")] = 16,
    namespace: NamespaceOpt = None,
    field_manager: Annotated[str, typer.Option("--field-manager", help="Field manager of the Deployment applies.")] = NAME,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report drift, write nothing: exit 0 no drift, 1 drift, 2 error.")] = False,
    adopt: Annotated[bool, typer.Option("--adopt/--no-adopt", envvar="MEMCACHED_GITOPS_ADOPT",
                                        help="Take over Deployments that Argo CD or another tool applied from our rendering "
                                             "(our labels, no controller ownerReference) and correct their drift; "
                                             "without it they are observed only.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    crd: CrdOpt = None,
    image: Annotated[str | None, typer.Option("--image", help=f"memcached image [env MEMCACHED_IMAGE; default {DEFAULT_IMAGE}]")] = None,
    leader_elect: Annotated[bool, typer.Option("--leader-elect/--no-leader-elect", help="Hold a Lease (event-driven mode).")] = True,
    lease_namespace: Annotated[str | None, typer.Option("--lease-namespace", help="Namespace of the Lease [env POD_NAMESPACE].")] = None,
    shards: Annotated[bool, typer.Option(
        "--shards", help="Event-driven mode: every replica serves a share of the CRs, each holding a Lease of its own "
                         "(instead of one leader).")] = False,
    metrics_port: Annotated[int, typer.Option(
        "--metrics-port", help="Port of /metrics (0: off): HTTPS, each scrape's token checked by TokenReview and "
                               "SubjectAccessReview, as kubebuilder v4 serves it.")] = 8443,
    metrics_bind_address: Annotated[str, typer.Option("--metrics-bind-address", help="Address /metrics listens on.")] = "0.0.0.0",
    metrics_secure: Annotated[bool, typer.Option(
        "--metrics-secure/--no-metrics-secure",
        help="--no-metrics-secure: /metrics, /healthz and /readyz over plain HTTP with no authentication "
             "(behind an authenticating proxy, or on 127.0.0.1).")] = True,
    metrics_cert_dir: Annotated[str | None, typer.Option(
        "--metrics-cert-dir", help="Folder holding tls.crt and tls.key (cert-manager's Secret), read again when they "
                                   "change [default: a self-signed certificate made at start].")] = None,
    health_probe_port: Annotated[int, typer.Option(
        "--health-probe-port", help="Port of /healthz and /readyz, plain HTTP (0: off).")] = 8081,
    health_probe_bind_address: Annotated[str, typer.Option(
        "--health-probe-bind-address", help="Address the probes listen on.")] = "0.0.0.0",
    log_level: Annotated[str, typer.Option("--log-level")] = "info",
) -> None:
    """Correct drift of the Deployments of Memcached CRs with server-side apply, and report status."""
    _require_cluster_client("reconcile")
    if once and interval is not None:
        raise _fail("--interval is the resync period of the event-driven mode; it does not go with --once")
    if shards and (once or dry_run or not leader_elect):
        raise _fail("--shards splits the event-driven mode's CRs among replicas by Leases; it does not go with "
                    "--once, --dry-run or --no-leader-elect")
    _setup_logging(log_level)
    from memcached_gitops.reconciler import Serving, run

    serving = Serving(metrics_port=metrics_port, metrics_bind_address=metrics_bind_address, metrics_secure=metrics_secure,
                      metrics_cert_dir=metrics_cert_dir, health_probe_port=health_probe_port,
                      health_probe_bind_address=health_probe_bind_address)
    code = run(once=once, interval=_duration(interval) if interval else None, namespaces=tuple(namespace or ()),
               field_manager=field_manager, dry_run=dry_run, kubeconfig=kubeconfig, context=context,
               crd=_validator(crd, True).crd, image=_image(image), leader_elect=leader_elect,
               lease_namespace=lease_namespace or os.environ.get("POD_NAMESPACE", "default"), serving=serving,
               adopt=adopt, detect_only=detect_only, workers=workers, shards=shards)
    raise typer.Exit(code)


@app.command()
def diff(
    paths: PathsArg,
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of CRs that have none.")] = "default",
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    crd: CrdOpt = None,
    image: Annotated[str | None, typer.Option("--image", help="memcached image [env MEMCACHED_IMAGE]")] = None,
    max_input: MaxInputOpt = None,
) -> None:
    """Compare the rendering of files with the live cluster: exit 0 no drift, 1 drift, 2 error."""
    _require_cluster_client("diff")
    validator = _validator(crd, True)
    result = _run(paths, validator, _image(image), do_render=True, max_input=max_input)
    _check_nonempty(result, paths)
    _report_text(result.findings)
    if result.errors:
        raise typer.Exit(2)
    _setup_logging("warning")
    from memcached_gitops.reconciler import diff_live
    from memcached_gitops.reconciler.decisions.ignore import IgnoreError, ignored_paths

    ignores = {}
    for cr in result.crs:
        meta = cr["metadata"]
        try:
            ignores[(meta.get("namespace") or namespace, meta["name"])] = ignored_paths(cr)
        except IgnoreError as exc:
            print(f"error: {meta.get('namespace') or namespace}/{meta['name']}: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
    raise typer.Exit(diff_live(result.rendered, namespace, kubeconfig, context, ignores=ignores))


@app.command()
def preview(
    base: Annotated[str, typer.Option("--base", help="The base branch or commit; the preview starts at its merge base with HEAD, "
                                                     "as a pull request is reviewed.")],
    paths: Annotated[list[str] | None, typer.Argument(help="Files or folders, in the repository (default: .).")] = None,
    format: Annotated[str, typer.Option("--format", click_type=click.Choice(["text", "markdown"]),
                                        help="text, or markdown: a pull-request comment within GitHub's 65,536 characters.")] = "text",
    crd: CrdOpt = None,
    image: Annotated[str | None, typer.Option("--image", help="memcached image [env MEMCACHED_IMAGE]")] = None,
    max_input: MaxInputOpt = None,
) -> None:
    """The rendering's change from --base to the working tree, per application: exit 0 none, 1 changes, 2 error.

    Named preview, not diff: diff compares the rendering with a live cluster."""
    from .preview import run_preview

    raise typer.Exit(run_preview(base, paths or ["."], format, _validator(crd, True), _image(image), max_input))


def main() -> None:
    """The full command line (entry.py sends everything but the plain render/validate here)."""
    guarded(app)
