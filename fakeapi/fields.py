"""Server-side-apply field sets, as structured-merge-diff (SMD) computes them.

Written from the Kubernetes documentation ("Server-Side Apply": field management, conflicts,
merge strategy) and checked against the recorded transcripts, not against the reconciler:

- a field path is a tuple of elements: ``("f", name)`` for a struct or map field,
  ``("k", {key: value})`` for an item of an associative list (``x-kubernetes-list-type: map`` /
  ``patchMergeKey``), ``("v", value)`` for an item of a set;
- an applied object's set holds its leaves (scalars, atomic lists, atomic structs and empty maps)
  and the items of associative lists (these print as ``".": {}`` in fieldsV1 when they also have
  children); maps and structs are not members themselves (transcript 01);
- an Update's set holds the leaves it changed and the maps or items it created (transcript 00's
  namespace entry has ``"f:labels": {".": {}, ...}``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Path = tuple[tuple[str, Any], ...]
#: How a list at a given path merges: ("map", keys) | ("set", None) | ("atomic", None)
ListKind = tuple[str, tuple[str, ...] | None]
TypeInfo = Callable[[tuple[str, ...]], Any]

_ABSENT = object()


def _schema_path(path: Path) -> tuple[str, ...]:
    """The path without list item identities: ("spec", "template", "spec", "containers", "ports")."""
    return tuple(v for kind, v in path if kind == "f")


class Types:
    """List and struct semantics for one resource type, looked up by schema path."""

    def __init__(self, lists: dict[tuple[str, ...], ListKind], atomic_structs: set[tuple[str, ...]] | None = None,
                 default_list: ListKind = ("atomic", None), key_defaults: dict[tuple[str, ...], dict[str, Any]] | None = None) -> None:
        self.lists = lists
        self.atomic_structs = atomic_structs or set()
        self.default_list = default_list
        self.key_defaults = key_defaults or {}

    def item_key(self, item: Any, schema_path: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
        """An item's identity; key fields the server defaults (a port's protocol) count with their default."""
        keys = self.list_kind(schema_path)[1] or ()
        if isinstance(item, dict) and schema_path in self.key_defaults:
            item = {**self.key_defaults[schema_path], **item}
        return item_key(item, keys)

    def list_kind(self, schema_path: tuple[str, ...]) -> ListKind:
        return self.lists.get(schema_path, self.default_list)

    def is_atomic_struct(self, schema_path: tuple[str, ...]) -> bool:
        return schema_path in self.atomic_structs


def item_key(item: Any, keys: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    """An associative-list item's identity, hashable: the (key, value) pairs of its merge keys."""
    return tuple(sorted((k, item.get(k)) for k in keys if isinstance(item, dict) and k in item))


def encode_element(kind: str, value: Any) -> str:
    if kind == "f":
        return f"f:{value}"
    if kind == "k":
        return "k:" + json.dumps(dict(value), separators=(",", ":"), sort_keys=True)
    return "v:" + json.dumps(value, separators=(",", ":"))


def decode_element(text: str) -> tuple[str, Any]:
    kind, _, rest = text.partition(":")
    if kind == "f":
        return kind, rest
    value = json.loads(rest)
    return (kind, tuple(sorted(value.items()))) if kind == "k" else (kind, value)


def _children(value: Any, path: Path, types: Types) -> list[tuple[Path, Any]]:
    sp = _schema_path(path)
    if isinstance(value, dict) and not types.is_atomic_struct(sp) and not (path and path[-1][0] == "k" and sp in types.atomic_structs):
        return [(path + (("f", k),), v) for k, v in value.items()]
    if isinstance(value, list):
        kind, keys = types.list_kind(sp)
        if kind == "map":
            return [(path + (("k", types.item_key(item, sp)),), item) for item in value]
        if kind == "set":
            return [(path + (("v", item),), item) for item in value]
    return []


def _is_leaf(value: Any, path: Path, types: Types) -> bool:
    sp = _schema_path(path)
    if isinstance(value, dict):
        return not value or types.is_atomic_struct(sp)
    if isinstance(value, list):
        return types.list_kind(sp)[0] == "atomic"
    return True


def applied_set(obj: dict[str, Any], types: Types, skip: tuple[str, ...] = ("apiVersion", "kind")) -> set[Path]:
    """The fields an applied configuration sets (its leaves and its associative-list items)."""
    out: set[Path] = set()

    def walk(value: Any, path: Path) -> None:
        if path and path[-1][0] in ("k", "v"):
            out.add(path)
            if path[-1][0] == "v" or types.is_atomic_struct(_schema_path(path)):
                return
        elif path and _is_leaf(value, path, types):
            out.add(path)
            return
        for child_path, child in _children(value, path, types):
            walk(child, child_path)

    for key, value in obj.items():
        if key in skip:
            continue
        if key == "metadata" and isinstance(value, dict):
            for mk, mv in value.items():
                if mk in ("name", "namespace", "resourceVersion", "uid", "managedFields", "generation",
                          "creationTimestamp", "selfLink"):
                    continue
                walk(mv, (("f", "metadata"), ("f", mk)))
            continue
        walk(value, (("f", key),))
    return out


def value_at(obj: Any, path: Path, types: Types) -> Any:
    """The value at a path, or _ABSENT."""
    cur = obj
    for kind, v in path:
        if kind == "f":
            if not isinstance(cur, dict) or v not in cur:
                return _ABSENT
            cur = cur[v]
        elif kind == "k":
            if not isinstance(cur, list):
                return _ABSENT
            match = [i for i in cur if isinstance(i, dict) and all(i.get(k) == kv for k, kv in v)]
            if not match:
                return _ABSENT
            cur = match[0]
        else:  # "v"
            if not isinstance(cur, list) or v not in cur:
                return _ABSENT
            cur = v
    return cur


def update_set(old: Any, new: Any, types: Types) -> tuple[set[Path], set[Path]]:
    """(paths an update set or created, paths it removed): the leaves and members that differ."""
    changed: set[Path] = set()
    removed: set[Path] = set()

    def walk(o: Any, n: Any, path: Path) -> None:
        if o == n:
            return
        if o is _ABSENT:
            changed.add(path)
            if not _is_leaf(n, path, types):
                for cp, cv in _children(n, path, types):
                    walk(_ABSENT, cv, cp)
            return
        if n is _ABSENT:
            removed.add(path)
            return
        if _is_leaf(n, path, types) or type(o) is not type(n):
            changed.add(path)
            return
        new_children = dict(_children(n, path, types))
        old_children = dict(_children(o, path, types))
        for cp, cv in new_children.items():
            walk(old_children.get(cp, _ABSENT), cv, cp)
        for cp in old_children:
            if cp not in new_children:
                removed.add(cp)

    for key in set(old) | set(new) if isinstance(old, dict) else set(new):
        if key in ("apiVersion", "kind", "status", "metadata"):
            continue
        walk(old.get(key, _ABSENT), new.get(key, _ABSENT), (("f", key),))
    om, nm = old.get("metadata", {}), new.get("metadata", {})
    for key in ("generateName", "labels", "annotations", "ownerReferences", "finalizers"):
        walk(om.get(key, _ABSENT), nm.get(key, _ABSENT), (("f", "metadata"), ("f", key)))
    if "status" in old or "status" in new:
        walk(old.get("status", _ABSENT), new.get("status", _ABSENT), (("f", "status"),))
    return changed, removed


def covers(paths: set[Path], path: Path) -> bool:
    """Whether ``path`` is owned through ``paths``: itself, a descendant, or an atomic ancestor
    (an associative-list item only marks presence and owns nothing below it by itself)."""
    return any(p[: len(path)] == path or (path[: len(p)] == p and p[-1][0] != "k") for p in paths)


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """The fieldsV1 form: nested ``f:``/``k:``/``v:`` keys; a member with children also gets ``"."``."""
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for kind, value in path:
            node = node.setdefault(encode_element(kind, value), {})
    for path in paths:
        node = root
        for kind, value in path:
            node = node[encode_element(kind, value)]
        if node and "." not in node:
            node["."] = {}

    def ordered(node: dict[str, Any]) -> dict[str, Any]:
        return {k: ordered(node[k]) for k in sorted(node)}

    return ordered(root)


def from_fields_v1(fields: dict[str, Any]) -> set[Path]:
    out: set[Path] = set()

    def walk(node: dict[str, Any], path: Path) -> None:
        if not node or "." in node:
            if path:
                out.add(path)
        for key, child in node.items():
            if key == ".":
                continue
            walk(child, path + (decode_element(key),))

    walk(fields, ())
    return out


def leaves(paths: set[Path]) -> set[Path]:
    """The paths that have no descendant in the set (for comparisons that ignore '.' markers)."""
    return {p for p in paths if not any(len(q) > len(p) and q[: len(p)] == p for q in paths)}


def format_field_path(path: Path) -> str:
    """``.spec.template.spec.containers[name="memcached"].image``, as conflict messages print it."""
    out = ""
    for kind, value in path:
        if kind == "f":
            out += f".{value}"
        elif kind == "k":
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in value) + "]"
        else:
            out += f"[={json.dumps(value)}]"
    return out
