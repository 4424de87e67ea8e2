"""The two things that make a coordinator THE coordinator of a state dir: the pid lock and
the socket.

The pid file is locked with flock for the whole life of the process: the lock, not the pid
written in it, is the proof of life (a pid can be reused; a lock dies with its holder).
Twenty CLI commands may race to start a coordinator; every loser finds the lock held and
exits 0 quietly.

The socket comes from systemd when the socket unit started us (never unlinked then: the
unit owns it). Otherwise we bind it: a stale socket file that nobody answers on is removed,
one that answers means another coordinator listens there (exit 0), and the bind happens
under umask 0177 so the socket is never, even briefly, open to other users.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import stat
import time
from pathlib import Path

from qex.coordinator.log import log
from qex.core import protocol

#: How long to wait for the pid lock: a coordinator that is stopping holds it a moment longer.
LOCK_WAIT_SECS = 3.0
#: How long to wait for an answer on an existing socket before calling it unknown.
PROBE_SECS = 1.0


class AnotherCoordinator(Exception):
    """Someone else is the coordinator (or might be): this process must stop, with code 0."""


class StartError(Exception):
    """The coordinator cannot start; the message names the file and the remedy."""


def lock_pid_file(path: Path) -> int:
    """Open and lock the pid file; return the fd (kept open for life). Raises the two errors."""
    deadline = time.monotonic() + LOCK_WAIT_SECS
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StartError(
                f"qex cannot open the pid file {path} ({exc.strerror or exc}); delete that file "
                "if no coordinator operates") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StartError(
                    f"qex cannot lock the pid file {path} ({exc.strerror or exc}); delete that "
                    "file if no coordinator operates") from None
            if time.monotonic() >= deadline:
                raise AnotherCoordinator("a different coordinator holds the pid lock") from None
            time.sleep(0.05)
            continue
        # A sweep may have deleted the file between our open and our lock: lock a live name.
        if os.fstat(fd).st_nlink == 0:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd


def _ensure_socket_dir(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise StartError(f"the socket directory {directory} is not a real directory; remove it")
    if info.st_uid != os.getuid():
        raise StartError(f"the socket directory {directory} belongs to another user (uid "
                         f"{info.st_uid}); remove it, or point XDG_STATE_HOME elsewhere")
    os.chmod(directory, 0o700)


def probe(path: Path, timeout: float = PROBE_SECS) -> str:
    """`none` (nobody listens), `alive` (something answered a ping), or `unknown`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        sock.sendall(protocol.encode(protocol.ping()))
        answer = sock.recv(4096)
        return "alive" if answer else "unknown"
    except (ConnectionRefusedError, FileNotFoundError):
        return "none"
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
            return "none"
        return "unknown"
    finally:
        sock.close()


def bind_socket(path: Path) -> socket.socket:
    """Bind and listen at `path` (0600), clearing a stale socket. Raises the two errors."""
    _ensure_socket_dir(path.parent)
    if os.path.lexists(path):
        verdict = probe(path)
        if verdict == "alive":
            raise AnotherCoordinator(f"a different coordinator answers on {path}")
        if verdict == "unknown":
            raise AnotherCoordinator(
                f"something holds the socket {path} and does not answer; qex leaves it alone")
        log(f"removed a stale socket at {path}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old_umask = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise StartError(f"qex cannot create the socket {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock
