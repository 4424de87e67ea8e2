"""The body of `qex status`, free of click so that `qex.cli.fast` can answer the plain
`qex status <id> --json` without importing it."""

from __future__ import annotations

from typing import Any, NoReturn

from qex.core.states import FINAL, exit_code_for, first_nonzero


def show_status(paths: Any, word: str, *, as_json: bool, show_env: bool, no_logs: bool, wait: bool,
            follow: bool, quiet: bool, timeout: float | None, sel: Any, only_stdout: bool,
            only_stderr: bool) -> NoReturn:
    from qex.cli.reach import deadline_of, open_connection
    from qex.cli.resolve import resolve

    # The person's --timeout bounds the whole command, the look-up of the word included.
    until = deadline_of(timeout) if (wait or follow) else None
    conn = open_connection(paths, start=False, until=until)
    found = resolve(conn, paths, word, recover=wait or follow, until=until)
    records = found.jobs
    if follow:
        if len(records) != 1:
            from qex.cli.jobcmd import fail

            fail(f"`{word}` is a group of {len(records)} jobs, and --follow copies the "
                 "output of one; give the id of one job, or use --wait")
        from qex.cli.attaching import attach

        attach(paths, conn, records[0], timeout=timeout, stop_job=False)
    if wait:
        if conn is None and any(r.get("state") not in FINAL for r in records):
            # A queued job needs a coordinator to start; a status wait may start one.
            conn = open_connection(paths, start=True, until=until)
        from qex.cli.jobcmd import wait_for

        records, _ = wait_for(paths, conn, [dict(r) for r in records], timeout=timeout,
                              narrate=not (quiet or as_json), may_start=True, group=found.group)
    from qex.core.log_words import STATUS_STREAMS

    streams = ("stdout",) if only_stdout else ("stderr",) if only_stderr else STATUS_STREAMS
    if not quiet:
        from qex.cli.status_print import print_records

        print_records(paths, records, as_json=as_json, show_env=show_env, no_logs=no_logs,
                      sel=sel, streams=streams, group=found.group is not None)
    codes = [exit_code_for(r) for r in records]
    raise SystemExit(first_nonzero(codes) if (wait or quiet) else 0)
