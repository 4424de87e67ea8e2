"""Noticing that files changed without polling: the one inotify binding of qex (Linux).

Two users: a wait that lost its coordinator sleeps until a job directory changes (the
supervisor renames the final `status.json` into it), and the coordinator notices an edit to
its config file (editors replace the file by renaming a new one over it, so the DIRECTORY is
watched, never the file).

`Watcher` is the interface; `open_watcher` gives the inotify one, or `SlowWatcher` (a plain
sleep that reports "maybe changed" after each step) where inotify is missing. A polling
variant implements the same three methods. inotify is reached through ctypes: no extra
package, and nothing is loaded until a watch is opened.
"""

from __future__ import annotations

import os
import select
import struct
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from qex.core.model import dataclass
from qex.platform import host

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_IGNORED = 0x00008000
#: Everything that can change what a reader of the directory would see.
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
        | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
#: Enough for a reader of job records: a file written whole or renamed in, or a directory that
#: came or went (not every write to a log file).
RECORD_MASK = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_HEADER = struct.Struct("iIII")
#: Without inotify, a waiter looks again this often.
SLOW_POLL = 2.0


@dataclass(frozen=True)
class Changes:
    """What one look found: the names that changed, and whether a watched directory went.

    `unknown` is True when the watcher cannot tell (a sleep ended): treat everything as
    possibly changed.
    """

    names: frozenset[bytes] = frozenset()
    gone: bool = False
    unknown: bool = False

    def touches(self, name: bytes) -> bool:
        return self.unknown or self.gone or name in self.names

    def __bool__(self) -> bool:
        return bool(self.names) or self.gone or self.unknown


class Watcher(Protocol):
    """Changes in a few directories."""

    def fileno(self) -> int | None:
        """A descriptor that turns readable on a change (for select or an event loop), or
        None when this watcher cannot wake anyone and must be asked with `wait`."""

    def wait(self, timeout: float) -> Changes:
        """Block up to `timeout` seconds for a change; what changed (empty when nothing)."""

    def read(self) -> Changes:
        """What changed since the last look, without blocking."""

    def close(self) -> None: ...


class InotifyWatcher:
    """inotify on a few directories."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def open(cls, directories: Iterable[Path], mask: int = MASK) -> InotifyWatcher | None:
        """A watch on every directory that exists; None when inotify is missing or none
        of the directories could be watched."""
        if not host.linux():  # the portable implementation has no inotify
            return None
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        watched = 0
        for directory in directories:
            if int(libc.inotify_add_watch(fd, os.fsencode(directory), mask)) >= 0:
                watched += 1
        if not watched:
            os.close(fd)
            return None
        return cls(fd)

    def fileno(self) -> int | None:
        return self._fd

    def read(self) -> Changes:
        if self._fd is None:
            return Changes(gone=True)
        data = b""
        try:
            while True:
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass
        except OSError:
            return Changes(gone=True)
        return parse_events(data)

    def wait(self, timeout: float) -> Changes:
        if self._fd is None or timeout <= 0:
            return Changes()
        ready, _, _ = select.select([self._fd], [], [], timeout)
        return self.read() if ready else Changes()

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


def parse_events(data: bytes) -> Changes:
    """The names in a buffer of `struct inotify_event` records, and whether a watched
    directory itself went away."""
    names: set[bytes] = set()
    gone = False
    offset = 0
    while offset + _HEADER.size <= len(data):
        _wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
        name = data[offset + _HEADER.size: offset + _HEADER.size + length].rstrip(b"\0")
        offset += _HEADER.size + length
        if mask & _GONE:
            gone = True
        elif name:
            names.add(name)
    return Changes(names=frozenset(names), gone=gone)


class SlowWatcher:
    """No way to be woken: `wait` sleeps (at most `SLOW_POLL`) and then says "maybe"."""

    def fileno(self) -> int | None:
        return None

    def read(self) -> Changes:
        return Changes(unknown=True)

    def wait(self, timeout: float) -> Changes:
        if timeout <= 0:
            return Changes()
        time.sleep(min(timeout, SLOW_POLL))
        return Changes(unknown=True)

    def close(self) -> None:
        pass


def open_watcher(directories: Iterable[Path], mask: int = MASK) -> Watcher:
    """The best watcher this system has for `directories` (`mask`: which inotify events)."""
    return InotifyWatcher.open(directories, mask) or SlowWatcher()


class FileWatch:
    """Calls `on_change` from a running asyncio loop when one file may have changed.

    Only with a watcher that can wake the loop (`fileno`); `start` returns None otherwise,
    and the caller looks at the file on its other wake-ups instead.
    """

    def __init__(self, watcher: Watcher, fd: int, name: bytes,
                 on_change: Callable[[], None]) -> None:
        self._watcher = watcher
        self._fd = fd
        self._name = name
        self._on_change = on_change
        self.closed = False

    @classmethod
    def start(cls, path: Path, on_change: Callable[[], None]) -> FileWatch | None:
        import asyncio

        if not path.parent.is_dir():
            return None
        watcher = InotifyWatcher.open([path.parent])
        fd = watcher.fileno() if watcher is not None else None
        if watcher is None or fd is None:
            return None
        watch = cls(watcher, fd, os.fsencode(path.name), on_change)
        asyncio.get_running_loop().add_reader(fd, watch._readable)
        return watch

    def _readable(self) -> None:
        changes = self._watcher.read()
        if changes.gone:
            self.close()  # the directory went: the caller's heartbeat takes over
        if changes.touches(self._name):
            self._on_change()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        import asyncio

        try:
            asyncio.get_running_loop().remove_reader(self._fd)
        except RuntimeError:
            pass
        self._watcher.close()
