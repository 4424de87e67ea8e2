"""`qex events`: one line for each change of a job, as the coordinator sees it.

An agent that drives many jobs reads this one stream instead of asking about each job. The
command ends with 0 at the coordinator's `bye` or after `--count` events, with 124 at
`--timeout`, and with 1 when the stream stops with no `bye` (the coordinator died).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

import click

from qex.cli.common import die, get_paths, warn


class _Deadline(Exception):
    """`--timeout` passed."""


def parse_since(text: str) -> tuple[Any, bool]:
    """The wire value of `--since`, and whether it is a bare number (which needs a warning)."""
    word = text.strip()
    lowered = word.lower()
    if lowered in ("start", "all"):
        return "start", False
    if lowered in ("now", "live"):
        return "now", False
    if word.isdigit():
        return {"after": {"seq": int(word), "stream": None}}, True
    stream, sep, seq = word.rpartition(":")
    if sep and stream and seq.isdigit():
        return {"after": {"seq": int(seq), "stream": stream}}, False
    raise click.BadParameter(
        f"`{text}` is not a position; give start, now, <stream_id>:<seq> or a bare seq",
        param_hint="--since",
    )


def _display(event: dict[str, Any]) -> dict[str, Any]:
    """The event with the job's names in safe form, as `qex list` would show them."""
    from qex.core.names import safe_name
    from qex.core.record_json import display_record

    shown = dict(event)
    if isinstance(shown.get("name"), str):
        shown["name"] = safe_name(shown["name"])
    if isinstance(shown.get("job"), dict):
        shown["job"] = display_record(shown["job"])
    return shown


def _text_line(event: dict[str, Any]) -> str | None:
    from qex.cli.queue_lines import clock
    from qex.cli.record_view import JobView, note_text
    from qex.core.names import printable_line, safe_name, short_id

    kind = event.get("event")
    at = event.get("time")
    when = clock(float(at)) if isinstance(at, (int, float)) else "--:--:--"
    if kind == "job":
        job = event.get("job")
        note = note_text(JobView(job)) if isinstance(job, dict) and job else ""
        previous = event.get("previous")
        change = f"{previous} -> " if previous and event.get("change") == "state" else ""
        name = safe_name(str(event.get("name") or "job"))
        return (f"{when}  {event.get('seq', ''):>6}  {short_id(str(event.get('id', '')))}  "
                f"{change}{event.get('state', '?'):<10}  {name}" + (f"  {note}" if note else ""))
    if kind == "gap":
        missed = event.get("missed")
        count = "an unknown number of" if missed is None else str(missed)
        reason = printable_line(str(event.get("reason") or ""))
        return f"{when}  GAP: {count} event(s) lost; {reason}"
    if kind == "stream":
        return (f"{when}  stream {event.get('stream_id')} of the coordinator pid "
                f"{event.get('pid')} (version {event.get('version')}), holding events "
                f"{event.get('first_seq')} to {event.get('last_seq')}")
    if kind == "bye":
        return f"{when}  BYE: {printable_line(str(event.get('reason') or ''))}"
    return None


@click.command("events")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per line. Use this in programs.")
@click.option("--since", "since_text", default="start", show_default=True, metavar="POSITION",
              help="start, now, <stream_id>:<seq> (the safe form) or a bare seq.")
@click.option("--count", type=click.IntRange(min=1), metavar="N",
              help="Stop after N job and gap events.")
@click.option("--timeout", "timeout_text", metavar="TIME",
              help="Stop after this time, with the exit code 124.")
def command(*, as_json: bool, since_text: str, count: int | None,  # noqa: C901, PLR0912 (the options of `qex events` in turn)
            timeout_text: str | None) -> None:
    """Stream the changes of every job: a `stream` line first, then `job` lines (and `gap`
    lines that count lost events), and `bye` when the coordinator stops. Keep the stream_id
    and the last seq, and give both to --since to continue."""
    from qex.cli.reach import open_connection, require
    from qex.client.errors import Refused
    from qex.core import protocol
    from qex.core.protocol import Result
    from qex.core.states import Exit
    from qex.core.units import UnitError, parse_duration

    since, bare = parse_since(since_text)
    timeout: float | None = None
    if timeout_text is not None:
        try:
            timeout = parse_duration(timeout_text, what="time limit")
        except UnitError as exc:
            raise click.BadParameter(str(exc), param_hint="--timeout") from None
    if bare:
        warn("a bare number cannot tell this coordinator's events from those of an earlier "
             "one; give `<stream_id>:<seq>` so qex can say when the numbering changed")

    deadline = None if timeout is None else time.monotonic() + timeout
    paths = get_paths()
    conn = open_connection(paths, start=True, until=deadline)
    assert conn is not None
    require(conn, "events", "write the event stream")

    def on_alarm(_signum: int, _frame: Any) -> None:
        raise _Deadline

    seen = 0
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
                if not isinstance(event, dict):
                    continue
                kind = event.get("event")
                if as_json:
                    click.echo(json.dumps(_display(event), separators=(",", ":")))
                else:
                    line = _text_line(event)
                    if line is not None:
                        click.echo(line)
                if kind == "bye":
                    raise SystemExit(0)
                if kind in ("job", "gap"):
                    seen += 1
                    if count is not None and seen >= count:
                        raise SystemExit(0)
    except _Deadline:
        sys.stdout.flush()
        from qex.core.units import format_duration

        die(f"the stream reached its time limit of {format_duration(timeout)} after {seen} "
            "event(s); run the command again with --since to continue", Exit.WAIT_TIMEOUT)
    finally:
        if deadline is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
    die("the coordinator closed the event stream and gave no reason, so it probably stopped "
        "without warning; the job records on disk are correct, so run `qex events` again to "
        "read the stream of the next coordinator", Exit.FAILURE)
