"""The console script: the plain ``render`` and ``validate`` start without the command-line framework.

``memcached-gitops validate PATH...`` and ``memcached-gitops render PATH...`` with no option (what
CI jobs and the pre-commit hook run, once per pull request or per commit) go straight to
commands.py, which imports neither typer nor click: their import is about 60 ms, more than the
rest of a one-CR run (bench/startup.py measures it beside ``kubectl kustomize``). Anything else
(an option, ``--help``, another command) goes through the typer CLI in cli.py, which defines every
command and option; the plain form behaves the same either way (tests/test_startup.py).
"""

from __future__ import annotations

import sys

PLAIN_COMMANDS = ("validate", "render")


def plain_invocation(args: list[str]) -> bool:
    """A plain render/validate: the command and at least one path, no option (``-`` is stdin, a path)."""
    return len(args) >= 2 and args[0] in PLAIN_COMMANDS and all(a == "-" or not a.startswith("-") for a in args[1:])


def main() -> None:
    args = sys.argv[1:]
    if plain_invocation(args):
        from .commands import guarded, render_files, validate_files

        command = validate_files if args[0] == "validate" else render_files
        guarded(lambda: command(args[1:]))
        return
    from .cli import main as cli_main

    cli_main()
