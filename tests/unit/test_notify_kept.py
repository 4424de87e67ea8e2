"""The supervisor's notes: the ending note keeps its connection for the written result, and
a kept connection that the coordinator closed meanwhile is replaced, not lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import SocketCoordinator

from qex.supervisor import notify


@pytest.fixture
def no_kept() -> Iterator[None]:
    yield
    if notify._kept is not None:
        notify._kept.close()
        notify._kept = None


def test_the_ending_note_and_the_result_share_one_connection(tmp_path: Path,
                                                             no_kept: None) -> None:
    coordinator = SocketCoordinator(tmp_path / "s")
    try:
        assert notify.job_changed(coordinator.path, "j", pending={"state": "completed"},
                                  keep=True)
        assert notify.job_changed(coordinator.path, "j", record={"state": "completed"})
        assert notify._kept is None  # the second note did not ask to keep it
        assert notify.job_changed(coordinator.path, "j", record={"state": "completed"})
    finally:
        coordinator.close()
    assert [r.get("pending") is not None for r in coordinator.requests] == [True, False, False]
    assert len(coordinator.connections) == 2


def test_a_kept_connection_that_was_closed_is_replaced(tmp_path: Path, no_kept: None) -> None:
    coordinator = SocketCoordinator(tmp_path / "s", close_after=1)  # closes after each answer
    try:
        assert notify.job_changed(coordinator.path, "j", pending={"state": "failed"}, keep=True)
        assert notify.job_changed(coordinator.path, "j", record={"state": "failed"})
    finally:
        coordinator.close()
    assert len(coordinator.requests) == 2 and len(coordinator.connections) == 2


def test_no_coordinator_is_no_answer(tmp_path: Path, no_kept: None) -> None:
    assert not notify.job_changed(tmp_path / "absent", "j", record={}, keep=True)
    assert notify._kept is None
