"""A long `--each-line` input on the lean path: the command sends it in parts of one group
(`fastsubmit.submit_lines`), the coordinator expands each (`submit_lines`), and what the
command prints and what is queued are what one request for the whole input gives."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from coordkit import make_coord, state_environ

from qex.cli import fanout_input, fast, fastsubmit
from qex.client.errors import Lost
from qex.coordinator import submit_lines
from qex.coordinator.state import Coordinator
from qex.core import fanout_source, protocol

LINES = [f"item{i}" for i in range(1, 2346)]
TEXT = "# a sweep\n" + "".join(f"{line}\n" + ("\n" if n % 500 == 0 else "")
                                for n, line in enumerate(LINES, start=1))


class _Coordinator:
    """`lean_request` answered by the real handler; `fail_at` makes the n-th request (from
    1) refused, unanswered (None), interrupted by Ctrl-C, or lost by the full client that
    read its slow answer."""

    def __init__(self, coord: Coordinator, fail_at: int = 0, how: str = "") -> None:
        self.coord = coord
        self.parts: list[dict[str, Any]] = []
        self.fail_at = fail_at
        self.how = how

    def __call__(self, request: dict[str, Any], wire: object = None) -> dict[str, Any] | None:
        self.parts.append(request["options"]["each_line"])
        if len(self.parts) == self.fail_at:
            if self.how == "gone":
                return None
            if self.how == "ctrl-c":
                raise KeyboardInterrupt
            if self.how == "lost":
                raise Lost("the coordinator closed the connection before it answered")
            if self.how == "refused":
                return {"result": "error", "kind": protocol.REFUSED,
                        "message": "the coordinator stops and takes no new job"}
        return asyncio.run(submit_lines.handle_submit_lines(self.coord, request))


def _send(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, coordinator: _Coordinator,
          text: str = TEXT, max_jobs: int = 3000, id_file: str | None = None) -> int | None:
    source = tmp_path / "sweep.txt"
    source.write_text(text)
    monkeypatch.chdir(tmp_path)
    for key, value in {**state_environ(tmp_path), "PATH": "/usr/bin:/bin"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(fastsubmit, "lean_request", coordinator)
    read = fastsubmit.lines_input(str(source))
    assert read is not None
    options = {"command": ["echo", "{}"], "cpu": 1, "mem": "16MB"}
    return fastsubmit.submit_lines({"id_file": id_file}, options, source="sweep.txt",
                                   max_jobs=max_jobs, read=read)


@pytest.fixture
def coord(tmp_path: Path) -> Coordinator:
    return make_coord(tmp_path)


@pytest.fixture(autouse=True)
def _read_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test is a new command: `fanout_input` keeps what one process read, by name."""
    monkeypatch.setattr(fanout_input, "_READ", {})


def test_a_long_input_goes_in_parts_of_one_group(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path, coord: Coordinator,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    sent = _Coordinator(coord)
    assert _send(monkeypatch, tmp_path, sent, id_file="ids.json") == 0
    out, err = capsys.readouterr()
    group = out.strip()
    size = fanout_source.PART_JOBS
    assert [(p["part"]["first"], p["part"]["group"], p["part"]["total"]) for p in sent.parts] == [
        (first, group, 2345) for first in range(1, 2346, size)]
    records = sorted((job.record for job in coord.jobs.values()), key=lambda r: r.sequence)
    assert [r.command for r in records] == [["echo", line] for line in LINES]
    assert {r.group for r in records} == {group}
    assert [r.name for r in records][:2] == ["echo-0001-item1", "echo-0002-item2"]
    assert records[-1].name == "echo-2345-item2345"
    lines = err.splitlines()
    assert lines[0] == "qex: " + fanout_source.summary(2345, 4, 1)
    assert sum(1 for line in lines if "passed over" in line) == 1
    assert lines[1:2346] == [f"qex: {r.name}: {r.id}" for r in records]
    assert lines[-1] == "qex: 2345 jobs in the group `sweep`"
    kept = json.loads((tmp_path / "ids.json").read_text())
    assert kept["group"] == group
    assert list(kept["jobs"].items()) == [(r.name, r.id) for r in records]


def test_an_input_of_one_part_goes_whole_as_before(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path, coord: Coordinator) -> None:
    sent = _Coordinator(coord)
    assert _send(monkeypatch, tmp_path, sent, text="a\n\n# c\nb\n") == 0
    assert sent.parts == [{"path": "sweep.txt", "text": "a\n\n# c\nb\n", "max_jobs": 3000}]


@pytest.mark.parametrize(("how", "code", "says"), [
    ("refused", 121, "the coordinator stops and takes no new job"),
    ("gone", 121, "lost the coordinator between two parts"),
    ("ctrl-c", 122, "interrupted; the part that was on its way"),
    ("lost", 121, "the coordinator closed the connection before it answered"),
])
def test_a_fan_out_that_ends_after_its_first_part_lists_what_is_queued(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, coord: Coordinator,
        capsys: pytest.CaptureFixture[str], how: str, code: int, says: str) -> None:
    sent = _Coordinator(coord, fail_at=2, how=how)
    with pytest.raises(SystemExit) as ended:
        _send(monkeypatch, tmp_path, sent)
    assert ended.value.code == code
    out, err = capsys.readouterr()
    assert out == ""  # only a fan-out submitted in full prints its group
    group = sent.parts[0]["part"]["group"]
    assert says in err
    size = fanout_source.PART_JOBS
    assert f"the fan-out stopped after {size} of 2345 jobs" in err
    assert f"qex cancel {group}" in err
    assert len(coord.jobs) == size


def test_a_first_part_with_nobody_to_answer_is_left_to_the_full_path(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, coord: Coordinator) -> None:
    assert _send(monkeypatch, tmp_path, _Coordinator(coord, fail_at=1, how="gone")) is None
    assert not coord.jobs


def test_a_first_part_over_the_limit_queues_nothing(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path, coord: Coordinator,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        _send(monkeypatch, tmp_path, _Coordinator(coord), max_jobs=2000)
    assert ended.value.code == 121
    assert fanout_source.too_many("sweep.txt", 2345, 2000) in capsys.readouterr().err
    assert not coord.jobs


@pytest.mark.parametrize(("text", "wanted"), [
    ("a\nb\n", ["each-line-text"]),
    ("".join(f"l{i}\n" for i in range(fanout_source.PART_JOBS)), ["each-line-text"]),
    ("".join(f"l{i}\n" for i in range(fanout_source.PART_JOBS + 1)),
     ["each-line-text", "each-line-parts"]),
    (TEXT, ["each-line-text", "each-line-parts"]),
])
def test_parts_are_sent_only_to_a_coordinator_that_takes_them(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, wanted: list[str]) -> None:
    """A coordinator without `each-line-parts` (`capable_wire` gives None) leaves a long
    input to the full path, which sends one request per job; a short one never asks."""
    (tmp_path / "in.txt").write_text(text)
    monkeypatch.chdir(tmp_path)
    asked: list[list[str]] = []
    monkeypatch.setattr(fastsubmit, "capable_wire", asked.append)
    params = {**fast_params(), "each_line": "in.txt", "max_jobs": 5000,
              "command_args": ["echo", "{}"]}
    assert fast._submit_lines(params) is None
    assert asked == [wanted]


def fast_params() -> dict[str, Any]:
    from qex.cli.fastargs import parse

    parsed = parse("submit", ["--each-line", "in.txt", "--", "echo", "{}"])
    assert parsed is not None
    return parsed


def test_an_input_with_a_part_too_long_to_send_is_left_to_the_full_path(
        tmp_path: Path) -> None:
    long_line = "x" * (fanout_source.PART_CHARS + 1)
    (tmp_path / "in.txt").write_text(f"a\n{long_line}\n")
    assert fastsubmit.lines_input(str(tmp_path / "in.txt")) is None
    (tmp_path / "ok.txt").write_text("a\nb\n")
    assert fastsubmit.lines_input(str(tmp_path / "ok.txt")) is not None
