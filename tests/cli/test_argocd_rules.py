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


# --- the same rules over the neighbours of each example above (hypothesis) ---

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from memcached_gitops.argocd import PARAMETERS, repository_root  # noqa: E402

#: A parameter's value as an Application gives it: empty (plugin.yaml's static default, unset) or not.
SETTING = st.sampled_from(["", "memcached:1.6.29", "true", "false", "ConfigMap"])
#: The plugin env variable each parameter falls back to (plugin.yaml's ``env``).
PLUGIN_ENV = {name: "ARGOCD_ENV_" + env for name, env in PARAMETERS.items()}
#: The PARAM_ variable the repo-server also sets for each parameter (types.go ``escaped``).
PARAM_VARIABLE = {"image": "PARAM_IMAGE", "include-input": "PARAM_INCLUDE_INPUT", "pass-through-kinds": "PARAM_PASS_THROUGH_KINDS"}


@settings(max_examples=100, deadline=None)
@given(listed=st.dictionaries(st.sampled_from(sorted(PARAMETERS)), SETTING),
       plugin_env=st.dictionaries(st.sampled_from(sorted(PARAMETERS)), SETTING),
       as_json=st.booleans(), order=st.randoms(use_true_random=False),
       unrelated=st.dictionaries(st.sampled_from(["ARGOCD_ENV_OTHER", "PARAM_OTHER", "ARGOCD_APP_NAME", "MEMCACHED_IMAGE"]), SETTING))
def test_each_setting_is_its_parameter_else_its_plugin_env_and_an_empty_one_is_unset(
        listed: dict[str, str], plugin_env: dict[str, str], as_json: bool, order, unrelated: dict[str, str]) -> None:
    """Each of the plugin's settings, for any mix of the three: the Application's parameter when it is
    given and not empty, else its plugin env when that is not empty, else unset. A parameter comes as the
    repo-server sends it (types.go ``Environ``): listed in ARGOCD_APP_PARAMETERS (in any order) with its
    PARAM_<NAME> beside it, or as PARAM_<NAME> alone. Other variables change nothing."""
    params = [{"name": name, "string": value} for name, value in listed.items()]
    order.shuffle(params)
    environ = {**unrelated, **{PARAM_VARIABLE[name]: value for name, value in listed.items()},
               **{PLUGIN_ENV[name]: value for name, value in plugin_env.items()}}
    if as_json:
        environ["ARGOCD_APP_PARAMETERS"] = json.dumps(params)
    expected = {}
    for name in PARAMETERS:
        if listed.get(name):
            expected[name] = listed[name]
        elif plugin_env.get(name):
            expected[name] = plugin_env[name]
    assert plugin_settings(environ) == expected


#: Kinds as an Application or an operator may spell them: the core group's bare, another group's with it (and
#: the same kind in a second group, or a core kind wrongly given a group), so a bare kind meets its grouped twin.
KINDS = ["ConfigMap", "Secret", "Deployment", "apps/Deployment", "v1/ConfigMap", "evil.example.com/Secret"]


def _comma_list(draw, words: list[str]) -> str:
    """``words`` as an operator or an author writes them: commas, spaces around some, empty entries."""
    spaced = [draw(st.sampled_from(["", " ", "  "])) + w + draw(st.sampled_from(["", " "])) for w in words]
    return ",".join(spaced + draw(st.lists(st.just(" "), max_size=1)))


def _twin(kind: str) -> str:
    """The same kind spelled for another group: a grouped kind bare, a bare one with a group."""
    return kind.rpartition("/")[2] if "/" in kind else "apps/" + kind


@st.composite
def _ceiling_case(draw):
    wanted = draw(st.lists(st.sampled_from(KINDS), max_size=4))
    # the ceiling an operator wrote beside it: some of the same kinds, some of their twins, others, maybe "*"
    allowed = [k for k in wanted if draw(st.booleans())] + [_twin(k) for k in wanted if draw(st.booleans())]
    allowed += draw(st.lists(st.sampled_from(KINDS), max_size=2)) + (["*"] if draw(st.integers(0, 4)) == 0 else [])
    allowed = draw(st.permutations(allowed))
    include = draw(st.sampled_from([None, None, None, "true", "false"]))
    settings_ = {"pass-through-kinds": _comma_list(draw, wanted)} if wanted or draw(st.booleans()) else {}
    if include is not None:
        settings_["include-input"] = include
    ceiling = None if draw(st.integers(0, 4)) == 0 else _comma_list(draw, allowed)
    return settings_, ceiling, set(wanted), None if ceiling is None else set(allowed), include


@settings(max_examples=100, deadline=None)
@given(_ceiling_case())
def test_the_ceiling_refuses_exactly_what_it_does_not_allow(case) -> None:
    """Under any ceiling: ``include-input: false`` is the Deployments alone; ``true`` needs ``*`` in the
    ceiling; the kinds listed each need the same spelling in the ceiling or a ``*`` there (an unset
    ceiling allows none). A refusal names a kind the ceiling lacks."""
    settings_, ceiling, wanted, allowed, include = case
    star = allowed is not None and "*" in allowed
    beyond = set() if star else wanted - (allowed or set())
    if include == "false":
        assert pass_through(settings_, ceiling) == PassThrough(False, frozenset())
    elif include == "true" and not star:
        with pytest.raises(PluginInputError, match='include-input: "true" is beyond'):
            pass_through(settings_, ceiling)
    elif include == "true":
        assert pass_through(settings_, ceiling) == PassThrough(True, None)
    elif beyond:
        with pytest.raises(PluginInputError) as refused:
            pass_through(settings_, ceiling)
        assert any(str(refused.value).startswith(f"pass-through-kinds: {json.dumps(k)} is beyond") for k in beyond), refused.value
    else:
        assert pass_through(settings_, ceiling) == PassThrough(True, frozenset(wanted))


SEGMENT = st.text(alphabet="abc-_.", min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))


@settings(max_examples=100, deadline=None)
@given(root=st.lists(SEGMENT, min_size=1, max_size=3), path=st.lists(SEGMENT, min_size=1, max_size=3),
       spelling=st.sampled_from(["{}", "./{}", "{}/", "./{}/", "{}//"]), doubled=st.booleans())
def test_the_checkout_root_is_the_application_directory_less_its_source_path_however_spelled(
        root: list[str], path: list[str], spelling: str, doubled: bool) -> None:
    """The cmp-server runs generate in ``<workdir>/<app path>``: the root is the work directory for any
    spelling of the same path (``./`` before it, a ``/`` after it, a doubled ``/`` inside it), and
    whatever names the work directory's own folders carry (one may repeat the path's last name)."""
    if doubled:
        root = [*root, path[-1]]  # /w/caches/apps/caches: only the whole tail is the path
    workdir = "/nonexistent-cmp-server/" + "/".join(root)
    app = workdir + "/" + "/".join(path)
    source_path = spelling.format("/".join(path).replace("/", "//", 1) if "//" in spelling else "/".join(path))
    assert repository_root({"ARGOCD_APP_SOURCE_PATH": source_path}, app) == workdir


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_a_message_names_the_objects_up_to_its_bound_and_says_when_there_are_more(extra: int) -> None:
    """The objects passed over or held back are named in one line: all of them up to ``HELD_LISTED``, and past it
    the first ``HELD_LISTED`` then ``...``, so a repository of a thousand objects cannot make a line of a thousand."""
    from memcached_gitops.commands import HELD_LISTED, named

    objects = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}} for i in range(HELD_LISTED + extra)]
    shown = ", ".join(f"ConfigMap/c{i}" for i in range(min(len(objects), HELD_LISTED)))
    assert named(objects) == shown + (", ..." if extra > 0 else "")


def test_each_kind_of_change_is_counted_on_the_applications_line_and_in_its_column() -> None:
    """An application whose objects are added, changed, removed and renamed says each, in that order, on its text
    line, and puts each count under its own column of the comment's table (never a count under another header)."""
    from memcached_gitops.preview_report import table

    def change(action: str, kind: str) -> ObjectChange:
        return ObjectChange(action, ("v1", kind, "ns", kind.lower()), ("v1", kind, "ns", "old") if action == "renamed" else None, [], "")

    kinds = {"added": "ConfigMap", "changed": "Secret", "removed": "Service", "renamed": "ServiceAccount"}
    app = AppPreview("apps/a", [change(a, k) for a, k in reversed(kinds.items())], [], [])
    line = "apps/a: added ConfigMap 1; changed Secret 1; removed Service 1; renamed ServiceAccount 1\n"
    assert line in text_report([app], "main", "0" * 40)
    header, _, row = table([app])
    cells = dict(zip((h.strip() for h in header.split("|")), (c.strip() for c in row.split("|")), strict=True))
    assert all(cells[action] == f"{kind} 1" for action, kind in kinds.items()), cells


@pytest.mark.parametrize(("raw", "read"), [("", True), ("null", True), (" null\n", True), ("[]", True),
                                           ("nul", False), ("[null]", False), ("{}", False)])
def test_an_application_without_parameters_falls_back_to_its_plugin_env(raw: str, read: bool) -> None:
    """An Application with ``plugin: {}`` (or only ``env``) sends ARGOCD_APP_PARAMETERS as ``null`` (json.Marshal of a
    nil list), and some shells hand it over blank or padded: each is no parameter at all, so the plugin env applies;
    anything else that is not Argo CD's list of parameters is refused, never read as none."""
    environ = {"ARGOCD_APP_PARAMETERS": raw, "ARGOCD_ENV_MEMCACHED_IMAGE": "memcached:1.6.29"}
    if read:
        assert plugin_settings(environ) == {"image": "memcached:1.6.29"}
    else:
        with pytest.raises(PluginInputError, match="^ARGOCD_APP_PARAMETERS is not"):
            plugin_settings(environ)
