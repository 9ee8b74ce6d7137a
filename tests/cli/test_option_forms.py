"""The kustomize build options' allow-list (foundation/kustomize.py) in every form an option takes.

pflag, which kustomize's command line uses, reads short options (``-o PATH``, ``-oPATH``), clustered
short flags (``-eo PATH``), ``--name=value`` and ``--name value``; a non-boolean flag takes the next
argument as its value even when it looks like an option. ``kustomize build -o PATH`` writes the
build to PATH instead of stdout: anywhere the sidecar can write. So every argument that starts with
a dash is checked, in every form, before kustomize runs; a refused one is one line naming it, a
non-zero exit, no traceback, and nothing written. Driven through both front ends that take options:
``validate`` and the Argo CD plugin's sidecar, each from MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS
(the operator's; an Application cannot set build options).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.argocd import generate, repo_server_env
from tests.support.layouts import CR, KUSTOMIZATION

CLI = str(Path(sys.executable).parent / "memcached-gitops")
REFUSED = ["-o {out}", "-o{out}", "--output {out}", "--output={out}", "-eo {out}", "--enable-helm -o {out}",
           "--load-restrictor=LoadRestrictionsNone", "--load-restrictor LoadRestrictionsNone", "--load-restrictor -o {out}",
           "--helm-kube-version -o{out}", "--helm-kube-version --output={out}", "--enable-helm=-o{out}", "--enable-exec",
           "--enable-exec=true", "--enable-alpha-plugins", "-- {out}", "- {out}", "---output={out}", "--Output={out}"]
ALLOWED = ["", "--enable-helm", "--enable-helm=true", "--helm-kube-version 1.30.0", "--helm-kube-version=1.30.0"]


@pytest.fixture
def app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text(KUSTOMIZATION.format(resources="cr.yaml"))
    (app / "cr.yaml").write_text(CR.format(name="a"))
    return app


def validate(app: Path, options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS": options,
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run([CLI, "validate", "."], cwd=app, env=env, capture_output=True, text=True, timeout=120)


def argocd(app: Path, options: str) -> subprocess.CompletedProcess[str]:
    """The sidecar's operator sets the options in the sidecar's environment (an Application cannot)."""
    proc = generate(app, {**repo_server_env(None), "MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS": options})
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


#: every form through validate; the plugin (the same parse, another way in) with the short and clustered ones
CASES = [pytest.param(validate, f, id=f"validate {f}") for f in REFUSED] + [pytest.param(argocd, f, id=f"argocd {f}") for f in REFUSED[:5]]


@pytest.mark.parametrize(("front", "form"), CASES)
def test_a_refused_option_in_any_form_is_one_line_and_writes_nothing(tmp_path: Path, app: Path, front, form: str) -> None:
    out = tmp_path / "written" / "build.yaml"
    out.parent.mkdir()
    proc = front(app, form.format(out=out))
    said = proc.stdout + proc.stderr
    refusals = [line for line in proc.stderr.splitlines() if "MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS" in line
                and ("not allowed" in line or "refused" in line)]
    assert proc.returncode != 0 and len(refusals) == 1 and "Traceback" not in said and proc.stdout.strip() == "", said
    assert list(out.parent.iterdir()) == [], "kustomize wrote the build where an option told it"


@pytest.mark.parametrize(("front", "form"), [pytest.param(validate, f, id=f"validate {f}") for f in ALLOWED]
                         + [pytest.param(argocd, f, id=f"argocd {f}") for f in ALLOWED[1:3]])
def test_an_allowed_option_in_either_form_builds(app: Path, front, form: str) -> None:
    proc = front(app, form)
    assert proc.returncode == 0 and "MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS" not in proc.stderr, proc.stdout + proc.stderr
