"""The GitHub Action (action.yml) run as a runner runs it: its composite steps in order, in bash, with
the inputs, outputs and the GITHUB_* files a runner gives; and the permissive CRD an attacker's
``--crd`` would bring."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml
from memcached_gitops.schemas.crd import builtin_crd_text

from tests.conftest import REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text())


EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


class Runner:
    """Runs the action's steps in order, with the inputs given (defaults from action.yml)."""

    def __init__(self, action_path: Path, temp: Path) -> None:
        self.action_path, self.temp = action_path, temp

    def value(self, expression: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
        if m := re.fullmatch(r"inputs\.([A-Za-z_][\w-]*)", expression):
            return inputs[m[1]]
        if expression == "runner.temp":
            return str(self.temp)
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
            return outputs.get(m[1], {}).get(m[2], "")
        raise AssertionError(f"expression the test runner does not know: {expression}")

    def substitute(self, text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
        return EXPRESSION.sub(lambda m: self.value(m[1], inputs, outputs), text)

    def condition(self, expression: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> bool:
        expression = EXPRESSION.sub(lambda m: m[1], expression)
        m = re.fullmatch(r"(\S+) != ''", expression)
        assert m, f"condition the test runner does not know: {expression}"
        return self.value(m[1], inputs, outputs) != ""

    def run(self, workspace: Path, steps: slice = slice(None), **given: str) -> tuple[int, str, dict[str, str]]:
        """(exit code of the first failing step or 0, stdout of all steps, the action's outputs)."""
        inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        inputs.update({k.replace("_", "-"): v for k, v in given.items()})
        outputs: dict[str, dict[str, str]] = {}
        stdout = ""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        for step in ACTION["runs"]["steps"][steps]:
            if "if" in step and not self.condition(step["if"], inputs, outputs):
                continue
            output_file = self.temp / f"output-{step.get('id', 'step')}"
            output_file.write_text("")
            env = {**base, "GITHUB_ACTION_PATH": str(self.action_path), "RUNNER_TEMP": str(self.temp),
                   "GITHUB_OUTPUT": str(output_file), "GITHUB_WORKSPACE": str(workspace),
                   "GITHUB_STEP_SUMMARY": str(self.temp / "step-summary.md")}
            env.update({k: self.substitute(str(v), inputs, outputs) for k, v in (step.get("env") or {}).items()})
            script = self.temp / "step.sh"
            script.write_text(step["run"])
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script], cwd=workspace, env=env,
                                  capture_output=True, text=True, timeout=600)
            stdout += proc.stdout
            if proc.returncode:
                return proc.returncode, stdout + proc.stderr, {}
            if "id" in step:
                outputs[step["id"]] = dict(line.split("=", 1) for line in output_file.read_text().splitlines())
        action_outputs = {name: self.substitute(spec["value"], inputs, outputs) for name, spec in ACTION["outputs"].items()}
        return 0, stdout, action_outputs


def permissive_crd() -> str:
    """The built-in CRD with every field of spec allowed: what an attacker's ``--crd`` would bring."""
    crd = yaml.safe_load(builtin_crd_text())
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] = True
    return yaml.safe_dump(crd)
