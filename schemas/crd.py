"""The CustomResourceDefinition: loading it and reading what the validator needs from it.

The CRD file is the single source of truth. Everything the validator enforces (versions served,
the schema of each version, whether status is a subresource) is read from it here, so a team's
own copy given with ``--crd`` changes the rules with no code change.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from memcached_gitops.foundation.identities import KIND
from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents

from .patterns import PatternError
from .to_jsonschema import to_json_schema

CRD_FILE = "memcached-crd.yaml"
# The shipped CRD parsed once, as JSON: loading it takes a fraction of a millisecond where the
# kubectl-faithful YAML loader takes several, and every run of render and validate starts with it
# (bench/startup.py). Derived from CRD_FILE, never edited: tests/cli/test_startup.py fails when the two
# differ, and `just crd-data` rewrites it.
CRD_DATA = "memcached-crd.json"
HERE = Path(__file__).parent


class CRDError(ValueError):
    """The CRD itself is unusable (not a CRD, no served version, no schema)."""


class Version(NamedTuple):
    """One served version of the CRD."""

    name: str
    schema: dict[str, Any]
    status_subresource: bool


class CRD(NamedTuple):
    """What the validator needs to know about a CRD."""

    group: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    namespaced: bool
    versions: dict[str, Version]  # served versions only
    storage_version: str
    source: str
    document: dict[str, Any]
    #: (group, kind) of every other CRD of the file (kubebuilder's dist/install.yaml, a
    #: ``kubectl kustomize config/crd``): objects of theirs are other objects, never judged by this one
    siblings: frozenset[tuple[str, str]] = frozenset()

    def spellings(self) -> frozenset[str]:
        """Every name kubectl resolves to this kind (kind, plural, singular, shortNames), lower case."""
        return frozenset(n.lower() for n in (self.kind, self.plural, self.singular, *self.short_names) if n)

    def api_versions(self) -> list[str]:
        return [f"{self.group}/{v}" for v in self.versions]

    def serves_sibling(self, api_version: Any, kind: Any) -> bool:
        """Whether another CRD of the file serves this group and kind."""
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return False
        return (api_version.partition("/")[0], kind) in self.siblings

    def version_of(self, api_version: Any) -> Version | None:
        """The served version an ``apiVersion`` names, or None."""
        if not isinstance(api_version, str) or "/" not in api_version:
            return None
        group, _, version = api_version.partition("/")
        return self.versions.get(version) if group == self.group else None


def builtin_crd_text() -> str:
    """The text of the CRD shipped with the package."""
    return (HERE / CRD_FILE).read_text(encoding="utf-8")


def builtin_crd_data() -> str:
    """What CRD_DATA must hold: the shipped CRD's document as the YAML loader reads it, in JSON."""
    return json.dumps(parse_crd(builtin_crd_text(), CRD_FILE).document, indent=1) + "\n"


def parse_crd(text: str, source: str) -> CRD:
    """Build a CRD from YAML text that may hold several (an install.yaml, a ``kubectl kustomize``).

    The first CustomResourceDefinition of kind ``KIND`` is used, else the first one; every
    other CRD of the file is a sibling, whose objects are other objects. Documents of other kinds
    (Namespaces, RBAC, the manager's Deployment) are passed over.
    """
    try:
        docs = [d.value for d in iter_documents(text)]
    except YAMLInputError as exc:
        raise CRDError(f"{source}:{exc.line}:{exc.column}: {exc.message}") from None
    crds = [d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    if not crds:
        raise CRDError(f"{source}: no CustomResourceDefinition found")
    chosen = next((d for d in crds if _group_and_kind(d)[1] == KIND), crds[0])
    siblings = frozenset(_group_and_kind(d) for d in crds if d is not chosen) - {_group_and_kind(chosen)}
    return _from_document(chosen, source)._replace(siblings=siblings)


def _group_and_kind(doc: dict[str, Any]) -> tuple[str, str]:
    spec = given if isinstance(given := doc.get("spec"), dict) else {}
    names = given if isinstance(given := spec.get("names"), dict) else {}
    return str(spec.get("group") or ""), str(names.get("kind") or "")


def _typed(parent: dict[str, Any], key: str, kind: type, where: str, source: str) -> Any:
    """``parent[key]`` when it is of ``kind``, None when absent; a one-line CRDError naming the
    field otherwise (a hand-edited ``--crd`` must not end in a traceback)."""
    value = parent.get(key)
    if value is None or isinstance(value, kind):
        return value
    words: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
    expected = words[kind]
    raise CRDError(f"{source}: {where}: must be {expected}")


def _from_document(doc: dict[str, Any], source: str) -> CRD:
    if doc.get("apiVersion") != "apiextensions.k8s.io/v1":
        raise CRDError(f"{source}: apiVersion must be apiextensions.k8s.io/v1, not {doc.get('apiVersion')!r}")
    spec = _typed(doc, "spec", dict, "spec", source) or {}
    names = _typed(spec, "names", dict, "spec.names", source) or {}
    group = _typed(spec, "group", str, "spec.group", source)
    kind = _typed(names, "kind", str, "spec.names.kind", source)
    versions: dict[str, Version] = {}
    storage = ""
    for i, v in enumerate(_typed(spec, "versions", list, "spec.versions", source) or []):
        where = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            raise CRDError(f"{source}: {where}: must be a mapping")
        name = _typed(v, "name", str, f"{where}.name", source)
        if not name:
            raise CRDError(f"{source}: {where}.name: Required value")
        if v.get("storage"):
            storage = name
        if not v.get("served"):
            continue
        schema = _typed(_typed(v, "schema", dict, f"{where}.schema", source) or {}, "openAPIV3Schema", dict,
                        f"{where}.schema.openAPIV3Schema", source)
        if not schema:
            raise CRDError(f"{source}: version {name!r} has no openAPIV3Schema")
        status = "status" in (_typed(v, "subresources", dict, f"{where}.subresources", source) or {})
        try:  # the API server refuses a CRD whose pattern is no RE2 (apiextensions validation.go)
            to_json_schema(schema, where=f"{where}.schema.openAPIV3Schema")
        except PatternError as exc:
            raise CRDError(f"{source}: {exc}") from None
        versions[name] = Version(name=name, schema=schema, status_subresource=status)
    if not group or not kind or not versions:
        raise CRDError(f"{source}: the CRD needs spec.group, spec.names.kind and a served version with a schema")
    short_names = _typed(names, "shortNames", list, "spec.names.shortNames", source) or []
    return CRD(
        group=group,
        kind=kind,
        plural=_typed(names, "plural", str, "spec.names.plural", source) or kind.lower() + "s",
        singular=_typed(names, "singular", str, "spec.names.singular", source) or kind.lower(),
        short_names=tuple(str(n) for n in short_names),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        versions=versions,
        storage_version=storage,
        source=source,
        document=doc,
    )


@cache
def load_crd(path: str | None = None) -> CRD:
    """The CRD at ``path`` (``-``: standard input, as ``kubectl kustomize config/crd | ...``), or the
    shipped one. Raises CRDError with a one-line reason."""
    if path is None:
        return _from_document(json.loads((HERE / CRD_DATA).read_text(encoding="utf-8")), f"(built-in) {CRD_FILE}")
    try:
        if path == "-":
            return parse_crd(sys.stdin.buffer.read().decode("utf-8"), "<stdin>")
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        name = "<stdin>" if path == "-" else path
        raise CRDError(f"{name}: cannot read the CRD: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    return parse_crd(text, path)
