"""The lean excerpts of a job's logs (`fastlogs.status_excerpts`) are the ones the full body
chooses (`status_print.load_excerpts`), with no log option and with any of them (a stream, a
range, a pattern with its options), in the text block and in JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qex.cli.fastlogs import status_excerpts
from qex.cli.render_status import status_text
from qex.cli.status_print import load_excerpts
from qex.core.log_words import STATUS_STREAMS
from qex.core.logsel import Selection
from qex.core.state_words import ALL_WORDS

JOB_ID = "01234567-89ab-4def-8123-456789abcdef"
RECORD = {"id": JOB_ID, "name": "j", "command": ["x"], "cwd": "/", "state": "failed",
          "exit_code": 3, "submitted_at": 1.0, "started_at": 2.0, "finished_at": 3.0}
#: Log bytes: lines of text, blank lines, a missing last newline, bytes that are not UTF-8.
LOG = st.lists(st.sampled_from([b"line", b"", b"\xff\xfe", b"caf\xc3\xa9", b"a\rb", b"\t"]),
               max_size=40).map(b"\n".join) | st.binary(max_size=200)
STREAM_CHOICES = st.sampled_from([STATUS_STREAMS, ("stdout",), ("stderr",)])
#: One range at most (`--tail`, `--head`, `--lines`, `--all`).
RANGES = st.sampled_from([{}, {"tail": 0}, {"head": 0}, {"all": True}]) | st.integers(0, 45).flatmap(
    lambda n: st.sampled_from([{"tail": n}, {"head": n}, {"lines": (n + 1, n + 3)}]))
#: A pattern and its options, or none.
PATTERNS = st.just({}) | st.builds(
    lambda grep, fixed, context, number, most: {"grep": grep, "fixed": fixed,
                                                "context": context, "number": number,
                                                "max_matches": most},
    st.sampled_from(["line", "l.ne", "^$", "\\xff", "é", "x"]), st.booleans(),
    st.integers(0, 2), st.booleans(), st.none() | st.integers(0, 3))
SELECTIONS = st.builds(lambda r, p: Selection(**r, **p), RANGES, PATTERNS)


def _job_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: bytes | None,
             err: bytes | None) -> Path:
    """The job's directory under a state of its own, with the logs given (None: no file)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    job_dir = tmp_path / "qex" / "jobs" / JOB_ID
    job_dir.mkdir(parents=True, exist_ok=True)
    for stream, data in (("stdout", out), ("stderr", err)):
        path = job_dir / f"{stream}.log"
        if data is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(data)
    return job_dir


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(out=LOG, err=LOG)
def test_the_fast_excerpts_are_the_full_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             out: bytes, err: bytes) -> None:
    job_dir = _job_dir(tmp_path, monkeypatch, out, err)
    full = [(e.stream, e.selected.lines, e.notes()) for e in
            load_excerpts(job_dir, RECORD, sel=None)]
    found = status_excerpts(RECORD)
    assert found is not None
    fast = [e.as_text() for e in found]
    assert fast == full
    assert status_text(RECORD, now=9.0, excerpts=fast) == status_text(RECORD, now=9.0,
                                                                      excerpts=full)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150)
@given(out=st.none() | LOG, err=st.none() | LOG, sel=SELECTIONS, streams=STREAM_CHOICES,
       state=st.sampled_from(ALL_WORDS))
def test_the_chosen_excerpts_are_the_full_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: bytes | None, err: bytes | None,
        sel: Selection, streams: tuple[str, ...], state: str) -> None:
    """Any state, any of the options, missing and empty logs: the same lines, notes and
    JSON objects as the full body's."""
    job_dir = _job_dir(tmp_path, monkeypatch, out, err)
    record: dict[str, Any] = {**RECORD, "state": state}
    full = load_excerpts(job_dir, record, sel=sel, streams=streams)
    found = status_excerpts(record, sel, streams)
    assert found is not None
    assert [e.as_text() for e in found] == [(e.stream, e.selected.lines, e.notes())
                                           for e in full]
    assert [(e.stream, e.as_json()) for e in found] == [(e.stream, e.to_dict()) for e in full]


def test_what_the_full_body_must_word_is_left_to_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _job_dir(tmp_path, monkeypatch, None, b"x\n")
    assert status_excerpts({**RECORD, "logs_dropped": {"stdout_bytes": 5}}) is None
    (tmp_path / "qex" / "jobs" / JOB_ID / "stdout.log.tail").write_bytes(b"spill")
    assert status_excerpts(RECORD) is None
    assert status_excerpts(RECORD, Selection(tail=3)) is None
    assert status_excerpts(RECORD, Selection(tail=3), ("stderr",)) is not None


def test_a_job_shows_no_logs_unless_it_failed_or_a_range_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _job_dir(tmp_path, monkeypatch, b"out\n", b"err\n")
    for state in ("completed", "running", "queued"):
        assert status_excerpts({**RECORD, "state": state}) == []
        assert status_excerpts({**RECORD, "state": state}, Selection(), ("stdout",)) == []
        found = status_excerpts({**RECORD, "state": state}, Selection(head=1), ("stdout",))
        assert [e.as_text() for e in found or []] == [("stdout", ["out"], [])]
