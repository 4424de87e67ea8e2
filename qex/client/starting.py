"""Starting a coordinator when nobody listens: one spawn for any number of commands.

Twenty commands started at the same moment must give ONE coordinator. Each takes an
exclusive flock on `spawn.lock`, connects again once it holds the lock (another command may
have started one meanwhile), and only then starts a coordinator, detached (its own session,
stdin from /dev/null, output appended to `daemon.log`, cwd `/`): the lean CLI on Linux forks
itself into one, everything else spawns `python -m qex daemon`. The new coordinator
says on a pipe when its socket listens, and the command connects then (its request waits
in the socket's backlog while the coordinator finishes its start). The lock is held
until the socket answers, so the next command in line finds the new coordinator. A spawn
that does not come up says why: the last lines of its log, or a sandbox that refuses Unix
sockets in the socket's directory (the harness's owner must allow it; docs/sandbox.md).

With systemd's socket unit installed (`qex systemd install`) nobody ever gets here: the
socket always answers, and systemd starts the coordinator on the first connection.

This is the one definition of how a coordinator is started. The full client
(`qex.client.connection.connect`) and the cold `qex submit` of the fast path
(`qex.cli.fastsubmit`, which then speaks over `qex.cli.wire`) both call `start`, so the
module is light: plain strings for the paths (`qex.store.where.Where`), the C socket
module, and the `posix_spawn` of `qex.platform.detach` in place of `subprocess` (which
alone costs about as much as the interpreter's start-up, `locale` and `re` included).
"""

from __future__ import annotations

import _socket
import errno
import fcntl
import os
import sys
import time

from qex.client.errors import TimedOut, Unreachable
from qex.core.pyexec import module_argv
from qex.platform.detach import (
    PASSED_FD,
    READY_FD_VAR,
    Spawned,
    fork_detached,
    spawn_detached,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, NoReturn

    from qex.store.where import Where

#: How long a freshly spawned coordinator may take to open its socket.
SPAWN_WAIT = 10.0
#: After this long without a socket, look for a sandbox that refuses Unix sockets.
SANDBOX_PROBE_AFTER = 1.0
SANDBOX_DOC = "docs/sandbox.md"
DEFAULT_CEILING = 300.0

_NOBODY = frozenset({errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK, errno.ENOTDIR})
SANDBOX_ERRNOS = frozenset({
    errno.EACCES, errno.EPERM, errno.EROFS, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT,
    errno.EOPNOTSUPP, errno.ENOSYS,
})
#: Connect errors that mean "something is there but did not take the call yet" (so waiting
#: may help); every errno outside this set and `_NOBODY` can never succeed, and says so.
_BUSY = frozenset({
    errno.EAGAIN, errno.ETIMEDOUT, errno.EINTR, errno.EACCES, errno.EPERM, errno.ECONNRESET,
    errno.EINPROGRESS, errno.EALREADY, errno.ENOBUFS, errno.ENOMEM, errno.EMFILE, errno.ENFILE,
})

CONNECTED, NOBODY_LISTENS, NO_ANSWER = "connected", "nobody", "no-answer"


def nobody_listens(exc: OSError) -> bool:
    """True when a failed connect means that no coordinator runs (so one may be started)."""
    return exc.errno in _NOBODY


def ceiling_from_env(env: Mapping[str, str] | None = None) -> float:
    """The answer ceiling in seconds: `QEX_COORDINATOR_CEILING_SECS` (1..86400) or 300."""
    env = os.environ if env is None else env
    if not env.get("QEX_COORDINATOR_CEILING_SECS", "").strip():
        return DEFAULT_CEILING  # the usual case, without the units module
    from qex.core.units import env_seconds

    return env_seconds(env, "QEX_COORDINATOR_CEILING_SECS", DEFAULT_CEILING, low=1.0,
                       high=86400.0)


def seconds_text(value: float) -> str:
    return f"{value:g}"


def sandbox_message(directory: object, exc: OSError) -> str:
    return (
        f"this process may not use a Unix socket in {directory} ({exc.strerror or exc}), which is "
        f"what a sandbox around the command does; only the person who runs this harness can allow "
        f"that directory, and {SANDBOX_DOC} in the qex documentation says how"
    )


def probe_socket_dir(directory: str | os.PathLike[str]) -> OSError | None:
    """The error when this process may not make files or Unix sockets in `directory`.

    A sandboxed harness refuses with EACCES/EPERM/EROFS and the like; any other failure (the
    directory does not exist yet, say) is not a sandbox and gives None.
    """
    probe = os.path.join(os.fspath(directory), f".qp{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.close(fd)
        os.unlink(probe)
        server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        try:
            server.bind(probe)
            server.listen(1)
            client = _socket.socket(_socket.AF_UNIX,
                                    _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
            try:
                client.connect(probe)
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


def attempt(where: Where, budget: float) -> tuple[str, Any, OSError | None]:
    """One connect attempt, classified. Raises Unreachable when no attempt can succeed."""
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    except OSError as exc:
        if exc.errno in SANDBOX_ERRNOS:
            raise Unreachable(sandbox_message(where.socket_dir, exc)) from None
        raise Unreachable(f"qex could not make a Unix socket ({exc.strerror or exc})") from None
    try:
        sock.settimeout(max(min(budget, 1.0), 0.01))
        sock.connect(where.socket_path)
    except TimeoutError as exc:
        sock.close()
        return NO_ANSWER, None, exc
    except OSError as exc:
        sock.close()
        if exc.errno in _NOBODY:
            return NOBODY_LISTENS, None, exc
        if exc.errno in (errno.EACCES, errno.EPERM):
            refused = probe_socket_dir(where.socket_dir)
            if refused is not None:
                raise Unreachable(sandbox_message(where.socket_dir, refused)) from None
        if exc.errno not in _BUSY:
            raise Unreachable(
                f"qex cannot use the socket {where.socket_path} ({exc.strerror or exc}), and "
                "waiting would not change that; a path that is too long can be made shorter "
                "with a shorter XDG_STATE_HOME") from None
        return NO_ANSWER, None, exc
    sock.settimeout(None)
    return CONNECTED, sock, None


def no_answer_error(where: Where, waited: float, exc: OSError | None) -> TimedOut:
    cause = f" ({exc.strerror})" if exc is not None and exc.strerror else ""
    return TimedOut(
        f"the socket {where.socket_path} gave no answer in {seconds_text(round(waited))} "
        f"seconds{cause}; "
        "qex starts no second coordinator beside one that may be alive, so run "
        "`qex info --no-start` to see it, or stop the process that holds the socket")


def _prepare_run_dir(where: Where) -> None:
    try:
        # The state dir itself is private too (records, environments, the socket's dir):
        # mkdir's default mode under the usual umask would leave it 0755.
        for directory in (where.state_dir, where.run_dir):
            os.makedirs(directory, exist_ok=True)
            os.chmod(directory, 0o700)
    except OSError as exc:
        if exc.errno in SANDBOX_ERRNOS:
            raise Unreachable(sandbox_message(where.run_dir, exc)) from None
        raise Unreachable(
            f"qex could not make its directory {where.run_dir} ({exc.strerror or exc}); "
            "check that the disk has room and that the directory is yours"
        ) from None


def _take_spawn_lock(where: Where, began: float, deadline: float) -> int:
    try:
        fd = os.open(where.spawn_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in SANDBOX_ERRNOS:
            raise Unreachable(sandbox_message(where.run_dir, exc)) from None
        raise Unreachable(
            f"qex could not open its lock file {where.spawn_lock} ({exc.strerror or exc})"
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
                f"qex could not lock {where.spawn_lock} ({exc.strerror or exc})"
            ) from None
        if time.monotonic() >= deadline:
            os.close(fd)
            raise TimedOut(
                f"a different qex command held the lock {where.spawn_lock} for "
                f"{seconds_text(round(time.monotonic() - began))} seconds while it started a "
                "coordinator; "
                "run `qex info --no-start`, and stop that command if it hangs")
        time.sleep(0.02)


def _log_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _log_tail(path: str, count: int = 5, since: int = 0) -> str:
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


def spawn_coordinator(where: Where, fork_into: Callable[[int], NoReturn] | None = None
                      ) -> Spawned:
    """Start a coordinator detached: its own session, output to daemon.log, directory `/`.

    With `fork_into` (the lean CLI on Linux: `qex.cli.daemon_start.run_forked`), this process
    forks and the child becomes the coordinator by that call, detached first
    (`qex.platform.detach.fork_detached`): it skips a second interpreter start, which was
    about 35 ms of the cold path. Otherwise `python -m qex daemon` is spawned, and it closes
    what it inherited from this command's caller as its first act
    (`qex.platform.detach.detach_from_caller`); the spawn lock's descriptor is close-on-exec,
    so it never holds that.

    Either way the child gets the write end of a pipe (`fork_into`'s argument, or
    `READY_FD_VAR`), and writes to it once its socket listens: `Spawned.ready` wakes `start`
    then, where polling for the socket missed it by up to 30 ms."""
    log = os.open(where.daemon_log,
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    ready_read, ready_write = os.pipe()
    try:
        if fork_into is not None:
            pid = fork_detached(log, keep=ready_write)
            if pid == 0:  # pragma: no cover - the child, which never returns
                fork_into(ready_write)
        else:
            pid = spawn_detached(module_argv("qex", "daemon"), log,
                                 {**os.environ, READY_FD_VAR: str(PASSED_FD)},
                                 pass_fd=ready_write)
    except OSError as exc:
        os.close(ready_read)
        raise Unreachable(
            f"qex could not start a coordinator ({exc.strerror or exc}); check that "
            f"{sys.executable} still exists"
        ) from None
    finally:
        os.close(log)
        os.close(ready_write)
    return Spawned(pid, ready=ready_read)


def _pause(child: Spawned, seconds: float) -> None:
    """Wait `seconds`, or less when the child says that it listens (or closes its end of the
    pipe: it stopped, or handed the socket to no one). Without the pipe, a plain sleep."""
    if child.ready is None:
        time.sleep(seconds)
        return
    import select

    readable, _, _ = select.select([child.ready], [], [], seconds)
    if readable:
        os.close(child.ready)  # one word only: after it, or at its end, the socket decides
        child.ready = None


def start(where: Where, began: float, deadline: float,
          fork_into: Callable[[int], NoReturn] | None = None) -> tuple[Any, bool]:
    """A connected socket (a `_socket.socket`) to the coordinator, started here when nobody
    listens even under the spawn lock; and True when this command started it.

    `began` is when the command began to connect, `deadline` the instant it must give up
    (the ceiling, or the person's own limit). `fork_into`: see `spawn_coordinator`. Raises
    the errors of `qex.client.errors`.
    """
    _prepare_run_dir(where)
    lock = _take_spawn_lock(where, began, deadline)
    try:
        # Another command may have started one while this one waited for the lock.
        outcome, sock, exc = attempt(where, deadline - time.monotonic())
        if outcome == CONNECTED and sock is not None:
            return sock, False
        if outcome == NO_ANSWER:
            raise no_answer_error(where, time.monotonic() - began, exc)
        log_start = _log_size(where.daemon_log)
        child = spawn_coordinator(where, fork_into)
        try:
            return _connect_to(where, child, log_start, began, deadline), True
        finally:
            if child.ready is not None:
                os.close(child.ready)
    finally:
        try:
            fcntl.flock(lock, fcntl.LOCK_UN)
        finally:
            os.close(lock)


def _connect_to(where: Where, child: Spawned, log_start: int, began: float,
                deadline: float) -> Any:
    """A socket connected to the coordinator `child` that this command just started; the
    errors of `qex.client.errors` when it does not come up."""
    spawned_at = time.monotonic()
    spawn_deadline = min(deadline, spawned_at + SPAWN_WAIT)
    pause = 0.002
    probed = False
    while True:
        outcome, sock, exc = attempt(where, spawn_deadline - time.monotonic())
        if outcome == CONNECTED and sock is not None:
            return sock
        now = time.monotonic()
        if not probed and now - spawned_at >= SANDBOX_PROBE_AFTER:
            probed = True
            directory = where.socket_dir if os.path.isdir(where.socket_dir) else where.run_dir
            refused = probe_socket_dir(directory)
            if refused is not None:
                raise Unreachable(sandbox_message(directory, refused))
        code = child.poll()
        if code not in (None, 0):
            raise Unreachable(
                f"the coordinator stopped at once with the code {code}; its log "
                f"{where.daemon_log} ends with: "
                f"{_log_tail(where.daemon_log, since=log_start)}"
            )
        if now >= spawn_deadline:
            if now >= deadline:
                raise no_answer_error(where, now - began, exc)
            raise Unreachable(
                f"the coordinator did not open its socket in {seconds_text(SPAWN_WAIT)} "
                "seconds; its log "
                f"{where.daemon_log} ends with: "
                f"{_log_tail(where.daemon_log, since=log_start)}"
            )
        # With the pipe the wait ends when the child speaks or stops; the slices only bound
        # how late a sandbox's refusal or the deadline is seen.
        _pause(child, min(pause if child.ready is None else 0.05,
                          max(spawn_deadline - now, 0.0)))
        pause = min(pause * 2, 0.05)
