"""The rules behind the fault handling, tested in-process (no root needed, fast)."""

from __future__ import annotations

import asyncio
import errno
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from coordkit import make_coord

from qex.core.states import Exit, exit_code_for
from qex.core.units import UnitError, parse_count, parse_duration, parse_size


def test_a_lost_result_is_120_and_a_job_that_never_ran_is_121() -> None:
    ran = {"state": "failed", "exit_code": None, "signal": None, "attempts": 1}
    never = {"state": "failed", "exit_code": None, "signal": None, "attempts": 0}
    assert exit_code_for(ran) == Exit.RESULT_LOST == 120
    assert exit_code_for(never) == Exit.QEX_FAILED


@pytest.mark.parametrize("call", [
    lambda: parse_size("999999999999999999999999GB"),
    lambda: parse_size(2**61),
    lambda: parse_count(1e308, what="the priority"),
    lambda: parse_count("9" * 40, what="the priority"),
    lambda: parse_duration("99999999999d"),
    lambda: parse_duration(1e308),
])
def test_values_no_machine_has_are_refused(call: Any) -> None:
    with pytest.raises(UnitError):
        call()


def test_the_wire_refuses_absurd_claims() -> None:
    from qex.coordinator.submit import spec_problems

    base = {"id": "0" * 8 + "-0000-4000-8000-" + "0" * 12, "command": ["true"], "cwd": "/",
            "env": {}, "cpu": 1, "mem": 1, "name": "j", "submitted_at": 1.0}
    assert spec_problems(base) == []
    for field, value in (("priority", 10**300), ("mem", 2**70), ("cpu", 2**40),
                         ("timeout", 1e308)):
        assert spec_problems({**base, field: value}), field


def test_deep_nesting_on_the_wire_is_a_protocol_error() -> None:
    from qex.core import protocol

    with pytest.raises(protocol.ProtocolError):
        protocol.decode(b'{"op":"list","x":' + b"[" * 100_000)


def _run_python(code: str, out: Path, env: dict[str, str]) -> None:
    with open(out, "ab") as handle:
        subprocess.run([sys.executable, "-c", textwrap.dedent(code)], stdout=handle,
                       stderr=handle, env={**os.environ, **env}, check=True, timeout=60)


def test_daemon_log_is_capped_rotated_and_readable(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    _run_python(f"""
        from pathlib import Path
        from qex.coordinator.log import configure, log
        configure(Path({str(log)!r}))
        for i in range(2000):
            log(f"line {{i}} " + "x" * 60)
    """, log, {"QEX_DAEMON_LOG_MAX_BYTES": "8192"})
    assert log.stat().st_size <= 8192 + 200
    older = tmp_path / "daemon.log.1"
    assert older.exists() and older.stat().st_size <= 8192 + 200
    assert "line 1999 " in log.read_text()
    first = log.read_text().splitlines()[0]
    assert re.match(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\] line ", first), first


def test_a_repeating_fault_is_logged_once_per_cause(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    _run_python("""
        from qex.coordinator.log import log_repeating
        for _ in range(500):
            log_repeating("emfile", "accept failed: Too many open files")
        log_repeating("enospc", "the disk is full")
    """, log, {})
    text = log.read_text()
    assert text.count("Too many open files") == 1
    assert "happened 499 more time(s)" in text


def test_the_supervisor_log_is_capped_and_never_raises(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    _run_python("""
        from qex.supervisor.runner import say, SAY_LIMIT_BYTES
        for i in range(20000):
            say("a line that repeats " * 3)
    """, log, {})
    from qex.supervisor.runner import SAY_LIMIT_BYTES

    assert log.stat().st_size <= SAY_LIMIT_BYTES + 200
    assert "reached its cap" in log.read_text()
    # A full disk on descriptor 2: say() swallows the error.
    with open("/dev/full", "wb") as full:
        subprocess.run([sys.executable, "-c",
                        "from qex.supervisor.runner import say\nsay('x')\nprint('alive')"],
                       stderr=full, stdout=subprocess.PIPE, check=True, timeout=60)


def test_a_log_write_error_is_counted_with_its_cause(tmp_path: Path) -> None:
    from qex.supervisor.logcap import CappedLog

    log = CappedLog(Path("/dev/full"), None, truncate=False)
    log.write(b"one\ntwo\n")
    log.finish()
    assert (log.dropped_bytes, log.dropped_lines) == (8, 2)
    assert log.write_error


def _queued_job(coord: Any) -> Any:
    import time
    import uuid

    from qex.coordinator.state import Job
    from qex.core.records import JobSpec, JobStatus
    from qex.store import jobs as job_files

    job_id = str(uuid.uuid4())
    spec = JobSpec(id=job_id, name="j", cwd="/", command=["true"], env={}, cpu=1, mem=1024,
                   submitted_at=time.time())
    record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=2)
    job_dir = job_files.create_job_dir(coord.paths, job_id)
    job_files.write_spec(job_dir, spec)
    job_files.write_status(job_dir, record)
    job = Job.from_records(spec, record, job_dir)
    coord.jobs[job_id] = job
    coord.enqueue(job)
    return job


def _full(*_args: Any, **_kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_start_the_disk_refuses_leaves_the_job_queued(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.coordinator import scheduling
    from qex.store import jobs as job_files

    async def body() -> None:
        coord = make_coord(tmp_path)
        job = _queued_job(coord)
        monkeypatch.setattr(job_files, "write_status", _full)
        scheduling.start_job(coord, job, {}, False, None)
        assert job.record.state == "queued" and job.id in coord.queue
        assert "disk space" in (job.record.blocked_reason or "")
        assert coord.disk_wait_until is not None
        assert job_files.read_status(job.dir).state == "queued"  # type: ignore[union-attr]

    asyncio.run(body())


def test_a_refused_record_is_kept_and_retried_with_back_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.coordinator import state as state_module
    from qex.core.states import State
    from qex.store import jobs as job_files

    async def body() -> None:
        coord = make_coord(tmp_path)
        job = _queued_job(coord)
        real = job_files.write_status
        monkeypatch.setattr(job_files, "write_status", _full)
        coord.finish(job, State.CANCELLED, error="cancelled", hook=False)
        assert job.id in coord.unwritten
        first = coord.write_backoff
        coord.retry_unwritten()
        assert coord.write_backoff == min(first * 2, state_module.WRITE_RETRY_MAX_SECS)
        assert coord.write_retry_at is not None
        monkeypatch.setattr(job_files, "write_status", real)
        coord.retry_unwritten()
        assert not coord.unwritten and coord.write_problem is None
        assert job_files.read_status(job.dir).state == "cancelled"  # type: ignore[union-attr]

    asyncio.run(body())


def test_a_cancel_the_disk_refuses_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.coordinator import control
    from qex.store import jobs as job_files

    async def body() -> None:
        coord = make_coord(tmp_path)
        job = _queued_job(coord)
        monkeypatch.setattr(job_files, "write_status", _full)
        before, seq = job.record, coord.events.last_seq
        answer = control.handle_cancel(coord, {"id": job.id})
        assert answer["result"] == "error" and "stays queued" in answer["message"]
        assert "the disk is full" in answer["message"]
        assert job.record is before and job.id in coord.queue
        assert (job.record.state, job.record.finished_at) == ("queued", None)
        assert not coord.unwritten  # nothing left in memory to be written later
        monkeypatch.undo()
        assert job_files.read_status(job.dir).state == "queued"  # type: ignore[union-attr]
        assert coord.events.last_seq == seq  # no reader heard of a cancel

    asyncio.run(body())
