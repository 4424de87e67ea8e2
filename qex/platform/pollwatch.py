"""Config watching where inotify is not used: one `stat()` every few seconds.

The coordinator wants to hear of an edit of its config file even when nothing else wakes
it. On Linux an inotify watch on the file's directory says so at once (the coordinator's
`FileWatch`); the portable implementation (macOS, or `QEX_PLATFORM=portable`, see
`qex.platform.host`) has no such call, so `PollingWatch` looks at the file's identity
(inode, size, modification and change times) every `INTERVAL` seconds and calls
`on_change` when it differs. That is the one timer of an idle portable coordinator: a
wake-up every two seconds, each a single stat, and an edit is noticed up to two seconds
later than under inotify (docs/portable.md has the measured figures).

`start_config_watch` is the selection: it takes the inotify starter as an argument (the
platform layer imports nothing from the coordinator). Under the Linux implementation a
missing watch (no config directory yet) stays missing, as before: the coordinator then
looks on its other wake-ups, and an idle Linux coordinator keeps no timer at all.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from qex.platform import host

#: Seconds between two looks at the config file: seconds, never milliseconds, so an idle
#: coordinator stays idle.
INTERVAL = 2.0


class ConfigWatch(Protocol):
    """What the coordinator needs of a watch: whether it still works, and a way to stop it."""

    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...


Identity = tuple[int, int, int, int, int] | None


def identity(path: Path) -> Identity:
    """What changes when the file is written or replaced; None when there is no file."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


class PollingWatch:
    """Calls `on_change` when the file at `path` looks different from the last look."""

    def __init__(self, path: Path, on_change: Callable[[], None], interval: float,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.path = path
        self.interval = interval
        self.looks = 0
        self._on_change = on_change
        self._loop = loop
        self._last = identity(path)
        self._closed = False
        self._timer: asyncio.TimerHandle | None = loop.call_later(interval, self._look)

    @classmethod
    def start(cls, path: Path, on_change: Callable[[], None],
              interval: float = INTERVAL) -> PollingWatch:
        return cls(path, on_change, interval, asyncio.get_running_loop())

    @property
    def closed(self) -> bool:
        return self._closed

    def _look(self) -> None:
        self._timer = None
        if self._closed:
            return
        self.looks += 1
        now = identity(self.path)
        changed = now != self._last
        self._last = now
        self._timer = self._loop.call_later(self.interval, self._look)
        if changed:
            self._on_change()

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def start_config_watch(
    path: Path,
    on_change: Callable[[], None],
    inotify: Callable[[Path, Callable[[], None]], ConfigWatch | None],
    *,
    interval: float = INTERVAL,
) -> ConfigWatch | None:
    """inotify under the Linux implementation, polling under the portable one."""
    if host.linux():
        return inotify(path, on_change)
    return PollingWatch.start(path, on_change, interval)
