"""The one socket client that every command uses to reach the coordinator.

Two failures look alike from outside and must never be confused:

* "nobody listens" (no socket file, ECONNREFUSED, ENOTSOCK): the coordinator is not running,
  so a command that may start one does so (`qex.client.starting`: under a file lock, so that
  twenty commands started at the same moment give exactly one coordinator);
* "no answer" (a timeout, a full backlog, a permission error): something IS there, and a
  second coordinator would split the queue in two, so the command waits up to its ceiling
  and then fails with 124. A timeout is never reported as "there is no such job".

Every answer is bounded by a ceiling (300 s, or `QEX_COORDINATOR_CEILING_SECS`), because an
agent that calls qex must always get control back, and by the person's own `--timeout` when a
command has one (`until`: it caps connecting, starting a coordinator and every request).
Failures are raised as the exceptions of `qex.client.errors`, which say what happened; the
CLI alone turns them into exit codes. This module imports only the standard library,
`qex.core.protocol` and `qex.client.starting` (itself light: the fast `qex submit` of a cold
start uses it alone), so `qex status <id> --json` stays fast.
"""

from __future__ import annotations

import _socket as socket  # the C module: `socket` adds enums and selectors, unused here
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from qex.client import starting
from qex.client.errors import (
    ClientError,
    CoordinatorError,
    Lost,
    Refused,
    TimedOut,
    Unreachable,
)
from qex.client.starting import (
    CONNECTED,
    DEFAULT_CEILING,
    NO_ANSWER,
    NOBODY_LISTENS,
    SANDBOX_ERRNOS,
    ceiling_from_env,
    seconds_text,
)
from qex.core import protocol
from qex.core.protocol import Result
from qex.core.units import env_seconds
from qex.store.paths import Paths
from qex.store.where import Where

__all__ = [
    "CONNECTED", "DEFAULT_CEILING", "NOBODY_LISTENS", "NO_ANSWER", "NO_LIMIT",
    "SANDBOX_ERRNOS", "ClientError", "Connection", "CoordinatorError", "Lost", "Refused",
    "RequestError", "TimedOut", "Unreachable", "ceiling_from_env", "connect", "seconds_text",
]

#: A request that takes longer than this prints one "still waiting" line (1..10 s by env).
DEFAULT_SAY_WAITING = 10.0

#: `timeout=NO_LIMIT` in `request` waits as long as the coordinator keeps the line open.
NO_LIMIT = float("inf")


def _say_waiting_step() -> float:
    return env_seconds(os.environ, "QEX_SAY_WAITING_AFTER_SECS", DEFAULT_SAY_WAITING,
                       low=1.0, high=10.0)


class Connection:
    """One open line to the coordinator; many requests may use it, one after the other.

    After a timeout or a cut answer the line is poisoned: the answer to the old request could
    still arrive and be mistaken for the answer to the next one. `until` (a time.monotonic()
    instant, or None) is the person's own limit: no request waits past it.
    """

    def __init__(self, sock: socket.socket, paths: Paths, ceiling: float, *,
                 spawned: bool = False, until: float | None = None) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._poisoned: str | None = None
        self._info: dict[str, Any] | None = None
        self._capabilities: set[str] | None = None
        self.paths = paths
        self.ceiling = ceiling
        self.until = until
        #: True when this command started the coordinator.
        self.spawned = spawned
        #: When the request that `answer` reads was sent (`adopt`), on time.monotonic().
        self.sent_at: float | None = None

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

    def _deadline(self, limit: float) -> float:
        """The instant a wait of `limit` seconds from now ends, never past `until`."""
        deadline = NO_LIMIT if limit == NO_LIMIT else time.monotonic() + max(limit, 0.0)
        return deadline if self.until is None else min(deadline, self.until)

    def _capped(self, deadline: float) -> bool:
        """True when `deadline` is the person's own limit rather than the ceiling."""
        return self.until is not None and deadline >= self.until

    def _send(self, message: dict[str, Any], deadline: float) -> None:
        if self._poisoned is not None:
            raise Lost(self._poisoned)
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
            if self._capped(deadline):
                raise TimedOut(
                    "the time given with --timeout ran out before the coordinator took the "
                    "request; run `qex info --no-start` to see whether it is alive") from None
            raise TimedOut(
                f"the coordinator did not take the request in {seconds_text(self.ceiling)} "
                "seconds; run `qex info --no-start` to see whether it is alive") from None
        except OSError as exc:
            self._poison("the coordinator closed the connection")
            raise Lost(
                f"the coordinator closed the connection before it took the request "
                f"({exc.strerror or exc}); run the command again") from None

    def _poison(self, why: str) -> None:
        self._poisoned = f"{why}, so this connection carries no further request; connect again"

    def _read_line(self, deadline: float, what: str, *, say_waiting: bool,
                   waited: float = 0.0) -> dict[str, Any]:
        """The next answer line. `waited`: seconds the caller already waited for it (the
        "still waiting" line comes that much sooner)."""
        started = time.monotonic() - waited
        step = _say_waiting_step()
        first_step = max(step - waited, 0.01)
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
                    raise Unreachable(
                        f"the coordinator answered {what} with a line that qex cannot read "
                        f"({exc}); a coordinator from a different qex may be running, so run "
                        "`qex version`") from None
            if len(self._buffer) > protocol.MAX_LINE:
                self._poison("the coordinator sent a line that is too long")
                raise Unreachable(
                    f"the coordinator answered {what} with a line longer than 64 MiB")
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                raise self._no_answer(what, now - started, deadline)
            wait = remaining if remaining == NO_LIMIT else min(remaining, first_step)
            first_step = step
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
                raise Lost(
                    f"the connection to the coordinator broke while it worked on {what} "
                    f"({exc.strerror or exc}); run the command again") from None
            if not chunk:
                self._poison("the coordinator closed the connection")
                raise Lost(
                    f"the coordinator closed the connection before it answered {what}; it may "
                    "have stopped or restarted, so run the command again")
            self._buffer += chunk

    def _no_answer(self, what: str, waited_for: float, deadline: float) -> TimedOut:
        waited = seconds_text(round(waited_for, 1))
        unfinished = bool(self._buffer)
        self._poison("the coordinator left an answer unfinished" if unfinished
                     else "the coordinator did not answer in time")
        limit = " (the time given with --timeout)" if self._capped(deadline) else ""
        if unfinished:
            return TimedOut(
                f"the coordinator began its answer to {what} and did not finish it in "
                f"{waited} seconds{limit}; run `qex info --no-start` to see whether it is alive")
        return TimedOut(
            f"the coordinator took {what} and gave no answer in {waited} seconds{limit}; run "
            "`qex info --no-start` to see whether it is alive, and try again")

    # -- the line: one request, one answer -------------------------------------------------

    def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one request and return its one answer, `error` answers included.

        `timeout` None means the ceiling; `NO_LIMIT` waits as long as the line stays open
        (a `wait` request blocks until the job is final, which may be hours).
        """
        deadline = self._deadline(self.ceiling if timeout is None else timeout)
        what = f"the request `{message.get('op', '?')}`"
        self._send(message, deadline if deadline != NO_LIMIT else self._deadline(self.ceiling))
        return self._read_line(deadline, what, say_waiting=timeout is None)

    def answer(self, op: str) -> dict[str, Any]:
        """The answer to a request of `op` sent on this socket before it became a Connection
        (`adopt`): the ceiling and the "still waiting" line count from the send."""
        now = time.monotonic()
        sent = now if self.sent_at is None else min(self.sent_at, now)
        return self._read_line(sent + self.ceiling, f"the request `{op}`", say_waiting=True,
                               waited=now - sent)

    def send(self, message: dict[str, Any]) -> None:
        """Send a request without reading its answer (pair with `receive`, for select loops)."""
        self._send(message, self._deadline(self.ceiling))

    def pending(self) -> bool:
        """True when a whole answer line is already buffered (select would not see it)."""
        return b"\n" in self._buffer

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The next line from the coordinator; `timeout` None means the ceiling."""
        deadline = self._deadline(self.ceiling if timeout is None else timeout)
        return self._read_line(deadline, "the request", say_waiting=False)

    def call(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Like `request`, but an `error` answer raises `Refused`, and an answer of another
        name than the request's (`protocol.ANSWERS`) raises `Unreachable`."""
        answer = self.request(message, timeout)
        check(message, answer)
        return answer

    def stream(
        self, message: dict[str, Any], *, timeout: float | None = None
    ) -> Iterator[dict[str, Any]]:
        """Send a request that takes over the line (`events`) and yield each line until EOF.

        `timeout` is an overall limit from now (TimedOut when passed); None waits as long as
        lines keep coming. The iterator simply ends at EOF.
        """
        deadline = self._deadline(NO_LIMIT if timeout is None else timeout)
        self._send(message, self._deadline(self.ceiling) if deadline == NO_LIMIT else deadline)
        what = f"the request `{message.get('op', '?')}`"
        while True:
            try:
                yield self._read_line(deadline, what, say_waiting=False)
            except Lost:
                if not self._buffer:
                    return
                raise

    # -- the typed requests (protocol.Op), one method each --------------------------------

    def ping(self) -> None:
        self.call(protocol.ping())

    def info(self) -> dict[str, Any]:
        """The coordinator's `info` answer, asked once per connection.

        Every coordinator version answers `info`; an error answer reads as an unknown version
        with pid 0, so the capability floor refuses it rather than trusting it.
        """
        if self._info is None:
            answer = self.request(protocol.info())
            if answer.get("result") == Result.INFO:
                self._info = answer
            else:
                self._info = {"result": Result.INFO, "version": "unknown", "pid": 0}
        return self._info

    def fresh_info(self) -> dict[str, Any]:
        """A new `info` answer (the cached one may be stale); an error answer raises."""
        self._info = self.call(protocol.info())
        return self._info

    def capabilities(self) -> set[str]:
        """What the coordinator says it can obey; empty when it cannot say."""
        if self._capabilities is None:
            answer = self.request(protocol.capabilities())
            names = answer.get("names") if answer.get("result") == Result.CAPABILITIES else None
            self._capabilities = {str(n) for n in names} if isinstance(names, list) else set()
        return self._capabilities

    def capabilities_answer(self) -> dict[str, Any] | None:
        """The whole `capabilities` answer, or None when the coordinator cannot give one."""
        answer = self.request(protocol.capabilities())
        return answer if answer.get("result") == Result.CAPABILITIES else None

    def submit(self, spec: dict[str, Any]) -> protocol.Submitted:
        """The `submitted` answer (id, warning, deduplicated); a refusal raises `Refused`."""
        answer = protocol.submitted(self.call(protocol.submit(spec)))
        if answer is None:
            raise Unreachable(
                "the coordinator accepted the job and gave no id for it; a coordinator of a "
                "different qex may be running, so run `qex version`, then `qex list`")
        return answer

    def own_job(self, job_id: str) -> None:
        self.call(protocol.own_job(job_id))

    def list_jobs(self, damaged: list[dict[str, Any]] | None = None, *,
                  word: str | None = None,
                  states: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The records (with `word` or `states`, at least those that `protocol.list_jobs`
        says); `damaged` (when given) receives the unreadable records that the coordinator
        found, as `{id, path}`."""
        answer = self.call(protocol.list_jobs(word, states))
        jobs = answer.get("jobs")
        found = answer.get("damaged")
        if damaged is not None and isinstance(found, list):
            damaged.extend(d for d in found if isinstance(d, dict))
        return [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []

    def status(self, job_id: str) -> dict[str, Any]:
        """The status record of one job; `Refused` (no_such_job) when there is none."""
        record = self.call(protocol.status(job_id)).get("status")
        if not isinstance(record, dict):
            raise Unreachable(
                "the coordinator answered `status` without a record; a coordinator of a "
                "different qex may be running, so run `qex version`")
        return record

    def send_wait(self, job_id: str) -> None:
        """Ask for the job's record once it is final; read it with `receive_status`."""
        self.send(protocol.wait(job_id))

    def receive_status(self) -> dict[str, Any]:
        """The answer to `send_wait`: the record, or `Refused` (no_such_job, ...)."""
        answer = self.receive()
        check(protocol.wait(""), answer)
        record = answer.get("status")
        if not isinstance(record, dict):
            raise Unreachable("the coordinator answered `wait` without a record")
        return record

    def kill(self, job_id: str, signal: int, grace_secs: float | None) -> None:
        self.call(protocol.kill(job_id, signal, grace_secs))

    def cancel(self, job_id: str) -> None:
        self.call(protocol.cancel(job_id))

    def cancel_many(self, job_ids: Sequence[str]) -> list[dict[str, Any]] | None:
        """The answer to each job's cancel, in order (refusals among them); None from a
        coordinator older than the request, which then cancelled nothing."""
        return self._each(protocol.cancel_many(job_ids), len(job_ids))

    def clean_many(self, job_ids: Sequence[str]) -> list[dict[str, Any]] | None:
        """The answer to each job's clean, in order (refusals among them); None from a
        coordinator older than the request, which then deleted nothing."""
        return self._each(protocol.clean_many(job_ids), len(job_ids))

    def _each(self, message: dict[str, Any], count: int) -> list[dict[str, Any]] | None:
        return answers_of(message, self.request(message), count)

    def clean(self, job_id: str) -> None:
        self.call(protocol.clean(job_id))

    def pause(self, target: dict[str, Any] | str | None, *, reason: str | None,
              until: float | None, by_pid: int | None, drain: bool) -> dict[str, Any]:
        """The `pause_state` answer after the pause took effect."""
        return self.call(protocol.pause(target, reason=reason, until=until, by_pid=by_pid,
                                        drain=drain))

    def resume(self, target: dict[str, Any] | str | None) -> dict[str, Any]:
        return self.call(protocol.resume(target))

    def pause_state(self) -> dict[str, Any]:
        return self.call(protocol.pause_state())

    def events(self, since: str | None, *, timeout: float | None = None
               ) -> Iterator[dict[str, Any]]:
        """The event stream: the header, then one `event` answer per change, until EOF."""
        return self.stream(protocol.events(since), timeout=timeout)

    def open_events(self, since: str | None) -> dict[str, Any]:
        """Start the event stream for a select loop; the header line (read with `receive`)."""
        self.send(protocol.events(since))
        return self.receive()


def adopt(fd: int, buffered: bytes, paths: Paths | None = None, *,
          sent_at: float | None = None) -> Connection:
    """A Connection over a socket that `qex.cli.wire` opened and sent one request on.

    `buffered` is what was read of the answer so far; `Connection.answer` reads the rest
    under the ceiling, as `request` would have, counted from `sent_at` (the send, on
    time.monotonic()) when given.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    conn = Connection(sock, paths or Paths.from_env(), ceiling_from_env())
    conn._buffer += buffered
    conn.sent_at = sent_at
    return conn


#: The name the earlier releases of this module gave `Refused`.
RequestError = Refused


def answers_of(message: dict[str, Any], answer: dict[str, Any], count: int
               ) -> list[dict[str, Any]] | None:
    """The `count` answers that the answer to a request of many jobs (`cancel_many`,
    `clean_many`) holds, in order; None when the coordinator is older than the request.
    Raises as `check` does, and `Unreachable` when the answers are not one per job."""
    if protocol.unknown_request(answer):
        return None
    check(message, answer)
    answers = protocol.each_answer(answer, count)
    if answers is None:
        raise Unreachable(
            f"the coordinator did not answer each request of `{message.get('op')}`; a "
            "coordinator of a different qex may be running, so run `qex version`")
    return answers


def check(message: dict[str, Any], answer: dict[str, Any]) -> None:
    """Raise `Refused` for an `error` answer, `Unreachable` for an answer of the wrong name."""
    failed = protocol.error_of(answer)
    if failed is not None:
        raise Refused(*failed)
    op = message.get("op")
    expected = protocol.ANSWERS.get(op) if isinstance(op, str) else None
    if expected is not None and answer.get("result") != expected:
        raise Unreachable(
            f"the coordinator answered `{op}` with `{answer.get('result')}`, not `{expected}`; "
            "a coordinator of a different qex may be running, so run `qex version`")


# -- connecting and starting ----------------------------------------------------------------


def attempt(paths: Paths, budget: float) -> tuple[str, socket.socket | None, OSError | None]:
    """One connect attempt, classified (`qex.client.starting.attempt`). Raises Unreachable
    when no attempt can succeed."""
    return starting.attempt(Where.of(paths), budget)


def no_answer_error(paths: Paths, waited: float, exc: OSError | None) -> TimedOut:
    return starting.no_answer_error(Where.of(paths), waited, exc)


def connect(paths: Paths, *, start: bool = True, ceiling: float | None = None,
            until: float | None = None) -> Connection | None:
    """A connection to the coordinator of `paths`.

    `start=False`: None when nobody listens, and nothing is ever spawned. `start=True`: a
    coordinator is started when nobody listens. `until` (a time.monotonic() instant) is the
    person's own limit: connecting, starting and every later request on the connection end
    by then. Raises the errors of `qex.client.errors`.
    """
    limit = ceiling_from_env() if ceiling is None else ceiling
    began = time.monotonic()
    deadline = began + limit if until is None else min(began + limit, until)
    pause = 0.02
    while True:
        outcome, sock, exc = attempt(paths, deadline - time.monotonic())
        if outcome == CONNECTED and sock is not None:
            return Connection(sock, paths, limit, until=until)
        if outcome == NOBODY_LISTENS:
            break
        if time.monotonic() + pause >= deadline:
            raise no_answer_error(paths, time.monotonic() - began, exc)
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
    if not start:
        return None
    sock, spawned = starting.start(Where.of(paths), began, deadline)
    return Connection(sock, paths, limit, spawned=spawned, until=until)
