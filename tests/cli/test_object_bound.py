"""A rendering run holds at most --max-objects objects (default 20,000; MEMCACHED_GITOPS_MAX_OBJECTS).

Tiny CRs render to about 40 times their size, so the 10M input cap alone let one repository take
the Argo CD plugin past its sidecar's 256Mi (25,000 CRs: 591 MiB). The bound is checked as the
objects are made, so a refused run stops early; bench/generate_memory.py prints the peak against
the input (84 MiB at the bound, whatever the input).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import assert_clean_failure, run


def crs(n: int) -> str:
    return "---\n".join(f"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: c{i}}}\nspec: {{size: 2}}\n"
                        for i in range(n))


@pytest.mark.parametrize("command", [["render"], ["argocd-generate"], ["render", "-o", "json"]])
def test_a_run_past_the_bound_is_refused_with_where_it_crossed(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "crs.yaml").write_text(crs(30))  # 4 objects each: the CR, a Deployment, a Service, a budget
    proc = run(*command, str(tmp_path), env={"MEMCACHED_GITOPS_MAX_OBJECTS": "100"})
    err = assert_clean_failure(proc)
    assert proc.stdout == b"" and "crs.yaml:" in err and "more than 100 objects" in err and len(err.splitlines()) == 1
    assert run(*command, str(tmp_path), env={"MEMCACHED_GITOPS_MAX_OBJECTS": "120"}).returncode == 0


def test_the_default_bound_leaves_ordinary_repositories_alone_and_validate_unbounded(tmp_path: Path) -> None:
    (tmp_path / "crs.yaml").write_text(crs(200))
    assert run("render", str(tmp_path)).returncode == 0
    assert run("validate", str(tmp_path), env={"MEMCACHED_GITOPS_MAX_OBJECTS": "10"}).returncode == 0, "validate renders nothing"


@pytest.mark.parametrize("value", ["lots", "0"])
def test_a_bad_bound_is_a_usage_error(tmp_path: Path, value: str) -> None:
    (tmp_path / "crs.yaml").write_text(crs(1))
    assert_clean_failure(run("render", str(tmp_path), env={"MEMCACHED_GITOPS_MAX_OBJECTS": value}), code=2)


@pytest.mark.parametrize("command", [["render"], ["argocd-generate"]])
def test_the_option_outranks_the_environment_both_ways(tmp_path: Path, command: list[str]) -> None:
    """--max-objects, when given, is the bound whatever MEMCACHED_GITOPS_MAX_OBJECTS says (the variable is
    the default for runs that give no option, as kubectl's flags outrank its KUBECONFIG)."""
    (tmp_path / "crs.yaml").write_text(crs(30))  # 120 objects
    assert run(*command, "--max-objects", "120", str(tmp_path), env={"MEMCACHED_GITOPS_MAX_OBJECTS": "1"}).returncode == 0
    err = assert_clean_failure(run(*command, "--max-objects", "100", str(tmp_path), env={"MEMCACHED_GITOPS_MAX_OBJECTS": "500"}))
    assert "more than 100 objects" in err, err
