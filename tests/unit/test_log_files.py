"""Reading log files: the fast tail of a large file, notes about dropped output, --since."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from qex.cli import log_files
from qex.cli.events_core import SinceError, parse_since
from qex.core.log_words import for_json
from qex.core.logsel import Selection

if TYPE_CHECKING:
    from qex.core.records import LogsDropped


def _write(path: Path, count: int, *, final_newline: bool = True) -> list[str]:
    lines = [f"line {i} " + "x" * (i % 7) for i in range(1, count + 1)]
    text = "\n".join(lines) + ("\n" if final_newline else "")
    path.write_text(text)
    return lines


@pytest.mark.parametrize("final_newline", [True, False])
@pytest.mark.parametrize("count", [0, 1, 3, 500, 5000])
def test_read_tail_matches_a_whole_read(tmp_path: Path, count: int, final_newline: bool) -> None:
    path = tmp_path / "stdout.log"
    lines = _write(path, 20000, final_newline=final_newline)
    tail, before = log_files.read_tail(path, count)
    assert tail == (lines[-count:] if count else [])
    assert before == len(lines) - len(tail)


def test_fast_path_and_whole_read_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "stdout.log"
    _write(path, 3000)
    whole = log_files.select_file(path, Selection(tail=10, number=True))
    monkeypatch.setattr(log_files, "FAST_TAIL_BYTES", 10)
    fast = log_files.select_file(path, Selection(tail=10, number=True))
    assert fast == whole
    assert fast.hidden == 2990 and fast.lines[-1].startswith("  3000  ")


def test_missing_file_is_an_empty_stream(tmp_path: Path) -> None:
    out = log_files.select_file(tmp_path / "none.log", Selection())
    assert out.lines == [] and out.total == 0


def test_bytes_that_are_not_utf8_survive(tmp_path: Path) -> None:
    path = tmp_path / "stdout.log"
    path.write_bytes(b"ok\n\xff\xfe raw\n")
    out = log_files.select_file(path, Selection(all=True))
    assert out.text.encode("utf-8", "surrogateescape") == b"ok\n\xff\xfe raw\n"
    assert "\ufffd" in for_json(out.text)


def test_dropped_note_names_the_size_and_lines() -> None:
    dropped: LogsDropped = {"stdout_bytes": 3 * 1024**2, "stdout_lines": 1200,
                            "stderr_bytes": 0, "stderr_lines": 0, "limit": 32 * 1024**2,
                            "incomplete": True}
    note = log_files.dropped_note(dropped, "stdout")
    assert note is not None and "3MB" in note and "1200 lines" in note and "32MB" in note
    assert log_files.dropped_note(dropped, "stderr") is None
    assert log_files.dropped_note({}, "stdout") is None
    assert log_files.dropped_note(None, "stdout") is None
    assert log_files.incomplete_note(dropped) is not None
    assert log_files.incomplete_note(None) is None


def test_pending_tail_note(tmp_path: Path) -> None:
    assert log_files.pending_tail_note(tmp_path, "stdout") is None
    (tmp_path / "stdout.log.tail").write_bytes(b"")
    assert log_files.pending_tail_note(tmp_path, "stdout") is not None


def test_parse_since() -> None:
    assert parse_since("start") == ("start", False)
    assert parse_since("ALL") == ("start", False)
    assert parse_since("now") == ("now", False)
    assert parse_since("42") == ({"after": {"seq": 42, "stream": None}}, True)
    stream = "91b8d897-6ff1-4ca3-aaf5-4c1d9031fbee"
    assert parse_since(f"{stream}:7") == ({"after": {"seq": 7, "stream": stream}}, False)
    for bad in ("soon", ":5", "abc:x"):
        with pytest.raises(SinceError):
            parse_since(bad)
