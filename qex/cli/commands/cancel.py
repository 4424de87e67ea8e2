"""`qex cancel ID...`: take queued jobs out of the queue before they start."""

from __future__ import annotations

import sys
from typing import Any

import click

from qex.cli.common import get_paths


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_queued

    return complete_queued(ctx, param, incomplete)


@click.command("cancel")
@click.argument("jobs", nargs=-1, required=True, metavar="ID...", shell_complete=_complete)
def command(jobs: tuple[str, ...]) -> None:
    """Take queued jobs out of the queue; each becomes `cancelled` and never runs. A job
    that already runs is refused: stop it with `qex kill`. In a group, the stages that
    already stopped are left alone."""
    from qex.cli.reach import open_connection
    from qex.cli.stop_jobs import Outcome, already_stopped, resolve_all, send
    from qex.core.states import FINAL

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    final = {s.value for s in FINAL}
    outcome = Outcome("cancel")
    with conn:
        for found in resolve_all(conn, paths, jobs):
            for record in found.jobs:
                job_id = str(record.get("id"))
                if not outcome.first_time(job_id):
                    continue
                if found.group is not None and str(record.get("state")) in final:
                    click.echo(already_stopped(record))
                    continue
                send(outcome, f"{job_id} left the queue", conn.cancel, job_id)
    sys.exit(outcome.code)
