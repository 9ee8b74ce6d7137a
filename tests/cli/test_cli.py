"""The command line as CI jobs and the Argo CD plugin run it: a real subprocess each time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import DATA, REPO
from tests.support.cli import ERROR_LINE, EXAMPLES, assert_clean_failure, docs, run


def test_render_examples() -> None:
    proc = run("render", str(EXAMPLES))
    assert proc.returncode == 0, proc.stderr.decode()
    out = docs(proc.stdout)
    deployments = [d for d in out if d["kind"] == "Deployment"]
    assert len(deployments) == 4 and {d["kind"] for d in out} == {"Deployment", "Service", "PodDisruptionBudget"}
    # examples/crs holds a kustomization: its build is rendered, in kustomize's order
    built = docs(subprocess.run(["kubectl", "kustomize", str(EXAMPLES)], capture_output=True, check=True).stdout)
    assert [d["metadata"]["name"] for d in deployments] == [d["metadata"]["name"] for d in built]
    out = deployments
    assert sorted(d["metadata"]["name"] for d in out) == ["catalog-cache", "edge", "memcached-sample", "sessions"]


def test_render_is_byte_identical_across_runs() -> None:
    assert run("render", str(EXAMPLES)).stdout == run("render", str(EXAMPLES)).stdout


def test_validate_reports_file_line_column_object_field_message() -> None:
    proc = run("validate", str(DATA / "bad-crs.yaml"))
    err = assert_clean_failure(proc)
    lines = [line for line in err.splitlines() if not line.startswith("0 Memcached valid")]
    assert lines and all(ERROR_LINE.match(line) for line in lines), lines
    assert f"{DATA / 'bad-crs.yaml'}:7:3: Memcached/too-big: spec.size: Invalid value: 4: " in err
    assert ": Memcached/Bad_Name: spec.replicas: unknown field \"spec.replicas\"" in err
    # errors of one object come in source order, the note that CEL rules were not checked after them
    ours = [line for line in lines if "Bad_Name" in line]
    bad = [int(line.split(":")[1]) for line in ours if "rules were not checked" not in line]
    assert bad == sorted(bad)
    assert all("rules were not checked" not in line for line in ours[:len(bad)])


def test_validate_json_and_github_formats() -> None:
    proc = run("validate", "--format", "json", str(DATA / "bad-crs.yaml"))
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["valid"] is False
    assert {f["field"] for f in report["findings"]} >= {"spec.size", "metadata.name", "spec.replicas"}
    proc = run("validate", "--format", "github", str(DATA / "bad-crs.yaml"))
    first = proc.stdout.decode().splitlines()[0]
    assert first.startswith("::error file=") and ",line=7,col=3," in first


def test_valid_input_validates() -> None:
    proc = run("validate", str(EXAMPLES))
    assert proc.returncode == 0
    assert "4 Memcached valid, 0 error(s)" in proc.stderr.decode()


def test_validate_of_a_repository_counts_each_cr_and_object_once_beside_its_bases_and_overlays_builds(tmp_path: Path) -> None:
    """validate of a folder also builds each kustomization in it (what Argo CD and Flux deploy) for its
    problems, but the objects a build holds are the files' again: the summary a person reads ("N
    Memcached valid", "M other object(s) ignored", kustomization files among them) and the JSON's
    ``validCount`` that CI jobs read count each object of the files once, however many kustomizations (a
    base and an overlay) build them."""
    import shutil

    import yaml

    base = tmp_path / "apps" / "base"
    shutil.copytree(REPO / "examples" / "gitops-repo" / "apps" / "caches", base)
    (base / "settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n")
    kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
    kustomization["resources"].append("settings.yaml")
    (base / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    overlay = tmp_path / "apps" / "overlays" / "prod"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text("namespace: prod\nnamePrefix: prod-\nresources: [../../base]\n")
    objects = [d for f in kustomization["resources"] for d in yaml.safe_load_all((base / f).read_text()) if d]
    crs = sum(d["kind"] == "Memcached" for d in objects)
    assert crs >= 1 and len(objects) > crs
    built = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, check=True, text=True).stdout
    assert sum(d["kind"] == "Memcached" for d in yaml.safe_load_all(built)) == crs, "the overlay builds the base's CRs again"
    for form in (["validate", "."], ["validate", "-o", "json", "."]):  # kustomize: the venv's kubectl (tests/conftest.py)
        proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *form], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        ignored = len(objects) - crs + len(list(tmp_path.rglob("kustomization.yaml")))  # kustomize's configuration counts too
        expected = f"{crs} Memcached valid, 0 error(s), 0 warning(s), {ignored} other object(s) ignored"
        assert proc.stderr.splitlines()[-1] == expected, proc.stderr
        if "json" in form:
            assert json.loads(proc.stdout)["validCount"] == crs, proc.stdout


def test_stdin_and_include_input() -> None:
    text = (EXAMPLES / "variants.yaml").read_bytes() + b"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    proc = run("render", "--include-input", "-", stdin=text)
    assert proc.returncode == 0, proc.stderr.decode()
    out = docs(proc.stdout)
    assert [d["kind"] for d in out][:4] == ["Memcached"] * 3 + ["ConfigMap"]
    rendered = [d["kind"] for d in out[4:]]
    assert rendered.count("Deployment") == 3 and set(rendered) <= {"Deployment", "Service", "PodDisruptionBudget"}
    assert out[0]["spec"] == {"size": 1, "containerPort": 11211}, "CRs are emitted with their defaults"


def test_json_output_and_image_from_environment() -> None:
    sample = str(EXAMPLES / "memcached-sample.yaml")
    proc = run("render", "-o", "json", sample, env={"MEMCACHED_IMAGE": "mirror.example/memcached:1.6.30"})
    assert proc.returncode == 0
    items = json.loads(proc.stdout)["items"]
    assert items[0]["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror.example/memcached:1.6.30"
    flag = run("render", "-o", "json", "--image", "x/memcached:2", sample, env={"MEMCACHED_IMAGE": "y:1"})
    assert json.loads(flag.stdout)["items"][0]["spec"]["template"]["spec"]["containers"][0]["image"] == "x/memcached:2"


def test_output_dir_is_written_atomically_and_only_when_valid(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run("render", "--output-dir", str(out), str(EXAMPLES))
    assert proc.returncode == 0, proc.stderr.decode()
    files = sorted(p.name for p in out.iterdir())
    assert files == [
        "deployment-cdn-edge.yaml", "deployment-memcached-sample.yaml",
        "deployment-shop-catalog-cache.yaml", "deployment-shop-sessions.yaml",
        "poddisruptionbudget-cdn-edge-memcached.yaml", "poddisruptionbudget-shop-catalog-cache-memcached.yaml",
        "service-cdn-edge-memcached.yaml", "service-memcached-sample-memcached.yaml",
        "service-shop-catalog-cache-memcached.yaml", "service-shop-sessions-memcached.yaml",
    ]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = tmp_path / "bad.yaml"
    bad.write_text((EXAMPLES / "memcached-sample.yaml").read_text().replace("size: 1", "size: 9"))
    proc = run("render", "--output-dir", str(out), str(EXAMPLES), str(bad))
    assert_clean_failure(proc)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before, "a failed run must not touch the output"


def test_team_crd_with_a_higher_maximum() -> None:
    cr = b"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: big}\nspec: {size: 5}\n"
    assert run("validate", "-", stdin=cr).returncode == 1
    assert run("validate", "--crd", str(DATA / "crd-all-keywords.yaml"), "-", stdin=cr).returncode == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"kind: [unclosed\n", "invalid YAML"),
        (b"\x00\x01\x02\xff binary", "invalid YAML"),
        (b"a: [!!python/object/apply:os.system ls]\n", "unknown tag"),
        (b"a: !!binary '%%'\n", "invalid base64"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, content: bytes, message: str) -> None:
    f = tmp_path / "input.yaml"
    f.write_bytes(content)
    err = assert_clean_failure(run("render", str(f)))
    assert message in err and str(f) in err
    assert len([line for line in err.splitlines() if message in line]) == 1


@pytest.mark.parametrize(("content", "message"), [
    (b"", "no documents found"), (b"---\n# nothing\n", "no documents found"), (b"- just\n- a list\n", "must be a Kubernetes object"),
])
def test_empty_or_not_an_object_is_refused_on_stdin_or_with_require_objects(tmp_path: Path, content: bytes, message: str) -> None:
    """kubectl apply's verdict: on stdin, and with --require-objects for a file, an empty input or a
    document that is no object is an error (a file scanned in a repository is passed over instead)."""
    f = tmp_path / "input.yaml"
    f.write_bytes(content)
    err = assert_clean_failure(run("render", "--require-objects", str(f)))
    assert message in err and str(f) in err
    err = assert_clean_failure(run("render", "-", stdin=content))
    assert message in err


def test_files_of_no_kubernetes_object_are_passed_over_not_refused_as_empty(tmp_path: Path) -> None:
    """A repository holds Helm values and empty files: named as files (not stdin, no --require-objects),
    files whose documents are no Kubernetes object, or that have none, are passed over and the run
    succeeds; only stdin and --require-objects refuse them as empty input."""
    (tmp_path / "values.yaml").write_bytes(b"replicaCount: 2\nimage: {tag: '1.6'}\n")
    (tmp_path / "empty.yaml").write_bytes(b"# nothing yet\n")
    proc = run("validate", "-v", str(tmp_path))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and proc.stdout == b"", err
    assert "2 document(s) that are not Kubernetes objects passed over" in err and "no objects found" not in err, err


CR_ALONE = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 2}\n"


@pytest.mark.parametrize("command", ["validate", "render"])
def test_input_whose_every_list_is_empty_is_refused_as_kubectl_refuses_it(command: str) -> None:
    """Documents that are all lists with no items send no object: kubectl apply and create stop with "no
    objects passed to apply/create" (kubectl's create.go, the check after the visitor), so this is an error
    too, named as such and never an empty render that an automated sync would apply as nothing."""
    empty = b"apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: cache.example.com/v1alpha1\nkind: MemcachedList\nitems: []\n"
    proc = run(command, "-", stdin=empty)
    err = assert_clean_failure(proc)
    assert proc.stdout == b"" and err == "error: -: no objects found (every list is empty)\n", err


def test_alias_bomb(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i-1}"] * 9) + "]" for i in range(1, 12)]
    f = tmp_path / "bomb.yaml"
    f.write_text("\n".join(lines) + "\n")
    err = assert_clean_failure(run("validate", str(f)))
    assert "excessive aliasing" in err


def test_fifty_megabyte_file_is_a_clear_error_in_bounded_memory(tmp_path: Path) -> None:
    f = tmp_path / "huge.yaml"
    with f.open("w") as out:
        out.write("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: huge\n  annotations:\n    blob: ")
        out.write("x" * (50 * 1024 * 1024))
        out.write("\n")
    probe = (
        f"import resource, runpy, sys; sys.argv=['memcached-gitops','validate','--max-input-size','100M',{str(f)!r}]\n"
        "try:\n    runpy.run_module('memcached_gitops', run_name='__main__')\n"
        "except SystemExit as e:\n    code = e.code\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=300)
    rss_kb, code = proc.stdout.decode().split()
    # refused by whichever bound it reaches first: the one document over 3 MiB, read line by line as kubectl does
    assert code == "1" and "huge.yaml:1:1: document is larger than 3 MiB" in proc.stderr.decode()
    assert int(rss_kb) < 1024 * 1024, f"peak RSS {int(rss_kb) // 1024} MiB for a 50 MiB file"


@pytest.mark.parametrize("command", ["validate", "render"])
def test_the_input_size_option_outranks_the_environment_both_ways(tmp_path: Path, command: str) -> None:
    """--max-input-size, when given, is the cap whatever MEMCACHED_GITOPS_MAX_INPUT_SIZE says; the variable is
    the default of a run that gives no option (the plain form and the typer form alike)."""
    f = tmp_path / "cr.yaml"
    f.write_text(CR_ALONE)
    assert run(command, "--max-input-size", "1M", str(f), env={"MEMCACHED_GITOPS_MAX_INPUT_SIZE": "10"}).returncode == 0
    err = assert_clean_failure(run(command, "--max-input-size", "10", str(f), env={"MEMCACHED_GITOPS_MAX_INPUT_SIZE": "1M"}))
    assert "--max-input-size" in err, err


def test_a_reader_that_closes_the_pipe_early_ends_the_run_with_1_and_no_traceback(tmp_path: Path) -> None:
    """``render apps/ | head -1``: the pipe closed under a write is exit 1 and no Python traceback on stderr
    (commands.guarded), through the plain form and through the typer form (an option)."""
    (tmp_path / "crs.yaml").write_text("---\n".join(CR_ALONE.replace("name: a", f"name: c{i}") for i in range(400)))
    for args in (["render", str(tmp_path)], ["render", "-o", "json", str(tmp_path)]):
        proc = subprocess.run(f"{sys.executable} -m memcached_gitops {' '.join(args)} | head -c 1 >/dev/null; "
                              "echo \"exit ${PIPESTATUS[0]}\" >&2", shell=True, executable="/bin/bash", capture_output=True,
                              timeout=120, env={k: v for k, v in os.environ.items() if k != "MEMCACHED_IMAGE"})
        err = proc.stderr.decode()
        assert err.splitlines()[-1] == "exit 1" and "Traceback" not in err and "Exception ignored" not in err, err


def test_usage_errors_exit_2() -> None:
    assert_clean_failure(run("render", "--no-such-flag", str(EXAMPLES)), code=2)
    assert_clean_failure(run("render"), code=2)
    assert_clean_failure(run("validate", "--crd", "/nonexistent/crd.yaml", str(EXAMPLES)), code=2)


def test_missing_path_is_invalid_input() -> None:
    err = assert_clean_failure(run("render", "/nonexistent/dir"))
    assert "/nonexistent/dir: no such file or directory" in err


def test_schema_and_crd_commands() -> None:
    schema = json.loads(run("schema").stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["spec"]["properties"]["size"]["maximum"] == 3
    crd = run("crd").stdout.decode()
    assert crd == (REPO / "schemas" / "memcached-crd.yaml").read_text()


@pytest.mark.parametrize("command", [[], ["validate"], ["render"], ["argocd-generate"], ["krm"], ["schema"], ["diff"], ["reconcile"]])
def test_dash_h_is_help_on_every_command(command: list[str]) -> None:
    """kubectl, flux and argocd take -h; so does every command here."""
    proc = run(*command, "-h")
    assert proc.returncode == 0 and b"Usage: " in proc.stdout, proc.stderr.decode()  # plain or rich (typer uses rich when installed)
    assert proc.stdout == run(*command, "--help").stdout


def test_diff_without_a_cluster_names_the_kubeconfig_sources_it_tried(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "diff", str(EXAMPLES / "memcached-sample.yaml")],
                          capture_output=True, env=env, timeout=120)
    err = assert_clean_failure(proc, code=2)
    assert len(err.splitlines()) == 1 and "Service host/port" not in err, err
    assert "$KUBECONFIG unset" in err and f"{tmp_path}/.kube/config not found" in err and "in-cluster" in err


@pytest.mark.parametrize("command", [["diff", str(EXAMPLES / "memcached-sample.yaml")], ["reconcile", "--once"]])
def test_a_kubeconfig_that_cannot_be_read_is_named(tmp_path: Path, command: list[str]) -> None:
    """The kubernetes client's words ('Invalid kube-config file. No configuration found.') do not say
    which file: the one line does."""
    missing = tmp_path / "kube" / "config"
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *command, "--kubeconfig", str(missing)],
                          capture_output=True, timeout=120)
    err = assert_clean_failure(proc, code=2)
    assert len(err.splitlines()) == 1 and str(missing) in err and "Service host" not in err, err


@pytest.mark.parametrize(("options", "refusal"), [
    (["--shards", "--once"], "--shards splits the event-driven mode's CRs"),
    (["--shards", "--dry-run"], "--shards splits the event-driven mode's CRs"),
    (["--shards", "--no-leader-elect"], "--shards splits the event-driven mode's CRs"),
    (["--once", "--interval", "5m"], "--interval is the resync period of the event-driven mode"),
], ids=["shards-once", "shards-dry-run", "shards-no-leader-elect", "once-interval"])
def test_reconcile_refuses_the_options_that_do_not_go_together(tmp_path: Path, options: list[str], refusal: str) -> None:
    """--shards splits the event-driven mode's CRs among replicas by Leases, each replica writing its
    share: with --once, --dry-run (which writes nothing, not even a Lease) or --no-leader-elect it is a
    usage error; so is --interval (the event-driven mode's resync) with --once. Exit 2, said before any
    cluster is reached."""
    missing = tmp_path / "kube" / "config"
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "reconcile", *options, "--kubeconfig", str(missing)],
                          capture_output=True, timeout=120)
    err = assert_clean_failure(proc, code=2)
    assert err.startswith(f"error: {refusal}") and str(missing) not in err, err


def test_one_output_flag_as_kubectl_and_shell_completion() -> None:
    bad = str(DATA / "bad-crs.yaml")
    for fmt in ("json", "github"):
        assert run("validate", "-o", fmt, bad).stdout == run("validate", "--format", fmt, bad).stdout != b""
    script = run("--show-completion", "bash")
    assert script.returncode == 0 and b"complete" in script.stdout and b"memcached" in script.stdout


def test_the_real_errors_come_before_the_note_that_rules_were_not_checked(tmp_path: Path) -> None:
    # the server's note names no field and sits at the object's root (its first line): read first,
    # it hides what to correct, so every format lists it after the errors it refers to
    cr = tmp_path / "cache.yaml"
    cr.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a, namespace: shop}\n"
                  "spec:\n  size: three\n  resources: {limits: {memory: 1Gi}}\n")
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", str(cr)], capture_output=True, text=True)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 3, proc.stderr
    assert "spec.size: Invalid value" in lines[0] and "some validation rules were not checked" in lines[1], proc.stderr
    github = subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", "--format", "github", str(cr)],
                            capture_output=True, text=True)
    annotations = [line for line in github.stdout.splitlines() if line.startswith("::error")]
    assert "spec.size" in annotations[0] and "not checked" in annotations[1], github.stdout


def test_no_cluster_names_what_each_place_kubectl_looks_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """client-go's loading rules, in order: $KUBECONFIG, ~/.kube/config, in-cluster. The one line says
    what each held (a home kubeconfig present, the in-cluster variable set), and adds the client's own
    reason only when a kubeconfig was there to be read (its words are about that file, not a Service host)."""
    from memcached_gitops.reconciler.orchestration.main import connect

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    assert connect(None, None, None) is None
    err = capsys.readouterr().err
    tried = f"(tried $KUBECONFIG unset; {tmp_path}/.kube/config present; in-cluster (KUBERNETES_SERVICE_HOST unset)): "
    assert len(err.splitlines()) == 1 and tried in err, err
    (tmp_path / ".kube" / "config").unlink()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    assert connect(None, None, None) is None
    err = capsys.readouterr().err
    assert f"(tried $KUBECONFIG unset; {tmp_path}/.kube/config not found; in-cluster (KUBERNETES_SERVICE_HOST set)); give " in err, err


@pytest.mark.parametrize(("options", "note"), [([], True), (["--include-input"], False)])
def test_other_objects_are_said_to_be_ignored_only_when_they_are(options: list[str], note: bool) -> None:
    """Beside the CRs, objects of other kinds are left out of a render unless --include-input passes them:
    stderr says so (naming the option) exactly when they were left out, never when they were emitted."""
    text = (EXAMPLES / "variants.yaml").read_bytes() + b"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    proc = run("render", *options, "-", stdin=text)
    assert proc.returncode == 0, proc.stderr.decode()
    assert ("ConfigMap" in [d["kind"] for d in docs(proc.stdout)]) is not note
    said = "1 object(s) of other kinds ignored (use --include-input to pass them through): ConfigMap/c"
    assert (said in proc.stderr.decode()) is note, proc.stderr.decode()


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: A duration as --interval takes it: a decimal number of ASCII digits, then ms, s, m or h (none: seconds).
DURATION = r"(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<unit>ms|s|m|h)?"


@settings(max_examples=100, deadline=None)
@given(text=st.one_of(
    st.builds(lambda n, u: n + u, st.from_regex(r"\A[0-9]{0,3}(\.[0-9]{0,2})?\Z"), st.sampled_from(["", "ms", "s", "m", "h"])),
    st.text(alphabet="0123456789.smh \u00b2\u0665\uff15_-+eE", max_size=6)))
def test_a_duration_is_a_decimal_number_and_a_unit_else_a_usage_error(text: str) -> None:
    """--interval reads a decimal number of ASCII digits and a unit (ms, s, m, h; none is seconds): any
    other text, a superscript or another script's digit included, is a usage error (exit 2),
    never a traceback and never a number read from it."""
    from memcached_gitops.cli import _duration

    match = re.fullmatch(DURATION, text)
    if match:
        unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match["unit"]]
        assert _duration(text) == float(match["number"]) * unit
    else:
        with pytest.raises(SystemExit) as refused:
            _duration(text)
        assert refused.value.code == 2, text


def test_diff_of_invalid_input_is_an_error_never_drift(tmp_path: Path) -> None:
    """diff exits 0 for no drift, 1 for drift and 2 for an error: a CR the API server would refuse is an
    error, said before any cluster is asked, and never the 1 that a CI job reads as drift to apply."""
    bad = tmp_path / "cr.yaml"
    bad.write_text("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 9}\n")
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "diff", "--kubeconfig", str(tmp_path / "none"), str(bad)],
                          capture_output=True, timeout=120)
    assert proc.returncode == 2 and b"spec.size" in proc.stderr and proc.stdout == b"", proc.stderr


KRM_LIST = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"


@pytest.mark.parametrize(("stdin", "said"), [
    ("", "<stdin>: expected one config.kubernetes.io/v1 ResourceList"),
    (KRM_LIST + "items: []\n---\n" + KRM_LIST + "items: []\n", "<stdin>: expected one config.kubernetes.io/v1 ResourceList"),
    ("- " + KRM_LIST.replace("\n", "\n  "), "<stdin>: expected one config.kubernetes.io/v1 ResourceList"),
    ("apiVersion: v1\nkind: ConfigMap\nitems: []\n", "<stdin>: expected one config.kubernetes.io/v1 ResourceList"),
    (KRM_LIST + "items: just-a-string\n", "<stdin>: ResourceList: items: must be a list of objects, not "),
    (KRM_LIST + "items: []\nfunctionConfig: [1, 2]\n", "<stdin>: ResourceList: functionConfig: must be an object, not "),
    (KRM_LIST + "items: [\n", "<stdin>:"),
])
def test_every_way_krm_refuses_its_input_is_one_line_and_exit_1_with_nothing_on_stdout(stdin: str, said: str) -> None:
    """kustomize and kpt read a KRM function's exit code and stdout (functions spec: a non-zero exit is a failed
    function): input that is no single readable ResourceList exits 1, says why on one line, and writes no
    ResourceList a pipeline could take for the function's answer."""
    proc = run("krm", stdin=stdin.encode())
    err = assert_clean_failure(proc, 1)
    assert proc.stdout == b"" and err.startswith("error: " + said) and len(err.splitlines()) == 1, err


def test_krm_exits_0_with_its_answer_when_every_item_is_valid() -> None:
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c"}, "spec": {"size": 1}}
    proc = run("krm", stdin=json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [cr]}).encode())
    assert proc.returncode == 0, proc.stderr
    [out] = docs(proc.stdout)
    assert out["kind"] == "ResourceList" and "results" not in out and "Deployment" in [i["kind"] for i in out["items"]]


@pytest.mark.parametrize("annotations", [["config.kubernetes.io/path", "internal.config.kubernetes.io/index"],
                                         "config.kubernetes.io/path", 7], ids=["array of the names", "string", "number"])
def test_krm_reports_an_item_whose_annotations_are_no_map_as_that_items_error(annotations: object) -> None:
    """kpt and kustomize read an item's file from its annotations; an item whose annotations are no map (a
    list naming the path annotation, a string) has no path to give, and the API server refuses it
    (``cannot unmarshal ... ObjectMeta.annotations``). krm says so in a result for that item, exits 1, and
    never stops with a traceback before its ResourceList is written."""
    cr = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "c", "annotations": annotations},
          "spec": {"size": 1}}
    proc = run("krm", stdin=json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [cr]}).encode())
    err = assert_clean_failure(proc, 1)
    [out] = docs(proc.stdout)
    assert [(r["severity"], r["field"]["path"], "file" in r) for r in out["results"]] == [("error", "metadata.annotations", False)], out
    assert "Memcached/c: metadata.annotations: " in err, err


def test_schema_is_printed_for_each_version_the_crd_serves_and_refused_for_another() -> None:
    """``schema --version`` takes every version the CRD serves (exit 0, a JSON schema) and refuses any other
    as a usage error (exit 2) naming the served ones, never printing a schema of a version no server serves."""
    from memcached_gitops.schemas import load_crd

    crd = load_crd()
    for version in crd.versions:
        proc = run("schema", "--version", version)
        assert proc.returncode == 0 and json.loads(proc.stdout)["type"] == "object", proc.stderr
    proc = run("schema", "--version", "v9")
    err = assert_clean_failure(proc, 2)
    assert proc.stdout == b"" and err == f"error: version 'v9' is not served by the CRD (served: {', '.join(crd.versions)})\n"


#: The console script as the install puts it (what the pre-commit hook's entry and the Action's steps name).
CONSOLE = str(Path(sys.executable).parent / "memcached-gitops")


def _shipped_cr_with_a_misspelt_field() -> tuple[str, str, int]:
    """(text, field, line): the shipped sample CR with one of its spec fields written again misspelt, a
    field the built-in CRD does not have; ``line`` is where it stands (column 3)."""
    import yaml
    from memcached_gitops.schemas.crd import builtin_crd_text

    text = (EXAMPLES / "memcached-sample.yaml").read_text().rstrip("\n")
    crd = yaml.safe_load(builtin_crd_text())
    known = {k for v in crd["spec"]["versions"] for k in v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]}
    real = next(iter(yaml.safe_load(text)["spec"]))
    field = real + "e"
    assert real in known and field not in known
    return text + f"\n  {field}: 1\n", field, text.count("\n") + 2


def _action_step(name: str) -> str:
    import yaml

    return next(s["run"] for s in yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"] if s.get("name") == name)


def _hook_entries() -> dict[str, list[str]]:
    import yaml

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    return {h["id"]: h["entry"].split() for h in hooks}


def _through(entry: str, app: Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one entry point run on the folder ``app`` holding cache.yaml, as its client runs it."""
    from tests.support.argocd import generate, repo_server_env

    def sh(argv: list[str], stdin: str | None = None, env: dict | None = None) -> tuple[int, str, str]:
        proc = subprocess.run(argv, cwd=app, input=stdin, capture_output=True, text=True, timeout=300, env=env)
        return proc.returncode, proc.stdout, proc.stderr

    if entry.startswith("pre-commit hook "):
        argv = _hook_entries()[entry.removeprefix("pre-commit hook ")]
        assert argv[0] == "memcached-gitops", argv
        return sh([CONSOLE, *argv[1:], "cache.yaml"])
    if entry == "krm":
        import yaml

        obj = yaml.safe_load((app / "cache.yaml").read_text())
        obj["metadata"]["annotations"] = {"internal.config.kubernetes.io/path": "cache.yaml", "config.kubernetes.io/path": "cache.yaml"}
        return sh([CONSOLE, "krm"], json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [obj]}))
    if entry == "argocd-generate":
        proc = generate(app, repo_server_env(None))
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    if entry.startswith("the Action's "):
        script = app.parent / "step.sh"
        script.write_text(_action_step(entry.removeprefix("the Action's ").removesuffix(" step")))
        env = {**os.environ, "MEMCACHED_GITOPS": CONSOLE, "INPUT_PATHS": ".", "STRICT_BUILD": "true",
               "RENDER_TO": "out/rendered.yaml", "GITHUB_OUTPUT": str(app.parent / "github-output")}
        return sh(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env)
    return sh([CONSOLE, *entry.split(), "cache.yaml"])


ENTRY_POINTS = ["validate", "validate -v", "render", "render -o json", "krm", "argocd-generate",
                *(f"pre-commit hook {hook}" for hook in _hook_entries()), "the Action's Validate step", "the Action's Render step"]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_refuses_a_misspelt_field_as_an_error_and_emits_nothing(tmp_path: Path, entry: str) -> None:
    """kubectl apply --validate=strict (what Argo CD and Flux sync with) refuses a CR with a field the CRD
    does not have; pruning it would deploy a cache that silently ignores the setting. Every way the
    product is run (the plain and the option forms of validate and render, the KRM function, the Argo
    CD plugin's generate, each pre-commit hook as .pre-commit-hooks.yaml declares it, the Action's
    steps as action.yml has them) must refuse it the same way: exit 1, the field named as an error at
    its line (never a warning), and no manifest emitted that a pipeline could apply."""
    text, field, line = _shipped_cr_with_a_misspelt_field()
    app = tmp_path / "app"
    app.mkdir()
    (app / "cache.yaml").write_text(text)
    code, out, err = _through(entry, app)
    said = out + err
    assert code == 1, f"{entry}: exit {code}\n{said}"
    unknown = f'spec.{field}: unknown field "spec.{field}"'
    if entry == "krm":
        errors = [r for r in yaml_docs(out)[0]["results"] if r["severity"] == "error"]
        assert [(r["field"]["path"], r["file"]["path"]) for r in errors] == [(f"spec.{field}", "cache.yaml")], out
        assert f"cache.yaml: Memcached/memcached-sample: {unknown}" in err, err
    elif entry == "the Action's Validate step":
        assert f"::error file=cache.yaml,line={line},col=3,title=Memcached/memcached-sample::{unknown}" in out, said
    else:
        assert f"cache.yaml:{line}:3: Memcached/memcached-sample: {unknown}" in err, said
        assert "Deployment" not in out and out.strip() == "", f"{entry} emitted manifests:\n{out}"
    assert "warning: " not in said and "::warning" not in said, f"{entry}: the misspelt field said as a warning\n{said}"
    written = sorted(p.name for p in (app / "out").iterdir()) if (app / "out").exists() else []
    assert written == [], f"{entry} wrote a rendering: {written}"


def yaml_docs(text: str) -> list[dict]:
    return docs(text.encode())
