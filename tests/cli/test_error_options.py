"""An error that names a way out names one that exists: every ``--option`` a command's error
message mentions is an option of that command (its ``--help`` lists it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CR = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a, namespace: shop}\nspec: {size: 2}\n"
#: (command and arguments, extra environment): each ends in an error that may name an option
SCENARIOS = [
    (["render", "{dir}/cr.yaml"], {"MEMCACHED_GITOPS_MAX_OBJECTS": "1"}),
    (["render", "--max-objects", "0", "{dir}/cr.yaml"], {}),
    (["argocd-generate", "{dir}"], {"MEMCACHED_GITOPS_MAX_OBJECTS": "1"}),
    (["render", "{dir}/cr.yaml"], {"MEMCACHED_GITOPS_MAX_INPUT_SIZE": "10"}),
    (["validate", "{dir}/cr.yaml"], {"MEMCACHED_GITOPS_MAX_INPUT_SIZE": "10"}),
    (["render", "--crd", "-", "-"], {}),
    (["validate", "--crd", "{dir}/missing.yaml", "{dir}/cr.yaml"], {}),
]


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcached_gitops", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize(("args", "env"), SCENARIOS, ids=[" ".join(a) + " " + ",".join(e) for a, e in SCENARIOS])
def test_every_option_an_error_names_is_an_option_of_its_command(args: list[str], env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "cr.yaml").write_text(CR + "---\n" + CR.replace("name: a", "name: b"))
    proc = cli([a.format(dir=tmp_path) for a in args], env)
    assert proc.returncode != 0 and "error" in proc.stderr, proc.stderr
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", proc.stderr))
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", cli([args[0], "--help"], {"COLUMNS": "200"}).stdout))
    assert named <= options, f"{args[0]} names {sorted(named - options)}, which it does not have: {proc.stderr}"


@pytest.mark.parametrize("paths", [["-"], ["cr.yaml", "-"], ["-", "cr.yaml"], ["a.yaml", "-", "b.yaml"]])
def test_the_crd_and_a_path_never_both_read_standard_input(paths: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``--crd -`` and a path ``-`` both read standard input: given together, wherever ``-`` stands among
    the paths, the run is refused as a usage error (2) before anything is read."""
    from memcached_gitops.commands import make_validator

    with pytest.raises(SystemExit) as exc:
        make_validator("-", True, paths)
    assert exc.value.code == 2
    assert "--crd - and a path - both read standard input" in capsys.readouterr().err


def test_a_run_interrupted_by_sigint_exits_130_with_one_line() -> None:
    """Ctrl-C (SIGINT, also what a cancelled CI job or a hook runner's timeout sends) ends a command with
    130, 128 + SIGINT as a shell reports it, so a script tells a cancel from invalid input (1) or a usage
    error (2); one line on stderr, no traceback (commands.guarded, which every command runs under)."""
    # a background job of a non-interactive shell (CI's) starts with SIGINT ignored: Python's own handler put back first
    script = ("import os, signal\nfrom memcached_gitops.commands import guarded\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "guarded(lambda: [os.kill(os.getpid(), signal.SIGINT), sum(range(10 ** 6))])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, b"interrupted\n", b""), proc.stderr
