"""A person's cancel of a queued job: its record written once, durably, before anything
else changes; and the cancels of one connection (`qex cancel GROUP` sends one per queued
job) wake the scheduler at most once per gap, as a run of submissions does."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from coordkit import make_coord

from qex.coordinator import control, submit
from qex.coordinator.state import Coordinator, Job
from qex.core.records import JobSpec, JobStatus
from qex.store import jobs as job_files


def _queued(coord: Coordinator, count: int) -> list[Job]:
    jobs = []
    for n in range(count):
        spec = JobSpec(id=f"{n:08d}-0000-4000-8000-000000000000", name=f"j{n}", cwd="/",
                       command=["true"], env={}, cpu=1, mem=1024, submitted_at=time.time())
        record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=0)
        job_dir = job_files.create_job_dir(coord.paths, spec.id)
        job_files.write_spec(job_dir, spec)
        job_files.write_status(job_dir, record)
        job = Job.from_records(spec, record, job_dir)
        coord.jobs[spec.id] = job
        coord.enqueue(job)
        jobs.append(job)
    return jobs


def test_a_cancel_writes_the_cancelled_record_once(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a trial write of the cancelled record came first and the record was then
    written again: two synced writes per job."""
    async def body() -> None:
        coord = make_coord(tmp_path)
        job = _queued(coord, 1)[0]
        written: list[str] = []
        real = job_files.write_status

        def counted(job_dir: Path, status: JobStatus, **kw: Any) -> dict[str, Any]:
            written.append(status.state)
            return real(job_dir, status, **kw)

        monkeypatch.setattr(job_files, "write_status", counted)
        assert control.handle_cancel(coord, {"op": "cancel", "id": job.id})["result"] == "ok"
        assert written == ["cancelled"]
        on_disk = job_files.read_status(job.dir)
        assert on_disk is not None and on_disk.state == "cancelled"
        assert on_disk.finished_at == job.record.finished_at is not None
        assert job.id not in coord.queue and job.record.state == "cancelled"

    asyncio.run(body())


def test_the_cancels_of_one_connection_wake_the_scheduler_once_per_gap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty cancels inside one gap: the first wakes the scheduler at once, the rest leave
    one wake-up due, which the connection's end (`finish`) brings forward; a cancel after
    the gap wakes it again. A cancel with no run (`wakes=None`) wakes it at once."""
    async def body() -> None:
        coord = make_coord(tmp_path)
        jobs = _queued(coord, 43)
        now = [100.0]
        monkeypatch.setattr(submit, "_clock", lambda: now[0])
        kicks: list[float] = []
        monkeypatch.setattr(coord, "kick", lambda: kicks.append(now[0]))
        wakes = submit.SubmissionWakes(coord)
        for job in jobs[:40]:
            answer = control.handle_cancel(coord, {"op": "cancel", "id": job.id}, wakes=wakes)
            assert answer["result"] == "ok"
            now[0] += 0.0005
        assert kicks == [100.0]
        wakes.finish()
        assert len(kicks) == 2
        now[0] += submit.GROUP_PASS_GAP_SECS
        control.handle_cancel(coord, {"op": "cancel", "id": jobs[40].id}, wakes=wakes)
        assert len(kicks) == 3
        control.handle_cancel(coord, {"op": "cancel", "id": jobs[41].id})
        assert len(kicks) == 4
        assert [j.record.state for j in jobs].count("cancelled") == 42
        assert coord.queue == [jobs[42].id]

    asyncio.run(body())


def test_a_refused_cancel_in_a_run_still_leaves_the_job_queued(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        first, second = _queued(coord, 2)
        wakes = submit.SubmissionWakes(coord)
        assert control.handle_cancel(coord, {"id": first.id}, wakes=wakes)["result"] == "ok"

        def full(*_args: Any, **_kwargs: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(job_files, "write_status", full)
        answer = control.handle_cancel(coord, {"id": second.id}, wakes=wakes)
        assert answer["result"] == "error" and "stays queued" in answer["message"]
        assert second.record.state == "queued" and coord.queue == [second.id]
        wakes.finish()

    asyncio.run(body())
