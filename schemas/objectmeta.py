"""ObjectMeta validation, as the API server applies it to every custom resource.

Source: k8s.io/apimachinery/pkg/api/validation/objectmeta.go (ValidateObjectMetaAccessor) and
pkg/util/validation/validation.go, called by apiextensions-apiserver's customResourceValidator
with ``NameIsDNSSubdomain`` (pkg/registry/customresource/validator.go). Messages follow theirs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

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


def _quote(value: Any) -> str:
    return json.dumps(value)


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
    if not _LABEL_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
            f"start and end with an alphanumeric character (e.g. 'my-name', or '123-abc', regex used for "
            f"validation is '{DNS1123_LABEL}')"
        )
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a label/annotation key: an optional DNS-subdomain prefix and a name."""
    prefix, slash, name = value.rpartition("/")
    errors = []
    if slash and not prefix:
        errors.append("prefix part must be non-empty")
    elif slash:
        errors += ["prefix part " + e for e in dns1123_subdomain_errors(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    else:
        if len(name) > 63:
            errors.append("name part must be no more than 63 characters")
        if not _QUALIFIED_RE.match(name):
            errors.append(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                f"with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                f"validation is '{QUALIFIED_NAME}')"
            )
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


def _string_map(meta: dict[str, Any], field: str, value_check: Callable[[str], list[str]] | None) -> list[Problem]:
    value = meta.get(field)
    path = ("metadata", field)
    if value is None:
        return []
    if not isinstance(value, dict):
        return [(path, f"Invalid value: {_quote(value)}: must be a map of string keys to string values")]
    problems: list[Problem] = []
    for key, item in value.items():
        for e in qualified_name_errors(key):
            problems.append((path, f"Invalid value: {_quote(key)}: {e}"))
        if not isinstance(item, str):
            problems.append((path + (key,), f"Invalid value: {_quote(item)}: must be a string"))
        elif value_check:
            problems += [(path + (key,), f"Invalid value: {_quote(item)}: {e}") for e in value_check(item)]
    return problems


def validate_object_meta(meta: Any, namespaced: bool) -> list[Problem]:
    """Problems with a CR's ``metadata``, each as (field path, message)."""
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
    if not name and not generate:
        problems.append((("metadata", "name"), "Required value: name or generateName is required"))
    if name:
        problems += [(("metadata", "name"), f"Invalid value: {_quote(name)}: {e}") for e in dns1123_subdomain_errors(name)]
    if generate:
        prefix = generate[:-1] if generate.endswith("-") else generate
        problems += [
            (("metadata", "generateName"), f"Invalid value: {_quote(generate)}: {e}")
            for e in dns1123_subdomain_errors(prefix)
        ]
    namespace = meta.get("namespace")
    if namespace and not namespaced:
        problems.append((("metadata", "namespace"), "Forbidden: not allowed on this type"))
    elif namespace:
        problems += [(("metadata", "namespace"), f"Invalid value: {_quote(namespace)}: {e}") for e in dns1123_label_errors(namespace)]
    problems += _string_map(meta, "labels", label_value_errors)
    problems += _string_map(meta, "annotations", None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        size = sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())
        if size > TOTAL_ANNOTATION_SIZE_LIMIT:
            problems.append(
                (("metadata", "annotations"), f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes")
            )
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
            problems.append((("metadata", "finalizers"), "Invalid value: must be a list of strings"))
        else:
            for i, f in enumerate(finalizers):
                problems += [(("metadata", "finalizers", i), f"Invalid value: {_quote(f)}: {e}") for e in qualified_name_errors(f)]
    return problems
