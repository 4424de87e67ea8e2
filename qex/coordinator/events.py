"""The event stream: one line for each change that the coordinator saw, in a bounded ring.

An agent that drives many jobs reads one stream instead of asking about each job. Three
promises shape this module:

- The coordinator never waits for a reader and never grows for one: events live in a ring
  of fixed size (512, or QEX_EVENTS_RETAINED); each reader keeps only a cursor (a sequence
  number). A reader that falls behind the ring gets a `gap` line that COUNTS what it lost.
- Numbers belong to one coordinator. Each stream has a random `stream_id`; a cursor from a
  different stream gives a `gap` whose `missed` is null, because the two numberings have no
  common measure.
- Only what was seen is reported: a job that ran between two looks may go from `starting`
  straight to `completed`, and `previous` says so.

Wire form: every line is `{"result": "event", "event": {...}}`, the inner object carrying
`"event": "stream" | "job" | "gap" | "bye"`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import deque
from collections.abc import Mapping
from typing import Any

from qex.core.model import dataclass, shallow_copy
from qex.core.names import new_id
from qex.core.protocol import Result
from qex.core.records import JobStatus
from qex.core.states import State

DEFAULT_RETAINED = 512


def retained_from_env(env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    try:
        value = int(env.get("QEX_EVENTS_RETAINED", "") or DEFAULT_RETAINED)
    except ValueError:
        return DEFAULT_RETAINED
    return max(1, value)


def wrap(event: dict[str, Any]) -> bytes:
    """One wire line for an event object."""
    line = json.dumps({"result": Result.EVENT, "event": event}, separators=(",", ":"))
    return line.encode("utf-8") + b"\n"


class _Held:
    """One event in the ring: its fields and the record's copy until a reader first takes it,
    then only its wire line (every later reader gets the same bytes)."""

    __slots__ = ("_event", "_line", "_record", "seq")

    def __init__(self, seq: int, event: dict[str, Any], record: JobStatus) -> None:
        self.seq = seq
        self._event: dict[str, Any] | None = event
        self._record: JobStatus | None = record
        self._line: bytes | None = None

    def line(self) -> bytes:
        if self._line is None:
            assert self._event is not None and self._record is not None
            self._event["job"] = self._record.to_dict()
            self._line = wrap(self._event)
            self._event = self._record = None
        return self._line


@dataclass
class Cursor:
    """Where one reader stands: the next sequence number it should receive."""

    next_seq: int


class EventHub:
    """The ring, the per-job memory of what was last reported, and the wake-up of readers."""

    def __init__(self, *, retained: int, version: str, pid: int, started_at: float) -> None:
        self.retained = max(1, retained)
        self.version = version
        self.pid = pid
        self.started_at = started_at
        self.stream_id = new_id()
        self._ring: deque[_Held] = deque(maxlen=self.retained)
        self._last_seq = 0
        self._reported: dict[str, tuple[str, str | None]] = {}
        self._changed: asyncio.Future[None] | None = None
        self.closed_reason: str | None = None
        self.closed_at: float | None = None

    # -- producing -----------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def first_seq(self) -> int:
        """The oldest sequence number still held (last_seq + 1 when the ring is empty)."""
        return self._ring[0].seq if self._ring else self._last_seq + 1

    @property
    def dropped(self) -> int:
        """How many events fell out of the ring since the start."""
        return self.first_seq - 1

    def observe(self, record: JobStatus, now: float) -> bool:
        """Publish a `job` event if the state, or a queued job's reason, changed. True if it did.

        The event keeps a copy of the record as it is now (`shallow_copy`) and becomes a wire
        line only when a reader takes it: most events are never read, and turning the record
        into JSON at each of a job's five or six changes was about 7 % of the coordinator's
        work per job in a drain."""
        job_id = record.id
        state = str(record.state)
        reason = record.blocked_reason if state == State.QUEUED else None
        before = self._reported.get(job_id)
        if before is None:
            previous: str | None = None
            change = "state"
        elif before[0] != state:
            previous = before[0]
            change = "state"
        elif before[1] != reason:
            previous = before[0]
            change = "reason"
        else:
            return False
        self._reported[job_id] = (state, reason)
        self._last_seq += 1
        event = {
            "event": "job", "seq": self._last_seq, "time": now, "id": job_id,
            "name": record.name, "state": state, "previous": previous, "change": change,
        }
        self._ring.append(_Held(self._last_seq, event, shallow_copy(record)))
        self._wake()
        return True

    def forget(self, job_id: str) -> None:
        """A removed job leaves no event; a later job with the same id starts afresh."""
        self._reported.pop(job_id, None)

    def close(self, reason: str, now: float) -> None:
        """The coordinator stops: readers write `bye` and end."""
        if self.closed_reason is None:
            self.closed_reason = reason
            self.closed_at = now
            self._wake()

    def _wake(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        self._changed = None

    async def changed(self) -> None:
        """Returns at the next publish (or close)."""
        if self.closed_reason is not None:
            return
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._changed)

    # -- reading ---------------------------------------------------------------------------

    def header(self, now: float) -> dict[str, Any]:
        return {
            "event": "stream", "time": now, "version": self.version, "pid": self.pid,
            "stream_id": self.stream_id, "coordinator_started_at": self.started_at,
            "first_seq": self.first_seq, "last_seq": self._last_seq,
        }

    def bye(self) -> dict[str, Any]:
        return {"event": "bye", "time": self.closed_at, "reason": self.closed_reason}

    def _gap(self, now: float, missed: int | None, next_seq: int, reason: str) -> dict[str, Any]:
        return {"event": "gap", "time": now, "missed": missed, "next_seq": next_seq,
                "reason": reason}

    def open_cursor(self, since: object, now: float) -> tuple[Cursor, list[dict[str, Any]]]:
        """A cursor for the `since` value of an `events` request, and the gap lines to send first.

        Accepted: "start"/"all" (default), "now"/"live", "<stream_id>:<seq>", "<seq>", an
        integer, or `{"after": {"seq": N, "stream": id | null}}`.
        """
        stream, seq = _parse_since(since)
        first = self.first_seq
        if seq is None and stream == "now":
            return Cursor(self._last_seq + 1), []
        if seq is None:
            gaps = []
            if self.dropped:
                gaps.append(self._gap(
                    now, self.dropped, first,
                    f"this coordinator keeps its last {self.retained} events, and "
                    f"{self.dropped} older event(s) are no longer held",
                ))
            return Cursor(first), gaps
        if stream is not None and stream != self.stream_id:
            return Cursor(first), [self._gap(
                now, None, first,
                f"the position comes from the stream {stream}, and this coordinator writes the "
                f"stream {self.stream_id}; a new coordinator started, so the two numberings cannot "
                "be compared. The events that follow are those that this coordinator holds",
            )]
        if seq > self._last_seq:
            if stream is None:
                text = (f"the number {seq} is higher than the last event of this stream "
                        f"({self._last_seq}), so it comes from an earlier coordinator; give "
                        "`<stream_id>:<seq>` so qex can tell")
            else:
                text = (f"the number {seq} is higher than the last event of this stream "
                        f"({self._last_seq})")
            return Cursor(self._last_seq + 1), [self._gap(now, None, self._last_seq + 1, text)]
        if seq + 1 < first:
            missed = first - (seq + 1)
            return Cursor(first), [self._gap(
                now, missed, first,
                f"{missed} event(s) after {seq} are no longer held by this coordinator",
            )]
        return Cursor(seq + 1), []

    def take(self, cursor: Cursor, now: float, limit: int = 32) -> list[bytes]:
        """The lines that a reader at `cursor` should write now (a gap first if it fell behind)."""
        lines: list[bytes] = []
        first = self.first_seq
        if cursor.next_seq < first:
            missed = first - cursor.next_seq
            lines.append(wrap(self._gap(
                now, missed, first,
                f"the reader fell behind, and {missed} event(s) left the ring of "
                f"{self.retained} before it read them",
            )))
            cursor.next_seq = first
        if cursor.next_seq > self._last_seq:
            return lines
        start = cursor.next_seq - first
        for index in range(start, min(len(self._ring), start + limit)):
            held = self._ring[index]
            lines.append(held.line())
            cursor.next_seq = held.seq + 1
        return lines


def _parse_since(since: object) -> tuple[str | None, int | None]:
    """(stream or "now"/None, seq or None)."""
    if since is None:
        return None, None
    if isinstance(since, bool):
        return None, None
    if isinstance(since, int):
        return None, max(0, since)
    if isinstance(since, dict):
        after = since.get("after")
        if isinstance(after, dict):
            seq = after.get("seq")
            stream = after.get("stream")
            if isinstance(seq, int) and not isinstance(seq, bool):
                return (stream if isinstance(stream, str) else None), max(0, seq)
        return None, None
    if isinstance(since, str):
        text = since.strip()
        lowered = text.lower()
        if lowered in ("", "start", "all"):
            return None, None
        if lowered in ("now", "live"):
            return "now", None
        stream, sep, tail = text.rpartition(":")
        if sep and tail.isdigit():
            return stream, int(tail)
        if text.isdigit():
            return None, int(text)
    return None, None
