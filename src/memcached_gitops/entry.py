"""The console script: the plain ``render`` and ``validate`` start without the command-line framework.

``memcached-gitops validate PATH...`` and ``memcached-gitops render PATH...`` with no option (what
CI jobs and the pre-commit hook run, once per pull request or per commit) go straight to
commands.py, which imports neither typer nor click: their import is about 60 ms, more than the
rest of a one-CR run (bench/startup.py measures it beside ``kubectl kustomize``). Anything else
(an option, ``--help``, another command) goes through the typer CLI in cli.py, which defines every
command and option; the plain form behaves the same either way (tests/cli/test_startup.py).
"""

from __future__ import annotations

import sys

PLAIN_COMMANDS = ("validate", "render")


def plain_paths(args: list[str]) -> list[str] | None:
    """The paths of a plain render/validate, or None for anything else.

    Plain is the command and at least one path, no option (``-`` is stdin, a path). A ``--`` right
    after the command ends the options, as click and every POSIX tool read it: what follows is a
    path whatever it starts with, so a committed file named ``--crd=evil.yaml`` is a file, never an
    option (the pre-commit hook and the Action pass ``--`` before their file names).
    """
    if len(args) < 2 or args[0] not in PLAIN_COMMANDS:
        return None
    if args[1] == "--":
        return args[2:] or None
    return args[1:] if all(a == "-" or not a.startswith("-") for a in args[1:]) else None


def plain_invocation(args: list[str]) -> bool:
    """Whether ``args`` is a plain render/validate (see plain_paths)."""
    return plain_paths(args) is not None


def main() -> None:
    args = sys.argv[1:]
    paths = plain_paths(args)
    if paths is not None:
        from .commands import guarded, render_files, validate_files

        command = validate_files if args[0] == "validate" else render_files
        guarded(lambda: command(paths))
        return
    from .cli import main as cli_main

    cli_main()
