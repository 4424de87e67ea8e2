"""The queue's order with its set (`JobQueue`), the live jobs outside it (`JobTable.outside`),
the indexes that recovery restores, and the runner's choice of partial and whole passes."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from coordkit import add_job, make_coord
from hypothesis import given, settings
from hypothesis import strategies as st

from qex.coordinator import runner as runner_module
from qex.coordinator.events import EventHub
from qex.coordinator.job_queue import JobQueue
from qex.coordinator.recovery import recover
from qex.coordinator.runner import PARTIAL_FROM, WHOLE_PASS_MIN_SECS, Runner
from qex.coordinator.scheduling import PassResult
from qex.coordinator.state import Coordinator, Job
from qex.core.config import Config, Machine
from qex.core.records import JobSpec, JobStatus
from qex.core.scheduler_types import Decision, PeerLoad
from qex.store import jobs as job_files
from qex.store.paths import Paths


def test_the_queue_keeps_its_order_and_answers_membership_from_its_set() -> None:
    heard: list[tuple[str, str]] = []
    queue = JobQueue(["a", "b"], joined=lambda i: heard.append(("+", i)),
                     left=lambda i: heard.append(("-", i)))
    queue.append("c")
    queue.insert(0, "z")
    queue.append("a")  # already queued: stays where it is, and nobody hears of it
    assert list(queue) == ["z", "a", "b", "c"] == queue
    assert len(queue) == 4 and queue[-1] == "c" and queue[1:3] == ["a", "b"]
    assert "b" in queue and "x" not in queue
    queue.remove("a")
    assert not queue.discard("a")
    with pytest.raises(ValueError, match="not queued"):
        queue.remove("a")
    assert queue.discard("z")
    assert list(queue) == ["b", "c"]
    queue.clear()
    assert not queue and "b" not in queue
    assert heard == [("+", "a"), ("+", "b"), ("+", "c"), ("+", "z"), ("-", "a"), ("-", "z"),
                     ("-", "b"), ("-", "c")]


def _coordinator(root: Path) -> Coordinator:
    paths = Paths.from_env({"HOME": str(root), "XDG_STATE_HOME": str(root / "state"),
                            "XDG_CONFIG_HOME": str(root / "config")})
    return Coordinator(
        paths=paths, config=Config(), machine=Machine(cores=4, mem_total=16 * 1024**3),
        events=EventHub(retained=16, version="test", pid=1, started_at=0.0),
        started_at=0.0, idle_limit=3600.0, boot_id="boot",
    )


def _job_in_memory(coord: Coordinator, state: str) -> Job:
    job_id = str(uuid.uuid4())
    spec = JobSpec(id=job_id, name="j", cwd="/", command=["true"], env={}, cpu=1, mem=1024,
                   submitted_at=time.time())
    record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=0)
    record.state = state
    job = Job.from_records(spec, record, coord.paths.jobs_dir / job_id)
    coord.jobs[job_id] = job
    return job


OPERATIONS = st.lists(st.tuples(
    st.sampled_from(["submit", "start", "end", "requeue", "cancel", "elsewhere", "forget"]),
    st.integers(0, 1000)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(OPERATIONS)
def test_the_active_jobs_are_the_live_jobs_outside_the_queue(operations: list[Any]) -> None:
    """Whatever happens to the jobs (submitted, started, ended, put back into the queue,
    cancelled, run by another engine without the queue, removed), the active jobs found
    through the index are those a walk over every job finds."""
    coord = _coordinator(Path("/nonexistent-qex-test"))
    for operation, pick in operations:
        queued = list(coord.queue)
        active = [job for job in coord.jobs.values() if job.active]
        if operation == "submit":
            coord.enqueue(_job_in_memory(coord, "queued"))
        elif operation == "start" and queued:
            job = coord.jobs[queued[pick % len(queued)]]
            coord.queue.remove(job.id)
            job.record.state = "starting"
        elif operation == "end" and active:
            job = active[pick % len(active)]
            job.record.state = "completed"
            coord._left_queue(job)
        elif operation == "requeue" and active:
            job = active[pick % len(active)]
            job.record.state = "queued"
            coord.enqueue(job)
        elif operation == "cancel" and queued:
            job = coord.jobs[queued[pick % len(queued)]]
            job.record.state = "cancelled"
            coord._left_queue(job)
        elif operation == "elsewhere":
            _job_in_memory(coord, "running")  # a Slurm job: never in this machine's queue
        elif operation == "forget" and coord.jobs:
            ids = list(coord.jobs)
            coord.forget(coord.jobs[ids[pick % len(ids)]])
        walked = {job.id for job in coord.jobs.values()
                  if job.active and job.id not in coord.queue}
        assert {job.id for job in coord.started_jobs()} == walked
        assert len(set(coord.queue)) == len(coord.queue)
        assert coord.has_work() == any(not job.final for job in coord.jobs.values())


def test_the_active_jobs_are_found_without_reading_the_queued_ones(tmp_path: Path) -> None:
    """A pass asks for the active jobs several times; with thousands queued, each ask read
    every queued id. Only the jobs outside the queue are read now."""
    coord = make_coord(tmp_path)
    queued = [add_job(coord) for _ in range(50)]
    running = add_job(coord, state="running")
    read: list[str] = []

    class Counting(type(coord.jobs)):  # type: ignore[misc]
        def get(self, job_id: str, default: object = None) -> object:
            read.append(job_id)
            return super().get(job_id, default)

    coord.jobs.__class__ = Counting
    assert [j.id for j in coord.active_jobs()] == [running.id]
    assert read == [running.id]
    coord.queue.remove(queued[3].id)  # it starts
    queued[3].record.state = "starting"
    read.clear()
    assert [j.id for j in coord.active_jobs()] == [running.id, queued[3].id]
    assert read == [running.id, queued[3].id]


def _write_job(coord: Coordinator, **fields: Any) -> str:
    job_id = str(uuid.uuid4())
    limit = fields.pop("max_queue_time", None)
    spec = JobSpec(id=job_id, name="j", cwd="/", command=["true"], env={}, cpu=1, mem=1024,
                   submitted_at=time.time(), max_queue_time=limit)
    record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=0)
    for key, value in fields.items():
        setattr(record, key, value)
    job_dir = job_files.create_job_dir(coord.paths, job_id)
    job_files.write_spec(job_dir, spec)
    job_files.write_status(job_dir, record)
    return job_id


def test_recovery_indexes_the_queue_as_submissions_do(tmp_path: Path) -> None:
    """A coordinator that starts again finds the queued jobs with a queue time limit (their
    deadlines wake its loop) and those that wait for others (the end of a job they wait
    for wakes a pass). Before, recovery set the queue alone: neither index held them."""
    first = make_coord(tmp_path)
    running = _write_job(first, state="completed", exit_code=0)
    timed = _write_job(first, max_queue_time=30.0)
    waiting = _write_job(first, after=[running])
    plain = _write_job(first)
    again = _coordinator(tmp_path)
    again.forkserver = None
    asyncio.run(_recover(again))
    assert list(again.queue) == [timed, waiting, plain]
    assert [job.id for job in again.timed_queued_jobs()] == [timed]
    assert [job.id for job in again.dependent_queued_jobs()] == [waiting]
    assert again.awaited(running)
    delay = Runner(again, None, lambda: 0, None).next_delay(time.time())
    assert delay is not None and delay <= 30.01


async def _recover(coord: Coordinator) -> None:
    recover(coord)


class _Passes:
    """`run_pass` as the runner calls it: records whether each pass might be partial, and
    answers with a decision that read the whole queue or not."""

    def __init__(self) -> None:
        self.partial: list[bool] = []
        self.complete = True

    def __call__(self, coord: Coordinator, peers: PeerLoad, *, partial: bool = False,
                 pause: object = None) -> PassResult:
        self.partial.append(partial)
        return PassResult(Decision(complete=not partial or self.complete), external_wait=False)


def test_a_long_queue_gets_partial_passes_between_whole_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    coord = make_coord(tmp_path)
    for _ in range(PARTIAL_FROM + 1):
        coord.enqueue(_job_in_memory(coord, "queued"))
    passes = _Passes()
    monkeypatch.setattr(runner_module, "run_pass", passes)
    runner = Runner(coord, None, lambda: 0, None)
    now = time.time()
    runner.scheduler_pass(PeerLoad(), now)  # the first pass reads every job
    runner.scheduler_pass(PeerLoad(), now)
    assert passes.partial == [False, True]
    assert runner.partial_until >= now + WHOLE_PASS_MIN_SECS - 0.01
    assert not runner.unread  # that partial pass read every job all the same
    passes.complete = False
    runner.scheduler_pass(PeerLoad(), now)
    assert runner.unread
    delay = runner.next_delay(now)
    assert delay is not None and delay <= runner.partial_until - now + 1e-6  # the whole pass
    runner.scheduler_pass(PeerLoad(), runner.partial_until)
    assert passes.partial[-1] is False and not runner.unread


def test_a_pause_a_resume_or_a_new_budget_makes_the_next_pass_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Such a change may change the reason of every queued job, and a person who paused
    or resumed looks for it at once: the pass after it reads the whole queue."""
    from qex.store.pause import PauseRecord

    coord = make_coord(tmp_path)
    for _ in range(PARTIAL_FROM + 1):
        coord.enqueue(_job_in_memory(coord, "queued"))
    passes = _Passes()
    passes.complete = False
    monkeypatch.setattr(runner_module, "run_pass", passes)
    runner = Runner(coord, None, lambda: 0, None)
    now = time.time()
    runner.scheduler_pass(PeerLoad(), now)
    runner.partial_until = now + 60.0
    runner.scheduler_pass(PeerLoad(), now)
    coord.pauses.queue = PauseRecord(paused_at=now, reason="by hand")
    runner.scheduler_pass(PeerLoad(), now)
    runner.partial_until = now + 60.0
    runner.scheduler_pass(PeerLoad(), now)
    coord.pauses.queue = None
    runner.scheduler_pass(PeerLoad(), now)
    runner.partial_until = now + 60.0
    monkeypatch.setattr(coord, "cpu_budget", lambda: 1)
    runner.scheduler_pass(PeerLoad(), now)
    coord.pauses.queue = PauseRecord(paused_at=now, reason="until later", until=now + 5.0)
    runner.scheduler_pass(PeerLoad(), now)
    runner.partial_until = now + 60.0
    runner.scheduler_pass(PeerLoad(), now + 1.0)

    async def ended() -> None:  # the pause's end credits the queued jobs, written later
        runner.scheduler_pass(PeerLoad(), now + 6.0)  # it ends before this pass judges

    asyncio.run(ended())
    assert coord.pauses.queue is None
    assert passes.partial == [False, True, False, True, False, False, False, True, False]


def test_a_short_queue_and_a_due_queue_time_limit_get_whole_passes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    coord = make_coord(tmp_path)
    for _ in range(PARTIAL_FROM):
        coord.enqueue(_job_in_memory(coord, "queued"))
    passes = _Passes()
    monkeypatch.setattr(runner_module, "run_pass", passes)
    runner = Runner(coord, None, lambda: 0, None)
    now = time.time()
    runner.scheduler_pass(PeerLoad(), now)
    runner.scheduler_pass(PeerLoad(), now)
    assert passes.partial == [False, False]  # a queue of PARTIAL_FROM is read whole
    timed = _job_in_memory(coord, "queued")
    timed.max_queue_time = 5.0
    coord.enqueue(timed)  # one more: long enough for partial passes, after a whole one
    runner.scheduler_pass(PeerLoad(), now)
    runner.scheduler_pass(PeerLoad(), now)
    assert passes.partial[-2:] == [False, True]
    # Once its limit is over, the pass reads every job: the job may stand behind the point
    # where a partial walk ends, and its deadline would wake the loop again and again.
    due = timed.record.submitted_at + 5.0
    runner.partial_until = due + 60.0
    passes.complete = False  # partial passes that end early leave `partial_until` as it is
    runner.scheduler_pass(PeerLoad(), due - 0.5)
    assert passes.partial[-1] is True
    runner.scheduler_pass(PeerLoad(), due)
    assert passes.partial[-1] is False


def test_a_partial_pass_makes_views_only_of_the_jobs_it_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the coordinator: 300 jobs behind busy slots (four cores, four running jobs of one
    core each), one of them after a job that runs. A partial pass takes the view of the
    head (and of the next job, where it finds that its walk ends), a whole pass the view of
    every job; the head's reason is the same, and the dependent job is judged from the
    index in both."""
    from qex.coordinator import scheduling
    from qex.core.scheduler import decide

    coord = make_coord(tmp_path)
    holders = [add_job(coord, state="running", started_at=time.time()) for _ in range(4)]
    queued = [_job_in_memory(coord, "queued") for _ in range(300)]
    queued[150].record.after = [holders[0].id]
    for job in queued:
        coord.enqueue(job)
    made: list[str] = []
    real = scheduling.job_view

    def counting(job: Job) -> Any:
        made.append(job.id)
        return real(job)

    monkeypatch.setattr(scheduling, "job_view", counting)
    now = time.time()
    partial = decide(scheduling.build_snapshot(coord, now, PeerLoad(), partial=True))
    read = [job_id for job_id in made if job_id not in {h.id for h in holders}]
    assert read == [queued[150].id, queued[0].id, queued[1].id]
    assert not partial.complete and not partial.starts
    made.clear()
    whole = decide(scheduling.build_snapshot(coord, now, PeerLoad()))
    assert whole.complete and len(set(made)) == 300 + 4
    assert partial.waits[queued[0].id] == whole.waits[queued[0].id]
    assert partial.head_id == whole.head_id == queued[0].id
    assert queued[150].id in whole.waits and queued[150].id not in partial.waits
