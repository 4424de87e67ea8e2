"""`qex logs --follow`: the last lines, then each new line as the job writes it.

The CLI looks at the files at a short interval (a reader, not the coordinator, so a poll of
two `stat` calls is cheap and needs no coordinator at all). It stops when the record says
the job is final and a last look found nothing new, so a follow of a finished job prints
its end and returns at once.

The supervisor cuts a log back when the job passes `[logs] max_bytes`; the file then gets
shorter. A follower notices the shorter file, says so on stderr, and continues at the new
end, so it neither repeats lines nor waits for bytes that will never come.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from qex.cli.common import warn
from qex.cli.fastlogs import follow_lead, write_out
from qex.cli.log_files import decode, log_path
from qex.core.logsel import Selection, StreamFilter, split_lines
from qex.core.model import dataclass

_MIN_PAUSE = 0.05
_MAX_PAUSE = 0.5
_READ_LIMIT = 1 << 20


@dataclass
class _Stream:
    name: str
    path: Path
    filter: StreamFilter
    offset: int = 0
    pending: bytes = b""
    prefix: str = ""


def _emit(stream: _Stream, lines: list[str]) -> None:
    if lines:
        write_out("".join(f"{stream.prefix}{line}\n" for line in lines))


def _lead(stream: _Stream, sel: Selection, lead: int) -> None:
    """Print the last `lead` lines (or matches) that the file holds now."""
    try:
        data = stream.path.read_bytes()
    except OSError:
        data = b""
    shown, count, pending = follow_lead(data, sel, lead)
    _emit(stream, shown)
    stream.offset = len(data)
    stream.pending = pending
    stream.filter = StreamFilter(sel, first_number=count + 1)


def _count_file_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _step(stream: _Stream, sel: Selection) -> bool:
    """Read what is new in one file; True when something moved."""
    try:
        size = stream.path.stat().st_size
    except OSError:
        return False
    if size < stream.offset:
        warn(f"[{stream.name}] the job passed `[logs] max_bytes`, so qex removed the middle of "
             "this log; the lines that follow continue at the new end of the file")
        stream.offset = size
        stream.pending = b""
        stream.filter = StreamFilter(sel, first_number=_count_file_lines(stream.path) + 1)
        return True
    if size == stream.offset:
        return False
    try:
        with open(stream.path, "rb") as handle:
            handle.seek(stream.offset)
            data = handle.read(min(size - stream.offset, _READ_LIMIT))
    except OSError:
        return False
    if not data:
        return False
    stream.offset += len(data)
    buffer = stream.pending + data
    end = buffer.rfind(b"\n") + 1
    stream.pending = buffer[end:]
    out: list[str] = []
    for line in split_lines(decode(buffer[:end])):
        out.extend(stream.filter.feed(line))
    _emit(stream, out)
    return True


def _flush(stream: _Stream) -> None:
    """A last line without a newline still reaches the reader when the job is final."""
    if stream.pending:
        _emit(stream, stream.filter.feed(decode(stream.pending)))
        stream.pending = b""


def follow(job_dir: Path, streams: list[str], sel: Selection, *, lead: int,
           job_state: Callable[[], str | None], is_final: Callable[[str], bool]) -> None:
    """Follow the chosen streams until the job is final and nothing more arrives."""
    prefixed = len(streams) > 1
    followed: list[_Stream] = []
    for name in streams:
        stream = _Stream(name=name, path=log_path(job_dir, name),
                         filter=StreamFilter(sel), prefix=f"[{name}] " if prefixed else "")
        _lead(stream, sel, lead)
        followed.append(stream)
    pause = _MIN_PAUSE
    while True:
        state = job_state()
        moved = False
        for stream in followed:
            while _step(stream, sel):
                moved = True
        if state is None:
            warn("the record of this job is gone, so qex stops following its log")
            break
        if is_final(state) and not moved:
            break
        if moved:
            pause = _MIN_PAUSE
        else:
            time.sleep(pause)
            pause = min(_MAX_PAUSE, pause * 1.5)
    for stream in followed:
        _flush(stream)
