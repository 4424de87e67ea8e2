"""How a job record is shown: safe names, short result sentences, and times.

Pure (no I/O; `now` is passed in). A record holds text that other agents typed, so every
field that reaches a terminal goes through `qex.core.names` first: names, tags, locks and
keys in safe form, arguments and paths in visible form, sentences in printable form. The
stored record keeps its raw values; only the view changes.

Everything here reads a `JobView`: the dict the coordinator sent (or a file held), read field
by field with the defaults of `qex.core.records.JobStatus`, its state a plain word. The hot
reads (`qex status`, `qex list`) render from it without importing the typed records, `enum`
or `typing`, which would cost them more than the rest of their work; the JSON forms print
the dict itself (`record_json.display_record`), so output never changes shape.

It is part of the core so that the coordinator can make the cells of `qex list` itself
(`row_cells`, `queries.handle_list_table`): a table of thousands of jobs then travels as
its short cells, not as every field of every record for the command to parse.
"""

from __future__ import annotations

from qex.core import state_words as words
from qex.core.names import printable_line, safe_name, short_id
from qex.core.record_json import display_record
from qex.core.signal_words import signal_name
from qex.core.unit_text import format_duration, format_size

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeAlias

    from qex.core.records import AssignmentPart as Assigned
    from qex.core.records import Enforcement, JobStatus, LogsDropped, PoolClaimPart, Usage

    #: Whatever the renderers take: a view, a typed record, or the dict as it came.
    RecordLike: TypeAlias = "JobView | JobStatus | Mapping[str, Any]"

#: `JobStatus`'s default for each field (a unit test holds the two equal, field for field).
#: A list or dict default is copied on each read, so no caller can change the table.
DEFAULTS: dict[str, Any] = {
    "id": "", "name": "", "command": [], "cwd": "", "state": words.QUEUED,
    "submitted_at": 0.0, "sequence": 0, "cpu": 1, "mem": 0, "claim_source": "default",
    "pid": None, "pid_start_token": None, "last_pid": None, "supervisor_pid": None,
    "supervisor_start_token": None, "boot_id": None, "exit_code": None, "signal": None,
    "started_at": None, "finished_at": None, "group": None, "group_name": None, "usage": None,
    "forced": False, "forced_reason": None, "queue_pause_secs": 0.0, "blocked_reason": None,
    "blocked_since": None, "passed_by": 0, "error": None, "needs": [], "after": [],
    "locks": [], "dedupe_key": None, "claims": {}, "assigned": {}, "attempts": 0,
    "retries_left": 0, "oom_retries_left": None, "caused_by": None, "logs_dropped": None,
    "tags": [], "enforcement": None, "oom_evidence": None, "queue_time_applies": True,
    "note": None, "engine": None, "engine_id": None,
}


class JobView:
    """A record as it came, read like a `JobStatus`: `view.state` is a plain word.

    Building it costs one object; each field is looked up when read. An unknown field (a
    newer qex's) stays in `data` and is never read here.
    """

    __slots__ = ("data",)

    if TYPE_CHECKING:
        id: str
        name: str
        command: list[str]
        cwd: str
        state: str
        submitted_at: float
        sequence: int
        cpu: int
        mem: int
        claim_source: str
        pid: int | None
        last_pid: int | None
        exit_code: int | None
        signal: int | None
        started_at: float | None
        finished_at: float | None
        group: str | None
        group_name: str | None
        usage: Usage | None
        forced: bool
        forced_reason: str | None
        blocked_reason: str | None
        error: str | None
        needs: list[str]
        after: list[str]
        locks: list[str]
        dedupe_key: str | None
        claims: dict[str, PoolClaimPart]
        assigned: dict[str, Assigned]
        attempts: int
        retries_left: int
        caused_by: str | None
        logs_dropped: LogsDropped | None
        tags: list[str]
        enforcement: Enforcement | None
        oom_evidence: str | None
        note: str | None
        engine: str | None
        engine_id: str | None

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data

    @property
    def final(self) -> bool:
        return self.state in words.FINAL_WORDS

    @property
    def active(self) -> bool:
        return self.state in words.ACTIVE_WORDS


def _reader(name: str, default: Any) -> property:
    """The property that reads one field of `JobView.data`. A property per field, made here
    from `DEFAULTS`, rather than one `__getattr__`: Python reaches `__getattr__` only after
    the ordinary lookup has failed and raised, which made each read several times dearer
    (`qex list` reads about fifteen fields of every job)."""
    if name == "state":
        def read_state(self: JobView) -> str:
            return str(self.data.get(name, default))  # a `State` from a typed record: its word
        return property(read_state)
    if isinstance(default, (list, dict)):
        def read_copy(self: JobView) -> Any:
            value = self.data.get(name, default)
            return value.copy() if value is default else value
        return property(read_copy)

    def read(self: JobView) -> Any:
        return self.data.get(name, default)
    return property(read)


for _name, _default in DEFAULTS.items():
    setattr(JobView, _name, _reader(_name, _default))
del _name, _default


def view(record: RecordLike) -> JobView:
    """The view of a coordinator's dict, a file's dict or a typed record."""
    if isinstance(record, JobView):
        return record
    if hasattr(record, "to_dict"):  # a typed record
        return JobView(record.to_dict())
    return JobView(record)


def typed(record: JobStatus | Mapping[str, Any]) -> JobStatus:
    """The typed record of a dict from the coordinator or a file (ValueError: unknown state),
    for the code that decides from a record rather than showing it."""
    from qex.core.records import JobStatus

    if isinstance(record, JobStatus):
        return record
    return JobStatus.from_dict({**_BLANK, **record})


#: The fields a record always has; a partial record (an event's, a test's) gets these.
_BLANK: dict[str, Any] = {"id": "", "name": "", "command": [], "cwd": ""}


def display(record: JobView) -> JobView:
    """A view whose text fields are safe to print: the rules of `display_record`."""
    return JobView(display_record(dict(record.data)))


def job_label(record: JobView) -> str:
    """`1a2b3c4d (build)`: the short id and the safe name, for sentences."""
    return f"{short_id(record.id)} ({safe_name(record.name or 'job')})"


#: How each final state that needs no number reads in a result.
_ENDED = {
    words.COMPLETED: "exit 0",
    words.TIMEOUT: "passed its --timeout",
    words.OOM: "stopped for memory",
    words.EXPIRED: "never started: --max-queue-time",
    words.CANCELLED: "left the queue",
    words.SKIPPED: "did not run",
}


def result_text(record: JobView) -> str:
    """One short phrase for how a job ended (or why it waits); empty for a running job."""
    state = record.state
    error = record.error
    # Made printable before the test for blank: an error of control bytes alone is blank.
    detail = printable_line(error) if error is not None else ""
    if not detail.strip():
        detail = ""
    if state == words.QUEUED:
        reason = record.blocked_reason
        return printable_line(reason) if reason is not None else ""
    if state in words.ACTIVE_WORDS:
        return detail
    sig = record.signal
    if state == words.FAILED:
        if record.exit_code is not None:
            base = f"exit {record.exit_code}"
        elif sig is not None:
            base = f"stopped by {signal_name(sig)}"
        else:
            base = "failed"
    elif state == words.KILLED:
        base = f"killed by {signal_name(sig)}" if sig is not None else "killed"
    else:
        base = _ENDED.get(state, state)
    return f"{base}: {detail}" if detail else base


def held_text(record: JobView) -> str:
    """`gpu 0,1` for the devices that a starting or running job holds, '' for none."""
    assigned = record.assigned
    if record.state not in words.ACTIVE_WORDS or not isinstance(assigned, dict):
        return ""
    parts = []
    for pool, given in sorted(assigned.items()):
        devices = given.get("devices") if isinstance(given, dict) else None
        if isinstance(devices, list) and devices:
            parts.append(f"{safe_name(str(pool))} {','.join(str(d) for d in devices)}")
    return "; ".join(parts)


def pool_use_lines(records: list[dict[str, Any]]) -> list[str]:
    """One line per pool that starting or running jobs hold units of, for `qex list`
    (over every record, not only the listed ones)."""
    units: dict[str, int] = {}
    jobs: dict[str, int] = {}
    devices: dict[str, set[int]] = {}
    for record in records:
        assigned = record.get("assigned")
        if record.get("state") not in words.ACTIVE_WORDS or not isinstance(assigned, dict):
            continue
        for pool, given in assigned.items():
            if not isinstance(given, dict):
                continue
            name = safe_name(str(pool))
            count = given.get("units")
            units[name] = units.get(name, 0) + (count if isinstance(count, int) else 0)
            jobs[name] = jobs.get(name, 0) + 1
            held = given.get("devices")
            if isinstance(held, list):
                devices.setdefault(name, set()).update(d for d in held if isinstance(d, int))
    lines = []
    for name in sorted(units):
        line = f"pool {name}: {units[name]} unit(s) held by {jobs[name]} job(s)"
        if devices.get(name):
            line += f", devices {','.join(str(d) for d in sorted(devices[name]))}"
        lines.append(line)
    return lines


def note_text(record: JobView) -> str:
    """The NOTE column: the devices a running job holds, FORCED and its reason, the queue
    reason, or the result."""
    held = held_text(record)
    note = _note_text(record)
    if held:
        return f"holds {held}" + (f"; {note}" if note else "")
    return note


def _note_text(record: JobView) -> str:
    if record.forced:
        reason = record.forced_reason
        forced = "FORCED " + (printable_line(reason) if reason is not None else "")
        if record.state in words.ACTIVE_WORDS:
            return forced.rstrip()
        return f"{result_text(record)}; {forced}".rstrip()
    return result_text(record)


def elapsed_secs(record: JobView, now: float) -> float | None:
    """Waiting time for a queued job, running time for an active one, run time for a final one."""
    state = record.state
    started = record.started_at
    if state == words.QUEUED:
        return max(0.0, now - record.submitted_at)
    if state in words.ACTIVE_WORDS:
        return None if started is None else max(0.0, now - started)
    finished = record.finished_at
    if finished is None:
        return None
    begin = started if started is not None else record.submitted_at
    return max(0.0, finished - begin)


def time_text(record: JobView, now: float) -> str:
    secs = elapsed_secs(record, now)
    return "-" if secs is None else format_duration(secs)


#: The cells of one row of `qex list`, in the order of `qex.cli.render_table.HEADERS`.
RowCells = tuple[str, str, str, str, str, str, str]


def row_cells(job: RecordLike, now: float) -> RowCells:
    """The seven cells of one job in `qex list` (ID STATE NAME CPU MEM TIME NOTE), as plain
    text: what the command lays out, made here or by the coordinator."""
    record = view(job)
    ident = short_id(record.id)
    if record.engine_id:
        # A job of another engine shows that engine's id beside qex's (`a1b2c3d4 slurm:123`).
        ident = f"{ident} {safe_name(record.engine or 'engine')}:{safe_name(record.engine_id)}"
    return (
        ident,
        record.state,
        safe_name(record.name or "job"),
        str(record.cpu),
        format_size(record.mem) if record.mem > 0 else "-",
        time_text(record, now),
        note_text(record),
    )
