"""The record of one job as `qex status` shows it: a labelled text block, or JSON.

The text answers the questions a reader acts on: what ran, how it ended, what it claimed and
what it really used, where the claim came from, what limit (if any) the kernel applied, why it
waits, and, for a job that did not complete, the last lines of its output, so the cause is on
the screen without a second command. It never states a memory limit that was not applied:
the `memory:` line says "limited" only when the record's `enforcement.active` is true.

Pure, and light: it renders a `record_view.JobView` of the dict as it came, so the fast path
of `qex status ID` (`qex.cli.fastread`) and the full body print the same block from the same
code without the typed records. Reading the logs and the environment is
`qex.cli.status_print`. Every text that another agent could have typed goes through
`record_view.display` (safe names, visible arguments, printable sentences).
"""

from __future__ import annotations

from qex.core import state_words as words
from qex.core.log_words import for_json
from qex.core.names import printable_line, safe_name, short_id, visible
from qex.core.record_json import display_record
from qex.core.record_view import JobView, display, view
from qex.core.signal_words import signal_name
from qex.core.unit_text import format_duration, format_size

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from qex.cli.status_print import Excerpt
    from qex.core.record_view import RecordLike

    #: One excerpt of a log as the text block shows it: (stream, lines, notes).
    ExcerptText = tuple[str, list[str], list[str]]

LABEL_WIDTH = 11
_CLAIM_SOURCE = {
    "learned": "  (from the earlier jobs of this command)",
    "fan-out": "  (from the earlier jobs of this fan-out)",
    "default": "  (the default; give --cpu and --mem to change it)",
}


def _line(label: str, value: str) -> str:
    return f"{label + ':':<{LABEL_WIDTH}}{value}"


def _claim(record: JobView) -> str:
    text = f"{record.cpu} core(s), {format_size(record.mem)}"
    return text + _CLAIM_SOURCE.get(record.claim_source, "")


def _used(record: JobView) -> str | None:
    usage = record.usage
    if usage is None:
        return None
    rss = usage.get("max_rss")
    cpu_secs = usage.get("cpu_secs")
    parts: list[str] = []
    if rss is not None:
        parts.append(f"{format_size(rss)} of memory at the peak")
    if cpu_secs is not None:
        parts.append(f"{cpu_secs:.1f}s of CPU time")
    text = ", ".join(parts)
    if rss is not None and record.mem:
        text += f"; the job used {round(100 * rss / record.mem)}% of its memory claim"
    return text or None


def _memory(record: JobView) -> str | None:
    """The limit the kernel applied; a mode that could not be applied says so, never "limited"."""
    enforcement = record.enforcement
    if enforcement is None:
        return None
    mode = enforcement.get("mode") or "off"
    if enforcement.get("active") is True:
        high = enforcement.get("memory_high")
        limit = enforcement.get("memory_max")
        if limit is None and high is None:
            return None
        if mode == "soft" and high is not None:
            tail = f", killed above {format_size(limit)}" if limit is not None else ""
            return f"held back above {format_size(high)}{tail} (soft)"
        return f"limited to {format_size(limit or high or 0)} ({mode})"
    if mode in ("soft", "hard"):
        reason = enforcement.get("reason")
        why = f": {printable_line(reason)}" if reason else ""
        return f"NOT limited; [enforce] mode = {mode} is NOT ACTIVE{why}"
    return None


def _time(record: JobView, now: float) -> str | None:
    state = record.state
    submitted = record.submitted_at
    started = record.started_at
    finished = record.finished_at
    if state == words.QUEUED:
        return f"queued for {format_duration(max(0.0, now - submitted))}"
    if state in words.ACTIVE_WORDS:
        if started is None:
            return None
        return f"running for {format_duration(max(0.0, now - started))}"
    if finished is not None and started is not None:
        return f"ran for {format_duration(max(0.0, finished - started))}"
    if finished is not None:
        return f"waited {format_duration(max(0.0, finished - submitted))}, and never ran"
    return None


def _output_notes(record: JobView) -> list[str]:
    dropped = record.logs_dropped
    if dropped is None:
        return []
    from qex.core.records import dropped_counts  # only a record that lost output pays for it

    notes: list[str] = []
    limit = dropped.get("limit")
    limit_text = f"[logs] max_bytes = {format_size(limit)}" if limit else "[logs] max_bytes"
    write_error = dropped.get("write_error")
    for stream in ("stdout", "stderr"):
        size, lines = dropped_counts(dropped, stream)
        if (size or lines) and write_error:
            notes.append(
                f"{format_size(size)} and {lines} line(s) of {stream} are not in {stream}.log: "
                "qex could not write them (see the note above) or met the limit "
                f"{limit_text}"
            )
        elif size or lines:
            notes.append(
                f"qex removed {format_size(size)} and {lines} line(s) from the middle of "
                f"{stream}.log at the limit {limit_text}; the first and the last part are kept"
            )
    if dropped.get("incomplete"):
        notes.append("a process of the job held the output open, so a log may lack its last part")
    return notes


def _devices(record: JobView) -> list[str]:
    out: list[str] = []
    for pool, entry in sorted(record.assigned.items()):
        devices = entry.get("devices")
        name = safe_name(pool)
        if devices:
            size = entry.get("size")
            each = f"{format_size(size)} each" if size else "the whole of each device"
            out.append(f"{name} {','.join(str(d) for d in devices)} ({each})")
        else:
            out.append(f"{name} {entry.get('units', '?')} unit(s)")
    return out


def _claims(record: JobView) -> str | None:
    parts: list[str] = []
    for pool, claim in sorted(record.claims.items()):
        size = claim.get("size")
        extra = f" x {format_size(size)}" if size else ""
        parts.append(f"{safe_name(pool)}={claim.get('count', '?')}{extra}")
    return ", ".join(parts) or None


def _exit_line(record: JobView) -> list[str]:
    out: list[str] = []
    if record.exit_code is not None:
        out.append(_line("exit code", str(record.exit_code)))
    sig = record.signal
    if sig is not None:
        out.append(_line("signal", f"{sig} ({signal_name(sig)})"))
    return out


def _head(raw: JobView, shown: JobView) -> list[str]:
    """What ran, where, and how it ended."""
    out = [_line("id", shown.id), _line("name", shown.name or "job"),
           _line("state", shown.state)]
    if shown.group:
        suffix = f" ({shown.group_name})" if shown.group_name else ""
        out.append(_line("group", f"{shown.group}{suffix}"))
    out.append(_line("command", " ".join(shown.command)))
    if shown.cwd:
        out.append(_line("cwd", shown.cwd))
    if raw.pid is not None:
        out.append(_line("pid", str(raw.pid)))
    elif raw.last_pid is not None:
        out.append(_line("pid", f"{raw.last_pid} (was; the job stopped, and this pid is history)"))
    out.extend(_exit_line(raw))
    return out


def _resources(raw: JobView, now: float) -> list[str]:
    """What the job claimed and used, the limit it had, and its time."""
    out = [_line("claim", _claim(raw))]
    found = (("used", _used(raw)), ("memory", _memory(raw)), ("time", _time(raw, now)))
    out.extend(_line(label, text) for label, text in found if text)
    return out


def _remarks(raw: JobView, shown: JobView) -> list[str]:
    """Why it started alone, why it waits, what went wrong, and what qex noted."""
    out: list[str] = []
    if raw.forced:
        out.append(_line("forced", shown.forced_reason or "qex started this job alone"))
    if raw.state == words.QUEUED and shown.blocked_reason:
        out.append(_line("waits for", shown.blocked_reason))
    error = shown.error
    if error is not None and error.strip():
        out.append(_line("note" if raw.state == words.COMPLETED else "error", error))
    if shown.note is not None and shown.note.strip():
        out.append(_line("note", shown.note))
    if raw.oom_evidence == "session":
        out.append(_line("note", "the memory kill was counted for the whole login session, "
                                 "so it is not proven to be this job's"))
    out.extend(_line("output", text) for text in _output_notes(raw))
    if raw.attempts > 1 or raw.retries_left:
        out.append(_line("attempts", f"{raw.attempts} ({raw.retries_left} retry left)"))
    return out


def _links(raw: JobView, shown: JobView) -> list[str]:
    """Locks, keys, pools and devices, and the jobs it waits for."""
    out: list[str] = []
    if shown.locks:
        out.append(_line("locks", ", ".join(shown.locks)))
    if shown.dedupe_key:
        out.append(_line("dedupe", shown.dedupe_key))
    if raw.engine_id:
        out.append(_line(safe_name(raw.engine or "engine"), f"job {safe_name(raw.engine_id)}"))
    claims = _claims(raw)
    if claims:
        out.append(_line("claims", claims))
    out.extend(_line("devices", text) for text in _devices(raw))
    for label, ids in (("needs", raw.needs), ("after", raw.after)):
        if ids:
            out.append(_line(label, ", ".join(short_id(i) for i in ids)))
    if raw.caused_by:
        out.append(_line("caused by", short_id(raw.caused_by)))
    if shown.tags:
        out.append(_line("tags", ", ".join(shown.tags)))
    return out


def status_text(record: RecordLike, *, now: float, env: dict[str, str] | None = None,
                excerpts: list[ExcerptText] | None = None) -> str:
    """The labelled text block for one job (without a trailing newline). Each excerpt is
    (stream, its chosen lines, the notes on what they leave out)."""
    raw = view(record)
    shown = display(raw)
    out = [*_head(raw, shown), *_resources(raw, now), *_remarks(raw, shown),
           *_links(raw, shown)]
    if env is not None:
        out.append(_line("environment", f"{len(env)} variable(s)"))
        out.extend(f"  {visible(k)}={visible(v)}" for k, v in sorted(env.items()))
    for stream, lines, notes in excerpts or []:
        out.append("")
        out.append(f"--- {stream} ---")
        if lines:
            out.extend(for_json(line) for line in lines)
        else:
            out.append("(empty)")
        out.extend(f"... {note}" if not note.startswith("...") else note for note in notes)
    return "\n".join(out)


def status_json(record: dict[str, Any], *, env: dict[str, str] | None = None,
                excerpts: list[Excerpt] | None = None) -> dict[str, Any]:
    """The record for `--json`: display-safe fields, plus `env` and `logs` when asked."""
    data = display_record(record)
    if env is not None:
        data["env"] = {visible(k): visible(v) for k, v in env.items()}
    if excerpts:
        data["logs"] = {e.stream: e.to_dict() for e in excerpts}
    return data
