"""Build a kustomize overlay as Argo CD's kustomize source would, so its output is what we render.

A directory whose root holds a kustomization file is a kustomize application to Argo CD (argo-cd
util/app/discovery ``Discover``: ``kustomization.yaml``, ``kustomization.yml`` or ``Kustomization``
at the application's path) and to Flux's kustomize-controller. Its CRs, read as files, are not what
reaches the cluster: the overlay's ``namespace``, ``namePrefix`` and patches are. So every front end
that is given such a directory runs ``kustomize build DIR`` and reads its output instead of walking
the files, and never prints the un-kustomized CRs.

The binary: ``$MEMCACHED_GITOPS_KUSTOMIZE`` (a path), else ``kustomize`` on PATH, else ``kubectl``
on PATH as ``kubectl kustomize`` (kubectl embeds kustomize; kubectl kustomize.go passes the same
flags). Its output counts against the input budget and is read to at most the cap plus one byte.
Build options are those Argo CD users set in ``kustomize.buildOptions``, from an allow-list: an
option that makes kustomize run programs from the repository (``--enable-exec``,
``--enable-alpha-plugins``) is refused, since the repository is not trusted to run code here.
"""

from __future__ import annotations

import os
import re

from .excerpt import EXCERPT_LIMIT, excerpt

# shlex, shutil and subprocess are imported where a kustomization is met: every plain render and
# validate imports this module (files.py), and those three cost about 10 ms of start-up.

KUSTOMIZE_FILE_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
KUSTOMIZE_ENV = "MEMCACHED_GITOPS_KUSTOMIZE"
BUILD_OPTIONS_ENV = "MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS"
#: klog's header on kustomize's (kubectl's) last error line: ``E1128 00:42:02.882520  5573 run.go:72] "command failed" err=``.
_KLOG = re.compile(r'^[EWIF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] (?:"command failed" err=)?')
#: A word longer than an excerpt: where kustomize echoes a repository's own text (a file name, a path,
#: a value), it is one word, quoted or not, in a message of short words.
_LONG = re.compile(rf"\S{{{EXCERPT_LIMIT + 1},}}")


def bounded_error(line: str) -> str:
    """kustomize's error line without klog's header, each word longer than an excerpt cut to one:
    docs/security.md promises no message echoes more than 64 characters of input, and kustomize
    quotes the repository's paths and values whole."""
    return _LONG.sub(lambda m: excerpt(m.group(0)), _KLOG.sub("", line))


#: kustomize build's flags that only shape the output from the repository's own files.
ALLOWED_FLAGS = frozenset(("--enable-helm", "--load-restrictor", "--helm-kube-version", "--helm-api-versions",
                           "--enable-managedby-label", "--reorder", "--helm-command", "--helm-debug"))
#: A build that takes longer is stopped (Argo CD's own exec timeout is 90 s).
BUILD_TIMEOUT = 60.0


class KustomizeError(ValueError):
    """kustomize cannot be run, refused its options, failed, or wrote more than the budget."""


def is_kustomization_root(path: str) -> bool:
    """Whether ``path`` is a directory with a kustomization file at its root (Argo CD's rule)."""
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, n)) for n in KUSTOMIZE_FILE_NAMES)


def parse_build_options(text: str | None) -> list[str]:
    """``--enable-helm --load-restrictor LoadRestrictionsNone`` as argv, each flag on the allow-list."""
    import shlex

    args = shlex.split(text or "")
    for arg in args:
        if arg.startswith("-") and arg.split("=", 1)[0] not in ALLOWED_FLAGS:
            raise KustomizeError(f"kustomize build option {excerpt(arg)!r} is not allowed "
                                 f"(allowed: {', '.join(sorted(ALLOWED_FLAGS))})")
    return args


def kustomize_command() -> list[str]:
    """The argv prefix that builds a kustomization, or a KustomizeError saying what to install."""
    import shutil

    given = os.environ.get(KUSTOMIZE_ENV)
    if given:
        return [given, "build"]
    found = shutil.which("kustomize")
    if found:
        return [found, "build"]
    kubectl = shutil.which("kubectl")
    if kubectl:
        return [kubectl, "kustomize"]
    raise KustomizeError("kustomize is not on PATH (nor kubectl, which embeds it): install kustomize "
                         f"(https://kubectl.docs.kubernetes.io/installation/kustomize/) or set {KUSTOMIZE_ENV}")


def build(path: str, options: list[str], limit: int) -> bytes:
    """``kustomize build path`` with ``options``: its stdout, at most ``limit`` bytes, or a KustomizeError.

    stdout is read as it comes, to at most the limit plus one byte (then the process is killed), so
    a build that amplifies its input cannot outgrow the budget in memory; stderr goes to a file, so
    neither pipe can fill and stall the other; a timer kills a build that hangs.
    """
    import subprocess
    import tempfile
    import threading

    command = kustomize_command() + [*options, path]
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)
        except OSError as exc:
            raise KustomizeError(f"{path}: cannot run {command[0]}: {exc.strerror}") from None
        timer = threading.Timer(BUILD_TIMEOUT, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            out = proc.stdout.read(limit + 1)
            if len(out) > limit:
                proc.kill()
            proc.stdout.close()
            proc.wait()
        finally:
            timer.cancel()
        if len(out) > limit:
            raise KustomizeError(f"{path}: kustomize build wrote more than the limit of {limit} bytes; refused")
        if proc.returncode != 0:
            errors.seek(0)
            lines = [line for line in errors.read(65536).decode(errors="replace").splitlines() if line.strip()]
            last = lines[-1] if lines else f"exit code {proc.returncode} (stopped after {BUILD_TIMEOUT:.0f} s?)"
            raise KustomizeError(f"{path}: kustomize build failed: {excerpt(bounded_error(last), 300)}")
    return out
