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

from qex.cli.record_view import display_record, signal_text
from qex.core import logsel
from qex.core.model import dataclass
from qex.core.names import printable_line, safe_name, short_id, visible
from qex.core.units import format_duration, format_size

if TYPE_CHECKING:
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
    record: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        from qex.cli import log_files

        return log_files.stream_json(self.path, self.selected, self.record, self.stream)

    def notes(self) -> list[str]:
        from qex.cli import log_files

        found = [self.selected.notice(), log_files.dropped_note(self.record, self.stream)]
        return [n for n in found if n]


def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def load_excerpts(job_dir: Path, record: dict[str, Any], *, sel: logsel.Selection | None,
                  streams: tuple[str, ...] = STREAMS, always: bool = False) -> list[Excerpt]:
    """The log excerpts `qex status` shows for `record`.

    Without an explicit selection, only a job that stopped without completing gets them: the
    last lines of stderr then stdout, 20 lines in all (10 each when both have text).
    """
    explicit = sel is not None and sel.explicit
    state = str(record.get("state", ""))
    final_bad = state not in ("queued", "starting", "running", "completed")
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
        excerpts.append(Excerpt(stream, paths[stream], selected, record))
    return excerpts


def _line(label: str, value: str) -> str:
    return f"{label + ':':<{LABEL_WIDTH}}{value}"


def _claim(record: dict[str, Any]) -> str:
    cpu = record.get("cpu")
    mem = _num(record.get("mem"))
    text = f"{cpu} core(s), {format_size(mem) if mem is not None else '?'}"
    return text + _CLAIM_SOURCE.get(str(record.get("claim_source")), "")


def _used(record: dict[str, Any]) -> str | None:
    usage = record.get("usage")
    if not isinstance(usage, dict):
        return None
    rss = _num(usage.get("max_rss"))
    cpu_secs = _num(usage.get("cpu_secs"))
    parts: list[str] = []
    if rss is not None:
        parts.append(f"{format_size(rss)} of memory at the peak")
    if cpu_secs is not None:
        parts.append(f"{cpu_secs:.1f}s of CPU time")
    text = ", ".join(parts)
    mem = _num(record.get("mem"))
    if rss is not None and mem:
        text += f"; the job used {round(100 * rss / mem)}% of its memory claim"
    return text or None


def _memory(record: dict[str, Any]) -> str | None:
    """The limit the kernel applied; a mode that could not be applied says so, never "limited"."""
    enforcement = record.get("enforcement")
    if not isinstance(enforcement, dict):
        return None
    mode = str(enforcement.get("mode") or "off")
    if enforcement.get("active") is True:
        high = _num(enforcement.get("memory_high"))
        limit = _num(enforcement.get("memory_max"))
        if limit is None and high is None:
            return None
        if mode == "soft" and high is not None:
            tail = f", killed above {format_size(limit)}" if limit is not None else ""
            return f"held back above {format_size(high)}{tail} (soft)"
        return f"limited to {format_size(limit or high or 0)} ({mode})"
    if mode in ("soft", "hard"):
        reason = enforcement.get("reason")
        why = f": {printable_line(reason)}" if isinstance(reason, str) and reason else ""
        return f"NOT limited; [enforce] mode = {mode} is NOT ACTIVE{why}"
    return None


def _time(record: dict[str, Any], now: float) -> str | None:
    state = str(record.get("state"))
    submitted = _num(record.get("submitted_at"))
    started = _num(record.get("started_at"))
    finished = _num(record.get("finished_at"))
    if state == "queued" and submitted is not None:
        return f"queued for {format_duration(max(0.0, now - submitted))}"
    if state in ("starting", "running") and started is not None:
        return f"running for {format_duration(max(0.0, now - started))}"
    if finished is not None and started is not None:
        return f"ran for {format_duration(max(0.0, finished - started))}"
    if finished is not None and submitted is not None:
        return f"waited {format_duration(max(0.0, finished - submitted))}, and never ran"
    return None


def _output_notes(record: dict[str, Any]) -> list[str]:
    dropped = record.get("logs_dropped")
    if not isinstance(dropped, dict):
        return []
    from qex.cli import log_files

    notes: list[str] = []
    limit = _num(dropped.get("limit"))
    limit_text = f"[logs] max_bytes = {format_size(limit)}" if limit else "[logs] max_bytes"
    for stream in ("stdout", "stderr"):
        size, lines = log_files.dropped_counts(record, stream)
        if size or lines:
            notes.append(
                f"qex removed {format_size(size)} and {lines} line(s) from the middle of "
                f"{stream}.log at the limit {limit_text}; the first and the last part are kept"
            )
    if dropped.get("incomplete"):
        notes.append("a process of the job held the output open, so a log may lack its last part")
    return notes


def _devices(record: dict[str, Any]) -> list[str]:
    assigned = record.get("assigned")
    if not isinstance(assigned, dict):
        return []
    out: list[str] = []
    for pool, entry in sorted(assigned.items()):
        if not isinstance(entry, dict):
            continue
        devices = entry.get("devices")
        name = safe_name(str(pool))
        if isinstance(devices, list) and devices:
            size = _num(entry.get("size"))
            each = f"{format_size(size)} each" if size else "the whole of each device"
            out.append(f"{name} {','.join(str(d) for d in devices)} ({each})")
        else:
            out.append(f"{name} {entry.get('units', '?')} unit(s)")
    return out


def _claims(record: dict[str, Any]) -> str | None:
    claims = record.get("claims")
    if not isinstance(claims, dict) or not claims:
        return None
    parts: list[str] = []
    for pool, claim in sorted(claims.items()):
        if not isinstance(claim, dict):
            continue
        size = _num(claim.get("size"))
        extra = f" x {format_size(size)}" if size else ""
        parts.append(f"{safe_name(str(pool))}={claim.get('count', '?')}{extra}")
    return ", ".join(parts) or None


def _exit_line(record: dict[str, Any]) -> list[str]:
    out: list[str] = []
    code = record.get("exit_code")
    if isinstance(code, int):
        out.append(_line("exit code", str(code)))
    sig = record.get("signal")
    if isinstance(sig, int):
        out.append(_line("signal", f"{sig} ({signal_text(sig)})"))
    return out


def status_text(record: dict[str, Any], *, now: float, env: dict[str, str] | None = None,
                excerpts: list[Excerpt] | None = None) -> str:
    """The labelled text block for one job (without a trailing newline)."""
    raw = record
    view = display_record(record)
    out = [_line("id", str(view.get("id")))]
    out.append(_line("name", str(view.get("name") or "job")))
    out.append(_line("state", str(view.get("state"))))
    if view.get("group"):
        group_name = view.get("group_name")
        suffix = f" ({group_name})" if group_name else ""
        out.append(_line("group", f"{view['group']}{suffix}"))
    command = view.get("command")
    if isinstance(command, list):
        out.append(_line("command", " ".join(str(a) for a in command)))
    if view.get("cwd"):
        out.append(_line("cwd", str(view["cwd"])))
    pid = raw.get("pid")
    last_pid = raw.get("last_pid")
    if isinstance(pid, int):
        out.append(_line("pid", str(pid)))
    elif isinstance(last_pid, int):
        out.append(_line("pid", f"{last_pid} (was; the job stopped, and this pid is history)"))
    out.extend(_exit_line(raw))
    out.append(_line("claim", _claim(raw)))
    used = _used(raw)
    if used:
        out.append(_line("used", used))
    memory = _memory(raw)
    if memory:
        out.append(_line("memory", memory))
    when = _time(raw, now)
    if when:
        out.append(_line("time", when))
    if raw.get("forced"):
        reason = view.get("forced_reason") or "qex started this job alone"
        out.append(_line("forced", str(reason)))
    if raw.get("state") == "queued" and view.get("blocked_reason"):
        out.append(_line("waits for", str(view["blocked_reason"])))
    error = view.get("error")
    if isinstance(error, str) and error.strip():
        out.append(_line("note" if raw.get("state") == "completed" else "error", error))
    note = view.get("note")
    if isinstance(note, str) and note.strip():
        out.append(_line("note", note))
    if raw.get("oom_evidence") == "session":
        out.append(_line("note", "the memory kill was counted for the whole login session, "
                                 "so it is not proven to be this job's"))
    for text in _output_notes(raw):
        out.append(_line("output", text))
    attempts = raw.get("attempts")
    if isinstance(attempts, int) and (attempts > 1 or raw.get("retries_left")):
        left = raw.get("retries_left") or 0
        out.append(_line("attempts", f"{attempts} ({left} retry left)"))
    if view.get("locks"):
        out.append(_line("locks", ", ".join(view["locks"])))
    if view.get("dedupe_key"):
        out.append(_line("dedupe", str(view["dedupe_key"])))
    if raw.get("engine_id"):
        engine = safe_name(str(raw.get("engine") or "engine"))
        out.append(_line(engine, f"job {safe_name(str(raw['engine_id']))}"))
    claims = _claims(raw)
    if claims:
        out.append(_line("claims", claims))
    for text in _devices(raw):
        out.append(_line("devices", text))
    for label, key in (("needs", "needs"), ("after", "after")):
        ids = raw.get(key)
        if isinstance(ids, list) and ids:
            out.append(_line(label, ", ".join(short_id(str(i)) for i in ids)))
    if raw.get("caused_by"):
        out.append(_line("caused by", short_id(str(raw["caused_by"]))))
    if view.get("tags"):
        out.append(_line("tags", ", ".join(view["tags"])))
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
    import json
    import sys
    import time

    now = time.time()
    blocks: list[str] = []
    documents: list[dict[str, Any]] = []
    for record in records:
        job_dir = paths.job_dir(str(record["id"]))
        env = read_env(job_dir) if show_env else None
        excerpts = [] if no_logs else load_excerpts(job_dir, record, sel=sel, streams=streams)
        if as_json:
            documents.append(status_json(record, env=env, excerpts=excerpts))
        else:
            blocks.append(status_text(record, now=now, env=env, excerpts=excerpts))
    if as_json:
        text = json.dumps(documents if group else documents[0], indent=2)
    else:
        text = "\n\n".join(blocks)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
