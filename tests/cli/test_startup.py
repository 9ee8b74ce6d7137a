"""Start-up: the plain render/validate path that skips typer and click, and the CRD shipped as data.

Times are measured by bench/startup.py, never asserted here; these tests hold the fast path to the
same behaviour as the full command line, and the derived data to its source.
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from memcached_gitops.schemas import load_crd
from memcached_gitops.schemas.crd import CRD_DATA, HERE, builtin_crd_data, builtin_crd_text, parse_crd

from memcached_gitops import cli, commands
from memcached_gitops.entry import plain_invocation
from tests.conftest import DATA, REPO

EXAMPLES = REPO / "examples" / "crs"
PROBE = """
import runpy, sys
sys.argv = ["memcached-gitops", *sys.argv[1:]]
try:
    RUN
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"typer", "click", "kubernetes"})
sys.stderr.write("\\nEXIT %s LOADED %s" % (code, ",".join(loaded)))
"""
ENTRY = PROBE.replace("RUN", "runpy.run_module('memcached_gitops', run_name='__main__')")
FULL_CLI = PROBE.replace("RUN", "from memcached_gitops.cli import main; main()")


def _probe(script: str, *args: str, stdin: bytes = b"") -> tuple[int, str, str, str]:
    """(exit code, stdout, stderr, the frameworks loaded) of one run of the command line."""
    proc = subprocess.run([sys.executable, "-c", script, *args], input=stdin, capture_output=True, cwd=REPO, timeout=60)
    stderr, _, tail = proc.stderr.decode().rpartition("\nEXIT ")
    code, _, loaded = tail.partition(" LOADED ")
    return int(code or 0), proc.stdout.decode(), stderr, loaded


def test_the_shipped_crd_data_is_the_crd_yaml() -> None:
    assert (HERE / CRD_DATA).read_text() == builtin_crd_data(), "schemas/memcached-crd.json is stale: run `just crd-data`"
    from_yaml = parse_crd(builtin_crd_text(), load_crd().source)
    assert load_crd() == from_yaml


@pytest.mark.parametrize("args", [["validate", str(EXAMPLES)], ["render", str(EXAMPLES / "memcached-sample.yaml")],
                                  ["validate", "-"]])
def test_plain_render_and_validate_load_neither_typer_nor_click(args: list[str]) -> None:
    code, _, _, loaded = _probe(ENTRY, *args, stdin=(EXAMPLES / "memcached-sample.yaml").read_bytes())
    assert code == 0 and loaded == ""


def test_options_and_other_commands_go_through_the_full_command_line() -> None:
    code, out, _, loaded = _probe(ENTRY, "render", "--image", "memcached:1.6.29", str(EXAMPLES / "memcached-sample.yaml"))
    assert code == 0 and "image: memcached:1.6.29" in out and loaded == "click,typer"
    code, out, _, loaded = _probe(ENTRY, "validate", "--help")
    assert code == 0 and "--format" in out and loaded == "click,typer"


@pytest.mark.parametrize("args, expected", [
    (["validate", "a.yaml"], True), (["render", "a", "b", "-"], True), (["render"], False),
    (["render", "--help"], False), (["validate", "-o", "json", "a"], False), (["schema"], False), ([], False),
    (["krm", "x"], False), (["render", "a", "--no-strict"], False),
    (["validate", "--", "--crd=evil.yaml", "a"], True), (["validate", "--"], False), (["render", "a", "--", "b"], False),
])
def test_which_invocations_are_plain(args: list[str], expected: bool) -> None:
    assert plain_invocation(args) is expected


CASES = {
    "valid directory": (["validate", str(EXAMPLES)], b""),
    "invalid file": (["validate", str(DATA / "bad-crs.yaml")], b""),
    "render invalid": (["render", str(DATA / "bad-crs.yaml")], b""),
    "render directory": (["render", str(EXAMPLES)], b""),
    "stdin": (["render", "-"], (EXAMPLES / "variants.yaml").read_bytes()),
    "empty stdin": (["validate", "-"], b""),
    "missing file": (["validate", "no-such-file.yaml"], b""),
    "malformed YAML": (["render", "-"], b"a: [\n"),
}


@pytest.mark.parametrize("case", CASES)
def test_the_plain_path_behaves_as_the_full_command_line(case: str) -> None:
    args, stdin = CASES[case]
    fast, full = _probe(ENTRY, *args, stdin=stdin), _probe(FULL_CLI, *args, stdin=stdin)
    assert fast[:3] == full[:3]
    assert fast[3] == "" and full[3] == "click,typer"


@pytest.mark.parametrize("command, work", [(cli.validate, commands.validate_files), (cli.render, commands.render_files)])
def test_the_plain_path_uses_the_command_lines_defaults(command, work) -> None:
    def defaults(fn) -> dict[str, object]:
        return {n: p.default for n, p in inspect.signature(fn).parameters.items()}

    assert defaults(work) == defaults(command)

