"""Start a process that outlives its starter: the one way qex does it.

The coordinator (started by a command), each supervisor (started by the coordinator) and the
hook runner all start the same way: `posix_spawn` into a session of their own, stdin from
/dev/null, stdout and stderr appended to a log, and at most one descriptor handed on on
purpose (a supervisor's go pipe, or the pipe on which a coordinator tells the command that
started it that its socket listens). An exec that fails raises its `OSError` in the starter, as
`subprocess` would. `posix_spawn` is one system call with no Python code between fork and
exec, so it is safe from a threaded or asyncio process and cheap from a large one.

What `posix_spawn` cannot do in Python 3.11 is change the child's directory or close the
descriptors it inherits without close-on-exec. qex's own descriptors are all close-on-exec;
a command's may not be (a CI harness may hand it a pipe it reads to its end). So a daemon
that a command starts detaches itself from its caller as its first act
(`detach_from_caller`, as `daemon(3)` does): directory `/`, and no descriptor but 0 to 2 and
those systemd passed to it.

On Linux a command that finds no coordinator forks it instead (`fork_detached`: the same
detachment, in the process that has already paid for an interpreter's start); the portable
implementation, the full CLI and the fork server's restarts keep `posix_spawn`.

This module imports `os` alone (and `stat`, which `os` has loaded): the command that starts a
coordinator is on the cold path.
"""

from __future__ import annotations

import os
import stat  # already loaded by `os`

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, MutableMapping

#: The number of the descriptor handed on with `pass_fd` (`QEX_SUPERVISOR_GO_FD` says it).
PASSED_FD = 3
#: Names the descriptor on which a coordinator that a command spawned says that its socket
#: listens (`qex.client.starting`); the coordinator takes it out of its environment at once.
READY_FD_VAR = "QEX_READY_FD"


def spawn_detached(argv: list[str], log_fd: int, env: Mapping[str, str] | None = None, *,
                   pass_fd: int | None = None) -> int:
    """Start `argv` in a new session with stdin from /dev/null and its output on `log_fd`
    (the caller opens and closes it); its pid. `env`: the child's environment (None: ours).
    `pass_fd` becomes the child's `PASSED_FD`; nothing else of ours is inherited."""
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        # The log first: a starter whose stdin was closed may hold the log as 0.
        (os.POSIX_SPAWN_DUP2, log_fd, 1),
        (os.POSIX_SPAWN_DUP2, log_fd, 2),
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
    ]
    spare = None
    if pass_fd is not None:
        if pass_fd == PASSED_FD:
            # A dup2 onto its own number clears close-on-exec only where the C library
            # follows the newest POSIX (glibc does; macOS needs its own call): take another
            # number first, so the dup2 always copies.
            pass_fd = spare = os.dup(pass_fd)
        actions.append((os.POSIX_SPAWN_DUP2, pass_fd, PASSED_FD))
    environ = dict(os.environ if env is None else env)
    try:
        return os.posix_spawn(_executable(argv[0], environ), argv, environ,
                              file_actions=actions, setsid=True)
    finally:
        if spare is not None:
            os.close(spare)


def _executable(name: str, env: Mapping[str, str]) -> str:
    """`name` itself when it has a slash, else its first match on the child's PATH."""
    if os.sep in name:
        return name
    from qex.platform.which import which

    found = which(name, path=env.get("PATH") or os.environ.get("PATH"))
    if found is None:
        import errno

        raise FileNotFoundError(errno.ENOENT, f"`{name}` is not on PATH")
    return found


class Spawned:
    """A child that `spawn_detached` started and its starter waits on: its pid, and `poll`
    as `subprocess.Popen` has it (None while it runs, then its exit code, or minus the
    signal that ended it)."""

    def __init__(self, pid: int, ready: int | None = None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        #: The read end of the pipe on which a coordinator says that its socket listens
        #: (`tell_ready`); its starter closes it.
        self.ready = ready

    def poll(self) -> int | None:
        return self._wait(os.WNOHANG)

    def _wait(self, flags: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:
                self.returncode = 0  # reaped elsewhere: what Popen says then
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def fork_detached(log_fd: int, stdin: int | None = None, stdout: int | None = None,
                  keep: int | None = None) -> int:
    """`daemon(3)` without an exec: fork, and detach the child as `spawn_detached` and
    `detach_from_caller` together detach a new program. The parent gets the child's pid;
    the child gets 0, in a session of its own, with stdin from `stdin` (default /dev/null),
    stdout on `stdout` (default `log_fd`), stderr on `log_fd`, directory `/`, no other
    descriptor but `keep`, the signal handlers this program had set back at their defaults
    and no signal blocked.

    Why: a command that finds no coordinator has already paid for its interpreter's start,
    which a new program would pay again on the cold path. The caller must be
    single-threaded, and the child must end with `os._exit`: it shares the caller's stack.
    """
    flush_standard_streams()  # else the child would write the caller's pending output again
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        # The log first: a caller started with its stdin closed may have got the log as 0.
        os.dup2(log_fd if stdout is None else stdout, 1)
        os.dup2(log_fd, 2)
        source = os.open(os.devnull, os.O_RDONLY) if stdin is None else stdin
        os.dup2(source, 0)
        if stdin is None and source > 2:
            os.close(source)
        detach_from_caller(keep=() if keep is None else (keep,))
        _default_signals()
    except BaseException:  # pragma: no cover - out of descriptors, say
        # Never back into the caller's code (its lock, its output): the caller sees the
        # code and quotes the log.
        os._exit(1)
    return 0


def flush_standard_streams() -> None:
    """Flush `sys.stdout` and `sys.stderr`, before a fork or an `os._exit`; a stream that is
    closed or broken is left as it is."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def _default_signals() -> None:
    """A forked daemon's signals as a new program's: the caller's handlers (a waiting
    command's SIGINT, say) are the caller's business, and a blocked signal would stay
    blocked for the daemon's whole life. Ignored signals stay ignored, as across an exec."""
    import _signal  # type: ignore[import-not-found]  # `signal` would import `enum`

    for signum in _signal.valid_signals():
        try:
            handler = _signal.getsignal(signum)
        except (OSError, ValueError):
            continue
        if callable(handler) and handler is not _signal.default_int_handler:
            _signal.signal(signum, _signal.default_int_handler
                           if signum == _signal.SIGINT else _signal.SIG_DFL)
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())


def detach_from_caller(env: Mapping[str, str] | None = None, keep: Iterable[int] = ()) -> None:
    """A daemon's first act: the root directory as its own (a directory it started in can
    then be unmounted), and every inherited descriptor above 2 closed but the sockets that
    systemd passed (`LISTEN_FDS` for this pid) and those in `keep`."""
    environ = os.environ if env is None else env
    os.chdir("/")
    kept = {0, 1, 2, *keep}
    count, owner = environ.get("LISTEN_FDS", ""), environ.get("LISTEN_PID", "")
    if count.isdigit() and owner.isdigit() and int(owner) == os.getpid():
        kept.update(range(3, 3 + int(count)))
    for fd in _open_descriptors():
        if fd not in kept:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, closed already


def take_ready_fd(environ: MutableMapping[str, str]) -> int | None:
    """The descriptor that `READY_FD_VAR` names, taken out of `environ` at once (no job may
    inherit the name of a descriptor it does not have) and made close-on-exec; None when the
    variable is unset or names no open pipe (a stray variable must never make the
    coordinator write into a descriptor that is something else, such as systemd's socket)."""
    text = environ.pop(READY_FD_VAR, "")
    if not text.isdigit():
        return None
    fd = int(text)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        os.set_inheritable(fd, False)
    except OSError:
        return None
    return fd


def tell_ready(fd: int | None) -> None:
    """Say on `fd` that the socket listens, and close it. A starter that has gone meanwhile
    (the pipe is broken) is no fault: it no longer waits."""
    if fd is None:
        return
    try:
        os.write(fd, b"\n")
    except OSError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass


def _open_descriptors() -> list[int]:
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            return [int(name) for name in os.listdir(listing)]
        except (OSError, ValueError):
            continue
    return list(range(3, 1024))
