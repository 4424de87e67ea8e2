"""The one file watcher (qex.platform.filewatch): inotify where it exists, a slow sleep where
it does not, and the parser of inotify's records, each tested on its own."""

from __future__ import annotations

import struct
import sys
import threading
from pathlib import Path

import pytest

from qex.platform import filewatch
from qex.platform.filewatch import (
    RECORD_MASK,
    Changes,
    InotifyWatcher,
    SlowWatcher,
    open_watcher,
    parse_events,
)

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


def event(mask: int, name: bytes = b"") -> bytes:
    padded = name + b"\0" * (16 - len(name) % 16) if name else b""
    return struct.pack("iIII", 1, mask, 0, len(padded)) + padded


def test_parse_events_names_and_gone() -> None:
    data = (event(filewatch.IN_MOVED_TO, b"status.json") + event(filewatch.IN_CREATE, b"x")
            + event(filewatch.IN_CLOSE_WRITE, b"status.json"))
    changes = parse_events(data)
    assert changes.names == frozenset({b"status.json", b"x"})
    assert not changes.gone and changes.touches(b"x") and not changes.touches(b"y")
    gone = parse_events(event(filewatch.IN_DELETE_SELF) + event(filewatch.IN_IGNORED))
    assert gone.gone and gone.touches(b"anything")
    assert not parse_events(b"") and not parse_events(b"\0" * 5)


def test_slow_watcher_says_maybe(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(filewatch.time, "sleep", slept.append)
    slow = SlowWatcher()
    assert slow.fileno() is None
    assert slow.wait(60).unknown and slept == [filewatch.SLOW_POLL]
    assert slow.wait(0.5).unknown and slept[-1] == 0.5
    assert not slow.wait(0) and len(slept) == 2
    assert slow.read().touches(b"status.json")
    slow.close()


def test_open_watcher_falls_back_without_inotify(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QEX_PLATFORM", "portable")
    assert isinstance(open_watcher([tmp_path]), SlowWatcher)
    assert filewatch.FileWatch.start(tmp_path / "qex.toml", lambda: None) is None


@linux
def test_inotify_wakes_a_waiter_on_a_renamed_record(tmp_path: Path) -> None:
    """The CLI's use: a wait that lost its coordinator sleeps until the record lands."""
    job = tmp_path / "job"
    job.mkdir()
    watcher = open_watcher([job, tmp_path / "missing"], RECORD_MASK)
    assert isinstance(watcher, InotifyWatcher) and watcher.fileno() is not None
    assert not watcher.wait(0.01)
    assert not watcher.read()

    def land() -> None:
        temp = job / ".status.tmp"
        temp.write_text("{}")
        temp.rename(job / "status.json")

    writer = threading.Thread(target=land)
    writer.start()
    seen = Changes()
    while not seen.touches(b"status.json"):
        seen = watcher.wait(10)
        assert seen, "no change was reported"
    writer.join()
    watcher.close()
    watcher.close()
    assert watcher.fileno() is None and watcher.read().gone and not watcher.wait(1)


@linux
def test_inotify_sees_the_directory_go(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    watcher = InotifyWatcher.open([job])
    assert watcher is not None
    job.rmdir()
    changes = watcher.wait(10)
    while not changes.gone:
        changes = watcher.wait(10)
        assert changes
    watcher.close()


def test_nothing_to_watch_is_no_inotify(tmp_path: Path) -> None:
    assert InotifyWatcher.open([tmp_path / "absent"]) is None
    assert isinstance(open_watcher([]), SlowWatcher)
