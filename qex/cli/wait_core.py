"""The body of `qex wait`, without click: the click command and the fast path both call it."""

from __future__ import annotations

from qex.cli.common import get_paths, print_json, warn
from qex.core.states import Exit, exit_code_for, first_nonzero


def wait_words(words: list[str], timeout: float | None, next_only: bool, quiet: bool,
               as_json: bool) -> None:
    """Wait for the jobs that `words` name and end the command with their code."""
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
        from qex.core.record_json import display_record

        shown = [display_record(r) for r in finals]
        print_json(shown[0] if next_only else shown)
    elif not quiet:
        for record in finals:
            print(jobcmd.result_line(record), flush=True)
    if next_only and pending:
        from qex.cli.fastwait import still_live_lines

        for line in still_live_lines(list(pending)):
            warn(line)
    raise SystemExit(first_nonzero([exit_code_for(r) for r in finals]))
