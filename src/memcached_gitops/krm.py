"""The KRM function: a ResourceList (config.kubernetes.io/v1) in, a ResourceList out.

Follows the KRM Functions Specification (kubernetes-sigs/kustomize, cmd/config/docs/api-conventions/
functions-spec.md): ``items`` in, ``items`` out, other items untouched (their
``config.kubernetes.io/*`` and ``internal.config.kubernetes.io/*`` annotations included), and
``results`` with severity, resourceRef, field and file for every problem; a non-zero exit when a
result is an error.

- As a transformer: a Deployment is appended for every Memcached item.
- As a generator: a ``functionConfig`` that is itself a Memcached adds its Deployment.
- ``functionConfig`` may also be a ConfigMap whose ``data.image`` overrides the memcached image.

Validation and rendering are the CLI's (pipeline.process_object), so the Deployments are
byte-identical to ``memcached-gitops render``'s.
"""

from __future__ import annotations

import copy
from typing import Any

from memcached_gitops.foundation.digits import is_digits
from memcached_gitops.foundation.excerpt import excerpt, type_and_length
from memcached_gitops.foundation.yamlreader import recursion_room
from memcached_gitops.schemas import Validator

from .pipeline import Result, process_object

PATH_ANNOTATIONS = ("internal.config.kubernetes.io/path", "config.kubernetes.io/path")
INDEX_ANNOTATIONS = ("internal.config.kubernetes.io/index", "config.kubernetes.io/index")


#: The longest path a result gives whole (Linux's PATH_MAX): the orchestrator opens it to show the
#: user the item, so a cut path names no file; anything longer can be no file's and is excerpted.
PATH_MAX = 4096


def _annotation(obj: Any, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` among the item's annotations; None where its metadata or annotations are
    no map (the pipeline reports that item: its annotations must not end the run first)."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return None
    return next((annotations[n] for n in names if n in annotations), None)


def shape_problem(resource_list: dict[str, Any]) -> str | None:
    """What makes a ResourceList unreadable: ``items`` not a list, or ``functionConfig`` not a map.

    Described by type and size, never echoed: a scalar ``items`` would otherwise be read character
    by character, one result each.
    """
    items, config = resource_list.get("items"), resource_list.get("functionConfig")
    if items is not None and not isinstance(items, list):
        return f"items: must be a list of objects, not {type_and_length(items)}"
    if config is not None and not isinstance(config, dict):
        return f"functionConfig: must be an object, not {type_and_length(config)}"
    return None


def transform(resource_list: dict[str, Any], validator: Validator, image: str) -> tuple[dict[str, Any], bool]:
    """The output ResourceList and whether it carries an error result."""
    items = resource_list.get("items") or []
    config = resource_list.get("functionConfig") or {}
    if isinstance(config, dict) and config.get("kind") == "ConfigMap":
        image = ((config.get("data") or {}).get("image")) or image
    sources: list[tuple[str, Any]] = [(str(_annotation(i, PATH_ANNOTATIONS) or ""), i) for i in items]
    if isinstance(config, dict) and validator.claims(config):
        sources.append(("functionConfig", config))
    results: list[dict[str, Any]] = []
    generated: list[dict[str, Any]] = []
    for file, obj in sources:
        # every item goes through the pipeline: it judges ours, refuses items with no apiVersion or
        # kind, and passes the others over, exactly as ``render`` does
        result = Result()
        with recursion_room():
            process_object(result, file, copy.deepcopy(obj), validator, image)
        generated += result.rendered
        for f in result.findings:
            entry: dict[str, Any] = {"message": f.message, "severity": f.severity}
            if isinstance(obj, dict):
                meta = given if isinstance(given := obj.get("metadata"), dict) else {}
                entry["resourceRef"] = {key: excerpt(str(obj.get(key) or "")) for key in ("apiVersion", "kind")}
                entry["resourceRef"]["name"] = excerpt(str(meta.get("name") or ""))
                if meta.get("namespace"):
                    entry["resourceRef"]["namespace"] = excerpt(str(meta["namespace"]))
            if f.field:
                entry["field"] = {"path": f.field}
            if file and file != "functionConfig":
                entry["file"] = {"path": file if len(file) <= PATH_MAX else excerpt(file)}
                index = _annotation(obj, INDEX_ANNOTATIONS)
                if index is not None and is_digits(str(index)):
                    entry["file"]["index"] = int(index)
            results.append(entry)
    # an item that is no object (a scalar, a list) is no resource: its result describes it by type and
    # size, and it is not written back whole (an 800-character string would be echoed otherwise)
    kept = [i for i in items if isinstance(i, dict)]
    out: dict[str, Any] = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": kept + generated}
    if config:
        out["functionConfig"] = config
    if results:
        out["results"] = results
    return out, any(r["severity"] == "error" for r in results)
