"""Starting a coordinator when nobody listens: one spawn for any number of commands.

Twenty commands started at the same moment must give ONE coordinator. Each takes an
exclusive flock on `spawn.lock`, connects again once it holds the lock (another command may
have started one meanwhile), and only then spawns `python -m qex daemon`, detached (its own
session, stdin from /dev/null, output appended to `daemon.log`, cwd `/`). The lock is held
until the socket answers, so the next command in line finds the new coordinator. A spawn
that does not come up says why: the last lines of its log, or a sandbox that refuses Unix
sockets in the socket's directory (the harness's owner must allow it; docs/sandbox.md).
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from qex.client.connection import (
    CONNECTED,
    NO_ANSWER,
    SANDBOX_ERRNOS,
    Connection,
    attempt,
    no_answer_error,
    seconds_text,
)
from qex.client.errors import TimedOut, Unreachable
from qex.store.paths import Paths

#: How long a freshly spawned coordinator may take to open its socket.
SPAWN_WAIT = 10.0
#: After this long without a socket, look for a sandbox that refuses Unix sockets.
SANDBOX_PROBE_AFTER = 1.0
SANDBOX_DOC = "docs/sandbox.md"


def sandbox_message(directory: Path, exc: OSError) -> str:
    return (
        f"this process may not use a Unix socket in {directory} ({exc.strerror or exc}), which is "
        f"what a sandbox around the command does; only the person who runs this harness can allow "
        f"that directory, and {SANDBOX_DOC} in the qex documentation says how"
    )


def probe_socket_dir(directory: Path) -> OSError | None:
    """The error when this process may not make files or Unix sockets in `directory`.

    A sandboxed harness refuses with EACCES/EPERM/EROFS and the like; any other failure (the
    directory does not exist yet, say) is not a sandbox and gives None.
    """
    probe = directory / f".qp{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.close(fd)
        os.unlink(probe)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            server.bind(os.fspath(probe))
            server.listen(1)
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            try:
                client.connect(os.fspath(probe))
            finally:
                client.close()
        finally:
            server.close()
            try:
                os.unlink(probe)
            except OSError:
                pass
    except OSError as exc:
        return exc if exc.errno in SANDBOX_ERRNOS else None
    return None


def _prepare_run_dir(paths: Paths) -> None:
    try:
        # The state dir itself is private too (records, environments, the socket's dir):
        # mkdir's default mode under the usual umask would leave it 0755.
        for directory in (paths.state_dir, paths.run_dir):
            directory.mkdir(parents=True, exist_ok=True)
            os.chmod(directory, 0o700)
    except OSError as exc:
        if exc.errno in SANDBOX_ERRNOS:
            raise Unreachable(sandbox_message(paths.run_dir, exc)) from None
        raise Unreachable(
            f"qex could not make its directory {paths.run_dir} ({exc.strerror or exc}); "
            "check that the disk has room and that the directory is yours"
        ) from None


def _take_spawn_lock(paths: Paths, began: float, deadline: float) -> int:
    try:
        fd = os.open(paths.spawn_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in SANDBOX_ERRNOS:
            raise Unreachable(sandbox_message(paths.run_dir, exc)) from None
        raise Unreachable(
            f"qex could not open its lock file {paths.spawn_lock} ({exc.strerror or exc})"
        ) from None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        except OSError as exc:
            os.close(fd)
            raise Unreachable(
                f"qex could not lock {paths.spawn_lock} ({exc.strerror or exc})"
            ) from None
        if time.monotonic() >= deadline:
            os.close(fd)
            raise TimedOut(
                f"a different qex command held the lock {paths.spawn_lock} for "
                f"{seconds_text(round(time.monotonic() - began))} seconds while it started a "
                "coordinator; "
                "run `qex info --no-start`, and stop that command if it hangs")
        time.sleep(0.02)


def _log_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _log_tail(path: Path, count: int = 5, since: int = 0) -> str:
    """The last lines the coordinator we started wrote (from `since`, the size before it).

    Lines of earlier coordinators are left out: they describe faults that may be long fixed.
    A log that was rotated meanwhile (smaller than `since`) is read from its start.
    """
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            start = since if since <= size else 0
            handle.seek(max(start, size - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return "(the log cannot be read)"
    lines = [line for line in text.splitlines() if line.strip()][-count:]
    return " / ".join(lines) if lines else "(the coordinator wrote nothing to its log)"


def spawn_coordinator(paths: Paths) -> Any:
    """Start `python -m qex daemon` detached: its own session, cwd /, output to daemon.log.

    The spawn lock's descriptor is close-on-exec, so the coordinator never holds it.
    """
    import subprocess

    log = os.open(paths.daemon_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "qex", "daemon"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
            start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        raise Unreachable(
            f"qex could not start a coordinator ({exc.strerror or exc}); check that "
            f"{sys.executable} still exists"
        ) from None
    finally:
        os.close(log)


def start_and_connect(paths: Paths, limit: float, began: float, deadline: float, *,
                      until: float | None = None) -> Connection:
    _prepare_run_dir(paths)
    lock = _take_spawn_lock(paths, began, deadline)
    try:
        # Another command may have started one while this one waited for the lock.
        outcome, sock, exc = attempt(paths, deadline - time.monotonic())
        if outcome == CONNECTED and sock is not None:
            return Connection(sock, paths, limit, until=until)
        if outcome == NO_ANSWER:
            raise no_answer_error(paths, time.monotonic() - began, exc)
        log_start = _log_size(paths.daemon_log)
        child = spawn_coordinator(paths)
        spawned_at = time.monotonic()
        spawn_deadline = min(deadline, spawned_at + SPAWN_WAIT)
        pause = 0.002
        probed = False
        while True:
            outcome, sock, exc = attempt(paths, spawn_deadline - time.monotonic())
            if outcome == CONNECTED and sock is not None:
                return Connection(sock, paths, limit, spawned=True, until=until)
            now = time.monotonic()
            if not probed and now - spawned_at >= SANDBOX_PROBE_AFTER:
                probed = True
                directory = paths.socket_dir if paths.socket_dir.is_dir() else paths.run_dir
                refused = probe_socket_dir(directory)
                if refused is not None:
                    raise Unreachable(sandbox_message(directory, refused))
            code = child.poll()
            if code not in (None, 0):
                raise Unreachable(
                    f"the coordinator stopped at once with the code {code}; its log "
                    f"{paths.daemon_log} ends with: {_log_tail(paths.daemon_log, since=log_start)}"
                )
            if now >= spawn_deadline:
                if now >= deadline:
                    raise no_answer_error(paths, now - began, exc)
                raise Unreachable(
                    f"the coordinator did not open its socket in {seconds_text(SPAWN_WAIT)} "
                    "seconds; its log "
                    f"{paths.daemon_log} ends with: {_log_tail(paths.daemon_log, since=log_start)}"
                )
            time.sleep(min(pause, max(spawn_deadline - now, 0.0)))
            pause = min(pause * 2, 0.05)
    finally:
        try:
            fcntl.flock(lock, fcntl.LOCK_UN)
        finally:
            os.close(lock)
