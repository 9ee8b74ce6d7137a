"""A Memcached CR as the tests write one: the one place that spells its apiVersion, kind,
metadata and spec, so a test states only what it is about."""

from __future__ import annotations

from typing import Any

API_VERSION = "cache.example.com/v1alpha1"


def memcached_cr(name: str, namespace: str | None = None, spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    """The CR ``name`` (in ``namespace`` when given), its ``spec``, and any further ``metadata``
    fields in the order given."""
    meta = {"name": name, **({"namespace": namespace} if namespace else {}), **metadata}
    return {"apiVersion": API_VERSION, "kind": "Memcached", "metadata": meta, "spec": dict(spec or {})}
