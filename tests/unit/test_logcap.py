"""The output cap: the plan's arithmetic and the writer's invariants, checked with hypothesis.

The invariants come from `qex help output`: the file never passes the limit; what is left of
the job's output (the `[qex]` lines removed) is a head of the output followed by a tail of it;
kept + dropped = total, in bytes and in lines; output below the fill mark is kept whole.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qex.core import logcap_plan as plan
from qex.supervisor.logcap import CappedLog

FRAGMENT_LINE = plan.fragment_note().lstrip(b"\n")


def strip_qex(data: bytes) -> bytes:
    """The job's text in a log file: qex's lines removed, written independently of the code."""
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        if line.startswith(b"[qex] "):
            if line == FRAGMENT_LINE and out and out[-1].endswith(b"\n"):
                out[-1] = out[-1][:-1]   # the newline that the note put before itself
            continue
        if plan.ATTEMPT_MARK.fullmatch(line.rstrip(b"\n")):
            continue
        out.append(line)
    return b"".join(out)


def common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def common_suffix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i


def run_writer(chunks: list[bytes], limit: int | None, directory: Path) -> tuple[bytes, CappedLog]:
    path = directory / "stdout.log"
    log = CappedLog(path, limit, truncate=True)
    for chunk in chunks:
        log.write(chunk)
    log.finish()
    return path.read_bytes(), log


def test_parts_add_up() -> None:
    for limit in (16 * 1024, 64 * 1024, 32 * 1024 * 1024, 123457):
        p = plan.parts(limit)
        assert p.head + p.note_room + p.tail <= limit
        assert p.head < p.fill <= limit
        assert p.note_room <= 2048


def test_notes_fit_in_the_note_room_of_the_smallest_limit() -> None:
    limit = 16 * 1024
    big = 10**15
    notes = (
        plan.fragment_note() + plan.overflow_note(limit) + plan.no_ring_note("x" * 500)
        + plan.summary_note(big, big, limit, limit, limit) + plan.mid_line_note()
    )
    assert len(notes) <= plan.parts(limit).note_room


def test_head_cut_prefers_a_line_end() -> None:
    assert plan.head_cut(b"abc\ndef", 100, 107) == (104, False)
    assert plan.head_cut(b"abcdef", 100, 106) == (106, True)


def test_tail_trim() -> None:
    assert plan.tail_trim(b"xy\nabc\n", True, 100) == (3, False)
    assert plan.tail_trim(b"xy\nabc\n", False, 100) == (0, False)
    # A newline too far in: keep the partial line and say so.
    assert plan.tail_trim(b"x" * 50 + b"\n", True, 100) == (0, True)
    assert plan.tail_trim(b"", True, 100) == (0, False)


def test_tally_skips_qex_lines_only_at_line_starts() -> None:
    text = b"a\n[qex] note\n--- attempt 2 ---\nb [qex] c\n"
    assert plan.job_text(text) == (len(b"a\nb [qex] c\n"), 2)
    # A stretch that starts inside a line: that first piece is the job's, whatever it says.
    assert plan.job_text(b"[qex] x\ny", at_line_start=False) == (9, 1)
    tally = plan.JobTextTally()
    for piece in (b"[q", b"ex] split note\nkeep", b"\n"):
        tally.feed(piece)
    assert tally.finish() == (5, 1)


def test_small_output_is_kept_whole(tmp_path: Path) -> None:
    data = b"".join(b"%d\n" % i for i in range(1000))
    content, log = run_writer([data], 64 * 1024, tmp_path)
    assert content == data
    assert (log.dropped_bytes, log.dropped_lines) == (0, 0)
    assert not log.overflowed


def test_unlimited_keeps_everything(tmp_path: Path) -> None:
    data = b"x" * 300_000
    content, log = run_writer([data[:1000], data[1000:]], None, tmp_path)
    assert content == data and log.dropped_bytes == 0


def test_seq_against_64k(tmp_path: Path) -> None:
    data = b"".join(b"%d\n" % i for i in range(1, 500_001))
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    content, log = run_writer(chunks, 64 * 1024, tmp_path)
    assert len(content) <= 64 * 1024
    kept = strip_qex(content)
    assert kept.startswith(b"1\n2\n3\n")
    assert kept.endswith(b"499999\n500000\n")
    assert len(kept) + log.dropped_bytes == len(data)
    assert kept.count(b"\n") + log.dropped_lines == 500_000
    assert not (tmp_path / "stdout.log.tail").exists()


def test_a_job_that_stops_just_after_the_overflow_keeps_its_newest_lines(tmp_path: Path) -> None:
    """The overflow's cut removes what lies past the head, the newest output among it: the
    ring starts with that output, so a job that stops a few bytes later still has a tail of
    whole lines up to its last one (it was left with the few bytes past the fill mark,
    which the trim of a partial first line then dropped)."""
    limit = 16 * 1024
    parts = plan.parts(limit)
    output = b"".join(b"line %05d\n" % i for i in range(parts.fill // 11 + 1))
    assert parts.fill < len(output) < parts.fill + 11  # past the mark inside the last line
    content, log = run_writer([output], limit, tmp_path)
    assert len(content) <= limit
    kept = strip_qex(content)
    assert kept.endswith(b"line %05d\n" % (len(output) // 11 - 1))
    assert len(kept) + log.dropped_bytes == len(output)
    assert kept.count(b"\n") + log.dropped_lines == output.count(b"\n")
    # The tail's room is used, less at most the partial line at its start.
    assert common_suffix(kept, output) > parts.tail - 11


@pytest.mark.parametrize("fault", ["cut", "read"])
def test_an_overflow_that_cannot_cut_or_read_keeps_the_counts_true(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """When the cut fails the file keeps what it holds, so the ring must not hold a copy of
    its newest part; when that part cannot be read, it is counted as dropped once."""
    import os

    from qex.supervisor import logcap

    limit = 16 * 1024
    output = b"".join(b"line %05d\n" % i for i in range(3000))
    if fault == "cut":
        def refuse(fd: int, length: int) -> None:
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(os, "ftruncate", refuse)
    else:
        real = logcap._pread
        refused: list[int] = []
        def refuse_newest(fd: int, length: int, offset: int) -> bytes:
            if length == 1 and not refused:  # the byte before the newest part
                refused.append(offset)
                raise OSError(5, "Input/output error")
            return real(fd, length, offset)
        monkeypatch.setattr(logcap, "_pread", refuse_newest)
    reports: list[str] = []
    log = CappedLog(tmp_path / "stdout.log", limit, truncate=True, report=reports.append)
    for i in range(0, len(output), 5000):
        log.write(output[i : i + 5000])
    log.finish()
    kept = strip_qex((tmp_path / "stdout.log").read_bytes())
    assert reports  # the fault is said once
    assert len(kept) + log.dropped_bytes == len(output)
    assert kept.count(b"\n") + log.dropped_lines == output.count(b"\n")
    assert common_prefix(kept, output) + common_suffix(kept, output) >= len(kept)
    assert kept.endswith(b"line 02999\n")


lines = st.lists(
    st.one_of(
        st.binary(max_size=120).map(lambda b: b.replace(b"[", b"(")),
        st.integers(min_value=0, max_value=40_000).map(lambda n: b"y" * n),
    ),
    max_size=60,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=lines,
    final_newline=st.booleans(),
    limit=st.integers(min_value=16 * 1024, max_value=48 * 1024),
    data=st.data(),
)
def test_invariants(body: list[bytes], final_newline: bool, limit: int,
                    data: st.DataObject) -> None:
    output = b"\n".join(body) + (b"\n" if final_newline and body else b"")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(output)), max_size=12)))
    chunks = [output[a:b] for a, b in zip([0, *cuts], [*cuts, len(output)], strict=True)]
    with tempfile.TemporaryDirectory() as tmp:
        content, log = run_writer(chunks, limit, Path(tmp))
        assert not (Path(tmp) / "stdout.log.tail").exists()
    assert len(content) <= limit
    kept = strip_qex(content)
    assert len(kept) + log.dropped_bytes == len(output)
    assert kept.count(b"\n") + log.dropped_lines == output.count(b"\n")
    # What is kept is a head of the output followed by a tail of it.
    assert common_prefix(kept, output) + common_suffix(kept, output) >= len(kept)
    if len(output) <= plan.parts(limit).fill:
        assert content == output
        assert log.dropped_bytes == 0


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=30_000),
    limit=st.integers(min_value=16 * 1024, max_value=40 * 1024),
    step=st.integers(min_value=1, max_value=70_000),
)
def test_first_and_last_lines_survive(count: int, limit: int, step: int) -> None:
    output = b"".join(b"line %d\n" % i for i in range(count))
    chunks = [output[i : i + step] for i in range(0, len(output), step)]
    with tempfile.TemporaryDirectory() as tmp:
        content, log = run_writer(chunks, limit, Path(tmp))
    kept = strip_qex(content)
    assert kept.startswith(b"line 0\n")
    assert kept.endswith(b"line %d\n" % (count - 1))
    # Whole lines only: a short-lined output never needs the mid-line note.
    assert b"starts in the middle" not in content
    assert kept.count(b"\n") + log.dropped_lines == count


@settings(max_examples=30, deadline=None)
@example(first=995, second=418, limit=16 * 1024)  # a CI run found it
@given(
    first=st.integers(min_value=0, max_value=20_000),
    second=st.integers(min_value=0, max_value=20_000),
    limit=st.integers(min_value=16 * 1024, max_value=40 * 1024),
)
def test_attempts_share_one_file(first: int, second: int, limit: int) -> None:
    one = b"".join(b"first %d\n" % i for i in range(first))
    two = b"".join(b"second %d\n" % i for i in range(second))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stderr.log"
        log = CappedLog(path, limit, truncate=True)
        log.write(one)
        log.finish()
        log2 = CappedLog(path, limit, truncate=False, dropped_bytes=log.dropped_bytes,
                         dropped_lines=log.dropped_lines)
        log2.begin_attempt(2)
        log2.write(two)
        log2.finish()
        content = path.read_bytes()
    assert len(content) <= limit
    assert b"--- attempt 2 ---\n" in content or log2.dropped_bytes > 0
    kept = strip_qex(content)
    assert len(kept) + log2.dropped_bytes == len(one) + len(two)
    assert kept.count(b"\n") + log2.dropped_lines == first + second
    if second:
        assert kept.endswith(b"second %d\n" % (second - 1))
    if len(one) + len(two) + 40 < plan.parts(limit).fill:
        assert log2.dropped_bytes == 0 and kept == one + two


def test_an_unwritable_log_counts_everything_as_dropped(tmp_path: Path) -> None:
    messages: list[str] = []
    log = CappedLog(tmp_path / "missing" / "stdout.log", 64 * 1024, truncate=True,
                    report=messages.append)
    log.write(b"a\nb\n")
    log.finish()
    assert (log.dropped_bytes, log.dropped_lines) == (4, 2)
    assert len(messages) == 1 and "could not open" in messages[0]
