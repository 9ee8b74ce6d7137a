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
Build options are the operator's alone ($MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS, as Argo CD's
admin-only ``kustomize.buildOptions`` in argocd-cm), never a repository's, and only from a short
allow-list: an option that runs programs (``--enable-exec``, ``--enable-alpha-plugins``,
``--helm-command``), widens what is read (``--load-restrictor``, ``--mount``, ``--network``) or writes
files (``-o``/``--output``) is refused from anyone. Before each build, the kustomization graph is
walked (kustomize_graph.py) and refused if it reaches beyond the root or any remote reference; and
one run has one deadline and a cap on its builds (``Builds``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

from .clocks import monotonic_seconds
from .excerpt import excerpt, excerpt_ends
from .kustomize_graph import KUSTOMIZE_FILE_NAMES, BuildFails, GraphRefused, check_graph
from .links import real_path

# shlex, shutil and subprocess are imported where a kustomization is met: every plain render and
# validate imports this module (files.py), and those three cost about 10 ms of start-up.

__all__ = ["KUSTOMIZE_FILE_NAMES", "Builds", "KustomizeError", "KustomizeMissing",
           "BuildRefused", "bounded_error", "build", "parse_build_options"]

KUSTOMIZE_ENV = "MEMCACHED_GITOPS_KUSTOMIZE"
BUILD_OPTIONS_ENV = "MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS"
ALLOW_REMOTE_ENV = "MEMCACHED_GITOPS_KUSTOMIZE_ALLOW_REMOTE"
MAX_BUILDS_ENV = "MEMCACHED_GITOPS_KUSTOMIZE_MAX_BUILDS"
DEADLINE_ENV = "MEMCACHED_GITOPS_DEADLINE"
MEMORY_ENV = "MEMCACHED_GITOPS_KUSTOMIZE_MAX_MEMORY_MIB"
#: kustomize build's flags that only shape the output from the repository's own files, and whether
#: each takes a value. Nothing else is accepted: no short option, no cluster, no positional argument.
ALLOWED_FLAGS = {"--enable-helm": False, "--helm-debug": False, "--enable-managedby-label": False,
                 "--helm-kube-version": True, "--helm-api-versions": True}
#: A flag's value: a version or an API group/version, never anything that reads as an option.
_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")
#: klog's header on kustomize's (kubectl's) last error line: ``E1128 00:42:02.882520  5573 run.go:72] "command failed" err=``.
_KLOG = re.compile(r'^[EWIF]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] (?:"command failed" err=)?')
#: A quoted span of kustomize's message (a file name, a path, a value of the repository's), and what
#: is kept of each: the message is cut to ``EXCERPT_LIMIT`` characters in all afterwards, and short
#: spans leave room there for kustomize's own words.
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
QUOTED_KEPT = 16
#: How Go's runtime says it met the memory bound (seen: ``fatal error: runtime: out of memory``,
#: ``fatal error: runtime: cannot allocate memory``, ``fatal error: out of memory allocating heap
#: arena metadata``; ENOMEM is errno 12).
#: Under RLIMIT_DATA a new thread's stack is a private writable mapping too, so a thread the bound
#: refuses is the bound met: ``runtime/cgo: pthread_create failed: Resource temporarily unavailable``
#: (a SIGABRT whose register dump ends the output), ``runtime: failed to create new OS thread``.
_OUT_OF_MEMORY = re.compile(r"fatal error: .*(?:out of memory|cannot allocate memory)|errno=12\b"
                            r"|pthread_create failed|failed to create new OS thread")
#: The line of a Go crash that says what happened; the output's last line is then a goroutine's
#: frame or a register (``gs 0x0``), which says nothing.
_CRASH = ("fatal error:", "panic:", "runtime/cgo:", "runtime: ")
#: A build that takes longer is stopped (Argo CD's own exec timeout is 90 s).
BUILD_TIMEOUT = 60.0
#: One run's builds together (validate of a repository, argocd-generate): at most this many seconds ...
DEFAULT_DEADLINE = 60.0
#: ... and this many builds.
DEFAULT_MAX_BUILDS = 100
#: The memory (MiB) one build may hold: its data segment (RLIMIT_DATA, which since Linux 4.7 counts
#: the private writable mappings Go's heap lives in, not the address space Go only reserves, so
#: RLIMIT_AS's breakage of Go does not apply). The Argo CD sidecar's limit is 256 MiB, this process
#: included; a trivial build needs between 64 and 96 MiB of data segment, and a 90 KB alias bomb
#: that peaks at 2 GB unbounded stops here within a second (bench/kustomize_memory.py).
DEFAULT_MAX_MEMORY_MIB = 192.0


class KustomizeError(ValueError):
    """kustomize cannot be run, refused its options, failed, or wrote more than the budget."""


class KustomizeMissing(KustomizeError):
    """Neither kustomize nor kubectl can be found: the install lacks a dependency, which is the
    user's to fix (exit 2, as any missing dependency), not the repository's."""


class BuildRefused(KustomizeError):
    """A build refused before it ran: beyond the root, remote, bad options, or cut by the deadline or
    the cap. Always an error, also for a kustomization met inside a walk (never passed over)."""


def bounded_error(line: str) -> str:
    """kustomize's error line without klog's header, each quoted span cut to ``QUOTED_KEPT``
    characters, then its start and end only (``excerpt_ends``): at most ``EXCERPT_LIMIT`` characters.

    docs/security.md promises no message echoes more than 64 characters of input, and kustomize quotes
    the repository's paths and values whole, quoted or not, nested in quotes of its own (``err='... from
    'w00 w01 …': lstat /repo/w00 w01 …: no such file'``): no rule can tell its words from the input's, so
    the whole line is bounded. Its start says what kustomize was doing (``accumulating resources``,
    ``invalid Kustomization``), its end why (``no such file or directory``); the file is the build's."""
    text = _KLOG.sub("", line)
    if len(text) > 1 and text[0] == text[-1] == '"':  # klog's err="...": the message itself
        text = text[1:-1]
    text = _QUOTED.sub(lambda m: m.group(0)[0] + excerpt(m.group(0)[1:-1], QUOTED_KEPT) + m.group(0)[0], text)
    return excerpt_ends(text)


def is_kustomization_root(path: str) -> bool:
    """Whether ``path`` is a directory with a kustomization file at its root (Argo CD's rule)."""
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, n)) for n in KUSTOMIZE_FILE_NAMES)


def parse_build_options(text: str | None) -> list[str]:
    """The operator's options as argv, each ``--flag`` or ``--flag=value`` of ``ALLOWED_FLAGS``.

    Every word must be an allowed long flag, ``--flag=value``, or the value right after a flag that
    takes one; a value must look like a version (``_VALUE``), never like an option. So ``-o /x``,
    ``-eo``, ``--output=/x``, ``--load-restrictor=LoadRestrictionsNone``, a bare path, and
    ``--helm-kube-version --enable-exec`` are all refused, naming the word.
    """
    import shlex

    try:
        args = shlex.split(text or "")
    except ValueError as exc:
        raise BuildRefused(f"{BUILD_OPTIONS_ENV}: cannot be read: {exc}") from None
    out: list[str] = []
    words = iter(args)
    for arg in words:
        flag, eq, value = arg.partition("=")
        takes = ALLOWED_FLAGS.get(flag) if arg.startswith("--") else None
        if takes is None:
            raise BuildRefused(f"{BUILD_OPTIONS_ENV}: kustomize build option {excerpt(arg)!r} is not allowed "
                               f"(allowed: {', '.join(sorted(ALLOWED_FLAGS))})")
        if not takes:
            if eq and value not in ("true", "false"):
                raise BuildRefused(f"{BUILD_OPTIONS_ENV}: {flag} takes true or false, not {excerpt(value)!r}")
            out.append(arg)
            continue
        value = value if eq else next(words, "")
        if not _VALUE.fullmatch(value):
            raise BuildRefused(f"{BUILD_OPTIONS_ENV}: {flag}: value {excerpt(value)!r} is not a version; refused")
        out.append(f"{flag}={value}")
    return out


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise BuildRefused(f"{name}: not a number: {excerpt(text)!r}") from None
    if not value > 0:
        raise BuildRefused(f"{name}: must be more than 0, not {excerpt(text)!r}")
    if value == math.inf:  # a count or a size of inf is no int (OverflowError out of the build)
        raise BuildRefused(f"{name}: must be a finite number, not {excerpt(text)!r}")
    return value


def confinement_root(path: str) -> str:
    """The root a build may read under when the caller names none: the current directory (CI, the
    pre-commit hook and the Action run at the repository's top) if ``path`` is under it, else
    ``path`` itself. Never ``/``: a run from there is confined to ``path``."""
    here, real = real_path("."), real_path(path)
    inside = real == here or real.startswith(here.rstrip(os.sep) + os.sep)
    return here if inside and here != os.path.dirname(here) else real


class Builds:
    """One run's kustomize builds: the operator's options and switches, the root every build is
    confined to, one deadline for all of them and a cap on their number.

    ``root`` None: each build's ``confinement_root``. Settings come from ``environ`` (the
    operator's: the sidecar's manifest, the CI job), read at the first build.
    """

    def __init__(self, root: str | None = None, environ: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = monotonic_seconds) -> None:
        self.root, self.environ, self.clock = root, os.environ if environ is None else environ, clock
        self.count = 0
        self.started = clock()

    def deadline(self) -> float:
        return _number(self.environ, DEADLINE_ENV, DEFAULT_DEADLINE)

    def check_time(self, name: str) -> None:
        """Refuse to go on with ``name`` once the run's deadline has passed."""
        limit = self.deadline()
        if self.clock() - self.started >= limit:
            raise BuildRefused(f"{excerpt(name, end=True)}: not read: the run's deadline of {limit:g} s passed ({DEADLINE_ENV}); cut")

    def build(self, name: str, path: str, limit: int) -> bytes:
        """``kustomize build path`` once the graph is checked: its output, or a KustomizeError naming ``name``."""
        options = parse_build_options(self.environ.get(BUILD_OPTIONS_ENV))
        cap = int(_number(self.environ, MAX_BUILDS_ENV, DEFAULT_MAX_BUILDS))
        self.count += 1
        if self.count > cap:
            raise BuildRefused(f"{excerpt(name, end=True)}: not built: more than {cap} kustomize builds in one run ({MAX_BUILDS_ENV}); cut")
        self.check_time(name)
        allow_remote = self.environ.get(ALLOW_REMOTE_ENV, "") in ("1", "true", "True", "TRUE")
        try:
            check_graph(path, self.root or confinement_root(path), allow_remote, lambda: self.check_time(name))
        except BuildFails as exc:  # never run: a build that fails, said as build() says one that ran and failed
            raise KustomizeError(f"{excerpt(path, end=True)}: kustomize build failed: {exc}") from None
        except GraphRefused as exc:
            raise BuildRefused(f"{excerpt(name, end=True)}: {exc}") from None
        self.check_time(name)  # the check's walk may have taken the rest: never a build with no time left
        memory = int(_number(self.environ, MEMORY_ENV, DEFAULT_MAX_MEMORY_MIB) * 2**20)
        remaining = self.deadline() - (self.clock() - self.started)  # after the check, whose walk took its share
        return build(path, options, limit, min(BUILD_TIMEOUT, remaining), name, memory, allow_remote)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the build's whole process group (it leads a session of its own)."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone
        proc.kill()


def kustomize_command() -> list[str]:
    """The argv prefix that builds a kustomization, or a KustomizeError saying what to install. Looked up
    on PATH's absolute entries only (programs.py: a committed ``./kustomize`` never runs)."""
    from .programs import find_program

    given = os.environ.get(KUSTOMIZE_ENV)
    if given:
        return [given, "build"]
    found = find_program("kustomize")
    if found:
        return [found, "build"]
    kubectl = find_program("kubectl")
    if kubectl:
        return [kubectl, "kustomize"]
    raise KustomizeMissing("kustomize is not on PATH (nor kubectl, which embeds it): pip install 'memcached-gitops[kustomize]' (kubectl), "
                         f"install kustomize (https://kubectl.docs.kubernetes.io/installation/kustomize/) or set {KUSTOMIZE_ENV}")


def _memory_bound(memory: int | None) -> dict[str, Any]:  # Popen's keyword arguments
    """Popen arguments holding the child (and helm, which it starts) to ``memory`` bytes of data
    segment, with Go's soft limit below it so its collector works before the hard limit is met."""
    if not memory:
        return {}
    import resource

    def bound() -> None:  # in the child, before exec: only async-signal-safe work
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))

    return {"preexec_fn": bound, "env": {**os.environ, "GOMEMLIMIT": str(memory * 3 // 4)}}


#: git with every transport refused (git transport.c ``protocol_allow_list``: the variable set and empty allows
#: none): with remote bases off, a reference the graph check did not see as remote is still never fetched.
NO_GIT_TRANSPORT = {"GIT_ALLOW_PROTOCOL": ""}
#: With remote bases on: https and ssh alone, never ``file`` (a repository of this machine, where a ref read as
#: ``--upload-pack=CMD`` runs CMD) nor ``ext`` (a command by its very name).
REMOTE_GIT_TRANSPORT = {"GIT_ALLOW_PROTOCOL": "https:ssh"}


def build(path: str, options: list[str], limit: int, timeout: float = BUILD_TIMEOUT, name: str | None = None,
          memory: int | None = None, remote: bool = False) -> bytes:
    """``kustomize build path`` with ``options``: its stdout, at most ``limit`` bytes, or a KustomizeError.

    stdout is read as it comes, to at most the limit plus one byte (then the process is killed), so
    a build that amplifies its input cannot outgrow the budget in memory; stderr goes to a file, so
    neither pipe can fill and stall the other; a timer kills a build that hangs; ``memory`` bytes
    bound what the build may hold (``_memory_bound``), so a file of aliases or of many objects cannot
    take the memory of the machine (or of Argo CD's sidecar, which renders every application); unless
    ``remote`` (the operator's switch), git may not fetch (``NO_GIT_TRANSPORT``), and with it only over https
    or ssh (``REMOTE_GIT_TRANSPORT``).
    """
    import subprocess
    import tempfile
    import threading

    # the folder by its absolute path: a folder named like an option (``--load-restrictor=…``) would be
    # read as the flag, and one named like a git URL (``github.com/evil/repo``, as pre-commit passes
    # names) would be cloned: kustomize's loader tries ``NewRepoSpecFromURL`` before the folder
    # (api/internal/loader/loader.go), which refuses an absolute path (api/internal/git/repospec.go)
    command = kustomize_command() + [*options, os.path.abspath(path)]
    with tempfile.TemporaryFile() as errors:
        try:
            # a session of its own, so a kill reaches what kustomize started too (helm with --enable-helm)
            bound = _memory_bound(memory)
            env = {**bound.pop("env", os.environ), **(REMOTE_GIT_TRANSPORT if remote else NO_GIT_TRANSPORT)}
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,
                                    start_new_session=True, env=env, **bound)
        except OSError as exc:
            raise KustomizeError(f"{excerpt(path, end=True)}: cannot run {command[0]}: {exc.strerror}") from None
        stopped: list[bool] = []

        def stop() -> None:
            stopped.append(True)
            _kill(proc)

        timer = threading.Timer(timeout, stop)
        timer.start()
        try:
            assert proc.stdout is not None
            out: bytes = proc.stdout.read(limit + 1)
            if len(out) > limit:
                _kill(proc)
            proc.stdout.close()
            proc.wait()
        finally:
            timer.cancel()
        if stopped:
            raise BuildRefused(f"{excerpt(name or path, end=True)}: kustomize build stopped after {timeout:.0f} s (the run's deadline, "
                               f"{DEADLINE_ENV}, or {BUILD_TIMEOUT:.0f} s a build); cut")
        if len(out) > limit:
            raise KustomizeError(f"{excerpt(path, end=True)}: kustomize build wrote more than the limit of {limit} bytes; refused")
        if proc.returncode != 0:
            errors.seek(0)
            text = errors.read(65536).decode(errors="replace")
            if memory and _OUT_OF_MEMORY.search(text):
                raise BuildRefused(f"{excerpt(name or path, end=True)}: kustomize build needed more than {memory >> 20} MiB "
                                   f"({MEMORY_ENV}); cut")
            lines = [line for line in text.splitlines() if line.strip()]
            crash = next((line for line in lines if line.startswith(_CRASH)), None)
            # kustomize's error is one block from its "Error:" line: git's message in it may break the line,
            # and its last line alone said ": exit status 128"
            start = max((i for i, line in enumerate(lines) if line.lower().startswith("error:")), default=len(lines) - 1)
            last = crash or (" ".join(lines[start:]) if lines else f"exit code {proc.returncode} (stopped after {BUILD_TIMEOUT:.0f} s?)")
            raise KustomizeError(f"{excerpt(path, end=True)}: kustomize build failed: {bounded_error(last)}")
    return out
