"""`qex top --once` waits between its two samples only when a sample can use the wait."""

from __future__ import annotations

from typing import Any

import pytest

from qex.cli.commands import top


class _Feed(top._Feed):
    """A feed with fixed records, whose groups sample as `groups` says."""

    def __init__(self, groups: dict[int, Any]) -> None:
        super().__init__(paths=None)
        self.groups = groups

    def fetch(self) -> tuple[list[dict[str, Any]], None, None]:
        return [], None, None

    def measure(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        self.samples = dict(self.groups)
        return {}


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    naps: list[float] = []
    monkeypatch.setattr(top.time, "sleep", naps.append)
    monkeypatch.setattr(top, "_render", lambda feed, width, color: ["the page"])
    return naps


def test_a_page_with_no_running_job_is_printed_at_once(slept: list[float],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    top._once(_Feed({}), color=False)
    assert slept == []
    assert capsys.readouterr().out == "the page\n"


def test_a_page_with_a_sampled_job_waits_for_its_second_sample(
        slept: list[float], capsys: pytest.CaptureFixture[str]) -> None:
    top._once(_Feed({4242: object()}), color=False)
    assert slept == [top.ONCE_GAP]
    assert capsys.readouterr().out == "the page\n"
