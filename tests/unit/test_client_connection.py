"""The client against a fake coordinator in a thread: answers, timeouts, lost lines."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import request_lines

from qex.cli.exits import code_for
from qex.client.connection import (
    Connection,
    CoordinatorError,
    Lost,
    RequestError,
    TimedOut,
    ceiling_from_env,
    connect,
)
from qex.client.starting import probe_socket_dir
from qex.core.states import Exit
from qex.store.paths import Paths

Handler = Callable[[socket.socket], None]


@pytest.fixture
def paths() -> Iterator[Paths]:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="qc", dir="/tmp"))
    yield Paths.from_env({"HOME": str(root), "XDG_STATE_HOME": str(root / "s")})
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def serve(paths: Paths, handler: Handler) -> threading.Thread:
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(os.fspath(paths.socket_path))
    server.listen(8)

    def loop() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                handler(conn)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def answering(conn: socket.socket) -> None:
    for message in request_lines(conn):
        op = message.get("op")
        if op == "info":
            answer: dict[str, object] = {"result": "info", "pid": 42, "version": "0.7.0",
                                         "extra_field": True}
        elif op == "capabilities":
            answer = {"result": "capabilities", "names": ["locks", "groups"]}
        elif op == "fail":
            answer = {"result": "error", "kind": "wrong_state", "message": "no"}
        else:
            answer = {"result": "ok", "echo": message}
        conn.sendall(b"\n" + json.dumps(answer).encode() + b"\n")


def test_nobody_listens_without_start(paths: Paths) -> None:
    assert connect(paths, start=False) is None
    paths.run_dir.mkdir(parents=True)
    paths.socket_path.write_text("not a socket")
    assert connect(paths, start=False) is None


def test_round_trip_and_caches(paths: Paths) -> None:
    serve(paths, answering)
    conn = connect(paths, start=False)
    assert isinstance(conn, Connection)
    with conn:
        assert conn.request({"op": "ping", "x": 1})["echo"] == {"op": "ping", "x": 1}
        assert conn.info()["pid"] == 42
        assert conn.info() is conn.info()
        assert conn.capabilities() == {"locks", "groups"}
        assert conn.request({"op": "fail"})["kind"] == "wrong_state"
        with pytest.raises(RequestError) as info:
            conn.call({"op": "fail"})
        assert info.value.kind == "wrong_state"


def test_silence_is_a_timeout_with_124(paths: Paths) -> None:
    release = threading.Event()
    serve(paths, lambda conn: release.wait(5))
    conn = connect(paths, start=False, ceiling=0.3)
    assert conn is not None
    with pytest.raises(TimedOut) as info:
        conn.request({"op": "list"})
    assert info.value.timeout
    assert code_for(info.value, "wait") == code_for(info.value, "list") == Exit.WAIT_TIMEOUT
    with pytest.raises(CoordinatorError, match="connect again"):
        conn.request({"op": "ping"})
    release.set()
    conn.close()


def test_a_cut_answer_is_a_timeout(paths: Paths) -> None:
    release = threading.Event()

    def half(conn: socket.socket) -> None:
        conn.recv(100)
        conn.sendall(b'{"result": "jo')
        release.wait(5)

    serve(paths, half)
    conn = connect(paths, start=False, ceiling=0.3)
    assert conn is not None
    with pytest.raises(TimedOut, match="began its answer") as info:
        conn.request({"op": "list"})
    assert code_for(info.value, "status") == Exit.WAIT_TIMEOUT
    release.set()
    conn.close()


def test_closed_line_is_lost_not_timeout(paths: Paths) -> None:
    serve(paths, lambda conn: conn.recv(100))
    conn = connect(paths, start=False)
    assert conn is not None
    with conn, pytest.raises(Lost) as info:
        conn.request({"op": "wait", "id": "x"})
    assert info.value.lost
    assert not info.value.timeout
    assert code_for(info.value, "wait") == Exit.QEX_FAILED
    assert code_for(info.value, "info") == Exit.FAILURE


def test_stream_ends_at_eof(paths: Paths) -> None:
    def events(conn: socket.socket) -> None:
        conn.recv(100)
        for seq in range(3):
            conn.sendall(json.dumps({"result": "event", "event": {"seq": seq}}).encode() + b"\n")

    serve(paths, events)
    conn = connect(paths, start=False)
    assert conn is not None
    with conn:
        got = [line["event"] for line in conn.stream({"op": "events"})]
    assert got == [{"seq": 0}, {"seq": 1}, {"seq": 2}]


def test_garbage_answer_is_an_error(paths: Paths) -> None:
    def garbage(conn: socket.socket) -> None:
        conn.recv(100)
        conn.sendall(b"this is not json\n")

    serve(paths, garbage)
    conn = connect(paths, start=False)
    assert conn is not None
    with conn, pytest.raises(CoordinatorError, match="cannot read"):
        conn.request({"op": "ping"})


def test_ceiling_from_env() -> None:
    assert ceiling_from_env({}) == 300
    assert ceiling_from_env({"QEX_COORDINATOR_CEILING_SECS": "5"}) == 5
    assert ceiling_from_env({"QEX_COORDINATOR_CEILING_SECS": "0"}) == 300
    assert ceiling_from_env({"QEX_COORDINATOR_CEILING_SECS": "x"}) == 300


def test_probe_of_a_usable_directory(tmp_path: Path) -> None:
    assert probe_socket_dir(tmp_path) is None
    assert probe_socket_dir(tmp_path / "missing") is None
    assert list(tmp_path.iterdir()) == []


def test_until_caps_every_request_below_the_ceiling(paths: Paths) -> None:
    import time

    release = threading.Event()
    serve(paths, lambda conn: release.wait(10))
    conn = connect(paths, start=False, ceiling=300, until=time.monotonic() + 0.3)
    assert conn is not None
    with pytest.raises(TimedOut, match="--timeout"):
        conn.status("x")
    release.set()
    conn.close()


def test_a_connect_error_that_cannot_succeed_is_unreachable_at_once(paths: Paths) -> None:
    from qex.client.connection import Unreachable

    paths.run_dir.mkdir(parents=True, exist_ok=True)
    paths.socket_path.symlink_to(paths.socket_path)  # ELOOP on every connect
    with pytest.raises(Unreachable, match="waiting would not change that"):
        connect(paths, start=True, ceiling=300)
