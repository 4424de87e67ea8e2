"""One request to the coordinator with nothing but C modules: `_socket` and `_json`.

`import socket` costs about as much as the interpreter's start-up (its enums and
`selectors`), `import json` pulls in `re`, and `pathlib` and `typing` each cost as much
again. A plain `qex submit` needs none of them: it finds the socket, sends one line and
reads one line. This module does exactly that, and hands everything unusual to the full
client (`qex.client.connection`): nobody listening, a refused connect, a socket path that
needs hashing, an answer that is slow to come (the full client then keeps reading the same
connection, with its ceiling and its "still waiting" line).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from qex.client.connection import Connection

#: The socket path must fit sun_path (as `qex.store.paths.MAX_SOCKET_PATH`); longer paths
#: are hashed there, so they go to the full client. A margin keeps clear of normalisation.
_SHORT_ENOUGH = 90
#: How long the first answer may take before the full client takes over the connection.
QUICK_ANSWER_SECS = 0.5


def state_dir(env: dict[str, str] | os._Environ[str]) -> str | None:
    """qex's state directory for this environment, as `Paths.from_env` finds it; None when
    only the full code can say (no HOME, or a path that `pathlib` would normalise)."""
    if not (env.get("XDG_CONFIG_HOME") or env.get("HOME")):
        return None  # Paths refuses this environment; let it say so
    state_home = env.get("XDG_STATE_HOME", "")
    if not state_home:
        home = env.get("HOME", "")
        if not home:
            return None
        state_home = os.path.join(home, ".local", "state")
    path = os.path.join(state_home, "qex")
    if "//" in path or "/./" in path:
        return None
    return path


def socket_path(env: dict[str, str] | os._Environ[str]) -> str | None:
    """The coordinator's socket for this environment, as `Paths.from_env` finds it; None
    when only the full code can say (see `state_dir`, or a path too long for sun_path)."""
    state = state_dir(env)
    if state is None:
        return None
    path = os.path.join(state, "run", "qex.sock")
    if len(os.fsencode(path)) > _SHORT_ENOUGH:
        return None
    return path


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


def decode(line: bytes) -> dict[str, Any] | None:
    """One JSON object from a line, or None when it is anything else (the caller falls back)."""
    from _json import make_scanner

    try:
        text = line.decode("utf-8").strip()
        value, end = make_scanner(_Context)(text, 0)  # type: ignore[arg-type]
    except (ValueError, StopIteration):
        return None
    return value if isinstance(value, dict) and end == len(text) else None


class Wire:
    """One connected socket that has not sent anything yet."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock

    @classmethod
    def connect(cls) -> Wire | None:
        """A connection to a listening coordinator, or None (the caller uses the full client)."""
        import _socket

        path = socket_path(os.environ)
        if path is None:
            return None
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(1.0)
            sock.connect(path)
        except OSError:
            sock.close()
            return None
        return cls(sock)

    def close(self) -> None:
        self.sock.close()

    def request(self, message: dict[str, Any]) -> dict[str, Any] | Connection:
        """Send one request; its answer, or the full client's connection to read it from
        (which then owns the socket; otherwise the caller closes it).

        Nothing can be retried once the request is sent, so every failure after that is the
        full client's: it reports it with its own sentence and code.
        """
        data = encode(message)
        chunks: list[bytes] = []
        try:
            self.sock.settimeout(QUICK_ANSWER_SECS)
            self.sock.sendall(data)
            # Look for the end in each new chunk only: a list of thousands of jobs is megabytes.
            while True:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                if b"\n" in chunk:
                    break
        except OSError:
            pass
        buffered = b"".join(chunks)
        line, newline, rest = buffered.partition(b"\n")
        if newline and not rest:
            answer = decode(line)
            if answer is not None:
                return answer
        from qex.client.connection import adopt

        return adopt(self.sock.detach(), buffered)
