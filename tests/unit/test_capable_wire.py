"""A submission that needs a capability asks for it on the connection it then sends on."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from qex.cli.fastsubmit import capable_wire, lean_request
from qex.store.where import socket_path


class FakeCoordinator:
    """A socket that answers `capabilities` with `names` and every other request with a
    `submitted`, and counts the connections it accepted and the requests of each."""

    def __init__(self, path: str, names: list[str]) -> None:
        self.names = names
        self.connections: list[list[str]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            ops: list[str] = []
            self.connections.append(ops)
            with conn, conn.makefile("rb") as lines:
                for line in lines:
                    op = json.loads(line)["op"]
                    ops.append(op)
                    answer = ({"result": "capabilities", "names": self.names}
                              if op == "capabilities" else {"result": "submitted", "id": "j1"})
                    conn.sendall(json.dumps(answer).encode() + b"\n")

    def close(self) -> None:
        try:
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the thread's accept on Linux
        except OSError:
            pass
        self.server.close()
        self.thread.join(5)


@pytest.fixture
def sock_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, sub in (("XDG_STATE_HOME", "state"), ("XDG_RUNTIME_DIR", "run"),
                      ("XDG_CONFIG_HOME", "config")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(name, str(tmp_path / sub))
    path = socket_path(os.environ)
    assert path is not None
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return path


def test_the_request_goes_on_the_connection_that_asked(sock_path: str) -> None:
    fake = FakeCoordinator(sock_path, ["dependency-words", "job-file-text"])
    try:
        wire = capable_wire(["dependency-words"])
        assert wire is not None
        answer = lean_request({"op": "submit_words"}, wire)
        assert answer == {"result": "submitted", "id": "j1"}
    finally:
        fake.close()
    assert fake.connections == [["capabilities", "submit_words"]]


def test_an_older_coordinator_gets_nothing_more(sock_path: str) -> None:
    fake = FakeCoordinator(sock_path, ["job-file-text"])
    try:
        assert capable_wire(["dependency-words"]) is None
    finally:
        fake.close()
    assert fake.connections == [["capabilities"]]


def test_nobody_listening_starts_one_as_any_submission_does(
        sock_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start itself is `Wire.connect(start=True)`'s (tested with the cold start); here,
    that the question is asked on the connection it gives."""
    from qex.cli import wire as wire_module

    started: list[bool] = []
    plain_connect = wire_module.Wire.connect.__func__  # type: ignore[attr-defined]

    def connect(cls: type[wire_module.Wire], *, start: bool = False) -> wire_module.Wire | None:
        started.append(start)
        if start and not Path(sock_path).exists():
            fakes.append(FakeCoordinator(sock_path, ["dependency-words"]))
        return plain_connect(cls, start=False)  # type: ignore[no-any-return]

    fakes: list[FakeCoordinator] = []
    monkeypatch.setattr(wire_module.Wire, "connect", classmethod(connect))
    try:
        wire = capable_wire(["dependency-words"])
        assert wire is not None
        wire.close()
    finally:
        for fake in fakes:
            fake.close()
    assert started == [True]
    assert fakes[0].connections == [["capabilities"]]
