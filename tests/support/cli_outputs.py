"""The recorded command-line outputs: every output of the commands that need no cluster (exit code,
stdout, stderr, the files ``--output-dir`` writes), each run as its user runs it (the console
module in a process of its own; ``argocd-*`` as Argo CD's sidecar runs them, tests/support/argocd.py),
in a form compared byte for byte with tests/golden/cli/COMMAND.yaml
(tests/cli/test_recorded_outputs.py compares, ``python -m tests.record_cli_outputs`` records).

Normalised: the temporary folder a run is given (``<tmp>``) and the product's version (``<version>``);
a usage error is kept as its usage line and its message (typer draws it in a box where rich is
installed, plain where not: the test lock has no rich).
An output longer than ``SHOWN`` lines is kept as its first lines, its line count and its digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO
from tests.support.argocd import generate, repo_server_env, run_like_cmp_server
from tests.support.gitrepo import two_commits
from tests.support.layouts import LAYOUTS, lay_out

GOLDEN = REPO / "tests" / "golden" / "cli"
SHOWN = 160
BOX = "\u256d\u256e\u2570\u256f\u2502\u2500"
CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  size: {size}\n"
TWO_NAMESPACES = CR.format(name="a", ns="team1", size=1) + "---\n" + CR.format(name="a", ns="team2", size=2)
WITH_STATUS = CR.format(name="s", ns="default", size=1) + "status: {}\n"
BAD = CR.format(name="b", ns="default", size=-1) + "  sizee: 2\n"
TEAM_CRD = "tests/data/crd-all-keywords.yaml"


def resource_list(*docs: str, config: dict[str, Any] | None = None, annotate: dict[str, str] | None = None) -> str:
    items = []
    for i, doc in enumerate(docs):
        item = yaml.safe_load(doc)
        item.setdefault("metadata", {}).setdefault("annotations", {}).update(
            annotate or {"config.kubernetes.io/index": str(i), "internal.config.kubernetes.io/path": f"crs/{i}.yaml"})
        items.append(item)
    rl: dict[str, Any] = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
    if config is not None:
        rl["functionConfig"] = config
    return json.dumps(rl)


@dataclass(frozen=True)
class Run:
    """One run: the arguments after ``memcached-gitops`` (or, for ``argocd``, the plugin's command),
    what it reads on stdin, the environment it adds, and where it runs: the repository (``repo``),
    a layout of tests/support/layouts.py, or a folder holding ``files``."""

    args: tuple[str, ...]
    stdin: str = ""
    env: dict[str, str] = field(default_factory=dict)
    where: str = "repo"
    files: dict[str, str] = field(default_factory=dict)
    argocd: str = ""  # "generate" or "discover": run as the sidecar runs the plugin
    change: dict[str, str | None] | None = None  # where="git": ``files`` on main, this on the branch (None: deleted)


OVERLAY = "namespace: prod\nnamePrefix: dev-\nresources:\n- ../../base\n"
GIT_BASE = {"apps/cache/cr.yaml": CR.format(name="cache", ns="shop", size=1), "apps/cache/kustomization.yaml": "resources:\n- cr.yaml\n",
            "overlays/prod/kustomization.yaml": OVERLAY.replace("../../base", "../../apps/cache")}
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  k: '{value}'\n"
APP = {"cr.yaml": CR.format(name="cache", ns="shop", size=2), "README.md": "# notes\n"}

RUNS: dict[str, dict[str, Run]] = {
    "validate": {
        "examples, text": Run(("validate", "examples")),
        "examples, json": Run(("validate", "-o", "json", "examples")),
        "bad CRs, text": Run(("validate", "tests/data/bad-crs.yaml")),
        "bad CRs, json": Run(("validate", "-o", "json", "tests/data/bad-crs.yaml")),
        "bad CRs, github": Run(("validate", "-o", "github", "tests/data/bad-crs.yaml")),
        "bad CRs, --no-strict": Run(("validate", "--no-strict", "tests/data/bad-crs.yaml")),
        "stdin": Run(("validate", "-"), stdin=BAD),
        "stdin, empty": Run(("validate", "-"), stdin=""),
        "a status": Run(("validate", "-"), stdin=WITH_STATUS),
        "missing path": Run(("validate", "no/such/file.yaml")),
        "a team CRD": Run(("validate", "--crd", TEAM_CRD, "-"), stdin=CR.format(name="t", ns="x", size=5)),
        "unknown option": Run(("validate", "--no-such-option", "examples")),
        **{f"layout: {name}": Run(("validate", "."), where=name) for name in LAYOUTS},
        **{f"layout: {name}, github": Run(("validate", "-o", "github", "."), where=name) for name in LAYOUTS},
    },
    "render": {
        "examples": Run(("render", "examples/crs")),
        "one CR, json": Run(("render", "-o", "json", "-"), stdin=CR.format(name="a", ns="shop", size=3)),
        "--image": Run(("render", "--image", "mirror.example/memcached:1.6.31", "-"), stdin=CR.format(name="a", ns="shop", size=1)),
        "MEMCACHED_IMAGE": Run(("render", "-"), stdin=CR.format(name="a", ns="shop", size=1),
                               env={"MEMCACHED_IMAGE": "mirror.example/memcached:1.6.32"}),
        "--output-dir": Run(("render", "--output-dir", "out", "in.yaml"), where="files", files={"in.yaml": TWO_NAMESPACES}),
        "--output-dir, an invalid CR": Run(("render", "--output-dir", "out", "in.yaml"), where="files",
                                           files={"in.yaml": TWO_NAMESPACES + "---\n" + BAD}),
        "an invalid CR": Run(("render", "-"), stdin=BAD),
        "a team CRD": Run(("render", "--crd", TEAM_CRD, "-"), stdin=CR.format(name="t", ns="x", size=5)),
        **{f"layout: {name}": Run(("render", "."), where=name) for name in LAYOUTS},
    },
    "krm": {
        "valid": Run(("krm",), stdin=resource_list(CR.format(name="a", ns="shop", size=2))),
        "warning only": Run(("krm",), stdin=resource_list(WITH_STATUS)),
        "an error": Run(("krm",), stdin=resource_list(BAD, CR.format(name="a", ns="shop", size=1))),
        "functionConfig image": Run(("krm",), stdin=resource_list(
            CR.format(name="a", ns="shop", size=1),
            config={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"image": "mirror.example/m:1"}})),
        "legacy path annotation": Run(("krm",), stdin=resource_list(BAD, annotate={"config.kubernetes.io/path": "legacy/x.yaml"})),
        "not a ResourceList": Run(("krm",), stdin="kind: Nope\n"),
    },
    "argocd": {
        "discover, an application": Run((), where="files", files=APP, argocd="discover"),
        "discover, no Memcached": Run((), where="files", files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
                                      argocd="discover"),
        "generate, no plugin section": Run((), where="files", files=APP, argocd="generate"),
        "generate, parameters": Run((), where="files", files=APP, argocd="generate",
                                    env={"plugin": json.dumps({"parameters": [{"name": "image", "string": "mirror.example/m:2"}]})}),
        "generate, an invalid CR": Run((), where="files", files={**APP, "bad.yaml": BAD}, argocd="generate"),
        "generate, a kustomization": Run((), where="files", argocd="generate", files={
            **APP, "kustomization.yaml": "namePrefix: dev-\nresources:\n- cr.yaml\n"}),
        "generate, a kustomization reaching out": Run((), where="files", argocd="generate", files={
            **APP, "kustomization.yaml": "resources:\n- cr.yaml\n- ../../etc/passwd\n"}),
        "generate, a ConfigMap passed through": Run((), where="files", files={**APP, "cm.yaml": CONFIG_MAP.format(value=1)},
                                                    argocd="generate", env={"plugin": json.dumps(
                                                        {"parameters": [{"name": "pass-through-kinds", "string": "ConfigMap"}]})}),
        "generate, the Deployments alone": Run((), where="files", files=APP, argocd="generate", env={"plugin": json.dumps(
            {"parameters": [{"name": "include-input", "string": "false"}]})}),
        **{f"generate, layout: {name}": Run((), where=name, argocd="generate") for name in LAYOUTS},
        **{f"discover, layout: {name}": Run((), where=name, argocd="discover") for name in LAYOUTS},
    },
    "preview": {
        "a size change": Run(("preview", "--base", "main", "apps", "overlays"), where="git", files=GIT_BASE,
                             change={"apps/cache/cr.yaml": CR.format(name="cache", ns="shop", size=2)}),
        "a size change, markdown": Run(("preview", "--base", "main", "--format", "markdown", "apps"), where="git", files=GIT_BASE,
                                       change={"apps/cache/cr.yaml": CR.format(name="cache", ns="shop", size=2)}),
        "a CR added": Run(("preview", "--base", "main", "apps"), where="git", files=GIT_BASE,
                          change={"apps/new/cr.yaml": CR.format(name="new", ns="shop", size=1)}),
        "an application deleted": Run(("preview", "--base", "main", "apps"), where="git", files=GIT_BASE,
                                      change={"apps/cache/cr.yaml": None, "apps/cache/kustomization.yaml": None}),
        "a CR made invalid": Run(("preview", "--base", "main", "apps"), where="git", files=GIT_BASE,
                                 change={"apps/cache/cr.yaml": BAD}),
        "a ConfigMap beside the CR changed": Run(("preview", "--base", "main", "apps"), where="git",
                                                 files={**GIT_BASE, "apps/cache/kustomization.yaml": "resources:\n- cr.yaml\n- cm.yaml\n",
                                                        "apps/cache/cm.yaml": CONFIG_MAP.format(value=1)},
                                                 change={"apps/cache/cm.yaml": CONFIG_MAP.format(value=2)}),
        "no change": Run(("preview", "--base", "main", "apps"), where="git", files=GIT_BASE, change={"README.md": "# notes\n"}),
        "an unknown base": Run(("preview", "--base", "no-such-branch", "apps"), where="git", files=GIT_BASE,
                              change={"README.md": "# notes\n"}),
    },
    "other": {
        "--version": Run(("--version",)),
        "schema": Run(("schema",)),
        "crd": Run(("crd",)),
        "unknown command": Run(("frobnicate",)),
    },
}


def _shown(text: str, tmp: str) -> str | dict[str, Any]:
    text = text.replace(tmp, "<tmp>").replace(str(REPO), "<repo>").replace(_version(), "<version>")
    if text.startswith("Usage: "):  # click's usage error, drawn by rich where installed: its usage line and its error
        lines = [kept for line in text.splitlines() if (kept := line.strip(BOX + " ")) not in ("", "Error")]
        text = "".join(f"{line.removeprefix('Error: ')}\n" for line in lines if not line.startswith("Try "))
    lines = text.splitlines()
    if len(lines) <= SHOWN:
        return text
    return {"first lines": "\n".join(lines[:SHOWN]), "lines": len(lines), "sha256": hashlib.sha256(text.encode()).hexdigest()[:16]}


def _version() -> str:
    from memcached_gitops import __version__
    return __version__


def _place(run: Run, tmp: Path) -> Path:
    if run.where == "repo":
        return REPO
    if run.where in LAYOUTS:
        return lay_out(tmp, run.where)
    if run.where == "git":
        return two_commits(tmp / "repo", dict(run.files), run.change or {})
    for name, text in run.files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


def _process(run: Run, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    if run.argocd == "generate":
        plugin = json.loads(run.env["plugin"]) if "plugin" in run.env else None
        return generate(cwd, repo_server_env(plugin))
    if run.argocd == "discover":
        from tests.support.argocd import plugin_manifest
        return run_like_cmp_server(plugin_manifest()["spec"]["discover"]["find"]["command"], cwd, repo_server_env(None))
    env = {k: v for k, v in os.environ.items() if k not in ("MEMCACHED_IMAGE", "COLUMNS")} | {"COLUMNS": "100", **run.env}
    return subprocess.run([sys.executable, "-m", "memcached_gitops", *run.args], cwd=cwd, input=run.stdin.encode(),
                          capture_output=True, env=env, timeout=120)


def run_one(run: Run) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="cli-"))
    try:
        cwd = _place(run, tmp)
        proc = _process(run, cwd)
        said: dict[str, Any] = {"exit": proc.returncode, "stdout": _shown(proc.stdout.decode(), str(tmp)),
                                "stderr": _shown(proc.stderr.decode(), str(tmp))}
        written = sorted(p for p in (tmp / "out").rglob("*") if p.is_file()) if (tmp / "out").is_dir() else []
        if written:
            said["files"] = {str(p.relative_to(tmp)): _shown(p.read_text(), str(tmp)) for p in written}
        return said
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def record(command: str) -> str:
    """The golden text of one command: each of its runs' outputs (run two at a time)."""
    runs = RUNS[command]
    with ThreadPoolExecutor(max_workers=3) as pool:
        outputs = list(pool.map(run_one, runs.values()))
    return yaml.dump({name: out for name, out in zip(runs, outputs, strict=True)}, Dumper=_Blocks, sort_keys=False,
                     width=160, allow_unicode=True)


class _Blocks(yaml.SafeDumper):
    """Multi-line outputs as YAML literal blocks: the golden file reads as the terminal did."""


def _block(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Blocks.add_representer(str, _block)
