"""Atomic record writes: a temp file beside the target, fsync, rename, fsync the directory.

A reader therefore sees the old record or the new one, never a part. A failure (a full disk,
say) raises OSError before the rename, so the old record stays whole.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

_counter = itertools.count()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_bytes(path: Path, data: bytes, mode: int = 0o600, *, durable: bool = True) -> None:
    """Replace `path` with `data` atomically; with `durable` (the default) also on the disk
    before this returns (file and directory synced). Raises OSError before the rename."""
    fd, tmp = _write_temp(path, data, mode)
    try:
        try:
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    if durable:
        sync_dir(path.parent)


class Visible:
    """A record that every process already sees, and that `settle` puts on the disk."""

    def __init__(self, fd: int, directory: Path) -> None:
        self._fd = fd
        self._directory = directory

    def settle(self) -> None:
        """fsync the file (its data, under its final name) and its directory; once only.
        Raises OSError when the disk refuses; the record stays visible either way."""
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        sync_dir(self._directory)

    def __del__(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)


def write_visible(path: Path, data: bytes, mode: int = 0o600) -> Visible:
    """Replace `path` with `data` atomically now, and make it durable when the caller says.

    For a writer that must tell another process first and sync after (the supervisor's
    record, docs/records.md): the file stays open so that `Visible.settle` syncs this very
    inode. Raises OSError before the rename, as `write_bytes` does.
    """
    fd, tmp = _write_temp(path, data, mode)
    try:
        os.rename(tmp, path)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    return Visible(fd, path.parent)


def _write_temp(path: Path, data: bytes, mode: int) -> tuple[int, Path]:
    """A new temporary file beside `path` holding `data`: (open descriptor, its path)."""
    tmp = path.parent / f".{path.name}.tmp.{os.getpid()}.{next(_counter)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        _write_all(fd, data)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    return fd, tmp


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def sync_dir(directory: Path) -> None:
    """fsync a directory, so that the renames in it survive a power loss; best effort (some
    file systems refuse to sync a directory, and the rename itself has already happened)."""
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def write_bytes_at(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """`write_bytes` inside the directory open as `dir_fd`: every step names the file
    relative to that descriptor, so no path (and no link swapped into one) is followed."""
    tmp = f".{name}.tmp.{os.getpid()}.{next(_counter)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def json_bytes(data: Any) -> bytes:
    # One line, no indent: with `indent` set, json falls back from its C encoder to the pure
    # Python one, several times slower, and records are written at every change of every job.
    # `jq . status.json` shows it indented.
    return (json.dumps(data, separators=(",", ":")) + "\n").encode("utf-8")


def write_json(path: Path, data: Any, mode: int = 0o600, *, durable: bool = True) -> None:
    write_bytes(path, json_bytes(data), mode, durable=durable)


def read_json(path: Path) -> Any | None:
    """The parsed file, or None when it is missing or not JSON (a torn write is impossible)."""
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return None
