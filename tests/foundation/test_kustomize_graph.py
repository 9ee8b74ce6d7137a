"""The walk of a kustomization graph (foundation/kustomize_graph.py) and the operator's build options
(foundation/kustomize.py ``parse_build_options``), each tried with every spelling an attacker would
use: ``..`` in every field kustomize reads a path from, a symlink, every remote form kustomize's
loader accepts (api/internal/git/repospec.go ``extractHost``, api/internal/loader/fileloader.go
``IsRemoteFile``), unknown fields; short options, ``=`` forms, clusters, option-looking values.
The end-to-end attacks are tests/foundation/test_kustomize_confinement.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from memcached_gitops.foundation import kustomize_graph
from memcached_gitops.foundation.kustomize import BuildRefused, parse_build_options

from tests.foundation.test_kustomize_confinement import SECRET, run

# --- the operator's build options: an allow-list, tested against every way to spell an option ---------


@pytest.mark.parametrize("options", [
    "-o /tmp/x", "-o=/tmp/x", "-o/tmp/x", "-eo /tmp/x", "--output=/tmp/x", "--output /tmp/x",
    "--load-restrictor LoadRestrictionsNone", "--load-restrictor=LoadRestrictionsNone",
    "--helm-command ./helm.sh", "--helm-command=/bin/sh", "--enable-exec", "--enable-alpha-plugins",
    "--mount=/etc", "--network", "--", "/etc", "--enable-helm /etc",
    "--helm-kube-version -o", "--helm-kube-version=--enable-exec", "--helm-kube-version", "--helm-api-versions '-o /x'",
    "--enable-helm=/tmp", "--ENABLE-HELM", "--enable-helm\u00a0--enable-exec", "'--enable-exec'", "--enable-helm 'a b'",
    "--kubeconfig=/etc/kubernetes/admin.conf", "-v=9", "--enable-helm '",
])
def test_every_spelling_of_a_refused_option_is_refused(options: str) -> None:
    with pytest.raises(BuildRefused):
        parse_build_options(options)


@pytest.mark.parametrize(("options", "argv"), [
    ("", []), ("--enable-helm", ["--enable-helm"]), ("--enable-helm=true --helm-debug", ["--enable-helm=true", "--helm-debug"]),
    ("--helm-kube-version v1.36.2 --helm-api-versions=apps/v1", ["--helm-kube-version=v1.36.2", "--helm-api-versions=apps/v1"]),
])
def test_the_operators_options_that_only_shape_output_are_passed_as_flag_equals_value(options: str, argv: list[str]) -> None:
    assert parse_build_options(options) == argv


# --- the walk itself: `..` in every field, every remote form, unknown fields --------------------------

FIELDS = {
    "resources": "resources: [{p}]", "components": "components: [{p}]", "bases": "bases: [{p}]", "crds": "crds: [{p}]",
    "configurations": "configurations: [{p}]", "patches": "patches: [{{path: {p}}}]",
    "patchesJson6902": "patchesJson6902: [{{path: {p}, target: {{kind: X, name: y}}}}]",
    "patchesStrategicMerge": "patchesStrategicMerge: [{p}]", "replacements": "replacements: [{{path: {p}}}]",
    "configMapGenerator.files": "configMapGenerator: [{{name: x, files: [k={p}]}}]",
    "configMapGenerator.envs": "configMapGenerator: [{{name: x, envs: [{p}]}}]",
    "secretGenerator.env": "secretGenerator: [{{name: x, env: {p}}}]",
    "openapi": "openapi: {{path: {p}}}",
    "helmCharts.valuesFile": "helmCharts: [{{name: c, valuesFile: {p}}}]",
    "helmCharts.additionalValuesFiles": "helmCharts: [{{name: c, additionalValuesFiles: [{p}]}}]",
    "helmCharts.name": "helmCharts: [{{name: {p}}}]",
    "helmGlobals.chartHome": "helmGlobals: {{chartHome: {p}}}", "helmGlobals.configHome": "helmGlobals: {{configHome: {p}}}",
    "generators": "generators: [{p}]", "transformers": "transformers: [{p}]", "validators": "validators: [{p}]",
}
OUTSIDE = ["../../outside/passwd", "../../../outside", "/etc/passwd", "sub/../../../../outside", "link/passwd",
           "https://example.com/x.yaml", "HTTP://127.0.0.1:1/x", "file:///etc/passwd", "github.com/x/y",
           "GitHub.com:x/y", "git@github.com:x/y", "ssh://git@example.com/x", "git::https://example.com/x",
           "//example.com/x", "' https://example.com/x'", "x@example.com:y"]
#: A chart's name is under helmGlobals.chartHome (charts/): these two stay inside the root from there.
INSIDE_FROM_CHARTS = {("helmCharts.name", "../../outside/passwd"), ("helmCharts.name", "link/passwd")}


@pytest.fixture
def graph_root(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "passwd").write_text(SECRET)
    (tmp_path / "outside" / "kustomization.yaml").write_text("resources: []\n")
    root = tmp_path / "repo"
    (root / "app" / "charts" / "c").mkdir(parents=True)
    (root / "app" / "link").symlink_to(tmp_path / "outside")
    return root


@pytest.mark.parametrize(("field", "path"), [(f, p) for f in FIELDS for p in OUTSIDE if (f, p) not in INSIDE_FROM_CHARTS])
def test_no_field_can_name_a_path_outside_or_a_remote(graph_root: Path, field: str, path: str) -> None:
    app = graph_root / "app"
    (app / "kustomization.yaml").write_text("namespace: x\n" + FIELDS[field].format(p=path) + "\n")
    with pytest.raises(kustomize_graph.GraphRefused, match=r"kustomization\.yaml:2:\d+: " + field.split(".")[0]):
        kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize("text", ["helmChartInflationGenerator: [{chartName: x}]", "newFieldOfKustomize6: [../../outside]",
                                  "patches: [{path: p.yaml, unknownKey: ../x}]", "transformers: ['apiVersion: builtin\n"
                                  "  kind: PatchTransformer\n  path: ../../outside/passwd']",
                                  "generators: [gen.yaml]", "resources: [app]", "resources: ['']"])
def test_unknown_fields_plugins_and_cycles_fail_closed(graph_root: Path, text: str) -> None:
    app = graph_root / "app"
    (app / "gen.yaml").write_text("apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: x}\nfiles: [/etc/passwd]\n")
    (app / "kustomization.yaml").write_text(text.replace("[app]", "[../app]") + "\n")
    with pytest.raises(kustomize_graph.GraphRefused):
        kustomize_graph.check_graph(str(app), str(graph_root))


def test_a_repository_that_stays_inside_is_walked_and_built(graph_root: Path) -> None:
    app = graph_root / "app"
    (graph_root / "base").mkdir()
    (graph_root / "base" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (graph_root / "base" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    (app / "env").write_text("A=B\n")
    (app / "t.yaml").write_text("apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: l}\nlabels: {a: b}\n"
                                "fieldSpecs: [{path: metadata/labels, create: true}]\n")
    (app / "kustomization.yaml").write_text(
        "resources: [../base]\nconfigMapGenerator: [{name: e, envs: [env]}]\ntransformers: [t.yaml]\n"
        "patches: [{patch: '[{\"op\": \"add\", \"path\": \"/data\", \"value\": {}}]', target: {kind: ConfigMap, name: a}}]\n")
    kustomize_graph.check_graph(str(app), str(graph_root))
    proc = run(["validate", "app"], graph_root)
    assert "leaves the root" not in proc.stderr and "refused" not in proc.stderr, proc.stderr


def test_remote_bases_are_allowed_only_by_the_operators_switch(graph_root: Path) -> None:
    app = graph_root / "app"
    (app / "kustomization.yaml").write_text("resources: [https://example.com/x.yaml, ../../outside]\n")
    with pytest.raises(kustomize_graph.GraphRefused, match="leaves the root"):  # the switch opens remotes, not paths
        kustomize_graph.check_graph(str(app), str(graph_root), allow_remote=True)


def test_a_chart_holding_a_symlink_out_of_the_root_is_refused(graph_root: Path) -> None:
    """helm follows symlinks when it loads a chart folder, and ``.Files.Get`` would print the target."""
    app = graph_root / "app"
    chart = app / "charts" / "c"
    (chart / "files").mkdir()
    (chart / "files" / "secret").symlink_to(graph_root.parent / "outside" / "passwd")
    (app / "kustomization.yaml").write_text("helmCharts: [{name: c}]\n")
    with pytest.raises(kustomize_graph.GraphRefused, match=r"helmCharts\[0\]\.name: 'app/charts/c/files/secret' in the chart"):
        kustomize_graph.check_graph(str(app), str(graph_root))
    (chart / "files" / "secret").unlink()
    (chart / "files" / "loop").symlink_to(chart)  # a link back inside is walked once, not forever
    kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize("key", ["Resources", "RESOURCES", "resources ", "Patches"])
def test_a_field_kustomize_matches_case_insensitively_is_refused(graph_root: Path, key: str) -> None:
    """kustomize reads its file through Go's encoding/json, which matches ``Resources`` to ``resources``
    (checked: ``kubectl kustomize`` builds ``Resources: [../../outside]``): any spelling not ours is refused."""
    app = graph_root / "app"
    (app / "kustomization.yaml").write_text(f"'{key}': [../../outside]\n")
    with pytest.raises(kustomize_graph.GraphRefused, match="a field this check does not know"):
        kustomize_graph.check_graph(str(app), str(graph_root))


def test_a_strategic_merge_entry_is_inline_only_when_it_reads_as_objects(graph_root: Path) -> None:
    """kustomize reads a patchesStrategicMerge string as content first, then as a path: a name with a
    line break that reads as no object is a path, and its symlink out of the root is refused."""
    app = graph_root / "app"
    (app / "a\nb").symlink_to(graph_root.parent / "outside" / "passwd")
    (app / "kustomization.yaml").write_text('patchesStrategicMerge: ["a\\nb"]\n')
    with pytest.raises(kustomize_graph.GraphRefused, match="leaves the root"):
        kustomize_graph.check_graph(str(app), str(graph_root))
    inline = "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: a}\\ndata: {x: y}\\n"
    (app / "kustomization.yaml").write_text(f'patchesStrategicMerge: ["{inline}"]\n')
    kustomize_graph.check_graph(str(app), str(graph_root))


def test_the_root_of_a_command_line_build_is_the_current_directory_never_slash(graph_root: Path) -> None:
    """``validate`` run from ``/`` on a repository is held to the repository, not to the whole machine."""
    (graph_root / "app" / "kustomization.yaml").write_text("resources: [../../outside]\n")
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", str(graph_root / "app")], cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "leaves the root" in proc.stderr and SECRET not in proc.stderr, proc.stderr


@pytest.mark.parametrize(("app", "source_path", "root"), [
    ("/tmp/_cmp_server/1234/apps/caches", "apps/caches", "/tmp/_cmp_server/1234"),
    ("/tmp/_cmp_server/1234/caches", "apps/caches", "/tmp/_cmp_server/1234"),  # manifest-generate-paths: unpacked lower
    ("/tmp/_cmp_server/1234", ".", "/tmp/_cmp_server/1234"),
    ("/tmp/_cmp_server/1234/apps/caches", "", "/tmp/_cmp_server/1234/apps/caches"),
    ("/tmp/_cmp_server/1234/apps/caches", "../../apps/caches", "/tmp/_cmp_server/1234/apps/caches"),
    ("/tmp/_cmp_server/1234/apps/caches", "tmp/_cmp_server/1234/apps/caches", "/tmp/_cmp_server/1234/apps/caches"),  # never /
])
def test_the_plugins_root_is_the_checkout_the_cmp_server_unpacked(app: str, source_path: str, root: str) -> None:
    from memcached_gitops.argocd import repository_root

    assert repository_root({"ARGOCD_APP_SOURCE_PATH": source_path}, app) == root


@pytest.mark.parametrize("release", ["--post-renderer=./x.sh", "-x", "--post-renderer ./x.sh", "A b", "x" * 54])
def test_a_release_name_that_helm_would_read_as_a_flag_is_refused(graph_root: Path, release: str) -> None:
    """kustomize hands ``releaseName`` to ``helm template`` as its first positional word, where
    ``--post-renderer=./x.sh`` is a flag that runs a program (once the operator enables Helm)."""
    app = graph_root / "app"
    (app / "kustomization.yaml").write_text(f"helmCharts: [{{name: c, releaseName: '{release}'}}]\n")
    with pytest.raises(kustomize_graph.GraphRefused, match=r"helmCharts\[0\]\.releaseName"):
        kustomize_graph.check_graph(str(app), str(graph_root))
    (app / "kustomization.yaml").write_text("helmCharts: [{name: c, releaseName: my-cache.v1}]\n")
    kustomize_graph.check_graph(str(app), str(graph_root))


def test_an_unreadable_chart_folder_is_one_line(graph_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder the walk cannot read (mode 000 in an unpacked tarball) is one refusal line, never a
    traceback; os.scandir is made to fail as it does for a non-root user (the tests may run as root)."""
    app = graph_root / "app"
    (app / "kustomization.yaml").write_text("helmCharts: [{name: c}]\n")

    def denied(path: str) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(kustomize_graph.os, "scandir", denied)
    with pytest.raises(kustomize_graph.GraphRefused, match=r"charts/c: cannot read: Permission denied; refused"):
        kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize(("entry", "remote"), [
    ("g\u0130thub.com/evil/repo", True), ("G\u0130THUB.COM:evil/repo", True), ("github.com/a/b", True),
    ("git::./x", True), ("https://x/y", True), ("user@host:r", True), ("f\u0130le:///x", True), ("x?y=a://b", True),
    ("./g\u0130thub.com/x", False), ("base", False), ("../base", False), ("a/b@c", False), ("githubcom/x", False),
    ("ssh:host/repo", True), ("a/b@c/d", False),
])
def test_remote_as_go_reads_the_entry(entry: str, remote: bool) -> None:
    assert kustomize_graph.is_remote(entry) is remote


def test_go_lower_folds_u0130_to_i_and_the_rest_as_python() -> None:
    assert kustomize_graph.go_lower("G\u0130THUB") == "github"
    assert kustomize_graph.go_lower("\u212a") == "k" and kustomize_graph.go_lower("ABC") == "abc"


@pytest.mark.parametrize(("entry", "problem"), [
    ("https://github.com/a/b?ref=v1.2.3", None), ("github.com/a/b?ref=release/1.0&timeout=90s", None),
    ("https://x.example/a.yaml", None), ("git@github.com:a/b", None), ("https://github.com/a/b?ref=", None),
    ("file:///tmp/x", "a repository of this machine"), ("git::file:///x", "a repository of this machine"),
    ("FILE:///x", "a repository of this machine"), ("ext::sh -c x", "a repository of this machine"),
    ("git::/abs/repo", "a repository of this machine"), ("git::./rel", "a repository of this machine"),
    ("github.com/a/b?ref=--upload-pack=touch%20x", "'--upload-pack=touch x' is not a plain"),
    ("github.com/a/b?version=a;b", "'a;b' is not a plain"), ("github.com/a/b?x=1&ref=-x", "'-x' is not a plain"),
    ("github.com/a/b?ref=-x?y=1", "'-x?y=1' is not a plain"),  # the query is all after the first '?', as Go's url parses it
    ("github.com/a/b?ref=a+b", "'a b' is not a plain"),  # Go's url.ParseQuery reads + as a space too
])
def test_a_remote_base_the_operator_allows_is_still_a_remote_one_with_plain_names(entry: str, problem: str | None) -> None:
    found = kustomize_graph.remote_problem(entry)
    assert found is None if problem is None else (found is not None and problem in found), found


def test_what_a_remote_problem_says() -> None:
    assert kustomize_graph.remote_problem("file:///x") == "a repository of this machine (file://, ext::, a path), not a remote one"
    assert kustomize_graph.remote_problem("github.com/a/b?ref=-x") == (
        "the query value '-x' is not a plain branch, tag or commit name (git would read one starting with '-' as an option)")


def test_the_walks_yaml_nodes_are_counted_over_all_its_kustomization_files(graph_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``MAX_GRAPH_NODES`` bounds the nodes one walk parses, every kustomization file of the build
    together: a chain of files each well under the bound passes it together, and the file that does is
    named (lowered here: 30 nodes, files of 12 each)."""
    app = graph_root / "app"
    folders = [app, app / "b", app / "b" / "c"]
    for folder, child in zip(folders, ["[b]", "[c]", "[]"], strict=True):
        folder.mkdir(exist_ok=True)
        (folder / "kustomization.yaml").write_text(f"resources: {child}\ncommonLabels: {{a: x, b: y, c: z, d: w}}\n")
    kustomize_graph.check_graph(str(app), str(graph_root))  # within the default bound
    monkeypatch.setattr(kustomize_graph, "MAX_GRAPH_NODES", 30)
    with pytest.raises(kustomize_graph.GraphRefused, match=r"^app/b/c/kustomization\.yaml:\d+:\d+: more than 30 YAML nodes"):
        kustomize_graph.check_graph(str(app), str(graph_root))


def test_a_charts_folder_of_many_files_reads_the_runs_deadline_within_it(graph_root: Path) -> None:
    """The chart walk reads the run's deadline at each folder and again every 1,000 entries within one:
    a single folder of 1,000 files more reads it once more than the folder alone, so a chart of 600,000
    files in one folder cannot outlast the deadline."""
    app = graph_root / "app"
    chart = app / "charts" / "c"
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (app / "kustomization.yaml").write_text("helmCharts: [{name: c}]\n")

    def readings() -> int:
        calls: list[None] = []
        kustomize_graph.check_graph(str(app), str(graph_root), check_time=lambda: calls.append(None))
        return len(calls)

    few = readings()
    for i in range(1000):
        (chart / f"t{i}.yaml").write_bytes(b"")
    assert readings() >= few + 1
