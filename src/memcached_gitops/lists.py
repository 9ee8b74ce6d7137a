"""List documents as kubectl reads them: which documents are lists, which list kinds map, what the
client checks on a list before anything is sent, and the objects a list stands for.

``kubectl create|apply -f`` decodes every document as unstructured JSON: a document with an
``items`` key is an UnstructuredList, whatever its kind, and is flattened into its items; the list
itself is never sent. Before that the list must map to a resource (discovery maps ``List`` in every
served group-version and ``<Kind>List`` for every served kind), and the client validates it against
the OpenAPI v2 schema when the server's OpenAPI v3 offers no ``fieldValidation`` for its kind (never
for a list). docs/design/kubectl-reader.md, section 3, cites each step; each rule below names its line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memcached_gitops.foundation.excerpt import quote_value
from memcached_gitops.schemas import Problem, Validator
from memcached_gitops.schemas.validator import identity_problems

#: The kinds of the top-level resources kube-apiserver v1.36.2 serves in each built-in group-version
#: (its discovery, ``/api/v1`` and ``/apis/<group>/<version>``, subresources left out as client-go's
#: restmapper leaves them out: CG restmapper/discovery.go:136). Recorded from the server; a group not
#: listed here (another CRD's) is unknown to the validator, and its lists are flattened unjudged.
BUILTIN_KINDS: dict[str, frozenset[str]] = {
    "v1": frozenset(("Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
                     "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController",
                     "ResourceQuota", "Secret", "Service", "ServiceAccount")),
    "admissionregistration.k8s.io/v1": frozenset((
        "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration")),
    "apiextensions.k8s.io/v1": frozenset(("CustomResourceDefinition",)),
    "apiregistration.k8s.io/v1": frozenset(("APIService",)),
    "apps/v1": frozenset(("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet")),
    "authentication.k8s.io/v1": frozenset(("SelfSubjectReview", "TokenReview")),
    "authorization.k8s.io/v1": frozenset(("LocalSubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview",
                                          "SubjectAccessReview")),
    "autoscaling/v1": frozenset(("HorizontalPodAutoscaler",)),
    "autoscaling/v2": frozenset(("HorizontalPodAutoscaler",)),
    "batch/v1": frozenset(("CronJob", "Job")),
    "certificates.k8s.io/v1": frozenset(("CertificateSigningRequest",)),
    "coordination.k8s.io/v1": frozenset(("Lease",)),
    "discovery.k8s.io/v1": frozenset(("EndpointSlice",)),
    "events.k8s.io/v1": frozenset(("Event",)),
    "flowcontrol.apiserver.k8s.io/v1": frozenset(("FlowSchema", "PriorityLevelConfiguration")),
    "networking.k8s.io/v1": frozenset(("IPAddress", "Ingress", "IngressClass", "NetworkPolicy", "ServiceCIDR")),
    "node.k8s.io/v1": frozenset(("RuntimeClass",)),
    "policy/v1": frozenset(("PodDisruptionBudget",)),
    "rbac.authorization.k8s.io/v1": frozenset(("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")),
    "resource.k8s.io/v1": frozenset(("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")),
    "scheduling.k8s.io/v1": frozenset(("PriorityClass",)),
    "storage.k8s.io/v1": frozenset(("CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass", "VolumeAttachment",
                                    "VolumeAttributesClass")),
}
#: The fields of a typed list's metadata (apimachinery's ListMeta), the only ones its OpenAPI v2 schema has.
LIST_META_FIELDS = frozenset(("selfLink", "resourceVersion", "continue", "remainingItemCount", "shardInfo"))
#: The fields of a typed list (``<Kind>List``) in the OpenAPI v2 schema the server publishes for it.
TYPED_LIST_FIELDS = frozenset(("apiVersion", "kind", "metadata", "items"))
#: kubectl's words when the client validation finds no object where one must be (KC pkg/validation/validation.go:65, 113).
INVALID_OBJECT = "invalid object to validate"


def is_list(value: Any) -> bool:
    """Whether kubectl decodes a document as a list: a map with an ``items`` key, whatever its value
    (AM pkg/apis/meta/v1/unstructured/helpers.go:433-446: a RawMessage detector, non-nil even for null)."""
    return isinstance(value, dict) and "items" in value


def is_nested_list(item: Any) -> bool:
    """Whether a list's item is itself a list, which kubectl refuses (``not a list: no Items field``):
    an unstructured item is a list when its ``items`` is an array (AM pkg/apis/meta/v1/unstructured/
    unstructured.go:54-61 ``IsList``; CR pkg/resource/visitor.go:437-451 then fails to extract it)."""
    return isinstance(item, dict) and isinstance(item.get("items"), list)


#: Built-in groups kube-apiserver no longer serves in any version: ``extensions`` (its last kinds, Ingress
#: among them, removed in v1.22). Its name has no dot, so no CRD can serve it either (apiextensions
#: refuses a group that is not "a domain with at least one dot"): old manifests in it are unmapped.
REMOVED_BUILTIN_GROUPS = frozenset(("extensions",))
#: The built-in API groups ("" is the core group, whose apiVersion has no slash), served or removed.
BUILTIN_GROUPS = frozenset(gv.rpartition("/")[0] for gv in BUILTIN_KINDS) | REMOVED_BUILTIN_GROUPS


def builtin_kinds(api_version: Any) -> frozenset[str] | None:
    """The kinds kube-apiserver v1.36.2 serves in a built-in group's ``api_version`` (none in a
    version it does not serve, such as ``v1alpha1`` or ``apps/v1beta1``); None outside the built-in groups."""
    if not isinstance(api_version, str):
        return None
    if api_version in BUILTIN_KINDS:
        return BUILTIN_KINDS[api_version]
    return frozenset() if api_version.rpartition("/")[0] in BUILTIN_GROUPS else None


def served_kinds(api_version: Any, validator: Validator) -> frozenset[str] | None:
    """The kinds the server serves in ``api_version`` as far as the validator knows: the built-in
    group-versions (``builtin_kinds``) and the CRD's; None for a group-version it cannot know."""
    if not isinstance(api_version, str):
        return None
    group = api_version.partition("/")[0] if "/" in api_version else ""
    if group == validator.crd.group:
        if any(sibling_group == group for sibling_group, _ in validator.crd.siblings):
            return None  # other CRDs of the --crd file serve kinds of this group, in versions it does not say
        return frozenset((validator.crd.kind,)) if validator.crd.version_of(api_version) else frozenset()
    return builtin_kinds(api_version)


def item_kind(kind: Any) -> Any:
    """The kind a list's kindless items take: the list's less a ``List`` suffix (AM helpers.go:494,
    ``strings.TrimSuffix``; so ``List`` gives ``""`` and a ConfigMap with items gives ``ConfigMap``)."""
    return kind.removesuffix("List") if isinstance(kind, str) else ""


def list_problems(value: dict[str, Any], validator: Validator) -> list[Problem]:
    """Why kubectl refuses a list document before any of its items is sent; empty if it does not."""
    api_version, kind, items = value.get("apiVersion"), value.get("kind"), value.get("items")
    if isinstance(api_version, str) and isinstance(kind, str) and api_version == "v1" and kind == "List":
        return _v1_list_problems(items)
    if unparsed := _group_version_problems(api_version):
        return unparsed
    if items is not None and not isinstance(items, list):
        # AM helpers.go:476-484: decodeList.items is a []json.RawMessage
        return [Problem(("items",), f"cannot unmarshal {_json_type(items)} into Go struct field decodeList.items "
                                    "of type []json.RawMessage")]
    kinds = served_kinds(api_version, validator)
    if kinds is None or not isinstance(kind, str) or kind in kinds:
        return []  # an object of a served kind with an items list, or a group-version the validator cannot know
    if not kinds or kind != "List" and kind.removesuffix("List") not in kinds:
        # CR pkg/resource/mapper.go:61-73: the list is mapped before it is flattened; CG discovery.go:150, 153
        return [Problem(("kind",), f"resource mapping not found: no matches for kind {quote_value(kind)} in version "
                                   f"{quote_value(api_version)}; ensure CRDs are installed first")]
    if kind != "List":
        return _typed_list_problems(value)
    return []


def validated_on_the_client(value: dict[str, Any], validator: Validator) -> bool:
    """Whether kubectl validates a list document on the client (and so runs NoDoubleKeySchema on
    it): its kind is no resource the server serves with ``fieldValidation``, which a list kind never
    is (CR pkg/resource/query_param_verifier_v3.go:62-84; a ConfigMap with items is a ConfigMap)."""
    kind = value.get("kind")
    kinds = served_kinds(value.get("apiVersion"), validator)
    return isinstance(kind, str) and (kind == "List" or kind.endswith("List")) and not (kinds and kind in kinds)


def object_problems(value: Any, validator: Validator) -> list[Problem]:
    """Why kubectl refuses an object that is no list (a document or a list's item) before the
    server judges it, where the validator knows its group-version (the built-in ones, and the
    CRD's for list kinds; the CRD's own kinds are the validator's business): a list kind without
    items is no resource (CG discovery.go:150-153 maps them as guesses; kubectl v1.37.1 and
    kube-apiserver v1.36.2: a ``v1 List`` fails the client's validation, a typed list misses its
    required items, another ``List`` is posted and not found), and a kind the server does not serve
    has no REST mapping (CR pkg/resource/mapper.go:42-84)."""
    if not isinstance(value, dict) or identity_problems(value):
        return []  # no identity: the client's validation says so first
    api_version, kind = value.get("apiVersion"), value["kind"]
    if api_version == "v1" and kind == "List":
        return _v1_list_problems(value.get("items"))
    kinds = served_kinds(api_version, validator)
    if kinds is not None and kind not in kinds:
        if kind.endswith("List") and kind.removesuffix("List") in kinds:
            return _typed_list_problems(value)
        if kind == "List" and kinds:
            return [Problem(("kind",), "the server could not find the requested resource (a List is no resource)")]
    if validator.claims(value):
        return []  # the validator judges what it claims (its kind in any spelling), in its words
    if unparsed := _group_version_problems(api_version):
        return unparsed
    kinds = builtin_kinds(api_version)
    if kinds is None or kind in kinds:
        return []
    return [Problem(("kind",), f"resource mapping not found: no matches for kind {quote_value(kind)} in version "
                               f"{quote_value(api_version)}; ensure CRDs are installed first")]


def _group_version_problems(api_version: Any) -> list[Problem]:
    """An apiVersion of more than one slash is no group-version: kubectl refuses the document before
    it asks any server (AM pkg/runtime/schema/group_version.go ``ParseGroupVersion``: "unexpected
    GroupVersion string"), whatever its group, where split at one slash it would read as an unknown
    group's and be passed over."""
    if isinstance(api_version, str) and api_version.count("/") > 1:
        return [Problem(("apiVersion",), f"unexpected GroupVersion string: {api_version}")]
    return []


def _v1_list_problems(items: Any) -> list[Problem]:
    """The client's validation of a ``v1 List`` (fieldValidation is never used for it, CR
    query_param_verifier_v3.go:63-65): its items must be an array, each item an object with an
    apiVersion and a kind of its own, read before any is inferred (KC pkg/validation/validation.go:56-57,
    62-80, 109-138). Its fields are otherwise not checked."""
    if not isinstance(items, list):
        return [Problem(("items",), INVALID_OBJECT)]
    problems = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(Problem(("items", i), f"{INVALID_OBJECT}: an item of a v1 List must be an object"))
        else:
            problems += [Problem(("items", i, *p.path), p.message) for p in identity_problems(item)]
    return problems


def _typed_list_problems(value: dict[str, Any]) -> list[Problem]:
    """The client's validation of a typed list (``<Kind>List``) against the OpenAPI v2 schema the
    server publishes for it (KC pkg/validation/validation.go:59, 82-94; no fieldValidation for a list
    kind, CR query_param_verifier_v3.go:66-68): ``items`` required, an array of objects; only the
    typed list's fields, and ListMeta's under ``metadata``."""
    problems = [Problem((key,), f'unknown field "{key}"') for key in value if key not in TYPED_LIST_FIELDS]
    meta = value.get("metadata")
    if isinstance(meta, dict):
        problems += [Problem(("metadata", key), f'unknown field "metadata.{key}" in ListMeta')
                     for key in meta if key not in LIST_META_FIELDS]
    items = value.get("items")
    if not isinstance(items, list):
        problems.append(Problem(("items",), 'missing required field "items"' if items is None else INVALID_OBJECT))
    else:
        problems += [Problem(("items", i), 'unknown object type "nil"') for i, item in enumerate(items) if item is None]
    return problems


def _json_type(value: Any) -> str:
    """encoding/json's word for a value's JSON type, as its UnmarshalTypeError says it."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def list_items(value: dict[str, Any]) -> Iterator[tuple[Any, tuple[str | int, ...]]]:
    """The objects a list stands for, as kubectl decodes them (AM helpers.go:492-509): a null item is
    an empty object; an item with neither kind nor apiVersion (as strings) takes the list's
    apiVersion and its kind less ``List``."""
    items = value.get("items") or []
    kind, api_version = item_kind(value.get("kind")), value.get("apiVersion")
    for i, item in enumerate(items):
        if item is None:
            item = {}  # AM helpers.go:465-471: json.Unmarshal of null into a map leaves it empty
        if isinstance(item, dict) and not _set(item.get("kind")) and not _set(item.get("apiVersion")):
            item = {**item, "kind": kind, "apiVersion": api_version if isinstance(api_version, str) else ""}
        yield item, ("items", i)


def namespace_defaulted(item: Any) -> Any:
    """A list's item as kubectl sends it to a namespaced resource: an item is not decoded into
    ObjectMeta on the client as a document is (CR pkg/resource/mapper.go: infoForObject, not
    infoForData's metadata decoder), and a namespace that unstructured's GetNamespace reads as empty
    (absent, null, ``""``, or no string at all) is replaced by the default one (CR pkg/resource/
    visitor.go:644-658 SetNamespace, 620-628). Checked: a MemcachedList's item with ``namespace: yes``
    (a boolean) is created in the default namespace; the same document alone is refused."""
    meta = item.get("metadata") if isinstance(item, dict) else None
    if not isinstance(meta, dict) or "namespace" not in meta or isinstance(meta["namespace"], str):
        return item
    return {**item, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}


def _set(field: Any) -> bool:
    """Whether unstructured's GetKind/GetAPIVersion reads the field as set: a non-empty string."""
    return isinstance(field, str) and field != ""


__all__ = ["BUILTIN_GROUPS", "BUILTIN_KINDS", "INVALID_OBJECT", "REMOVED_BUILTIN_GROUPS", "builtin_kinds", "is_list",
           "is_nested_list", "item_kind", "list_items", "list_problems", "namespace_defaulted", "object_problems",
           "served_kinds", "validated_on_the_client"]
