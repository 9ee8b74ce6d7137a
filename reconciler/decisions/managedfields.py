"""Who set a field: read ``metadata.managedFields`` (fieldsV1). Pure.

fieldsV1 is a tree of ``f:<field>``, ``k:<json merge key>`` and ``v:<json value>`` keys
(Kubernetes docs, "Server-Side Apply", field management). A manager owns a path when its tree
reaches the path, or reaches an ancestor that is a leaf (an atomic value it owns whole).
"""

from __future__ import annotations

import json
from typing import Any

PathStep = tuple[str, Any]


def _element(step: PathStep) -> str:
    kind, value = step
    if kind == "f":
        return f"f:{value}"
    return "k:" + json.dumps(dict(value), separators=(",", ":"), sort_keys=True)


def _owns(tree: dict[str, Any], path: tuple[PathStep, ...]) -> bool:
    node = tree
    for step in path:
        key = _element(step)
        if key not in node:
            return False
        node = node[key]
        if not node:  # a leaf: owned whole
            return True
    return True


def describe_manager(entry: dict[str, Any]) -> str:
    """``kubectl (scale)``, ``kubectl-set``: the manager as a person would name it."""
    name = entry.get("manager", "?")
    return f"{name} ({entry['subresource']})" if entry.get("subresource") else name


def owners_of(managed_fields: list[dict[str, Any]], path: tuple[PathStep, ...]) -> tuple[str, ...]:
    """The managers whose fieldsV1 cover ``path`` (a deleted field has none)."""
    if not path:
        return ()
    return tuple(
        describe_manager(e) for e in managed_fields if _owns(e.get("fieldsV1") or {}, path)
    )
