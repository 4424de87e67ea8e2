"""Reading a job's log files from disk, and the notes that say what the files do not hold.

The logs need no coordinator: they are plain files in the job's directory, so `qex logs`
works while no coordinator runs. Text is decoded with `surrogateescape` and written back
with it, so a job's bytes reach the reader unchanged even when they are not UTF-8.

A large log is not read whole for the default view: the last lines come from a read of the
end of the file, and a count of newlines gives the total, so `qex logs` on a log of
gigabytes (with `[logs] max_bytes` off) stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.cli.fastlogs import count_open, stream_document
from qex.core.log_words import DEFAULT_TAIL, FAST_TAIL_BYTES
from qex.core.logsel import Selected, Selection, select_lines, split_lines
from qex.core.records import dropped_counts
from qex.core.units import format_size

if TYPE_CHECKING:
    from qex.core.records import LogsDropped


def log_path(job_dir: Path, stream: str) -> Path:
    return job_dir / f"{stream}.log"


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def read_tail(path: Path, count: int) -> tuple[list[str], int]:
    """The last `count` lines of a file and the number of lines before them."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        total = count_open(handle, size)
        if count <= 0 or size == 0:
            return [], total
        position = size
        buffer = b""
        while position > 0 and buffer.count(b"\n") <= count:
            step = min(1 << 16, position)
            position -= step
            handle.seek(position)
            buffer = handle.read(step) + buffer
    lines = split_lines(decode(buffer))
    if position > 0 and lines:
        lines = lines[1:]  # the first line of the buffer may start in the middle
    lines = lines[-count:]
    return lines, total - len(lines)


def _tail_only(sel: Selection) -> bool:
    return sel.grep is None and sel.head is None and sel.lines is None and not sel.all


def select_file(path: Path, sel: Selection, *, default_tail: int = DEFAULT_TAIL) -> Selected:
    """Apply a selection to one log file; a missing file is an empty stream."""
    try:
        size = path.stat().st_size
    except OSError:
        return select_lines([], sel, default_tail=default_tail)
    if size > FAST_TAIL_BYTES and _tail_only(sel):
        count = sel.tail if sel.tail is not None else default_tail
        try:
            lines, before = read_tail(path, count)
        except OSError:
            return select_lines([], sel, default_tail=default_tail)
        return select_lines(lines, sel, default_tail=default_tail, line_offset=before)
    try:
        text = decode(path.read_bytes())
    except OSError:
        text = ""
    return select_lines(split_lines(text), sel, default_tail=default_tail)


def dropped_note(dropped: LogsDropped | None, stream: str) -> str | None:
    """The sentence about output that the limit (the record's `logs_dropped`) removed from
    the middle of this stream."""
    size, lines = dropped_counts(dropped, stream)
    if size <= 0 and lines <= 0:
        return None
    limit = dropped.get("limit") if dropped else None
    limit_text = f" = {format_size(limit)}" if isinstance(limit, int) and limit > 0 else ""
    plural = "line" if lines == 1 else "lines"
    return (f"the job wrote more than `[logs] max_bytes`{limit_text}, so qex removed "
            f"{format_size(size)} and {lines} {plural} from the middle of this stream; the "
            "file keeps the first part and the last part, and nothing holds the rest")


def incomplete_note(dropped: LogsDropped | None) -> str | None:
    """The sentence for a log that may lack its end (the record's `logs_dropped`)."""
    if dropped and dropped.get("incomplete"):
        return ("a process of the job kept its output open after the job ended, so qex stopped "
                "reading; the end of a log file can be missing")
    return None


def pending_tail_note(job_dir: Path, stream: str) -> str | None:
    """While a job runs past the limit, its newest output waits in `<stream>.log.tail`."""
    if (job_dir / f"{stream}.log.tail").exists():
        return ("the job passed `[logs] max_bytes`; qex keeps its newest output aside and "
                "writes it into this file when the job stops")
    return None


def stream_json(path: Path, selected: Selected, dropped: LogsDropped | None,
                stream: str) -> dict[str, Any]:
    """The JSON object of one stream, with the same fields as `qex status --json` logs."""
    size, lines = dropped_counts(dropped, stream)
    return stream_document(str(path), selected, size, lines)
