"""`qex cancel ID...`: take queued jobs out of the queue before they start."""

from __future__ import annotations

from typing import Any

import click


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_queued

    return complete_queued(ctx, param, incomplete)


@click.command("cancel")
@click.argument("jobs", nargs=-1, required=True, metavar="ID...", shell_complete=_complete)
def command(jobs: tuple[str, ...]) -> None:
    """Take queued jobs out of the queue; each becomes `cancelled` and never runs. A job
    that already runs is refused: stop it with `qex kill`. In a group, the stages that
    already stopped are left alone."""
    from qex.cli.stop_core import cancel_jobs

    cancel_jobs(jobs)
