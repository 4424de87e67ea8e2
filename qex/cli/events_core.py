"""`qex events`'s body without click: the position, the lines, and the stream on the lean wire.

An agent that waits for the next change of its jobs runs `qex events --since S --count 1`
again and again, so the command's start-up is paid per event. The fast handler and the click
command share this module; the stream itself is read here from the socket (`qex.cli.wire`'s
encoder and decoder, no `json`, `socket` or click) whenever a coordinator listens and
answers the request plainly. Anything else goes to the full body in
`qex.cli.commands.events` before a line is printed: nobody listens (it starts a
coordinator), the coordinator refuses the request or does not know it (the full body says
why, with its capability check), or the first answer is not a plain event. Reading the
stream changes nothing, so asking again there is safe.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

class SinceError(ValueError):
    """`--since` is not a position; the message says which forms are."""


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
    raise SinceError(f"`{text}` is not a position; give start, now, <stream_id>:<seq> or a "
                     "bare seq")


BARE_SEQ_WARNING = ("a bare number cannot tell this coordinator's events from those of an "
                    "earlier one; give `<stream_id>:<seq>` so qex can say when the numbering "
                    "changed")


def display(event: dict[str, Any]) -> dict[str, Any]:
    """The event with the job's names in safe form, as `qex list` would show them."""
    from qex.core.names import safe_name
    from qex.core.record_json import display_record

    shown = dict(event)
    if isinstance(shown.get("name"), str):
        shown["name"] = safe_name(shown["name"])
    if isinstance(shown.get("job"), dict):
        shown["job"] = display_record(shown["job"])
    return shown


def text_line(event: dict[str, Any]) -> str | None:
    """The line a person reads for one event; None for an event of a kind this qex does not
    know (a newer coordinator's)."""
    from qex.cli.queue_lines import clock
    from qex.core.names import printable_line, safe_name, short_id
    from qex.core.record_view import JobView, note_text

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


def timeout_sentence(limit: float, seen: int) -> str:
    from qex.core.unit_text import format_duration

    return (f"the stream reached its time limit of {format_duration(limit)} after {seen} "
            "event(s); run the command again with --since to continue")


CUT_OFF_SENTENCE = (
    "the coordinator closed the event stream and gave no reason, so it probably stopped "
    "without warning; the job records on disk are correct, so run `qex events` again to "
    "read the stream of the next coordinator")


class Printer:
    """Writes each event as the command shows it, and counts the job and gap events; `done`
    says when the stream has given what was asked for (`bye`, or `--count` events)."""

    def __init__(self, as_json: bool, count: int | None) -> None:
        self.as_json = as_json
        self.count = count
        self.seen = 0
        #: The first event has been printed: from here on nothing can go to the full body.
        self.started = False

    def show(self, event: dict[str, Any]) -> bool:
        """Print `event`; True when the command is done."""
        if self.as_json:
            from qex.cli.wire import encode

            sys.stdout.write(encode(display(event)).decode("ascii"))
        else:
            line = text_line(event)
            if line is not None:
                sys.stdout.write(line + "\n")
        sys.stdout.flush()
        kind = event.get("event")
        if kind == "bye":
            return True
        if kind in ("job", "gap"):
            self.seen += 1
            if self.count is not None and self.seen >= self.count:
                return True
        return False


def stream(as_json: bool, since_text: str, count: int | None, limit: float | None) -> int | None:
    """Read the stream on the lean wire: the exit code, or None (nothing printed) when the
    full body must do it. `limit`: `--timeout` in seconds, None for none. A `--since` that is
    not a position raises SinceError."""
    since, bare = parse_since(since_text)
    import time

    deadline = None if limit is None else time.monotonic() + limit
    from qex.cli.wire import Wire, decode, encode
    from qex.core.exit_band import Exit

    wire = Wire.connect()
    if wire is None:
        return None
    printer = Printer(as_json, count)
    buffered = b""
    try:
        try:
            wire.sock.settimeout(None)
            wire.sock.sendall(encode({"op": "events", "since": since}))  # protocol.events
        except OSError:
            return None  # the coordinator went away: the full body starts the next one
        while True:
            line, buffered, ended = _next_line(wire, buffered, deadline)
            if line is None:
                if ended and not printer.started:
                    return None  # not one event yet: the full body asks again, and says why
                from qex.cli.common import die

                if ended:
                    die(CUT_OFF_SENTENCE, Exit.FAILURE)
                assert limit is not None
                die(timeout_sentence(limit, printer.seen), Exit.WAIT_TIMEOUT)
            message = decode(line)
            event = message.get("event") if message is not None and \
                message.get("result") == "event" else None
            if not isinstance(event, dict):
                if not printer.started:
                    return None  # a refusal or an unknown request: the full body words it
                continue
            if not printer.started:
                if bare:
                    from qex.cli.common import warn

                    warn(BARE_SEQ_WARNING)
                printer.started = True
            if printer.show(event):
                return Exit.OK
    finally:
        wire.close()


def _next_line(wire: Any, buffered: bytes, deadline: float | None
               ) -> tuple[bytes | None, bytes, bool]:
    """(the next line, what is left after it, False); (None, b"", True) at the end of the
    stream; (None, b"", False) once the deadline passed."""
    import time

    while b"\n" not in buffered:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, b"", False
            wire.sock.settimeout(left)
        try:
            chunk = wire.sock.recv(1 << 16)
        except TimeoutError:
            return None, b"", False
        except OSError:
            chunk = b""
        if not chunk:
            return None, b"", True
        buffered += chunk
    line, _, rest = buffered.partition(b"\n")
    return line, rest, False
