"""The Argo CD plugin run as Argo CD's own code runs it: the repo-server's variables, the sidecar's
environment, and the discover and generate commands executed as cmpserver executes them (each rule
names the argoproj/argo-cd file and line it follows; the commit is test_argocd_plugin's ARGOCD_COMMIT)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from memcached_gitops.foundation.yamlreader import iter_documents

from tests.support.kustomize import K

PLUGIN = K / "components" / "argocd-cmp" / "plugin.yaml"


CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: {name}\nspec:\n  size: 2\n"


def plugin_manifest() -> dict[str, Any]:
    return next(iter_documents(PLUGIN.read_text())).value


def go_json(value: Any) -> str:
    """encoding/json's Marshal: compact, and <, > and & escaped as \\u003c, \\u003e, \\u0026."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def escaped(name: str) -> str:
    # pkg/apis/application/v1alpha1/types.go:1135-1139 escaped(): strings.ToUpper, then [^A-Z0-9_] -> "_"
    return re.sub(r"[^A-Z0-9_]", "_", name.upper())


def repo_server_env(plugin: dict[str, Any] | None) -> dict[str, str]:
    """The variables the repo-server adds for an Application whose ``spec.source.plugin`` is ``plugin``.

    - the build env: reposerver/repository/repository.go:1857-1870 newEnv (ARGOCD_APP_NAME,
      ..._NAMESPACE, ..._PROJECT_NAME, ..._REVISION, ..._REVISION_SHORT, ..._REVISION_SHORT_8,
      ..._SOURCE_REPO_URL, ..._SOURCE_PATH, ..._SOURCE_TARGET_REVISION), then
      repository.go:2321-2322 KUBE_VERSION and KUBE_API_VERSIONS;
    - only with a plugin section (repository.go:2340 ``if plugin != nil``): each env entry as
      ARGOCD_ENV_<name> (repository.go:2344), then repository.go:2346 Parameters.Environ()
      (types.go:1106-1133): ARGOCD_APP_PARAMETERS is json.Marshal of the parameter list
      (types.go:1107), so a nil list is ``null``, then PARAM_<NAME> for a string (types.go:1118),
      PARAM_<NAME>_<KEY> for a map (1121-1123), PARAM_<NAME>_<i> for an array (1126-1128). A
      parameter's fields are ``name``, ``string``, ``map``, ``array`` (types.go:1021-1035).
    """
    env = {"ARGOCD_APP_NAME": "caches", "ARGOCD_APP_NAMESPACE": "argocd", "ARGOCD_APP_PROJECT_NAME": "default",
           "ARGOCD_APP_REVISION": "0123456789abcdef0123456789abcdef01234567", "ARGOCD_APP_REVISION_SHORT": "0123456",
           "ARGOCD_APP_REVISION_SHORT_8": "01234567", "ARGOCD_APP_SOURCE_PATH": "apps/caches",
           "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/platform/gitops.git",
           "ARGOCD_APP_SOURCE_TARGET_REVISION": "main", "KUBE_VERSION": "1.36.2",
           "KUBE_API_VERSIONS": "v1,apps/v1,cache.example.com/v1alpha1"}
    if plugin is None:
        return env
    for entry in plugin.get("env") or []:
        env["ARGOCD_ENV_" + entry["name"]] = entry["value"]
    params = plugin.get("parameters")  # absent: a nil slice
    env["ARGOCD_APP_PARAMETERS"] = go_json(params)  # json.Marshal(nil slice) == "null"
    for param in params or []:
        base = "PARAM_" + escaped(param["name"])
        if "string" in param:
            env[base] = param["string"]
        for key, value in (param.get("map") or {}).items():
            env[f"{base}_{escaped(key)}"] = value
        for i, value in enumerate(param.get("array") or []):
            env[f"{base}_{i}"] = value
    return env


def sidecar_env() -> dict[str, str]:
    """The operator's settings: the ``env`` of the sidecar container in repo-server-sidecar.yaml."""
    patch = next(iter_documents((K / "components" / "argocd-cmp" / "repo-server-sidecar.yaml").read_text())).value
    [container] = patch["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container.get("env", [])}


def run_like_cmp_server(command: list[str], app_dir: Path, env: dict[str, str],
                        operator: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[bytes]:
    """As cmpserver/plugin/plugin.go runs a command: exec.CommandContext, no shell (line 87), in the
    app path (line 90), with the sidecar's own environment plus the repo-server's variables
    (``append(os.Environ(), environ(envEntries)...)``, lines 265 and 377). The sidecar's own
    environment is its manifest's ``env`` (sidecar_env), changed by ``operator`` (None: unset)."""
    merged: dict[str, str | None] = {k: v for k, v in os.environ.items() if not k.startswith(("ARGOCD_", "PARAM_"))}
    merged.update({**sidecar_env(), **(operator or {})})
    sidecar = {k: v for k, v in merged.items() if v is not None}
    sidecar["PATH"] = str(Path(sys.executable).parent) + os.pathsep + sidecar.get("PATH", "")
    return subprocess.run(command, cwd=app_dir, env={**sidecar, **env}, capture_output=True, timeout=60)


def discover(app_dir: Path, env: dict[str, str] | None = None) -> bool:
    """cmpserver/plugin/plugin.go:375-382 matchRepository: find.command matches on a non-empty
    stdout (``return find != ""``); a non-zero exit is an error (line 380), never a match."""
    proc = run_like_cmp_server(plugin_manifest()["spec"]["discover"]["find"]["command"], app_dir, env or repo_server_env(None))
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.strip() != b""


def generate(app_dir: Path, env: dict[str, str], operator: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_like_cmp_server(plugin_manifest()["spec"]["generate"]["command"], app_dir, env, operator)
