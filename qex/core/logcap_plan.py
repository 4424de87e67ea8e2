"""The arithmetic behind `[logs] max_bytes`: how one stream keeps its head and its tail.

Pure: no I/O. The writer (`qex.supervisor.logcap`) owns the files; this module decides the
sizes, where the head is cut, how a tail that starts inside a line is trimmed, how qex's own
lines are told apart from the job's, and the words of the notes.

Why a head AND a tail: the head holds the start-up and the configuration, the tail holds the
failure. Why decide WHILE the job writes: nobody knows how much output will follow, and a job
that writes 400MB must never put 400MB on the disk that also holds every record.

The budget of one file of limit L is split four ways:
    note room  R = min(2048, L/8)     the `[qex]` lines (they are not the job's output)
    head       H = L/4                kept from the start of the stream
    tail       T = max(1, L - H - R)  a ring that always holds the newest T bytes
    fill       F = max(L - R, H)      output goes straight to the file until it reaches F
so head + notes + tail never passes L.

Invariants the writer keeps (tested with hypothesis): the file is at most L bytes; what is left
of the job's output, once the `[qex]` lines are removed, is a prefix of the output followed by
a suffix of it; kept bytes + dropped bytes = the bytes the job wrote; kept newlines + dropped
newlines = the newlines the job wrote (a "line" is counted by its newline).
"""

from __future__ import annotations

import re

from qex.core.model import dataclass
from qex.core.units import KIB, format_size

#: Every line that qex writes into a job's log starts with this, so readers can skip them.
NOTE_PREFIX = b"[qex] "
#: The line between two attempts of one job (`--- attempt 2 ---`).
ATTEMPT_MARK = re.compile(rb"--- attempt [0-9]+ ---")
#: The head is cut at a newline found in at most this many bytes before H.
CUT_SEARCH = 64 * KIB
#: A line is judged by its first bytes; longer than this, it is no line of qex's.
_JUDGE_BYTES = 40


@dataclass(frozen=True)
class Parts:
    """The split of one file's limit into head, tail and room for notes."""

    limit: int
    note_room: int
    head: int
    tail: int
    fill: int


def parts(limit: int) -> Parts:
    """The split for a limit of `limit` bytes (the config refuses less than 16 KiB)."""
    note_room = min(2048, limit // 8)
    head = limit // 4
    tail = max(1, limit - head - note_room)
    fill = max(limit - note_room, head)
    return Parts(limit=limit, note_room=note_room, head=head, tail=tail, fill=fill)


def cut_window(head: int) -> tuple[int, int]:
    """The range of the file [start, head) searched for the last newline before H."""
    span = min(head // 4, CUT_SEARCH)
    return head - span, head


def head_cut(window: bytes, window_start: int, head: int) -> tuple[int, bool]:
    """Where the head ends: just after the last newline of the window, so it keeps whole lines.

    Returns (offset, fragment). With no newline in the window the head keeps exactly H bytes
    and ends inside a line (`fragment`), which the writer then says in a note.
    """
    index = window.rfind(b"\n")
    if index < 0:
        return head, True
    return window_start + index + 1, False


def tail_trim(tail: bytes, starts_mid_line: bool, ring: int) -> tuple[int, bool]:
    """How many bytes to drop from the front of the tail, and whether it needs a note.

    A tail that starts inside a line is trimmed to the next line when that costs little (a
    newline within the first quarter of the ring); otherwise the partial line stays and a note
    says that it is partial, because dropping most of the ring to find a newline would lose
    the very part that the tail is for.
    """
    if not starts_mid_line or not tail:
        return 0, False
    index = tail.find(b"\n")
    if 0 <= index < ring // 4:
        return index + 1, False
    return 0, True


class JobTextTally:
    """Counts the job's bytes and newlines in a stretch of a log file, fed in chunks.

    Used when a cut removes text that may hold qex's own lines (notes and attempt marks of an
    earlier attempt), which must not be counted as the job's dropped output. A line is judged
    by its first bytes only, so the memory used stays small however long a line is.
    """

    def __init__(self, at_line_start: bool = True) -> None:
        self.bytes = 0
        self.newlines = 0
        self._line_head = b""
        self._line_len = 0
        # A stretch that starts inside a line: that partial line can never be a qex line.
        self._partial = not at_line_start

    def feed(self, chunk: bytes) -> None:
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            if end < 0:
                self._extend(chunk[start:])
                return
            self._extend(chunk[start:end])
            self._close_line(with_newline=True)
            start = end + 1

    def finish(self) -> tuple[int, int]:
        """(bytes, newlines) of the job's text; a last line with no newline is counted too."""
        if self._line_len:
            self._close_line(with_newline=False)
        return self.bytes, self.newlines

    def _extend(self, piece: bytes) -> None:
        if len(self._line_head) < _JUDGE_BYTES:
            self._line_head += piece[: _JUDGE_BYTES - len(self._line_head)]
        self._line_len += len(piece)

    def _close_line(self, *, with_newline: bool) -> None:
        head = self._line_head
        ours = not self._partial and (
            head.startswith(NOTE_PREFIX)
            or (self._line_len <= _JUDGE_BYTES and ATTEMPT_MARK.fullmatch(head) is not None)
        )
        if not ours:
            self.bytes += self._line_len + (1 if with_newline else 0)
            self.newlines += 1 if with_newline else 0
        self._line_head = b""
        self._line_len = 0
        self._partial = False


def job_text(data: bytes, at_line_start: bool = True) -> tuple[int, int]:
    """(bytes, newlines) of the job's own text in `data`, qex's lines left out."""
    tally = JobTextTally(at_line_start)
    tally.feed(data)
    return tally.finish()


# The notes. Each is one or more whole lines that start with NOTE_PREFIX; together they stay
# well inside the note room of the smallest limit (16 KiB -> 2048 bytes).


def _limit_text(limit: int) -> str:
    return f"`[logs] max_bytes` = {format_size(limit)}"


def overflow_note(limit: int) -> bytes:
    """Written where the head ends, at the moment the stream passes the limit."""
    return (
        f"[qex] This output passed {_limit_text(limit)}. qex keeps its newest part in a "
        "file beside this one and moves it here when the job stops.\n"
    ).encode()


def fragment_note() -> bytes:
    """After a head that ends inside a line (the line had no newline near the cut).

    It starts with a newline of its own so that the note is a line; a reader that removes the
    `[qex]` lines removes that newline with it.
    """
    return b"\n[qex] The line above is cut short: the rest of it was dropped with the middle.\n"


def summary_note(dropped_bytes: int, dropped_lines: int, limit: int, head: int, tail: int) -> bytes:
    """Between the head and the tail when the job stops: how much is missing, and the remedy."""
    return (
        f"[qex] ---- {format_size(dropped_bytes)} in {dropped_lines} line(s) of output were "
        "dropped here ----\n"
        f"[qex] Under {_limit_text(limit)} this file keeps the first {format_size(head)} and "
        f"the last {format_size(tail)}. Raise max_bytes in the config file to keep more.\n"
    ).encode()


def earlier_attempts_note(dropped_bytes: int, dropped_lines: int, limit: int) -> bytes:
    """When a new attempt finds the file full of earlier attempts and makes room."""
    return (
        f"[qex] ---- {format_size(dropped_bytes)} in {dropped_lines} line(s) of earlier output "
        f"were dropped here to make room for the next attempt under {_limit_text(limit)} ----\n"
    ).encode()


def mid_line_note() -> bytes:
    """Before a tail whose first line lost its beginning."""
    return b"[qex] The next line starts in the middle: its beginning was dropped.\n"


def no_ring_note(reason: str) -> bytes:
    """When the file for the newest part could not be made: the tail is lost, and why."""
    text = reason.replace("\n", " ")[:200]
    return (
        f"[qex] qex could not make the file for the newest part of the output ({text}), "
        "so that part is not here.\n"
    ).encode()


def attempt_mark(number: int) -> bytes:
    return f"--- attempt {number} ---\n".encode()
