"""ObjectMeta validation, as the API server applies it to every custom resource.

Source: k8s.io/apimachinery/pkg/api/validation/objectmeta.go (ValidateObjectMetaAccessor) and
pkg/util/validation/validation.go, called by apiextensions-apiserver's customResourceValidator
with ``NameIsDNSSubdomain`` (pkg/registry/customresource/validator.go). Messages follow theirs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from memcached_gitops.foundation.excerpt import quote_value

Problem = tuple[tuple[str | int, ...], str]

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = DNS1123_LABEL + r"(\." + DNS1123_LABEL + r")*"
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = r"(" + QUALIFIED_NAME + r")?"
_LABEL_RE = re.compile(DNS1123_LABEL + r"\Z")
_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN + r"\Z")
_QUALIFIED_RE = re.compile(QUALIFIED_NAME + r"\Z")
_LABEL_VALUE_RE = re.compile(LABEL_VALUE + r"\Z")
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
#: generic.go maskTrailingDash and names.SimpleNameGenerator: a generateName is checked with its
#: last two characters before a trailing ``-`` replaced by ``a``; the name generated from it is the
#: first 58 characters and 5 random lower-case alphanumerics.
_GENERATED_PREFIX_LIMIT = 58
_GENERATED_SUFFIX = "x" * 5
_QUALIFIED_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME}')"
)
#: metav1.FinalizerOrphanDependents and FinalizerDeleteDependents, which cannot be set together.
_ORPHAN, _FOREGROUND = "orphan", "foregroundDeletion"


_quote = quote_value

#: Go struct order of metav1.OwnerReference, so a quoted list reads as the server prints it.
_OWNER_REFERENCE_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
#: apimachinery's BannedOwners: kinds that may never own anything.
_BANNED_OWNERS = {("", "v1", "Event")}


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1123 subdomain (empty when it is one)."""
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _SUBDOMAIN_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            f"validation is '{DNS1123_SUBDOMAIN}')"
        )
    return errors


def dns1123_label_errors(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1123 label (namespaces)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_RE.match(value) and _SUBDOMAIN_RE.match(value):
        errors.append("must not contain dots")  # a valid subdomain of the right length: only dots are wrong
    elif not _LABEL_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
            f"start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
            f"validation is '{DNS1123_LABEL}')"
        )
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a label key (qualified name): an optional DNS-subdomain prefix, ``/``, a
    name. apimachinery content.IsLabelKey: more than one ``/`` is one error; an empty name part
    fails both the emptiness and the pattern check."""
    parts = value.split("/")
    if len(parts) > 2:
        return [f"a valid label key {_QUALIFIED_NAME_RULE} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2 and not parts[0]:
        errors = ["prefix part must be non-empty"]
    elif len(parts) == 2:
        errors = ["prefix part " + e for e in dns1123_subdomain_errors(parts[0])]
    else:
        errors = []
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_RE.match(name):
        errors.append("name part " + _QUALIFIED_NAME_RULE)
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` cannot be a label value."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
            f"regex used for validation is '{LABEL_VALUE}')"
        )
    return errors


def _string_map(meta: dict[str, Any], field: str, key_of: Callable[[str], str],
                value_check: Callable[[str], list[str]] | None) -> list[Problem]:
    """Labels or annotations: keys are label keys (annotation keys checked lower-cased,
    ValidateAnnotations), values checked by ``value_check``; a bad key or value is reported on the
    map itself (ValidateLabels: ``field.Invalid(fldPath, v, msg)``), a value of another type on its key."""
    value = meta.get(field)
    path = ("metadata", field)
    if value is None:
        return []
    if not isinstance(value, dict):
        return [(path, f"Invalid value: {_quote(value)}: must be a map of string keys to string values")]
    problems: list[Problem] = []
    for key, item in value.items():
        problems += [(path, f"Invalid value: {_quote(key)}: {e}") for e in qualified_name_errors(key_of(key))]
        if not isinstance(item, str):
            problems.append((path + (key,), f"Invalid value: {_quote(item)}: must be a string"))
        elif value_check:
            problems += [(path, f"Invalid value: {_quote(item)}: {e}") for e in value_check(item)]
    return problems


def _name_problems(field: str, value: str, checked: str) -> list[Problem]:
    return [(("metadata", field), f"Invalid value: {_quote(value)}: {e}") for e in dns1123_subdomain_errors(checked)]


def generated_name(generate: str) -> str:
    """The name the server makes of a generateName before it validates the object (its length and
    its characters; the five random ones stand as ``x``)."""
    return generate[:_GENERATED_PREFIX_LIMIT] + _GENERATED_SUFFIX


def with_generated_name(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the server validates it on create: named from its generateName when it has no name,
    so a CRD's own bound on ``metadata.name`` (maxLength, pattern) is held against the generated one."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") or not isinstance(generate := meta.get("generateName"), str) or not generate:
        return obj
    return {**obj, "metadata": {**meta, "name": generated_name(generate)}}


def validate_object_meta(meta: Any, namespaced: bool) -> list[Problem]:
    """Problems with a CR's ``metadata``, each as (field path, message), in the server's order
    (ValidateObjectMetaAccessor with NameIsDNSSubdomain, after name generation)."""
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [(("metadata",), f"Invalid value: {_quote(meta)}: metadata must be an object")]
    problems: list[Problem] = []
    name, generate = meta.get("name"), meta.get("generateName")
    for field, value in (("name", name), ("generateName", generate), ("namespace", meta.get("namespace"))):
        if value is not None and not isinstance(value, str):
            problems.append((("metadata", field), f"Invalid value: {_quote(value)}: must be a string"))
    if problems:
        return problems
    if generate:
        masked = generate[:-2] + "a" if len(generate) > 1 and generate.endswith("-") else generate
        problems = _name_problems("generateName", generate, masked)
        if not name:  # the server generates the name before it validates it
            generated = generated_name(generate)
            problems += _name_problems("name", generated, generated)
    elif not name:
        problems.append((("metadata", "name"), "Required value: name or generateName is required"))
    if name:
        problems += _name_problems("name", name, name)
    namespace = meta.get("namespace")
    if namespace and not namespaced:
        problems.append((("metadata", "namespace"), "Forbidden: not allowed on this type"))
    elif namespace:
        problems += [(("metadata", "namespace"), f"Invalid value: {_quote(namespace)}: {e}") for e in dns1123_label_errors(namespace)]
    problems += _string_map(meta, "labels", str, label_value_errors)
    problems += _string_map(meta, "annotations", str.lower, None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        size = sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())
        if size > TOTAL_ANNOTATION_SIZE_LIMIT:
            problems.append(
                (("metadata", "annotations"), f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes")
            )
    problems += validate_owner_references(meta.get("ownerReferences"))
    return problems + _finalizer_problems(meta.get("finalizers"))


def _finalizer_problems(finalizers: Any) -> list[Problem]:
    """ValidateFinalizers: each a label key, reported on the list; orphan and foregroundDeletion
    together are refused."""
    path: tuple[str | int, ...] = ("metadata", "finalizers")
    if finalizers is None:
        return []
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        return [(path, "Invalid value: must be a list of strings")]
    problems = [(path, f"Invalid value: {_quote(f)}: {e}") for f in finalizers for e in qualified_name_errors(f)]
    if _ORPHAN in finalizers and _FOREGROUND in finalizers:
        problems.append((path, f"Invalid value: {_quote(finalizers)}: finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set"))
    return problems


def _group_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion: ``v1`` is the core group; more than one ``/`` parses to nothing."""
    if api_version.count("/") > 1:
        return "", ""
    group, _, version = api_version.rpartition("/")  # no "/": the core group
    return group, version


def validate_owner_references(refs: Any) -> list[Problem]:
    """``metadata.ownerReferences`` as the server checks it on a create.

    apimachinery/pkg/api/validation/objectmeta.go (ValidateOwnerReferences, validateOwnerReference);
    the messages, and the field paths without an index, are those of transcript
    ``20-ownerreferences.json`` (missing uid/apiVersion/kind/name, two controllers).
    """
    path: tuple[str | int, ...] = ("metadata", "ownerReferences")
    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
        return [(path, f"Invalid value: {_quote(refs)}: must be a list of objects")]
    problems: list[Problem] = []
    controllers: list[str] = []
    for ref in refs:
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        group, version = _group_version(api_version)
        if not version:
            problems.append((path + ("apiVersion",), f"Invalid value: {_quote(api_version)}: version must not be empty"))
        if not kind:
            problems.append((path + ("kind",), f"Invalid value: {_quote(kind)}: must not be empty"))
        for field in ("name", "uid"):
            if not ref.get(field):
                problems.append((path + (field,), 'Invalid value: "": must not be empty'))
        if (group, version, kind) in _BANNED_OWNERS:
            banned = f"{group}/{version}, Kind={kind} is disallowed from being an owner"
            problems.append((path, f"Invalid value: {_quote(_ordered(ref))}: {banned}"))
        if ref.get("controller") is True:
            controllers.append(f"{kind}/{ref.get('name') or ''}")
            if len(controllers) > 1:  # each later controller is an error naming the first
                listed = [_ordered(r) for r in refs]
                problems.append((path, f"Invalid value: {_quote(listed)}: Only one reference can have Controller set to true. "
                                       f'Found "true" in references for {controllers[0]} and {controllers[-1]}'))
    return problems


def _ordered(ref: dict[str, Any]) -> dict[str, Any]:
    return {k: ref[k] for k in _OWNER_REFERENCE_FIELDS if k in ref}
