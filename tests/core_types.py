"""The core/v1 types the CRD embeds (Toleration, Affinity), as structural schemas made from the
Kubernetes OpenAPI of kubernetes-validate, the way controller-gen embeds a Go type: ``$ref`` inlined,
a nullable type written as its type, formats, ``required`` and the ``x-kubernetes-*`` list and map
markers kept. Descriptions are dropped below the field itself (controller-gen's ``maxDescLen=0``):
they would triple the CRD that every ``render`` loads, and ``kubectl explain`` on the Pod says them.

tests/schemas/test_crd.py checks that the shipped CRD embeds exactly this; ``python -m tests.core_types``
prints the YAML to paste after a Kubernetes upgrade.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

#: the Kubernetes release whose OpenAPI the embedded types follow (the real kit's API server: v1.36.2)
KUBERNETES = "v1.36.0"
KEPT = ("format", "required", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type")


@cache
def definitions() -> dict[str, Any]:
    import kubernetes_validate

    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"{KUBERNETES}-local"
    return json.loads((root / "_definitions.json").read_text())["$defs"]


def structural(node: dict[str, Any]) -> dict[str, Any]:
    """One JSON-schema node of the OpenAPI as a structural CRD schema node."""
    if "$ref" in node:
        return structural(definitions()[node["$ref"].rsplit("/", 1)[-1]])
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next(t for t in kind if t != "null")
    out: dict[str, Any] = {"type": kind} if kind else {}
    if "properties" in node:
        out["properties"] = {k: structural(v) for k, v in sorted(node["properties"].items())}
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = structural(node["additionalProperties"])
    if "items" in node:
        out["items"] = structural(node["items"])
    for key in KEPT:
        if key in node:
            out[key] = node[key]
    return out


def pod_spec_field(name: str) -> dict[str, Any]:
    """The schema of ``PodSpec.<name>`` (``tolerations``, ``affinity``, ``nodeSelector``)."""
    return structural(definitions()["io.k8s.api.core.v1.PodSpec"]["properties"][name])


if __name__ == "__main__":
    import yaml

    for field in sys.argv[1:] or ["nodeSelector", "tolerations", "affinity"]:
        sys.stdout.write(yaml.safe_dump({field: pod_spec_field(field)}, sort_keys=False))
