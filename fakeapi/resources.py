"""The resource types the fake API server serves, with their merge semantics.

List semantics for apps/v1 and core/v1 come from the Kubernetes API reference (patch strategy
and merge keys, ``+listType``/``+listMapKey`` markers, ``+structType=atomic`` on LabelSelector);
transcript 01 shows them in fieldsV1: ``k:{"name":...}`` for containers,
``k:{"containerPort":...,"protocol":...}`` for ports, ``"f:selector": {}`` (atomic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .fields import Types

POD = ("spec", "template", "spec")
CONTAINER_LISTS = {
    POD + ("containers",): ("map", ("name",)),
    POD + ("initContainers",): ("map", ("name",)),
    POD + ("containers", "ports"): ("map", ("containerPort", "protocol")),
    POD + ("initContainers", "ports"): ("map", ("containerPort", "protocol")),
    POD + ("containers", "env"): ("map", ("name",)),
    POD + ("containers", "volumeMounts"): ("map", ("mountPath",)),
    POD + ("volumes",): ("map", ("name",)),
    POD + ("imagePullSecrets",): ("map", ("name",)),
    ("metadata", "ownerReferences"): ("map", ("uid",)),
    ("metadata", "finalizers"): ("set", None),
    ("status", "conditions"): ("map", ("type",)),
}
#: Key fields the server defaults before computing an item's identity (ports: protocol TCP).
KEY_DEFAULTS = {POD + ("containers", "ports"): {"protocol": "TCP"}, POD + ("initContainers", "ports"): {"protocol": "TCP"}}

#: OwnerReference and ObjectReference are +structType=atomic: an item is owned whole (20: k:{"uid":...}: {}).
ATOMIC_REFS = {("metadata", "ownerReferences"), ("involvedObject",), ("regarding",), ("related",)}
#: A Pod's nodeSelector is +mapType=atomic (x-kubernetes-map-type: atomic in the v1.36 OpenAPI): owned whole.
#: Assumed from the OpenAPI: no transcript in ../shared/apiserver-transcripts/ records an apply of it.
DEPLOYMENT_TYPES = Types(CONTAINER_LISTS, atomic_structs={("spec", "selector"), POD + ("nodeSelector",)} | ATOMIC_REFS,
                         key_defaults=KEY_DEFAULTS)
POD_TYPES = Types({(k[2:] if k[:3] == POD else k): v for k, v in CONTAINER_LISTS.items()}, atomic_structs=ATOMIC_REFS)
#: A Service's ports are a map keyed by port and protocol, its selector an atomic map (transcript 42).
SERVICE_TYPES = Types({("metadata", "ownerReferences"): ("map", ("uid",)), ("metadata", "finalizers"): ("set", None),
                       ("spec", "ports"): ("map", ("port", "protocol"))}, atomic_structs=ATOMIC_REFS | {("spec", "selector")},
                      key_defaults={("spec", "ports"): {"protocol": "TCP"}})
#: A PodDisruptionBudget's selector is a LabelSelector, an atomic struct (policy/v1 API reference).
#: Its status.conditions a map keyed by type: assumed from policy/v1's +listType=map +listMapKey=type;
#: transcript 42 shows the disruption controller's status writes, not an apply that meets them.
BUDGET_TYPES = Types({("metadata", "ownerReferences"): ("map", ("uid",)), ("metadata", "finalizers"): ("set", None),
                      ("status", "conditions"): ("map", ("type",))},
                     atomic_structs=ATOMIC_REFS | {("spec", "selector")})
GENERIC_TYPES = Types({("metadata", "ownerReferences"): ("map", ("uid",)), ("metadata", "finalizers"): ("set", None)},
                      atomic_structs=ATOMIC_REFS)


@dataclass
class Resource:
    plural: str
    group: str
    version: str
    kind: str
    namespaced: bool = True
    status: bool = False
    scale: bool = False
    custom: bool = False
    types: Types = field(default_factory=lambda: GENERIC_TYPES)
    #: writes that bump metadata.generation: "spec" (CRs), "spec+annotations" (Deployments), "" (none)
    generation: str = ""
    crd: Any = None  # schemas.CRD for custom resources

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def custom_types(version_schema: dict[str, Any]) -> Types:
    """List semantics of a CRD schema: x-kubernetes-list-type map/set, atomic otherwise."""
    lists: dict[tuple[str, ...], Any] = dict(GENERIC_TYPES.lists)
    atomic: set[tuple[str, ...]] = set(ATOMIC_REFS)

    def walk(schema: dict[str, Any], path: tuple[str, ...]) -> None:
        if schema.get("type") == "array":
            kind = schema.get("x-kubernetes-list-type", "atomic")
            lists[path] = ("map", tuple(schema.get("x-kubernetes-list-map-keys", []))) if kind == "map" else (kind, None)
            if isinstance(schema.get("items"), dict):
                walk(schema["items"], path)
        if schema.get("x-kubernetes-map-type") == "atomic":
            atomic.add(path)
        for key, sub in (schema.get("properties") or {}).items():
            walk(sub, path + (key,))

    walk(version_schema, ())
    return Types(lists, atomic_structs=atomic)


BUILTINS = [
    Resource("namespaces", "", "v1", "Namespace", namespaced=False),
    Resource("pods", "", "v1", "Pod", status=True, types=POD_TYPES),
    Resource("events", "", "v1", "Event"),
    Resource("events", "events.k8s.io", "v1", "Event"),
    Resource("deployments", "apps", "v1", "Deployment", status=True, scale=True, types=DEPLOYMENT_TYPES,
             generation="spec+annotations"),
    Resource("leases", "coordination.k8s.io", "v1", "Lease"),
    # what an HPA's scaleTargetRef names, read by the reconciler (40); the HPA controller itself is a test's PUT to /scale
    Resource("horizontalpodautoscalers", "autoscaling", "v2", "HorizontalPodAutoscaler", status=True),
    # what render/companions.py renders beside the Deployment (42)
    Resource("services", "", "v1", "Service", status=True, types=SERVICE_TYPES),
    Resource("poddisruptionbudgets", "policy", "v1", "PodDisruptionBudget", status=True, types=BUDGET_TYPES, generation="spec"),
    Resource("customresourcedefinitions", "apiextensions.k8s.io", "v1", "CustomResourceDefinition", namespaced=False,
             status=True, generation="spec"),
]


def truthy(value: str | None) -> bool:
    """A boolean query parameter as Go's strconv.ParseBool reads it (the Python client sends True)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")
