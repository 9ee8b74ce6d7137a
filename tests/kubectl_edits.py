"""The ways a person changes an object with kubectl, as kubectl v1.37 sends them (transcripts README,
"Field managers used by clients"), for the edit matrix (test_kubectl_edits.py, and its real-cluster
twin). Each ``change`` answers the HTTP status of the person's write.

``edit`` is kubectl edit's two-way strategic merge patch (an item whose key changed: the new item and
a ``$patch: delete`` of the old, as CreateTwoWayMergePatch makes it) under ``kubectl-edit``;
``apply client-side`` the same patch under ``kubectl-client-side-apply``; ``apply server-side`` the
whole edited object under ``kubectl`` with ``force=true`` (``--force-conflicts``); ``replace`` a PUT
under ``kubectl-replace``; ``scale`` kubectl scale's merge patch to ``/scale`` without a fieldManager.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from tests.conftest import REPO

#: field family -> (kind, JSON pointer into the object, the person's value)
FAMILIES: dict[str, tuple[str, str, Any]] = {
    "Deployment replicas": ("Deployment", "/spec/replicas", 4),
    "Deployment image": ("Deployment", "/spec/template/spec/containers/0/image", "memcached:1.6.21"),
    "Deployment container port": ("Deployment", "/spec/template/spec/containers/0/ports/0/containerPort", 11299),
    "Deployment probe": ("Deployment", "/spec/template/spec/containers/0/readinessProbe/periodSeconds", 30),
    "Deployment label": ("Deployment", "/metadata/labels/app.kubernetes.io~1component", "web"),
    "Service port": ("Service", "/spec/ports/0/port", 11299),
    "Service port name": ("Service", "/spec/ports/0/name", "mc"),
    "Service target port": ("Service", "/spec/ports/0/targetPort", 11311),
    "Service selector": ("Service", "/spec/selector/app.kubernetes.io~1instance", "other"),
    "Service label": ("Service", "/metadata/labels/app.kubernetes.io~1component", "web"),
    "PodDisruptionBudget maxUnavailable": ("PodDisruptionBudget", "/spec/maxUnavailable", 0),
    "PodDisruptionBudget selector": ("PodDisruptionBudget", "/spec/selector/matchLabels/app.kubernetes.io~1instance", "other"),
    "PodDisruptionBudget label": ("PodDisruptionBudget", "/metadata/labels/app.kubernetes.io~1component", "web"),
}
METHODS = ("edit", "patch merge", "patch json", "patch strategic", "scale", "apply client-side", "apply server-side", "replace")
#: kind -> (API path prefix, list keys by the list's field name: what a strategic merge patch merges by)
KINDS: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "Deployment": ("/apis/apps/v1/namespaces/{ns}/deployments/{name}", {"containers": ("name",), "ports": ("containerPort", "protocol")}),
    "Service": ("/api/v1/namespaces/{ns}/services/{name}", {"ports": ("port", "protocol")}),
    "PodDisruptionBudget": ("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}", {}),
}
SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")

#: Sends (method, path, query, content type, body) and answers (status, body).
Send = Callable[[str, str, str, str, Any], "tuple[int, Any]"]


def steps_of(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def value_at(obj: Any, pointer: str) -> Any:
    for step in steps_of(pointer):
        obj = obj[int(step)] if isinstance(obj, list) else obj.get(step) if isinstance(obj, dict) else None
    return obj


def edited(obj: dict[str, Any], pointer: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    *parents, last = steps_of(pointer)
    node: Any = out
    for step in parents:
        node = node[int(step)] if isinstance(node, list) else node[step]
    node[int(last) if isinstance(node, list) else last] = value
    return out


def _merge_body(before: Any, after: Any, steps: list[str]) -> Any:
    """A JSON merge patch: maps down to the field, a list whole (a merge patch replaces lists)."""
    if not steps or isinstance(after, list):
        return copy.deepcopy(after)
    return {steps[0]: _merge_body(before[steps[0]], after[steps[0]], steps[1:])}


def _strategic_body(before: Any, after: Any, steps: list[str], keys: dict[str, tuple[str, ...]], field: str = "") -> Any:
    """A two-way strategic merge patch: a keyed list gets the changed item (and, its key changed, a
    delete of the old one); an unkeyed list goes whole."""
    if not steps:
        return copy.deepcopy(after)
    if isinstance(after, list):
        if field not in keys:
            return copy.deepcopy(after)
        i = int(steps[0])
        new, old = after[i], before[i]
        item = {**{k: new[k] for k in keys[field] if k in new}, **_strategic_body(old, new, steps[1:], keys)}
        changed = any(new.get(k) != old.get(k) for k in keys[field])
        return [new if changed else item] + ([{"$patch": "delete", **{k: old[k] for k in keys[field] if k in old}}] if changed else [])
    return {steps[0]: _strategic_body(before[steps[0]], after[steps[0]], steps[1:], keys, steps[0])}


def manifest(obj: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    """The object as a person would apply it: no server-set metadata, no status."""
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}
    out["apiVersion"], out["kind"] = api_version, kind
    out["metadata"] = {k: v for k, v in out["metadata"].items() if k not in SERVER_SET}
    return out


def change(send: Send, kind: str, ns: str, name: str, method: str, pointer: str, value: Any, live: dict[str, Any],
           api_version: str) -> int | None:
    """The person's write; None when ``method`` does not apply to this field (scale: replicas only)."""
    template, keys = KINDS[kind]
    path = template.format(ns=ns, name=name)
    after, steps = edited(live, pointer, value), steps_of(pointer)
    strategic = json.dumps(_strategic_body(live, after, steps, keys))
    managers = {"edit": "kubectl-edit", "patch merge": "kubectl-patch", "patch json": "kubectl-patch",
                "patch strategic": "kubectl-patch", "apply client-side": "kubectl-client-side-apply"}
    if method == "scale":
        if pointer != "/spec/replicas" or kind != "Deployment":
            return None
        return send("PATCH", path + "/scale", "", "application/merge-patch+json", json.dumps({"spec": {"replicas": value}}))[0]
    if method == "patch json":
        body = json.dumps([{"op": "replace", "path": pointer, "value": value}])
        return send("PATCH", path, "?fieldManager=kubectl-patch", "application/json-patch+json", body)[0]
    if method == "patch merge":
        return send("PATCH", path, "?fieldManager=kubectl-patch", "application/merge-patch+json",
                    json.dumps(_merge_body(live, after, steps)))[0]
    if method in ("edit", "patch strategic", "apply client-side"):
        query = f"?fieldManager={managers[method]}" + ("&fieldValidation=Strict" if method == "apply client-side" else "")
        return send("PATCH", path, query, "application/strategic-merge-patch+json", strategic)[0]
    if method == "apply server-side":
        return send("PATCH", path, "?fieldManager=kubectl&fieldValidation=Strict&force=true", "application/apply-patch+yaml",
                    json.dumps(manifest(after, kind, api_version)))[0]
    assert method == "replace", method
    body = json.dumps({**after, "apiVersion": api_version, "kind": kind})
    return send("PUT", path, "?fieldManager=kubectl-replace", "application/json", body)[0]


TABLE = REPO / "docs" / "reference" / "kubectl-edits.md"


def documented() -> dict[str, dict[str, str]]:
    """The table of docs/reference/kubectl-edits.md, by row."""
    rows: dict[str, dict[str, str]] = {}
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == len(METHODS) + 1 and cells[0] in [*FAMILIES, *(f"{f} (ignore-paths)" for f in IGNORED)]:
            rows[cells[0]] = dict(zip(METHODS, cells[1:], strict=True))
    return rows


#: the families also run with the CR's ignore-paths naming the field
IGNORED = ("Deployment replicas", "Service target port", "PodDisruptionBudget maxUnavailable")
