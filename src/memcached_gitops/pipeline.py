"""The one path every front end shares: parse -> validate (+ defaults) -> render.

The CLI's ``render`` and ``validate`` and the Argo CD plugin (through ``commands.render_validated``)
call ``process``, the KRM function ``process_object`` for each item; it reads no files itself (it is
given open streams) and writes nothing. Each document is validated as soon as it is parsed, so the libyaml node tree that gives error
positions is only kept for one document at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from memcached_gitops.foundation.excerpt import excerpt, quote_value, shown_path, type_and_length
from memcached_gitops.foundation.files import BUILT
from memcached_gitops.foundation.yamlreader import Document, NodeBudget, Readable, TooManyNodes, YAMLInputError, iter_documents
from memcached_gitops.lists import (
    INVALID_OBJECT,
    is_list,
    is_nested_list,
    list_items,
    list_problems,
    namespace_defaulted,
    object_problems,
    validated_on_the_client,
)
from memcached_gitops.render.desired import validate_and_render
from memcached_gitops.schemas import Problem, Validator, format_path
from memcached_gitops.schemas.validator import RULES_NOT_CHECKED, identity_problems


class Finding(NamedTuple):
    """An error or warning, located: ``FILE:LINE:COL: Kind/name: field: message``."""

    file: str
    line: int
    column: int
    ref: str  # "Memcached/name", or "" when the document has no identity
    field: str
    message: str
    severity: str = "error"

    def text(self) -> str:
        file = shown_path(self.file)
        where = f"{file}:{self.line}:{self.column}" if self.line else file
        parts = [where] + ([self.ref] if self.ref else []) + ([self.field] if self.field else [])
        message = f"warning: {self.message}" if self.severity == "warning" else self.message
        return ": ".join(parts + [message])

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file, "line": self.line, "column": self.column, "object": self.ref,
            "field": self.field, "message": self.message, "severity": self.severity,
        }


class TooManyObjects(ValueError):
    """A run that would hold more objects, or parse more YAML nodes, than its bound; the message names
    where it crossed it."""


class Result:
    """What a run produced: rendered manifests, the CRs as stored, other documents, findings."""

    def __init__(self) -> None:
        self.rendered: list[dict[str, Any]] = []
        self.crs: list[dict[str, Any]] = []
        self.others: list[dict[str, Any]] = []
        #: kustomize's configuration, a kustomization file (by its name) or object: never emitted
        self.passed_over: list[str] = []
        #: documents that are not Kubernetes objects (no apiVersion and no kind), and empty files: "file:line: why"
        self.not_objects: list[str] = []
        self.findings: list[Finding] = []
        self.documents = 0
        #: the objects kubectl would send: each document that is no list, each item of a list
        self.objects_sent = 0
        self.defined_at: dict[tuple[str, str, str], str] = {}  # (build or "", namespace, name) -> "file:line:column"

    @property
    def objects(self) -> int:
        """The objects held: rendered, the CRs and the other objects (what a render may emit)."""
        return len(self.rendered) + len(self.crs) + len(self.others)

    @property
    def ignored(self) -> int:
        """Objects of other kinds, kustomize's configuration counted with them."""
        return len(self.others) + len(self.passed_over)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]


def object_ref(obj: Any, kind: str | None = None) -> str:
    """``Kind/name`` of a document, as precise as the document allows."""
    if not isinstance(obj, dict):
        return ""
    meta = given if isinstance(given := obj.get("metadata"), dict) else {}
    name = meta.get("name") or (f"{meta['generateName']}*" if meta.get("generateName") else "<unnamed>")
    return f"{excerpt(str(kind or obj.get('kind') or '<no kind>'))}/{excerpt(str(name))}"


def kind_as_listed(obj: dict[str, Any]) -> str:
    """A kind as a list of kinds names it: ``Kind`` for the core group (``apiVersion: v1``), ``group/Kind``
    for any other, as Argo CD's AppProject lists spell the core group ``''`` and every other by name."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind = str(obj.get("kind", ""))
    return f"{group}/{kind}" if group else kind


def items_of(doc: Document) -> Iterator[tuple[Any, tuple[str | int, ...]]]:
    """The objects of a document: itself, or the items of a list, as kubectl sends them.

    cli-runtime flattens every object with an ``items`` key, whatever its kind (its
    FlattenListVisitor asks meta.IsListType, which an unstructured object answers by its ``items``):
    a ``v1 List``, a ``MemcachedList``, even a ConfigMap given an ``items`` list; the container itself
    is not sent. A null item is an empty object, and an item with neither kind nor apiVersion takes
    the list's apiVersion and its kind less ``List`` (``MemcachedList`` items are Memcacheds). Checked
    on kube-apiserver v1.36.2 (docs/design/kubectl-reader.md, 3.2-3.10; ``lists``)."""
    value = doc.value
    if not is_list(value):
        yield value, ()
        return
    yield from list_items(value)


def is_kubernetes_object(value: Any, validator: Validator) -> bool:
    """Whether a document is meant as a Kubernetes object: a map with a kind, one ours claims, or one
    with both an apiVersion and a metadata map.

    A repository holds YAML and JSON of every sort: Helm values and Chart.yaml (an apiVersion, no
    kind, no metadata), compose files, workflows, package.json, lists, empty files. None of them is
    an object of any API, so the front ends that scan a repository pass them over (argo-cd's
    directory source and kubeconform skip what is not a resource). Half an object (``kind:
    Memcached`` without apiVersion, our group without a kind, an ``apiVersion: v1`` ConfigMap that
    lost its kind but kept its metadata) is still judged, with kubectl's words, since it was meant
    as one; so is every document with a kind. A top-level array (a JSON ``[...]`` or a YAML
    sequence) holding such an object was meant as objects too: kubectl refuses it, and so do we.
    """
    if isinstance(value, list):
        return any(isinstance(item, dict) and is_kubernetes_object(item, validator) for item in value)
    if not isinstance(value, dict):
        return False
    if value.get("kind") not in (None, "") or validator.claims(value):
        return True
    return value.get("apiVersion") not in (None, "") and isinstance(value.get("metadata"), dict)


def process(
    sources: Iterable[tuple[str, Readable | str | bytes]],
    validator: Validator,
    image: str,
    do_render: bool = True,
    require_objects: bool = False,
    max_objects: int | None = None,
    checked_only: frozenset[str] = frozenset(),
    nodes: NodeBudget | None = None,
) -> Result:
    """Validate (and render) every document of every source; never raises on bad input.

    The sources named in ``checked_only`` (the builds of kustomizations met in a walk, which hold the
    files' CRs again) add their errors and warnings, never their objects: nothing is counted or
    rendered twice.

    With ``require_objects``, and always on standard input (a pipe from kustomize or helm carries
    objects only), every document must be a Kubernetes object (kubectl apply's verdict); otherwise
    documents that are not (is_kubernetes_object) and empty files are passed over, counted.
    ``max_objects`` bounds what a run holds (TooManyObjects, raised as soon as it is crossed): the
    renderings of tiny CRs are about 40 times their input, so the input cap alone does not bound memory.
    Nor does it bound the parse: all sources share one budget of YAML nodes (``NodeBudget``), whose
    end stops the run (TooManyObjects) at the file, line and column where it was passed.
    """
    result = Result()
    nodes = nodes if nodes is not None else NodeBudget()
    for name, stream in sources:
        if name in checked_only:
            scratch = Result()
            _process_source(scratch, name, stream, validator, image, False, require_objects, max_objects, nodes)
            result.findings += scratch.findings
        else:
            _process_source(result, name, stream, validator, image, do_render, require_objects, max_objects, nodes)
    return result


def _process_source(result: Result, name: str, stream: Readable | str | bytes, validator: Validator, image: str,
                    do_render: bool, require_objects: bool, max_objects: int | None, nodes: NodeBudget) -> None:
    """One source's documents into ``result`` (see process)."""
    required = require_objects or name == "<stdin>"
    try:
        before = result.documents
        for doc in iter_documents(stream, nodes):
            result.documents += 1
            if not required and not is_kubernetes_object(doc.value, validator):
                result.not_objects.append(f"{shown_path(name)}:{doc.position(())[0]}: not a Kubernetes object (no kind)")
                continue
            _process_document(result, name, doc, validator, image, do_render)
            if max_objects is not None and result.objects > max_objects:
                raise TooManyObjects(f"{shown_path(name)}:{doc.position(())[0]}: more than {max_objects} objects to hold and emit "
                                     f"(--max-objects or MEMCACHED_GITOPS_MAX_OBJECTS); refused")
        if result.documents == before and not required:
            result.not_objects.append(f"{shown_path(name)}: no document (an empty or comment-only file)")
    except TooManyNodes as exc:
        raise TooManyObjects(f"{shown_path(name)}:{exc.line}:{exc.column}: {exc.message}") from None
    except YAMLInputError as exc:
        result.findings.append(Finding(name, exc.line, exc.column, "", "", exc.message))


def _process_document(result: Result, name: str, doc: Document, validator: Validator, image: str, do_render: bool) -> None:
    """One document's objects into ``result``: a list is first checked as kubectl checks it before
    sending any item (its identity, its mapping, the client's validation: ``lists.list_problems``);
    an item that is itself a list is refused, as kubectl cannot flatten it (CR visitor.go:437-451)."""
    value = doc.value
    if is_list(value):
        problems = identity_problems(value) or list_problems(value, validator)
        ref = object_ref(value)
        result.findings += [Finding(name, *doc.position(p.path), ref, p.field, p.message) for p in problems]
        duplicates = _duplicate_keys(doc) if validated_on_the_client(value, validator) else []
        result.findings += [Finding(name, line, column, ref, field, message) for field, message, (line, column) in duplicates]
        if problems or duplicates:
            return
    for obj, prefix in items_of(doc):
        locate = _locator(doc, prefix)
        result.objects_sent += 1
        if prefix and is_nested_list(obj):
            line, column = locate(())
            result.findings.append(Finding(name, line, column, object_ref(obj), "",
                                           "a list item that is itself a list (items) cannot be flattened: kubectl refuses it"))
            continue
        unmapped = object_problems(obj, validator)
        if unmapped:
            result.findings += [Finding(name, *locate(p.path), object_ref(obj), p.field, p.message) for p in unmapped]
            continue
        if prefix and validator.claims(obj) and validator.crd.namespaced:
            obj = namespace_defaulted(obj)
        process_object(result, name, obj, validator, image, do_render, locate)


def _duplicate_keys(doc: Document) -> list[tuple[str, str, tuple[int, int]]]:
    """kubectl's NoDoubleKeySchema on a document it validates on the client: a key written twice in
    its ``metadata.labels`` or ``metadata.annotations`` (KC pkg/validation/schema.go:42-55), which
    only a JSON value keeps (kubectl v1.37.1: ``error validating data: duplicate key: a``)."""
    found = []
    for path in (("metadata", "labels"), ("metadata", "annotations")):
        duplicate = doc.duplicate_key(path)
        if duplicate is not None:
            key, where = duplicate
            found.append((".".join(path), f"duplicate key: {key}", where))
    return found


#: The API groups of kustomize's configuration kinds (Kustomization, Component): no API server serves
#: them, so Argo CD's sync fails on one that reaches the cluster.
KUSTOMIZE_GROUPS = ("kustomize.config.k8s.io/",)


def is_kustomize_config(obj: dict[str, Any]) -> bool:
    """Whether an object is kustomize's configuration (``kustomize.config.k8s.io``), not a manifest."""
    api_version = obj.get("apiVersion")
    return isinstance(api_version, str) and api_version.startswith(KUSTOMIZE_GROUPS)


def _no_position(path: tuple[str | int, ...]) -> tuple[int, int]:
    return 0, 0


def _locator(doc: Document, prefix: tuple[str | int, ...]) -> Callable[[tuple[str | int, ...]], tuple[int, int]]:
    """Where a path under ``prefix`` (an item of a List document) is in ``doc``'s source."""
    return lambda path: doc.position(prefix + path)


def process_object(
    result: Result, file: str, obj: Any, validator: Validator, image: str, do_render: bool = True,
    locate: Callable[[tuple[str | int, ...]], tuple[int, int]] = _no_position,
) -> None:
    """Validate and render one object already parsed (a document's, or a KRM ResourceList item)."""
    kind = validator.crd.kind

    def finding(problem: Problem, severity: str = "error", ref: str | None = None) -> Finding:
        line, column = locate(problem.path)
        return Finding(file, line, column, ref if ref is not None else object_ref(obj, kind), problem.field, problem.message, severity)

    if not isinstance(obj, dict):
        line, column = locate(())
        message = f"a document must be a Kubernetes object (a map), not {type_and_length(obj)}"
        if isinstance(obj, list):  # kubectl's client validation, before anything is decoded or sent
            message = f"{INVALID_OBJECT}: {message}"
        result.findings.append(Finding(file, line, column, "", "", message))
        return
    if is_kustomize_config(obj):
        result.passed_over.append(f"{shown_path(file)}: {object_ref(obj)}")
        return
    identity = identity_problems(obj)
    if identity:
        result.findings += [finding(p, ref="") for p in identity]
        return
    if not validator.claims(obj):
        result.others.append(obj)
        return
    desired = validate_and_render(validator, obj, image, rendering=do_render)
    outcome = desired.outcome
    located = [finding(w, "warning") for w in outcome.warnings] + [finding(e) for e in outcome.errors]
    # by place in the file, as a person reads them; the server's "rules not checked" note (at the
    # object's root, so its first line) after the errors it refers to
    result.findings += sorted(located, key=lambda f: (f.message == RULES_NOT_CHECKED, f.line, f.column))
    if not outcome.ok:
        return
    duplicate = _duplicate(result, outcome.obj, file, locate)
    if duplicate:
        result.findings.append(finding(duplicate, "warning"))
    if desired.render_problem:  # a CR that cannot be rendered is not counted as valid
        result.findings.append(finding(desired.render_problem))
        return
    result.rendered += desired.manifests
    result.crs.append(outcome.obj)


def _duplicate(result: Result, cr: dict[str, Any], file: str,
               locate: Callable[[tuple[str | int, ...]], tuple[int, int]]) -> Problem | None:
    """A second CR of the same namespace and name: kubectl apply keeps the later one, kustomize
    refuses the pair and Argo CD reports a repeated resource, so it is pointed out where it is."""
    meta = cr.get("metadata") or {}
    if not meta.get("name"):
        return None  # generateName: each create makes a new object
    # each kustomize build is one application of its own (Argo CD and Flux deploy it alone): its CRs are
    # compared with each other, never with the files it was built from
    scope = file if file.endswith(BUILT) else ""
    key = (scope, meta.get("namespace") or "", meta["name"])
    first = result.defined_at.get(key)
    if first is None:
        line, column = locate(("metadata", "name"))
        result.defined_at[key] = f"{file}:{line}:{column}" if line else file
        return None
    return Problem(("metadata", "name"), f"Duplicate value: {quote_value(meta['name'])}: already defined at {first}; "
                   "kubectl apply keeps the later one, kustomize refuses both")


__all__ = ["Finding", "Result", "TooManyObjects", "format_path", "is_kubernetes_object", "items_of", "object_ref", "process",
           "process_object"]
