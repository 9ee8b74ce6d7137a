"""Colour and progress for a person at a terminal, and never elsewhere: a pipe gets the bytes it
always got. The terminal cases run the command under a real pseudo-terminal (the pty module)."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memcached_gitops.terminal import ColorMode, paint, use_color, with_progress

BAD = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: -1}\n"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("mode,tty,environ,expected", [
    ("never", True, {}, False),
    ("always", False, {}, True),
    ("auto", False, {}, False),
    ("auto", True, {}, True),
    ("auto", True, {"NO_COLOR": "1"}, False),
    ("auto", True, {"NO_COLOR": ""}, True),  # no-color.org: present and not empty
    ("auto", True, {"TERM": "dumb"}, False),
])
def test_when_to_colour(mode: str, tty: bool, environ: dict, expected: bool) -> None:
    stream = Tty() if tty else io.StringIO()
    assert use_color(ColorMode(mode), stream, environ) is expected


def test_paint_keeps_the_text_and_marks_place_and_severity() -> None:
    line = "a.yaml:4:7: Memcached/a: spec.size: Invalid value: -1"
    painted = paint(line)
    assert painted == "\x1b[1ma.yaml:4:7\x1b[0m: \x1b[31mMemcached/a: spec.size: Invalid value: -1\x1b[0m"
    assert "\x1b[33m" in paint(line, "warning")
    assert painted.replace("\x1b[1m", "").replace("\x1b[31m", "").replace("\x1b[0m", "") == line


def run_in_pty(args: list[str], cwd: Path, env: dict[str, str], **streams: Any) -> bytes:
    """What the command shows on a terminal: its stdin, stdout and stderr, but those given in ``streams``."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "memcached_gitops", *args], cwd=cwd, env=env, close_fds=True,
                            **{"stdin": secondary, "stdout": secondary, "stderr": secondary, **streams})
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(primary)
    return b"".join(chunks)


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    (tmp_path / "bad.yaml").write_text(BAD)
    return tmp_path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CI", "TERM")}
    return {**env, "TERM": "xterm", **extra}


def test_on_a_terminal_diagnostics_are_coloured_unless_no_color_or_never(bad: Path) -> None:
    shown = run_in_pty(["validate", "bad.yaml"], bad, _env())
    assert b"\x1b[1mbad.yaml:4:" in shown and b"\x1b[31m" in shown
    assert b"\x1b[" not in run_in_pty(["validate", "bad.yaml"], bad, _env(NO_COLOR="1"))
    assert b"\x1b[" not in run_in_pty(["validate", "--color", "never", "bad.yaml"], bad, _env())
    assert b"\r\x1b[K" not in shown, "no progress line for work under a second"


def test_in_a_pipe_the_bytes_are_those_of_never_and_always_still_escapes_the_input(bad: Path) -> None:
    def piped(*args: str) -> bytes:
        return subprocess.run([sys.executable, "-m", "memcached_gitops", *args], cwd=bad, env=_env(), capture_output=True).stderr

    plain = piped("validate", "bad.yaml")
    assert plain == piped("validate", "--color", "never", "bad.yaml") and b"\x1b" not in plain
    (bad / "x\x1b[2J.yaml").write_text(BAD)
    always = piped("validate", "--color", "always", "x\x1b[2J.yaml")
    assert b"\x1b[1m" in always and b"x\\x1b[2J.yaml" in always and b"\x1b[2J" not in always, always


def test_a_progress_line_after_a_second_cleared_at_the_end() -> None:
    ticks = iter([0.0, 0.5, 1.2, 1.25, 1.4, 2.0])
    out = Tty()
    seen = list(with_progress(["a", "b", "c", "d", "e"], "checked", 5, stream=out, clock=lambda: next(ticks), enabled=True))
    assert seen == ["a", "b", "c", "d", "e"]
    assert out.getvalue() == ("\r\x1b[Kchecked 2 of 5 files" "\r\x1b[Kchecked 4 of 5 files" "\r\x1b[Kchecked 5 of 5 files"
                              "\r\x1b[K")


def test_no_progress_in_a_pipe_or_in_ci(monkeypatch) -> None:
    out = io.StringIO()
    assert list(with_progress(range(3), "checked", stream=out, clock=iter([0.0, 5.0, 10.0, 15.0]).__next__)) == [0, 1, 2]
    assert out.getvalue() == ""
    monkeypatch.setenv("CI", "true")
    tty = Tty()
    assert list(with_progress(range(3), "checked", stream=tty, clock=iter([0.0, 5.0, 10.0, 15.0]).__next__)) == [0, 1, 2]
    assert tty.getvalue() == ""


@pytest.mark.parametrize("terminal", ["stdout", "stderr"])
def test_colour_follows_the_stream_the_diagnostics_go_to(bad: Path, terminal: str) -> None:
    """Diagnostics go to stderr, so stderr's terminal decides: ``validate bad.yaml 2>log`` at a terminal
    writes no escapes into the log, and ``render apps/ > out.yaml`` still shows its diagnostics coloured."""
    other = "stderr" if terminal == "stdout" else "stdout"
    with (bad / "file").open("wb") as file:
        shown = run_in_pty(["validate", "bad.yaml"], bad, _env(), stdin=subprocess.DEVNULL, **{other: file})
    written = (bad / "file").read_bytes()
    diagnostics = shown if terminal == "stderr" else written
    assert b"bad.yaml:4:" in diagnostics
    assert (b"\x1b[31m" in diagnostics) is (terminal == "stderr"), diagnostics


def test_off_a_terminal_each_log_line_is_one_json_object_stamped_in_rfc_3339(capsys: pytest.CaptureFixture[str]) -> None:
    """Off a terminal the reconciler logs one JSON object per line, for log pipelines: its ``time`` is RFC
    3339 in UTC (what Go's time.Parse(time.RFC3339, ...) and Loki or Fluent Bit's RFC 3339 parsers read),
    never strftime's ``+0000`` offset, which they refuse."""
    import logging
    import re
    from datetime import UTC, datetime

    from memcached_gitops.cli import _setup_logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    before = datetime.now(UTC).replace(microsecond=0)
    _setup_logging("info")
    try:
        logging.getLogger("memcached_gitops.test").warning("a %s", "line")
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
    line = json.loads(capsys.readouterr().err)
    assert {k: line[k] for k in ("level", "logger", "msg")} == {"level": "warning", "logger": "memcached_gitops.test", "msg": "a line"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"]), line["time"]
    assert before <= datetime.fromisoformat(line["time"].replace("Z", "+00:00")) <= datetime.now(UTC)


def test_a_ci_job_with_a_terminal_gets_no_progress_line(tmp_path: Path) -> None:
    """A CI job run with a pseudo-terminal (``docker run -t``, GitLab's or Jenkins' tty, ``script``) sets
    ``CI``: the command writes no progress line into the job's log, however long the work takes. The
    same run without ``CI`` shows one (so the work is long enough to be shown at all)."""
    cr = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {{name: c{f}-{i}}}\nspec: {{size: 1}}\n"
    for f in range(3):  # three files of 8,000 CRs: over a second of work, a file at a time
        (tmp_path / f"crs{f}.yaml").write_text("---\n".join(cr.format(f=f, i=i) for i in range(8000)))
    assert b" of 3 files" in run_in_pty(["validate", "."], tmp_path, _env()), "a person at a terminal sees progress"
    assert b"checked" not in run_in_pty(["validate", "."], tmp_path, _env(CI="true"))


def test_the_progress_line_appears_at_its_delay_and_updates_at_its_interval_to_the_tick() -> None:
    """The line appears once the work has taken PROGRESS_AFTER seconds, not a tick before, and is rewritten when
    a tenth of a second has passed since it was last written, not a tick before (ten updates a second at most)."""
    from memcached_gitops.terminal import PROGRESS_AFTER

    first = 0.125  # a time from which the clock's steps below are exact in binary floating point
    ticks = iter([first - PROGRESS_AFTER, first - 1e-6, first, first + 0.1 - 1e-6, first + 0.1])
    out = Tty()
    assert list(with_progress("abcd", "checked", stream=out, clock=lambda: next(ticks), enabled=True)) == list("abcd")
    assert out.getvalue() == "\r\x1b[Kchecked 2 files" "\r\x1b[Kchecked 4 files" "\r\x1b[K"
