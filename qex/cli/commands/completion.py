"""`qex completion [bash|zsh|fish]`: print a shell completion script.

The script is click's own; it calls `qex` back with `_QEX_COMPLETE` set at each Tab press.
A shell's start-up file runs this command each time, so the fast path prints the scripts
from `qex.cli.completion_scripts`, written from `script` by `qex.cli.fastgen`.
The commands that take job ids offer the ids and names of the jobs, newest first, from the
coordinator when one runs and from the disk otherwise, never starting one. A Tab press is
answered without click where `qex.cli.fastcomplete` can follow the line.
"""

from __future__ import annotations

import os

import click

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", required=False, type=click.Choice(SHELLS))
def command(*, shell: str | None) -> None:
    """Print the completion script for SHELL (default: the shell in $SHELL).

    \b
    bash:  eval "$(qex completion bash)"       in ~/.bashrc
    zsh:   eval "$(qex completion zsh)"        in ~/.zshrc
    fish:  qex completion fish > ~/.config/fish/completions/qex.fish
    """
    if shell is None:
        guess = os.path.basename(os.environ.get("SHELL", ""))
        if guess not in SHELLS:
            raise click.UsageError(
                f"qex cannot tell your shell from SHELL=`{guess}`; name it: "
                f"`qex completion {'|'.join(SHELLS)}`")
        shell = guess
    click.echo(script(shell))


def script(shell: str) -> str:
    """click's completion script of `qex` for `shell` (also written into
    `qex.cli.completion_scripts` by `qex.cli.fastgen`, which the fast path prints)."""
    from click.shell_completion import get_completion_class

    from qex.cli.app import cli
    from qex.cli.help_fast import COMPLETE_VAR

    completer = get_completion_class(shell)
    if completer is None:
        raise click.UsageError(f"click has no completion for `{shell}`")
    return completer(cli, {}, "qex", COMPLETE_VAR).source()
