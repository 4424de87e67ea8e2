"""How a job record is shown: safe names, short result sentences, and times.

Pure (no I/O; `now` is passed in). A record holds text that other agents typed, so every
field that reaches a terminal goes through `qex.core.names` first: names, tags, locks and
keys in safe form, arguments and paths in visible form, sentences in printable form. The
stored record keeps its raw values; only the view changes.
"""

from __future__ import annotations

import signal as _signal
from typing import Any

from qex.core.names import lock_shown, printable_line, safe_name, short_id, visible
from qex.core.units import format_duration

_SAFE_FIELDS = ("name", "group_name", "dedupe_key")
_SAFE_LISTS = ("tags",)
_PRINTABLE_FIELDS = ("blocked_reason", "error", "forced_reason", "note")


def display_record(record: dict[str, Any]) -> dict[str, Any]:
    """A copy of `record` that is safe to print or to give as JSON to a terminal reader."""
    out = dict(record)
    for key in _SAFE_FIELDS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = safe_name(value)
    for key in _SAFE_LISTS:
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [safe_name(str(v)) for v in value]
    locks = out.get("locks")
    if isinstance(locks, list):
        out["locks"] = [lock_shown(str(v)) for v in locks]
    for key in _PRINTABLE_FIELDS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = printable_line(value)
    command = out.get("command")
    if isinstance(command, list):
        out["command"] = [visible(str(arg)) for arg in command]
    cwd = out.get("cwd")
    if isinstance(cwd, str):
        out["cwd"] = visible(cwd)
    return out


def job_label(record: dict[str, Any]) -> str:
    """`1a2b3c4d (build)`: the short id and the safe name, for sentences."""
    return f"{short_id(str(record.get('id', '')))} ({safe_name(str(record.get('name') or 'job'))})"


def signal_text(number: int) -> str:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def result_text(record: dict[str, Any]) -> str:
    """One short phrase for how a job ended (or why it waits); empty for a running job."""
    state = str(record.get("state", ""))
    code = record.get("exit_code")
    sig = record.get("signal")
    error = record.get("error")
    detail = printable_line(error) if isinstance(error, str) and error.strip() else ""
    if state == "queued":
        reason = record.get("blocked_reason")
        return printable_line(reason) if isinstance(reason, str) else ""
    if state in ("starting", "running"):
        return detail
    if state == "completed":
        base = "exit 0"
    elif state == "failed":
        if isinstance(code, int):
            base = f"exit {code}"
        elif isinstance(sig, int):
            base = f"stopped by {signal_text(sig)}"
        else:
            base = "failed"
    elif state == "killed":
        base = f"killed by {signal_text(sig)}" if isinstance(sig, int) else "killed"
    elif state == "timeout":
        base = "passed its --timeout"
    elif state == "oom":
        base = "stopped for memory"
    elif state == "expired":
        base = "never started: --max-queue-time"
    elif state == "cancelled":
        base = "left the queue"
    elif state == "skipped":
        base = "did not run"
    else:
        base = state
    return f"{base}: {detail}" if detail else base


def note_text(record: dict[str, Any]) -> str:
    """The NOTE column: FORCED and its reason, the queue reason, or the result."""
    if record.get("forced"):
        reason = record.get("forced_reason")
        forced = "FORCED " + (printable_line(reason) if isinstance(reason, str) else "")
        state = str(record.get("state", ""))
        if state in ("starting", "running"):
            return forced.rstrip()
        return f"{result_text(record)}; {forced}".rstrip()
    return result_text(record)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def elapsed_secs(record: dict[str, Any], now: float) -> float | None:
    """Waiting time for a queued job, running time for an active one, run time for a final one."""
    state = str(record.get("state", ""))
    submitted = _number(record.get("submitted_at"))
    started = _number(record.get("started_at"))
    finished = _number(record.get("finished_at"))
    if state == "queued":
        return None if submitted is None else max(0.0, now - submitted)
    if state in ("starting", "running"):
        return None if started is None else max(0.0, now - started)
    if finished is None:
        return None
    begin = started if started is not None else submitted
    return None if begin is None else max(0.0, finished - begin)


def time_text(record: dict[str, Any], now: float) -> str:
    secs = elapsed_secs(record, now)
    return "-" if secs is None else format_duration(secs)


def sort_key(record: dict[str, Any]) -> tuple[float, int]:
    """Submission order: the time, then the coordinator's sequence for a tie."""
    submitted = _number(record.get("submitted_at")) or 0.0
    sequence = record.get("sequence")
    return submitted, sequence if isinstance(sequence, int) else 0
