"""`qex pause queue` on the lean path takes the count of running jobs from the pause's
answer, and asks `info` for it only where a coordinator older than that count answers."""

from __future__ import annotations

import time
from typing import Any

import pytest

from qex.cli import pause_core


class _FakeLine:
    """The coordinator's side of one connection: the pause's answer, and `info` when asked."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def __enter__(self) -> _FakeLine:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def change(self, message: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(message["op"])
        return self.answer

    def read(self, message: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(message["op"])
        return {"result": "info", "jobs_running": 3}


def _paused(**extra: Any) -> dict[str, Any]:
    return {"result": "pause_state", "locks": [], **extra,
            "queue": {"paused_at": time.time(), "by_pid": 0, "reason": None, "until": None,
                      "fault": False}}


@pytest.mark.parametrize(("answer", "asked", "running"), [
    (_paused(jobs_running=2), ["pause"], 2),
    (_paused(jobs_running=0), ["pause"], 0),
    (_paused(), ["pause", "info"], 3),  # a coordinator without the count in its answer
])
def test_the_running_jobs_come_with_the_pause(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              answer: dict[str, Any], asked: list[str],
                                              running: int) -> None:
    line = _FakeLine(answer)
    monkeypatch.setattr(pause_core._Line, "connect", classmethod(lambda cls: line))
    assert pause_core.pause_queue(None, None, as_json=False) == 0
    assert line.asked == asked
    err = capsys.readouterr().err
    assert (f"{running} job(s) still run" in err) is (running > 0), err
