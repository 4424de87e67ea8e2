"""`qex events`: one line for each change of a job, as the coordinator sees it.

An agent that drives many jobs reads this one stream instead of asking about each job. The
command ends with 0 at the coordinator's `bye` or after `--count` events, with 124 at
`--timeout`, and with 1 when the stream stops with no `bye` (the coordinator died).
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import click

from qex.cli.common import die, get_paths, warn


class _Deadline(Exception):
    """`--timeout` passed."""


@click.command("events")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per line. Use this in programs.")
@click.option("--since", "since_text", default="start", show_default=True, metavar="POSITION",
              help="start, now, <stream_id>:<seq> (the safe form) or a bare seq.")
@click.option("--count", type=click.IntRange(min=1), metavar="N",
              help="Stop after N job and gap events.")
@click.option("--timeout", "timeout_text", metavar="TIME",
              help="Stop after this time, with the exit code 124.")
def command(*, as_json: bool, since_text: str, count: int | None,
            timeout_text: str | None) -> None:
    """Stream the changes of every job: a `stream` line first, then `job` lines (and `gap`
    lines that count lost events), and `bye` when the coordinator stops. Keep the stream_id
    and the last seq, and give both to --since to continue."""
    from qex.cli import events_core
    from qex.cli.reach import open_connection, require
    from qex.client.errors import Refused
    from qex.core import protocol
    from qex.core.protocol import Result
    from qex.core.states import Exit
    from qex.core.units import UnitError, parse_duration

    try:
        since, bare = events_core.parse_since(since_text)
    except events_core.SinceError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    timeout: float | None = None
    if timeout_text is not None:
        try:
            timeout = parse_duration(timeout_text, what="time limit")
        except UnitError as exc:
            raise click.BadParameter(str(exc), param_hint="--timeout") from None
    code = events_core.stream(as_json, since_text, count, timeout)
    if code is not None:
        raise SystemExit(code)
    if bare:
        warn(events_core.BARE_SEQ_WARNING)

    deadline = None if timeout is None else time.monotonic() + timeout
    paths = get_paths()
    conn = open_connection(paths, start=True, until=deadline)
    assert conn is not None
    require(conn, "events", "write the event stream")

    def on_alarm(_signum: int, _frame: Any) -> None:
        raise _Deadline

    printer = events_core.Printer(as_json, count)
    try:
        if deadline is not None:
            signal.signal(signal.SIGALRM, on_alarm)
            signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))
        with conn:
            for message in conn.events(since):
                refused = protocol.error_of(message)
                if refused is not None:
                    raise Refused(*refused)
                event = message.get("event") if message.get("result") == Result.EVENT else message
                if isinstance(event, dict) and printer.show(event):
                    raise SystemExit(0)
    except _Deadline:
        sys.stdout.flush()
        assert timeout is not None
        die(events_core.timeout_sentence(timeout, printer.seen), Exit.WAIT_TIMEOUT)
    finally:
        if deadline is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
    die(events_core.CUT_OFF_SENTENCE, Exit.FAILURE)
