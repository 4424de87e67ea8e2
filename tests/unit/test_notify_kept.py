"""The supervisor's notes: the ending note keeps its connection for the written result, and
a kept connection that the coordinator closed meanwhile is replaced, not lost."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import request_lines

from qex.supervisor import notify


class _Coordinator:
    """A Unix socket that answers each request line with `ok`, and counts connections."""

    def __init__(self, path: Path, *, close_after: int | None = None) -> None:
        self.path = path
        self.connections = 0
        self.requests: list[dict[str, object]] = []
        self.close_after = close_after
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(8)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                for handled, message in enumerate(request_lines(conn), 1):
                    self.requests.append(message)
                    conn.sendall(b'{"result":"ok"}\n')
                    if self.close_after is not None and handled >= self.close_after:
                        break

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def no_kept() -> Iterator[None]:
    yield
    if notify._kept is not None:
        notify._kept.close()
        notify._kept = None


def test_the_ending_note_and_the_result_share_one_connection(tmp_path: Path,
                                                             no_kept: None) -> None:
    coordinator = _Coordinator(tmp_path / "s")
    try:
        assert notify.job_changed(coordinator.path, "j", pending={"state": "completed"},
                                  keep=True)
        assert notify.job_changed(coordinator.path, "j", record={"state": "completed"})
        assert notify._kept is None  # the second note did not ask to keep it
        assert notify.job_changed(coordinator.path, "j", record={"state": "completed"})
    finally:
        coordinator.close()
    assert [r.get("pending") is not None for r in coordinator.requests] == [True, False, False]
    assert coordinator.connections == 2


def test_a_kept_connection_that_was_closed_is_replaced(tmp_path: Path, no_kept: None) -> None:
    coordinator = _Coordinator(tmp_path / "s", close_after=1)  # closes after each answer
    try:
        assert notify.job_changed(coordinator.path, "j", pending={"state": "failed"}, keep=True)
        assert notify.job_changed(coordinator.path, "j", record={"state": "failed"})
    finally:
        coordinator.close()
    assert len(coordinator.requests) == 2 and coordinator.connections == 2


def test_no_coordinator_is_no_answer(tmp_path: Path, no_kept: None) -> None:
    assert not notify.job_changed(tmp_path / "absent", "j", record={}, keep=True)
    assert notify._kept is None
