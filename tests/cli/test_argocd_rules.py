"""The command line's rules as functions, in this process: the Argo CD plugin's pass-through, a finding's
line, the preview's text (the commands themselves run in subprocesses, as the cmp-server and CI start them,
in tests/delivery and tests/cli; these are the tests a mutant can be seen by)."""

from __future__ import annotations

import io
import json

import pytest
from memcached_gitops.foundation.excerpt import ELLIPSIS, PATH_LIMIT
from memcached_gitops.foundation.files import InputError
from memcached_gitops.foundation.yamlreader import NodeBudget
from memcached_gitops.schemas import Validator, load_crd

from memcached_gitops.argocd import PASS_THROUGH_ENV, PassThrough, PluginInputError, first_memcached, pass_through, plugin_settings
from memcached_gitops.pipeline import Finding, kind_as_listed
from memcached_gitops.preview_report import _cell, text_report
from memcached_gitops.rendered_diff import AppPreview, ObjectChange

CORE = {"apiVersion": "v1", "kind": "ConfigMap"}
CRD_KIND = {"apiVersion": "evil.example.com/v1", "kind": "ConfigMap"}
NETPOL = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy"}


def test_a_kind_is_listed_bare_for_the_core_group_and_with_its_group_else() -> None:
    assert [kind_as_listed(o) for o in (CORE, CRD_KIND, NETPOL, {"kind": "X"})] == [
        "ConfigMap", "evil.example.com/ConfigMap", "networking.k8s.io/NetworkPolicy", "X"]


def test_what_passes_is_what_is_listed_as_it_is_listed() -> None:
    listed = PassThrough(True, frozenset({"ConfigMap", "networking.k8s.io/NetworkPolicy"}))
    assert [listed.passes(o) for o in (CORE, CRD_KIND, NETPOL)] == [True, False, True]
    assert PassThrough(True, None).passes(CRD_KIND), "include-input: every kind"
    assert not PassThrough(False, frozenset()).passes(CORE)


@pytest.mark.parametrize(("settings", "ceiling", "kinds"), [
    ({"pass-through-kinds": "ConfigMap"}, "ConfigMap", {"ConfigMap"}),
    ({"pass-through-kinds": "ConfigMap, Secret"}, "ConfigMap,Secret", {"ConfigMap", "Secret"}),
    ({"include-input": "true"}, "*", None),
    ({"pass-through-kinds": "apps/Deployment"}, "*", {"apps/Deployment"}),
    ({"pass-through-kinds": "Secret"}, "ConfigMap, *", {"Secret"}),  # a "*" among the kinds is any kind
    ({"include-input": "true"}, " * ,ConfigMap", None),
    ({}, None, set()),
])
def test_the_applications_kinds_within_the_operators_ceiling(settings: dict[str, str], ceiling: str | None,
                                                              kinds: set[str] | None) -> None:
    wanted = pass_through(settings, ceiling)
    assert wanted.crs and (wanted.kinds if wanted.kinds is None else set(wanted.kinds)) == kinds


@pytest.mark.parametrize(("settings", "ceiling", "said"), [
    ({"pass-through-kinds": "v1/ConfigMap"}, "ConfigMap", '"v1/ConfigMap" is beyond'),
    ({"pass-through-kinds": "Secret"}, "ConfigMap", '"Secret" is beyond'),
    ({"pass-through-kinds": "ConfigMap"}, None, '"ConfigMap" is beyond'),
    ({"pass-through-kinds": "ConfigMap"}, "", '"ConfigMap" is beyond'),
    ({"include-input": "true"}, "ConfigMap", 'include-input: "true" is beyond'),
    ({"include-input": "true"}, None, 'include-input: "true" is beyond'),
])
def test_beyond_the_ceiling_is_refused_by_name_and_an_unset_ceiling_allows_nothing(settings: dict[str, str],
                                                                                   ceiling: str | None, said: str) -> None:
    with pytest.raises(PluginInputError, match=said):
        pass_through(settings, ceiling)


def test_discover_reads_every_file_within_one_node_budget() -> None:
    validator = Validator(load_crd())
    cr = b"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: c}\n"
    many = b"[" + b",".join([b"{}"] * 60) + b"]\n"
    sources = [("a.yaml", io.BytesIO(many)), ("b.yaml", io.BytesIO(many)), ("c.yaml", io.BytesIO(cr))]
    with pytest.raises(InputError, match=r"^b\.yaml:1:\d+: more than 100 YAML nodes"):
        first_memcached(sources, validator, NodeBudget(100, "one run"))
    sources = [("x.yaml", io.BytesIO(b"a: [\n")), ("a.yaml", io.BytesIO(many)), ("c.yaml", io.BytesIO(cr))]
    assert first_memcached(sources, validator, NodeBudget(1000, "one run")) == "c.yaml", "a file that is not YAML is passed over"


@pytest.mark.parametrize(("ceiling", "shown"), [(None, "none"), ("", "none"), ("Secret, ConfigMap", "ConfigMap, Secret")])
def test_a_refusal_names_the_operators_ceiling_as_set(ceiling: str | None, shown: str) -> None:
    with pytest.raises(PluginInputError) as refused:
        pass_through({"pass-through-kinds": "Role"}, ceiling)
    assert str(refused.value) == f'pass-through-kinds: "Role" is beyond what the sidecar\'s operator allows ({PASS_THROUGH_ENV}: {shown})'


def test_a_kind_missing_is_listed_as_nothing() -> None:
    assert kind_as_listed({"apiVersion": "v1"}) == "" and kind_as_listed({}) == ""


def test_a_finding_is_one_line_with_its_place_then_what() -> None:
    assert Finding("a.yaml", 3, 4, "Memcached/x", "spec.size", "too big").text() == "a.yaml:3:4: Memcached/x: spec.size: too big"
    assert Finding("a.yaml", 0, 0, "", "", "not built", "warning").text() == "a.yaml: warning: not built"
    assert Finding("a.yaml", 2, 1, "", "", "bad").text() == "a.yaml:2:1: bad"
    long = "d/" * 150 + "x.yaml"
    assert Finding(long, 1, 1, "", "f", "m").text() == f"{ELLIPSIS}{long[-PATH_LIMIT:]}:1:1: f: m"


def test_the_text_report_is_its_summary_then_each_diff_every_line_escaped() -> None:
    key = ("v1", "ConfigMap", "ns", "c")
    change = ObjectChange("changed", key, None, ["--- base", "+++ pr", "+  a: ::x ##[error]y"], "Memcached ns/m: spec.size: 1 -> 2")
    failing = AppPreview("apps/b", [], [], [("base", "apps/b/x.yaml:1:1: bad\n::error::forged"), ("pr", "p")])
    report = text_report([AppPreview("apps/a", [change], [], []), failing], "main", "0123456789abcdef")
    assert report == (
        "1 of 2 application(s) change between the merge base 0123456789ab of main and the working tree; 1 cannot be read\n"
        "apps/a: changed ConfigMap 1\n"
        "  Memcached ns/m: spec.size: 1 -> 2 (changed ConfigMap ns/c)\n"
        "apps/b: error (base): apps/b/x.yaml:1:1: bad\\n::error::forged\n"
        "apps/b: error (pull request): p\n"
        "\n--- base\n+++ pr\n+  a: ::x #\\x23[error]y\n")


def test_a_cell_holds_one_line_and_no_markup_and_keeps_quotes() -> None:
    assert _cell('say "hi"\nto <b>|x|</b>\r') == "say \"hi\" to &lt;b&gt;&#124;x&#124;&lt;/b&gt;&#92;r"


def test_an_application_that_adds_and_changes_says_both_on_its_line() -> None:
    changed = ObjectChange("changed", ("apps/v1", "Deployment", "ns", "c"), None, [], "")
    added = ObjectChange("added", ("policy/v1", "PodDisruptionBudget", "ns", "c"), None, [], "")
    report = text_report([AppPreview("apps/a", [changed, added], [], [])], "main", "0" * 40)
    assert "apps/a: added PodDisruptionBudget 1; changed Deployment 1\n" in report


#: strconv.ParseBool's words (Go src/strconv/atob.go, ParseBool: "1", "t", "T", "TRUE", "true", "True"
#: and their false counterparts; anything else is an error), as Argo CD reads its own boolean settings.
PARSE_BOOL = {**{w: True for w in ("1", "t", "T", "TRUE", "true", "True")},
              **{w: False for w in ("0", "f", "F", "FALSE", "false", "False")}}


@pytest.mark.parametrize("word", [*PARSE_BOOL, "tRUE", "yes", "on", " true", "2", ""])
def test_include_input_is_read_as_go_reads_a_bool(word: str) -> None:
    """include-input takes exactly strconv.ParseBool's twelve words; any other is refused by name, never
    read as a default (an empty value is unset: plugin.yaml's static default)."""
    settings = plugin_settings({"ARGOCD_APP_PARAMETERS": json.dumps([{"name": "include-input", "string": word}])})
    if word == "":
        assert pass_through(settings, "*") == (True, frozenset())
    elif word in PARSE_BOOL:
        assert pass_through(settings, "*") == ((True, None) if PARSE_BOOL[word] else (False, frozenset()))
    else:
        with pytest.raises(PluginInputError, match="include-input: must be true or false"):
            pass_through(settings, "*")


@pytest.mark.parametrize("variable", ["ARGOCD_ENV_KUSTOMIZE_BUILD_OPTIONS", "PARAM_KUSTOMIZE_BUILD_OPTIONS"])
def test_the_operators_build_options_are_refused_from_the_plugin_env_as_from_a_parameter(variable: str) -> None:
    """kustomize-build-options is the sidecar operator's alone: an Application (or the repository,
    through .argocd-source.yaml) that sets it as a plugin env is refused as one that lists it as a
    parameter, before any other setting is read."""
    with pytest.raises(PluginInputError, match=r"^kustomize-build-options: refused: .*MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS"):
        plugin_settings({variable: "--enable-helm", "ARGOCD_ENV_MEMCACHED_IMAGE": "memcached:1"})


def test_a_parameter_sent_only_as_its_param_variable_is_read_before_the_plugin_env() -> None:
    """The repo-server sends each parameter as PARAM_<NAME> too (types.go Environ, ``escaped``):
    without ARGOCD_APP_PARAMETERS that variable is the parameter, and it wins over the plugin env."""
    environ = {"PARAM_IMAGE": "memcached:1.6.29", "ARGOCD_ENV_MEMCACHED_IMAGE": "memcached:1.5",
               "PARAM_INCLUDE_INPUT": "false", "ARGOCD_ENV_INCLUDE_INPUT": "true"}
    assert plugin_settings(environ) == {"image": "memcached:1.6.29", "include-input": "false"}


@pytest.mark.parametrize("listed", [
    [{"name": "kustomize-build-options", "string": "--enable-helm"}],
    [{"name": "image", "string": "memcached:1.6.29"}, {"name": "kustomize-build-options", "string": "--enable-helm"}],
    [{"name": "kustomize-build-options", "array": ["--enable-helm"]}],
    [{"name": "kustomize-build-options", "map": {"helm": "true"}}],
])
def test_the_operators_setting_listed_as_a_parameter_is_refused_as_the_operators_whatever_else_holds(listed: list) -> None:
    """kustomize-build-options is the sidecar operator's: listed among the Application's parameters (beside
    others, or as an array or a map) it is refused by that name, saying who sets it, never as an unknown
    parameter or as a parameter of the wrong type (which would send its author to plugin.yaml instead)."""
    with pytest.raises(PluginInputError, match=r"^kustomize-build-options: refused: .*MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS"):
        plugin_settings({"ARGOCD_APP_PARAMETERS": json.dumps(listed)})


@pytest.mark.parametrize("ceiling", [None, "", "ConfigMap", "*"])
@pytest.mark.parametrize("kinds", ["", "ConfigMap", "Secret, rbac.authorization.k8s.io/ClusterRoleBinding"])
def test_include_input_false_outranks_the_kinds_listed_beside_it_under_any_ceiling(ceiling: str | None, kinds: str) -> None:
    """``include-input: false`` emits the Deployments alone: kinds listed beside it in pass-through-kinds pass
    nothing, so they are never held to the operator's ceiling (no refusal for a kind that cannot pass)."""
    wanted = pass_through({"include-input": "false", "pass-through-kinds": kinds}, ceiling)
    assert wanted == PassThrough(False, frozenset())
    assert not any(wanted.passes(o) for o in (CORE, CRD_KIND, NETPOL))
