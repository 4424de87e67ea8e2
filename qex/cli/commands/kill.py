"""`qex kill ID...`: send a signal to running jobs (a group: stop its running stages and
take its queued stages out of the queue)."""

from __future__ import annotations

from typing import Any

import click


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
    from qex.core.signal_words import parse_signal
    from qex.core.units import UnitError, parse_duration

    try:
        signum = parse_signal(signal_text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--signal") from None
    try:
        grace_secs = parse_duration(grace, what="grace time") or 0.0
    except UnitError as exc:
        raise click.BadParameter(str(exc), param_hint="--grace") from None

    from qex.cli.stop_core import kill_jobs

    kill_jobs(jobs, signum, grace_secs)
