"""`submit_pipeline`: the coordinator builds and submits a pipeline as the command did."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from coordkit import make_coord, state_environ

from qex.coordinator import submit_pipeline, submit_words
from qex.coordinator.state import Coordinator
from qex.core import protocol

PIPELINE = (
    '[[jobs]]\nname = "test"\ncommand = ["echo", "test"]\nneeds = ["build"]\n'
    '[jobs.resources]\ncpu = 1\nmem = "16MB"\n'
    '[[jobs]]\nname = "build"\ncommand = ["echo", "build"]\n'
    '[jobs.resources]\ncpu = 1\nmem = "16MB"\n'
)


def _message(tmp_path: Path, text: str = PIPELINE, name: str | None = None) -> dict[str, Any]:
    environ = {**state_environ(tmp_path), "PATH": "/usr/bin:/bin"}
    sent = {"path": "ci.toml", "source": str(tmp_path / "ci.toml"), "text": text}
    return protocol.submit_pipeline(sent, name=name, environ=environ, cwd=str(tmp_path),
                                    client_version=protocol.VERSION)


def _submit(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(submit_pipeline.handle_submit_pipeline(coord, message))


@pytest.fixture
def coord(tmp_path: Path) -> Coordinator:
    return make_coord(tmp_path)


def test_stages_go_in_the_order_of_their_dependencies(coord: Coordinator,
                                                      tmp_path: Path) -> None:
    answer = _submit(coord, _message(tmp_path))
    assert answer["result"] == protocol.Result.SUBMITTED, answer
    assert [j["name"] for j in answer["jobs"]] == ["build", "test"]
    assert answer["group_name"] == "ci"
    build, test = (coord.jobs[j["id"]].record for j in answer["jobs"])
    assert test.needs == [build.id]
    assert {build.group, test.group} == {answer["group"]}


def test_the_file_and_the_name_are_checked_before_anything(coord: Coordinator,
                                                           tmp_path: Path) -> None:
    for message, words in (
            (_message(tmp_path, '[[jobs]\n'), "ci.toml"),
            (_message(tmp_path, name="bad name"), "is not one qex accepts"),
            (_message(tmp_path, '[[jobs]]\nname = "a"\ncommand = ["true"]\nneeds = ["a"]\n'),
             "a")):
        answer = _submit(coord, message)
        assert answer["result"] == "error" and answer["build"] is True, answer
        assert words in answer["message"]
    assert not coord.jobs


def test_a_refused_stage_ends_the_pipeline_with_the_stages_already_queued(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = submit_words.handle_submit

    def refuse_test(coord: Coordinator, message: dict[str, Any],
                    **how: Any) -> dict[str, Any]:
        if message["spec"]["name"] == "test":
            return protocol.error(protocol.WRONG_STATE, "no room for this one")
        return real(coord, message, **how)

    monkeypatch.setattr(submit_words, "handle_submit", refuse_test)
    answer = _submit(coord, _message(tmp_path))
    assert answer["result"] == "error" and answer["stage"] == "test"
    assert [j["name"] for j in answer["jobs"]] == ["build"]
    assert list(coord.jobs) == [answer["jobs"][0]["id"]]


def test_a_malformed_request_is_refused(coord: Coordinator, tmp_path: Path) -> None:
    for change in ({"pipeline": {"path": "x", "text": "t"}}, {"name": 3}, {"cwd": None},
                   {"pipeline": {"path": "x", "source": "y", "text": b"t"}}):
        assert _submit(coord, {**_message(tmp_path), **change})["kind"] == protocol.INTERNAL
    assert not coord.jobs
