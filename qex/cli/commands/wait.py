"""`qex wait ID...`: block until jobs stop, and give their exit code.

This is the monitor loop an agent should never write by hand: it waits for the PROCESS (the
coordinator answers when the record is final), not for a proxy such as a log line. It never
starts a coordinator: with none running it reads the records on disk, and the supervisor of
a running job still writes the final record there.
"""

from __future__ import annotations

from typing import Any

import click

from qex.cli.common import get_paths, print_json, warn
from qex.core.states import Exit, exit_code_for, first_nonzero


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
    with jobcmd.interruptible(list(words)):
        _wait(list(words), timeout, next_only, quiet, as_json)


def _wait(words: list[str], timeout: float | None, next_only: bool, quiet: bool,
          as_json: bool) -> None:
    from qex.cli import jobcmd
    from qex.cli.reach import deadline_of, open_connection
    from qex.cli.resolve import resolve
    from qex.cli.waiting import pause_notice

    paths = get_paths(Exit.QEX_FAILED)
    # --timeout bounds the whole command: connecting, the look-up of each word, the wait.
    until = deadline_of(timeout)
    conn = open_connection(paths, start=False, until=until)
    records: list[dict[str, object]] = []
    seen: set[str] = set()
    group: str | None = None
    for word in words:
        found = resolve(conn, paths, word, recover=True, until=until)
        if found.group is not None and len(words) == 1:
            group = found.group
        for record in found.jobs:
            job_id = str(record["id"])
            if job_id not in seen:
                seen.add(job_id)
                records.append(dict(record))
    narrate = not (quiet or as_json)
    if narrate:
        notice = pause_notice(conn)
        if notice:
            warn(notice)
    finals, pending = jobcmd.wait_for(
        paths, conn, records, timeout=timeout, narrate=narrate, may_start=True,
        group=group, next_only=next_only,
    )
    if as_json:
        from qex.cli.record_view import display_record

        shown = [display_record(r) for r in finals]
        print_json(shown[0] if next_only else shown)
    elif not quiet:
        for record in finals:
            click.echo(jobcmd.result_line(record))
    if next_only and pending:
        warn(f"{len(pending)} job(s) did not stop, and no command watches them now; wait again:")
        warn("  qex wait --next " + " ".join(pending))
    raise SystemExit(first_nonzero([exit_code_for(r) for r in finals]))
