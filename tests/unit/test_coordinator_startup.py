"""The pid lock and the socket bind that make one coordinator per state dir."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from qex.coordinator import startup


def test_the_pid_lock_is_exclusive_and_records_the_pid(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(startup, "LOCK_WAIT_SECS", 0.1)
    path = tmp_path / "coordinator.pid"
    fd = startup.lock_pid_file(path)
    try:
        assert path.read_text().split()[0] == str(os.getpid())
        assert os.stat(path).st_mode & 0o777 == 0o600
        with pytest.raises(startup.AnotherCoordinator):
            startup.lock_pid_file(path)  # a second open file description cannot take it
    finally:
        os.close(fd)
    again = startup.lock_pid_file(path)
    os.close(again)


def test_an_unusable_pid_file_is_a_start_error(tmp_path: Path) -> None:
    with pytest.raises(startup.StartError):
        startup.lock_pid_file(tmp_path / "missing-dir" / "coordinator.pid")


def test_bind_replaces_a_stale_socket_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "run" / "qex.sock"
    path.parent.mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, and nobody listens
    assert startup.probe(path) == "none"
    sock = startup.bind_socket(path)
    try:
        assert os.stat(path).st_mode & 0o777 == 0o600
        assert os.stat(path.parent).st_mode & 0o777 == 0o700
        assert startup.probe(path, timeout=0.2) in ("unknown", "alive")  # listens, never answers
    finally:
        sock.close()


def test_a_listening_socket_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "qex.sock"
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(str(path))
    other.listen(1)
    try:
        with pytest.raises(startup.AnotherCoordinator):
            startup.bind_socket(path)
        assert path.exists()
    finally:
        other.close()
