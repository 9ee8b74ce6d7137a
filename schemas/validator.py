"""The validator: the API server's verdict on a custom resource, without a cluster.

Its definition of correct: for any CR, the verdict and the stored object (after pruning and
defaulting) equal what ``kubectl apply --dry-run=server --validate=strict -f FILE`` gives against
a cluster where the CRD is installed. The server's order of work is kept
(apiextensions-apiserver customresource_handler.go and strategy.go):

1. the kind and a served apiVersion (kubectl: ``no matches for kind ... in version ...``);
2. unknown fields: an error under ``strict`` (``fieldValidation=Strict``), otherwise pruned;
   nulls in non-nullable fields pruned; defaults applied (structural.py);
3. with the status subresource, ``status`` is dropped on create (strategy.PrepareForCreate):
   its values are reported as warnings, never as errors;
4. the OpenAPI schema (through the JSON Schema derived by to_jsonschema.py), ObjectMeta rules
   (objectmeta.py) and CEL rules (cel_rules.py).

Schema validation runs on jsonschema-rs (fast); the pure-Python ``jsonschema`` engine is the
reference the tests hold it to, and is used when ``engine="jsonschema"`` is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from memcached_gitops.foundation.excerpt import excerpt, quote_value

from . import cel_rules
from .crd import CRD, Version
from .metadecode import decode_object_meta
from .objectmeta import validate_object_meta, with_generated_name
from .structural import prune_and_default
from .to_jsonschema import FORMAT_COMMENT, INT_FORMATS, JSON_INTEGER_COMMENT, PATTERN_COMMENT, to_json_schema

FieldPath = tuple[str | int, ...]


class Problem(NamedTuple):
    """One finding on a CR: where (field path) and what (a message in the API server's words)."""

    path: FieldPath
    message: str

    @property
    def field(self) -> str:
        return format_path(self.path)


class Outcome:
    """The verdict on one CR, and the object the API server would store."""

    __slots__ = ("obj", "errors", "warnings")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []

    @property
    def ok(self) -> bool:
        return not self.errors


def format_path(path: Iterable[str | int]) -> str:
    """``spec.ports[0].name`` form, as the API server prints field paths."""
    out = ""
    for step in path:
        # keys are input too: a long one is cut like any other quoted value
        out += f"[{step}]" if isinstance(step, int) else (f".{excerpt(step)}" if out else excerpt(str(step)))
    return out or "<root>"


def _type_name(value: Any) -> str:
    """The JSON type kube-openapi names in a type error (validate/type.go schemaInfoForType)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _plural(count: Any, noun: str) -> str:
    """``1 item``, ``2 items``: field.TooMany and field.TooLong use the singular for a limit of 1."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _valid_alternatives(schemas: list[Any], instance: Any, is_valid: Callable[[Any, Any], bool]) -> str:
    """kube-openapi's oneOf detail (validate/schema_props.go): how many alternatives matched, each
    checked by the engine the schema's patterns were written for (``is_valid``)."""
    valid = sum(1 for s in schemas if is_valid(s, instance))
    return "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"


def describe(keyword: str, limit: Any, instance: Any, where: str, subschema: dict[str, Any], *,
             is_valid: Callable[[Any, Any], bool]) -> str:
    """A schema failure in the API server's words.

    kube-openapi (pkg/validation/errors/schema.go) writes the detail; apiextensions-apiserver
    (pkg/apiserver/validation/validation.go kubeOpenAPIResultToFieldErrors) wraps it in a field
    error (apimachinery util/validation/field/errors.go): ``Invalid value: <value>: <detail>``,
    ``Required value``, ``Unsupported value``, ``Too long``, ``Too many``. Expected strings are in
    apiextensions-apiserver's validation_test.go. Where the server names no field (``<nil>``: anyOf,
    oneOf, not, the format check) the problem keeps the field's path, so that it can be located.
    """
    comment = subschema.get("$comment", "")
    if keyword == "pattern" and comment.startswith(PATTERN_COMMENT):
        limit = comment.removeprefix(PATTERN_COMMENT)  # the CRD's pattern, not the engine's spelling of it
    if comment.startswith(FORMAT_COMMENT) and keyword in ("minimum", "maximum"):
        return _format_check(comment.removeprefix(FORMAT_COMMENT), where)
    if comment.startswith(JSON_INTEGER_COMMENT) and keyword in ("minimum", "maximum"):
        return f'Invalid value: "number": {where} in body must be of type {comment.removeprefix(JSON_INTEGER_COMMENT)}: "number"'
    if keyword == "type":
        # the value's type, not the value (transcript 12: Invalid value: "string"); the types joined
        # by "," as kube-openapi joins them (x-kubernetes-int-or-string: "integer,string")
        wanted = limit if isinstance(limit, str) else ",".join(t for t in limit if t != "null")
        if isinstance(instance, float) and subschema.get("format") in INT_FORMATS:
            return _float_type_error(subschema["format"], where)
        got = _type_name(instance)
        return f'Invalid value: "{got}": {where} in body must be of type {wanted}: "{got}"'
    if keyword == "enum":
        # field.NotSupported: each supported value quoted, JSON first when it is not a string
        options = ", ".join(quote_value(o if isinstance(o, str) else quote_value(o)) for o in limit)
        return f"Unsupported value: {quote_value(instance)}: supported values: {options}"
    if keyword == "maxLength":
        return f"Too long: may not be more than {_plural(limit, 'byte')}"
    if keyword in ("maxItems", "maxProperties"):
        return f"Too many: {len(instance)}: must have at most {_plural(limit, 'item')}"
    if keyword in ("minItems", "minProperties"):
        noun = "items" if keyword == "minItems" else "properties"
        return f"Invalid value: {len(instance)}: {where} in body should have at least {limit} {noun}"
    if keyword in ("anyOf", "oneOf", "not", "uniqueItems"):
        detail = {
            "anyOf": f'"{where}" must validate at least one schema (anyOf)',
            "oneOf": f'"{where}" must validate one and only one schema (oneOf)',
            "not": f'"{where}" must not validate the schema (not)',
            "uniqueItems": f"{where} in body shouldn't contain duplicates",
        }[keyword]
        if keyword == "oneOf":
            detail += ". " + _valid_alternatives(limit, instance, is_valid)
        return f'Invalid value: "": {detail}'
    detail = {
        "maximum": f"should be less than or equal to {limit}",
        "exclusiveMaximum": f"should be less than {limit}",
        "minimum": f"should be greater than or equal to {limit}",
        "exclusiveMinimum": f"should be greater than {limit}",
        "multipleOf": f"should be a multiple of {limit}",
        "pattern": f"should match '{limit}'",
        "minLength": f"should be at least {limit} chars long",
    }.get(keyword, f"fails {keyword} {limit!r}")
    return f"Invalid value: {quote_value(instance)}: {where} in body {detail}"


def _subschema(schema: dict[str, Any], schema_path: Iterable[Any]) -> Any:
    node: Any = schema
    for step in schema_path:
        node = node[step]
    return node


#: customresource/strategy.go hasBlockingErr: after an error of these types (NotSupported,
#: Required, TooLong, TooMany, TypeInvalid) the CEL rules are not evaluated, and this is said instead
#: (field.Invalid(nil, nil, ...): the server names no field, and writes the nil value as null).
RULES_NOT_CHECKED = ("Invalid value: null: some validation rules were not checked because the object was invalid; "
                     "correct the existing errors to complete validation")
_BLOCKING_PREFIXES = ("Unsupported value", "Required value", "Too long", "Too many")


def _blocks_rules(problem: Problem) -> bool:
    return problem.message.startswith(_BLOCKING_PREFIXES) or " in body must be of type " in problem.message


#: swag.IsFloat64AJSONInteger: a float64 is a JSON integer only within +-2**53 (and integral)
_JSON_INTEGER_LIMIT = 2**53


def _format_check(fmt: str, where: str) -> str:
    """kubernetes/kubernetes#136582: an integer format's check, a cause with no field (``<nil>``)."""
    return f'Invalid value: "": Checked value must be of type integer with {FORMAT_COMMENT}{fmt} in {where}'


def _float_type_error(fmt: str, where: str) -> str:
    """kube-openapi validate/type.go: a number that is no JSON integer, under an integer format, is
    named by formats (transcript 38: ``must be of type int32: "float64"``)."""
    return f'Invalid value: "float64": {where} in body must be of type {fmt}: "float64"'


def _number_causes(path: FieldPath, keyword: str, value: Any, sub: dict[str, Any]) -> list[Problem]:
    """The causes the server adds for a number that is no JSON integer under an integer format.

    kube-openapi checks the type and the format of one value separately, and both fail for such a
    number: 1.5 is a type error and fails the format check; 9223372036854775808 (a float64 past
    2**53) passes the JSON Schema type but is a type error to the server, besides failing the
    format's bounds. Each failure found here brings its sibling, so the server's causes are all
    listed whichever the engine reported.
    """
    if not isinstance(value, float):
        return []
    if keyword == "type" and sub.get("format") in INT_FORMATS:
        return [Problem(path, _format_check(sub["format"], format_path(path)))]
    comment = sub.get("$comment", "")
    if comment.startswith(FORMAT_COMMENT) and not (value.is_integer() and abs(value) <= _JSON_INTEGER_LIMIT):
        return [Problem(path, _float_type_error(comment.removeprefix(FORMAT_COMMENT), format_path(path)))]
    return []


def identity_problems(doc: dict[str, Any]) -> list[Problem]:
    """A document kubectl cannot map to any resource: no apiVersion or no kind (kubectl's words)."""
    problems = []
    for field in ("apiVersion", "kind"):
        value = doc.get(field)
        if value is None or value == "":
            problems.append(Problem((field,), f"{field} not set"))
        elif not isinstance(value, str):
            problems.append(Problem((field,), f"Invalid value: {quote_value(value)}: {field} must be a string"))
    return problems


def _owner_references_deduplicated(obj: dict[str, Any]) -> list[Problem]:
    """The API server drops an owner reference equal to an earlier one (the same UID, and every
    field the same once decoded) before it validates a create, and warns: kubernetes/apiserver
    pkg/endpoints/handlers/rest.go:297-313 (dedupOwnerReferences) and 334-350. So a repeated
    reference is judged once (kube-apiserver v1.36.2 reports one bad apiVersion for two equal
    references, and no second controller). Called after pruning, as decoding drops unknown fields."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list) or len(refs) < 2:
        return []
    kept: list[Any] = []
    duplicates = []
    for ref in refs:
        if ref in kept:
            duplicates.append(ref.get("uid") if isinstance(ref, dict) else ref)
        else:
            kept.append(ref)
    if not duplicates:
        return []
    meta["ownerReferences"] = kept
    return [Problem(("metadata", "ownerReferences"), "contains duplicate entries; the API server drops them (duplicate "
                    f"UID(s) observed: {', '.join(quote_value(uid) for uid in duplicates)})")]


class _RustEngine:
    """jsonschema-rs: compiled once per CRD version."""

    REGEX = "ecma"  # patterns.DIALECTS: how the schema's patterns are written for it

    def __init__(self, schema: dict[str, Any]) -> None:
        import jsonschema_rs

        self.schema = schema
        self.validator = jsonschema_rs.Draft202012Validator(schema)

    @staticmethod
    def is_valid(schema: dict[str, Any], instance: Any) -> bool:
        import jsonschema_rs

        return bool(jsonschema_rs.Draft202012Validator(schema).is_valid(instance))

    def problems(self, instance: Any) -> Iterable[tuple[FieldPath, str, Any, Any, dict[str, Any]]]:
        if self.validator.is_valid(instance):
            return
        for err in self.validator.iter_errors(instance):
            sub = _subschema(self.schema, err.schema_path[:-1])
            keyword = err.schema_path[-1]  # a keyword's name: a schema path ends in one
            yield tuple(err.instance_path), str(keyword), sub.get(keyword), err.instance, sub


class _PythonEngine:
    """The reference: the ``jsonschema`` package."""

    REGEX = "python"

    def __init__(self, schema: dict[str, Any]) -> None:
        import jsonschema

        self.validator = jsonschema.Draft202012Validator(schema)

    @staticmethod
    def is_valid(schema: dict[str, Any], instance: Any) -> bool:
        import jsonschema

        return bool(jsonschema.Draft202012Validator(schema).is_valid(instance))

    def problems(self, instance: Any) -> Iterable[tuple[FieldPath, str, Any, Any, dict[str, Any]]]:
        for err in self.validator.iter_errors(instance):
            yield tuple(err.absolute_path), str(err.validator), err.validator_value, err.instance, err.schema


ENGINES: dict[str, type[_RustEngine] | type[_PythonEngine]] = {"jsonschema-rs": _RustEngine, "jsonschema": _PythonEngine}


#: kubectl apply's words for a generateName without a name (kubectl pkg/cmd/apply/apply.go).
GENERATE_NAME_WARNING = (
    "cannot use generate name with apply: kubectl apply, server-side apply and Argo CD sync need "
    "metadata.name; only kubectl create can make this object"
)


class Validator:
    """Validates CRs of one CRD; build once, call ``validate`` per document."""

    def __init__(self, crd: CRD, strict: bool = True, engine: str = "jsonschema-rs") -> None:
        self.crd, self.strict = crd, strict
        self._engine_cls = ENGINES[engine]
        self._engines: dict[str, Any] = {}
        self._cel = {name: cel_rules.has_rules(v.schema) for name, v in crd.versions.items()}

    def json_schema(self, version: str | None = None) -> dict[str, Any]:
        """The JSON Schema of a served version (the storage version by default)."""
        v = self.crd.versions.get(version or self.crd.storage_version) or next(iter(self.crd.versions.values()))
        return to_json_schema(v.schema, title=f"{self.crd.kind} ({self.crd.group}/{v.name})")

    def _engine(self, version: Version) -> Any:
        if version.name not in self._engines:
            self._engines[version.name] = self._engine_cls(to_json_schema(version.schema, regex=self._engine_cls.REGEX))
        return self._engines[version.name]

    def claims(self, doc: Any) -> bool:
        """Whether a document is judged as this CRD's kind: its group, or its kind in any spelling.

        A typo (``kind: memcached``, or ``Memcached`` under another group) must not pass silently:
        in a GitOps repository it would remove a cache, and Argo CD's prune would delete it.
        """
        if not isinstance(doc, dict):
            return False
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        if self.crd.serves_sibling(api_version, kind):
            return False  # another CRD of the --crd file serves it
        in_group = isinstance(api_version, str) and api_version.startswith(self.crd.group + "/")
        return in_group or (isinstance(kind, str) and kind.lower() in self.crd.spellings())

    def status_problems(self, status: Any, version: Version) -> list[Problem]:
        """Problems of a CR's ``status`` against ``version``'s schema, as the API server checks every
        write that carries one (a write to the status subresource is refused with a 422 for them)."""
        return [p for p in self._schema_problems(self._engine(version), {"status": status}) if p.path[:1] == ("status",)]

    def validate(self, obj: dict[str, Any]) -> Outcome:
        """The verdict on ``obj`` (which it takes over and prunes/defaults in place)."""
        out = Outcome(obj=obj)
        version = self.crd.version_of(obj.get("apiVersion"))
        kind = obj.get("kind")
        spelled = isinstance(kind, str) and kind.lower() in self.crd.spellings()
        if version is None or not spelled:
            # kubectl's REST mapping: no resource of that kind in that group/version
            served = ", ".join(self.crd.api_versions())
            out.errors.append(Problem(
                ("apiVersion",),
                f"no matches for kind {quote_value(kind)} in version {quote_value(obj.get('apiVersion'))} "
                f"(the CRD serves {served})",
            ))
            return out
        if kind != self.crd.kind:
            # the server's kind check on a body sent to the resource's endpoint (issue text, kubectl v1.36);
            # decoding comes first, and for a kind it does not know it checks only ObjectMeta, so unknown
            # fields of metadata are a 400 instead, and nothing else is reported (transcript 38)
            meta = obj.get("metadata")
            unknown = prune_and_default({"metadata": meta}, {}) if self.strict and isinstance(meta, dict) else []
            out.errors = [Problem(p, f'unknown field "{format_path(p)}"') for p in unknown] or [
                Problem(("kind",), f"Invalid value: {quote_value(kind)}: must be {self.crd.kind}")]
            return out
        decoding = decode_object_meta(obj)
        if decoding:  # kubectl refuses the object before sending it (metadecode.py)
            out.errors = [Problem(p, m) for p, m in decoding]
            return out
        given_status = "status" in obj  # a status that defaulting adds (Flux's observedGeneration: -1) is not the user's
        for path in prune_and_default(obj, version.schema):
            # strict: the 400 "strict decoding error: unknown field ..."; otherwise the Warning
            # header of a pruned field (transcript 23: 299 - "unknown field \"spec.image\"")
            (out.errors if self.strict else out.warnings).append(Problem(path, f'unknown field "{format_path(path)}"'))
        out.warnings += _owner_references_deduplicated(obj)
        engine = self._engine(version)
        if version.status_subresource and "status" in obj and not given_status:
            obj.pop("status")  # dropped on create (PrepareForCreate); the server defaults it again when it reads it
        elif version.status_subresource and "status" in obj:
            status = obj.pop("status")
            out.warnings.append(
                Problem(("status",), "ignored: the API server drops status on create and apply (status subresource)")
            )
            out.warnings += self.status_problems(status, version)
        out.errors += self._schema_problems(engine, with_generated_name(obj))
        out.errors += [Problem(p, m) for p, m in validate_object_meta(obj.get("metadata"), self.crd.namespaced)]
        meta = obj.get("metadata")
        if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
            # valid for create, but kubectl apply refuses it on the client (apply.go) and server-side
            # apply needs a name: a GitOps tool can only create it, once
            out.warnings.append(Problem(("metadata", "generateName"), GENERATE_NAME_WARNING))
        if self._cel[version.name]:
            if any(_blocks_rules(p) for p in out.errors):
                out.errors.append(Problem((), RULES_NOT_CHECKED))
            else:
                out.errors += [Problem(p, m) for p, m in cel_rules.check_rules(obj, version.schema)]
        return out

    @staticmethod
    def _schema_problems(engine: Any, instance: Any) -> list[Problem]:
        # a set of causes: one value may fail several checks, each a cause of its own, as the
        # server lists the format check and the schema's own bound (transcript 38)
        found: set[Problem] = set()
        for path, keyword, limit, value, sub in engine.problems(instance):
            found.update(_number_causes(path, keyword, value, sub))
            if keyword == "required":
                # the whole list: one error per name missing from the object
                found.update(Problem(path + (name,), "Required value") for name in limit if name not in value)
                continue
            if keyword == "additionalProperties" and isinstance(value, dict):
                known = sub.get("properties") or {}
                found.update(Problem(path + (n,), f'unknown field "{format_path(path + (n,))}"') for n in value if n not in known)
                continue
            found.add(Problem(path, describe(keyword, limit, value, format_path(path), sub, is_valid=engine.is_valid)))
        # by path, then message: an array's items in index order, as kube-openapi checks them
        return sorted(found)
