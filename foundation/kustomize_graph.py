"""Walk a kustomization graph before kustomize runs, and refuse what would take it beyond the root.

kustomize's load restrictor limits the files a kustomization loads, not the directories of other
kustomizations it builds (``resources: [../../../../any/dir]``), and its loader fetches remote
references by itself: a git URL in ``resources``/``components``/``bases`` is cloned before any local
directory of that name is tried (kustomize v5.8.1 api/internal/loader/fileloader.go:157
``FileLoader.New`` calls ``git.NewRepoSpecFromURL`` first), and any file it loads over http(s)
(fileloader.go:294 ``Load``: ``IsRemoteFile``). So every field kustomize reads a path or a URL from
is checked here, in every kustomization reached, before ``kustomize build`` starts:

- a path must stay under the root both as written (``..`` resolved as text, as Go's filepath.Join
  does) and after every symlink (as the loader's ``ConfirmDir``/``EvalSymlinks`` does);
- anything kustomize could read as a remote reference (a scheme such as ``https:``, ``file:``,
  ``ssh:``; ``git::``; ``user@host:``; ``github.com/...``; see ``is_remote``) is refused, unless the
  operator allows remote bases, and is then not walked;
- a field this module does not know is refused (fail closed: a field added by a later kustomize
  cannot reopen the hole), and so are the plugin fields whose configurations could name files
  (``generators``, ``transformers``, ``validators`` other than path-free built-ins);
- kustomize builds a base once per path that reaches it, so a diamond of bases is exponential: the
  number of kustomizations the build would load is counted, and a graph above ``MAX_LOADS`` refused.

Each refusal is one line naming the kustomization file, line, column and field.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from .excerpt import excerpt
from .kustomize_yaml import DivergentYAML, read_plain
from .links import real_path
from .yamlreader import Document, NodeBudget, TooManyNodes, YAMLInputError, iter_documents

KUSTOMIZE_FILE_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
#: Kustomizations one build may load, counting a base once per path to it (kustomize's own work).
MAX_LOADS = 500
#: Deepest chain of kustomizations walked (each one a Python frame here).
MAX_DEPTH = 100
#: Distinct folders one walk visits, with a kustomization or without (kustomize reports a folder without
#: one itself, but this walk looks into each): a kustomization listing 34,000 folders was walked whole
#: before its loads were counted.
MAX_GRAPH_FOLDERS = 2 * MAX_LOADS
#: Folders of one Helm chart looked through for symlinks.
MAX_CHART_FOLDERS = 10_000
#: Files and folders of all charts together looked at (each resolved: a chart of 600,000 files took 25 s).
MAX_CHART_ENTRIES = 50_000
#: Largest kustomization or plugin file read here (kustomize reads them whole too).
MAX_FILE = 256 << 10
#: All the kustomization and plugin files one walk reads, together (git stores a deep chain of one large
#: file once, so the bytes read must be bounded, not only the bytes committed).
MAX_GRAPH_BYTES = 2 << 20
#: YAML nodes (maps, lists, scalars) one walk parses, all its files together. The walk runs in this
#: process, where a node costs some 360 bytes while parsed, and a MiB of ``[{},{},...]`` is 350,000
#: nodes (128 MiB: 2 MiB of it took the process to 257 MiB), so it is the nodes that are bounded: at
#: most some 18 MiB, where a kustomization holds tens of nodes (bench/untrusted_input.py).
MAX_GRAPH_NODES = 50_000

#: Fields whose values name no file and no URL (kustomize api/types/kustomization.go, v5.8.1).
PATH_FREE = frozenset(("apiVersion", "kind", "metadata", "namePrefix", "nameSuffix", "namespace", "commonLabels",
                       "labels", "commonAnnotations", "images", "imageTags", "replicas", "vars", "sortOptions",
                       "generatorOptions", "buildMetadata"))
#: Built-in plugin kinds whose configuration names no file (api/builtins) and which kubectl's kustomize loads
#: as a plugin; others are refused. Not ValueAddTransformer: its targetFilePath is loaded, over http(s) too.
#: Not SortOrderTransformer: kustomize v5.8.1 builds it from ``sortOptions`` only, and as a plugin fails
#: "unable to load builtin SortOrderTransformer", so letting it through would only move the refusal to kustomize.
PATH_FREE_BUILTINS = frozenset(("AnnotationsTransformer", "LabelTransformer", "NamespaceTransformer",
                                "PrefixSuffixTransformer", "PrefixTransformer", "SuffixTransformer",
                                "ImageTagTransformer", "ReplicaCountTransformer", "HashTransformer"))
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: A chart version (semver and the like): no separator, so NAME-VERSION stays one folder under chartHome.
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_~-]{0,63}")
#: A chart's name: one folder name under chartHome. kustomize joins it into paths as it is (chartHome/NAME
#: for helm, and tmpDir/NAME-kustomize-values.yaml, the values file it writes: v5.8.1
#: HelmChartInflationGenerator.go ``writeValuesBytes``), where ``..`` would lead out, and where Go's
#: ``filepath.Join`` appends an absolute name that Python's ``os.path.join`` restarts at.
_CHART_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
#: Helm's release name rule (helm pkg/chartutil ``validName``), at most 53 characters.
_RELEASE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


#: Git's own folder: under the root, but never the repository's content (actions/checkout keeps the job's
#: token in .git/config), so no kustomization may name a path through it, however spelt (``is_git_name``).
GIT_DIR = ".git"
#: Code points HFS+ ignores in a file name (git's list, utf8.c ``is_hfs_dotgit``): ``.g\u200cit`` is ``.git`` on macOS.
_HFS_IGNORED = dict.fromkeys(map(ord, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                      "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))
#: What kustomize's ``NewRepoSpecFromURL`` takes for a git repository and its loader for a remote file
#: (api/internal/git/repospec.go ``extractHost``: ``git::``, then ssh/https/http/file in any case, a ``user@``,
#: or ``github.com/``/``github.com:``). Unlike ``is_remote`` it does not take every ``word:``, so it can be
#: asked of an entry that reads as inline YAML, whose first key kustomize would read as a URL.
_KUSTOMIZE_REMOTE = re.compile(r"^\s*(git::)?((ssh|https?|file)://|[^/\s]*@|github\.com[/:])", re.IGNORECASE)


def is_git_name(part: str) -> bool:
    """Whether one path part names git's folder on some file system the product runs on: in any case
    (macOS and Windows fold it), with trailing dots or spaces (Windows drops them), with code points
    HFS+ ignores, before an NTFS stream's ``:`` (CVE-2019-1352), or as Windows' short name ``GIT~1``
    (git's own list, CVE-2014-9390)."""
    name = part.translate(_HFS_IGNORED).split(":", 1)[0].rstrip(". ").casefold()  # NTFS: ``.git::$INDEX_ALLOCATION``
    return name in (GIT_DIR, "git~1")


def in_git_dir(relative: str) -> bool:
    """Whether a path relative to the root passes through git's folder (``is_git_name``)."""
    return any(is_git_name(part) for part in relative.split(os.sep))


class GraphRefused(ValueError):
    """A kustomization names something beyond the root, a remote reference, or a field not known."""


class BuildFails(GraphRefused):
    """A kustomization kustomize itself would refuse to build (two kustomization files in a folder):
    not an attack, a build that fails, so a warning where it is nested, as any build that fails."""


class PluginNotBuilt(BuildFails):
    """A kustomization names a plugin that is not built in (a KRM exec or container function, a Go plugin).

    kubectl's kustomize builds it only with ``--enable-alpha-plugins``, which no one here may set, so
    the build is never run: like an overlay that fails to build, it is a warning where it is nested
    (an error with ``--strict-build``), not an attack to stop the whole run for. The examples' KRM
    function overlay (examples/gitops-repo/krm) is one.
    """


def is_remote(entry: str) -> bool:
    """Whether kustomize could read ``entry`` as a remote reference (a superset of its own rules).

    kustomize's ``NewRepoSpecFromURL`` (api/internal/git/repospec.go ``extractHost``) strips ``git::``,
    takes ``ssh://``, ``https://``, ``http://``, ``file://`` in any case, a ``user@`` before the host,
    and ``github.com/`` or ``github.com:`` with no scheme; ``IsRemoteFile`` takes http(s) URLs. Any
    scheme at all, any ``@`` before the first ``/``, and any ``github.com`` start count here.
    """
    text = go_lower(entry.strip())
    head = text.split("/", 1)[0]
    return bool(_SCHEME.match(text)) or "://" in text or "@" in head or text.startswith(("git::", "github.com"))


#: A remote base's query value (``ref``, ``version``, ``submodules``, ``timeout``): a branch, tag or commit.
_QUERY_VALUE = re.compile(r"[A-Za-z0-9._/+][A-Za-z0-9._/+-]*")


def remote_problem(entry: str) -> str | None:
    """What is wrong with a remote reference even where the operator allows remote bases, or None.

    kustomize v5.8.1 (api/internal/git/cloner.go) runs ``git fetch --depth=1 URL REF`` with the ``ref`` of
    the URL's query and no ``--``: a ref starting with ``-`` is an option of git's (``--upload-pack=CMD``,
    which git runs through the shell for a local repository). And a ``file://`` or local git reference
    clones a repository of the machine, a read outside the root. So a query value is a plain name, and a
    git transport is https or ssh (``GIT_ALLOW_PROTOCOL`` holds git to those too: kustomize.py)."""
    text = go_lower(entry.strip())
    if text.removeprefix("git::").startswith(("file:", "ext::", "/", ".")):
        return "a repository of this machine (file://, ext::, a path), not a remote one"
    query = entry.partition("?")[2]
    for pair in filter(None, query.split("&")):
        value = urllib.parse.unquote_plus(pair.partition("=")[2])
        if value and not _QUERY_VALUE.fullmatch(value):
            return (f"the query value {excerpt(value)!r} is not a plain branch, tag or commit name (git would read one "
                    "starting with '-' as an option)")
    return None


def go_lower(text: str) -> str:
    """``text`` lower-cased as Go's ``strings.ToLower`` does it, rune by rune with Unicode's simple mapping,
    which kustomize uses to read a host (v5.8.1 api/internal/git/repospec.go ``isStandardGithubHost``).
    Python's ``lower`` takes the one full mapping of SpecialCasing.txt, U+0130 (İ) to ``i`` and a combining
    dot, where Go gives ``i``: ``gİthub.com/evil/repo`` is GitHub to kustomize, even beside a folder of
    that name (its loader asks ``NewRepoSpecFromURL`` before it looks for the folder)."""
    return text.replace("\u0130", "i").lower()


#: The JSON Schema keywords helm's validator resolves as references (santhosh-tekuri/jsonschema v6, which
#: helm pkg/chart/common/util/jsonschema.go gives http(s) and file loaders): only an in-document ``#``
#: fragment is let through; ``$schema`` only as a json-schema.org draft, which the validator holds built in.
_SCHEMA_REFERENCES = frozenset(("$ref", "$dynamicRef", "$recursiveRef"))
_KNOWN_DRAFTS = re.compile(r"https?://json-schema\.org/(draft-0[4-7]/schema|draft/20(19-09|20-12)/schema)#?")


def _reaches_out(schema: Any) -> bool:
    """Whether a chart's values schema names anything helm's validator would load: a reference that is
    not a ``#`` fragment, a ``$schema`` that is not a known draft, an ``$id`` (a base a relative
    reference would resolve against)."""
    todo: list[Any] = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _SCHEMA_REFERENCES and not (isinstance(value, str) and value.startswith("#")):
                    return True
                if key == "$schema" and not (isinstance(value, str) and _KNOWN_DRAFTS.fullmatch(value)):
                    return True
                if key == "$id":
                    return True
            todo += node.values()
        elif isinstance(node, list):
            todo += node
    return False


def kustomization_file(folder: str) -> str | None:
    """The kustomization file kustomize reads in ``folder``, or None; GraphRefused where kustomize could
    read another than this check.

    kustomize's ``LoadKustFile`` (v5.8.1 api/internal/target/kusttarget.go) loads each of the names
    through the root-only restrictor of the folder, which refuses a file whose link leaves the folder,
    and builds the one name that loads (two are an error). A link out of the folder would make this
    check read one file and kustomize build another, so the folder is refused, as are two names.
    """
    found = [os.path.join(folder, n) for n in KUSTOMIZE_FILE_NAMES if os.path.lexists(os.path.join(folder, n))]
    real_folder = real_path(folder)
    for file in found:
        if os.path.islink(file) and not _under(real_path(file), real_folder):
            raise GraphRefused(f"{excerpt(file, end=True)}: a kustomization file linking out of its folder (kustomize would build another "
                               "name); refused")
    files = [f for f in found if os.path.isfile(f)]
    if len(files) > 1:
        names = ", ".join(os.path.basename(f) for f in files)
        raise BuildFails(f"{excerpt(folder, end=True)}: more than one kustomization file ({names}); refused, as kustomize refuses it")
    return files[0] if files else None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _no_deadline() -> None:
    """A walk with no deadline of its own (a caller that is not a run's build)."""


class _Graph:
    """One walk: the root, whether remote references are allowed, the loads counted per folder and in
    all, and ``check_time``, the run's deadline (it raises once the deadline has passed)."""

    def __init__(self, root: str, allow_remote: bool, check_time: Callable[[], None] = _no_deadline) -> None:
        self.root, self.allow_remote, self.check_time = real_path(root), allow_remote, check_time
        self.loads: dict[str, int] = {}
        self.total_loads = 0  # what the build would load, counted as the walk goes (see ``count``)
        self.visited: set[str] = set()
        self.open: set[str] = set()
        self.read_bytes = 0
        self.nodes = NodeBudget(MAX_GRAPH_NODES, "the kustomization files of one build")  # every YAML node the walk parses
        self.chart_folders: set[str] = set()  # every chart folder walked in this graph, each once
        self.chart_entries = 0  # the files and folders of those, counted against MAX_CHART_ENTRIES
        self.schemas: set[str] = set()  # every chart values schema read, each once

    def refuse(self, where: str, field: str, message: str) -> GraphRefused:
        return GraphRefused(f"{where}: {field}: {message}")

    def local(self, here: str, entry: Any, where: str, field: str) -> str | None:
        """The resolved path ``entry`` names from folder ``here``; None for an allowed remote reference."""
        self.check_time()  # each entry: a kustomization of 256 KiB names some 49,000, each a lookup of the kernel's
        if not isinstance(entry, str) or not entry or "\x00" in entry:
            raise self.refuse(where, field, "must be a non-empty path")
        if is_remote(entry):
            if self.allow_remote:
                problem = remote_problem(entry)
                if problem:
                    raise self.refuse(where, field, f"{excerpt(entry)!r}: {problem}; refused (even with remote bases on)")
                return None
            raise self.refuse(where, field, f"{excerpt(entry)!r} is a remote reference (URL or git repository); refused "
                                            "(remote bases are off: MEMCACHED_GITOPS_KUSTOMIZE_ALLOW_REMOTE)")
        written = os.path.normpath(os.path.join(here, entry))
        real = real_path(written)
        if not (_under(written, self.root) and _under(real, self.root)):
            raise self.refuse(where, field, f"{excerpt(entry)!r} leaves the root {self.root}; refused")
        if any(in_git_dir(os.path.relpath(p, self.root)) for p in (written, real)):
            raise self.refuse(where, field, f"{excerpt(entry)!r} is inside {GIT_DIR}/ (a checkout's credentials live "
                                            "in its config); refused")
        return real

    def no_link_out(self, folder: str, where: str, field: str) -> None:
        """Refuse a folder helm reads (a chart) that holds a symlink resolving outside the root.

        helm's chart loader follows symlinks (helm pkg/chart/loader ``LoadDir`` walks with
        ``sympath.Walk``), so a chart under the root could otherwise template a file of the machine
        (``.Files.Get``). Linked folders inside the root are walked too. Each folder is walked once in
        the whole graph and all charts together hold at most ``MAX_CHART_FOLDERS``: a hundred entries
        naming one large chart must not cost a hundred walks (the check runs before the deadline's
        first build). A ``values.schema.json`` naming a schema to load is refused (``_reaches_out``):
        helm resolves it over http(s) and file (helm pkg/chart/common/util/jsonschema.go), and so is a
        packed subchart (``charts/*.tgz``), whose schema this walk cannot read.
        """
        seen = self.chart_folders
        todo = [folder]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if len(seen) > MAX_CHART_FOLDERS:
                raise self.refuse(where, field, f"the charts hold more than {MAX_CHART_FOLDERS} folders together; refused")
            self.check_time()  # the run's deadline, at each folder: a chart of 600,000 files took 25 s of a 1 s deadline
            for entry in os.scandir(current):
                self.chart_entries += 1
                if self.chart_entries % 1000 == 0:
                    self.check_time()
                if self.chart_entries > MAX_CHART_ENTRIES:
                    raise self.refuse(where, field, f"the charts hold more than {MAX_CHART_ENTRIES} files and folders together; refused")
                real = real_path(entry.path)
                shown = os.path.relpath(entry.path, self.root)
                if is_git_name(entry.name) or in_git_dir(os.path.relpath(real, self.root)):
                    raise self.refuse(where, field, f"{excerpt(shown)!r} in the chart is or reaches {GIT_DIR}/; refused")
                if entry.is_symlink() and not _under(real, self.root):
                    raise self.refuse(where, field, f"{excerpt(shown)!r} in the chart is a symlink leaving the root; refused")
                if entry.name.endswith((".tgz", ".tar.gz")):  # a packed subchart: helm loads it, this walk cannot see in
                    raise self.refuse(where, field, f"{excerpt(shown)!r} is a packed chart; refused (unpack it in the repository)")
                if entry.name == "values.schema.json":
                    self._check_schema(real, shown, where, field)
                if os.path.isdir(real):
                    todo.append(real)

    def _check_schema(self, real: str, shown: str, where: str, field: str) -> None:
        """A chart's values schema (under the root: checked before) read once, within the walk's byte
        budget, and refused when it names anything helm's validator would load (``_reaches_out``)."""
        import json

        if real in self.schemas:
            return
        self.schemas.add(real)
        if not os.path.isfile(real):  # a FIFO or a device would block the read
            raise self.refuse(where, field, f"{excerpt(shown)!r} is not a regular file; refused")
        data = self.read_bytes_of(real, shown)  # its GraphRefused (a ValueError) is the budget's, not JSON's
        try:
            schema = json.loads(data)
        except (ValueError, RecursionError):
            raise self.refuse(where, field, f"{excerpt(shown)!r} is not JSON that this check can read; refused") from None
        if _reaches_out(schema):
            raise self.refuse(where, field, f"{excerpt(shown)!r} names a schema helm would load ($ref, $schema or $id "
                                            "beyond the document); refused")

    def read_bytes_of(self, file: str, shown: str) -> bytes:
        """A file of the graph read whole, at most MAX_FILE, counted in the walk's MAX_GRAPH_BYTES (``shown``,
        the repository's own path, is excerpted in messages, as every path here)."""
        with open(file, "rb") as f:
            data = f.read(MAX_FILE + 1)
        if len(data) > MAX_FILE:
            raise GraphRefused(f"{excerpt(shown, end=True)}: larger than {MAX_FILE} bytes; refused")
        self.read_bytes += len(data)
        if self.read_bytes > MAX_GRAPH_BYTES:
            raise GraphRefused(f"{excerpt(shown, end=True)}: the kustomization, plugin and chart schema files of this build hold more than "
                               f"{MAX_GRAPH_BYTES} bytes together; refused")
        return data

    def folder(self, path: str, name: str, depth: int = 0) -> int:
        """Check the kustomization in ``path`` (resolved) and every one it reaches; the loads it costs.

        The run's deadline is checked at each folder, and the walk stops at the first folder where the
        distinct folders pass ``MAX_GRAPH_FOLDERS`` or the loads counted so far pass ``MAX_LOADS``, not
        once every folder below has been walked."""
        if path in self.loads:
            self.count(self.loads[path], name)  # built again, once more per path to it
            return self.loads[path]
        if path in self.open:
            raise GraphRefused(f"{self.shown(path)}: a kustomization that includes itself; refused")
        if depth > MAX_DEPTH:
            raise GraphRefused(f"{self.shown(path)}: kustomizations nested more than {MAX_DEPTH} deep; refused")
        self.check_time()
        self.visited.add(path)
        if len(self.visited) > MAX_GRAPH_FOLDERS:
            raise GraphRefused(f"{self.shown(path)}: the build names more than {MAX_GRAPH_FOLDERS} folders; refused")
        found = kustomization_file(path)
        if found is None:
            return 0  # kustomize reports a directory without a kustomization itself
        real = real_path(found)
        if not _under(real, self.root):
            raise GraphRefused(f"{self.shown(found)}: the kustomization file leaves the root {self.root}; refused")
        self.count(1, found)
        self.open.add(path)
        loads = 1 + sum(self.folder(d, n, depth + 1) for d, n in self._children(real, path))
        self.open.discard(path)
        self.loads[path] = loads
        return loads

    def count(self, loads: int, name: str) -> None:
        """Add ``loads`` to what the build would load: one per kustomization walked, and a walked one's
        whole count again each time another path reaches it, which sums to the start's own count."""
        self.total_loads += loads
        if self.total_loads > MAX_LOADS:
            raise GraphRefused(f"{self.shown(name)}: kustomize would load more than {MAX_LOADS} kustomizations for "
                               "this build (a base reached by many paths is built once per path); refused")

    def shown(self, path: str) -> str:
        """A path of the graph as messages show it: relative to the root when under it, and excerpted."""
        return excerpt(os.path.relpath(path, self.root) if _under(path, self.root) else path, end=True)

    def _children(self, file: str, here: str) -> Iterator[tuple[str, str]]:
        """The folders of kustomizations ``file`` builds, after checking each of its fields."""
        shown = self.shown(file)
        docs = _read_file(self, file, shown)
        if len(docs) != 1 or not isinstance(docs[0].value, dict):
            raise GraphRefused(f"{shown}: a kustomization is one YAML mapping; refused")
        doc = docs[0]
        for field, value in doc.value.items():
            line, column = doc.position((field,))
            where = f"{shown}:{line}:{column}"
            check = _FIELDS.get(field)
            if check is None and field not in PATH_FREE:
                raise self.refuse(where, str(field)[:64], "a field this check does not know; refused (fail closed)")
            if check is not None:
                for target in check(self, here, doc, field, value, shown):
                    yield target, target


Child = Iterator[str]


def _items(graph: _Graph, doc: Document, field: str, value: Any, file: str, kind: type) -> Iterator[tuple[int, Any, str]]:
    """Each item of a list field with where it is; a field of another shape is refused."""
    if not isinstance(value, list):
        line, column = doc.position((field,))
        raise graph.refuse(f"{file}:{line}:{column}", field, "must be a list; refused")
    for i, item in enumerate(value):
        line, column = doc.position((field, i))
        where = f"{file}:{line}:{column}"
        if not isinstance(item, kind):
            raise graph.refuse(where, f"{field}[{i}]", f"must be a {'string' if kind is str else 'mapping'}; refused")
        yield i, item, where


def _bases(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """resources, components, bases: files or kustomization folders, walked in turn.

    An entry must name a file or folder under the root. kustomize reads one that names nothing as a
    remote reference, by its own rules (v5.8.1 api/internal/target/kusttarget.go ``accumulateResources``,
    then api/internal/loader/fileloader.go ``New`` and ``git.NewRepoSpecFromURL``), which fold case as
    Go does: ``gİthub.com/evil/repo`` is GitHub to it and a path to Python. Refusing what names nothing
    leaves no spelling of a remote reference, now or in a later kustomize, to that fallback. It is a
    build that fails (``BuildFails``), as kustomize's own would on a missing file, not an attack.
    """
    for i, entry, where in _items(graph, doc, field, value, file, str):
        real = graph.local(here, entry, where, f"{field}[{i}]")
        if real is None:
            continue
        if not os.path.exists(real):  # a build that fails, as kustomize's would: a warning where it is nested
            raise BuildFails(f"{where}: {field}[{i}]: {excerpt(entry)!r} names no file or folder under the root; not built "
                             "(kustomize would read it as a remote reference)")
        if os.path.isdir(real):
            yield real


def _files(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """crds, configurations: files."""
    for i, entry, where in _items(graph, doc, field, value, file, str):
        graph.local(here, entry, where, f"{field}[{i}]")
    return iter(())


def _path_or_inline(keys: frozenset[str], inline: str) -> Callable[..., Child]:
    """patches, patchesJson6902, replacements: each a mapping of ``keys``, its ``path`` a file."""
    def check(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
        for i, item, where in _items(graph, doc, field, value, file, dict):
            _known(graph, item, keys, where, f"{field}[{i}]")
            if "path" in item:
                graph.local(here, item["path"], where, f"{field}[{i}].path")
        return iter(())
    check.__doc__ = f"Each item's path is a file; {inline} is inline."
    return check


def _strategic(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """patchesStrategicMerge: an inline patch, else a path.

    kustomize first reads the string as patch content, and only when that fails as a file path
    (api/internal/builtins/PatchStrategicMergeTransformer.go ``loadFromPaths``). So a string is
    inline here only when it reads as objects; anything else (a name with a line break too) is a
    path; and whatever the string reads as, what kustomize would read were it a path is checked too
    (``_as_a_path``).
    """
    for i, entry, where in _items(graph, doc, field, value, file, str):
        try:
            inline = _reads_as_objects(entry, graph.nodes)
        except TooManyNodes as exc:
            raise graph.refuse(where, f"{field}[{i}]", exc.message) from None
        if not inline:
            graph.local(here, entry, where, f"{field}[{i}]")
        else:
            _as_a_path(graph, here, entry, where, f"{field}[{i}]")
    return iter(())


def _as_a_path(graph: _Graph, here: str, entry: str, where: str, field: str) -> str | None:
    """Check an entry we read as inline content the way kustomize reads it when its own parse fails
    (it does where ours does not: a configuration without ``metadata.name``, two of the same id):
    as a remote reference (``_KUSTOMIZE_REMOTE`` on its first characters), else as the path Go's
    ``filepath.Join`` cleans it to (``a: q/../evil`` is ``evil``). Both readings are checked, so which
    one kustomize takes cannot matter; the resolved path when one exists, else None."""
    if _KUSTOMIZE_REMOTE.match(entry):
        raise graph.refuse(where, field, f"{excerpt(entry)!r} starts as kustomize reads a remote reference (URL or git "
                                         "repository) where it cannot read the entry inline; refused")
    cleaned = os.path.normpath(os.path.join(here, entry))
    if not os.path.lexists(cleaned) and not os.path.lexists(os.path.join(here, entry)):
        return None
    return graph.local(here, os.path.relpath(cleaned, here), where, field)


def _reads_as_objects(text: str, nodes: NodeBudget) -> bool:
    """Whether ``text`` reads as one or more YAML mappings with a ``kind`` (kustomize's inline content);
    its nodes count in the walk's ``nodes`` (TooManyNodes)."""
    try:
        docs = [d.value for d in iter_documents(text, nodes)]
    except TooManyNodes:
        raise
    except (YAMLInputError, ValueError):
        return False
    return bool(docs) and all(isinstance(d, dict) and "kind" in d for d in docs)


_GENERATOR_KEYS = frozenset(("name", "namespace", "behavior", "literals", "files", "envs", "env", "options", "type"))


def _generator(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """configMapGenerator, secretGenerator: ``files`` (``[key=]path``), ``envs`` and ``env`` are files."""
    for i, item, where in _items(graph, doc, field, value, file, dict):
        _known(graph, item, _GENERATOR_KEYS, where, f"{field}[{i}]")
        named = [(f"files[{j}]", str(f).split("=", 1)[-1]) for j, f in enumerate(_strings(graph, item, "files", where))]
        named += [(f"envs[{j}]", e) for j, e in enumerate(_strings(graph, item, "envs", where))]
        named += [("env", item["env"])] if "env" in item else []
        for key, path in named:
            graph.local(here, path, where, f"{field}[{i}].{key}")
    return iter(())


_CHART_KEYS = frozenset(("name", "version", "repo", "releaseName", "namespace", "additionalValuesFiles", "valuesFile",
                         "valuesInline", "valuesMerge", "includeCRDs", "skipHooks", "apiVersions", "kubeVersion",
                         "nameTemplate", "skipTests", "debug", "devel"))


def _helm_charts(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """helmCharts: only local charts under the root (``repo`` is a download), values files under it."""
    for i, item, where in _items(graph, doc, field, value, file, dict):
        _known(graph, item, _CHART_KEYS, where, f"{field}[{i}]")
        release = item.get("releaseName", "")
        if release and not (isinstance(release, str) and _RELEASE.fullmatch(release) and len(release) <= 53):
            # kustomize passes it as helm's first positional word (api/types/helmchartargs.go AsHelmArgs):
            # "--post-renderer=./x.sh" there would be a flag that runs the repository's program
            raise graph.refuse(where, f"{field}[{i}].releaseName", f"{excerpt(str(release))!r} is not a Helm release name; refused")
        if "nameTemplate" in item:  # helm evaluates it as a Go template with sprig's env: the build's environment
            raise graph.refuse(where, f"{field}[{i}].nameTemplate", "a template helm evaluates (it can read the environment); "
                                                                    "refused: use releaseName")
        if item.get("repo") and not graph.allow_remote:
            raise graph.refuse(where, f"{field}[{i}].repo", "a chart repository is a download; refused "
                                                            "(remote bases are off: MEMCACHED_GITOPS_KUSTOMIZE_ALLOW_REMOTE)")
        if item.get("repo") and not go_lower(str(item["repo"])).startswith(("https://", "oci://")):
            raise graph.refuse(where, f"{field}[{i}].repo", f"{excerpt(str(item['repo']))!r} is not an https:// or oci:// "
                                                            "repository (helm reads file:// from this machine); refused")
        helm_globals = doc.value.get("helmGlobals")
        home = str((helm_globals if isinstance(helm_globals, dict) else {}).get("chartHome") or "charts")
        name = item.get("name", "")
        if not (isinstance(name, str) and _CHART_NAME.fullmatch(name)):  # a download is ``repo``'s, never the name's
            raise graph.refuse(where, f"{field}[{i}].name", f"{excerpt(str(name))!r} is not one chart name (a folder under "
                                                            "chartHome); refused")
        version = item.get("version", "")
        if version and not (isinstance(version, str) and _VERSION.fullmatch(version)):
            raise graph.refuse(where, f"{field}[{i}].version", f"{excerpt(str(version))!r} is not a chart version; refused")
        # with a repo and a version, kustomize keeps the chart in chartHome/NAME-VERSION (v5.8.1
        # HelmChartInflationGenerator.go absChartHome): both folders are checked
        folders = [name] + ([f"{name}-{version}"] if version else [])
        for folder in folders:
            chart = graph.local(here, os.path.join(home, folder), where, f"{field}[{i}].name")
            if chart is not None and os.path.isdir(chart):
                graph.no_link_out(chart, where, f"{field}[{i}].name")
        values = [("valuesFile", item["valuesFile"])] if item.get("valuesFile") else []
        values += [(f"additionalValuesFiles[{j}]", v) for j, v in enumerate(_strings(graph, item, "additionalValuesFiles", where))]
        for key, path in values:
            if isinstance(path, str) and os.path.isabs(path):  # kustomize checks it as it is, then gives helm the root joined with it (Go's
                # Join appends it: v5.8.1 HelmChartInflationGenerator.go additionalValuesFiles): two files
                raise graph.refuse(where, f"{field}[{i}].{key}", f"{excerpt(path)!r} is absolute; refused (name it from the kustomization)")
            graph.local(here, path, where, f"{field}[{i}].{key}")
    return iter(())


def _helm_globals(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """helmGlobals: chartHome is a folder under the root; configHome is refused: kustomize gives it to
    helm as its home (HELM_DATA_HOME is configHome/.data: v5.8.1 HelmChartInflationGenerator.go), and
    helm runs the plugins it finds there (helm pkg/cli/environment.go), a repository's own program."""
    line, column = doc.position((field,))
    where = f"{file}:{line}:{column}"
    if not isinstance(value, dict):
        raise graph.refuse(where, field, "must be a mapping; refused")
    _known(graph, value, frozenset(("chartHome", "configHome")), where, field)
    if "configHome" in value:
        raise graph.refuse(where, f"{field}.configHome", "helm's home, where it finds plugins to run; refused")
    if "chartHome" in value:
        graph.local(here, value["chartHome"], where, f"{field}.chartHome")
    return iter(())


def _openapi(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """openapi: ``path`` is a file; ``version`` names a built-in schema."""
    line, column = doc.position((field,))
    where = f"{file}:{line}:{column}"
    if not isinstance(value, dict):
        raise graph.refuse(where, field, "must be a mapping; refused")
    _known(graph, value, frozenset(("path", "version")), where, field)
    if "path" in value:
        graph.local(here, value["path"], where, f"{field}.path")
    return iter(())


def _plugins(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """generators, transformers, validators: only path-free built-ins, inline or in a file under the root.

    kustomize first reads each entry as inline configurations, and only when that fails as a path
    (v5.8.1 api/internal/target/kusttarget.go ``configureExternalGenerators`` and
    ``configureExternalTransformers``: ``NewResMapFromBytes`` then ``accumulateResources``). So an
    entry is taken for a path only when it reads as one plain scalar; anything else must read as
    path-free built-ins itself, and what kustomize would read were its own parse to fail (a path, a
    git URL: ``_as_a_path``) is checked too. Their configurations can name files (a PatchTransformer's ``path``, a generator's
    ``files``), and any other kind is an exec, container or helm plugin: so only the kinds of
    ``PATH_FREE_BUILTINS`` are let through; a folder (a kustomization of configurations) is refused.
    """
    for i, entry, where in _items(graph, doc, field, value, file, str):
        name = f"{field}[{i}]"
        try:
            inline = read_plain(entry, graph.nodes)
        except TooManyNodes as exc:
            raise graph.refuse(where, name, exc.message) from None
        except (YAMLInputError, DivergentYAML):
            raise graph.refuse(where, name, "neither a file name nor plain YAML configurations; refused") from None
        is_path = len(inline) == 1 and isinstance(inline[0].value, str)
        real: str | None = None
        if is_path:
            real = graph.local(here, entry, where, name)
        else:
            _builtins(graph, [d.value for d in inline], where, name)
            real = _as_a_path(graph, here, entry, where, name)
        if is_path or real is not None:
            if real is None or not os.path.isfile(real):
                raise graph.refuse(where, name, "only a file of built-in plugin configurations is allowed; refused")
            _builtins(graph, [d.value for d in _read_file(graph, real, os.path.relpath(real, graph.root))], where, name)
    return iter(())


def _builtins(graph: _Graph, configs: list[Any], where: str, field: str) -> None:
    """Refuse any configuration that is not a path-free built-in plugin."""
    for config in configs:
        kind = config.get("kind") if isinstance(config, dict) else None
        if isinstance(config, dict) and config.get("apiVersion") != "builtin":
            raise PluginNotBuilt(f"{where}: {field}: plugin {excerpt(str(kind))!r} is not built in: kubectl's kustomize "
                                 "runs it only with --enable-alpha-plugins; not built")
        if not isinstance(config, dict) or not isinstance(kind, str) or kind not in PATH_FREE_BUILTINS:
            raise graph.refuse(where, field, f"plugin {excerpt(str(kind))!r}: only path-free built-in plugins "
                                             f"({', '.join(sorted(PATH_FREE_BUILTINS))}); refused")


def _read_file(graph: _Graph, file: str, shown: str) -> list[Document]:
    """The documents of a kustomization or plugin file, read whole (as kustomize does) and only if
    no construct in it could read differently in kustomize (``read_plain``); within the walk's budget."""
    data = graph.read_bytes_of(file, shown)
    try:
        return read_plain(data, graph.nodes)
    except YAMLInputError as exc:
        raise GraphRefused(f"{excerpt(shown, end=True)}:{exc.line}:{exc.column}: {exc.message}") from None
    except DivergentYAML as exc:
        raise GraphRefused(f"{excerpt(shown, end=True)}:{exc}") from None


def _refused_always(graph: _Graph, here: str, doc: Document, field: str, value: Any, file: str) -> Child:
    """helmChartInflationGenerator (deprecated): it names its own helm binary and home; refused."""
    line, column = doc.position((field,))
    raise graph.refuse(f"{file}:{line}:{column}", field, "deprecated, and it names a helm binary; use helmCharts")


def _known(graph: _Graph, item: dict[str, Any], keys: frozenset[str], where: str, field: str) -> None:
    unknown = sorted(str(k) for k in item if k not in keys)
    if unknown:
        raise graph.refuse(where, f"{field}.{excerpt(unknown[0])}", "a field this check does not know; refused (fail closed)")


def _strings(graph: _Graph, item: dict[str, Any], key: str, where: str) -> list[str]:
    value = item.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise graph.refuse(where, key, "must be a list of strings; refused")
    return value


_PATCH_KEYS = frozenset(("path", "patch", "target", "options"))
_FIELDS: dict[str, Callable[..., Child]] = {
    "resources": _bases, "components": _bases, "bases": _bases,
    "crds": _files, "configurations": _files,
    "patches": _path_or_inline(_PATCH_KEYS, "patch"), "patchesJson6902": _path_or_inline(_PATCH_KEYS, "patch"),
    "replacements": _path_or_inline(frozenset(("path", "source", "targets", "sourceValue")), "source/targets"),
    "patchesStrategicMerge": _strategic,
    "configMapGenerator": _generator, "secretGenerator": _generator,
    "helmCharts": _helm_charts, "helmGlobals": _helm_globals, "helmChartInflationGenerator": _refused_always,
    "openapi": _openapi,
    "generators": _plugins, "transformers": _plugins, "validators": _plugins,
}


def check_graph(start: str, root: str, allow_remote: bool = False, check_time: Callable[[], None] = _no_deadline) -> None:
    """Refuse (GraphRefused, one line) a kustomization graph from ``start`` that reaches beyond ``root``.

    ``start`` must itself be under ``root`` after symlinks. ``check_time`` is called at each folder
    walked and raises what it raises once the run's deadline has passed (``Builds.check_time``).
    """
    graph = _Graph(root, allow_remote, check_time)
    real = real_path(start)
    if not _under(real, graph.root):
        raise GraphRefused(f"{excerpt(start, end=True)}: resolves outside the root {graph.root}; refused")
    try:
        graph.folder(real, start)
    except OSError as exc:  # an unreadable kustomization or chart folder: one line, never a traceback
        where = graph.shown(str(exc.filename)) if exc.filename else excerpt(start, end=True)
        raise GraphRefused(f"{where}: cannot read: {exc.strerror}; refused") from None
