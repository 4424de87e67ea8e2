"""The coordinator's log: `[<local time>] <message>` lines on stdout, capped and rotated.

The CLI that spawns a coordinator points its stdout and stderr at `<state>/run/daemon.log`;
under systemd they go to the journal. One line per event, flushed at once, so the tail of
the file explains a coordinator that did not start.

No log of qex may grow without end: when stdout is the file `daemon.log` (not the journal)
and it passes `QEX_DAEMON_LOG_MAX_BYTES` (1MB), it becomes `daemon.log.1` (replacing the
older one) and a fresh file takes its place, for stdout and stderr both. A fault that repeats
(the same accept error every second while descriptors run out) is written once; the repeats
are counted and the count is written when the cause changes.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: daemon.log is rotated past this size; one older file is kept.
DEFAULT_MAX_BYTES = 1024 * 1024
_MIN_BYTES = 4096


class _State:
    path: Path | None = None
    limit: int = DEFAULT_MAX_BYTES
    repeated_key: str | None = None
    repeats: int = 0


def configure(path: Path) -> None:
    """Cap and rotate `path` while stdout is that very file (the CLI-spawned coordinator)."""
    try:
        limit = int(os.environ.get("QEX_DAEMON_LOG_MAX_BYTES", "") or DEFAULT_MAX_BYTES)
    except ValueError:
        limit = DEFAULT_MAX_BYTES
    _State.limit = max(_MIN_BYTES, limit)
    try:
        out, disk = os.fstat(1), os.stat(path)
    except OSError:
        _State.path = None
        return
    same = (out.st_dev, out.st_ino) == (disk.st_dev, disk.st_ino)
    _State.path = path if same else None


def stamp(now: float | None = None) -> str:
    """A time a person reads at a glance: `2026-12-01 15:20:37 +0000`."""
    return time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(now))


def _rotate_if_full() -> None:
    path = _State.path
    if path is None:
        return
    try:
        if os.fstat(1).st_size < _State.limit:
            return
        os.replace(path, path.with_name(path.name + ".1"))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)


def log(message: str) -> None:
    try:
        _rotate_if_full()
        sys.stdout.write(f"[{stamp()}] {message}\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def log_repeating(key: str, message: str) -> None:
    """Log `message` unless the previous call had the same `key`; count the repeats."""
    if key == _State.repeated_key:
        _State.repeats += 1
        return
    if _State.repeats:
        log(f"the fault above happened {_State.repeats} more time(s)")
    _State.repeated_key = key
    _State.repeats = 0
    log(message)


def log_exception(what: str) -> None:
    """An unexpected fault at a process boundary: one line, then the traceback indented."""
    import traceback

    detail = traceback.format_exc().rstrip().replace("\n", "\n    ")
    log(f"{what}:\n    {detail}")
