"""What a change to a repository does to its rendering: objects matched, diffed and explained.

Pure: given each application's objects on two sides (the base of a pull request and the pull
request), it says which objects were added, removed, changed or renamed, with a unified diff of
each one's YAML and, where it can be told, the Memcached field that caused it. ``preview.py``
reads the two sides; ``preview_report.py`` writes the result as text or as a pull-request comment.

Objects are matched by apiVersion, kind, namespace and name, as the API server identifies them.
The diffs carry no noise: fields the API server writes (status, uid, resourceVersion, managed
fields...) are left out and keys are sorted, so the same object always reads the same.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from memcached_gitops.foundation.identities import INSTANCE_LABEL, KIND, MANAGED_BY_LABEL
from memcached_gitops.foundation.product import NAME
from memcached_gitops.render import to_yaml

#: (apiVersion, kind, namespace, name): an object's identity.
Key = tuple[str, str, str, str]
#: metadata fields the API server or a client writes, never part of what a repository says.
GENERATED_METADATA = ("creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "selfLink")
GENERATED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision")
#: Labels the renderer puts on every object it makes, naming the CR it was made from.
#: A rename is said as one when at least this many objects follow one namePrefix/nameSuffix change.
MIN_RENAMED = 2
#: The search for renames: removed objects tried as a rename's first before giving up, and the
#: prefix/suffix changes tried for each (the longest common cores: a real rename keeps the whole name).
MAX_MISSES, MAX_CANDIDATES = 8, 3
#: Characters that end a namePrefix or start a nameSuffix, by the usual spelling (``prod-``, ``-v2``).
SEPARATORS = "-."


class Side(NamedTuple):
    """One application on one side: what it deploys, and why it could not be read (``file:line: ...``)."""

    objects: list[dict[str, Any]]
    problems: list[str]


class ObjectChange(NamedTuple):
    """One object that differs. ``action``: added, removed, changed or renamed; ``old`` is the base's
    identity of a renamed object; ``cause``: the CR field that made the change, or ``""``."""

    action: str
    key: Key
    old: Key | None
    diff: list[str]
    cause: str


class AppPreview(NamedTuple):
    """One application's difference: its object changes, its renames (one line each, not one per
    object), and the problems of each side (``("base", line)`` or ``("pr", line)``)."""

    app: str
    changes: list[ObjectChange]
    renames: list[str]
    problems: list[tuple[str, str]]

    @property
    def counts(self) -> dict[str, Counter[str]]:
        """action -> kind -> how many."""
        out: dict[str, Counter[str]] = {}
        for change in self.changes:
            out.setdefault(change.action, Counter())[change.key[1]] += 1
        return out


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion", "")), str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def ref(key: Key) -> str:
    """``Kind namespace/name`` (``Kind name`` without a namespace)."""
    return f"{key[1]} {key[2]}/{key[3]}" if key[2] else f"{key[1]} {key[3]}"


def without_generated(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` less the fields the API server writes; ``obj`` itself when it has none (the usual case)."""
    meta = obj.get("metadata") or {}
    notes = meta.get("annotations") or {}
    if "status" not in obj and not any(f in meta for f in GENERATED_METADATA) and not any(a in notes for a in GENERATED_ANNOTATIONS):
        return obj
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in meta.items() if k not in GENERATED_METADATA}
    if notes:
        kept = {k: v for k, v in notes.items() if k not in GENERATED_ANNOTATIONS}
        meta = {k: v for k, v in meta.items() if k != "annotations"} | ({"annotations": kept} if kept else {})
    out["metadata"] = meta
    return out


def sorted_keys(value: Any) -> Any:
    """``value`` with every map's keys in order: the same object always serializes the same."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def yaml_lines(obj: dict[str, Any] | None) -> list[str]:
    """The object as the diff shows it: sorted keys, no document marker."""
    if obj is None:
        return []
    text = to_yaml([sorted_keys(obj)])
    return text.removeprefix("---\n").splitlines()


def unified(old: dict[str, Any] | None, new: dict[str, Any] | None, old_name: str, new_name: str) -> list[str]:
    return list(difflib.unified_diff(yaml_lines(old), yaml_lines(new), old_name, new_name, lineterm=""))


def changed_fields(old: Any, new: Any, path: str) -> list[str]:
    """``path: old -> new`` for each leaf that differs (a list is compared whole)."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        return [line for k in sorted(set(old) | set(new)) for line in changed_fields(old.get(k), new.get(k), f"{path}.{k}")]
    return [f"{path}: {_short(old)} -> {_short(new)}"]


def _short(value: Any) -> str:
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else repr(value).replace("'", '"')
    return text if len(text) <= 60 else text[:57] + "..."


class Transform(NamedTuple):
    """A rename as kustomize's namePrefix/nameSuffix make it (``old_prefix + core + old_suffix`` to
    ``new_prefix + core + new_suffix``), and a move as its ``namespace`` makes it."""

    old_prefix: str
    old_suffix: str
    new_prefix: str
    new_suffix: str
    old_namespace: str = ""
    new_namespace: str = ""

    def apply(self, name: str) -> str | None:
        fixes = len(self.old_prefix) + len(self.old_suffix)
        if len(name) <= fixes or not name.startswith(self.old_prefix) or not name.endswith(self.old_suffix):
            return None
        return self.new_prefix + name[len(self.old_prefix):len(name) - len(self.old_suffix)] + self.new_suffix

    def apply_key(self, key: Key) -> Key | None:
        name = self.apply(key[3]) if key[2] == self.old_namespace else None
        return None if name is None else (key[0], key[1], self.new_namespace, name)

    def spelt_as_usual(self) -> bool:
        """Whether each fix is spelt as kustomizations spell them: a prefix ending in a separator (``prod-``),
        a suffix starting with one (``-v2``), or none. Among changes around cores of one length, these come
        first: a one-character core ("dev-a" to "prod-a") is also "around" its "d" ("" + "d" + "ev-a" to
        "pro" + "d" + "-a"), and with several objects those spellings alone would fill MAX_CANDIDATES."""
        prefixes_end = all(not fix or fix[-1] in SEPARATORS for fix in (self.old_prefix, self.new_prefix))
        return prefixes_end and all(not fix or fix[0] in SEPARATORS for fix in (self.old_suffix, self.new_suffix))

    def describe(self) -> str:
        """``renamed by namePrefix 'dev-' -> 'prod-'``, ``moved by namespace 'a' -> 'b'``, or both."""
        parts = [f"{what} {old!r} -> {new!r}" for what, old, new in (
            ("namePrefix", self.old_prefix, self.new_prefix), ("nameSuffix", self.old_suffix, self.new_suffix),
            ("namespace", self.old_namespace, self.new_namespace)) if old != new]
        renamed, moved = (self.old_prefix, self.old_suffix) != (self.new_prefix, self.new_suffix), self.old_namespace != self.new_namespace
        verb = "moved and renamed" if renamed and moved else "moved" if moved else "renamed"
        return f"{verb} by {', '.join(parts)}"


def transforms_between(old: str, new: str) -> set[tuple[int, Transform]]:
    """Every prefix/suffix change around a common run of ``old`` and ``new`` that may be the longest core
    once separators go to the fixes, with its core's length.

    A separator the run starts or ends with goes to the fixes ("dev-cache" -> "prod-cache" is namePrefix
    "dev-" -> "prod-"), so the longest run is not always the longest core: "a.aa" -> "aa.y" (namePrefix
    "a." dropped, nameSuffix ".y" added) shares "a." as long as "aa". Every run within two characters of
    the longest, wherever it occurs in either name, is a candidate."""
    longest = difflib.SequenceMatcher(None, old, new, autojunk=False).find_longest_match().size
    found: set[tuple[int, Transform]] = set()
    for size in range(max(longest - 2, 1), longest + 1):  # none when the names share no character
        for start_a in range(len(old) - size + 1):
            run = old[start_a:start_a + size]
            start_b = new.find(run)
            while start_b != -1:
                found.add(_around(old, new, start_a, start_b, size))
                start_b = new.find(run, start_b + 1)
    return found


def _around(old: str, new: str, start_a: int, start_b: int, core: int) -> tuple[int, Transform]:
    """The change around a common run, a separator it starts or ends with given to the fixes."""
    if core > 1 and old[start_a] in SEPARATORS and (start_a or start_b):
        start_a, start_b, core = start_a + 1, start_b + 1, core - 1
    end_a, end_b = start_a + core, start_b + core
    if core > 1 and old[end_a - 1] in SEPARATORS and (end_a < len(old) or end_b < len(new)):
        end_a, end_b, core = end_a - 1, end_b - 1, core - 1
    return core, Transform(old[:start_a], old[end_a:], new[:start_b], new[end_b:])


Renames = list[tuple[Transform, list[tuple[Key, Key]]]]


def find_renames(removed: dict[Key, Any], added: dict[Key, Any], cr_kind: str = KIND) -> Renames:
    """Renames among removed and added objects: each a prefix/suffix change (and a namespace change)
    followed by at least MIN_RENAMED objects of the same apiVersion and kind. The candidates come from the
    first unmatched removed object paired with each added one of its kind, the longest common core first.

    kustomize's namePrefix and nameSuffix rename every object of a build, so a change counts only if
    it renames every removed object made from the same CRs: a CR ``cache-a`` replaced by ``cache-b``
    (its Deployment fits ``-a`` -> ``-b``, its Service ``cache-a-memcached`` does not) is one CR
    removed and one added, not a rename."""
    out: Renames = []
    left_removed, left_added = dict(removed), dict(added)
    tried: set[Key] = set()
    misses = 0
    while misses < MAX_MISSES:  # unrelated names removed and added (a CR replaced by others) cost a bounded search
        first = next((k for k in sorted(left_removed) if k not in tried), None)
        if first is None or not left_added:
            break
        tried.add(first)
        found = _best_transform(first, left_removed, left_added, cr_kind)
        if found is None:
            misses += 1
            continue
        out.append(found)
        for old, new in found[1]:
            del left_removed[old], left_added[new]
    return out


def _best_transform(first: Key, removed: dict[Key, Any], added: dict[Key, Any],
                    cr_kind: str) -> tuple[Transform, list[tuple[Key, Key]]] | None:
    found = {(core, transform._replace(old_namespace=first[2], new_namespace=a[2]))
             for a in added if a[:2] == first[:2] for core, transform in transforms_between(first[3], a[3])}
    candidates = sorted(found, key=lambda c: (-c[0], not c[1].spelt_as_usual(), c[1]))
    for _, transform in candidates[:MAX_CANDIDATES]:
        pairs = [(old, new) for old in removed if (new := transform.apply_key(old)) is not None and new in added]
        if len(pairs) >= MIN_RENAMED and not _left_behind(pairs, removed, cr_kind):
            return transform, sorted(pairs)
    return None


def _left_behind(pairs: list[tuple[Key, Key]], removed: dict[Key, Any], cr_kind: str) -> bool:
    """Whether a removed object made from a CR the pairs rename is not renamed with it."""
    paired = {old for old, _ in pairs}
    sources = {s for old, _ in pairs if (s := _source_cr(removed[old], cr_kind)) is not None}
    return any(k not in paired and _source_cr(obj, cr_kind) in sources for k, obj in removed.items())


def _crs_by_name(objects: Iterable[dict[str, Any]], cr_kind: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(k[2], k[3]): o for o in objects if (k := key_of(o))[1] == cr_kind}


def _source_cr(obj: dict[str, Any], cr_kind: str) -> tuple[str, str] | None:
    """The (namespace, name) of the CR an object was made from: itself, or its instance label."""
    key = key_of(obj)
    if key[1] == cr_kind:
        return key[2], key[3]
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) == NAME and labels.get(INSTANCE_LABEL):
        return key[2], str(labels[INSTANCE_LABEL])
    return None


class _Causes:
    """Which CR field made an object differ: the CR it was made from (itself, or by its instance
    label), compared between the sides (through a rename, by the CR's old name)."""

    def __init__(self, old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]], cr_kind: str,
                 renamed: Iterable[tuple[Key, Key]]) -> None:
        self.cr_kind = cr_kind
        self.old, self.new = _crs_by_name(old, cr_kind), _crs_by_name(new, cr_kind)
        self.back = {(n[2], n[3]): (o[2], o[3]) for o, n in renamed if n[1] == cr_kind}

    def of(self, old_obj: dict[str, Any] | None, new_obj: dict[str, Any] | None) -> str:
        source = (_source_cr(new_obj, self.cr_kind) if new_obj is not None else None) or (
            _source_cr(old_obj, self.cr_kind) if old_obj is not None else None)
        if source is None:
            return ""
        new_cr, old_cr = self.new.get(source), self.old.get(self.back.get(source, source))
        name = f"{self.cr_kind} {source[0]}/{source[1]}" if source[0] else f"{self.cr_kind} {source[1]}"
        if new_cr is None and old_cr is None:
            return ""
        if old_cr is None or new_cr is None:
            return f"{name} {'added' if old_cr is None else 'removed'}"
        fields = changed_fields(old_cr.get("spec"), new_cr.get("spec"), "spec")
        if not fields:
            return ""
        return f"{name}: " + "; ".join(fields[:4]) + (f"; and {len(fields) - 4} more" if len(fields) > 4 else "")


def compare(base: Mapping[str, Side], head: Mapping[str, Side], cr_kind: str = KIND) -> list[AppPreview]:
    """Every application of either side, by name, compared (an application on one side only is all added or all removed)."""
    return [compare_app(app, base.get(app), head.get(app), cr_kind) for app in sorted(set(base) | set(head))]


def compare_app(app: str, base: Side | None, head: Side | None, cr_kind: str = KIND) -> AppPreview:
    """One application's changes. A side that could not be read is reported, and the application's
    objects are not compared: a CR refused or an overlay that does not build would otherwise read
    as every object it makes being deleted."""
    problems = [("base", p) for p in (base.problems if base else [])] + [("pr", p) for p in (head.problems if head else [])]
    if problems:
        return AppPreview(app, [], [], problems)
    old = {key_of(o): without_generated(o) for o in (base.objects if base else [])}
    new = {key_of(o): without_generated(o) for o in (head.objects if head else [])}
    removed = {k: old[k] for k in sorted(old.keys() - new.keys())}
    added = {k: new[k] for k in sorted(new.keys() - old.keys())}
    renames = find_renames(removed, added, cr_kind)
    pairs = [pair for _, found in renames for pair in found]
    causes = _Causes(old.values(), new.values(), cr_kind, pairs)

    def change(action: str, old_key: Key | None, new_key: Key | None) -> ObjectChange:
        before, after = old.get(old_key) if old_key else None, new.get(new_key) if new_key else None
        key = new_key or old_key
        assert key is not None
        diff = unified(before, after, f"base/{app}: {ref(old_key)}" if old_key else "/dev/null",
                       f"pr/{app}: {ref(new_key)}" if new_key else "/dev/null")
        return ObjectChange(action, key, old_key if action == "renamed" else None, diff, causes.of(before, after))

    changes = [change("changed", k, k) for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]
    changes += [change("renamed", o, n) for o, n in pairs]
    matched_old, matched_new = {o for o, _ in pairs}, {n for _, n in pairs}
    changes += [change("added", None, k) for k in added if k not in matched_new]
    changes += [change("removed", k, None) for k in removed if k not in matched_old]
    lines = [f"{t.describe()}: {len(renamed)} objects" for t, renamed in renames]
    return AppPreview(app, changes, lines, [])
