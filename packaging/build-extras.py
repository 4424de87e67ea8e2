#!/usr/bin/env python3
"""Generate the man pages and the shell completion files of qex from its click commands.

Every package recipe runs this at build time with the freshly built qex importable:

    PYTHONPATH=<where the build put qex> python3 packaging/build-extras.py OUTDIR

It writes
    OUTDIR/man/man1/qex.1, qex-submit.1, qex-config-set.1, ...   (one page per command,
                                                                 by click-man)
    OUTDIR/completions/qex.bash, _qex (zsh), qex.fish              (click's own scripts)

and nothing else. The pages come from the same help text as `qex CMD --help`, so they
cannot drift from the program. click-man (Debian: python3-click-man; PyPI: click-man)
renders the roff; qex's commands are imported lazily, so they are loaded into a plain
click group first.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

#: File name of each shell's completion script, as the shells look them up.
COMPLETION_FILES = {"bash": "qex.bash", "zsh": "_qex", "fish": "qex.fish"}


def for_a_page(command: click.Command) -> None:
    """Make one command's help fit a man page, in this process only: the text dedented,
    click's no-rewrap markers (a line holding only \\b) dropped, and hidden options left
    out (older click-man cannot skip them). Recurses into groups."""
    import inspect

    if command.help:
        lines = inspect.cleandoc(command.help).splitlines()
        command.help = "\n".join(line for line in lines if line.strip() != "\b")
    command.params = [p for p in command.params if not getattr(p, "hidden", False)]
    for sub in getattr(command, "commands", {}).values():
        for_a_page(sub)


def command_tree() -> click.Group:
    """qex's click group with every visible command loaded (hidden ones get no page)."""
    from qex.cli.app import cli

    ctx = click.Context(cli, info_name="qex")
    commands: dict[str, click.Command] = {}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if command is not None:
            commands[name] = command
    group = click.Group("qex", commands=commands, help=cli.help, params=list(cli.params),
                        short_help="a queued executor for one machine",
                        context_settings=cli.context_settings)
    for_a_page(group)
    return group


def write_man_pages(target: Path) -> list[Path]:
    from click_man.core import write_man_pages as render

    from qex import __version__

    target.mkdir(parents=True, exist_ok=True)
    render("qex", command_tree(), version=__version__, target_dir=str(target))
    return sorted(target.glob("*.1"))


def write_completions(target: Path) -> list[Path]:
    from click.shell_completion import get_completion_class

    from qex.cli.app import cli

    target.mkdir(parents=True, exist_ok=True)
    written = []
    for shell, name in COMPLETION_FILES.items():
        completer = get_completion_class(shell)
        assert completer is not None, shell
        path = target / name
        path.write_text(completer(cli, {}, "qex", "_QEX_COMPLETE").source() + "\n")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: build-extras.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    pages = write_man_pages(out / "man" / "man1")
    scripts = write_completions(out / "completions")
    print(f"build-extras: {len(pages)} man pages in {out / 'man' / 'man1'}, "
          f"{len(scripts)} completion files in {out / 'completions'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
