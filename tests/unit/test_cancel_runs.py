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
from qex.core import protocol
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


# -- `cancel_many`: the cancels of one request, their records written together --------------

def _answers_one_by_one(tmp_path: Path, ids: list[object], setup: Any) -> list[dict[str, Any]]:
    """What a request per id answers, on a coordinator set up as the batch's was."""
    coord = make_coord(tmp_path / "alone")
    setup(coord)
    return [control.handle_cancel(coord, {"op": "cancel", "id": job_id}) for job_id in ids]


def test_a_batch_answers_as_a_request_per_job_would(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Queued jobs, a job named twice, a running one, a stopped one, an unknown id and an
    id that is no text: each answer is the one a `cancel` of its own gets, in order; the
    queued jobs' records are written in one `write_statuses` and none alone."""
    def setup(coord: Coordinator) -> list[Job]:
        jobs = _queued(coord, 6)
        jobs[4].record.state = "running"
        coord.queue.discard(jobs[4].id)
        assert control.handle_cancel(coord, {"id": jobs[5].id})["result"] == "ok"
        return jobs

    async def body() -> None:
        coord = make_coord(tmp_path / "batch")
        jobs = setup(coord)
        ids: list[object] = [jobs[2].id, jobs[0].id, jobs[4].id, jobs[2].id, "nope",
                             jobs[5].id, 7, jobs[1].id]
        batches: list[int] = []
        real = job_files.write_statuses
        monkeypatch.setattr(job_files, "write_statuses",
                            lambda items: (batches.append(len(items)), real(items))[1])
        monkeypatch.setattr(job_files, "write_status", None)  # a write alone would fail
        answers = control.cancel_batch(coord, ids)
        monkeypatch.undo()
        assert answers == _answers_one_by_one(tmp_path, ids, setup)
        assert [a["result"] for a in answers] == ["ok", "ok", "error", "error", "error",
                                                  "error", "error", "ok"]
        assert batches == [3]
        assert coord.queue == [jobs[3].id]
        for job in (jobs[0], jobs[1], jobs[2]):
            on_disk = job_files.read_status(job.dir)
            assert on_disk is not None and on_disk.state == "cancelled"
            assert on_disk.finished_at == job.record.finished_at is not None
            assert job.record.state == "cancelled" and job.id not in coord.queue
        assert job_files.read_status(jobs[3].dir).state == "queued"  # type: ignore[union-attr]

    asyncio.run(body())


@pytest.mark.parametrize("alone_works", [True, False])
def test_a_batch_the_disk_refuses_is_tried_job_by_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alone_works: bool) -> None:
    """A batch whose write fails changes nothing; each job is then cancelled alone, and a
    job whose own write fails too is refused and stays queued, unseen by any reader."""
    async def body() -> None:
        coord = make_coord(tmp_path)
        jobs = _queued(coord, 4)
        seq = coord.events.last_seq

        def full(*_args: Any, **_kwargs: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(job_files, "write_statuses", full)
        if not alone_works:
            monkeypatch.setattr(job_files, "write_status", full)
        answers = control.cancel_batch(coord, [job.id for job in jobs])
        if alone_works:
            assert answers == [protocol.ok() for _job in jobs]
            assert coord.queue == []
            assert all(job_files.read_status(j.dir).state == "cancelled"  # type: ignore[union-attr]
                       for j in jobs)
        else:
            assert all(a["result"] == "error" and "stays queued" in a["message"]
                       for a in answers)
            assert coord.queue == [job.id for job in jobs]
            assert {job.record.state for job in jobs} == {"queued"}
            assert coord.events.last_seq == seq
            assert all(job_files.read_status(j.dir).state == "queued"  # type: ignore[union-attr]
                       for j in jobs)

    asyncio.run(body())


def test_a_write_of_several_records_that_fails_leaves_every_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`write_statuses` renames nothing before every file's data is synced: a sync that
    fails leaves each old record and no temp file."""
    from qex.store import atomic

    coord = make_coord(tmp_path)
    jobs = _queued(coord, 3)
    real = atomic.fsync_together
    calls: list[int] = []

    def failing(fds: Any, **kw: Any) -> None:
        calls.append(len(fds))
        if not kw.get("directories"):
            raise OSError(5, "Input/output error")
        real(fds, **kw)

    monkeypatch.setattr(atomic, "fsync_together", failing)
    final = [JobStatus.from_dict({**job.record.to_dict(), "state": "cancelled"}) for job in jobs]
    with pytest.raises(OSError):
        job_files.write_statuses([(job.dir, rec) for job, rec in zip(jobs, final, strict=True)])
    assert calls == [3]
    for job in jobs:
        assert job_files.read_status(job.dir).state == "queued"  # type: ignore[union-attr]
        assert sorted(p.name for p in job.dir.iterdir()) == ["spec.json", "status.json"]


def test_a_batch_wakes_the_scheduler_once(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        jobs = _queued(coord, 20)
        monkeypatch.setattr(submit, "_clock", lambda: 100.0)
        kicks: list[None] = []
        monkeypatch.setattr(coord, "kick", lambda: kicks.append(None))
        control.cancel_batch(coord, [job.id for job in jobs[:10]])
        assert len(kicks) == 1
        wakes = submit.SubmissionWakes(coord)
        control.cancel_batch(coord, [job.id for job in jobs[10:15]], wakes=wakes)
        control.cancel_batch(coord, [job.id for job in jobs[15:]], wakes=wakes)
        assert len(kicks) == 2  # the second batch falls in the run's gap
        wakes.finish()
        assert len(kicks) == 3
        control.cancel_batch(coord, ["nope"])
        assert len(kicks) == 3  # nothing left the queue

    asyncio.run(body())


def test_the_request_goes_in_batches_and_serves_others_between(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """150 ids: three batches, the loop free between them, the answers in order; a request
    without a list of ids is refused with nothing cancelled."""
    from qex.coordinator.server import Server

    class _Client:
        def __init__(self, coord: Coordinator) -> None:
            self.wakes = submit.SubmissionWakes(coord)

        def run_wakes(self, _coord: Coordinator) -> submit.SubmissionWakes:
            return self.wakes

    async def body() -> None:
        coord = make_coord(tmp_path)
        jobs = _queued(coord, 150)
        server = Server(coord)
        client: Any = _Client(coord)
        sizes: list[int] = []
        between: list[int] = []
        real = control.cancel_batch

        def counted(coord_: Coordinator, ids: Any, **kw: Any) -> list[dict[str, Any]]:
            sizes.append(len(ids))
            return real(coord_, ids, **kw)

        async def other() -> None:
            while len(sizes) < 3:
                between.append(len(sizes))
                await asyncio.sleep(0)

        monkeypatch.setattr(control, "cancel_batch", counted)
        ids = [job.id for job in jobs]
        refused = await server._cancel_many(client, {"op": "cancel_many", "ids": ids[0]})
        assert refused["result"] == "error" and refused["kind"] == protocol.REFUSED
        watcher = asyncio.ensure_future(other())
        answer = await server._cancel_many(client, {"op": "cancel_many",
                                                    "ids": [*ids[:149], "nope", ids[149]]})
        await watcher
        client.wakes.finish()
        assert sizes == [64, 64, 23]
        assert {1, 2} <= set(between)  # another task ran between the batches
        assert answer["result"] == "ok"
        assert [a["result"] for a in answer["answers"]] == ["ok"] * 149 + ["error", "ok"]
        assert coord.queue == [] and {job.record.state for job in jobs} == {"cancelled"}

    asyncio.run(body())


def test_several_records_share_two_rounds_of_syncs(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file's data in one round of syncs side by side, then every job directory in
    another: the renames are durable as `write_status`'s are."""
    from qex.store import atomic

    coord = make_coord(tmp_path)
    jobs = _queued(coord, 3)
    real = atomic.fsync_together
    rounds: list[tuple[int, bool]] = []

    def counted(fds: Any, **kw: Any) -> None:
        rounds.append((len(fds), bool(kw.get("directories"))))
        real(fds, **kw)

    monkeypatch.setattr(atomic, "fsync_together", counted)
    final = [JobStatus.from_dict({**job.record.to_dict(), "state": "cancelled"}) for job in jobs]
    job_files.write_statuses([(job.dir, rec) for job, rec in zip(jobs, final, strict=True)])
    assert rounds == [(3, False), (3, True)]
    assert [job_files.read_status(job.dir) for job in jobs] == final


# -- the skips and expiries of one pass, their records written together ----------------------

def test_a_pass_writes_its_skips_and_expiries_in_batches(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """150 skips and 3 expiries: batches of 64, 64 and 22, then one of 3; each record on the
    disk final with its reason; the scheduler woken once; a job that a pass names twice, or
    that no longer waits, is finished once or not at all."""
    from qex.coordinator import scheduling
    from qex.core.scheduler_types import Decision, Expiry, Skip

    async def body() -> None:
        coord = make_coord(tmp_path)
        jobs = _queued(coord, 155)
        jobs[154].record.state = "running"
        coord.queue.discard(jobs[154].id)
        batches: list[int] = []
        real = job_files.write_statuses
        monkeypatch.setattr(job_files, "write_statuses",
                            lambda items: (batches.append(len(items)), real(items))[1])
        monkeypatch.setattr(job_files, "write_status", None)  # a write alone would fail
        kicks: list[None] = []
        monkeypatch.setattr(coord, "kick", lambda: kicks.append(None))
        skips = (*(Skip(id=job.id, error=f"needs {job.id[:4]}", caused_by="c0ffee")
                   for job in [*jobs[:150], jobs[154]]),
                 Skip(id=jobs[3].id, error="named again", caused_by=None))
        expiries = tuple(Expiry(id=job.id, error="waited too long")
                         for job in [*jobs[150:153], jobs[0]])
        scheduling.apply(coord, Decision(skips=skips, expiries=expiries))
        assert batches == [64, 64, 22, 3]
        assert len(kicks) == 1
        assert coord.queue == [jobs[153].id]
        for job in jobs[:150]:
            on_disk = job_files.read_status(job.dir)
            assert on_disk == job.record
            assert (on_disk.state, on_disk.error, on_disk.caused_by) == (
                "skipped", f"needs {job.id[:4]}", "c0ffee")
        assert [job_files.read_status(j.dir).state  # type: ignore[union-attr]
                for j in jobs[150:154]] == ["expired", "expired", "expired", "queued"]
        assert jobs[154].record.state == "running"

    asyncio.run(body())


def test_skips_the_disk_refuses_stay_in_memory_and_are_tried_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unlike a person's cancel, a skip is not refused: the jobs are skipped in memory, each
    is tried alone, and a record that cannot be written waits for the next try."""
    from qex.coordinator import scheduling
    from qex.core.scheduler_types import Decision, Skip

    async def body() -> None:
        coord = make_coord(tmp_path)
        jobs = _queued(coord, 5)
        real_one = job_files.write_status

        def full(*_args: Any, **_kwargs: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(job_files, "write_statuses", full)
        monkeypatch.setattr(job_files, "write_status", full)
        scheduling.apply(coord, Decision(skips=tuple(
            Skip(id=job.id, error="no", caused_by=None) for job in jobs[:4])))
        assert [job.record.state for job in jobs] == ["skipped"] * 4 + ["queued"]
        assert coord.unwritten == {job.id for job in jobs[:4]}
        assert coord.queue == [jobs[4].id]
        assert {job_files.read_status(j.dir).state for j in jobs} == {"queued"}  # type: ignore[union-attr]
        monkeypatch.setattr(job_files, "write_status", real_one)
        coord.retry_unwritten()
        assert coord.unwritten == set()
        assert [job_files.read_status(j.dir).state  # type: ignore[union-attr]
                for j in jobs] == ["skipped"] * 4 + ["queued"]

    asyncio.run(body())
