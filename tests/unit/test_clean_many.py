"""`clean_many`: the deletions of `qex clean` and `qex gc` in one request, answered as a
`clean` per record would be, in order; and the command's side of it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from coordkit import make_coord
from many_conn import ManyConn

from qex.cli import reach
from qex.coordinator import control, submit
from qex.coordinator.state import Coordinator, Job
from qex.core import protocol
from qex.core.records import JobSpec, JobStatus
from qex.store import jobs as job_files


def _stopped(coord: Coordinator, count: int, *, needs: str | None = None) -> list[Job]:
    jobs = []
    for n in range(count):
        spec = JobSpec(id=f"{n:08d}-0000-4000-8000-00000000000{int(needs is not None)}",
                       name=f"j{n}", cwd="/", command=["true"], env={}, cpu=1, mem=1024,
                       submitted_at=time.time(), needs=[needs] if needs else [])
        record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=0)
        record.state = "completed" if needs is None else "queued"
        job_dir = job_files.create_job_dir(coord.paths, spec.id)
        job_files.write_spec(job_dir, spec)
        job_files.write_status(job_dir, record)
        job = Job.from_records(spec, record, job_dir)
        coord.jobs[spec.id] = job
        if needs is not None:
            coord.enqueue(job)
        jobs.append(job)
    return jobs


def test_the_request_answers_each_clean_in_order_in_batches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """130 stopped jobs, one that a queued job needs, an unknown id and one named twice:
    what a `clean` of each would answer, in order, each record deleted or kept as said."""
    from qex.coordinator.server import Server

    class _Client:
        def run_wakes(self, coord: Coordinator) -> submit.SubmissionWakes:
            return submit.SubmissionWakes(coord)

    async def body() -> None:
        coord = make_coord(tmp_path)
        jobs = _stopped(coord, 130)
        waiting = _stopped(coord, 1, needs=jobs[5].id)[0]
        turns: list[int] = []
        real = control.handle_clean

        def counted(coord_: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
            turns.append(len(turns))
            return real(coord_, message)

        monkeypatch.setattr(control, "handle_clean", counted)
        ids = [job.id for job in jobs]
        answer = await Server(coord)._clean_many(
            _Client(), {"op": "clean_many", "ids": [*ids, "nope", ids[0], waiting.id]})
        assert answer["result"] == "ok"
        results = answer["answers"]
        assert len(results) == 133 and len(turns) == 133
        assert [r["result"] for r in results[:130]] == ["ok"] * 5 + ["error"] + ["ok"] * 124
        assert "needed by" in results[5]["message"]
        assert [r.get("kind") for r in results[130:]] == [
            protocol.NO_SUCH_JOB, protocol.NO_SUCH_JOB, protocol.WRONG_STATE]
        assert set(coord.jobs) == {jobs[5].id, waiting.id}
        assert sorted(p.name for p in coord.paths.jobs_dir.iterdir()) == sorted(
            [jobs[5].id, waiting.id])

    asyncio.run(body())


@pytest.mark.parametrize("knows_many", [True, False])
def test_the_command_reads_a_refusal_per_record(knows_many: bool) -> None:
    """One request, or a `clean` per job from an older coordinator: either way a refusal
    (shown on one line) or None for each job, in order."""
    conn: Any = ManyConn("clean", knows_many=knows_many, refused={
        "b": protocol.error(protocol.WRONG_STATE, "held\nby a job")})
    found = reach.cleaned(conn, ["a", "b", "c"])
    assert [None if f is None else (f.kind, f.message) for f in found] == [
        None, (protocol.WRONG_STATE, "held by a job"), None]
    assert conn.sent == [("clean_many", ["a", "b", "c"])] + (
        [] if knows_many else [("clean", "a"), ("clean", "b"), ("clean", "c")])
    assert reach.cleaned(conn, []) == []
