"""One stream's log file, capped while the job writes (`[logs] max_bytes`).

The sizes, the cut rules and the words of the notes come from `qex.core.logcap_plan`; this
module does the file work. Output goes straight to `<name>.log` until the file reaches the
fill mark. At the first byte beyond it the file is cut back to the head (at a line end), a
note says that the newest part is kept aside, and from then on the output goes round a ring
file `<name>.log.tail` of the tail's size, which starts with the newest output that the cut
removed. When the attempt ends, a summary note and the ring (oldest byte first) are appended
and the ring file is deleted.

A write error never stops the job: the bytes that could not be written are counted as
dropped, the first fault is reported once, and the pipe keeps being drained so the job never
blocks on a full pipe.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from qex.core import logcap_plan as plan

#: How much of a cut stretch is read at a time to count what it held.
_COUNT_CHUNK = 1024 * 1024


class CappedLog:
    """The capped log of one stream (stdout or stderr) for one attempt of a job."""

    def __init__(
        self,
        path: Path,
        limit: int | None,
        *,
        truncate: bool,
        dropped_bytes: int = 0,
        dropped_lines: int = 0,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.limit = limit
        self.parts = plan.parts(limit) if limit is not None else None
        #: Cumulative over the attempts of the job: what is not in the file.
        self.dropped_bytes = dropped_bytes
        self.dropped_lines = dropped_lines
        self._tail_path: Path | None = None
        self._report = report
        self._faulted = False
        #: Why a write of this log failed (the first cause), for the record's `logs_dropped`.
        self.write_error: str | None = None
        self._fd: int | None = None
        self.size = 0
        self._at_line_start = True
        # The file may hold qex's own lines (an earlier attempt, a mark): cuts must skip them.
        self._mixed = False
        #: From this offset on, the file holds only the job's text (qex wrote nothing after).
        self._job_since = 0
        self._overflowed = False
        self._head_kept = 0
        self._ring_fd: int | None = None
        self._ring_error: str | None = None
        self._ring_start = 0
        self._ring_len = 0
        self._ring_prev_newline = True
        self._ring_last_newline = True
        self._over_bytes = 0
        self._over_newlines = 0
        self._closed = False
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | (os.O_TRUNC if truncate else 0)
        try:
            self._fd = os.open(path, flags, 0o600)
            os.fchmod(self._fd, 0o600)
            # A truncated file is empty: no fstat (every attempt of every job opens two).
            self.size = 0 if truncate else os.fstat(self._fd).st_size
            if self.size:
                self._at_line_start = _pread(self._fd, 1, self.size - 1) == b"\n"
                self._mixed = True
                self._job_since = self.size
        except OSError as exc:
            self._fault(f"qex could not open the log file {path}: {exc.strerror or exc}")
            self.write_error = exc.strerror or str(exc)
            if self._fd is not None:
                os.close(self._fd)
            self._fd = None

    @property
    def overflowed(self) -> bool:
        return self._overflowed

    @property
    def tail_path(self) -> Path:
        """`<name>.log.tail`, the ring of an overflowed log; made when first asked, because
        most logs never overflow and a path costs a forked supervisor tens of microseconds."""
        if self._tail_path is None:
            self._tail_path = self.path.with_name(self.path.name + ".tail")
        return self._tail_path

    # -- the job's output ---------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Add output of the job; never raises."""
        if not data:
            return
        if self._fd is None:
            self._drop(data)
            return
        if self.parts is None:
            self._append(data, job=True)
            return
        if not self._overflowed:
            room = self.parts.fill - self.size
            if len(data) <= room:
                self._append(data, job=True)
                return
            if room > 0:
                self._append(data[:room], job=True)
                data = data[room:]
            self._overflow()
        self._ring_write(data)

    def begin_attempt(self, number: int) -> None:
        """Write `--- attempt N ---`, first making room if earlier attempts filled the file."""
        if self._fd is None:
            return
        mark = plan.attempt_mark(number)
        prefix = b"" if self._at_line_start else b"\n"
        if self.parts is not None and self.size + len(prefix) + len(mark) > self.parts.fill:
            before_bytes, before_lines = self.dropped_bytes, self.dropped_lines
            fragment = self._cut_head()
            note = plan.fragment_note() if fragment else b""
            note += plan.earlier_attempts_note(
                self.dropped_bytes - before_bytes, self.dropped_lines - before_lines,
                self.parts.limit,
            )
            self._append(note, job=False)
            prefix = b""
        self._append(prefix + mark, job=False)

    def finish(self) -> None:
        """End of the attempt: put the newest part back into the file, close everything."""
        if self._closed:
            return
        self._closed = True
        if self._overflowed and self.parts is not None and self._fd is not None:
            self._put_tail_back(self.parts)
        if self._ring_fd is not None:
            os.close(self._ring_fd)
            self._ring_fd = None
        if self._overflowed:
            try:
                os.unlink(self.tail_path)
            except OSError:
                pass
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- the file ------------------------------------------------------------------------

    def _append(self, data: bytes, *, job: bool) -> None:
        if self._fd is None:
            if job:
                self._drop(data)
            return
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(self._fd, view, self.size)
                self.size += written
                view = view[written:]
        except OSError as exc:
            self._fault(f"qex could not write the log file {self.path}: {exc.strerror or exc}")
            self.write_error = self.write_error or (exc.strerror or str(exc))
            if job:
                self._drop(bytes(view))
        if not job:
            self._mixed = True
            self._job_since = self.size
        if len(view) < len(data):
            self._at_line_start = data[len(data) - len(view) - 1 : len(data) - len(view)] == b"\n"

    def _drop(self, data: bytes) -> None:
        self.dropped_bytes += len(data)
        self.dropped_lines += data.count(b"\n")

    def _cut_head(self) -> bool:
        """Cut the file back to the head, counting what goes; True when it ends inside a line."""
        found = self._find_cut()
        return found is not None and self._cut_at(*found) and found[1]

    def _find_cut(self) -> tuple[int, bool] | None:
        """Where the head ends (`plan.head_cut`), or None when the file keeps all it holds (it
        is no longer than the head, or cannot be read)."""
        assert self.parts is not None and self._fd is not None
        head = self.parts.head
        if self.size <= head:
            self._head_kept = self.size
            return None
        try:
            start, end = plan.cut_window(head)
            return plan.head_cut(_pread(self._fd, end - start, start), start, head)
        except OSError as exc:
            self._fault(f"qex could not shorten the log file {self.path}: {exc.strerror or exc}")
            self._head_kept = self.size
            return None

    def _cut_at(self, cut: int, fragment: bool) -> bool:
        """Cut the file at `cut`, counting what goes as dropped; False when it could not."""
        assert self._fd is not None
        try:
            tally = plan.JobTextTally(at_line_start=not fragment)
            fast = not self._mixed
            for chunk in self._file_chunks(cut):
                if fast:
                    tally.bytes += len(chunk)
                    tally.newlines += chunk.count(b"\n")
                else:
                    tally.feed(chunk)
            dropped_bytes, dropped_lines = tally.finish()
            os.ftruncate(self._fd, cut)
        except OSError as exc:
            self._fault(f"qex could not shorten the log file {self.path}: {exc.strerror or exc}")
            self._head_kept = self.size
            return False
        self.dropped_bytes += dropped_bytes
        self.dropped_lines += dropped_lines
        self.size = cut
        self._head_kept = cut
        self._job_since = min(self._job_since, cut)
        self._at_line_start = not fragment
        return True

    def _overflow(self) -> None:
        """The file passed its fill mark: cut it back to the head and go on in the ring.

        The ring starts with the newest output that the cut removes, up to its size, and not
        empty: a job that stopped soon after the overflow kept a tail of a few bytes (none,
        once a partial first line was trimmed), and lost its last lines although the limit
        had room for them."""
        assert self.parts is not None
        self._overflowed = True
        self._ring_prev_newline = self._at_line_start
        try:
            self._ring_fd = os.open(
                self.tail_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            self._ring_error = exc.strerror or str(exc)
            self.write_error = self.write_error or self._ring_error
            self._fault(f"qex could not make {self.tail_path}: {self._ring_error}")
        found = self._find_cut()
        # A file that keeps all it holds may end inside a line: the notes must start a line.
        fragment = not self._at_line_start
        if found is not None:
            saved_bytes, saved_lines = self._save_newest(found[0])
            if self._cut_at(*found):  # the saved bytes went to the ring, not away
                fragment = found[1]
                self.dropped_bytes -= saved_bytes
                self.dropped_lines -= saved_lines
            else:  # the file still holds them: the ring must not hold them too
                self._over_bytes -= saved_bytes
                self._over_newlines -= saved_lines
                self._empty_ring()
        notes = (plan.fragment_note() if fragment else b"") + plan.overflow_note(self.parts.limit)
        self._append(notes, job=False)

    def _save_newest(self, cut: int) -> tuple[int, int]:
        """Copy into the ring the newest of the job's text that a cut at `cut` will remove.

        The copy starts at the latest of three offsets: the cut, the ring's size back from
        the end of the file, and the end of qex's last line (its notes and marks are no
        output of the job). Returns the bytes and newlines copied, which the ring now
        counts; on a read error the ring is emptied again, and what it held counts as
        dropped when the attempt ends."""
        assert self.parts is not None and self._fd is not None
        start = max(cut, self.size - self.parts.tail, self._job_since)
        copied = newlines = 0
        if start >= self.size:
            return 0, 0
        try:
            self._ring_prev_newline = _pread(self._fd, 1, start - 1) == b"\n"
            for chunk in self._file_chunks(start):
                self._ring_write(chunk)
                copied += len(chunk)
                newlines += chunk.count(b"\n")
        except OSError as exc:
            self._fault(f"qex could not read the log file {self.path}: {exc.strerror or exc}")
            self._empty_ring()
        return copied, newlines

    def _empty_ring(self) -> None:
        """Forget a copy into the ring that must not stand (the overflow's first, before the
        file is cut): the ring is empty again, and its first byte follows the file's last."""
        self._ring_start = self._ring_len = 0
        self._ring_prev_newline = self._at_line_start

    def _file_chunks(self, start: int) -> Iterator[bytes]:
        """The file's bytes from `start` to what qex wrote last, in pieces of at most
        _COUNT_CHUNK (fewer if the file was shortened under qex)."""
        assert self._fd is not None
        offset = start
        while offset < self.size:
            chunk = _pread(self._fd, min(_COUNT_CHUNK, self.size - offset), offset)
            if not chunk:
                return
            yield chunk
            offset += len(chunk)

    # -- the ring of the newest bytes ----------------------------------------------------

    def _ring_write(self, data: bytes) -> None:
        assert self.parts is not None
        size = self.parts.tail
        self._over_bytes += len(data)
        self._over_newlines += data.count(b"\n")
        if self._ring_fd is None:
            return
        try:
            if len(data) >= size:
                if len(data) > size:
                    before = data[-size - 1] == 0x0A
                elif self._ring_len:
                    before = self._ring_last_newline
                else:
                    before = self._ring_prev_newline
                _pwrite_all(self._ring_fd, data[-size:], 0)
                self._ring_start, self._ring_len = 0, size
                self._ring_prev_newline = before
            else:
                end = (self._ring_start + self._ring_len) % size
                lost = max(0, self._ring_len + len(data) - size)
                if lost:
                    index = (self._ring_start + lost - 1) % size
                    self._ring_prev_newline = _pread(self._ring_fd, 1, index) == b"\n"
                first = min(len(data), size - end)
                _pwrite_all(self._ring_fd, data[:first], end)
                if first < len(data):
                    _pwrite_all(self._ring_fd, data[first:], 0)
                self._ring_len = min(size, self._ring_len + len(data))
                self._ring_start = (self._ring_start + lost) % size
            self._ring_last_newline = data[-1] == 0x0A
        except OSError as exc:
            # The ring is unusable: what it held is lost, and so is everything after.
            self._ring_error = exc.strerror or str(exc)
            self.write_error = self.write_error or self._ring_error
            self._fault(f"qex could not write {self.tail_path}: {self._ring_error}")
            os.close(self._ring_fd)
            self._ring_fd = None
            self._ring_len = 0

    def _ring_chunks(self, skip: int, limit: int | None = None) -> Iterator[bytes]:
        """The ring's bytes oldest first, from `skip`, in pieces of at most _COUNT_CHUNK."""
        assert self.parts is not None and self._ring_fd is not None
        size = self.parts.tail
        end = self._ring_len if limit is None else min(self._ring_len, skip + limit)
        position = skip
        while position < end:
            physical = (self._ring_start + position) % size
            length = min(_COUNT_CHUNK, end - position, size - physical)
            chunk = _pread(self._ring_fd, length, physical)
            if not chunk:
                return
            yield chunk
            position += len(chunk)

    def _put_tail_back(self, parts: plan.Parts) -> None:
        """Append the notes and the ring (oldest byte first), without holding it in memory.

        Two passes over the ring: one counts its newlines, because the summary note that
        precedes the tail must give the final counts; one copies it.
        """
        trim, mid_line, kept_bytes, kept_newlines = 0, False, 0, 0
        if self._ring_fd is not None and self._ring_len:
            try:
                first = b"".join(self._ring_chunks(0, parts.tail // 4 + 1))
                trim, mid_line = plan.tail_trim(first, not self._ring_prev_newline, parts.tail)
                for chunk in self._ring_chunks(trim):
                    kept_bytes += len(chunk)
                    kept_newlines += chunk.count(b"\n")
            except OSError as exc:
                self._ring_error = exc.strerror or str(exc)
                self._fault(f"qex could not read {self.tail_path}: {self._ring_error}")
                trim, mid_line, kept_bytes, kept_newlines = 0, False, 0, 0
        self.dropped_bytes += self._over_bytes - kept_bytes
        self.dropped_lines += self._over_newlines - kept_newlines
        notes = plan.no_ring_note(self._ring_error) if self._ring_error is not None else b""
        notes += plan.summary_note(
            self.dropped_bytes, self.dropped_lines, parts.limit, self._head_kept, kept_bytes
        )
        if mid_line:
            notes += plan.mid_line_note()
        self._append(notes, job=False)
        if not kept_bytes:
            return
        try:
            for chunk in self._ring_chunks(trim):
                self._append(chunk, job=True)
        except OSError as exc:
            self._fault(f"qex could not read {self.tail_path}: {exc.strerror or exc}")

    def _fault(self, message: str) -> None:
        if self._faulted:
            return
        self._faulted = True
        if self._report is not None:
            self._report(message)


def _pread(fd: int, length: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while length > 0:
        chunk = os.pread(fd, length, offset)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        offset += written
        view = view[written:]
