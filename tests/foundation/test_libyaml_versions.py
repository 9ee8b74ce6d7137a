"""One reading of deep documents under every libyaml the allowed PyYAML wheels bundle (issue 20).

PyYAML 6.0.4's wheels bundle libyaml 0.2.6, which refuses more than 1,000 nested levels by
default, flow and block counted together; 6.0.3's bundle libyaml 0.2.5, which has no limit. The
loader lifts 0.2.6's limit (``yamlreader.lift_libyaml_nest_limit``) so that kubectl's rule alone
decides. Each PyYAML here is installed, hash-checked, from a lock (the one CI installs, and
requirements/oldest-pyyaml.txt) into a folder of its own, and the installed loader reads the same
documents under it in a child process: a new libyaml that reads them differently fails this test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from memcached_gitops.foundation.yamlreader import DEPTH_ERROR, JSON_DEPTH_ERROR

from tests.locks import OLDEST_PYYAML_LOCK, TEST_LOCK, read_lock

CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: deep}\n"


def _levels(block: int, flow: int) -> str:
    """``x:`` then ``block`` compact block sequences then ``flow`` flow sequences: 1 + block + flow levels."""
    return CR + "x:\n" + "- " * block + ("[" * flow + "]" * flow if flow else "1") + "\n"


#: name: (document, verdict); a verdict is ["read", documents] or [message, line, column], where the
#: column is the offending collection's ("x: " takes three columns, each "- " two, each "[" one).
CASES: dict[str, tuple[str, list[Any]]] = {
    # the document's mapping and 9,999 flow mappings: the 10,000 levels kubectl's JSON decoding takes
    "flow-10000": (CR + "data: " + "{a: " * 9_999 + "1" + "}" * 9_999 + "\n", ["read", 1]),
    "flow-10001": (CR + "x: " + "[" * 10_001 + "]" * 10_001 + "\n", [DEPTH_ERROR, 4, 3 + 10_001]),
    # "- " at the key's column is an indentless sequence: 9,999 sequences are 10,000 levels in all
    "block-10000": (_levels(9_999, 0), ["read", 1]),
    "block-10001": (_levels(10_000, 0), [JSON_DEPTH_ERROR, 5, 2 * 10_000 - 1]),
    # the 10,001st sequence is the scanner's 10,001st indentation (the first is indentless)
    "block-beyond-scanner": (_levels(10_002, 0), [DEPTH_ERROR, 5, 2 * 10_001 - 1]),
    # over libyaml 0.2.6's default of 1,000 levels, block and flow together, and within kubectl's
    "block-and-flow-10000": (_levels(4_999, 5_000), ["read", 1]),
    "block-and-flow-12001": (_levels(6_000, 6_000), [JSON_DEPTH_ERROR, 5, 2 * 6_000 + 4_000]),
    "block-and-flow-20001": (_levels(9_999, 10_001), [DEPTH_ERROR, 5, 2 * 9_999 + 10_001]),
    # an unclosed line of 50,000: refused at the 10,001st, far before libyaml's own limit
    "one-line-50000": (CR + "x: " + "[" * 50_000 + "\n", [DEPTH_ERROR, 4, 3 + 10_001]),
}

PROBE = """
import json, sys
import yaml
from yaml import _yaml
from memcached_gitops.foundation.yamlreader import YAMLInputError, iter_documents
if hasattr(_yaml, "_set_max_nest_level"):
    _yaml._set_max_nest_level(1000)  # libyaml 0.2.6's default, as another library in the process may set it
verdicts = {}
for name, text in json.load(sys.stdin).items():
    try:
        verdicts[name] = ["read", len(list(iter_documents(text)))]
    except YAMLInputError as exc:
        verdicts[name] = [exc.message, exc.line, exc.column]
print(json.dumps({"pyyaml": yaml.__version__, "libyaml": _yaml.get_version_string(), "module": yaml.__file__,
                  "verdicts": verdicts}))
"""


@cache
def _probe(lock: Path, scratch: Path) -> dict[str, Any]:
    """The loader's verdicts with the PyYAML ``lock`` pins, installed alone into a folder of its own."""
    pin = read_lock(lock)["pyyaml"]
    target = scratch / f"pyyaml-{pin.version}"
    requirement = scratch / f"pyyaml-{pin.version}.txt"
    requirement.write_text(pin.text)
    # the wheel, never a build from source: a wheel bundles its own libyaml, which is what is tested
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--only-binary", ":all:", "--require-hashes", "--target", target, "-r", requirement], check=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps({k: t for k, (t, _) in CASES.items()}),
                         capture_output=True, text=True, env=env, cwd=scratch, check=True)
    result = json.loads(out.stdout)
    assert result["pyyaml"] == pin.version and Path(result["module"]).is_relative_to(target), result
    return result


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pyyaml")


@pytest.mark.parametrize("lock", [TEST_LOCK, OLDEST_PYYAML_LOCK], ids=lambda p: p.name)
def test_deep_documents_are_read_as_kubectl_reads_them_under_each_locked_pyyaml(lock: Path, scratch: Path) -> None:
    verdicts = _probe(lock, scratch)["verdicts"]
    assert verdicts == {name: verdict for name, (_, verdict) in CASES.items()}


def test_the_locks_cover_two_libyaml_versions(scratch: Path) -> None:
    # the oldest lock is worth its download only while it bundles another libyaml than CI's
    versions = {_probe(lock, scratch)["libyaml"] for lock in (TEST_LOCK, OLDEST_PYYAML_LOCK)}
    assert len(versions) == 2, versions

