"""File-system edges of the CLI: finding input files and writing output atomically."""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple, NoReturn

from . import kustomize
from .digits import is_digits
from .excerpt import excerpt
from .kustomize_graph import GIT_DIR, in_git_dir
from .links import real_path
from .yamlreader import MAX_NODES, NodeBudget

SUFFIXES = (".yaml", ".yml", ".json")
#: kustomize's own file names (kustomize api/konfig ``RecognizedKustomizationFileNames``): its
#: configuration, never a manifest. kustomize, kubectl -k and Argo CD's kustomize source read them
#: as configuration, and a scaffolded ``config/samples/kustomization.yaml`` has no apiVersion or
#: kind at all, so every front end passes them over by name.
KUSTOMIZE_FILE_NAMES = frozenset(kustomize.KUSTOMIZE_FILE_NAMES)
#: How a kustomization's build is named in messages: ``overlays/prod (kustomize build):15:3: ...``.
BUILT = " (kustomize build)"
#: Total input of one run, all files together: Argo CD's --max-combined-directory-manifests-size
#: default ("10M", a Kubernetes quantity: 10,000,000 bytes).
DEFAULT_MAX_INPUT = "10M"
MAX_INPUT_ENV = "MEMCACHED_GITOPS_MAX_INPUT_SIZE"
_SUFFIX_FACTORS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
                   "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


class Source(NamedTuple):
    """One input: the name messages show, the path opened, whether it was found under a root, and
    whether it is a kustomization root whose ``kustomize build`` output is read instead of its files
    (``nested``: one met inside a walk or named by its kustomization file, whose failed build is said
    and passed over rather than fatal)."""

    name: str
    path: str
    in_root: bool = False
    built: bool = False
    nested: bool = False


def nested_builds(kustomize_files: list[Source], roots: list[Source]) -> list[Source]:
    """The directories of the kustomization files a walk passed over (or a hook named), to build as
    Argo CD and Flux would: what ``validate .`` checks beside the files themselves. A directory that is
    already a root given on the command line is built once: a root is named as typed (``overlays/prod``)
    and a walk's files by their resolved paths, so both are compared resolved."""
    given = {os.path.realpath(r.path) for r in roots if r.built}
    out: dict[str, Source] = {}
    for f in kustomize_files:
        folder = os.path.dirname(f.path) or "."
        resolved = os.path.realpath(folder)
        if resolved not in given:
            out.setdefault(resolved, Source(os.path.dirname(f.name) or ".", folder, True, True, True))
    return sorted(out.values())


def is_kustomize_file(source: Source) -> bool:
    """Whether an input is a kustomization file, by its name (stdin never is)."""
    return os.path.basename(source.name) in KUSTOMIZE_FILE_NAMES


class InputError(ValueError):
    """Input that is refused; one message per problem, each naming the path."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


def parse_size(text: str) -> int:
    """A byte count written as a Kubernetes quantity (``10M``, ``512Mi``, ``1G``) or plain bytes."""
    number = text.rstrip("kKMGTi")
    factor = _SUFFIX_FACTORS.get(text[len(number):])
    if not is_digits(number) or factor is None:
        raise ValueError(f"invalid size {excerpt(text)!r} (use e.g. 10M, 512Mi, 1G or a number of bytes)")
    return int(number) * factor


def _under(path: str, root: str) -> bool:
    """Whether a resolved path is ``root`` or below it (``/srv/app-secrets`` is not under ``/srv/app``)."""
    return os.path.commonpath([path, root]) == root


#: YAML and JSON files one run reads from the folders it walks: an empty file costs no input budget
#: but some 190 bytes here, so a repository of a million empty files would take the Argo CD sidecar's
#: 256 MiB before a byte was parsed. A folder that holds more is refused, naming it.
MAX_FILES = 50_000
#: Files and folders of every kind one walk looks through (a name each is read, whatever its suffix).
MAX_ENTRIES = 500_000


def _walk_root(root: str, found: list[Source], problems: list[str]) -> None:
    """The YAML/JSON files under ``root`` whose resolved path stays under it (kustomize's
    LoadRestrictionsRootOnly; Argo CD refuses out-of-bounds symlinks since 2.5).

    A symlink (to a file or a directory) that resolves outside is a problem naming the link and
    its target, and is never opened. Symlinked directories are not followed (their files inside
    the root are found at their real path); FIFOs, sockets, devices and hidden paths are skipped.
    The walk is os.walk's order (top-down, sorted) kept on a list, not in Python frames: folders
    nested a thousand deep are a path git accepts, and Python 3.11's os.walk recurses per level.
    At most ``MAX_FILES`` files are taken from all roots together.
    """
    real_root = real_path(root)
    todo = [root]
    scanned = 0
    while todo:
        dirpath = todo.pop()
        dirnames: list[str] = []
        filenames: list[str] = []
        try:
            with os.scandir(dirpath) as it:
                for entry in it:  # only the names the walk takes are kept: a folder of 600,000 others held 400 MB
                    scanned += 1
                    if scanned > MAX_ENTRIES:
                        raise InputError(f"{excerpt(root, end=True)}: more than {MAX_ENTRIES} files and folders to look through; refused")
                    if entry.name.startswith("."):
                        continue
                    if _is_dir(entry):
                        dirnames.append(entry.name)
                    elif entry.name.endswith(SUFFIXES) or entry.name in KUSTOMIZE_FILE_NAMES:
                        filenames.append(entry.name)
        except OSError:
            continue  # os.walk passes over a folder it cannot list
        dirnames.sort()
        filenames.sort()
        for name in dirnames:
            link = os.path.join(dirpath, name)
            if os.path.islink(link) and not _resolves_under(link, real_root):
                problems.append(_outside(link, root))
        for name in filenames:  # kustomize's ``Kustomization`` has no suffix: found all the same, or its folder is read unbuilt
            _take(os.path.join(dirpath, name), root, real_root, found, problems)
        todo += [os.path.join(dirpath, d) for d in reversed(dirnames) if not os.path.islink(os.path.join(dirpath, d))]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _resolves_under(path: str, real_root: str) -> bool:
    """Whether ``path`` resolves under the root (a chain of links the kernel gives up on does not)."""
    try:
        return _under(real_path(path), real_root)
    except OSError:
        return False


def _take(path: str, root: str, real_root: str, found: list[Source], problems: list[str]) -> None:
    """Add one file found by the walk, unless it leaves the root or is not a regular file."""
    if not _resolves_under(path, real_root):
        problems.append(_outside(path, root))
        return
    real = real_path(path)
    if in_git_dir(os.path.relpath(real, real_root)):
        problems.append(_into_git(path))
        return
    try:
        regular = stat.S_ISREG(os.stat(real).st_mode)
    except OSError:
        regular = False  # a dangling link inside the root
    if not regular:
        return
    if len(found) >= MAX_FILES:
        raise InputError(f"{root}: more than {MAX_FILES} YAML or JSON files to read in one run; refused "
                         "(name the folders to check instead of their parent)")
    found.append(Source(path, real, True))


def _outside(link: str, root: str) -> str:
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    return f"{link}: symlink to {excerpt(target)!r} resolves outside the root {root}; not read"


def _into_git(path: str) -> str:
    """The problem with a path resolving into git's folder: actions/checkout keeps the job's token in
    .git/config, so no walk or name reads there (as the kustomize check refuses any path through it)."""
    return f"{excerpt(path, end=True)}: resolves into {GIT_DIR}/ (a checkout's credentials live in its config); not read"


def linked_out(path: str) -> str | None:
    """The problem with a path named on the command line that a link of the repository leads out of the
    working directory, or None.

    A name as written is the user's choice: an absolute path, or one whose ``..`` leaves the working
    directory, is read whatever it is (``kubectl apply -f``). But a workflow's ``paths: apps`` names the
    repository's folder, and a pull request can commit ``apps`` as a link to ``/home/runner``: written
    under the working directory, it must resolve under it too, whatever link is on the way.
    """
    if os.path.isabs(path) or os.path.normpath(path).split(os.sep)[0] == os.pardir:
        return None
    here = real_path(os.getcwd())
    if _resolves_under(path, here):
        return _into_git(path) if in_git_dir(os.path.relpath(real_path(path), here)) else None
    return f"{excerpt(path, end=True)}: a symlink on the way resolves outside the working directory {excerpt(here, end=True)}; not read"


def expand(paths: list[str]) -> list[Source]:
    """The inputs to read, sorted within each directory.

    A directory argument is a root (see _walk_root), or, when a kustomization file is at its root, a
    kustomize application whose build is read (kustomize.py); a file named on the command line is the
    user's own choice, as with ``kubectl apply -f``, and is read whatever it is, unless a link of the
    repository took a name written under the working directory out of it (``linked_out``). Raises
    InputError with one line per problem.
    """
    out: list[Source] = []
    problems: list[str] = []
    walked: list[Source] = []  # every root's files, so MAX_FILES bounds them all together
    for p in paths:
        if p == "-":
            out.append(Source(p, p))
        elif (problem := linked_out(p)) is not None:
            problems.append(problem)
        elif kustomize.is_kustomization_root(p):
            out.append(Source(p, p, True, True))
        elif os.path.isdir(p):
            start = len(walked)
            _walk_root(p, walked, problems)
            out += sorted(walked[start:])
        elif os.path.exists(p):
            out.append(Source(p, p))
        else:
            problems.append(f"{p}: no such file or directory")
    if problems:
        raise InputError(*problems)
    return out


def manifest_sources(paths: list[str]) -> tuple[list[Source], list[Source]]:
    """``expand(paths)`` split into the manifests to read and the kustomization files passed over."""
    sources = expand(paths)
    return [s for s in sources if not is_kustomize_file(s)], [s for s in sources if is_kustomize_file(s)]


class InputBudget:
    """The bytes one run may read, all sources together; reading past it refuses the input."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def nodes(self) -> NodeBudget:
        """The YAML nodes the run may parse: ``MAX_NODES`` at the default input cap (10M), and as many
        more as a raised cap allows bytes (whoever raises it accepts the memory: bench/untrusted_input.py),
        so that the one setting an operator knows moves both bounds together."""
        limit = max(MAX_NODES, MAX_NODES * self.limit // parse_size(DEFAULT_MAX_INPUT))
        return NodeBudget(limit, f"one run (--max-input-size or {MAX_INPUT_ENV} raises it)")

    def wrap(self, name: str, stream: IO[bytes]) -> _Bounded:
        return _Bounded(name, stream, self)

    def refuse(self, name: str) -> NoReturn:
        raise InputError(f"{name}: the input is larger than the limit of {self.limit} bytes "
                         f"(all files together; --max-input-size or {MAX_INPUT_ENV}); refused")


class _Bounded:
    """A binary stream that counts what libyaml reads from it against the budget."""

    def __init__(self, name: str, stream: IO[bytes], budget: InputBudget) -> None:
        self.name, self.stream, self.budget = name, stream, budget

    def read(self, size: int = -1) -> bytes:
        room = self.budget.limit - self.budget.used + 1
        data = self.stream.read(room if size < 0 else min(size, room))
        self.budget.used += len(data)
        if self.budget.used > self.budget.limit:
            self.budget.refuse(self.name)
        return data


def open_sources(sources: list[Source], budget: InputBudget, builds: kustomize.Builds | None = None,
                 passed_over: list[str] | None = None, strict: bool = False) -> Iterator[tuple[str, _Bounded]]:
    """(name, bounded binary stream) for each input, opened lazily so only one file is open at a time.

    A file found under a root is opened by its resolved path with O_NOFOLLOW and must still be a
    regular file, so a link swapped in after the walk is not followed either. A kustomization root
    is built by ``builds`` (the run's one: the operator's options, the root, the deadline and the cap),
    to at most what is left of the budget. A nested build that fails (a Helm chart without
    --enable-helm, kustomize missing) is said in ``passed_over`` and skipped; one refused before it
    ran (beyond the root, a remote reference, cut by the deadline or the cap) is always an error.
    kustomize missing from the install stops the run (KustomizeMissing, exit 2) when the build was
    asked for, or with ``strict`` (--strict-build) for any build: the install, not the input, is at fault.
    """
    builds = builds or kustomize.Builds()
    for name, path, in_root, built, nested in sources:
        if path == "-":
            yield "<stdin>", budget.wrap("<stdin>", sys.stdin.buffer)
            continue
        if built:
            shown = name + BUILT
            try:
                data = builds.build(shown, path, budget.limit - budget.used)
            except kustomize.KustomizeMissing as exc:
                if nested and passed_over is not None and not strict:
                    passed_over.append(f"{excerpt(name, end=True)}{BUILT}: not built, so not checked: {exc}")
                    continue
                raise
            except kustomize.KustomizeError as exc:
                if nested and passed_over is not None and not isinstance(exc, kustomize.BuildRefused):
                    passed_over.append(f"{excerpt(name, end=True)}{BUILT}: not built, so not checked: {exc}")
                    continue
                raise InputError(str(exc)) from None
            yield shown, budget.wrap(shown, io.BytesIO(data))
            continue
        try:
            fd = os.open(path, os.O_RDONLY | (os.O_NOFOLLOW | os.O_NONBLOCK if in_root else 0))
        except OSError as exc:
            raise InputError(f"{name}: cannot read: {exc.strerror}") from None
        info = os.fstat(fd)
        if in_root and not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise InputError(f"{name}: not a regular file; not read")
        if stat.S_ISREG(info.st_mode) and budget.used + info.st_size > budget.limit:
            os.close(fd)  # refused on its size, before a byte is parsed: a 1 GB file costs a stat, not seconds of YAML
            budget.refuse(name)
        with os.fdopen(fd, "rb") as f:
            yield name, budget.wrap(name, f)


#: The characters an output file name keeps as they are; every other character of a kind, namespace or
#: name (a path separator, ``..``'s dots at the start, a control or non-ASCII character) is written
#: as ``%XX`` of its UTF-8 bytes, so a name read from a repository can never reach another folder.
_FILE_NAME_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
#: NAME_MAX of Linux and macOS file systems, in bytes.
MAX_FILE_NAME = 255


def safe_file_name(parts: list[str], suffix: str) -> str:
    """``part-part-part.suffix`` with each part percent-encoded outside ``[A-Za-z0-9._-]``.

    The result holds no separator and does not start with a dot, so it names a plain file directly in
    the output folder, whatever the parts hold. Raises InputError when it exceeds NAME_MAX.
    """
    encoded = "-".join("".join(c if c in _FILE_NAME_SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in part)
                       for part in parts if part)
    name = encoded + "." + suffix
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name.encode()) > MAX_FILE_NAME:
        raise InputError(f"{excerpt(name)}: the output file name is longer than {MAX_FILE_NAME} bytes; refused")
    return name


def linked_output(path: Path) -> str | None:
    """Why ``path`` (an output file or folder) may not be written: a part of it inside the working
    directory that is a symbolic link; None when it may.

    A repository can commit ``rendered -> /anywhere``: an output path through it would write outside
    the checkout with the rights of the CI job. Parts outside the working directory are the caller's
    own choice (an absolute path it gave) and are not looked at. Parts not yet there are created as
    folders, never followed.
    """
    cwd = os.getcwd()
    current = os.path.normpath(os.path.join(cwd, path))
    while current.startswith(cwd.rstrip(os.sep) + os.sep):
        if os.path.islink(current):
            return (f"{path}: {excerpt(os.path.relpath(current, cwd))} is a symbolic link; an output path through a link "
                    "could write outside the working directory; refused")
        current = os.path.dirname(current)
    return None


def write_files(folder: Path, files: list[tuple[str, str, str]]) -> None:
    """Write each ``(file name, text, what)`` into ``folder``, atomically each, only if all may be written.

    Every name is checked before anything is written: it must name an entry directly in the resolved
    folder (never through a separator); a symlink already there is replaced by os.replace, not
    followed, and two names equal when case is ignored (one
    file on macOS's and Windows' file systems) are a collision naming both objects, so nothing is
    silently overwritten. ``what`` names the object in those messages.
    """
    root = os.path.realpath(folder)
    seen: dict[str, str] = {}
    problems: list[str] = []
    for name, _, what in files:
        target = os.path.normpath(os.path.join(root, name))  # the last part is not resolved: a link there is replaced
        if os.path.dirname(target) != root:  # "", "." and ".." resolve to the folder or above it: refused too
            problems.append(f"{excerpt(name)}: the output file would be outside {folder} ({what}); refused")
            continue
        first = seen.get(name.casefold())
        if first is not None:
            problems.append(f"{folder}/{excerpt(name)}: {what} and {first} map to one output file; refused")
        seen[name.casefold()] = what
    if problems:
        raise InputError(*problems)
    for name, text, _ in files:
        write_atomic(Path(root) / name, text)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new one, never half.

    The file gets the mode a plain write would give it: the one it had, or else 0666 less the
    umask. A temporary file is made 0600, and renamed as it was, the next CI step or the Argo CD
    repo-server running as another user could not read the output."""
    import tempfile  # here, not at the top: it brings shutil and the compression modules, and most runs write to stdout

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    """The process's umask (read by setting it and setting it back: there is no other portable way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
