"""The YAML nodes one run parses are bounded (the eighth review): a file's memory follows its nodes,
not its bytes, and ``x: [{},{},...]`` is three bytes a node, so a 2 MB committed file took the Argo
CD plugin past its sidecar's 256 MiB. A run past ``MAX_NODES`` is refused with the file, line and
column where it passed them, one line, exit 1, and the process stays small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from memcached_gitops.foundation.yamlreader import MAX_NODES

from tests.conftest import REPO

GOOD = (REPO / "examples" / "crs" / "memcached-sample.yaml").read_text()
#: The command's own peak (VmHWM: its address space after exec, not the forking test's).
PEAK = ("import sys\nsys.argv = ['memcached-gitops', *sys.argv[1:]]\ntry:\n    from memcached_gitops.entry import main\n"
        "    main()\nfinally:\n    print('VmHWM', next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')),"
        " file=sys.stderr)\n")


def empty_maps(count: int) -> str:
    """A ConfigMap whose field ``x`` is a flow list of ``count`` empty maps: the costliest nodes per byte."""
    return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nx: [" + "{}," * (count - 1) + "{}]\n"


def peak_run(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    proc = subprocess.run([sys.executable, "-c", PEAK, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    kib = int(proc.stderr.rsplit("VmHWM ", 1)[1].split()[0])
    return proc, kib // 1024


@pytest.mark.parametrize("command", [["validate", "."], ["argocd-generate"]])
def test_a_file_just_over_the_node_budget_is_refused_with_file_and_line(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "memcached-sample.yaml").write_text(GOOD)
    # the sample's nodes and the ConfigMap's own come first: the list's items pass the budget by about 50
    (tmp_path / "cm.yaml").write_text(empty_maps(MAX_NODES))
    proc, mib = peak_run(tmp_path, *command)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("VmHWM")]
    assert len(lines) == 1 and lines[0].startswith("error: ./cm.yaml:5:"), lines
    assert f"more than {MAX_NODES} YAML nodes" in lines[0], lines
    assert mib < 160, f"{mib} MiB"


def test_the_budget_is_shared_by_all_the_files_of_a_run(tmp_path: Path) -> None:
    """Two files of 60% of the budget each: the second one passes it."""
    (tmp_path / "a.yaml").write_text(empty_maps(MAX_NODES * 6 // 10))
    (tmp_path / "b.yaml").write_text(empty_maps(MAX_NODES * 6 // 10))
    proc, _ = peak_run(tmp_path, "validate", ".")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "./b.yaml:5:" in proc.stderr and f"more than {MAX_NODES} YAML nodes" in proc.stderr, proc.stderr


def test_a_two_megabyte_file_stays_well_under_the_sidecars_limit(tmp_path: Path) -> None:
    """The review's file: 2 MB of empty maps peaked at 262 MiB in argocd-generate; now refused at 300,000."""
    (tmp_path / "memcached-sample.yaml").write_text(GOOD)
    (tmp_path / "cm.yaml").write_text(empty_maps(2_000_000 // 3))
    proc, mib = peak_run(tmp_path, "argocd-generate")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "YAML nodes" in proc.stderr and mib < 160, (mib, proc.stderr)


def test_ordinary_repositories_stay_within_the_budget() -> None:
    proc, _ = peak_run(REPO, "validate", "examples")
    assert "YAML nodes" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_raised_input_cap_raises_the_node_budget_with_it(tmp_path: Path) -> None:
    """The one setting an operator knows moves both bounds: the run refused at the default cap reads
    through with twice the cap, and the refusal says which setting raises it."""
    (tmp_path / "a.yaml").write_text(empty_maps(MAX_NODES * 6 // 10))
    (tmp_path / "b.yaml").write_text(empty_maps(MAX_NODES * 6 // 10))
    refused, _ = peak_run(tmp_path, "validate", ".")
    assert refused.returncode == 1 and "--max-input-size" in refused.stderr, refused.stderr
    read, _ = peak_run(tmp_path, "validate", "--max-input-size", "20M", ".")
    assert read.returncode == 0 and "YAML nodes" not in read.stderr, read.stderr


def test_previews_applications_share_one_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """preview reads a side's applications under one input budget: their YAML nodes too (two
    applications of 60% of the budget each: the second one is refused, not read on a budget of its own)."""
    from memcached_gitops.foundation.files import InputBudget, parse_size
    from memcached_gitops.schemas import load_crd
    from memcached_gitops.schemas.validator import Validator

    from memcached_gitops.preview import read_side

    for app in ("a", "b"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "cm.yaml").write_text(empty_maps(MAX_NODES * 6 // 10))
    monkeypatch.chdir(tmp_path)
    sides = read_side(["a", "b"], Validator(load_crd()), "memcached:1.6", InputBudget(parse_size("10M")), 20_000)
    assert not sides["a"].problems, sides["a"].problems
    assert any(f"more than {MAX_NODES} YAML nodes" in p for p in sides["b"].problems), sides["b"].problems
