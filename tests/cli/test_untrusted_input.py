"""Untrusted repositories (issue 11): read nothing outside the root, echo no contents, bound the input.

A directory argument is a root: a file under it is read only if its resolved path stays under it,
otherwise an error names the link and its target and the target is never opened (kustomize's
LoadRestrictionsRootOnly; Argo CD's out-of-bounds symlink check). Messages quote at most a short
excerpt; a refused input exits 1, one line per problem, with stdout empty and --output-dir untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from memcached_gitops.foundation.excerpt import ELLIPSIS, EXCERPT_LIMIT, PATH_LIMIT, excerpt, quote_value
from memcached_gitops.reconciler.decisions.drift import Drift

from tests.conftest import REPO
from tests.support.cli import assert_clean_failure, docs, run

GOOD = (REPO / "examples" / "crs" / "memcached-sample.yaml").read_text()
SECRET = "ghp_" + "SeCrEt0123456789" * 12  # a long token-like string (196 characters)
LEAKED = SECRET[: EXCERPT_LIMIT + 1]  # any run of more than the excerpt is a leak


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """tmp/repo/apps with one good CR; tmp/secret.txt and a FIFO outside the root."""
    apps = tmp_path / "repo" / "apps"
    apps.mkdir(parents=True)
    (apps / "good.yaml").write_text(GOOD)
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    os.mkfifo(tmp_path / "outside-fifo")  # opening it would block: proof that a target is never opened
    return apps


def refused(proc, *needles: str) -> str:
    err = assert_clean_failure(proc)
    assert proc.stdout == b"", "a refused input writes nothing to stdout"
    for needle in needles:
        assert needle in err, err
    assert LEAKED not in err
    return err


@pytest.mark.parametrize("command", [["validate"], ["render"], ["argocd-generate"]])
@pytest.mark.parametrize(("link", "target"), [
    ("leak.yaml", "../../secret.txt"),          # relative, a file
    ("abs.yaml", "{tmp}/secret.txt"),             # absolute, a file
    ("passwd.yaml", "/etc/passwd"),
    ("fifo.yaml", "../../outside-fifo"),          # would hang if opened
    ("etc", "/etc"),                              # absolute, a directory
    ("up", "../.."),                              # relative, a directory
])
def test_symlinks_out_of_the_root_are_errors_and_never_opened(repo: Path, command: list[str], link: str, target: str) -> None:
    target = target.format(tmp=repo.parent.parent)
    (repo / link).symlink_to(target)
    refused(run(*command, str(repo)), f"apps/{link}: symlink to {excerpt(target)!r} resolves outside the root")


def test_every_link_is_reported_one_line_each(repo: Path) -> None:
    (repo / "leak.yaml").symlink_to("../../secret.txt")
    (repo / "passwd.yaml").symlink_to("/etc/passwd")
    err = refused(run("validate", str(repo)))
    targets = [line.split(": ", 2)[2].split(" resolves")[0] for line in err.splitlines()]
    assert targets == ["symlink to '../../secret.txt'", "symlink to '/etc/passwd'"]


def test_a_chain_that_stays_inside_then_leaves_is_refused(repo: Path) -> None:
    (repo / "first.yaml").symlink_to("second.yaml")
    (repo / "second.yaml").symlink_to("../../secret.txt")
    err = refused(run("validate", str(repo)))
    assert "first.yaml: symlink to 'second.yaml' resolves outside the root" in err


def test_a_chain_that_leaves_and_comes_back_is_read(repo: Path) -> None:
    """The fully resolved path decides (kustomize evaluates symlinks the same way)."""
    (repo.parent.parent / "out.yaml").symlink_to(repo / "good.yaml")
    (repo / "back.yaml").symlink_to("../../out.yaml")
    proc = run("validate", str(repo))
    assert proc.returncode == 0 and "2 Memcached valid" in proc.stderr.decode(), proc.stderr.decode()


def test_symlinks_inside_the_root_are_fine(repo: Path) -> None:
    (repo / "alias.yaml").symlink_to("good.yaml")
    (repo / "sub").mkdir()
    (repo / "sub" / "linked-dir").symlink_to("..")  # a symlinked directory inside: not followed
    proc = run("render", str(repo.parent))
    assert proc.returncode == 0, proc.stderr.decode()
    assert [d["metadata"]["name"] for d in docs(proc.stdout) if d["kind"] == "Deployment"] == ["memcached-sample", "memcached-sample"]


def test_a_file_named_on_the_command_line_is_the_users_choice(repo: Path) -> None:
    proc = run("validate", "--require-objects", str(repo.parent.parent / "secret.txt"))
    err = assert_clean_failure(proc)
    assert "a document must be a Kubernetes object (a map), not a string of 196 characters" in err
    assert LEAKED not in err


def test_fifo_in_the_root_is_skipped_and_dev_zero_is_refused(repo: Path) -> None:
    os.mkfifo(repo / "pipe.yaml")
    proc = run("validate", str(repo))
    assert proc.returncode == 0, proc.stderr.decode()
    err = assert_clean_failure(run("validate", "/dev/zero"))
    assert len(err.splitlines()) == 2 and err.startswith("/dev/zero")
    err = assert_clean_failure(run("validate", "--max-input-size", "1Mi", "-", stdin=b"a" * (2 * 1024 * 1024)))
    assert "<stdin>: the input is larger than the limit of 1048576 bytes" in err


def test_input_above_the_cap_is_refused_and_output_dir_untouched(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.yaml").write_text("old\n")
    (repo / "padding.yaml").write_text("# " + "x" * 4096 + "\n")
    refused(run("render", "--max-input-size", "2k", "--output-dir", str(out), str(repo)),
            "padding.yaml: the input is larger than the limit of 2000 bytes (all files together")
    assert [p.name for p in out.iterdir()] == ["keep.yaml"]
    refused(run("render", str(repo), env={"MEMCACHED_GITOPS_MAX_INPUT_SIZE": "2k"}), "larger than the limit of 2000 bytes")
    assert run("render", "--max-input-size", "1M", str(repo)).returncode == 0
    assert run("render", "--max-input-size", "lots", str(repo)).returncode == 2


def test_a_document_over_three_mebibytes_is_refused_with_file_and_line(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text(GOOD + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  blob: " + "x" * (3 * 1024 * 1024) + "\n")
    line = GOOD.count("\n") + 2  # the document's first line, after the "---" that kubectl drops
    refused(run("validate", "--max-input-size", "10Mi", str(big)), f"big.yaml:{line}:1: document is larger than 3 MiB")


# --- no echo: a scalar document holding a secret, every command and output format ----------------

SCALAR = f"{SECRET}\n".encode()
NAMED = f"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: {SECRET.lower()}\nspec:\n  size: {SECRET}\n"


@pytest.mark.parametrize("content", [SCALAR, NAMED.encode()], ids=["scalar-document", "secret-in-fields"])
@pytest.mark.parametrize("command", [
    ["validate"], ["validate", "--format", "json"], ["validate", "--format", "github"],
    ["render"], ["render", "-o", "json"], ["render", "--output-dir", "{out}"], ["argocd-generate"],
    ["diff", "--kubeconfig", "/nonexistent"],
])
def test_a_secret_never_appears_in_any_output(tmp_path: Path, command: list[str], content: bytes) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "leak.yaml").write_bytes(content)
    args = [a.format(out=tmp_path / "out") for a in command] + [str(tmp_path / "in")]
    proc = run(*args)
    # a scalar document is no Kubernetes object: a repository's scan passes it over (validate, render exit 0)
    assert proc.returncode in ((0, 1, 2) if content == SCALAR else (1, 2)) and "Traceback" not in proc.stderr.decode()
    assert LEAKED.encode() not in proc.stdout + proc.stderr
    assert LEAKED.lower().encode() not in proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("item", [SECRET, {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                                           "metadata": {"name": SECRET.lower()}, "spec": {"size": SECRET}}])
def test_krm_results_quote_no_secret(item) -> None:
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [item]}
    proc = run("krm", stdin=json.dumps(resource_list).encode())
    assert proc.returncode == 1
    (out,) = docs(proc.stdout)
    assert out["results"] and LEAKED not in json.dumps(out["results"]) and LEAKED.lower() not in json.dumps(out["results"])
    assert LEAKED.encode() not in proc.stderr and LEAKED.lower().encode() not in proc.stderr
    proc = run("krm", stdin=SCALAR)
    assert proc.returncode == 1 and proc.stdout == b"" and LEAKED.encode() not in proc.stderr


def test_excerpt_helper() -> None:
    assert excerpt("short") == "short"
    assert excerpt("x" * 100) == "x" * EXCERPT_LIMIT + ELLIPSIS
    assert quote_value("x" * 100) == '"' + "x" * EXCERPT_LIMIT + ELLIPSIS + '"'
    assert quote_value([{"a": "b" * 100}]).endswith(ELLIPSIS) and len(quote_value([{"a": "b" * 100}])) == EXCERPT_LIMIT + 1


def test_reconciler_drift_messages_quote_an_excerpt_of_live_values() -> None:
    path = (("f", "spec"), ("f", "template"), ("f", "spec"), ("f", "containers"))
    drift = Drift(path, [{"name": "TOKEN", "value": SECRET}], None, ("kubectl-edit",))
    assert LEAKED not in drift.describe() and "kubectl-edit" in drift.describe()


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.decode() == "memcached-gitops 0.1.0 (Memcached cache.example.com/v1alpha1)\n"


@pytest.mark.parametrize("command", [["validate"], ["render"], ["validate", "--format", "github"]])
def test_a_file_name_with_a_line_break_or_escape_cannot_forge_a_log_line(tmp_path: Path, command: list[str]) -> None:
    """Git commits any file name: one holding a newline must not start a line of its own in a CI
    log, where GitHub Actions would read ``::error ...`` as a workflow command, nor send a terminal
    escape sequence."""
    root = tmp_path / "repo"
    root.mkdir()
    forged = "x\n::error file=README.md,line=1::forged\r\x1b[2Jy.yaml"
    (root / forged).write_text(GOOD.replace("size: 1", "size: 9"))
    proc = run(*command, str(root))
    err = assert_clean_failure(proc)
    lines = (proc.stdout.decode() if "github" in command else err).splitlines()
    assert not any(line.startswith("::error file=README.md") for line in lines), lines
    assert "\x1b" not in err + proc.stdout.decode()
    finding = next(line for line in lines if "spec.size" in line)
    assert "forged" in finding  # the whole name stays on the finding's own line, escaped


@pytest.mark.parametrize("command", [["validate"], ["render"], ["validate", "--format", "github"]])
def test_bidirectional_controls_in_a_name_are_escaped(tmp_path: Path, command: list[str]) -> None:
    """Trojan Source (CVE-2021-42574): a right-to-left override in a file or object name would make a
    terminal or an annotation show other text than the bytes hold; each control is written as \\uXXXX."""
    root = tmp_path / "repo"
    root.mkdir()
    name = "evil\u202egnp.\u2066x\u2069\u200f.yaml"
    (root / name).write_text(GOOD.replace("size: 1", "size: 9").replace("memcached-sample", "a\u202eb"))
    proc = run(*command, str(root))
    out = assert_clean_failure(proc) + proc.stdout.decode()
    assert not any(c in out for c in "\u202e\u2066\u2069\u200f"), out
    assert "evil\\u202egnp.\\u2066x\\u2069\\u200f.yaml" in out


def test_a_file_beyond_the_cap_is_refused_on_its_size_before_any_yaml_is_read(tmp_path: Path) -> None:
    """The cap is checked on the bytes first: a file whose size alone passes it is refused without
    being parsed (an invalid first line is never reported), the Argo CD repo-server's cost per refresh
    is a stat (bench/untrusted_input.py prints the time)."""
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.write(b"kind: [unclosed\n")
        f.truncate(14 * 1000 * 1000)
    err = refused(run("validate", str(big)), "larger than the limit of 10000000 bytes")
    assert "invalid YAML" not in err
    # all files together: two files each under the cap are refused when their sizes add up past it
    (tmp_path / "a.yaml").write_bytes(b"---\n# a\n" * 750_000)
    (tmp_path / "b.yaml").write_bytes(b"---\n# b\n" * 750_000)
    refused(run("validate", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")), "b.yaml: the input is larger than the limit")


# --- the eighth review: kustomize's own error line and the graph check's paths quote no more --------

WORDS = " ".join(f"w{i:02d}" for i in range(60)) + " LEAKED-TAIL"  # short words: each under 64, 251 in all
FOLDER = "F" * 200


def _leaked(planted: str, output: str) -> str | None:
    """The first run of more than the excerpt of ``planted`` that ``output`` shows, or None."""
    return next((planted[i:i + EXCERPT_LIMIT + 1] for i in range(len(planted) - EXCERPT_LIMIT)
                 if planted[i:i + EXCERPT_LIMIT + 1] in output), None)


def _kustomize_quotes_the_words(app: Path) -> str:
    (app / "kustomization.yaml").write_text(f'resources:\n- memcached-sample.yaml\n- "{WORDS}"\n')
    return WORDS


def _graph_check_names_the_folder(app: Path) -> str:
    (app / FOLDER).mkdir()
    (app / FOLDER / "kustomization.yaml").write_text("resources: [../..]\n")
    (app / "kustomization.yaml").write_text(f"resources: [memcached-sample.yaml, {FOLDER}]\n")
    return FOLDER


@pytest.mark.parametrize("plant", [_kustomize_quotes_the_words, _graph_check_names_the_folder],
                         ids=["kustomize-error-line", "graph-check-path"])
@pytest.mark.parametrize("command", [["validate", "."], ["validate", "--format", "github", "."], ["argocd-generate"]])
def test_no_message_quotes_more_than_an_excerpt_of_a_kustomization(tmp_path: Path, plant, command: list[str]) -> None:
    """kustomize's error line kept up to 300 characters, cutting only words over 64 (so ``w00 w01 …``
    came through, 235 characters of it), and the graph check printed a kustomization's path whole."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "memcached-sample.yaml").write_text(GOOD)
    planted = plant(app)
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *command], cwd=app, capture_output=True,
                          text=True, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in output, output
    assert "kustomize build" in output, output
    assert _leaked(planted, output) is None, output


@pytest.mark.parametrize("command", [["validate", "."], ["validate", "--format", "github", "."]])
def test_a_nested_build_that_fails_is_named_by_an_excerpt(tmp_path: Path, command: list[str]) -> None:
    """validate builds each kustomization its walk meets; one that fails is said in a line of its own."""
    (tmp_path / "memcached-sample.yaml").write_text(GOOD)
    (tmp_path / FOLDER).mkdir()
    (tmp_path / FOLDER / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *command], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    output = proc.stdout + proc.stderr
    assert "not built, so not checked" in output and "Traceback" not in output, output
    assert _leaked(f"./{FOLDER}", output) is None, output


@pytest.mark.parametrize("command", [["validate"], ["render"], ["validate", "-v"]])
def test_a_long_path_is_shown_by_its_end_on_a_line_of_text(tmp_path: Path, command: list[str]) -> None:
    """A repository's names nest up to Linux's 4,096 bytes a path: each line of text shows the end of
    one (``PATH_LIMIT`` characters, which name the file), never the whole; JSON keeps it whole."""
    deep = tmp_path
    for n in range(12):
        deep = deep / (chr(ord("a") + n) * 200)
    deep.mkdir(parents=True)
    (deep / "bad.yaml").write_text(GOOD.replace("size: 1", "size: 9"))
    (deep / "kustomization.yaml").write_text("resources: [bad.yaml]\n")
    proc = run(*command, str(tmp_path))
    err = assert_clean_failure(proc)
    lines = [line for line in err.splitlines() if "l" * 100 in line]  # every line that names the folder
    assert lines, err
    for line in lines:
        assert len(line) < PATH_LIMIT + 300, line
        assert line.startswith(ELLIPSIS), line
    data = json.loads(run("validate", "--format", "json", str(tmp_path)).stdout)
    assert any(f["file"].endswith(str(deep / "bad.yaml")) for f in data["findings"]), data


GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@e"]


def _base_and_branch(tmp_path: Path) -> Path:
    """tmp/repo, a git repository whose ``main`` holds the good CR, checked out on a new branch ``pr``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "cache.yaml").write_text(GOOD)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"], ["checkout", "-qb", "pr"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True)
    return repo


def _linked_repository(tmp_path: Path) -> Path:
    """tmp/repo, a git repository whose pull request commits ``apps`` as a link to tmp/outside (a
    runner's home with a Secret in it)."""
    outside = tmp_path / "outside" / "sub"
    outside.mkdir(parents=True)
    (outside / "creds.yaml").write_text(f"apiVersion: v1\nkind: Secret\nmetadata: {{name: runner}}\nstringData: {{token: {SECRET}}}\n")
    (outside / "kustomization.yaml").write_text("resources:\n- creds.yaml\n")  # a build root behind the link, too
    repo = _base_and_branch(tmp_path)
    (repo / "apps").symlink_to(tmp_path / "outside")
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "link"], cwd=repo, check=True)
    return repo


@pytest.mark.parametrize("named", ["apps", "./apps/sub", "apps/sub/creds.yaml"])
@pytest.mark.parametrize("command", [["validate", "-v"], ["render", "--include-input"], ["preview", "--base", "main"]])
def test_a_name_written_under_the_working_directory_is_never_followed_out_by_a_link(tmp_path: Path, named: str,
                                                                                   command: list[str]) -> None:
    """A workflow's ``paths: apps`` names the repository's folder; a pull request that commits ``apps``
    as a link to the runner's home must not make the product read it (a name written outside, or
    absolute, stays the user's own choice: test_a_file_named_on_the_command_line_is_the_users_choice)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = _linked_repository(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *command, "--", named, "cache.yaml"], cwd=repo,
                          capture_output=True, timeout=120)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode != 0 and SECRET not in out and "Traceback" not in out, out
    assert "resolves outside the working directory" in out, out


FORGED_NAME = "bad\r\n::error title=forged::PWNED\n##[stop-commands]tok1 ##[error]forged"


def _preview_repository(tmp_path: Path) -> Path:
    """A repository whose pull request adds a CR named to forge workflow commands in a CI log."""
    repo = _base_and_branch(tmp_path)
    (repo / "bad.yaml").write_text(GOOD.replace("memcached-sample", json.dumps(FORGED_NAME)))
    return repo


@pytest.mark.parametrize("command", [["validate"], ["render"], ["validate", "--format", "github"], ["preview", "--base", "main"],
                                     ["preview", "--base", "main", "--format", "markdown"]])
def test_no_input_starts_or_holds_a_workflow_command_in_any_report(tmp_path: Path, command: list[str]) -> None:
    """GitHub's runner reads ``::cmd::`` at a line's start and its older ``##[cmd]`` anywhere in a line
    (``##[stop-commands]`` would silence every later annotation of the step): a CR's name holding
    both, and line breaks, reaches no report as either; preview's text form, which CI logs print, included."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = _preview_repository(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *command, "."], cwd=repo, capture_output=True, timeout=120)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert "Traceback" not in out and "metadata.name" in out, out
    assert "##[" not in out, out
    ours = ("::error file=", "::warning file=")
    forged = [line for line in out.splitlines() if line.lstrip().startswith("::") and not line.startswith(ours)]
    assert not forged, forged
    assert "PWNED" in out, "the name is shown, escaped, not dropped"


@pytest.mark.parametrize("command", [["validate", "."], ["preview", "--base", "main", "."]])
def test_a_committed_program_never_runs_through_an_empty_path_entry(tmp_path: Path, command: list[str]) -> None:
    """An empty PATH entry (``PATH="$PATH:$EXTRA"``, EXTRA unset) means the working directory, the
    checkout: a committed ``./kustomize`` or ``./git`` must not run; the real ones, on absolute entries, do."""
    if shutil.which("git") is None or shutil.which("kubectl") is None:
        pytest.skip("git and kubectl are needed")
    repo = _preview_repository(tmp_path)
    (repo / "bad.yaml").unlink()
    (repo / "kustomization.yaml").write_text("resources: [cache.yaml]\n")
    for name in ("kustomize", "git"):
        (repo / name).write_text(f"#!/bin/sh\ntouch {tmp_path}/ran-{name}\nexit 1\n")
        (repo / name).chmod(0o755)
    path = os.pathsep.join(["", str(Path(shutil.which("kubectl")).parent), str(Path(shutil.which("git")).parent), "/usr/bin", "/bin"])
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", *command], cwd=repo, capture_output=True, timeout=120,
                          env={**os.environ, "PATH": path})
    assert not list(tmp_path.glob("ran-*")), "a program of the repository ran"
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("named", [".", "apps", "apps/leak.yaml"])
def test_a_committed_link_into_git_s_folder_is_never_read(tmp_path: Path, named: str) -> None:
    """actions/checkout keeps the job's token in .git/config: a committed ``apps/leak.yaml -> ../.git/config``
    is refused by the walk and by name, as the kustomize check refuses any path through .git/."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "apps").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {SECRET}"], cwd=repo, check=True)
    (repo / "apps" / "good.yaml").write_text(GOOD)
    (repo / "apps" / "leak.yaml").symlink_to("../.git/config")
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", named], cwd=repo, capture_output=True, timeout=120)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode != 0 and LEAKED not in out and "Traceback" not in out, out
    assert "resolves into .git/" in out or "resolves outside the root" in out, out


@pytest.mark.parametrize("lead", [" ", "\t", "\u00a0", "\u3000", "\u2003"])
def test_a_file_name_starting_with_white_space_then_colons_starts_no_workflow_command(tmp_path: Path, lead: str) -> None:
    """The runner trims a line's leading white space (.NET ``TrimStart``) before it looks for ``::``, and
    pre-commit passes bare names: a committed `` ::stop-commands::x.yaml`` would start its finding's line."""
    names = [f"{lead}::stop-commands::pwn.yaml", f"{lead}::warning title=FORGED::pwn.yaml"]
    for name in names:
        (tmp_path / name).write_text(GOOD.replace("size: 1", "size: 9"))
    proc = subprocess.run([sys.executable, "-m", "memcached_gitops", "validate", "--", *names], cwd=tmp_path,
                          capture_output=True, timeout=120)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 1 and out.count("Invalid value: 9") == 2, out
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")], out
