"""The composite GitHub Action (action.yml): valid metadata, and its steps' scripts run as a runner runs them.

The runner is imitated for what the action uses and nothing more: ``${{ }}`` expressions in a
step's ``env`` and ``if`` (``inputs.*``, ``runner.temp``, ``steps.*.outputs.*``, ``!= ''``; any other
expression fails the test), each ``run`` script under GitHub's bash template
(``bash --noprofile --norc -eo pipefail {0}``), GITHUB_ACTION_PATH pointing at a copy of the
package's sources, GITHUB_OUTPUT and RUNNER_TEMP in a temporary directory, the workspace as the
working directory, and a step's failure ending the job. The install step installs from the package
index, as on a runner.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import BAD_CR as BAD
from tests.conftest import GOOD_CR as GOOD
from tests.conftest import REPO
from tests.support.action import ACTION, Runner, permissive_crd


def workspace(tmp_path: Path, **files: str) -> Path:
    (tmp_path / "apps").mkdir()
    for name, text in files.items():
        (tmp_path / "apps" / f"{name}.yaml").write_text(text)
    return tmp_path


def test_action_yml_is_valid_against_schemastore_schema() -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions",
                           str(REPO / "action.yml")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_action_steps_follow_the_composite_rules() -> None:
    """What the schema cannot say: inputs used exist, and no input is spliced into a script's text."""
    assert ACTION["runs"]["using"] == "composite"
    names = set(ACTION["inputs"])
    for name in names:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name)
    used: set[str] = set()
    for step in ACTION["runs"]["steps"]:
        assert step["shell"] == "bash"
        assert "${{" not in step["run"], "inputs reach scripts through env (GitHub's script-injection guidance)"
        for value in list((step.get("env") or {}).values()) + [step.get("if", "")]:
            used |= set(re.findall(r"inputs\.([A-Za-z_][\w-]*)", str(value)))
    assert used == names


def test_action_validates_and_renders(runner: Runner, tmp_path: Path) -> None:
    ws = workspace(tmp_path, good=GOOD)
    code, out, outputs = runner.run(ws, steps=slice(1, None), paths="apps", render_to="out/rendered.yaml")
    assert code == 0, out
    assert outputs == {"rendered": "out/rendered.yaml", "preview": ""}
    docs: list[dict[str, Any]] = list(yaml.safe_load_all((ws / "out" / "rendered.yaml").read_text()))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Deployment", "good"), ("Service", "good-memcached"), ("PodDisruptionBudget", "good-memcached")]
    assert list((ws / "out").iterdir()) == [ws / "out" / "rendered.yaml"]


def test_action_annotates_a_bad_cr_and_renders_nothing(runner: Runner, tmp_path: Path) -> None:
    ws = workspace(tmp_path, good=GOOD, bad=BAD)
    code, out, _ = runner.run(ws, steps=slice(1, None), paths="apps", render_to="out/rendered.yaml")
    assert code == 1
    assert "::error file=apps/bad.yaml,line=7,col=3,title=Memcached/bad::spec.sizee: unknown field" in out
    assert not (ws / "out").exists()


def test_action_without_render_to_only_validates(runner: Runner, tmp_path: Path) -> None:
    ws = workspace(tmp_path, good=GOOD)
    code, out, outputs = runner.run(ws, steps=slice(1, None), paths="apps/good.yaml apps")
    assert code == 0, out
    assert outputs == {"rendered": "", "preview": ""}
    assert sorted(p.name for p in ws.iterdir()) == ["apps"]


def test_a_path_that_looks_like_an_option_is_a_path(runner: Runner, tmp_path: Path) -> None:
    """A file named ``--crd=evil.yaml`` beside a permissive evil.yaml must not turn a failing CR into a pass."""
    ws = workspace(tmp_path, bad=BAD)
    (ws / "evil.yaml").write_text(permissive_crd())
    (ws / "--crd=evil.yaml").write_text(GOOD)
    code, out, _ = runner.run(ws, steps=slice(1, None), paths="--crd=evil.yaml apps", render_to="out/r.yaml")
    assert code == 1, out
    assert "::error file=apps/bad.yaml,line=7,col=3,title=Memcached/bad::spec.sizee: unknown field" in out
    assert not (ws / "out").exists()


def test_a_render_to_with_a_line_break_cannot_add_outputs(runner: Runner, tmp_path: Path) -> None:
    ws = workspace(tmp_path, good=GOOD)
    code, out, _ = runner.run(ws, steps=slice(1, None), paths="apps", render_to="out/r.yaml\nadmin=true")
    assert code == 2, out
    assert "render-to must be one line" in out
    assert not (ws / "out").exists()


def pull_request(ws: Path, **changed: str) -> Path:
    """``ws`` committed on ``main``, then a branch ``pr`` with ``changed`` (apps/NAME.yaml) committed: a pull request's checkout."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-q", "--allow-empty", "-m", "empty")
    git("add", "-A")
    git("-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "base")
    git("checkout", "-qb", "pr")
    for name, text in changed.items():
        (ws / "apps" / f"{name}.yaml").write_text(text)
    git("add", "-A")
    git("-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "pull request")
    return ws


def test_action_previews_a_pull_request_in_the_job_summary(runner: Runner, tmp_path: Path) -> None:
    ws = pull_request(workspace(tmp_path, good=GOOD), good=GOOD.replace("size: 2", "size: 1"))
    (runner.temp / "step-summary.md").write_text("## an earlier step's summary\n")
    code, out, outputs = runner.run(ws, steps=slice(1, None), paths="apps", preview_base="main")
    assert code == 0, out
    preview = Path(outputs["preview"]).read_text()
    assert preview.startswith("### memcached-gitops preview\n")
    row = "| <code>apps</code> |  | Deployment 1, Memcached 1 | PodDisruptionBudget 1 |  | Memcached good: spec.size: 2 -&gt; 1 |"
    assert row in preview
    assert (runner.temp / "step-summary.md").read_text() == "## an earlier step's summary\n" + preview
    assert outputs["rendered"] == ""


def test_action_previews_bad_input_and_validate_still_fails(runner: Runner, tmp_path: Path) -> None:
    ws = pull_request(workspace(tmp_path, good=GOOD), good=BAD.replace("name: bad", "name: good"))
    (runner.temp / "step-summary.md").write_text("")
    code, out, _ = runner.run(ws, steps=slice(1, None), paths="apps", preview_base="main")
    assert code == 1
    assert "::error file=apps/good.yaml,line=7,col=3,title=Memcached/good::spec.sizee: unknown field" in out
    summary = (runner.temp / "step-summary.md").read_text()
    assert "| <code>apps</code> | :x: cannot be read (1 problem(s), below) |" in summary
    assert "apps/good.yaml:7:3: Memcached/good: spec.sizee: unknown field" in summary


@pytest.mark.parametrize("base", ["no-such-branch", "--output=x"])
def test_action_preview_that_cannot_be_made_fails_the_step(runner: Runner, tmp_path: Path, base: str) -> None:
    ws = pull_request(workspace(tmp_path, good=GOOD), good=GOOD.replace("size: 2", "size: 1"))
    (runner.temp / "step-summary.md").write_text("")
    code, out, _ = runner.run(ws, steps=slice(1, None), paths="apps", preview_base=base)
    assert code == 2
    assert "error: --base no-such-branch: no such branch" in out if base == "no-such-branch" else "not a branch or commit" in out
    assert (runner.temp / "step-summary.md").read_text() == ""
    assert not (ws / "x").exists()


def test_the_action_installs_the_hash_checked_lock_never_todays_releases() -> None:
    install = ACTION["runs"]["steps"][0]["run"]
    pip_lines = [line for line in install.splitlines() if "pip install" in line]
    assert len(pip_lines) == 2
    assert '--require-hashes -r "$GITHUB_ACTION_PATH/requirements/runtime.txt"' in pip_lines[0]
    assert "--no-deps --no-build-isolation" in pip_lines[1], "the package adds no unlocked dependency, nor an unlocked setuptools"


def test_a_kustomization_reaching_outside_the_workspace_fails_the_action(runner: Runner, tmp_path: Path) -> None:
    """Issue 46: ``resources: [../../../outside]`` in a pull request's kustomization was built by
    validate on the runner; the Action now fails on it, annotating the kustomization's line."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "kustomization.yaml").write_text("resources: [secret.yaml]\n")
    (tmp_path / "outside" / "secret.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s3cr3t-value}\n")
    (tmp_path / "ws").mkdir()
    ws = workspace(tmp_path / "ws", good=GOOD)
    (ws / "apps" / "kustomization.yaml").write_text("resources:\n- good.yaml\n- ../../outside\n")
    code, out, _ = runner.run(ws, steps=slice(1, None), paths="apps", render_to="out/r.yaml")
    assert code == 1, out
    assert "resources[1]: '../../outside' leaves the root" in out, out
    assert "s3cr3t-value" not in out and not (ws / "out").exists()


def test_a_kustomization_that_cannot_be_built_fails_the_action_unless_strict_build_is_false(runner: Runner, tmp_path: Path) -> None:
    # a typo in resources: fails Argo CD's and Flux's sync, so by default it fails the check too
    ws = workspace(tmp_path, good=GOOD)
    (ws / "apps" / "prod").mkdir()
    (ws / "apps" / "prod" / "kustomization.yaml").write_text("resources: [../good.yaml, ../godo.yaml]\n")
    code, out, _ = runner.run(ws, steps=slice(1, None), paths=".")
    assert code == 1 and "::error file=apps/prod/kustomization.yaml,line=1" in out and "not built" in out, out
    code, out, _ = runner.run(ws, steps=slice(1, None), paths=".", strict_build="false")
    assert code == 0 and "::warning file=apps/prod/kustomization.yaml,line=1" in out, out


@pytest.mark.parametrize(("link", "render_to"), [
    ("rendered", "rendered/all.yaml"),              # a folder of render-to is a link
    ("rendered/all.yaml.tmp", "rendered/all.yaml"),  # the temporary file the step once wrote
    ("rendered/all.yaml", "rendered/all.yaml"),      # the file itself
])
def test_a_committed_symlink_cannot_take_render_to_outside_the_workspace(runner: Runner, tmp_path: Path, link: str,
                                                                         render_to: str) -> None:
    """The Render step once wrote ``> "$RENDER_TO.tmp"``: a committed link of that name (or a linked
    folder) was followed and the file outside the workspace overwritten."""
    ws = workspace(tmp_path, good=GOOD)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("untouched\n")
    (ws / link).parent.mkdir(parents=True, exist_ok=True)
    (ws / link).symlink_to(victim if link == "rendered" else victim / "keep")
    code, out, _ = runner.run(ws, steps=slice(1, None), paths="apps", render_to=render_to)
    assert sorted(p.name for p in victim.iterdir()) == ["keep"], "a file was written outside the workspace"
    assert (victim / "keep").read_text() == "untouched\n", "a file outside the workspace was overwritten"
    if link == "rendered/all.yaml.tmp":  # no longer a name the step uses: the render goes where it was asked
        assert code == 0, out
        assert "kind: Deployment" in (ws / render_to).read_text()
    else:
        assert code == 2, out
        assert "is a symbolic link" in out
