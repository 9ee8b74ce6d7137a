"""The example Application runs in a restricted AppProject, both valid under Argo CD's own CRDs
(argoproj/argo-cd 37ee0097cf manifests/crds/, read from ../shared/upstream/argocd/crds),
and the project admits exactly what the plugin emits."""

from __future__ import annotations

from pathlib import Path

from memcached_gitops.foundation.yamlreader import iter_documents
from memcached_gitops.schemas import Validator, load_crd

from memcached_gitops.argocd import PARAMETERS
from tests.conftest import REPO
from tests.support.argocd import generate, plugin_manifest, repo_server_env
from tests.upstream import needs_upstream, upstream

ARGOCD = REPO / "examples" / "gitops-repo" / "argocd"
CRDS = upstream("argocd/crds")


def one(path: Path) -> dict:
    [doc] = list(iter_documents(path.read_bytes()))
    return doc.value


def sent_for(application: dict) -> dict[str, str]:
    """What the repo-server sends generate for ``application``: its plugin section, and its source's path."""
    source = application["spec"]["source"]
    return {**repo_server_env(source["plugin"]), "ARGOCD_APP_SOURCE_PATH": source["path"]}


@needs_upstream
def test_the_application_and_its_project_are_valid_under_argo_cds_crds() -> None:
    for example, crd in (("application.yaml", "application-crd.yaml"), ("appproject.yaml", "appproject-crd.yaml")):
        outcome = Validator(load_crd(str(CRDS / crd))).validate(one(ARGOCD / example))
        assert outcome.ok and not outcome.warnings, (example, outcome.errors, outcome.warnings)


def test_the_project_admits_the_plugins_output_and_nothing_cluster_scoped() -> None:
    project, application = one(ARGOCD / "appproject.yaml"), one(ARGOCD / "application.yaml")
    spec = project["spec"]
    assert application["spec"]["project"] == project["metadata"]["name"]
    assert spec["sourceRepos"] == [application["spec"]["source"]["repoURL"]]
    assert {d["namespace"] for d in spec["destinations"]} == {application["spec"]["destination"]["namespace"]}
    assert spec["clusterResourceWhitelist"] == []
    allowed = {(k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]}
    # what the plugin emits for the example's directory, sent the example's plugin section as the repo-server sends it
    app_dir = REPO / "examples" / "gitops-repo" / application["spec"]["source"]["path"]
    params = application["spec"]["source"]["plugin"]["parameters"]
    proc = generate(app_dir, sent_for(application))
    assert proc.returncode == 0, proc.stderr.decode()
    emitted = {(d.value["apiVersion"].rpartition("/")[0], d.value["kind"]) for d in iter_documents(proc.stdout)}
    assert emitted <= allowed, emitted - allowed
    assert ("", "ConfigMap") in allowed and {p["name"]: p["string"] for p in params}["pass-through-kinds"] == "ConfigMap"


def test_the_project_admits_what_the_readmes_example_renders(tmp_path: Path) -> None:
    # the README's CR (cut out of README.md) turns its PodMonitor on: a project that refused it would
    # fail the first sync of a user who starts from the README
    from tests.support.readme import readme_example

    project, application = one(ARGOCD / "appproject.yaml"), one(ARGOCD / "application.yaml")
    allowed = {(k["group"], k["kind"]) for k in project["spec"]["namespaceResourceWhitelist"]}
    (tmp_path / "cache.yaml").write_text(readme_example())
    proc = generate(tmp_path, sent_for(application))
    assert proc.returncode == 0, proc.stderr.decode()
    emitted = {(d.value["apiVersion"].rpartition("/")[0], d.value["kind"]) for d in iter_documents(proc.stdout)}
    assert ("monitoring.coreos.com", "PodMonitor") in emitted
    assert emitted <= allowed, emitted - allowed


def test_every_setting_the_example_application_gives_is_one_the_plugin_reads() -> None:
    """The example Application's plugin env and parameters reach generate as ARGOCD_ENV_<name> and in
    ARGOCD_APP_PARAMETERS (tests/support/argocd.py ``repo_server_env``): a plugin env of a name the plugin
    does not read, or a parameter its manifest does not announce, is silently nothing (or refused) for
    every user who copies the example; each is read, and each changes what generate emits."""
    application = one(ARGOCD / "application.yaml")
    plugin = application["spec"]["source"]["plugin"]
    announced = {p["name"] for p in plugin_manifest()["spec"]["parameters"]["static"]}
    assert {p["name"] for p in plugin.get("parameters") or []} <= announced
    assert {e["name"] for e in plugin.get("env") or []} <= set(PARAMETERS.values())
    app_dir = REPO / "examples" / "gitops-repo" / application["spec"]["source"]["path"]
    given = generate(app_dir, sent_for(application))
    assert given.returncode == 0, given.stderr.decode()
    for entry in plugin.get("env") or []:
        changed = {**plugin, "env": [{**e, "value": "x" + e["value"]} if e is entry else e for e in plugin["env"]]}
        edited = {**application, "spec": {**application["spec"], "source": {**application["spec"]["source"], "plugin": changed}}}
        same = generate(app_dir, sent_for(edited)).stdout == given.stdout
        assert not same, f"plugin env {entry['name']} changes nothing"
