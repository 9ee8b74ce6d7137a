"""Where the Pods may run: the CR's ``nodeSelector``, ``tolerations``, ``affinity`` and
``priorityClassName``, copied into the Pod template as the API server will store them. Pure.

The API server reads a Pod spec into Go structs and writes it back with ``omitempty``: an empty
string, list or map (``nodeSelector: {}``, ``tolerations: []``, a toleration's ``key: ""``, a
selector's ``matchLabels: {}``) is gone on the way back, while an empty struct behind a pointer
(``affinity: {}``, ``nodeAffinity: {}``, ``labelSelector: {}``) stays. Rendering the stored form
keeps the reconciler from seeing drift in what it wrote itself. Recorded on kube-apiserver v1.36.2
(``kubectl create --dry-run=server -o json`` of a Deployment with each empty form; the case is
tests/render/test_scheduling.py::STORED).
"""

from __future__ import annotations

from typing import Any

#: the CR's fields that go into the Pod template's spec as they are, in this order
FIELDS = ("nodeSelector", "tolerations", "affinity", "priorityClassName")
#: the string-keyed maps (Go maps, omitted when empty) among these types; every other object is a struct
MAPS = frozenset({"nodeSelector", "matchLabels"})


def stored(value: Any, key: str = "") -> Any:
    """``value`` as the API server writes it back: empty strings, lists and maps under a key left
    out (None), empty structs kept, a map's entries kept whatever their value (a Go map's ``""`` is an
    entry, not an omitted field); copied, so the rendered Deployment shares nothing with the CR."""
    if isinstance(value, dict) and key in MAPS:
        return dict(value) or None
    if isinstance(value, dict):
        return {k: v for k, v in ((k, stored(v, k)) for k, v in value.items()) if v is not None}
    if isinstance(value, list):
        items = [stored(v) for v in value]
        return items or None
    if value == "" and key:
        return None
    return value


def scheduling(spec: dict[str, Any]) -> dict[str, Any]:
    """The Pod spec's placement fields the CR sets (none when it sets none: the seeds' Deployment)."""
    out = {}
    for field in FIELDS:
        if spec.get(field) is not None:
            value = stored(spec[field], field)
            if value is not None:
                out[field] = value
    return out
