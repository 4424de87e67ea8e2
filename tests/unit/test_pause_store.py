"""The pause file: round trips, removal when empty, and an unreadable file holding the queue."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from qex.store.pause import PauseFile, PauseRecord, read_pause, write_pause


def test_missing_file_means_nothing_paused(tmp_path: Path) -> None:
    pauses = read_pause(tmp_path / "paused.json", 10.0)
    assert pauses.empty


def test_round_trip_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "run" / "paused.json"
    pauses = PauseFile(
        queue=PauseRecord(paused_at=100.0, by_pid=7, reason="demo", until=200.0),
        locks={"gpu0": PauseRecord(paused_at=150.0, by_pid=8)},
    )
    write_pause(path, pauses)
    assert os.stat(path).st_mode & 0o777 == 0o600
    back = read_pause(path, 300.0)
    assert back == pauses
    assert json.loads(path.read_text())["locks"]["gpu0"]["by_pid"] == 8


def test_empty_pauses_remove_the_file(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    write_pause(path, PauseFile(queue=PauseRecord(paused_at=1.0)))
    assert path.exists()
    write_pause(path, PauseFile())
    assert not path.exists()
    write_pause(path, PauseFile())  # removing twice is fine


def test_garbage_holds_the_queue_by_fault(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    path.write_text("{not json")
    pauses = read_pause(path, 50.0)
    assert pauses.queue is not None and pauses.queue.fault
    assert pauses.queue.by_pid == 0
    assert str(path) in (pauses.queue.reason or "")


def test_wrong_shape_holds_the_queue_by_fault(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    path.write_text(json.dumps({"queue": {"paused_at": "yesterday"}, "locks": {}}))
    pauses = read_pause(path, 50.0)
    assert pauses.queue is not None and pauses.queue.fault


def test_a_directory_or_fifo_holds_the_queue_and_never_blocks(tmp_path: Path) -> None:
    directory = tmp_path / "dir"
    directory.mkdir()
    assert read_pause(directory, 1.0).queue is not None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    pauses = read_pause(fifo, 1.0)  # O_NONBLOCK: this returns at once
    assert pauses.queue is not None and pauses.queue.fault


def test_unknown_fields_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    path.write_text(json.dumps({"queue": {"paused_at": 5, "by_pid": 3, "new": 1}, "later": []}))
    pauses = read_pause(path, 9.0)
    assert pauses.queue == PauseRecord(paused_at=5.0, by_pid=3)


@given(
    queue=st.none() | st.builds(
        PauseRecord,
        paused_at=st.floats(min_value=0, max_value=2e9),
        by_pid=st.integers(min_value=0, max_value=2**31),
        reason=st.none() | st.text(max_size=40),
        until=st.none() | st.floats(min_value=0, max_value=2e9),
    ),
    locks=st.dictionaries(st.text(min_size=1, max_size=10),
                          st.builds(PauseRecord, paused_at=st.floats(min_value=0, max_value=2e9)),
                          max_size=3),
)
def test_any_pause_file_round_trips(queue: PauseRecord | None,
                                    locks: dict[str, PauseRecord]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paused.json"
        pauses = PauseFile(queue=queue, locks=locks)
        write_pause(path, pauses)
        assert read_pause(path, 0.0) == pauses
