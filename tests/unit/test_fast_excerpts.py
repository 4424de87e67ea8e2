"""The fast path's excerpts of a stopped job's logs (`fastlogs.status_excerpts`) are the ones
the full body chooses (`status_print.load_excerpts`), and the block shows them the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qex.cli.fastlogs import status_excerpts
from qex.cli.render_status import status_text
from qex.cli.status_print import load_excerpts

JOB_ID = "01234567-89ab-4def-8123-456789abcdef"
RECORD = {"id": JOB_ID, "name": "j", "command": ["x"], "cwd": "/", "state": "failed",
          "exit_code": 3, "submitted_at": 1.0, "started_at": 2.0, "finished_at": 3.0}
#: Log bytes: lines of text, blank lines, a missing last newline, bytes that are not UTF-8.
LOG = st.lists(st.sampled_from([b"line", b"", b"\xff\xfe", b"caf\xc3\xa9", b"a\rb", b"\t"]),
               max_size=40).map(b"\n".join) | st.binary(max_size=200)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(out=LOG, err=LOG)
def test_the_fast_excerpts_are_the_full_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             out: bytes, err: bytes) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    job_dir = tmp_path / "qex" / "jobs" / JOB_ID
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / "stdout.log").write_bytes(out)
    (job_dir / "stderr.log").write_bytes(err)
    full = [(e.stream, e.selected.lines, e.notes()) for e in
            load_excerpts(job_dir, RECORD, sel=None)]
    fast = status_excerpts(RECORD)
    assert fast == full
    assert status_text(RECORD, now=9.0, excerpts=fast) == status_text(RECORD, now=9.0,
                                                                      excerpts=full)


def test_what_the_full_body_must_word_is_left_to_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    job_dir = tmp_path / "qex" / "jobs" / JOB_ID
    job_dir.mkdir(parents=True)
    (job_dir / "stderr.log").write_bytes(b"x\n")
    assert status_excerpts({**RECORD, "logs_dropped": {"stdout_bytes": 5}}) is None
    (job_dir / "stdout.log.tail").write_bytes(b"spill")
    assert status_excerpts(RECORD) is None
