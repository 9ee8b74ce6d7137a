"""The terminal module's rules in-process (terminal.use_color, paint, shows_progress, with_progress),
beside tests/cli/test_terminal.py's runs under a pseudo-terminal, which mutation testing cannot see:
a person at a terminal gets the progress line, an explicit choice wins over the stream, and a
stream with no ``isatty`` (a program's own writer) is treated as no terminal."""

from __future__ import annotations

import io

import pytest

from memcached_gitops.terminal import RED, RESET, ColorMode, paint, shows_progress, use_color, with_progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Writer:
    """A stream as a program embedding the command line may pass: ``write`` and ``flush``, no ``isatty``."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_a_person_at_a_terminal_outside_ci_sees_the_progress_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``enabled``, whether to show progress is the stream's: a terminal, and no CI variable."""
    monkeypatch.delenv("CI", raising=False)
    out = Tty()
    assert shows_progress(out, {}) is True
    ticks = iter([0.0, 2.0, 4.0])
    assert list(with_progress(["a", "b"], "checked", 2, stream=out, clock=lambda: next(ticks))) == ["a", "b"]
    assert out.getvalue() == "\r\x1b[Kchecked 1 of 2 files\r\x1b[Kchecked 2 of 2 files\r\x1b[K"


def test_an_explicit_enabled_wins_over_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """``enabled=True`` shows progress on a stream that is no terminal, ``enabled=False`` hides it on one."""
    monkeypatch.delenv("CI", raising=False)
    piped, tty = io.StringIO(), Tty()
    assert list(with_progress(["a"], "checked", stream=piped, clock=iter([0.0, 2.0]).__next__, enabled=True)) == ["a"]
    assert piped.getvalue() == "\r\x1b[Kchecked 1 files\r\x1b[K"
    assert list(with_progress(["a"], "checked", stream=tty, clock=iter([0.0, 2.0]).__next__, enabled=False)) == ["a"]
    assert tty.getvalue() == ""


def test_a_stream_without_isatty_gets_no_colour_and_no_progress() -> None:
    """A writer with no ``isatty`` is no terminal: ``auto`` does not colour it, no progress line is
    written to it, and asking does not raise."""
    writer = Writer()
    assert use_color(ColorMode.auto, writer, {}) is False  # type: ignore[arg-type]
    assert shows_progress(writer, {}) is False  # type: ignore[arg-type]
    assert list(with_progress(["a", "b"], "checked", stream=writer, clock=iter([0.0, 5.0, 10.0]).__next__)) == ["a", "b"]  # type: ignore[arg-type]
    assert writer.text == ""


def test_a_line_without_a_place_is_painted_whole_in_the_severity_colour() -> None:
    """A diagnostic with no ``WHERE: `` prefix has no place to make bold: the whole line is red."""
    assert paint("no place in this line") == f"{RED}no place in this line{RESET}"
