"""How a job record is shown: safe names, short result sentences, and times.

Pure (no I/O; `now` is passed in). A record holds text that other agents typed, so every
field that reaches a terminal goes through `qex.core.names` first: names, tags, locks and
keys in safe form, arguments and paths in visible form, sentences in printable form. The
stored record keeps its raw values; only the view changes.

Two forms of a record meet here. The JSON that `status --json`, `list --json` and events
print is the dict the coordinator sent, made display-safe by `record_json.display_record` and
passed on as it came (unknown fields from a newer qex included), so that output never
changes shape. Everything a person reads is rendered from a typed `JobStatus` (`typed()`
builds one from such a dict).
"""

from __future__ import annotations

import signal as _signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from qex.core import model
from qex.core.names import lock_shown, printable_line, safe_name, short_id, visible
from qex.core.states import ACTIVE, State
from qex.core.units import format_duration

if TYPE_CHECKING:
    from qex.core.records import JobStatus

# `qex.core.records` is imported by `typed()` only: `list --json` prints the dicts as they came
# and never needs it.

#: The fields a record always has; a partial record (an event's, a test's) gets these.
_BLANK: dict[str, Any] = {"id": "", "name": "", "command": [], "cwd": ""}


def typed(record: JobStatus | Mapping[str, Any]) -> JobStatus:
    """The typed record of a dict from the coordinator or a file (ValueError: unknown state)."""
    from qex.core.records import JobStatus

    if isinstance(record, JobStatus):
        return record
    return JobStatus.from_dict({**_BLANK, **record})


def _printable(text: str | None) -> str | None:
    return None if text is None else printable_line(text)


def display(record: JobStatus) -> JobStatus:
    """A copy of `record` whose text fields are safe to print (see `display_record`)."""
    return model.replace(
        record,
        name=safe_name(record.name),
        group_name=None if record.group_name is None else safe_name(record.group_name),
        dedupe_key=None if record.dedupe_key is None else safe_name(record.dedupe_key),
        locks=[lock_shown(v) for v in record.locks],
        tags=[safe_name(v) for v in record.tags],
        blocked_reason=_printable(record.blocked_reason),
        error=_printable(record.error),
        forced_reason=_printable(record.forced_reason),
        note=_printable(record.note),
        command=[visible(arg) for arg in record.command],
        cwd=visible(record.cwd),
    )


def job_label(record: JobStatus) -> str:
    """`1a2b3c4d (build)`: the short id and the safe name, for sentences."""
    return f"{short_id(record.id)} ({safe_name(record.name or 'job')})"


def signal_text(number: int) -> str:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: How each final state that needs no number reads in a result.
_ENDED = {
    State.COMPLETED: "exit 0",
    State.TIMEOUT: "passed its --timeout",
    State.OOM: "stopped for memory",
    State.EXPIRED: "never started: --max-queue-time",
    State.CANCELLED: "left the queue",
    State.SKIPPED: "did not run",
}


def result_text(record: JobStatus) -> str:
    """One short phrase for how a job ended (or why it waits); empty for a running job."""
    state = record.state
    error = record.error
    detail = printable_line(error) if error is not None and error.strip() else ""
    if state is State.QUEUED:
        reason = record.blocked_reason
        return printable_line(reason) if reason is not None else ""
    if state in ACTIVE:
        return detail
    sig = record.signal
    if state is State.FAILED:
        if record.exit_code is not None:
            base = f"exit {record.exit_code}"
        elif sig is not None:
            base = f"stopped by {signal_text(sig)}"
        else:
            base = "failed"
    elif state is State.KILLED:
        base = f"killed by {signal_text(sig)}" if sig is not None else "killed"
    else:
        base = _ENDED[state]
    return f"{base}: {detail}" if detail else base


def held_text(record: JobStatus) -> str:
    """`gpu 0,1` for the devices that a starting or running job holds, '' for none."""
    assigned = record.assigned
    if record.state not in ACTIVE or not isinstance(assigned, dict):
        return ""
    parts = []
    for pool, given in sorted(assigned.items()):
        devices = given.get("devices") if isinstance(given, dict) else None
        if isinstance(devices, list) and devices:
            parts.append(f"{safe_name(str(pool))} {','.join(str(d) for d in devices)}")
    return "; ".join(parts)


def pool_use_lines(records: list[dict[str, Any]]) -> list[str]:
    """One line per pool that starting or running jobs hold units of, for `qex list`.

    It reads the dicts as they came (every record, not only the listed ones), so it needs no
    typed records."""
    units: dict[str, int] = {}
    jobs: dict[str, int] = {}
    devices: dict[str, set[int]] = {}
    for record in records:
        assigned = record.get("assigned")
        if record.get("state") not in ("starting", "running") or not isinstance(assigned, dict):
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


def note_text(record: JobStatus) -> str:
    """The NOTE column: the devices a running job holds, FORCED and its reason, the queue
    reason, or the result."""
    held = held_text(record)
    note = _note_text(record)
    if held:
        return f"holds {held}" + (f"; {note}" if note else "")
    return note


def _note_text(record: JobStatus) -> str:
    if record.forced:
        reason = record.forced_reason
        forced = "FORCED " + (printable_line(reason) if reason is not None else "")
        if record.state in ACTIVE:
            return forced.rstrip()
        return f"{result_text(record)}; {forced}".rstrip()
    return result_text(record)


def elapsed_secs(record: JobStatus, now: float) -> float | None:
    """Waiting time for a queued job, running time for an active one, run time for a final one."""
    state = record.state
    started = record.started_at
    if state is State.QUEUED:
        return max(0.0, now - record.submitted_at)
    if state in ACTIVE:
        return None if started is None else max(0.0, now - started)
    finished = record.finished_at
    if finished is None:
        return None
    begin = started if started is not None else record.submitted_at
    return max(0.0, finished - begin)


def time_text(record: JobStatus, now: float) -> str:
    secs = elapsed_secs(record, now)
    return "-" if secs is None else format_duration(secs)
