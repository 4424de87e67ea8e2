"""`qex kill ID...`: send a signal to running jobs (a group: stop its running stages and
take its queued stages out of the queue)."""

from __future__ import annotations

import sys
from typing import Any

import click

from qex.cli.common import get_paths


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_active

    return complete_active(ctx, param, incomplete)


@click.command("kill")
@click.argument("jobs", nargs=-1, required=True, metavar="ID...", shell_complete=_complete)
@click.option("--signal", "signal_text", default="TERM", show_default=True, metavar="SIGNAL",
              help="TERM, KILL, INT, HUP, QUIT, USR1, USR2 (with or without SIG), or 1 to 64.")
@click.option("--grace", default="10s", show_default=True, metavar="TIME",
              help="Send KILL to the job's process group if it still runs after this time; "
                   "0 sends nothing more.")
def command(jobs: tuple[str, ...], signal_text: str, grace: str) -> None:
    """Stop jobs that run. The job's whole process group gets the signal, and qex records
    the job as `killed`. A queued job is not killed: `qex cancel` takes it out of the queue."""
    from qex.cli.reach import open_connection
    from qex.cli.stop_jobs import Outcome, already_stopped, resolve_all, send
    from qex.core.states import FINAL
    from qex.core.units import UnitError, parse_duration
    from qex.platform.procs import parse_signal, signal_name

    try:
        signum = parse_signal(signal_text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--signal") from None
    try:
        grace_secs = parse_duration(grace, what="grace time") or 0.0
    except UnitError as exc:
        raise click.BadParameter(str(exc), param_hint="--grace") from None

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    final = {s.value for s in FINAL}
    outcome = Outcome("kill")
    with conn:
        for found in resolve_all(conn, paths, jobs):
            for record in found.jobs:
                job_id = str(record.get("id"))
                if not outcome.first_time(job_id):
                    continue
                state = str(record.get("state"))
                if found.group is not None and state in final:
                    click.echo(already_stopped(record))
                    continue
                if found.group is not None and state == "queued":
                    send(outcome, f"{job_id} left the queue", conn.cancel, job_id)
                    continue
                send(outcome, f"{job_id} received the signal {signal_name(signum)}",
                     conn.kill, job_id, signum, grace_secs)
    sys.exit(outcome.code)
