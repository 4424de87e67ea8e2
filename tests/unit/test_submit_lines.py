"""`submit_words` with `each_line`: the coordinator expands a fan-out as the command did."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from coordkit import make_coord, state_environ

from qex.coordinator import submit_lines, submit_words
from qex.coordinator.state import Coordinator
from qex.core import protocol


def _message(tmp_path: Path, text: str, command: list[str], **options: Any) -> dict[str, Any]:
    environ = {**state_environ(tmp_path), "PATH": "/usr/bin:/bin"}
    options = {"command": command, "cpu": 1, "mem": "16MB",
               "each_line": {"path": "names.txt", "text": text, "max_jobs": 1000}, **options}
    return protocol.submit_words(options, environ=environ, cwd=str(tmp_path),
                                 client_version=protocol.VERSION)


def _expand(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(submit_lines.handle_submit_lines(coord, message))


@pytest.fixture
def coord(tmp_path: Path) -> Coordinator:
    return make_coord(tmp_path)


def test_every_line_is_a_stage_of_one_new_group(coord: Coordinator, tmp_path: Path) -> None:
    answer = _expand(coord, _message(tmp_path, "a\n\n# skip\nb c\n", ["echo", "{}"]))
    assert answer["result"] == protocol.Result.SUBMITTED, answer
    assert answer["summary"].startswith("this input gives 2 job(s)")
    assert [j["name"] for j in answer["jobs"]] == ["echo-01-a", "echo-02-b-c"]
    assert answer["group_name"] == "names" and answer["total"] == 2
    stages = [coord.jobs[j["id"]].record for j in answer["jobs"]]
    assert [s.command for s in stages] == [["echo", "a"], ["echo", "b c"]]
    assert {s.group for s in stages} == {answer["group"]}
    assert {s.group_name for s in stages} == {"names"}


def test_the_input_and_the_template_are_checked_before_anything(coord: Coordinator,
                                                                 tmp_path: Path) -> None:
    for text, command, words in (("a\n", ["echo"], "has no `{}`"),
                                 ("\n# none\n", ["echo", "{}"], "gives no job"),
                                 ("a\nb\n", ["echo", "{}"], "the limit is 1")):
        message = _message(tmp_path, text, command)
        if words == "the limit is 1":
            message["options"]["each_line"]["max_jobs"] = 1
        answer = _expand(coord, message)
        assert answer["result"] == "error" and answer["build"] is True, answer
        assert words in answer["message"]
    assert not coord.jobs


def test_a_refused_stage_ends_the_fan_out_with_the_stages_already_queued(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = submit_words.handle_submit
    calls: list[int] = []

    def refuse_the_second(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 2:
            return protocol.error(protocol.WRONG_STATE, "no room for this one")
        return real(coord, message)

    monkeypatch.setattr(submit_words, "handle_submit", refuse_the_second)
    answer = _expand(coord, _message(tmp_path, "a\nb\nc\n", ["echo", "{}"]))
    assert answer["result"] == "error" and answer["message"] == "no room for this one"
    assert [j["name"] for j in answer["jobs"]] == ["echo-01-a"]
    assert answer["total"] == 3 and len(calls) == 2
    assert list(coord.jobs) == [answer["jobs"][0]["id"]]


def test_a_malformed_input_field_is_refused(coord: Coordinator, tmp_path: Path) -> None:
    for bad in ({"path": "x", "text": "a\n"}, {"path": "x", "text": b"a", "max_jobs": 1},
                {"path": "x", "text": "a\n", "max_jobs": 0},
                {"path": "x", "text": "a\n", "max_jobs": True}):
        message = _message(tmp_path, "a\n", ["echo", "{}"])
        message["options"]["each_line"] = bad
        assert _expand(coord, message)["kind"] == protocol.INTERNAL
    assert not coord.jobs
