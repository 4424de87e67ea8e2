"""One request to the coordinator with nothing but C modules: `_socket` and `_json`.

`import socket` costs about as much as the interpreter's start-up (its enums and
`selectors`), `import json` pulls in `re`, and `pathlib` and `typing` each cost as much
again. A plain `qex submit` needs none of them: it finds the socket, sends one line and
reads one line. This module does exactly that, and hands everything unusual to the full
client (`qex.client.connection`): a refused connect, a socket path that needs hashing, an
answer that is slow to come (the full client then keeps reading the same connection, with
its ceiling and its "still waiting" line). When nobody listens, `connect(start=True)` starts
a coordinator through `qex.client.starting.start`, the start that the full client uses too.
"""

from __future__ import annotations

import os

from qex.store.where import socket_path, state_dir

__all__ = ["QUICK_ANSWER_SECS", "Wire", "decode", "encode", "socket_path", "state_dir"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    from qex.client.connection import Connection

#: How long the first answer may take before the full client takes over the connection.
QUICK_ANSWER_SECS = 0.5
#: The same for the first request to a coordinator that was just started: it answers once it
#: has imported the rest of itself. Not above the shortest "still waiting" step (1 s), so the
#: full client that takes over still says so in time.
STARTED_ANSWER_SECS = 1.0
#: How often a wait with work to do between reads (`Wire.ask`'s `tick`) does it: the pace
#: at which a followed job's output reaches the terminal.
TICK_SECS = 0.08


def encode(message: dict[str, Any]) -> bytes:
    """The line `qex.core.protocol.encode` writes (compact JSON, ASCII, newline)."""
    from _json import encode_basestring_ascii, make_encoder

    chunks = make_encoder({}, _no_default, encode_basestring_ascii, None, ":", ",", False,
                          False, True)(message, 0)
    return "".join(chunks).encode("ascii") + b"\n"


def _no_default(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.replace("Infinity", "inf"))


def _scan(data: bytes) -> object:
    """The one JSON value that `data` holds, or None when it holds anything else."""
    from _json import make_scanner

    try:
        text = data.decode("utf-8").strip()
        value, end = make_scanner(_Context)(text, 0)  # type: ignore[arg-type]
    except (ValueError, StopIteration, SystemError):
        # SystemError: the C scanner raises its error as `json.decoder.JSONDecodeError`,
        # found only if `json.decoder` was imported already; where it was not (this module
        # exists to spare that import), a text that is not JSON leaves it with no exception
        # to raise.
        return None
    return value if end == len(text) else None


def decode(line: bytes) -> dict[str, Any] | None:
    """One JSON object from a line, or None when it is anything else (the caller falls back)."""
    value = _scan(line)
    return value if isinstance(value, dict) else None


def decode_array(document: bytes) -> list[Any] | None:
    """One JSON array (the document of `list_json`), or None when it is anything else."""
    value = _scan(document)
    return value if isinstance(value, list) else None


def status_record(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """The record in an answer to `status` or `wait`; None for a refusal, no answer, or an
    answer of another shape."""
    record = answer.get("status") if answer is not None and answer.get("result") == "status" \
        else None
    return record if isinstance(record, dict) else None


class Wire:
    """One connected socket, each of whose requests so far was answered whole (a fresh
    one, or one that `fastsubmit.capable_wire` asked a question on)."""

    def __init__(self, sock: Any, *, started: bool = False) -> None:
        self.sock = sock
        #: True when nobody listened at first: the coordinator at the other end was started
        #: a moment ago (by this command, or by another one while this one waited for the
        #: spawn lock), and may still be importing the rest of itself.
        self.started = started

    @classmethod
    def connect(cls, *, start: bool = False) -> Wire | None:
        """A connection to a listening coordinator, or None (the caller uses the full client).

        `start`: when nobody listens, start a coordinator (`qex.client.starting.start`) and
        connect to it; its failures are raised as the full client raises them.
        """
        import _socket

        path = socket_path(os.environ)
        if path is None:
            return None
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(1.0)
            sock.connect(path)
        except OSError as exc:
            sock.close()
            return cls._start() if start and _nobody_listens(exc) else None
        return cls(sock)

    @classmethod
    def _start(cls) -> Wire | None:
        import time

        from qex.client import starting
        from qex.platform import chaintrace
        from qex.store.where import Where

        where = Where.from_env(os.environ)
        if where is None:
            return None
        chaintrace.mark("cli.start", "-")
        began = time.monotonic()
        sock, _spawned = starting.start(where, began, began + starting.ceiling_from_env(),
                                        fork_into=_fork_target())
        chaintrace.mark("cli.connected", "-")
        return cls(sock, started=True)

    def close(self) -> None:
        self.sock.close()

    def request(self, message: dict[str, Any]) -> dict[str, Any] | Connection:
        """Send one request; its answer, or the full client's connection to read it from
        (which then owns the socket; otherwise the caller closes it). The answer may take
        `QUICK_ANSWER_SECS` (`STARTED_ANSWER_SECS` from a coordinator that was just started).

        Nothing can be retried once the request is sent, so every failure after that is the
        full client's: it reports it with its own sentence and code.
        """
        import time

        data = encode(message)
        chunks: list[bytes] = []
        sent_at = time.monotonic()
        try:
            self.sock.settimeout(STARTED_ANSWER_SECS if self.started else QUICK_ANSWER_SECS)
            self.sock.sendall(data)
            self._receive_line(chunks)
        except OSError:
            pass
        buffered = b"".join(chunks)
        line, newline, rest = buffered.partition(b"\n")
        if newline and not rest:
            answer = decode(line)
            if answer is not None:
                return answer
        from qex.client.connection import adopt

        return adopt(self.sock.detach(), buffered, sent_at=sent_at)

    def _receive_line(self, chunks: list[bytes], deadline: float | None = None,
                      tick: Callable[[], bool] | None = None) -> bool:
        """Receive into `chunks` until one holds a newline: True then, False when the
        connection ended or `deadline` (monotonic) passed first, or `tick` (called at least
        every `TICK_SECS` while nothing arrives) said to give up. A timeout raises OSError."""
        import time

        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.sock.settimeout(left if tick is None else min(left, TICK_SECS))
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                if tick is None:
                    raise
                if not tick():
                    return False
                continue
            if not chunk:
                return False
            chunks.append(chunk)
            # Look for the end in each new chunk only: a list of thousands of jobs is megabytes.
            if b"\n" in chunk:
                return True

    def request_text(self, message: dict[str, Any]) -> tuple[dict[str, Any], bytes] | None:
        """Send a request whose answer line may be followed by text (`protocol.list_json`):
        the answer and that text (empty when the answer has none, as an error has none).
        None when the answer did not come at once, or the text did not come whole (each part
        may take `QUICK_ANSWER_SECS`); the caller closes the socket and asks the full way."""
        try:
            self.sock.settimeout(STARTED_ANSWER_SECS if self.started else QUICK_ANSWER_SECS)
            self.sock.sendall(encode(message))
            chunks: list[bytes] = []
            if not self._receive_line(chunks):
                return None
            line, _, rest = b"".join(chunks).partition(b"\n")
            answer = decode(line)
            if answer is None:
                return None
            size = answer.get("size")
            if not isinstance(size, int) or size < 0:
                return (answer, b"") if not rest else None
            if len(rest) > size:
                return None  # more than the answer said: not an answer this client knows
            text = bytearray(size)
            text[:len(rest)] = rest
            view, got = memoryview(text), len(rest)
            while got < size:
                count = self.sock.recv_into(view[got:])
                if not count:
                    return None
                got += count
        except OSError:
            return None
        return answer, bytes(text)

    def ask(self, message: dict[str, Any], seconds: float, *,
            tick: Callable[[], bool] | None = None) -> dict[str, Any] | None:
        """Send one request and read its answer for up to `seconds`; None when none came in
        time (or the line ended, or was not one JSON object). The caller then closes the
        socket, which tells the coordinator to drop the request: for a request that changes
        nothing (`wait`), so that the full code can ask again. `tick`: work to do while the
        answer is awaited (copying a followed job's output), at least every `TICK_SECS`;
        when it returns False the wait gives up (None)."""
        return self.answer(seconds, tick=tick) if self.send(message, seconds) else None

    def send(self, message: dict[str, Any], seconds: float = QUICK_ANSWER_SECS) -> bool:
        """Send one request whose answer is read later (`answer`); False when it could not
        be sent within `seconds`."""
        try:
            self.sock.settimeout(seconds)
            self.sock.sendall(encode(message))
        except OSError:
            return False
        return True

    def answer(self, seconds: float, *,
               tick: Callable[[], bool] | None = None) -> dict[str, Any] | None:
        """The answer to the request sent last, read for up to `seconds` (`ask`)."""
        import time

        chunks: list[bytes] = []
        try:
            if not self._receive_line(chunks, time.monotonic() + seconds, tick):
                return None
        except OSError:
            return None
        line, _, rest = b"".join(chunks).partition(b"\n")
        return decode(line) if not rest else None


def _nobody_listens(exc: OSError) -> bool:
    from qex.client.starting import nobody_listens

    return nobody_listens(exc)


def _fork_target() -> Callable[[int], NoReturn] | None:
    """What a child forked from this command runs to become the coordinator, where this
    command may fork one (`qex.client.starting.spawn_coordinator`): on Linux, from the lean
    path of the `qex` program itself (a few small modules, no thread). The full CLI (click and
    the modules of its command would stay in the coordinator's memory), a program that
    calls `qex.cli.main.main` (its threads and memory are its own), and the portable
    implementation spawn a new program."""
    from qex.cli import main
    from qex.platform import host

    if not (main.OWN_PROCESS and main.single_threaded() and host.linux()):
        return None
    from qex.cli.daemon_start import run_forked

    return run_forked
