"""The one wait loop behind `submit --wait`, `run`, `status --wait/--follow` and `wait`.

A wait is a promise to report how a job ended, so nothing that happens to the WAITER may turn
into a verdict on the JOB:

* the coordinator answers a `wait` request only when the job is final, so no polling is
  needed while it lives; reason changes arrive on a second connection (the event stream)
  and are narrated once per change on stderr;
* when the coordinator stops or restarts, the wait re-reads `status.json` (the supervisor
  writes the final record there, coordinator or not), looks for a new coordinator for about
  ten seconds, and then watches the job directories (inotify; a slow sleep only where that
  is missing) while it keeps looking;
* Ctrl-C or SIGTERM stops the WAIT (122) and leaves the job running; a second Ctrl-C kills
  this command the ordinary way;
* the reader's own `--timeout` gives 124, and the job goes on.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

# Re-exported below: the commands import the ends of a wait from this module.
from qex.cli.wait_ends import (
    JobGone,
    WaitInterrupted,
    WaitTimedOut,
    attach_command,
    report_interrupted,
    report_timeout,
    say,
    stop_signals,
)
from qex.cli.wire import TICK_SECS
from qex.client.connection import NO_LIMIT, Connection, CoordinatorError, Refused, connect
from qex.core import protocol
from qex.core.model import dataclass
from qex.core.names import printable_line, safe_name, short_id
from qex.core.protocol import Result
from qex.core.record_view import typed
from qex.core.states import State
from qex.store.paths import Paths

if TYPE_CHECKING:
    from qex.core.records import JobStatus

#: After losing the coordinator, look for a new one this long before watching files.
RECONNECT_WINDOW = 10.0
#: While watching files, look for a coordinator again this often.
RECONNECT_EVERY = 5.0
#: Up to this many jobs are refreshed with one `status` request each, above it with `list`.
STATUS_EACH_LIMIT = 8


__all__ = [
    "JobGone", "WaitInterrupted", "WaitSettings", "WaitTimedOut", "Waiter", "attach_command",
    "is_final", "pause_notice", "report_interrupted", "report_timeout", "say", "stop_signals",
]


def job_of(record: dict[str, Any] | None) -> JobStatus | None:
    """The typed record of a dict from the coordinator or a file; None for none, or for one
    this qex cannot read (a state that a newer qex added), which a wait treats as not final,
    not queued and not active, and so waits on."""
    if record is None:
        return None
    try:
        return typed(record)
    except (TypeError, ValueError):
        return None


def is_final(record: dict[str, Any] | None) -> bool:
    job = job_of(record)
    return job is not None and job.final


@dataclass
class WaitSettings:
    """How one wait behaves. `tick` runs at least every `tick_every` seconds (log following)."""

    timeout: float | None = None
    narrate: bool = True
    may_start: bool = False
    tick: Callable[[], object] | None = None
    tick_every: float = TICK_SECS
    out: TextIO | None = None


class Waiter:
    """Waits for the jobs of `records` (status records, in the order given)."""

    def __init__(self, paths: Paths, conn: Connection | None, records: list[dict[str, Any]],
                 settings: WaitSettings | None = None) -> None:
        self.paths = paths
        self.conn = conn
        self.settings = settings or WaitSettings()
        self.ids = [str(r["id"]) for r in records]
        #: The records as they came (the callers print them as JSON), and their typed form,
        #: which every decision here reads; the two change together in `_update`.
        self.records: dict[str, dict[str, Any]] = {str(r["id"]): r for r in records}
        self.jobs: dict[str, JobStatus | None] = {i: job_of(r) for i, r in self.records.items()}
        self.deadline = (None if self.settings.timeout is None
                         else time.monotonic() + self.settings.timeout)
        #: Called with a new connection after the coordinator came back (run re-sends own_job).
        self.on_reconnect: Callable[[Connection], None] | None = None
        self._events: Connection | None = None
        self._events_tried = False
        self._said: dict[str, str] = {}
        #: Every job before this index of `ids` is final (`_first_pending`).
        self._front = 0
        self._lost_said = False
        self._had_coordinator = conn is not None
        for job in self.jobs.values():
            self._narrate(job)

    # -- small parts ------------------------------------------------------------------------

    def _remaining(self) -> float:
        if self.deadline is None:
            return NO_LIMIT
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise WaitTimedOut()
        return left

    def _final(self, job_id: str) -> bool:
        job = self.jobs.get(job_id)
        return job is not None and job.final

    def _queued(self, job_id: str) -> bool:
        job = self.jobs.get(job_id)
        return job is not None and job.state is State.QUEUED

    def _narrate(self, job: JobStatus | None) -> None:
        if not self.settings.narrate or job is None:
            return
        job_id = job.id
        reason = job.blocked_reason
        if job.state is not State.QUEUED or not isinstance(reason, str) or not reason.strip():
            return
        if len(self.ids) > STATUS_EACH_LIMIT and job_id != self._first_pending():
            return  # a large group: narrate the job at the front of this wait, not hundreds
        text = printable_line(reason)
        if self._said.get(job_id) == text:
            return
        self._said[job_id] = text
        name = safe_name(str(job.name or "job"))
        say(f"{short_id(job_id)} ({name}) {text}", self.settings.out)

    def _update(self, record: dict[str, Any]) -> str:
        """Take a newer record of one of our jobs; return its id (any record's)."""
        job = job_of(record)
        job_id = job.id if job is not None else str(record.get("id"))
        if job_id in self.records:
            self.records[job_id] = record
            self.jobs[job_id] = job
            self._narrate(job)
        return job_id

    def _tick(self) -> None:
        if self.settings.tick is not None:
            self.settings.tick()

    def _sleep(self, seconds: float) -> None:
        """Sleep, but keep the tick running and respect the reader's deadline."""
        end = time.monotonic() + seconds
        while True:
            left = min(end - time.monotonic(), self._remaining())
            if left <= 0:
                return
            step = min(left, self.settings.tick_every) if self.settings.tick else left
            time.sleep(step)
            self._tick()

    def _select(self, conns: list[Connection]) -> list[Connection]:
        for conn in conns:
            if conn.pending():
                return [conn]
        remaining = self._remaining()
        limit: float | None = None if remaining == NO_LIMIT else remaining
        if self.settings.tick is not None:
            every = self.settings.tick_every
            limit = every if limit is None else min(limit, every)
        ready, _, _ = select.select(conns, [], [], limit)
        self._tick()
        if not ready:
            self._remaining()  # raises when the deadline passed
        return list(ready)

    def _gone(self, job_id: str) -> JobGone:
        from qex.core.word_match import damaged_message, history_message
        from qex.store.history import read_all
        from qex.store.jobs import damaged_dirs

        damaged = next(iter(damaged_dirs(self.paths, job_id).items()), None)
        if damaged is not None:
            return JobGone(job_id, damaged_message(*damaged))
        entry = {k.lower(): v for k, v in read_all(self.paths).items()}.get(job_id.lower())
        return JobGone(job_id, history_message(job_id, entry, time.time()))

    def close(self) -> None:
        """Close the connections this waiter holds (the events stream included)."""
        self._drop()

    def _drop(self) -> None:
        for conn in (self.conn, self._events):
            if conn is not None:
                conn.close()
        self.conn = None
        self._events = None
        self._events_tried = False

    # -- the event stream (narration, and --next) --------------------------------------------

    def _ensure_events(self, *, needed: bool = False) -> Connection | None:
        if self._events is not None or self._events_tried or self.conn is None:
            return self._events
        if not (self.settings.narrate or needed):
            return None
        self._events_tried = True
        try:
            if "events" not in self.conn.capabilities():
                return None
            events = connect(self.paths, start=False, until=self.deadline)
            if events is None:
                return None
            header = events.open_events("now")
        except CoordinatorError:
            return None
        if header.get("result") != Result.EVENT:
            events.close()
            return None
        self._events = events
        return events

    def _read_event(self) -> bool:
        """Handle one line of the stream; False when the stream ended (it is then closed)."""
        assert self._events is not None
        try:
            line = self._events.receive()
        except CoordinatorError:
            self._events.close()
            self._events = None
            return False
        event = line.get("event") if line.get("result") == Result.EVENT else line
        if not isinstance(event, dict):
            return True
        kind = event.get("event")
        if kind == "job" and isinstance(event.get("job"), dict):
            self._update(event["job"])
        elif kind == "gap" and self.conn is not None:
            self._refresh_from_coordinator()
        elif kind == "bye":
            self._events.close()
            self._events = None
            return False
        return True

    # -- refreshing records ----------------------------------------------------------------

    def _pending(self) -> list[str]:
        return [i for i in self.ids if not self._final(i)]

    def _first_pending(self) -> str | None:
        """The first job of this wait, in the order given, that is not final. A final state
        is for good, so the search goes on from where it stopped the last time: asked for
        each record that comes, a walk from the start made a wait on a group of thousands
        cost the square of its size (1985 jobs: seconds of CPU before it began)."""
        ids = self.ids
        while self._front < len(ids) and self._final(ids[self._front]):
            self._front += 1
        return ids[self._front] if self._front < len(ids) else None

    def _refresh_from_coordinator(self) -> None:
        assert self.conn is not None
        pending = self._pending()
        if len(pending) <= STATUS_EACH_LIMIT:
            for job_id in pending:
                try:
                    self._update(self.conn.status(job_id))
                except Refused as exc:
                    if exc.kind == protocol.NO_SUCH_JOB:
                        raise self._gone(job_id) from None
            return
        try:
            jobs = self.conn.list_jobs()
        except Refused:
            return
        seen = set()
        for record in jobs:
            if isinstance(record, dict):
                seen.add(self._update(record))
        for job_id in pending:
            if job_id not in seen:
                raise self._gone(job_id)

    def _refresh_from_disk(self) -> list[dict[str, Any]]:
        """Re-read the pending records; return the stale ones as recovery will write them."""
        from qex.cli.stale import settle
        from qex.store import atomic, jobs

        read: list[dict[str, Any]] = []
        for job_id in self._pending():
            job_dir = self.paths.job_dir(job_id)
            data = atomic.read_json(job_dir / jobs.STATUS)
            if isinstance(data, dict) and data.get("id") == job_id:
                self._update(data)
                read.append(data)
            elif not job_dir.exists():
                raise self._gone(job_id)
        judged, stale = settle(self.paths, read)
        return [r for r in judged if r["id"] in stale]  # each was read above, with its id

    # -- losing and finding the coordinator --------------------------------------------------

    def _try_connect(self, *, start: bool) -> Connection | None:
        try:
            return connect(self.paths, start=start, ceiling=min(self._remaining(), 5.0))
        except CoordinatorError:
            return None

    def _recover(self, done: Callable[[], bool]) -> None:  # noqa: C901, PLR0912 (one recovery, step by step)
        """The coordinator went away: use the records on disk until one answers again."""
        from qex.platform.filewatch import RECORD_MASK, Watcher, open_watcher

        self._drop()
        if self.settings.narrate and not self._lost_said:
            self._lost_said = True
            if self._had_coordinator:
                say("the coordinator stopped answering; qex reads the job records on disk and "
                    "looks for a new coordinator, and the job is not affected", self.settings.out)
            elif any(self._queued(i) for i in self._pending()):
                later = ("this command starts one if none appears in a few seconds"
                         if self.settings.may_start else
                         "any command that submits, or `qex info`, starts one")
                say("no coordinator runs, so a queued job cannot start until one does ("
                    f"{later}); qex watches the records meanwhile", self.settings.out)
        lost_at = time.monotonic()
        watch: Watcher | None = None
        try:
            while True:
                stale = self._refresh_from_disk()
                if done():
                    return
                elapsed = time.monotonic() - lost_at
                conn = self._try_connect(start=False)
                queued = any(self._queued(i) or _unwatched(self.jobs[i])
                             for i in self._pending())
                late = elapsed >= RECONNECT_WINDOW
                if conn is None and self.settings.may_start and (stale or (late and queued)):
                    # A queued job needs a coordinator to ever start, and a job whose
                    # processes are gone needs one to write its end; this command may start one.
                    conn = self._try_connect(start=True)
                if conn is None and stale:
                    # No coordinator, and no process of these jobs that could write a result:
                    # the outcome is the one recovery will write.
                    for record in stale:
                        self._update(record)
                    if done():
                        return
                if conn is not None:
                    self.conn = conn
                    self._lost_said = False
                    self._had_coordinator = True
                    if self.on_reconnect is not None:
                        self.on_reconnect(conn)
                    return
                if elapsed < RECONNECT_WINDOW:
                    self._sleep(0.25)
                    continue
                if watch is None:
                    watch = open_watcher([self.paths.job_dir(i) for i in self._pending()],
                                         RECORD_MASK)
                end = time.monotonic() + RECONNECT_EVERY
                while time.monotonic() < end:
                    left = min(end - time.monotonic(), self._remaining())
                    step = min(left, self.settings.tick_every) if self.settings.tick else left
                    watch.wait(step)
                    self._tick()
                    if self._refresh_from_disk():
                        break  # a job's processes died: judge it in the outer loop
                    if done():
                        return
        finally:
            if watch is not None:
                watch.close()

    # -- the waits ---------------------------------------------------------------------------

    def _wait_one(self, job_id: str) -> None:
        """Return once `job_id` is final (in self.records), or the connection was lost."""
        if self.conn is None:
            self._recover(lambda: self._final(job_id))
            return
        try:
            self._ensure_events()
            self.conn.send_wait(job_id)
            while True:
                conns = [self.conn] + ([self._events] if self._events is not None else [])
                ready = self._select(conns)
                if self._events is not None and self._events in ready:
                    self._read_event()
                if self.conn not in ready:
                    continue
                try:
                    record = self.conn.receive_status()
                except Refused as exc:
                    if exc.kind == protocol.NO_SUCH_JOB:
                        raise self._gone(job_id) from None
                    exc.message = f"the coordinator refused the wait: {printable_line(exc.message)}"
                    raise
                self._update(record)
                if self._final(job_id):
                    return
                self.conn.send_wait(job_id)
        except CoordinatorError as exc:
            if not (exc.lost or exc.timeout):
                raise
            self._remaining()  # the wait's own limit: it ends here, with no records read
            self._recover(lambda: self._final(job_id))

    def wait_all(self) -> list[dict[str, Any]]:
        """Every job final; the records in the order given."""
        for job_id in self.ids:
            while not self._final(job_id):
                self._wait_one(job_id)
        return [self.records[i] for i in self.ids]

    def wait_next(self) -> tuple[dict[str, Any], list[str]]:
        """The first job (in the order given) that is final, and the ids still not final."""

        def any_final() -> bool:
            return any(self._final(i) for i in self.ids)

        while True:
            for job_id in self.ids:
                if self._final(job_id):
                    return self.records[job_id], self._pending()
            if self.conn is None:
                self._recover(any_final)
                continue
            try:
                events = self._ensure_events(needed=True)
                self._refresh_from_coordinator()
                if any_final():
                    continue
                if events is None:
                    self._sleep(1.0)
                    continue
                while self._events is not None and not any_final():
                    if self._select([self._events]):
                        self._read_event()
                if self._events is None and not any_final():
                    self._events_tried = False  # the stream ended: a new one, or recovery
                    if self.conn is not None:
                        self.conn.ping()
            except CoordinatorError as exc:
                if not (exc.lost or exc.timeout):
                    raise
                self._remaining()  # as in `_wait_one`
                self._recover(any_final)


def pause_notice(conn: Connection | None) -> str | None:
    """The queue's pause line, printed before a wait begins, or None when nothing is paused."""
    if conn is None:
        return None
    try:
        info = conn.info()
    except CoordinatorError:
        return None
    paused = info.get("paused")
    if not isinstance(paused, dict):
        return None
    try:
        from qex.cli.queue_lines import queue_pause_line

        return queue_pause_line(paused, time.time())
    except Exception:  # another helper's formatter must never break a wait
        return "the queue is paused, so no new job starts; run `qex pause` to see why"


def _unwatched(job: JobStatus | None) -> bool:
    """An active record whose supervisor is gone: only a coordinator can judge it (and say
    that the result is lost), so a wait may start one, as it does for a queued job."""
    if job is None or job.state not in (State.STARTING, State.RUNNING):
        return False
    pid = job.supervisor_pid
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    from qex.platform import procs

    return not procs.same_process(pid, job.supervisor_start_token)
