"""`qex wait ID...`: block until jobs stop, and give their exit code.

This is the monitor loop an agent should never write by hand: it waits for the PROCESS (the
coordinator answers when the record is final), not for a proxy such as a log line. It never
starts a coordinator: with none running it reads the records on disk, and the supervisor of
a running job still writes the final record there.
"""

from __future__ import annotations

from typing import Any

import click


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("wait")
@click.argument("words", metavar="ID...", nargs=-1, required=True, shell_complete=_complete)
@click.option("--timeout", "timeout_text", metavar="TIME",
              help="Stop waiting after this time (exit 124); the jobs go on.")
@click.option("--next", "next_only", is_flag=True,
              help="Return when the first of the jobs stops; the others keep running unwatched.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing but faults; the exit code is the answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the final records as JSON.")
def command(words: tuple[str, ...], timeout_text: str | None, next_only: bool, quiet: bool,
            as_json: bool) -> None:
    """Wait for jobs (ids, names or group ids) to stop; exit with the first non-zero code.

    Groups expand to their jobs. Ctrl-C stops the wait (122) and never the jobs.
    """
    from qex.cli import jobcmd
    from qex.core.units import UnitError, parse_duration

    if quiet and as_json:
        jobcmd.fail("--quiet prints nothing and --json prints the records; give one of them")
    timeout: float | None = None
    if timeout_text is not None:
        try:
            timeout = parse_duration(timeout_text, what="--timeout")
        except UnitError as exc:
            jobcmd.fail(str(exc))
    from qex.cli.wait_core import wait_words

    with jobcmd.interruptible(list(words)):
        wait_words(list(words), timeout, next_only, quiet, as_json)
