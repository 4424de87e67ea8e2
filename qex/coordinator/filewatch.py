"""Notice a change to one file at once, without polling: inotify on its directory (Linux).

The coordinator uses it for the config file, so an edit reaches the queue in about half a
second (the settle time of `ConfigWatcher`) even when nothing else wakes the coordinator.
The directory is watched rather than the file, because editors and careful writers replace
the file by renaming a new one over it. Where inotify is missing (macOS) or the directory
does not exist, `FileWatch.start` returns None and the coordinator falls back to looking at
the file on its other wake-ups and on a slow heartbeat while jobs wait.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import struct
from collections.abc import Callable
from pathlib import Path

from qex.platform import host

_IN_MODIFY = 0x00000002
_IN_ATTRIB = 0x00000004
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_FROM = 0x00000040
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE = 0x00000200
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_IGNORED = 0x00008000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE
         | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF)
_HEADER = struct.Struct("iIII")


class FileWatch:
    """Calls `on_change` when the named file in a directory may have changed."""

    def __init__(self, fd: int, name: bytes, on_change: Callable[[], None]) -> None:
        self._fd = fd
        self._name = name
        self._on_change = on_change
        self.closed = False

    @classmethod
    def start(cls, path: Path, on_change: Callable[[], None]) -> FileWatch | None:
        if not host.linux():
            return None
        directory = path.parent
        if not directory.is_dir():
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            init = libc.inotify_init1
            add = libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        if add(fd, os.fsencode(directory), _MASK) < 0:
            os.close(fd)
            return None
        watch = cls(fd, os.fsencode(path.name), on_change)
        asyncio.get_running_loop().add_reader(fd, watch._readable)
        return watch

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            self.close()
            return
        relevant = False
        offset = 0
        while offset + _HEADER.size <= len(data):
            _wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            name = data[offset + _HEADER.size: offset + _HEADER.size + length].rstrip(b"\0")
            offset += _HEADER.size + length
            if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED):
                relevant = True
                self.close()  # the directory went: the heartbeat takes over
                break
            if name == self._name:
                relevant = True
        if relevant:
            self._on_change()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            asyncio.get_running_loop().remove_reader(self._fd)
        except RuntimeError:
            pass
        os.close(self._fd)
