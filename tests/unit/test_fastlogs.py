"""The fast `qex logs ID` prints what the full body prints: its tail is held against
`qex.core.logsel`, the function the full body uses (the constants and the sentence are
shared through `qex.core.log_words`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.cli import fastlogs, log_files
from qex.core import log_words, logsel


def _full(data: bytes, count: int) -> tuple[bytes, str | None]:
    selected = logsel.select_lines(logsel.split_lines(log_files.decode(data)),
                                   logsel.Selection(), default_tail=count)
    notice = selected.notice()
    text = selected.text.encode("utf-8", "surrogateescape")
    return text, notice.removeprefix("... ") if notice else None


def _fast(data: bytes, count: int) -> tuple[bytes, str | None]:
    text, hidden = fastlogs.tail(data, count)
    return text, log_words.hidden_sentence(hidden, "earlier ") if hidden else None


@pytest.mark.parametrize("lines", [0, 1, 499, 500, 501, 502, 1200])
def test_the_default_tail_is_the_selections(lines: int) -> None:
    data = b"".join(b"%d\n" % n for n in range(lines))
    assert _fast(data, 500) == _full(data, 500)
    assert _fast(data + b"no end", 500) == _full(data + b"no end", 500)


@given(st.lists(st.sampled_from([b"a", b"\n", b"\r", b"\xff", b"\xc3\xa9", b"", b" "]),
                max_size=40), st.integers(1, 6))
def test_any_bytes_tail_as_the_selection_does(pieces: list[bytes], count: int) -> None:
    data = b"".join(pieces)
    assert _fast(data, count) == _full(data, count)


def test_the_files_are_read_whole_or_left_to_the_full_body(tmp_path: object) -> None:
    from pathlib import Path

    root = Path(str(tmp_path))
    assert fastlogs._read(str(root / "missing.log")) == b""
    (root / "a.log").write_bytes(b"x\n")
    assert fastlogs._read(str(root / "a.log")) == b"x\n"
    assert fastlogs._read(str(root)) is None  # a directory: the full body says what it finds
