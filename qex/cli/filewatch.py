"""Sleeping until a job directory changes, for a wait that has lost its coordinator.

The supervisor writes `status.json` by renaming a temp file into the job directory, so an
inotify watch on the directory (IN_MOVED_TO, IN_CLOSE_WRITE) wakes the wait the moment the
final record lands. inotify is reached through ctypes (Linux only, no extra package); where
it is missing the watch degrades to a slow sleep, which is the last resort.
"""

from __future__ import annotations

import ctypes
import os
import select
import time
from pathlib import Path

from qex.platform import host

IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
MASK = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF
#: Without inotify, look at the records this often.
SLOW_POLL = 2.0


class DirWatch:
    """Wake on any change in a few directories; `wait(timeout)` returns early on a change."""

    def __init__(self, directories: list[Path]) -> None:
        self._fd: int | None = None
        if host.linux():
            self._fd = self._open(directories)

    @staticmethod
    def _open(directories: list[Path]) -> int | None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = int(libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        watched = 0
        for directory in directories:
            if int(libc.inotify_add_watch(fd, os.fsencode(directory), MASK)) >= 0:
                watched += 1
        if not watched:
            os.close(fd)
            return None
        return fd

    @property
    def active(self) -> bool:
        return self._fd is not None

    def wait(self, timeout: float) -> None:
        if timeout <= 0:
            return
        if self._fd is None:
            time.sleep(min(timeout, SLOW_POLL))
            return
        ready, _, _ = select.select([self._fd], [], [], timeout)
        if ready:
            try:
                while os.read(self._fd, 65536):
                    pass
            except BlockingIOError:
                pass
            except OSError:
                pass

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
