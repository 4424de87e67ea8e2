"""The record of one job as `qex status` shows it: a labelled text block, or JSON.

The text answers the questions a reader acts on: what ran, how it ended, what it claimed and
what it really used, where the claim came from, what limit (if any) the kernel applied, why it
waits, and, for a job that did not complete, the last lines of its output, so the cause is on
the screen without a second command. It never states a memory limit that was not applied:
the `memory:` line says "limited" only when the record's `enforcement.active` is true.

Every text that another agent could have typed goes through `record_view.display_record`
(safe names, visible arguments, printable sentences).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.cli.record_json import display_record
from qex.cli.record_view import display, signal_text, typed
from qex.core import logsel
from qex.core.model import dataclass
from qex.core.names import printable_line, safe_name, short_id, visible
from qex.core.records import JobStatus, dropped_counts
from qex.core.states import ACTIVE, State
from qex.core.units import format_duration, format_size

if TYPE_CHECKING:
    from qex.core.records import LogsDropped
    from qex.store.paths import Paths

# `qex.cli.log_files` is imported inside the functions that read logs: the JSON record of a
# job that needs no excerpt (the fast path of `qex status <id> --json`) never loads it.

LABEL_WIDTH = 11
STREAMS = ("stderr", "stdout")

_CLAIM_SOURCE = {
    "learned": "  (from the earlier jobs of this command)",
    "fan-out": "  (from the earlier jobs of this fan-out)",
    "default": "  (the default; give --cpu and --mem to change it)",
}


@dataclass
class Excerpt:
    """The chosen lines of one stream, with what the log lost to `[logs] max_bytes`."""

    stream: str
    path: Path
    selected: logsel.Selected
    dropped: LogsDropped | None = None

    def to_dict(self) -> dict[str, Any]:
        from qex.cli import log_files

        return log_files.stream_json(self.path, self.selected, self.dropped, self.stream)

    def notes(self) -> list[str]:
        from qex.cli import log_files

        found = [self.selected.notice(), log_files.dropped_note(self.dropped, self.stream)]
        return [n for n in found if n]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def load_excerpts(job_dir: Path, record: JobStatus, *, sel: logsel.Selection | None,
                  streams: tuple[str, ...] = STREAMS, always: bool = False) -> list[Excerpt]:
    """The log excerpts `qex status` shows for `record`.

    Without an explicit selection, only a job that stopped without completing gets them: the
    last lines of stderr then stdout, 20 lines in all (10 each when both have text).
    """
    explicit = sel is not None and sel.explicit
    final_bad = record.final and record.state is not State.COMPLETED
    if not (explicit or always or final_bad):
        return []
    from qex.cli import log_files

    chosen = sel if sel is not None else logsel.Selection()
    paths = {stream: log_files.log_path(job_dir, stream) for stream in streams}
    non_empty = [s for s in streams if _size(paths[s]) > 0]
    tail = logsel.STATUS_LINES // 2 if len(non_empty) > 1 else logsel.STATUS_LINES
    excerpts: list[Excerpt] = []
    for stream in streams:
        if stream not in non_empty and not explicit:
            continue
        selected = log_files.select_file(paths[stream], chosen, default_tail=tail)
        excerpts.append(Excerpt(stream, paths[stream], selected, record.logs_dropped))
    return excerpts


def _line(label: str, value: str) -> str:
    return f"{label + ':':<{LABEL_WIDTH}}{value}"


def _claim(record: JobStatus) -> str:
    text = f"{record.cpu} core(s), {format_size(record.mem)}"
    return text + _CLAIM_SOURCE.get(record.claim_source, "")


def _used(record: JobStatus) -> str | None:
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


def _memory(record: JobStatus) -> str | None:
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


def _time(record: JobStatus, now: float) -> str | None:
    state = record.state
    submitted = record.submitted_at
    started = record.started_at
    finished = record.finished_at
    if state is State.QUEUED:
        return f"queued for {format_duration(max(0.0, now - submitted))}"
    if state in ACTIVE:
        if started is None:
            return None
        return f"running for {format_duration(max(0.0, now - started))}"
    if finished is not None and started is not None:
        return f"ran for {format_duration(max(0.0, finished - started))}"
    if finished is not None:
        return f"waited {format_duration(max(0.0, finished - submitted))}, and never ran"
    return None


def _output_notes(record: JobStatus) -> list[str]:
    dropped = record.logs_dropped
    if dropped is None:
        return []
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


def _devices(record: JobStatus) -> list[str]:
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


def _claims(record: JobStatus) -> str | None:
    parts: list[str] = []
    for pool, claim in sorted(record.claims.items()):
        size = claim.get("size")
        extra = f" x {format_size(size)}" if size else ""
        parts.append(f"{safe_name(pool)}={claim.get('count', '?')}{extra}")
    return ", ".join(parts) or None


def _exit_line(record: JobStatus) -> list[str]:
    out: list[str] = []
    if record.exit_code is not None:
        out.append(_line("exit code", str(record.exit_code)))
    sig = record.signal
    if sig is not None:
        out.append(_line("signal", f"{sig} ({signal_text(sig)})"))
    return out


def _head(raw: JobStatus, view: JobStatus) -> list[str]:
    """What ran, where, and how it ended."""
    out = [_line("id", view.id), _line("name", view.name or "job"),
           _line("state", view.state.value)]
    if view.group:
        suffix = f" ({view.group_name})" if view.group_name else ""
        out.append(_line("group", f"{view.group}{suffix}"))
    out.append(_line("command", " ".join(view.command)))
    if view.cwd:
        out.append(_line("cwd", view.cwd))
    if raw.pid is not None:
        out.append(_line("pid", str(raw.pid)))
    elif raw.last_pid is not None:
        out.append(_line("pid", f"{raw.last_pid} (was; the job stopped, and this pid is history)"))
    out.extend(_exit_line(raw))
    return out


def _resources(raw: JobStatus, now: float) -> list[str]:
    """What the job claimed and used, the limit it had, and its time."""
    out = [_line("claim", _claim(raw))]
    found = (("used", _used(raw)), ("memory", _memory(raw)), ("time", _time(raw, now)))
    out.extend(_line(label, text) for label, text in found if text)
    return out


def _remarks(raw: JobStatus, view: JobStatus) -> list[str]:
    """Why it started alone, why it waits, what went wrong, and what qex noted."""
    out: list[str] = []
    if raw.forced:
        out.append(_line("forced", view.forced_reason or "qex started this job alone"))
    if raw.state is State.QUEUED and view.blocked_reason:
        out.append(_line("waits for", view.blocked_reason))
    error = view.error
    if error is not None and error.strip():
        out.append(_line("note" if raw.state is State.COMPLETED else "error", error))
    if view.note is not None and view.note.strip():
        out.append(_line("note", view.note))
    if raw.oom_evidence == "session":
        out.append(_line("note", "the memory kill was counted for the whole login session, "
                                 "so it is not proven to be this job's"))
    out.extend(_line("output", text) for text in _output_notes(raw))
    if raw.attempts > 1 or raw.retries_left:
        out.append(_line("attempts", f"{raw.attempts} ({raw.retries_left} retry left)"))
    return out


def _links(raw: JobStatus, view: JobStatus) -> list[str]:
    """Locks, keys, pools and devices, and the jobs it waits for."""
    out: list[str] = []
    if view.locks:
        out.append(_line("locks", ", ".join(view.locks)))
    if view.dedupe_key:
        out.append(_line("dedupe", view.dedupe_key))
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
    if view.tags:
        out.append(_line("tags", ", ".join(view.tags)))
    return out


def status_text(record: JobStatus, *, now: float, env: dict[str, str] | None = None,
                excerpts: list[Excerpt] | None = None) -> str:
    """The labelled text block for one job (without a trailing newline)."""
    view = display(record)
    out = [*_head(record, view), *_resources(record, now), *_remarks(record, view),
           *_links(record, view)]
    if env is not None:
        out.append(_line("environment", f"{len(env)} variable(s)"))
        out.extend(f"  {visible(k)}={visible(v)}" for k, v in sorted(env.items()))
    for excerpt in excerpts or []:
        out.append("")
        out.append(f"--- {excerpt.stream} ---")
        if excerpt.selected.lines:
            from qex.cli.log_files import for_json

            out.extend(for_json(line) for line in excerpt.selected.lines)
        else:
            out.append("(empty)")
        out.extend(f"... {note}" if not note.startswith("...") else note
                   for note in excerpt.notes())
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


def read_env(job_dir: Path) -> dict[str, str]:
    """The captured environment from spec.json (0600; shown only with --show-env)."""
    from qex.store import atomic, jobs

    data = atomic.read_json(job_dir / jobs.SPEC)
    env = data.get("env") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def print_records(paths: Paths, records: list[dict[str, Any]], *, as_json: bool,
                  show_env: bool = False, no_logs: bool = False,
                  sel: logsel.Selection | None = None, streams: tuple[str, ...] = STREAMS,
                  group: bool = False) -> None:
    """Print records as `qex status` does: text blocks, or JSON (an array for a group)."""
    import sys
    import time

    from qex.cli.jsontext import dumps

    now = time.time()
    blocks: list[str] = []
    documents: list[dict[str, Any]] = []
    for record in records:
        job = typed(record)
        job_dir = paths.job_dir(job.id)
        env = read_env(job_dir) if show_env else None
        excerpts = [] if no_logs else load_excerpts(job_dir, job, sel=sel, streams=streams)
        if as_json:
            documents.append(status_json(record, env=env, excerpts=excerpts))
        else:
            blocks.append(status_text(job, now=now, env=env, excerpts=excerpts))
    text = dumps(documents if group else documents[0]) if as_json else "\n\n".join(blocks)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
