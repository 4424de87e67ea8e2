"""`qex logs ID` for a job that has stopped, straight from its files.

The common calls are `qex logs <id>` with no option, on a job that has finished (the last
lines of both streams, each under its `==> stream <==` head), and the same with `--tail N`,
`--head N`, `--all`, `--stdout` or `--stderr`. The full body
(`qex.cli.logs_core`) imports the client, `pathlib`, typed records and the selection
module (`re`), which cost several times the interpreter's start-up; this form reads the
record and the two files with `os` alone and prints the same bytes.

A whole id needs no coordinator: the record on disk is the one the full body shows for a
job in a final state (the coordinator's copy only ever matches it, and no stale-record
judgement applies). The start of an id asks a listening coordinator which one job it names
(`fastread.job_id_by_prefix`). Everything else returns None having printed nothing: a word
that names no single job by its id, a missing or unreadable record, a job still active, a
record that says output was
dropped or may be incomplete, a stream still spilling into `<stream>.log.tail`, a file
large enough that the full body reads only its end. The caller then runs the full body.
"""

from __future__ import annotations

import os
import sys

from qex.core.log_words import (
    DEFAULT_TAIL,
    FAST_TAIL_BYTES,
    STATUS_LINES,
    STATUS_STREAMS,
    STREAMS,
    for_json,
    hidden_sentence,
)
from qex.core.state_words import COMPLETED, FINAL_WORDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def tail(data: bytes, count: int = DEFAULT_TAIL) -> tuple[bytes, int]:
    """The last `count` lines of a stream's bytes (each ending in a newline, as
    `Selected.text` writes them) and the number of lines before them."""
    if not data:
        return b"", 0
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    cut = max(0, len(lines) - count)
    return b"".join(line + b"\n" for line in lines[cut:]), cut


def _read(path: str) -> bytes | None:
    """A log file's bytes: empty when there is none, None when the full body must read it."""
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > FAST_TAIL_BYTES:
                return None
            return handle.read()
    except FileNotFoundError:
        return b""
    except OSError:
        return None


def _read_streams(job_dir: str, streams: tuple[str, ...]) -> list[tuple[str, bytes]] | None:
    """Each stream's whole log; None when one still spills into `<stream>.log.tail` or is too
    large to read whole (the full body then reads it)."""
    found: list[tuple[str, bytes]] = []
    for stream in streams:
        if os.path.exists(os.path.join(job_dir, f"{stream}.log.tail")):
            return None
        data = _read(os.path.join(job_dir, f"{stream}.log"))
        if data is None:
            return None
        found.append((stream, data))
    return found


def _cut(data: bytes, tail_count: int | None, head_count: int | None) -> tuple[bytes, int, str]:
    """The selected lines of one stream (each ending in a newline), the number left out and
    where they were (`earlier ` before a tail, `later ` after a head, empty for none)."""
    if tail_count is not None:
        text, hidden = tail(data, tail_count)
        return text, hidden, "earlier "
    lines = data.split(b"\n") if data else []
    if lines and lines[-1] == b"":
        lines.pop()
    kept = lines if head_count is None else lines[:head_count]
    return b"".join(line + b"\n" for line in kept), len(lines) - len(kept), "later "


def show(word: str, *, tail_count: int | None = DEFAULT_TAIL, head_count: int | None = None,
         streams: tuple[str, ...] = STREAMS) -> int | None:
    """Print a stopped job's logs as the full body prints them for the default view, `--tail
    N`, `--head N` or `--all` (both counts None), of both streams or one (`--stdout`,
    `--stderr`): the exit code, or None for the full body (having printed nothing)."""
    from qex.cli.fastwait import is_full_id

    if not is_full_id(word):
        from qex.cli.fastread import job_id_by_prefix

        whole = job_id_by_prefix(word)  # `qex logs 1a2b3c4d`: the id as the table shows it
        if whole is None:
            return None
        word = whole
    from qex.cli.wire import decode, state_dir

    state = state_dir(os.environ)
    if state is None:
        return None
    job_dir = os.path.join(state, "jobs", word)
    try:
        with open(os.path.join(job_dir, "status.json"), "rb") as handle:
            record = decode(handle.read())
    except OSError:
        return None
    from qex.cli.fastread import FINAL_STATES

    if record is None or record.get("id") != word or record.get("state") not in FINAL_STATES:
        return None
    if record.get("logs_dropped"):
        return None  # its notes need the record's counts: the full body words them
    logs = _read_streams(job_dir, streams)
    if logs is None:
        return None
    tagged = len(streams) > 1
    out, err = sys.stdout, sys.stderr
    for stream, data in logs:
        text, hidden, where = _cut(data, tail_count, head_count)
        out.flush()
        out.buffer.write((f"==> {stream} <==\n".encode() if tagged else b"") + text)
        out.buffer.flush()
        if hidden:
            tag = f"[{stream}] " if tagged else ""
            err.write(f"qex: {tag}{hidden_sentence(hidden, where)}\n")
            err.flush()
    return 0


class StatusCut:
    """The log options of `qex status` that the lean form reads: the streams (`--stdout`,
    `--stderr`, or both) and at most one range (`--tail N`, `--head N`, `--all`). With no
    range, a job that stopped without completing shows the last lines of each stream that
    has text; with one, every job shows each chosen stream, empty ones too."""

    def __init__(self, streams: tuple[str, ...] = STATUS_STREAMS, *, tail: int | None = None,
                 head: int | None = None, every: bool = False) -> None:
        self.streams, self.tail, self.head, self.every = streams, tail, head, every

    @property
    def explicit(self) -> bool:
        """True when a range was given (`logsel.Selection.explicit` for these options)."""
        return self.tail is not None or self.head is not None or self.every


class StreamExcerpt:
    """One stream's chosen lines, and the counts `qex status` words and `--json` gives."""

    def __init__(self, stream: str, path: str, lines: list[str], *, total: int, hidden: int,
                 where: str) -> None:
        self.stream, self.path, self.lines = stream, path, lines
        self.total, self.hidden, self.where = total, hidden, where

    def notice(self) -> str | None:
        """The sentence on the lines left out (`logsel.Selected.notice` without `--grep`)."""
        return f"... {hidden_sentence(self.hidden, self.where)}" if self.hidden else None

    def as_text(self) -> tuple[str, list[str], list[str]]:
        """(stream, lines, notes), as `render_status.status_text` takes an excerpt."""
        notice = self.notice()
        return self.stream, self.lines, [notice] if notice else []

    def as_json(self) -> dict[str, Any]:
        """The object `log_files.stream_json` makes for this stream of a record whose output
        lost nothing to the limit."""
        return {
            "path": self.path,
            "text": for_json("".join(line + "\n" for line in self.lines)),
            "total_lines": self.total,
            "hidden_lines": self.hidden,
            "matches": None,
            "matches_shown": None,
            "dropped_bytes": 0,
            "dropped_lines": 0,
            "notice": self.notice(),
        }


def _choose(lines: list[str], cut: StatusCut, default_tail: int) -> tuple[list[str], int, str]:
    """The lines a range keeps, how many it leaves out, and where they were (the words of
    `hidden_sentence`), as `logsel.select_lines` chooses them without `--grep`."""
    if cut.head is not None:
        kept = lines[:cut.head]
        return kept, len(lines) - len(kept), "later "
    if cut.every:
        return lines, 0, ""
    count = cut.tail if cut.tail is not None else default_tail
    kept = lines[max(0, len(lines) - count):] if count else []
    return kept, len(lines) - len(kept), "earlier "


def status_excerpts(record: dict[str, Any], cut: StatusCut | None = None
                    ) -> list[StreamExcerpt] | None:
    """The excerpts of a job's logs that `qex status` shows, as `status_print.load_excerpts`
    chooses them. Without a range: for a job that stopped without completing, the last lines
    of each stream with text (stderr first), `STATUS_LINES` in all, half each when both have
    text; for other jobs none. None (read nothing more) for what the full body must word:
    output the limit cut, a stream still in its spill file, a file too large to read whole."""
    cut = cut if cut is not None else StatusCut()
    job_id, state = record.get("id"), record.get("state")
    if not (cut.explicit or (state in FINAL_WORDS and state != COMPLETED)):
        return []
    if record.get("logs_dropped") or not isinstance(job_id, str):
        return None
    from qex.cli.wire import state_dir

    state_path = state_dir(os.environ)
    if state_path is None:
        return None
    job_dir = os.path.join(state_path, "jobs", job_id)
    logs = _read_streams(job_dir, cut.streams)
    if logs is None:
        return None
    if not cut.explicit:
        logs = [(stream, data) for stream, data in logs if data]
    default_tail = STATUS_LINES // 2 if sum(1 for _, data in logs if data) > 1 else STATUS_LINES
    excerpts = []
    for stream, data in logs:
        lines = data.decode("utf-8", "surrogateescape").split("\n") if data else []
        if lines and lines[-1] == "":
            lines.pop()
        kept, hidden, where = _choose(lines, cut, default_tail)
        excerpts.append(StreamExcerpt(stream, os.path.join(job_dir, f"{stream}.log"), kept,
                                      total=len(lines), hidden=hidden, where=where))
    return excerpts


#: How much of a log file `count_open` reads at a time.
_COUNT_CHUNK = 1 << 20


def count_open(handle: Any, size: int) -> int:
    """The number of lines in an open log file of `size` bytes (a last line without a
    newline counts), read from its start."""
    handle.seek(0)
    newlines = 0
    last = b""
    while True:
        chunk = handle.read(_COUNT_CHUNK)
        if not chunk:
            break
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
    return newlines + (1 if size and last != b"\n" else 0)


def count_lines(path: str | os.PathLike[str]) -> int:
    """The number of lines in a log file; 0 if there is none."""
    try:
        with open(path, "rb") as handle:
            return count_open(handle, os.fstat(handle.fileno()).st_size)
    except OSError:
        return 0


def output_hint(job_dir: str | os.PathLike[str], job_id: str) -> str | None:
    """What `submit --wait` says after the record: how many lines the job wrote, and the
    command that reads them (None when it never ran, so no log file exists)."""
    counts = {}
    for stream in STREAMS:
        path = os.path.join(job_dir, f"{stream}.log")
        if os.path.exists(path):
            counts[stream] = count_lines(path)
    if not counts:
        return None
    total = sum(counts.values())
    if total == 0:
        return f"the job wrote no output (`qex logs {job_id}` shows it when there is some)"
    parts = ", ".join(f"{n} on {stream}" for stream, n in counts.items() if n)
    noun, them = ("line", "it") if total == 1 else ("lines", "them")
    return f"the job wrote {total} {noun} ({parts}); read {them} with `qex logs {job_id}`"
