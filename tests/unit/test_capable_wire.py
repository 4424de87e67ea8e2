"""A submission that needs a capability asks for it on the connection it then sends on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import SocketCoordinator

from qex.cli.fastsubmit import capable_wire, lean_request
from qex.store.where import socket_path


def coordinator_saying(path: str, names: list[str]) -> SocketCoordinator:
    """A stand-in that can do `names`, and takes every other request as a submission."""
    return SocketCoordinator(path, lambda message: (
        {"result": "capabilities", "names": names} if message.get("op") == "capabilities"
        else {"result": "submitted", "id": "j1"}))


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
    fake = coordinator_saying(sock_path, ["dependency-words", "job-file-text"])
    try:
        wire = capable_wire(["dependency-words"])
        assert wire is not None
        answer = lean_request({"op": "submit_words"}, wire)
        assert answer == {"result": "submitted", "id": "j1"}
    finally:
        fake.close()
    assert fake.ops() == [["capabilities", "submit_words"]]


def test_an_older_coordinator_gets_nothing_more(sock_path: str) -> None:
    fake = coordinator_saying(sock_path, ["job-file-text"])
    try:
        assert capable_wire(["dependency-words"]) is None
    finally:
        fake.close()
    assert fake.ops() == [["capabilities"]]


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
            fakes.append(coordinator_saying(sock_path, ["dependency-words"]))
        return plain_connect(cls, start=False)  # type: ignore[no-any-return]

    fakes: list[SocketCoordinator] = []
    monkeypatch.setattr(wire_module.Wire, "connect", classmethod(connect))
    try:
        wire = capable_wire(["dependency-words"])
        assert wire is not None
        wire.close()
    finally:
        for fake in fakes:
            fake.close()
    assert started == [True]
    assert fakes[0].ops() == [["capabilities"]]
