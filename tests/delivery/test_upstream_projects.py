"""Day one for a kubebuilder or operator-sdk team: their own CRDs, install.yaml and samples (issue 22).

Every CRD and sample here is the upstream project's file, vendored verbatim with its commit
(../shared/upstream/*/SOURCE.md): the kubebuilder book's getting-started project, kubebuilder's
generated project-v4-multigroup and project-v4-with-plugins (whose dist/install.yaml hold several
CRDs), and operator-sdk's Go memcached-operator. Variations are derived from those files by one
edit each, never written from scratch.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from memcached_gitops.foundation.yamlreader import iter_documents

from tests.upstream import UPSTREAM as UPSTREAM_ROOT
from tests.upstream import needs_upstream

UPSTREAM = UPSTREAM_ROOT
BOOK = UPSTREAM / "kubebuilder/docs/book/src/getting-started/testdata/project"
MULTIGROUP = UPSTREAM / "kubebuilder/testdata/project-v4-multigroup"
WITH_PLUGINS = UPSTREAM / "kubebuilder/testdata/project-v4-with-plugins"
OPERATOR_SDK = UPSTREAM / "operator-sdk/testdata/go/v4/memcached-operator"

#: (CRD file, the samples directory its Memcached sample is in, the sample's file name)
PROJECTS = {
    "book": (BOOK / "config/crd/bases/cache.example.com_memcacheds.yaml", BOOK / "config/samples", "cache_v1alpha1_memcached.yaml"),
    "multigroup install.yaml": (MULTIGROUP / "dist/install.yaml", MULTIGROUP / "config/samples", "example.com_v1alpha1_memcached.yaml"),
    "with-plugins install.yaml": (WITH_PLUGINS / "dist/install.yaml", WITH_PLUGINS / "config/samples",
                                  "example.com_v1alpha1_memcached.yaml"),
    "with-plugins CRD": (WITH_PLUGINS / "config/crd/bases/example.com.testproject.org_memcacheds.yaml", WITH_PLUGINS / "config/samples",
                         "example.com_v1alpha1_memcached.yaml"),
    "operator-sdk CRD": (OPERATOR_SDK / "config/crd/bases/cache.example.com_memcacheds.yaml", OPERATOR_SDK / "config/samples",
                         "cache_v1alpha1_memcached.yaml"),
    "operator-sdk bundle CRD": (OPERATOR_SDK / "bundle/manifests/cache.example.com_memcacheds.yaml", OPERATOR_SDK / "config/samples",
                                "cache_v1alpha1_memcached.yaml"),
}


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "memcached_gitops", *args], input=stdin, capture_output=True, timeout=120)


def sample(project: str) -> str:
    crd, samples, name = PROJECTS[project]
    return (samples / name).read_text()


@needs_upstream
@pytest.mark.parametrize("project", PROJECTS)
def test_each_projects_samples_validate_and_render_under_its_own_crd(project: str) -> None:
    crd, samples, name = PROJECTS[project]
    files = [str(samples / name), str(samples / "kustomization.yaml")]  # the sample, as `kubectl apply -k` takes it
    proc = cli("validate", "--crd", str(crd), *files)
    assert proc.returncode == 0, proc.stderr.decode()
    summary = proc.stderr.decode().splitlines()[-1]
    # the Memcached CRD judges; a kustomization naming samples of other kinds that are not kept here
    # cannot be built, a warning counted in the summary
    unbuilt = sum("not built, so not checked" in line for line in proc.stderr.decode().splitlines())
    assert summary == f"1 Memcached valid, 0 error(s), {unbuilt} warning(s), 1 other object(s) ignored"
    rendered = cli("render", "--crd", str(crd), *files)
    assert rendered.returncode == 0, rendered.stderr.decode()
    [deployment] = [d.value for d in iter_documents(rendered.stdout) if d.value["kind"] == "Deployment"]
    assert deployment["metadata"]["name"] == "memcached-sample" and deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 11211


@needs_upstream
@pytest.mark.parametrize("project", PROJECTS)
def test_a_crd_piped_on_stdin_judges_as_the_file_does(project: str) -> None:
    # kubectl kustomize config/crd | memcached-gitops validate --crd - config/samples
    # the samples' files (the vendored config/samples holds only some of the files its kustomization lists,
    # so the directory, a kustomize application, does not build)
    crd, samples, _ = PROJECTS[project]
    files = sorted(str(p) for p in samples.glob("*.yaml"))
    piped = cli("validate", "--crd", "-", *files, stdin=crd.read_bytes())
    named = cli("validate", "--crd", str(crd), *files)
    assert b"valid" in named.stderr.splitlines()[-1]
    assert (piped.returncode, piped.stderr) == (named.returncode, named.stderr)


@needs_upstream
@pytest.mark.parametrize("project", ["multigroup install.yaml", "with-plugins install.yaml", "with-plugins CRD", "operator-sdk CRD"])
def test_a_string_port_is_refused_whichever_crd_comes_first_in_the_file(project: str) -> None:
    crd, _, name = PROJECTS[project]
    bad = sample(project).replace("containerPort: 11211", 'containerPort: "11211"')
    proc = cli("validate", "--crd", str(crd), "-", stdin=bad.encode())
    assert proc.returncode == 1, proc.stderr.decode()
    message = 'spec.containerPort: Invalid value: "string": spec.containerPort in body must be of type integer: "string"'
    assert message in proc.stderr.decode()
    assert proc.stderr.decode().splitlines()[-1].startswith("0 Memcached valid, 1 error(s)")


@needs_upstream
@pytest.mark.parametrize("project", ["multigroup install.yaml", "with-plugins install.yaml"])
def test_the_objects_of_the_files_other_crds_are_other_objects(project: str) -> None:
    crd, samples, _ = PROJECTS[project]
    busybox = (samples / "example.com_v1alpha1_busybox.yaml").read_text()
    proc = cli("validate", "--crd", str(crd), "-", stdin=busybox.encode())
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().splitlines()[-1] == "0 Memcached valid, 0 error(s), 0 warning(s), 1 other object(s) ignored"


@needs_upstream
@pytest.mark.parametrize("project", ["multigroup install.yaml", "with-plugins CRD", "book"])
def test_a_kind_no_crd_of_the_file_serves_keeps_the_servers_verdict(project: str) -> None:
    crd, _, _ = PROJECTS[project]
    typo = sample(project).replace("kind: Memcached", "kind: Memcache")
    proc = cli("validate", "--crd", str(crd), "-", stdin=typo.encode())
    assert proc.returncode == 1
    group_version = next(iter_documents(typo)).value["apiVersion"]
    assert f'no matches for kind "Memcache" in version "{group_version}"' in proc.stderr.decode()


@needs_upstream
def test_the_books_crd_has_no_containerport_and_no_default_size_yet_its_sample_renders() -> None:
    # the book's controller: 0 replicas unless spec.size is set (memcached_controller.go:153-155),
    # and ContainerPort 11211 (line 261); SOURCE.md quotes both
    crd = PROJECTS["book"][0]
    without_size = sample("book").replace("size: 1", "{}")  # spec: {}
    proc = cli("render", "--crd", str(crd), "-", stdin=without_size.encode())
    assert proc.returncode == 0, proc.stderr.decode()
    [deployment] = [d.value for d in iter_documents(proc.stdout) if d.value["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 0
    assert deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 11211


@needs_upstream
def test_a_cr_that_fails_to_render_is_not_counted_as_valid() -> None:
    # a name the API server accepts for a CR (a DNS subdomain) but that cannot be a label value
    crd = PROJECTS["book"][0]
    long_name = sample("book").replace("name: memcached-sample", "name: " + "memcached-sample." * 4 + "example")
    proc = cli("render", "--crd", str(crd), "-", stdin=long_name.encode())
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode().splitlines()[-1].startswith("0 Memcached valid, 1 error(s)")


@needs_upstream
def test_stdin_cannot_hold_both_the_crd_and_the_crs() -> None:
    proc = cli("validate", "--crd", "-", "-", stdin=PROJECTS["book"][0].read_bytes())
    assert proc.returncode == 2 and proc.stderr.decode() == (
        "error: --crd - and a path - both read standard input; give one of them as a file\n")


@needs_upstream
def test_every_vendored_file_names_its_commit() -> None:
    import hashlib
    import re

    for source in UPSTREAM.glob("*/SOURCE.md"):
        text = source.read_text()
        first = text.splitlines()[0]
        if " at " in first:  # one repository, one commit for the folder
            assert len(first.split(" at ")[-1]) == 40, first
            continue
        # several repositories: a section per file naming its commit and sha256 (../shared/upstream/flux)
        files = sorted(p for p in source.parent.iterdir() if p.name != "SOURCE.md")
        assert files
        for path in files:
            section = text.split(f"## {path.name}\n", 1)[1].split("\n## ", 1)[0]
            assert re.search(r"^- commit: [0-9a-f]{40}$", section, re.M), path.name
            assert f"- sha256: {hashlib.sha256(path.read_bytes()).hexdigest()}" in section, path.name
    assert {p.parent.name for p in UPSTREAM.glob("*/SOURCE.md")} == {"kubebuilder", "operator-sdk", "flux", "prometheus-operator"}
    assert all(Path(crd).exists() for crd, _, _ in PROJECTS.values())
