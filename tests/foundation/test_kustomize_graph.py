"""The walk of a kustomization graph (foundation/kustomize_graph.py) and the operator's build options
(foundation/kustomize.py ``parse_build_options``), each tried with every spelling an attacker would
use: ``..`` in every field kustomize reads a path from, a symlink, every remote form kustomize's
loader accepts (api/internal/git/repospec.go ``extractHost``, api/internal/loader/fileloader.go
``IsRemoteFile``), unknown fields; short options, ``=`` forms, clusters, option-looking values.
The end-to-end attacks are tests/foundation/test_kustomize_confinement.py.
"""

from __future__ import annotations

import json
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


# --- every field and key the walk lets through, each as kustomize itself builds it ----------------------

from tests.support.kustomize import KUBECTL  # noqa: E402

#: kustomize's fields that name no file (api/types/kustomization.go, v5.8.1), each with a value kustomize builds.
PATH_FREE_EXAMPLES = {
    "apiVersion": "apiVersion: kustomize.config.k8s.io/v1beta1", "kind": "kind: Kustomization", "metadata": "metadata: {name: app}",
    "namePrefix": "namePrefix: p-", "nameSuffix": "nameSuffix: -s", "namespace": "namespace: shop",
    "commonLabels": "commonLabels: {team: a}", "labels": "labels: [{pairs: {team: a}}]",
    "commonAnnotations": "commonAnnotations: {team: a}", "images": "images: [{name: memcached, newTag: '1.6'}]",
    "imageTags": "imageTags: [{name: memcached, newTag: '1.6'}]", "replicas": "replicas: [{name: web, count: 2}]",
    "vars": "vars: [{name: CM, objref: {apiVersion: v1, kind: ConfigMap, name: cm}, fieldref: {fieldpath: metadata.name}}]",
    "sortOptions": "sortOptions: {order: legacy}", "generatorOptions": "generatorOptions: {disableNameSuffixHash: true}",
    "buildMetadata": "buildMetadata: [originAnnotations]",
}
#: The built-in plugins whose configuration names no file (kustomize api/builtins), each configured as kustomize builds it.
PATH_FREE_BUILTIN_EXAMPLES = {
    "AnnotationsTransformer": "annotations: {team: a}\nfieldSpecs: [{path: metadata/annotations, create: true}]",
    "LabelTransformer": "labels: {team: a}\nfieldSpecs: [{path: metadata/labels, create: true}]",
    "NamespaceTransformer": "fieldSpecs: [{path: metadata/namespace, create: true}]",
    "PrefixSuffixTransformer": "prefix: p-\nsuffix: -s\nfieldSpecs: [{path: metadata/name}]",
    "PrefixTransformer": "prefix: p-\nfieldSpecs: [{path: metadata/name}]",
    "SuffixTransformer": "suffix: -s\nfieldSpecs: [{path: metadata/name}]",
    "ImageTagTransformer": "imageTag: {name: memcached, newTag: '1.6'}",
    "ReplicaCountTransformer": "replica: {name: web, count: 2}\nfieldSpecs: [{path: spec/replicas, kind: Deployment}]",
    "HashTransformer": "{}",
}
RESOURCES = {
    "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '1', b: '2'}\n",
    "web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n"
                "  selector: {matchLabels: {app: web}}\n"
                "  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: m, image: memcached}]}\n",
    "p.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {c: '3'}\n",
    "r.yaml": "- source: {kind: ConfigMap, name: cm, fieldPath: data.a}\n  targets: [{select: {kind: ConfigMap}, fieldPaths: [data.b]}]\n",
    "f.txt": "x\n", "e.env": "K=v\n",
}


def _walked_and_built(graph_root: Path, text: str, built: bool = True) -> None:
    """The kustomization ``text`` (beside two resources and some files) passes the walk, and the real kustomize
    (kubectl's, where installed) builds it: what the walk lets through is a kustomization that works."""
    app = graph_root / "app"
    for name, content in RESOURCES.items():
        (app / name).write_text(content)
    (app / "kustomization.yaml").write_text("resources: [cm.yaml, web.yaml]\n" + text + "\n")
    kustomize_graph.check_graph(str(app), str(graph_root))
    if KUBECTL is not None and built:
        proc = subprocess.run([KUBECTL, "kustomize", str(app)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("field", sorted(kustomize_graph.PATH_FREE | PATH_FREE_EXAMPLES.keys()))
def test_each_field_that_names_no_file_is_walked_through(graph_root: Path, field: str) -> None:
    """Every kustomization field that names no file (a prefix, labels, images, replicas, sort options...) is let
    through, so an overlay that uses one is built, never refused as a field the check does not know."""
    _walked_and_built(graph_root, PATH_FREE_EXAMPLES[field])


@pytest.mark.parametrize("kind", sorted(kustomize_graph.PATH_FREE_BUILTINS | PATH_FREE_BUILTIN_EXAMPLES.keys()))
@pytest.mark.parametrize("as_file", [False, True], ids=["inline", "file"])
def test_each_path_free_builtin_plugin_is_walked_through_inline_or_from_a_file(graph_root: Path, kind: str, as_file: bool) -> None:
    """Every built-in transformer whose configuration names no file is let through, written inline in
    ``transformers`` or in a file of the repository, as kustomize reads both."""
    config = f"apiVersion: builtin\nkind: {kind}\nmetadata: {{name: t, namespace: shop}}\n" + PATH_FREE_BUILTIN_EXAMPLES[kind] + "\n"
    if config.endswith("{}\n"):
        config = config[:-3]
    if as_file:
        (graph_root / "app" / "t.yaml").write_text(config)
        _walked_and_built(graph_root, "transformers: [t.yaml]")
    else:
        _walked_and_built(graph_root, "transformers:\n- |\n" + "".join("  " + line + "\n" for line in config.splitlines()))


@pytest.mark.parametrize("as_file", [False, True], ids=["inline", "file"])
def test_a_builtin_kustomize_cannot_load_as_a_plugin_is_refused_by_the_walk_naming_the_allowed_ones(
        graph_root: Path, as_file: bool) -> None:
    """SortOrderTransformer names no file, but kubectl's kustomize v5.8.1 loads it from ``sortOptions`` only: as a
    plugin it fails "unable to load builtin". The walk refuses it with the list of what it does allow, rather than
    let a build through that kustomize itself then fails with an error about its own internals."""
    config = "apiVersion: builtin\nkind: SortOrderTransformer\nmetadata: {name: t}\nsortOptions: {order: legacy}\n"
    app = graph_root / "app"
    for name, content in RESOURCES.items():
        (app / name).write_text(content)
    if as_file:
        (app / "t.yaml").write_text(config)
        text = "transformers: [t.yaml]"
    else:
        text = "transformers:\n- |\n" + "".join("  " + line + "\n" for line in config.splitlines())
    (app / "kustomization.yaml").write_text("resources: [cm.yaml, web.yaml]\n" + text + "\n")
    with pytest.raises(Exception, match=r"plugin 'SortOrderTransformer': only path-free built-in plugins \(Annotations"):
        kustomize_graph.check_graph(str(app), str(graph_root))
    if KUBECTL is not None:
        proc = subprocess.run([KUBECTL, "kustomize", str(app)], capture_output=True, text=True)
        assert proc.returncode != 0 and "unable to load builtin SortOrderTransformer" in proc.stderr, proc.stderr


#: Each key kustomize reads in an item of these fields (api/types: GeneratorArgs and SecretArgs, Patch, Replacement
#: and ReplacementField, Open API), with a value kustomize builds.
ITEM_KEYS = {
    "secretGenerator.name": "secretGenerator: [{name: g, literals: [a=b]}]",
    "secretGenerator.namespace": "secretGenerator: [{name: g, namespace: shop, literals: [a=b]}]",
    "secretGenerator.behavior": "secretGenerator: [{name: g, behavior: create, literals: [a=b]}]",
    "secretGenerator.literals": "secretGenerator: [{name: g, literals: [a=b]}]",
    "secretGenerator.files": "secretGenerator: [{name: g, files: [k=f.txt]}]",
    "secretGenerator.envs": "secretGenerator: [{name: g, envs: [e.env]}]",
    "secretGenerator.env": "secretGenerator: [{name: g, env: e.env}]",
    "secretGenerator.options": "secretGenerator: [{name: g, literals: [a=b], options: {disableNameSuffixHash: true}}]",
    "secretGenerator.type": "secretGenerator: [{name: g, literals: [a=b], type: Opaque}]",
    "patches.path": "patches: [{path: p.yaml}]",
    "patches.patch": "patches:\n- patch: |\n    - {op: add, path: /data/c, value: '3'}\n  target: {kind: ConfigMap, name: cm}",
    "patches.target": "patches: [{path: p.yaml, target: {kind: ConfigMap}}]",
    "patches.options": "patches: [{path: p.yaml, options: {allowNameChange: true}}]",
    "replacements.path": "replacements: [{path: r.yaml}]",
    "replacements.source": "replacements: [{source: {kind: ConfigMap, name: cm, fieldPath: data.a}, "
                           "targets: [{select: {kind: ConfigMap}, fieldPaths: [data.b]}]}]",
    "replacements.sourceValue": "replacements: [{sourceValue: x, targets: [{select: {kind: ConfigMap}, fieldPaths: [data.b]}]}]",
    "openapi.version": "openapi: {version: v1.21.2}",
}


@pytest.mark.parametrize("key", sorted(ITEM_KEYS))
def test_each_key_kustomize_reads_in_an_item_is_walked_through(graph_root: Path, key: str) -> None:
    """A generator, a patch, a replacement or the openapi field written with any key kustomize reads in it is
    let through: only a key this check does not know is refused (fail closed)."""
    _walked_and_built(graph_root, ITEM_KEYS[key])


#: Each key of a Helm chart item (kustomize api/types/helmchartargs.go HelmChart) that names no file and runs nothing.
CHART_KEYS = {"name": "c", "version": "1.2.3", "releaseName": "r", "namespace": "shop", "valuesFile": "values.yaml",
              "additionalValuesFiles": ["more.yaml"], "valuesInline": {"a": 1}, "valuesMerge": "override", "includeCRDs": True,
              "skipHooks": True, "apiVersions": ["apps/v1"], "kubeVersion": "1.31.0", "skipTests": True, "debug": True, "devel": True}


@pytest.mark.parametrize("key", sorted(CHART_KEYS))
def test_each_key_of_a_local_chart_is_walked_through(graph_root: Path, key: str) -> None:
    """A local chart under the root, listed with any of helm's keys that reads no other file and runs nothing,
    is let through (helm is not run here: the walk's rule alone)."""
    import json

    app = graph_root / "app"
    (app / "values.yaml").write_text("a: 1\n")
    (app / "more.yaml").write_text("b: 1\n")
    chart = {"name": "c", key: CHART_KEYS[key]}
    (app / "kustomization.yaml").write_text(f"helmCharts: [{json.dumps(chart)}]\n")
    kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize(("repo", "allowed"), [
    ("https://charts.example.com", True), ("oci://registry.example.com/charts", True), ("HTTPS://charts.example.com", True),
    ("OCI://registry.example.com/charts", True), ("http://charts.example.com", False), ("file:///srv/charts", False),
    ("/srv/charts", False), ("../charts", False), ("git::https://example.com/charts", False), ("ftp://charts.example.com", False),
])
def test_a_chart_repository_is_https_or_oci_and_only_with_remote_bases_on(graph_root: Path, repo: str, allowed: bool) -> None:
    """A chart's ``repo`` is a download helm makes: with remote bases off, refused whatever it is; with them on,
    only https:// or oci:// (in any case, as Go's ToLower reads the scheme), never helm's file:// or a path of
    this machine, nor plain http a network in the middle could answer."""
    app = graph_root / "app"
    (app / "kustomization.yaml").write_text(f"helmCharts:\n- name: c\n  repo: {repo!r}\n  version: 1.2.3\n")
    with pytest.raises(kustomize_graph.GraphRefused, match=r"helmCharts\[0\]\.repo: a chart repository is a download; refused"):
        kustomize_graph.check_graph(str(app), str(graph_root))
    if allowed:
        kustomize_graph.check_graph(str(app), str(graph_root), allow_remote=True)
    else:
        with pytest.raises(kustomize_graph.GraphRefused, match=r"helmCharts\[0\]\.repo: .* is not an https:// or oci:// repository"):
            kustomize_graph.check_graph(str(app), str(graph_root), allow_remote=True)


@pytest.mark.parametrize(("key", "value", "allowed"), [
    ("releaseName", "r" * 53, True), ("releaseName", "r" * 54, False),  # helm's maxReleaseNameLen
    ("releaseName", "a-b.c-d", True), ("releaseName", "-a", False), ("releaseName", "a-", False), ("releaseName", "a..b", False),
    ("releaseName", "Ab", False),
    ("version", "v" * 64, True), ("version", "v" * 65, False), ("version", "1.2.3-rc.1+build~x_y", True),
    ("version", "1/2", False), ("version", "-1", False),
    ("name", "c" * 253, True), ("name", "c" * 254, False), ("name", "c.d_e-f", True), ("name", ".c", False), ("name", "c/d", False),
])
def test_a_charts_release_version_and_name_are_held_to_their_bounds_on_both_sides(graph_root: Path, key: str, value: str,
                                                                                  allowed: bool) -> None:
    """A release name as helm's ``validName`` takes it (at most 53 characters), a version and a chart name that
    stay one folder name under chartHome: each accepted up to its bound and refused one character past it."""
    app = graph_root / "app"
    item = {"name": "c", key: value}
    (app / "kustomization.yaml").write_text("helmCharts:\n- {" + ", ".join(f"{k}: {v!r}" for k, v in item.items()) + "}\n")
    if allowed:
        kustomize_graph.check_graph(str(app), str(graph_root))
    else:
        with pytest.raises(kustomize_graph.GraphRefused, match=rf"helmCharts\[0\]\.{key}: .* is not "):
            kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize("start", ["git::https://example.com/x", "ssh://git@example.com/x", "https://example.com/x",
                                   "http://example.com/x", "file:///srv/x", "HTTPS://example.com/x", "Git::File:///srv/x",
                                   "git@example.com", "github.com/evil/repo", "GitHub.com:evil/repo"])
@pytest.mark.parametrize("field", ["patchesStrategicMerge", "transformers"])
def test_inline_content_that_starts_as_a_remote_reference_is_refused(graph_root: Path, start: str, field: str) -> None:
    """kustomize reads an entry as inline content first and, where its own parse fails, as a path or a remote
    reference by its first characters (repospec.go ``extractHost``: ``git::``, ssh, http(s) or file in any case,
    ``user@``, ``github.com/`` or ``github.com:``): content that starts as any of them is refused, so no reading of
    the entry can fetch."""
    body = "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: t}\nlabels: {a: b}\nfieldSpecs: []\n"
    entry = f"{start}: 1\n" + body
    (graph_root / "app" / "kustomization.yaml").write_text(f"{field}: [{json.dumps(entry)}]\n")
    with pytest.raises(kustomize_graph.GraphRefused, match="starts as kustomize reads a remote reference"):
        kustomize_graph.check_graph(str(graph_root / "app"), str(graph_root))


@pytest.mark.parametrize("start", ["labels", "my-git::x", "a/b@c", "githubXcom/x", "https"])
def test_inline_content_that_only_looks_near_a_remote_reference_is_taken_inline(graph_root: Path, start: str) -> None:
    """Content whose first key is a plain word, holds ``@`` only after a ``/``, or names no scheme is inline."""
    body = "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: t}\nlabels: {a: b}\nfieldSpecs: []\n"
    entry = body if start == "labels" else f"{start}: 1\n" + body
    (graph_root / "app" / "kustomization.yaml").write_text(f"transformers: [{json.dumps(entry)}]\n")
    kustomize_graph.check_graph(str(graph_root / "app"), str(graph_root))


# --- the walk's bounds, each at the bound and one past it --------------------------------------------------

def _padded(text: str, size: int) -> str:
    """``text`` then a YAML comment, ``size`` bytes in all."""
    return text + "#" + "x" * (size - len(text) - 2) + "\n"


@pytest.mark.parametrize("extra", [0, 1])
def test_a_kustomization_file_is_read_up_to_its_bound_and_refused_one_byte_past(graph_root: Path, extra: int) -> None:
    app = graph_root / "app"
    (app / "kustomization.yaml").write_text(_padded("resources: []\n", kustomize_graph.MAX_FILE + extra))
    if extra:
        with pytest.raises(kustomize_graph.GraphRefused, match=rf"kustomization\.yaml: larger than {kustomize_graph.MAX_FILE} bytes"):
            kustomize_graph.check_graph(str(app), str(graph_root))
    else:
        kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize("extra", [0, 1])
def test_the_files_of_one_walk_are_read_up_to_their_bound_together_and_refused_one_byte_past(graph_root: Path, extra: int) -> None:
    """Each file within its own bound, all of them together within the walk's: the last byte that fits is read,
    one more is refused, naming the file that passed it."""
    app = graph_root / "app"
    count = kustomize_graph.MAX_GRAPH_BYTES // kustomize_graph.MAX_FILE
    top = "resources: [" + ", ".join(f"b{i}" for i in range(count)) + "]\n"
    room = kustomize_graph.MAX_GRAPH_BYTES - len(top) + extra
    for i in range(count):
        size = min(kustomize_graph.MAX_FILE, room - (count - 1 - i) * 32)
        (app / f"b{i}").mkdir()
        (app / f"b{i}" / "kustomization.yaml").write_text(_padded("resources: []\n", size))
        room -= size
    (app / "kustomization.yaml").write_text(top)
    if extra:
        with pytest.raises(kustomize_graph.GraphRefused, match=rf"b{count - 1}/kustomization\.yaml: .* more than "
                                                                rf"{kustomize_graph.MAX_GRAPH_BYTES} bytes together"):
            kustomize_graph.check_graph(str(app), str(graph_root))
    else:
        kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize("extra", [0, 1])
def test_kustomizations_are_nested_up_to_their_bound_and_refused_one_level_past(graph_root: Path, extra: int) -> None:
    folder = graph_root / "app"
    for _ in range(kustomize_graph.MAX_DEPTH + extra):
        (folder / "kustomization.yaml").write_text("resources: [sub]\n")
        folder = folder / "sub"
        folder.mkdir()
    (folder / "kustomization.yaml").write_text("resources: []\n")
    if extra:
        with pytest.raises(kustomize_graph.GraphRefused, match=rf"nested more than {kustomize_graph.MAX_DEPTH} deep"):
            kustomize_graph.check_graph(str(graph_root / "app"), str(graph_root))
    else:
        kustomize_graph.check_graph(str(graph_root / "app"), str(graph_root))


@pytest.mark.parametrize("extra", [0, 1])
def test_the_loads_of_a_build_are_counted_up_to_their_bound_and_refused_one_past(graph_root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                 extra: int) -> None:
    """A base reached by two paths is loaded twice: the count is kustomize's own work, held to MAX_LOADS (made small
    here, the walk's own code path)."""
    monkeypatch.setattr(kustomize_graph, "MAX_LOADS", 10)
    app = graph_root / "app"
    (app / "base" / "leaf").mkdir(parents=True)
    (app / "base" / "kustomization.yaml").write_text("resources: [leaf]\n")
    (app / "base" / "leaf" / "kustomization.yaml").write_text("resources: []\n")
    middles = 3 + extra  # the start, then each middle with the base and its leaf below it: 1 + 3 * 3 = 10 loads
    for i in range(middles):
        (app / f"m{i}").mkdir()
        (app / f"m{i}" / "kustomization.yaml").write_text("resources: [../base]\n")
    (app / "kustomization.yaml").write_text("resources: [" + ", ".join(f"m{i}" for i in range(middles)) + "]\n")
    if extra:
        with pytest.raises(kustomize_graph.GraphRefused, match="kustomize would load more than 10 kustomizations"):
            kustomize_graph.check_graph(str(app), str(graph_root))
    else:
        kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize("extra", [0, 1])
def test_the_folders_of_a_build_are_counted_up_to_their_bound_and_refused_one_past(graph_root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                   extra: int) -> None:
    """Folders without a kustomization cost no load but a look: they count against MAX_GRAPH_FOLDERS (made small)."""
    monkeypatch.setattr(kustomize_graph, "MAX_GRAPH_FOLDERS", 5)
    app = graph_root / "app"
    names = [f"d{i}" for i in range(4 + extra)]  # with the start: 5 folders
    for name in names:
        (app / name).mkdir()
        (app / name / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (app / "kustomization.yaml").write_text("resources: [" + ", ".join(names) + "]\n")
    if extra:
        with pytest.raises(kustomize_graph.GraphRefused, match="the build names more than 5 folders"):
            kustomize_graph.check_graph(str(app), str(graph_root))
    else:
        kustomize_graph.check_graph(str(app), str(graph_root))


@pytest.mark.parametrize(("bound", "extra"), [("MAX_CHART_FOLDERS", 0), ("MAX_CHART_FOLDERS", 1),
                                              ("MAX_CHART_ENTRIES", 0), ("MAX_CHART_ENTRIES", 1)])
def test_a_charts_folders_and_entries_are_looked_through_up_to_their_bounds_and_refused_one_past(
        graph_root: Path, monkeypatch: pytest.MonkeyPatch, bound: str, extra: int) -> None:
    """A local chart is looked through for links out of the root: its folders (the chart's own included) up to
    MAX_CHART_FOLDERS and its files and folders up to MAX_CHART_ENTRIES (both made small here), one more refused."""
    chart = graph_root / "app" / "charts" / "c"
    (chart / "templates").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    (chart / "templates" / "cm.yaml").write_text("kind: ConfigMap\n")  # 2 folders, 3 entries
    monkeypatch.setattr(kustomize_graph, bound, (2 if bound == "MAX_CHART_FOLDERS" else 3) - extra)
    (graph_root / "app" / "kustomization.yaml").write_text("helmCharts:\n- {name: c, releaseName: r}\n")
    if extra:
        said = "folders" if bound == "MAX_CHART_FOLDERS" else "files and folders"
        with pytest.raises(kustomize_graph.GraphRefused, match=rf"helmCharts\[0\]\.name: the charts hold more than \d+ {said} together"):
            kustomize_graph.check_graph(str(graph_root / "app"), str(graph_root))
    else:
        kustomize_graph.check_graph(str(graph_root / "app"), str(graph_root))
