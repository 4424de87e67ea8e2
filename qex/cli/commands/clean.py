"""`qex clean`: delete the records of jobs that stopped, by id, by state, by age or by
directory. A record that unfinished work still needs stays, and the command says why. The
body is `qex.cli.clean_core`, which the fast path calls too."""

from __future__ import annotations

import sys
from typing import Any

import click

from qex.cli.dir_options import directory_options


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("clean")
@click.argument("words", nargs=-1, metavar="[ID|STATE]...", shell_complete=_complete)
@click.option("--all", "all_jobs", is_flag=True,
              help="Every job that stopped, of every agent of this user.")
@click.option("--state", "states", multiple=True, metavar="STATE",
              help="Jobs that stopped in this state (`done` = any final state). Repeatable.")
@click.option("--older-than", "older_than", metavar="TIME",
              help="Jobs that stopped at least this long ago, such as 7d.")
@directory_options
@click.option("--auto", is_flag=True,
              help="Short for: jobs here and below that stopped more than 1h ago.")
def command(*, words: tuple[str, ...], all_jobs: bool, states: tuple[str, ...],
            older_than: str | None, cwd_dir: str | None, under_dir: str | None,
            auto: bool) -> None:
    """Delete job records (the job directory with its logs). A word is a job id, a name or
    a group; a state word such as `done` or `failed` selects every job in that state. The
    filters only ever select jobs that stopped, and together they must all hold. This does
    not stop a running job."""
    from qex.cli.clean_core import CleanUsage, clean

    try:
        code = clean(words, all_jobs=all_jobs, states=states, older_than=older_than,
                     cwd_dir=cwd_dir, under_dir=under_dir, auto=auto)
    except CleanUsage as exc:
        if exc.param_hint is not None:
            raise click.BadParameter(exc.message, param_hint=exc.param_hint) from None
        raise click.UsageError(exc.message) from None
    sys.exit(code)
