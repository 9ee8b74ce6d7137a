"""Compare a desired manifest with the live object, with server-side-apply semantics. Pure.

Only the fields the desired manifest sets are compared (what the API server or other controllers
add is not drift). Maps compare key by key; associative lists (containers by name, ports by
containerPort+protocol, ownerReferences by uid) compare item by item, matched by their merge keys;
every other list is atomic and compares whole. Each drifted field is named in the form the API
server's own conflict messages use (``.spec.template.spec.containers[name="memcached"].image``)
together with the field manager that owns it now, read from ``managedFields``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from memcached_gitops.foundation.digits import is_digits
from memcached_gitops.foundation.excerpt import quote_value
from memcached_gitops.schemas.list_rules import ListRules

from .managedfields import owners_of

#: Merge keys of the associative lists in what render/ produces (apps/v1 and meta/v1 API reference).
MERGE_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("spec", "template", "spec", "containers"): ("name",),
    ("spec", "template", "spec", "containers", "ports"): ("containerPort", "protocol"),
    ("spec", "template", "spec", "containers", "env"): ("name",),
    ("metadata", "ownerReferences"): ("uid",),
}
#: Key fields the API server defaults before an item's identity is computed (a port's protocol).
KEY_DEFAULTS = {"protocol": "TCP"}
#: Associative lists where an item we do not render is drift too: it would sit beside ours in the
#: same container (a port renamed by hand keeps the old name: a duplicate the API server rejects).
#: Extra containers and ownerReferences belong to others and are left alone.
EXCLUSIVE_LISTS = {("spec", "template", "spec", "containers", "ports"), ("spec", "template", "spec", "containers", "env")}
#: Structs and maps the API owns whole (+structType=atomic, +mapType=atomic): compared as a single
#: value. A Pod's nodeSelector is an atomic map (x-kubernetes-map-type in the v1.36 OpenAPI); the
#: affinity's selectors sit inside atomic lists, which compare whole already.
ATOMIC = {("spec", "selector"), ("metadata", "ownerReferences", "item"), ("spec", "template", "spec", "nodeSelector")}

PathStep = tuple[str, Any]  # ("f", name) | ("k", ((key, value), ...))


DEPLOYMENT_RULES = ListRules(MERGE_KEYS, frozenset(EXCLUSIVE_LISTS), frozenset(ATOMIC))


class Drift(NamedTuple):
    """One field whose live value is not the desired one."""

    path: tuple[PathStep, ...]
    live: Any
    desired: Any
    managers: tuple[str, ...]  # who owns the live value ("" when nobody does)

    @property
    def field(self) -> str:
        return format_drift_path(self.path)

    def describe(self) -> str:
        who = ", ".join(self.managers) if self.managers else "no field manager"
        # live values may be anyone's (an env var holding a token): quoted by a bounded excerpt
        live = "<absent>" if self.live is _ABSENT else quote_value(self.live)
        desired = "<absent>" if self.desired is _ABSENT else quote_value(self.desired)
        return f"{self.field}: live {live}, desired {desired} (set by {who})"

    @property
    def missing_item(self) -> bool:
        """An item of ours absent from an associative list: perhaps replaced by one under another key
        (a Service port changed by hand), which only its owner's apply can remove (revoke.py)."""
        return self.live is _ABSENT and bool(self.path) and self.path[-1][0] == "k"

    @property
    def unwanted(self) -> bool:
        """An item someone else added to a list we own whole (see EXCLUSIVE_LISTS)."""
        return self.desired is _ABSENT


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Any = _Absent()


def removal_patch(live: dict[str, Any], drifts: list[Drift]) -> list[dict[str, Any]]:
    """A JSON patch (RFC 6902) that removes the unwanted list items, each guarded by a ``test`` of
    its current value. Server-side apply cannot remove an item another manager owns, so these are
    removed first, then the apply adds ours (a port renamed by hand would otherwise stay beside
    ours, with the same name: a Deployment the API server rejects)."""
    ops: list[tuple[str, Any]] = []
    for d in drifts:
        if not d.unwanted:
            continue
        pointer = ""
        node: Any = live  # a mapping or a list, by the step that reached it
        for kind, value in d.path:
            if kind == "f":
                pointer += "/" + str(value).replace("~", "~0").replace("/", "~1")
                node = node[value]
            else:
                index = next(i for i, item in enumerate(node) if _matches(item, value))
                pointer += f"/{index}"
                node = node[index]
        ops.append((pointer, node))
    patch: list[dict[str, Any]] = []
    for pointer, value in sorted(ops, key=lambda o: [int(p) if is_digits(p) else p for p in o[0].split("/")], reverse=True):
        patch += [{"op": "test", "path": pointer, "value": value}, {"op": "remove", "path": pointer}]
    return patch


def _matches(item: dict[str, Any], key: tuple[tuple[str, Any], ...]) -> bool:
    return _key(item, tuple(k for k, _ in key)) == key


def format_drift_path(path: tuple[PathStep, ...]) -> str:
    """A drift's path as the reconciler reports it: ``.spec.template.spec.containers[name="memcached"].image``,
    list items named by their merge keys (the validator's ``format_path`` writes CR field paths)."""
    out = ""
    for kind, value in path:
        out += f".{value}" if kind == "f" else "[" + ",".join(f"{k}={quote_value(v)}" for k, v in value) + "]"
    return out


def _key(item: Any, keys: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    item = {**KEY_DEFAULTS, **item} if isinstance(item, dict) else {}
    return tuple((k, item.get(k)) for k in keys)


def compare(desired: dict[str, Any], live: dict[str, Any] | None, rules: ListRules = DEPLOYMENT_RULES) -> list[Drift]:
    """The fields of ``desired`` whose value differs in ``live`` (everything, when live is None),
    with the list semantics of its kind (``rules``: a Deployment's unless said)."""
    if live is None:
        return [Drift((), _ABSENT, "<the whole object>", ())]
    found: list[tuple[Any, ...]] = []  # (path, live, desired[, related paths])
    _walk(desired, live, (), (), found, rules)
    managed = (live.get("metadata") or {}).get("managedFields") or []
    drifts = []
    for p, lv, dv, *related in found:
        owners = owners_of(managed, p)
        for other in (related[0] if related else ()):
            owners += tuple(o for o in owners_of(managed, other) if o not in owners)
        drifts.append(Drift(p, lv, dv, owners))
    return drifts


def _walk(desired: Any, live: Any, path: tuple[PathStep, ...], schema: tuple[str, ...], out: list[tuple[Any, ...]],
          rules: ListRules) -> None:
    if isinstance(desired, dict) and schema not in rules.atomic:
        if not isinstance(live, dict):
            out.append((path, live, desired))
            return
        for k, v in desired.items():
            if path == () and k in ("apiVersion", "kind"):
                continue
            if schema == ("metadata",) and k in ("name", "namespace"):
                continue
            _walk(v, live.get(k, _ABSENT), path + (("f", k),), schema + (k,), out, rules)
        return
    keys = rules.merge_keys.get(schema)
    if keys and isinstance(desired, list):
        live_items = {_key(i, keys): i for i in live} if isinstance(live, list) else {}
        for item in desired:
            key = _key(item, keys)
            step = path + (("k", key),)
            match = live_items.get(key, _ABSENT)
            item_schema = schema + ("item",) if schema + ("item",) in rules.atomic else schema
            if match is _ABSENT:  # who changed the list: the owners of the items we did not expect
                others = tuple(path + (("k", k),) for k in live_items if k not in {_key(i, keys) for i in desired})
                out.append((step, _ABSENT, item, others))
            else:
                _walk(item, match, step, item_schema, out, rules)
        if schema in rules.exclusive:
            wanted = {_key(i, keys) for i in desired}
            out += [(path + (("k", k),), item, _ABSENT) for k, item in live_items.items() if k not in wanted]
        return
    if desired != live:
        out.append((path, live, desired))
