"""Copying a job's log files to this command's stdout and stderr as they grow.

`qex run` and `--follow` show the output from its FIRST byte, as if the job wrote to the
terminal. The job writes to a pipe that the supervisor copies into `stdout.log` and
`stderr.log`, so following means reading those files as they grow; the wait loop calls
`pump()` every few tens of milliseconds (a short sleep in the CLI, never in the coordinator).

The output limit can cut a log while it is followed (the middle goes, a note stays): the
file becomes shorter than what was already copied. That is said once on stderr, and the copy
goes on from the new end, where the kept last part arrives when the job stops.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # the lean `qex run` imports this module: no `typing`, no `pathlib`
if TYPE_CHECKING:
    from typing import BinaryIO

CHUNK = 1 << 16


class _Stream:
    def __init__(self, path: str, sink: BinaryIO) -> None:
        self.path = path
        self.sink = sink
        self.offset = 0
        self.inode: int | None = None


class OutputFollower:
    """Pumps new bytes of stdout.log and stderr.log to the given binary sinks."""

    def __init__(self, job_dir: str | os.PathLike[str], *, out: BinaryIO | None = None,
                 err: BinaryIO | None = None, notes: BinaryIO | None = None) -> None:
        self._streams = [
            _Stream(os.path.join(job_dir, "stdout.log"), out or sys.stdout.buffer),
            _Stream(os.path.join(job_dir, "stderr.log"), err or sys.stderr.buffer),
        ]
        self._notes = notes or sys.stderr.buffer
        self._cut_said = False

    def _note(self, text: str) -> None:
        try:
            self._notes.write(f"qex: {text}\n".encode())
            self._notes.flush()
        except (OSError, ValueError):
            pass

    def _pump_one(self, stream: _Stream) -> bool:
        try:
            fd = os.open(stream.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        moved = False
        try:
            info = os.fstat(fd)
            if stream.inode is not None and info.st_ino != stream.inode:
                stream.offset = 0  # a new file (a rewrite): start it from its beginning
            stream.inode = info.st_ino
            if info.st_size < stream.offset:
                if not self._cut_said:
                    self._cut_said = True
                    self._note(
                        f"{os.path.basename(stream.path)} reached the limit `[logs] max_bytes`, "
                        "so qex removed the middle of it; the output goes on from the new end, "
                        "and the last part arrives when the job stops"
                    )
                stream.offset = info.st_size
                return False
            while True:
                data = os.pread(fd, CHUNK, stream.offset)
                if not data:
                    break
                stream.offset += len(data)
                moved = True
                try:
                    stream.sink.write(data)
                except (OSError, ValueError):
                    pass
            if moved:
                try:
                    stream.sink.flush()
                except (OSError, ValueError):
                    pass
        finally:
            os.close(fd)
        return moved

    def pump(self) -> bool:
        """Copy whatever is new; True when anything moved."""
        moved = False
        for stream in self._streams:
            moved = self._pump_one(stream) or moved
        return moved

    def finish(self) -> None:
        """The last copy after the job is final: everything the supervisor wrote."""
        while self.pump():
            pass
