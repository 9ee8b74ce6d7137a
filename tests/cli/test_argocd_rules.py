"""The Argo CD plugin's rules as functions, in this process (the plugin's own runs, as the cmp-server
starts them, are in tests/delivery/test_argocd_plugin.py; these are the ones a mutant can be seen by)."""

from __future__ import annotations

import io

import pytest
from memcached_gitops.foundation.files import InputError
from memcached_gitops.foundation.yamlreader import NodeBudget
from memcached_gitops.schemas import Validator, load_crd

from memcached_gitops.argocd import PassThrough, PluginInputError, first_memcached, pass_through
from memcached_gitops.pipeline import kind_as_listed

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
