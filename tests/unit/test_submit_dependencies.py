"""`submit_words` with `needs`/`after` words: the coordinator resolves them over its own
records exactly as the command's full path resolves them over every record it fetched
(`word_match.dependency_ids`), refusals and their codes included."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from coordkit import add_job, make_coord
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qex.coordinator import submit_words
from qex.coordinator.state import Coordinator
from qex.core import protocol
from qex.core.word_match import ResolveError, dependency_ids
from qex.store.history import read_all, record_removed, record_submitted

NOW = 1_000_000.0


def _client_side(coord: Coordinator, words: list[str], option: str) -> tuple[Any, ...]:
    """What the full path decides: every record, and the whole history read first."""
    records = [r.to_dict() for r in coord.sorted_records()]
    history = {k.lower(): v for k, v in read_all(coord.paths).items()}
    try:
        return ("ids", dependency_ids(records, [w for w in words if w.strip()], option=option,
                                      history=history, now=NOW))
    except ResolveError as exc:
        return ("refused", exc.message, exc.not_found)


def _coordinator_side(coord: Coordinator, options: dict[str, Any], key: str) -> tuple[Any, ...]:
    resolved, refused = submit_words._dependencies(coord, coord.paths, options, NOW)
    if refused is None:
        return ("ids", resolved[key])
    assert refused["result"] == "error" and refused["build"] is True
    return ("refused", refused["message"], bool(refused.get("not_found")))


@pytest.fixture
def coord(tmp_path: Path) -> Coordinator:
    coord = make_coord(tmp_path)
    add_job(coord, submitted_at=1.0, name="build", state="running")
    add_job(coord, submitted_at=2.0, name="lint", state="completed")
    add_job(coord, submitted_at=3.0, name="ci", state="queued")
    add_job(coord, submitted_at=4.0, name="ci", state="queued")
    group = str(uuid.uuid4())
    for i in range(2):
        add_job(coord, submitted_at=5.0 + i, name=f"fan-0{i + 1}", state="running",
                group=group, group_name="fan")
    gone = str(uuid.uuid4())
    record_submitted(coord.paths, gone, "old", 0.5)
    record_removed(coord.paths, gone, "old", 0.5, removed_at=0.9, final_state="completed")
    return coord


def _words(coord: Coordinator) -> list[str]:
    ids = [j.id for j in coord.sorted_records()]
    gone = next(iter(read_all(coord.paths)))
    return ["build", "lint", "ci", "fan", "fan-01", "nothing", ids[0], ids[1][:8], ids[0][:1],
            gone, gone[:8], "", " ", f"build,{ids[1]}", "build, fan", ids[4].upper(),
            str(uuid.uuid4())]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), key=st.sampled_from(["needs", "after"]))
def test_the_coordinator_resolves_as_the_command_did(coord: Coordinator, data: st.DataObject,
                                                     key: str) -> None:
    words = data.draw(st.lists(st.sampled_from(_words(coord)), min_size=1, max_size=3))
    option = submit_words.DEPENDENCY_FIELDS[key]
    assert _coordinator_side(coord, {key: words}, key) == _client_side(coord, words, option)


def test_the_codes_of_the_refusals(coord: Coordinator) -> None:
    """A word that names nothing is 127 (`not_found`); a name of a job that stopped is a
    mistake of the command line (121); a deleted job's id says that its work happened."""
    gone = next(iter(read_all(coord.paths)))
    cases = {"nothing": True, "lint": False, "ci": True, gone: True}
    for word, not_found in cases.items():
        _, refused = submit_words._dependencies(coord, coord.paths, {"after": [word]}, NOW)
        assert refused is not None and bool(refused.get("not_found")) is not_found, word
        assert "--after" in refused["message"], refused
    _, refused = submit_words._dependencies(coord, coord.paths, {"needs": [gone]}, NOW)
    assert refused is not None and "HAPPENED" in refused["message"]


def test_the_request_carries_words_only_as_lists_of_text() -> None:
    assert submit_words._options_ok({"needs": ["a"], "after": []})
    for bad in ({"needs": "a"}, {"after": [1]}, {"needs": None}, {"before": ["a"]}):
        assert not submit_words._options_ok(bad), bad
    assert protocol.DEPENDENCY_WORDS in protocol.CAPABILITIES


# -- `--job FILE`: the text travels, the coordinator reads it as the command read the file ----


def test_the_text_of_a_job_file_travels_only_when_plain(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.cli import fastsubmit

    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.toml").write_text('command = ["true"]\n')
    assert fastsubmit.job_file_text("job.toml") == {
        "path": "job.toml", "source": str(tmp_path / "job.toml"), "text": 'command = ["true"]\n'}
    (tmp_path / "latin.toml").write_bytes(b'command = ["\xe9"]\n')
    (tmp_path / "big.toml").write_bytes(b"#" * (fastsubmit.JOB_FILE_LEAN_BYTES + 1))
    os.mkfifo(tmp_path / "fifo.toml")
    for path in ("latin.toml", "big.toml", "fifo.toml", ".", "none.toml"):
        assert fastsubmit.job_file_text(path) is None, path


@pytest.mark.parametrize("text", [
    'name = "a"\ncommand = ["sh", "-c", "x"]\ncwd = "w"\nneeds = ["b"]\n[resources]\ncpu = 2\n',
    'command = ["true"]\ncomand = 1\n', 'command = ["true"\n', '[[jobs]]\nname = "a"\n',
])
def test_the_coordinator_reads_a_job_file_as_the_command_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        text: str) -> None:
    """The same `JobFile`, or the same sentence: the command prints it (121), the
    coordinator sends it back as a refusal that the command prints."""
    from qex.cli.submitting import read_job_file
    from qex.core.jobfile import JobFileError
    from qex.store.structured import StructuredError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.toml").write_text(text)
    sent = {"path": "job.toml", "source": str(tmp_path / "job.toml"), "text": text}
    try:
        there: Any = submit_words._job_file(sent)
    except (StructuredError, JobFileError) as exc:
        there = f"qex: {exc}\n"
    try:
        here: Any = read_job_file("job.toml")
    except SystemExit as exc:
        assert exc.code == 121
        here = capsys.readouterr().err
    assert there == here
    assert submit_words._options_ok({"job_file": sent})
    for bad in ({"path": "x"}, {**sent, "text": b"x"}, "x", {**sent, "more": ""}):
        assert not submit_words._options_ok({"job_file": bad}), bad


class _Untouchable(dict):  # type: ignore[type-arg]
    def values(self) -> Any:
        raise AssertionError("a submission without dependencies walked every job")


def test_a_submission_without_dependencies_walks_no_job(coord: Coordinator) -> None:
    # The usual submission names no job: with thousands of records kept, a walk (and a sort)
    # of all of them was most of the coordinator's own time per submission.
    coord.jobs = _Untouchable(coord.jobs)  # type: ignore[assignment]
    assert submit_words._dependencies(coord, coord.paths, {"needs": [], "after": [" "]},
                                      NOW) == ({"needs": [], "after": []}, None)
