"""Every form of path each client sends, against each repository layout, with one invalid CR in each.

The clients do not name paths as the walker does: pre-commit passes the changed files relative to
the repository's root, with the root's own ``kustomization.yaml`` alone and without a directory
(a ``"" `` directory would make ``kustomize build ""``, which fails and is passed over with a
warning: the invalid CR would pass the hook); the Action passes its ``paths`` input, ``.`` or a
list, split by bash's ``read -a``; Argo CD runs ``argocd-generate .`` in the application's path,
the repository's root or a directory below it; kpt sends the resources on stdin, each annotated
with its path. Each layout here holds exactly one invalid CR (an overlay's patch adds an unknown
field, or a file named like an option holds it), so every form must fail and say so; the same
layout without the fault passes every form.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.support.argocd import generate, repo_server_env
from tests.support.layouts import FAULT, LAYOUTS, lay_out

#: the application's path Argo CD is given in each layout (where its kustomization or its files are)
APP_PATH = {"a kustomization at the root": ".", "an overlay below the root": "overlays/prod", "files named like options": ".",
            "an application below the root": "apps/caches"}
#: what the Action's ``paths`` is set to beside the default ``.``
ACTION_LIST = {"a kustomization at the root": "kustomization.yaml cr.yaml", "an overlay below the root": "overlays/prod base",
               "files named like options": "-o.yaml good.yaml", "an application below the root": "apps/caches notes.yaml"}
CLI = str(Path(sys.executable).parent / "memcached-gitops")


def hook_files(root: Path) -> list[str]:
    """What pre-commit passes for ``types: [yaml]`` after a commit of every file (--all-files): each
    path relative to the root, as ``git ls-files`` names it (a root file has no directory)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml"))


def run(argv: list[str], cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, input=None if stdin is None else stdin.decode(), capture_output=True, text=True, timeout=120,
                          env=env)


def assert_fails(proc: subprocess.CompletedProcess[str], form: str) -> None:
    assert proc.returncode == 1 and FAULT in proc.stdout + proc.stderr, f"{form}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_hooks_file_forms(tmp_path: Path, layout: str) -> None:
    """The hook's entry (``memcached-gitops validate --``) with every file, and with each kustomization
    file alone (a commit that changes only it), each relative to the root."""
    root = lay_out(tmp_path, layout)
    assert_fails(run([CLI, "validate", "--", *hook_files(root)], root), "every file")
    for kustomization in [f for f in hook_files(root) if os.path.basename(f) == "kustomization.yaml" and "base" not in f]:
        assert_fails(run([CLI, "validate", "--", kustomization], root), f"{kustomization} alone")
    (tmp_path / "clean").mkdir()
    clean = lay_out(tmp_path / "clean", layout, faulty=False)
    proc = run([CLI, "validate", "--", *hook_files(clean)], clean)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0 and " 0 warning(s)" in said and "passed over" not in said, said


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("form", ["the root", "every file"])
def test_each_cr_is_counted_once_whatever_names_it(tmp_path: Path, layout: str, form: str) -> None:
    """A kustomization's build is checked beside the files it reads; the CRs it builds are those files'
    again, so the count a person reads ("N Memcached valid", ``validCount``) is the number of CRs in
    the files, named by the root or file by file (the hook). (A kustomization's folder named as a
    path of its own is a build checked in its own right, and counts its CRs: ``validate base
    overlays/prod`` counts the base's CR and the overlay's.)"""
    root = lay_out(tmp_path, layout, faulty=False)
    crs = sum(text.count("\nkind: Memcached\n") for text in LAYOUTS[layout].values())
    files = hook_files(root)
    named = {"the root": ["."], "every file": files}[form]
    proc = run([CLI, "validate", "--format", "json", "--", *named], root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["validCount"] == crs, proc.stdout
    assert f"{crs} Memcached valid," in proc.stderr, proc.stderr


@pytest.mark.parametrize("layout", [name for name, path in APP_PATH.items() if path != "."])
def test_a_folder_named_beside_the_walk_that_meets_it_is_built_once(tmp_path: Path, layout: str) -> None:
    """``validate . overlays/prod``: the walk of ``.`` meets the folder the command line names as well;
    it is one build, its findings said once (the walk knows it by its resolved path, the command line
    as typed)."""
    root = lay_out(tmp_path, layout)
    proc = run([CLI, "validate", "--format", "json", "--", ".", APP_PATH[layout]], root)
    assert_fails(proc, f". {APP_PATH[layout]}")
    builds = [(os.path.normpath(f["file"].removesuffix(" (kustomize build)")), f["line"], f["message"])
              for f in json.loads(proc.stdout)["findings"] if f["file"].endswith(" (kustomize build)")]
    assert builds and len(builds) == len(set(builds)), builds


def action_step() -> str:
    """The Action's validate step, as action.yml has it."""
    action = yaml.safe_load((REPO / "action.yml").read_text())
    return next(s["run"] for s in action["runs"]["steps"] if s.get("name") == "Validate")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("paths", [".", "list"])
def test_the_actions_paths(tmp_path: Path, layout: str, paths: str) -> None:
    root = lay_out(tmp_path, layout)
    script = tmp_path.parent / f"{tmp_path.name}-step.sh"
    script.write_text(action_step())
    env = {**os.environ, "MEMCACHED_GITOPS": CLI, "INPUT_PATHS": ACTION_LIST[layout] if paths == "list" else "."}
    proc = run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], root, env=env)
    assert_fails(proc, f"paths: {env['INPUT_PATHS']}")
    assert "::error " in proc.stdout, proc.stdout


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("where", ["root", "app path"])
def test_argo_cds_generate_in_the_application_path(tmp_path: Path, layout: str, where: str) -> None:
    root = lay_out(tmp_path, layout)
    app = root if where == "root" else root / APP_PATH[layout]
    proc = generate(app, repo_server_env(None))
    out, err = proc.stdout.decode(), proc.stderr.decode()
    if where == "root" and APP_PATH[layout] != ".":
        # the root is no kustomization: its files are read (the CR valid), the kustomization below passed over
        assert proc.returncode == 0 and "Deployment" in out, err
        return
    if where == "app path" and layout == "an overlay below the root":
        # the application's path is the build's root: a base above it is refused, naming the file and field
        assert proc.returncode != 0 and out == "" and "kustomization.yaml:3:" in err and "leaves the root" in err, err
        return
    assert proc.returncode != 0 and out == "" and FAULT in err, (proc.returncode, out, err)


#: How a producer names an item's file: kpt v1 and kustomize's kyaml write both annotations (the
#: internal one, and the legacy one kept for older functions); kpt v0 and kustomize before v4.2 wrote
#: only the legacy ``config.kubernetes.io/path``; a producer may send the internal one alone.
PATH_FORMS = {"both": ("internal.config.kubernetes.io/path", "config.kubernetes.io/path"),
              "legacy only": ("config.kubernetes.io/path",), "internal only": ("internal.config.kubernetes.io/path",)}


@pytest.mark.parametrize("form", PATH_FORMS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_kpt_sends_the_resources_on_stdin(tmp_path: Path, layout: str, form: str) -> None:
    """kpt runs no kustomize: the function sees the package's resources, each with its path in the
    annotations of ``form``; the fault is its only where a file holds it, and its result and its
    line on stderr name that file."""
    root = lay_out(tmp_path, layout)
    items = []
    for name in (f for f in hook_files(root) if os.path.basename(f) != "kustomization.yaml"):
        obj = yaml.safe_load((root / name).read_text())
        obj["metadata"].setdefault("annotations", {}).update(dict.fromkeys(PATH_FORMS[form], name))
        items.append(obj)
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
    proc = run([CLI, "krm"], root, stdin=json.dumps(resource_list).encode())
    if layout != "files named like options":
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 1, proc.stderr
    results = yaml.safe_load(proc.stdout)["results"]
    errors = [r for r in results if r.get("severity") == "error"]
    assert errors and all(r["file"]["path"] == "-o.yaml" and FAULT in r["message"] for r in errors), results
    assert any(line.startswith("-o.yaml:") and FAULT in line for line in proc.stderr.splitlines()), proc.stderr


@pytest.mark.parametrize("text", ["resources: []\n", "configMapGenerator:\n- name: settings\n  literals: [a=b]\n"])
def test_a_commit_that_touches_only_a_kustomization_with_no_cr_passes_the_hook(tmp_path: Path, text: str) -> None:
    """pre-commit passes a changed ``kustomization.yaml`` alone: one that renders no Memcached is checked and
    passed over, never "empty input" (exit 1 would block every commit to such a kustomization)."""
    (tmp_path / "kustomization.yaml").write_text(text)
    proc = run([CLI, "validate", "-v", "--", "kustomization.yaml"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kustomization.yaml: passed over" in proc.stderr, proc.stderr
