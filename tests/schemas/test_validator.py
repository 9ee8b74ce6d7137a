"""The validator against the case table, the reference engine, and recorded API-server verdicts."""

from __future__ import annotations

import json
import re

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas import Validator
from memcached_gitops.schemas.crd import parse_crd

from tests.conftest import TRANSCRIPTS, crd_named, validate_text
from tests.upstream import needs_upstream, upstream
from tests.validator_cases import CASES, Case, cr


def test_the_table_is_large_enough_and_ids_are_unique() -> None:
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_verdict_matches_the_api_server(case: Case) -> None:
    outcome = validate_text(case.text, case.crd)
    found = {p.field for p in outcome.errors}
    if case.accept:
        assert outcome.ok, f"{case.why}: unexpected errors {[(p.field, p.message) for p in outcome.errors]}"
        assert outcome.obj.get("spec") == case.stored_spec, case.why
    else:
        assert not outcome.ok, f"{case.why}: accepted, stored {outcome.obj}"
        assert set(case.fields) <= found, f"{case.why}: errors name {found}, expected {case.fields}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fast_engine_agrees_with_the_reference_engine(case: Case) -> None:
    fast = validate_text(case.text, case.crd, engine="jsonschema-rs")
    reference = validate_text(case.text, case.crd, engine="jsonschema")
    assert fast.errors == reference.errors
    assert fast.warnings == reference.warnings
    assert fast.obj == reference.obj


def test_messages_use_the_api_servers_words() -> None:
    outcome = validate_text(cr("size: 4"))
    # transcript 12: "spec.size: Invalid value: 4: spec.size in body should be less than or equal to 3"
    assert [(p.field, p.message) for p in outcome.errors] == [
        ("spec.size", "Invalid value: 4: spec.size in body should be less than or equal to 3")
    ]
    outcome = validate_text(cr('containerPort: "x"'))
    assert outcome.errors[0].message == 'Invalid value: "string": spec.containerPort in body must be of type integer: "string"'


def _crd_defaulting_its_status() -> Validator:
    """A team's CRD (Flux-style) whose status is defaulted (``observedGeneration: -1``), with a status
    subresource, and whose root requires ``spec``."""
    schema = {"type": "object", "required": ["spec"], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
        "status": {"type": "object", "default": {}, "properties": {
            "observedGeneration": {"type": "integer", "format": "int64", "default": -1},
            "nodes": {"type": "array", "items": {"type": "string"}}}}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "memcacheds.cache.example.com"},
           "spec": {"group": "cache.example.com", "scope": "Namespaced",
                    "names": {"kind": "Memcached", "listKind": "MemcachedList", "plural": "memcacheds", "singular": "memcached"},
                    "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                                  "schema": {"openAPIV3Schema": schema}}]}}
    return Validator(parse_crd(json.dumps(crd), "a CRD that defaults its status"))


def test_a_status_the_schema_defaults_is_no_status_the_user_gave() -> None:
    """Only a status written in the CR is warned about: one the CRD's defaults add is dropped silently
    (the API server drops status on create, then defaults it again when it reads the object)."""
    outcome = _crd_defaulting_its_status().validate(
        {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "x", "namespace": "shop"},
         "spec": {"size": 1}})
    assert outcome.ok and outcome.warnings == [] and "status" not in outcome.obj


def test_a_given_status_is_judged_for_its_own_fields_only() -> None:
    """A written status is checked alone, as a warning each: what its check would say of the rest of
    the object (the root's required ``spec``, absent beside the status alone) is no warning."""
    outcome = _crd_defaulting_its_status().validate(
        {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "x", "namespace": "shop"},
         "spec": {"size": 1}, "status": {"nodes": [1]}})
    assert outcome.ok and "status" not in outcome.obj
    assert [w.field for w in outcome.warnings] == ["status", "status.nodes[0]"]


def test_not_strict_prunes_unknown_fields_with_a_warning() -> None:
    outcome = validate_text(cr("size: 2\nreplicas: 3"), strict=False)
    assert outcome.ok
    assert outcome.obj["spec"] == {"size": 2, "containerPort": 11211}
    assert [w.field for w in outcome.warnings] == ["spec.replicas"]


def test_status_values_are_warnings_and_status_is_not_stored() -> None:
    outcome = validate_text(cr(top="status:\n  nodes: [1]\n"))
    assert outcome.ok and "status" not in outcome.obj
    assert {w.field for w in outcome.warnings} == {"status", "status.nodes[0]"}


def test_a_team_crd_changes_the_rules_without_code_changes() -> None:
    text = cr("size: 5")
    assert not validate_text(text, "builtin").ok
    assert validate_text(text, "all").ok


def test_validation_does_not_depend_on_key_order() -> None:
    a = validate_text("kind: Memcached\napiVersion: cache.example.com/v1alpha1\nspec: {size: 9}\nmetadata: {name: x}\n")
    b = validate_text(cr("size: 9", name="x"))
    assert a.errors == b.errors


def _recorded_creates():
    """Every POST of a Memcached in the transcripts, with the server's answer and the CRD it was
    recorded with: the one a transcript installs itself (38), else the tutorial CRD of 00."""
    for path in sorted(TRANSCRIPTS.glob("*.json")):
        exchanges = json.loads(path.read_text())["exchanges"]
        installed = [ex["request"]["body"] for ex in exchanges if ex["request"]["path"].endswith("/memcacheds.cache.example.com")
                     and ex["request"]["method"] == "PATCH" and not path.name.startswith("00-")]
        for i, ex in enumerate(exchanges):
            req, resp = ex["request"], ex["response"]
            if req["method"] != "POST" or not req["path"].endswith("/memcacheds") or resp["status"] == 404:
                continue
            yield pytest.param(req, resp, installed[0] if installed else None, id=f"{path.name[:2]}-{i}")


def _unknown_fields_in(text: str) -> list[str]:
    """Field names from 'unknown field "spec.x"' in a warning header or a strict decoding error."""
    return re.findall(r'unknown field \\?"([^"\\]+)\\?"', text)


@pytest.mark.parametrize(("request_", "response", "crd_text"), list(_recorded_creates()))
def test_agrees_with_every_recorded_create(request_: dict, response: dict, crd_text: str | None) -> None:
    """Replays each recorded POST of a Memcached through the validator, with the recorded CRD."""
    strict = (request_.get("query") or {}).get("fieldValidation") == "Strict"
    crd = parse_crd(crd_text, "the transcript's CRD") if crd_text else crd_named("tutorial")
    validator = Validator(crd, strict=strict)
    obj = next(iter_documents(json.dumps(request_["body"]))).value
    outcome = validator.validate(obj)
    if response["status"] == 201:
        assert outcome.ok, outcome.errors
        assert outcome.obj["spec"] == response["body"]["spec"]
        recorded = sorted(f for w in response.get("warnings") or [] for f in _unknown_fields_in(w))
        assert sorted(w.field for w in outcome.warnings if "unknown field" in w.message) == recorded
        return
    assert not outcome.ok
    causes = (response["body"].get("details") or {}).get("causes") or []
    # the int32 format check adds a cause with no field path ("<nil>: ... with format int32 in spec.size", 38)
    assert {c["field"] for c in causes if c.get("field") not in (None, "<nil>")} <= {p.field for p in outcome.errors}
    # and every cause in the server's words, as many as it lists for one value (issue 22 §5: a size
    # of 1.5 is a type error and a format error; past int64 a bound error as well)
    ours = [(p.field, p.message) for p in outcome.errors]
    for cause in causes:
        if cause.get("field") in (None, "<nil>"):  # ours keeps the field's path, to locate it
            assert cause["message"] in [m for _, m in ours], (cause, ours)
        elif response["status"] == 422:
            assert (cause["field"], cause["message"]) in ours, (cause, ours)
    message = response["body"]["message"]
    if response["status"] == 400 and "strict decoding error" in message:  # the unknown fields are named
        assert sorted(_unknown_fields_in(message)) == sorted(p.field for p in outcome.errors)
    elif response["status"] == 400:  # ObjectMeta decoding (38): "Go struct field ObjectMeta.generation of type int64"
        named = re.findall(r"Go struct field \w+\.([\w.]+) of type", message)
        assert all(any(set(n.split(".")) <= set(re.split(r"[.\[\]]", p.field)) for p in outcome.errors) for n in named), message
        assert outcome.errors and all(p.field.startswith("metadata.") for p in outcome.errors)


def test_a_crd_file_that_is_not_yaml_is_an_error_naming_file_line_and_column() -> None:
    from memcached_gitops.schemas.crd import CRDError, parse_crd

    with pytest.raises(CRDError, match=r"^my-crd\.yaml:2:1: invalid YAML"):
        parse_crd("a: [1\n", "my-crd.yaml")


def test_documents_before_the_crd_that_are_not_mappings_are_passed_over() -> None:
    from memcached_gitops.schemas.crd import builtin_crd_text, parse_crd

    assert parse_crd("- 1\n---\n" + builtin_crd_text(), "crds.yaml").kind == "Memcached"


@needs_upstream
def test_an_object_another_crd_of_the_file_serves_is_not_claimed() -> None:
    # kubebuilder's project-v4-multigroup dist/install.yaml and samples (../shared/upstream, SOURCE.md)
    project = upstream("kubebuilder/testdata/project-v4-multigroup")
    validator = Validator(parse_crd((project / "dist/install.yaml").read_text(), "install.yaml"))
    busybox, memcached = (next(iter_documents((project / f"config/samples/example.com_v1alpha1_{k}.yaml").read_text())).value
                          for k in ("busybox", "memcached"))
    assert not validator.claims(busybox) and validator.claims(memcached)
    assert validator.claims({**memcached, "kind": "Memcache"}), "a kind no CRD of the file serves keeps the server's verdict"
    assert validator.validate({**memcached, "kind": "Memcache"}).errors[0].message.startswith('no matches for kind "Memcache"')


@pytest.mark.parametrize("engine", ["jsonschema-rs", "jsonschema"])
def test_with_a_memory_limit_the_limit_sizes_the_cache_and_any_smaller_request_is_taken(engine: str) -> None:
    """The 48Mi floor is on what sizes the cache (render/sizing.py): the memory limit when there is one,
    the request only without one. A request of 32Mi under a limit of 256Mi is a valid CR (the Pod is
    scheduled on 32Mi and the cache sized from 256Mi); the same request alone is refused."""
    with_limit = validate_text(cr("resources:\n  limits: {memory: 256Mi}\n  requests: {memory: 32Mi}"), engine=engine)
    assert with_limit.ok, with_limit.errors
    alone = validate_text(cr("resources:\n  requests: {memory: 32Mi}"), engine=engine)
    assert [e.field for e in alone.errors] == ["spec.resources.requests"], alone.errors


def _spec_bounds() -> list[tuple[str, str, int]]:
    """(field, minimum or maximum, the bound) of every bounded field of the shipped CRD's spec."""
    from memcached_gitops.schemas import load_crd

    spec = load_crd().document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    return [(field, bound, schema[bound]) for field, schema in sorted(spec.items())
            for bound in ("minimum", "maximum") if bound in schema]


@pytest.mark.parametrize("engine", ["jsonschema-rs", "jsonschema"])
@pytest.mark.parametrize(("field", "bound", "value"), _spec_bounds())
def test_each_bound_of_the_spec_takes_its_value_and_refuses_one_past_it(field: str, bound: str, value: int,
                                                                       engine: str) -> None:
    """Every minimum and maximum of the shipped CRD's spec is inclusive, as the API server reads it: the
    bound itself validates and renders, one past it is refused naming the field."""
    from memcached_gitops.render import render

    past = value - 1 if bound == "minimum" else value + 1
    at = validate_text(cr(f"size: 1\n{field}: {value}" if field != "size" else f"size: {value}"), engine=engine)
    assert at.ok, [(p.field, p.message) for p in at.errors]
    assert render(at.obj)
    beyond = validate_text(cr(f"size: 1\n{field}: {past}" if field != "size" else f"size: {past}"), engine=engine)
    assert [p.field for p in beyond.errors] == [f"spec.{field}"]


#: apiserver/pkg/storage/names/generate.go: maxNameLength 63 (a generateName's first 58 and 5 random characters)
GENERATED_NAME_LENGTH = 63


@pytest.mark.parametrize("spare", [0, 1])
def test_a_generated_name_is_held_against_the_crds_own_bound_on_the_name(spare: int) -> None:
    """The server generates a name from a generateName (its first 58 characters and 5 random ones:
    names.SimpleNameGenerator) before it validates the object against the CRD's schema, so a CRD that
    bounds metadata.name refuses the create whose generated name is too long. A CRD whose bound is
    the generated name's length takes it; one a character shorter refuses it, naming metadata.name."""
    from memcached_gitops.schemas import load_crd

    document = load_crd().document
    name_schema = document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["properties"]["name"]
    assert name_schema["maxLength"] >= GENERATED_NAME_LENGTH, "the shipped CRD takes every generated name"
    generate = "a" * 100 + "-"
    limited = json.loads(json.dumps(document))
    limited["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["properties"]["name"][
        "maxLength"] = GENERATED_NAME_LENGTH - spare
    text = cr(name="", meta=f"generateName: {generate}")
    outcome = Validator(parse_crd(json.dumps(limited), "crd.json")).validate(next(iter_documents(text)).value)
    assert [p.field for p in outcome.errors if p.field != "<root>"] == ([] if not spare else ["metadata.name"])


@pytest.mark.parametrize(("name", "refused"), [("a", []), ("b" * 63, ["metadata.name"])])
def test_a_cr_with_a_name_is_held_against_the_crds_bound_by_that_name_whatever_its_generate_name(name: str,
                                                                                              refused: list[str]) -> None:
    """The server generates a name only when none is given: a CR carrying both is judged by its own
    name (a short one passes a CRD bounding names to 62 beside a long generateName; a 63-character one
    is refused beside a short generateName)."""
    from memcached_gitops.schemas import load_crd

    limited = json.loads(json.dumps(load_crd().document))
    limited["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["properties"]["name"][
        "maxLength"] = GENERATED_NAME_LENGTH - 1
    generate = "g-" if refused else "a" * 100 + "-"
    text = cr(name=name, meta=f"generateName: {generate}")
    outcome = Validator(parse_crd(json.dumps(limited), "crd.json")).validate(next(iter_documents(text)).value)
    assert [p.field for p in outcome.errors if p.field != "<root>"] == refused

