""".ci/install_paths.py reads each install path from the files a user follows, and its every-field
CR still sets every field of the CRD (so a field added to the CRD is installed-path tested too).
The script itself runs in .ci/run, after the suite: it installs from the package index."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from tests.conftest import REPO


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("install_paths", REPO / ".ci" / "install_paths.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fields(schema: dict[str, Any], value: Any, path: str, depth: int) -> list[str]:
    """The schema's fields under ``path`` (to ``depth`` levels, through arrays' items) that ``value`` does not set."""
    missing = []
    for name, sub in (schema.get("properties") or {}).items():
        where = f"{path}.{name}"
        if not isinstance(value, dict) or name not in value:
            missing.append(where)
            continue
        child = value[name]
        if depth > 1 and isinstance(child, list) and isinstance(sub.get("items"), dict):
            missing += [m for m in fields(sub["items"], child[0] if child else {}, where + "[]", depth - 1)]
        elif depth > 1:
            missing += fields(sub, child, where, depth - 1)
    return missing


def test_the_every_field_cr_sets_every_field_of_the_crds_spec() -> None:
    from memcached_gitops.schemas.crd import builtin_crd_text

    crd = yaml.safe_load(builtin_crd_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    cr = yaml.safe_load((REPO / ".ci" / "every-field.yaml").read_text())
    # spec's fields, their fields (a toleration's, each kind of affinity, the metrics' and podMonitor's)
    # and each affinity's two lists: deeper than that are Kubernetes' own types
    assert fields(spec, cr["spec"], "spec", 3) == []


def test_the_every_field_cr_validates_and_renders() -> None:
    cr = str(REPO / ".ci" / "every-field.yaml")
    for command in ("validate", "render"):
        proc = subprocess.run([sys.executable, "-m", "memcached_gitops", command, cr], capture_output=True, text=True)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_the_paths_are_read_from_the_files_users_follow() -> None:
    paths = script()
    readme = (REPO / "README.md").read_text()
    assert paths.readme_install(readme).startswith("python3 -m venv .venv && .venv/bin/pip install .")
    assert yaml.safe_load(paths.readme_example(readme))["kind"] == "Memcached"
    stages = paths.dockerfile_stages((REPO / "Dockerfile").read_text())
    assert len(stages) == 2 and all(any("pip install" in c for c in stage) for stage in stages)
    steps = paths.action_steps(REPO)
    assert {"Validate", "render"} <= set(steps) and any(str(n).startswith("Install") for n in steps)


def test_a_stage_that_fails_is_a_failure_with_its_words(tmp_path: Path) -> None:
    paths = script()
    try:
        paths.sh("echo out; echo 'Traceback (most recent call last):' >&2", tmp_path)
    except paths.Failed as exc:
        assert "Traceback" in str(exc)
    else:
        raise AssertionError("a traceback with exit 0 must fail the path")
