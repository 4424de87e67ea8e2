"""The one socket client that every command uses to reach the coordinator.

Two failures look alike from outside and must never be confused:

* "nobody listens" (no socket file, ECONNREFUSED, ENOTSOCK): the coordinator is not running,
  so a command that may start one does so (`qex.client.starting`: under a file lock, so that
  twenty commands started at the same moment give exactly one coordinator);
* "no answer" (a timeout, a full backlog, a permission error): something IS there, and a
  second coordinator would split the queue in two, so the command waits up to its ceiling
  and then fails with 124. A timeout is never reported as "there is no such job".

Every answer is bounded by a ceiling (300 s, or `QEX_COORDINATOR_CEILING_SECS`), because an
agent that calls qex must always get control back. This module imports only the standard
library and `qex.core.protocol`, so `qex status <id> --json` stays fast.
"""

from __future__ import annotations

import _socket as socket  # the C module: `socket` adds enums and selectors, unused here
import errno
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from qex.core import protocol
from qex.store.paths import Paths

DEFAULT_CEILING = 300.0
#: A request that takes longer than this prints one "still waiting" line (1..10 s by env).
DEFAULT_SAY_WAITING = 10.0

_NOBODY = frozenset({errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK, errno.ENOTDIR})
SANDBOX_ERRNOS = frozenset({
    errno.EACCES, errno.EPERM, errno.EROFS, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT,
    errno.EOPNOTSUPP, errno.ENOSYS,
})
#: `timeout=NO_LIMIT` in `request` waits as long as the coordinator keeps the line open.
NO_LIMIT = float("inf")


class CoordinatorError(Exception):
    """The coordinator could not be reached, did not answer in time, or went away.

    `code` is the exit code a command should use: 124 for a timeout, otherwise 121 in a
    command that speaks for a job and 1 elsewhere (decided from the running click command
    unless the raiser fixed it). `lost` is True when an open connection ended, which a wait
    treats as "the coordinator restarted", not as a failure of the job.
    """

    def __init__(self, message: str, *, timeout: bool = False, lost: bool = False,
                 code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.timeout = timeout
        self.lost = lost
        self._code = code

    @property
    def code(self) -> int:
        if self.timeout:
            return 124
        if self._code is not None:
            return self._code
        return failure_code()


def failure_code() -> int:
    """121 inside a job-speaking command (the exit-code band), 1 in every other command."""
    click = sys.modules.get("click")
    if click is None:
        from qex.cli import fast
        from qex.cli.main import BAND_COMMANDS as band

        return 121 if fast.current_command in band else 1
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return 1
    name = ctx.find_root().invoked_subcommand or ctx.info_name
    from qex.cli.main import BAND_COMMANDS

    return 121 if name in BAND_COMMANDS else 1


def ceiling_from_env(env: dict[str, str] | None = None) -> float:
    """The answer ceiling in seconds: `QEX_COORDINATOR_CEILING_SECS` (1..86400) or 300."""
    source = os.environ if env is None else env
    raw = source.get("QEX_COORDINATOR_CEILING_SECS", "").strip()
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_CEILING
    if 1 <= value <= 86400:
        return value
    return DEFAULT_CEILING


def _say_waiting_step() -> float:
    raw = os.environ.get("QEX_SAY_WAITING_AFTER_SECS", "").strip()
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_SAY_WAITING
    return min(max(value, 1.0), 10.0)


def seconds_text(value: float) -> str:
    return f"{value:g}"


class Connection:
    """One open line to the coordinator; many requests may use it, one after the other.

    After a timeout or a cut answer the line is poisoned: the answer to the old request could
    still arrive and be mistaken for the answer to the next one.
    """

    def __init__(self, sock: socket.socket, paths: Paths, ceiling: float, *,
                 spawned: bool = False) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._poisoned: str | None = None
        self._info: dict[str, Any] | None = None
        self._capabilities: set[str] | None = None
        self.paths = paths
        self.ceiling = ceiling
        #: True when this command started the coordinator.
        self.spawned = spawned

    # -- plumbing -------------------------------------------------------------------------

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _send(self, message: dict[str, Any], deadline: float) -> None:
        if self._poisoned is not None:
            raise CoordinatorError(self._poisoned, lost=True)
        data = protocol.encode(message)
        remaining = deadline - time.monotonic()
        try:
            self._sock.settimeout(None if remaining == NO_LIMIT else max(remaining, 0.001))
            flags = getattr(socket, "MSG_NOSIGNAL", 0)
            view = memoryview(data)
            while view:
                sent = self._sock.send(view, flags)
                view = view[sent:]
        except TimeoutError:
            self._poison("the coordinator did not take the request in time")
            raise CoordinatorError(
                f"the coordinator did not take the request in {seconds_text(self.ceiling)} "
                "seconds; run `qex info --no-start` to see whether it is alive", timeout=True,
            ) from None
        except OSError as exc:
            self._poison("the coordinator closed the connection")
            raise CoordinatorError(
                f"the coordinator closed the connection before it took the request "
                f"({exc.strerror or exc}); run the command again", lost=True,
            ) from None

    def _poison(self, why: str) -> None:
        self._poisoned = f"{why}, so this connection carries no further request; connect again"

    def _read_line(self, deadline: float, what: str, *, say_waiting: bool) -> dict[str, Any]:
        started = time.monotonic()
        step = _say_waiting_step()
        said = False
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                if not line.strip():
                    continue
                try:
                    return protocol.decode(line)
                except protocol.ProtocolError as exc:
                    self._poison("the coordinator sent a line that qex cannot read")
                    raise CoordinatorError(
                        f"the coordinator answered {what} with a line that qex cannot read "
                        f"({exc}); a coordinator from a different qex may be running, so run "
                        "`qex version`",
                    ) from None
            if len(self._buffer) > protocol.MAX_LINE:
                self._poison("the coordinator sent a line that is too long")
                raise CoordinatorError(
                    f"the coordinator answered {what} with a line longer than 64 MiB"
                )
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                waited = seconds_text(round(now - started, 1))
                if self._buffer:
                    self._poison("the coordinator left an answer unfinished")
                    raise CoordinatorError(
                        f"the coordinator began its answer to {what} and did not finish it in "
                        f"{waited} seconds; run `qex info --no-start` to see whether it is "
                        "alive", timeout=True,
                    )
                self._poison("the coordinator did not answer in time")
                raise CoordinatorError(
                    f"the coordinator took {what} and gave no answer in {waited} seconds; run "
                    "`qex info --no-start` to see whether it is alive, and try again", timeout=True,
                )
            wait = remaining if remaining == NO_LIMIT else min(remaining, step)
            try:
                self._sock.settimeout(None if wait == NO_LIMIT else wait)
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                left = round(deadline - time.monotonic())
                if say_waiting and not said and left >= 1:
                    said = True
                    print(
                        f"qex: still waiting for the coordinator to answer {what}; this command "
                        f"gives up in {left} more seconds with the exit code 124",
                        file=sys.stderr, flush=True,
                    )
                continue
            except InterruptedError:
                continue
            except OSError as exc:
                self._poison("the connection to the coordinator broke")
                raise CoordinatorError(
                    f"the connection to the coordinator broke while it worked on {what} "
                    f"({exc.strerror or exc}); run the command again", lost=True,
                ) from None
            if not chunk:
                self._poison("the coordinator closed the connection")
                raise CoordinatorError(
                    f"the coordinator closed the connection before it answered {what}; it may have "
                    "stopped or restarted, so run the command again", lost=True,
                )
            self._buffer += chunk

    # -- the API --------------------------------------------------------------------------

    def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one request and return its one answer, `error` answers included.

        `timeout` None means the ceiling; `NO_LIMIT` waits as long as the line stays open
        (a `wait` request blocks until the job is final, which may be hours).
        """
        limit = self.ceiling if timeout is None else timeout
        deadline = NO_LIMIT if limit == NO_LIMIT else time.monotonic() + max(limit, 0.0)
        what = f"the request `{message.get('op', '?')}`"
        self._send(message, deadline if deadline != NO_LIMIT else time.monotonic() + self.ceiling)
        return self._read_line(deadline, what, say_waiting=timeout is None)

    def answer(self, op: str) -> dict[str, Any]:
        """The answer to a request of `op` sent on this socket before it became a Connection."""
        deadline = time.monotonic() + self.ceiling
        return self._read_line(deadline, f"the request `{op}`", say_waiting=True)

    def send(self, message: dict[str, Any]) -> None:
        """Send a request without reading its answer (pair with `receive`, for select loops)."""
        self._send(message, time.monotonic() + self.ceiling)

    def pending(self) -> bool:
        """True when a whole answer line is already buffered (select would not see it)."""
        return b"\n" in self._buffer

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The next line from the coordinator; `timeout` None means the ceiling."""
        limit = self.ceiling if timeout is None else timeout
        deadline = NO_LIMIT if limit == NO_LIMIT else time.monotonic() + max(limit, 0.0)
        return self._read_line(deadline, "the request", say_waiting=False)

    def call(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Like `request`, but an `error` answer raises `RequestError`."""
        answer = self.request(message, timeout)
        if answer.get("result") == "error":
            raise RequestError(str(answer.get("kind", protocol.INTERNAL)),
                               str(answer.get("message", "the coordinator gave no reason")))
        return answer

    def stream(
        self, message: dict[str, Any], *, timeout: float | None = None
    ) -> Iterator[dict[str, Any]]:
        """Send a request that takes over the line (`events`) and yield each line until EOF.

        `timeout` is an overall limit from now (a CoordinatorError with code 124 when passed);
        None waits as long as lines keep coming. The iterator simply ends at EOF.
        """
        deadline = NO_LIMIT if timeout is None else time.monotonic() + timeout
        self._send(message, time.monotonic() + self.ceiling if deadline == NO_LIMIT else deadline)
        what = f"the request `{message.get('op', '?')}`"
        while True:
            try:
                yield self._read_line(deadline, what, say_waiting=False)
            except CoordinatorError as exc:
                if exc.lost and not self._buffer:
                    return
                raise

    def info(self) -> dict[str, Any]:
        """The coordinator's `info` answer, asked once per connection.

        Every coordinator version answers `info`; an error answer reads as an unknown version
        with pid 0, so the capability floor refuses it rather than trusting it.
        """
        if self._info is None:
            answer = self.request({"op": "info"})
            if answer.get("result") == "info":
                self._info = answer
            else:
                self._info = {"result": "info", "version": "unknown", "pid": 0}
        return self._info

    def capabilities(self) -> set[str]:
        """What the coordinator says it can obey; empty when it cannot say."""
        if self._capabilities is None:
            answer = self.request({"op": "capabilities"})
            names = answer.get("names") if answer.get("result") == "capabilities" else None
            self._capabilities = {str(n) for n in names} if isinstance(names, list) else set()
        return self._capabilities


def adopt(fd: int, buffered: bytes, paths: Paths | None = None) -> Connection:
    """A Connection over a socket that `qex.cli.wire` opened and sent one request on.

    `buffered` is what was read of the answer so far; `Connection.answer` reads the rest
    under the ceiling, as `request` would have.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    conn = Connection(sock, paths or Paths.from_env(), ceiling_from_env())
    conn._buffer += buffered
    return conn


class RequestError(Exception):
    """The coordinator answered `error`; `kind` is no_such_job, wrong_state, internal or refused."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# -- connecting and starting ----------------------------------------------------------------

CONNECTED, NOBODY_LISTENS, NO_ANSWER = "connected", "nobody", "no-answer"


def attempt(paths: Paths, budget: float) -> tuple[str, socket.socket | None, OSError | None]:
    """One connect attempt, classified. Raises CoordinatorError for a sandbox refusal."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    except OSError as exc:
        if exc.errno in SANDBOX_ERRNOS:
            from qex.client.starting import sandbox_message

            raise CoordinatorError(sandbox_message(paths.socket_dir, exc)) from None
        raise CoordinatorError(
            f"qex could not make a Unix socket ({exc.strerror or exc})"
        ) from None
    try:
        sock.settimeout(max(min(budget, 1.0), 0.01))
        sock.connect(os.fspath(paths.socket_path))
    except OSError as exc:
        sock.close()
        if exc.errno in _NOBODY:
            return NOBODY_LISTENS, None, exc
        if exc.errno in (errno.EACCES, errno.EPERM):
            from qex.client.starting import probe_socket_dir, sandbox_message

            refused = probe_socket_dir(paths.socket_dir)
            if refused is not None:
                raise CoordinatorError(sandbox_message(paths.socket_dir, refused)) from None
        return NO_ANSWER, None, exc
    sock.settimeout(None)
    return CONNECTED, sock, None


def no_answer_error(paths: Paths, waited: float, exc: OSError | None) -> CoordinatorError:
    cause = f" ({exc.strerror})" if exc is not None and exc.strerror else ""
    return CoordinatorError(
        f"the socket {paths.socket_path} gave no answer in {seconds_text(round(waited))} "
        f"seconds{cause}; "
        "qex starts no second coordinator beside one that may be alive, so run "
        "`qex info --no-start` to see it, or stop the process that holds the socket",
        timeout=True,
    )


def connect(paths: Paths, *, start: bool = True, ceiling: float | None = None) -> Connection | None:
    """A connection to the coordinator of `paths`.

    `start=False`: None when nobody listens, and nothing is ever spawned. `start=True`: a
    coordinator is started when nobody listens. Raises CoordinatorError (124 on a timeout).
    """
    limit = ceiling_from_env() if ceiling is None else ceiling
    began = time.monotonic()
    deadline = began + limit
    pause = 0.02
    while True:
        outcome, sock, exc = attempt(paths, deadline - time.monotonic())
        if outcome == CONNECTED and sock is not None:
            return Connection(sock, paths, limit)
        if outcome == NOBODY_LISTENS:
            break
        if time.monotonic() + pause >= deadline:
            raise no_answer_error(paths, time.monotonic() - began, exc)
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
    if not start:
        return None
    from qex.client.starting import start_and_connect

    return start_and_connect(paths, limit, began, deadline)


