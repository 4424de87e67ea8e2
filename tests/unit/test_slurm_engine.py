"""The coordinator's side of the Slurm engine against a fake Slurm: one squeue for all jobs,
the records of jobs Slurm ended without a result, OUT_OF_MEMORY and its larger claim, and a
dependent whose needed job failed. The real Slurm is in tests/slurm."""

from __future__ import annotations

import asyncio
import errno
import json
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from qex.coordinator import recovery
from qex.coordinator.events import EventHub
from qex.coordinator.state import Coordinator, Job
from qex.coordinator.submit import handle_submit
from qex.core.config import Config, EngineSection, Machine, RetrySection
from qex.core.records import JobSpec, JobStatus
from qex.core.states import Exit, State, exit_code_for
from qex.engine.base import engine_for
from qex.engine.slurm import mapping
from qex.engine.slurm.engine import SlurmEngine
from qex.platform import procs
from qex.store import jobs as job_files
from qex.store.paths import Paths

MB = 1024 * 1024


class FakeSlurm:
    """sbatch/squeue/scancel/release/set_dependency, recorded; states set by the test."""

    def __init__(self) -> None:
        self.next_id = 100
        self.submitted: dict[str, list[str]] = {}
        self.states: dict[str, mapping.SlurmJob] = {}
        self.squeue_calls: list[list[str]] = []
        self.cancelled: list[str] = []
        self.released: list[str] = []
        self.dependencies: dict[str, str] = {}

    async def sbatch(self, args: Sequence[str], script: str) -> str:
        self.next_id += 1
        slurm_id = str(self.next_id)
        self.submitted[slurm_id] = list(args)
        self.states[slurm_id] = mapping.SlurmJob("PENDING", "JobHeldUser")
        assert Path(script).is_file()
        return slurm_id

    async def release(self, slurm_id: str) -> None:
        self.released.append(slurm_id)
        self.states[slurm_id] = mapping.SlurmJob("PENDING", "None")

    async def squeue(self, ids: Sequence[str]) -> dict[str, mapping.SlurmJob]:
        self.squeue_calls.append(list(ids))
        return {i: self.states[i] for i in ids if i in self.states}

    async def scancel(self, slurm_id: str, signal_name: str | None = None) -> None:
        self.cancelled.append(slurm_id)
        self.states[slurm_id] = mapping.SlurmJob("CANCELLED", "None")

    async def set_dependency(self, slurm_id: str, text: str) -> None:
        self.dependencies[slurm_id] = text

    async def ids_named(self, name: str) -> list[str]:
        return [i for i, args in self.submitted.items() if f"--job-name={name}" in args
                and self.states[i].state == "PENDING"]


SINFO = [mapping.Partition(name="main", default=True, cpus=8, mem_mb=64000)]


def make_coord(tmp_path: Path, **retry: Any) -> Coordinator:
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
                            "XDG_CONFIG_HOME": str(tmp_path / "config")})
    paths.jobs_dir.mkdir(parents=True)
    paths.run_dir.mkdir(parents=True)
    config = Config(engine=EngineSection(kind="slurm", poll=3600.0),
                    retry=RetrySection(**retry) if retry else RetrySection())
    return Coordinator(
        paths=paths, config=config, machine=Machine(cores=4, mem_total=16 * 1024**3),
        events=EventHub(retained=64, version="test", pid=1, started_at=0.0),
        started_at=0.0, idle_limit=3600.0, boot_id=procs.boot_id(),
    )


def fake_engine(coord: Coordinator) -> tuple[SlurmEngine, FakeSlurm]:
    fake = FakeSlurm()
    engine = SlurmEngine(coord, slurm=fake, background=False)
    engine.partitions = list(SINFO)
    coord.engines["slurm"] = engine
    return engine, fake


def submit(coord: Coordinator, *, mem: int = 100 * MB, cpu: int = 1,
           needs: Sequence[str] = ()) -> str:
    spec = JobSpec(id=str(uuid.uuid4()), name="j", cwd="/", command=["true"], env={},
                   cpu=cpu, mem=mem, submitted_at=time.time(), needs=list(needs),
                   engine="slurm")
    answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
    assert answer["result"] == "submitted", answer
    return str(answer["id"])


def write_disk(coord: Coordinator, job_id: str, **fields: Any) -> None:
    job = coord.jobs[job_id]
    record = JobStatus.from_dict(job.record.to_dict())
    for key, value in fields.items():
        setattr(record, key, value)
    job_files.write_status(job.dir, record)


async def one_slurm_job(tmp_path: Path) -> tuple[Coordinator, SlurmEngine, FakeSlurm, str, str]:
    """A coordinator with a fake Slurm, and one job submitted to it: its id and Slurm's."""
    coord = make_coord(tmp_path)
    engine, fake = fake_engine(coord)
    job_id = submit(coord)
    await engine.step()
    return coord, engine, fake, job_id, str(coord.jobs[job_id].record.engine_id)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_many_jobs_cost_one_squeue_per_look(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        ids = [submit(coord) for _ in range(12)]
        await engine.step()
        assert len(fake.submitted) == 12 and len(fake.released) == 12
        assert len(fake.squeue_calls) == 1 and len(fake.squeue_calls[0]) == 12
        await engine.step()
        assert len(fake.squeue_calls) == 2
        described = engine.describe()
        assert (described["jobs_watched"], described["squeue_calls"]) == (12, 2)
        record = coord.jobs[ids[0]].record
        assert record.engine_id in fake.submitted
        assert record.blocked_reason is not None and "waits in Slurm" in record.blocked_reason
        on_disk = job_files.read_status(coord.jobs[ids[0]].dir)
        assert on_disk is not None and on_disk.engine_id == record.engine_id
        engine.close()
    run(body())


def test_slurm_jobs_never_enter_the_local_queue_or_budget(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, _fake = fake_engine(coord)
        job_id = submit(coord, cpu=8, mem=60000 * MB)   # far above this machine's budget
        assert coord.queue == []
        write_disk(coord, job_id, state="running")
        coord.refresh(coord.jobs[job_id])
        assert coord.jobs[job_id].record.state == "running"
        assert list(coord.active_jobs()) == [] and coord.claimed() == (0, 0)
        engine.close()
    run(body())


def test_a_claim_no_partition_holds_is_refused_at_submit(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        fake_engine(coord)
        spec = JobSpec(id=str(uuid.uuid4()), name="big", cwd="/", command=["true"], env={},
                       cpu=64, mem=MB, submitted_at=time.time(), engine="slurm")
        answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
        assert answer["result"] == "error"
        assert "cannot give 64 cores" in answer["message"]
        assert not coord.paths.job_dir(spec.id).exists()
    run(body())


def test_pending_reason_in_qex_words(tmp_path: Path) -> None:
    async def body() -> None:
        coord, engine, fake, job_id, slurm_id = await one_slurm_job(tmp_path)
        fake.states[slurm_id] = mapping.SlurmJob("PENDING", "QOSMaxJobsPerUserLimit")
        await engine.step()
        reason = coord.jobs[job_id].record.blocked_reason
        assert reason is not None and "QOS limit" in reason and f"job {slurm_id}" in reason
        engine.close()
    run(body())


@pytest.mark.parametrize(("slurm_state", "ran", "qex_state", "code"), [
    ("TIMEOUT", True, State.TIMEOUT, Exit.STOPPED),
    ("NODE_FAIL", True, State.FAILED, Exit.RESULT_LOST),  # it ran; the result is lost (120)
    ("PREEMPTED", True, State.KILLED, Exit.STOPPED),
    ("CANCELLED", False, State.CANCELLED, Exit.STOPPED),
    ("CANCELLED", True, State.KILLED, Exit.STOPPED),
])
def test_a_job_slurm_ended_without_a_result_gets_a_record(
        tmp_path: Path, slurm_state: str, ran: bool, qex_state: State, code: int) -> None:
    async def body() -> None:
        coord, engine, fake, job_id, slurm_id = await one_slurm_job(tmp_path)
        if ran:
            write_disk(coord, job_id, state="running", attempts=1, pid=None)
        fake.states[slurm_id] = mapping.SlurmJob(slurm_state, "None")
        await engine.step()
        job = coord.jobs[job_id]
        assert job.record.state == qex_state.value
        assert job.record.error is not None and f"Slurm job {slurm_id}" in job.record.error
        on_disk = job_files.read_status(job.dir)
        assert on_disk is not None and on_disk.state == qex_state.value
        assert exit_code_for(on_disk.to_dict()) == code
        assert job_id not in engine.tracked
    run(body())


def test_the_supervisors_final_record_is_taken(tmp_path: Path) -> None:
    async def body() -> None:
        coord, engine, fake, job_id, slurm_id = await one_slurm_job(tmp_path)
        write_disk(coord, job_id, state="failed", exit_code=7, attempts=1)
        fake.states[slurm_id] = mapping.SlurmJob("FAILED", "NonZeroExitCode")
        waiter = coord.add_waiter(job_id)
        await engine.step()
        assert waiter.done()
        assert job_id not in engine.tracked
        assert coord.jobs[job_id].record.exit_code == 7
        assert exit_code_for(coord.jobs[job_id].record.to_dict()) == 7
    run(body())


def test_out_of_memory_from_slurm_resubmits_with_the_grown_claim(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path, on_oom=1, growth=2.0)
        engine, fake = fake_engine(coord)
        job_id = submit(coord, mem=300 * MB)
        await engine.step()
        first = str(coord.jobs[job_id].record.engine_id)
        assert f"--mem={300}M" in fake.submitted[first]
        write_disk(coord, job_id, state="running", attempts=1)
        fake.states[first] = mapping.SlurmJob("OUT_OF_MEMORY", "OutOfMemory")
        await engine.step()   # the end is seen, and the job goes back
        await engine.step()   # it is submitted again
        job = coord.jobs[job_id]
        second = str(job.record.engine_id)
        assert second != first and f"--mem={600}M" in fake.submitted[second]
        assert job.record.mem == 600 * MB and job.record.oom_retries_left == 0
        assert job.record.oom_evidence == "slurm" and job.record.state == "queued"
        spec = job_files.read_spec(job.dir)
        assert spec is not None and spec.mem == 600 * MB
        # No raise left: the second OUT_OF_MEMORY is final, exit 99.
        write_disk(coord, job_id, state="running", attempts=2)
        fake.states[second] = mapping.SlurmJob("OUT_OF_MEMORY", "OutOfMemory")
        await engine.step()
        assert job.record.state == "oom" and exit_code_for(job.record.to_dict()) == Exit.OOM
        engine.close()
    run(body())


def test_a_supervisors_oom_retry_goes_back_to_slurm(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        job_id = submit(coord, mem=100 * MB)
        await engine.step()
        first = str(coord.jobs[job_id].record.engine_id)
        # The supervisor proved the OOM from the cgroup and handed the job back, larger.
        write_disk(coord, job_id, state="queued", attempts=1, mem=200 * MB, started_at=1.0)
        fake.states[first] = mapping.SlurmJob("FAILED", "NonZeroExitCode")
        await engine.step()
        assert coord.jobs[job_id].record.engine_id is None
        await engine.step()
        second = coord.jobs[job_id].record.engine_id
        assert second is not None and second != first
        assert "--mem=200M" in fake.submitted[second]
        engine.close()
    run(body())


def test_a_dependent_whose_need_failed_is_skipped_and_cancelled(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        first = submit(coord)
        second = submit(coord, needs=[first])
        await engine.step()
        a = str(coord.jobs[first].record.engine_id)
        b = str(coord.jobs[second].record.engine_id)
        assert f"--dependency=afterok:{a}" in fake.submitted[b]
        write_disk(coord, first, state="failed", exit_code=3, attempts=1)
        fake.states[a] = mapping.SlurmJob("FAILED", "NonZeroExitCode")
        fake.states[b] = mapping.SlurmJob("PENDING", mapping.DEPENDENCY_NEVER)
        await engine.step()
        await asyncio.sleep(0)
        record = coord.jobs[second].record
        assert record.state == "skipped" and record.caused_by == first
        assert exit_code_for(record.to_dict()) == Exit.SKIPPED
        assert b in fake.cancelled
    run(body())


def test_a_dependent_follows_its_need_to_a_new_slurm_job(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        first = submit(coord)
        second = submit(coord, needs=[first])
        await engine.step()
        a = str(coord.jobs[first].record.engine_id)
        b = str(coord.jobs[second].record.engine_id)
        write_disk(coord, first, state="queued", attempts=1, mem=400 * MB, started_at=1.0)
        fake.states[a] = mapping.SlurmJob("FAILED", "NonZeroExitCode")
        fake.states[b] = mapping.SlurmJob("PENDING", mapping.DEPENDENCY_NEVER)
        await engine.step()   # `first` is seen to go back
        await engine.step()   # `first` is submitted under a new id; `second` is pointed at it
        await asyncio.sleep(0)
        new = str(coord.jobs[first].record.engine_id)
        assert new != a and fake.dependencies[b] == f"afterok:{new}"
        assert coord.jobs[second].record.state == "queued"
        engine.close()
    run(body())


def test_a_dependency_on_a_local_job_waits_here(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        spec = JobSpec(id=str(uuid.uuid4()), name="local", cwd="/", command=["true"], env={},
                       cpu=1, mem=MB, submitted_at=time.time())
        assert handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})["result"] == \
            "submitted"
        dependent = submit(coord, needs=[spec.id])
        await engine.step()
        assert fake.submitted == {}
        reason = coord.jobs[dependent].record.blocked_reason
        assert reason is not None and "to complete first" in reason
        coord.finish(coord.jobs[spec.id], State.COMPLETED, error=None, hook=False)
        await engine.step()
        assert len(fake.submitted) == 1
        engine.close()
    run(body())


def test_kill_marks_the_job_and_asks_slurm(tmp_path: Path) -> None:
    async def body() -> None:
        coord, engine, fake, job_id, slurm_id = await one_slurm_job(tmp_path)
        write_disk(coord, job_id, state="running", attempts=1)
        from qex.coordinator.control import handle_cancel, handle_kill

        assert handle_kill(coord, {"op": "kill", "id": job_id})["result"] == "ok"
        await asyncio.sleep(0.05)
        assert slurm_id in fake.cancelled
        assert (coord.jobs[job_id].dir / job_files.KILLED_MARK).exists()
        await engine.step()
        assert coord.jobs[job_id].record.state == "killed"
        queued = submit(coord)
        await engine.step()
        queued_slurm = str(coord.jobs[queued].record.engine_id)
        assert handle_cancel(coord, {"op": "cancel", "id": queued})["result"] == "ok"
        await asyncio.sleep(0.05)
        assert queued_slurm in fake.cancelled and coord.jobs[queued].record.state == "cancelled"
    run(body())


def test_a_cancel_the_disk_refuses_leaves_the_slurm_job_queued(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cancelled record is written before Slurm hears of the cancel: a refused write
    keeps the job queued here and in Slurm, and a later cancel that lands scancels it."""
    async def body() -> None:
        coord, _engine, fake, job_id, slurm_id = await one_slurm_job(tmp_path)
        from qex.coordinator.control import handle_cancel

        real = job_files.write_status

        def full(*_args: Any, **_kwargs: Any) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(job_files, "write_status", full)
        assert handle_cancel(coord, {"op": "cancel", "id": job_id})["result"] == "error"
        await asyncio.sleep(0.05)
        assert slurm_id not in fake.cancelled
        assert coord.jobs[job_id].record.state == "queued"
        monkeypatch.setattr(job_files, "write_status", real)
        assert handle_cancel(coord, {"op": "cancel", "id": job_id})["result"] == "ok"
        await asyncio.sleep(0.05)
        assert slurm_id in fake.cancelled
    run(body())


def test_a_new_coordinator_watches_the_jobs_of_the_old_one(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        pending_id = submit(coord)
        running_id = submit(coord)
        await engine.step()
        write_disk(coord, running_id, state="running", attempts=1, pid=999999,
                   boot_id="another-node")
        engine.close()
        # A coordinator `kill -9`ed: the next one reads the records.
        again = make_coord_again(coord)
        engine2, _ = fake_engine(again)
        engine2.slurm = fake
        recovery.recover(again)
        assert again.queue == []
        assert set(engine2.tracked) == {pending_id, running_id}
        assert again.jobs[running_id].record.state == "running"   # not judged as local
        slurm_id = str(again.jobs[running_id].record.engine_id)
        write_disk(again, running_id, state="completed", exit_code=0, attempts=1)
        fake.states[slurm_id] = mapping.SlurmJob("COMPLETED", "None")
        await engine2.step()
        assert again.jobs[running_id].record.state == "completed"
        assert len(fake.submitted) == 2     # nothing was submitted twice
        engine2.close()
    run(body())


def make_coord_again(old: Coordinator) -> Coordinator:
    return Coordinator(
        paths=old.paths, config=old.config, machine=old.machine,
        events=EventHub(retained=64, version="test", pid=2, started_at=0.0),
        started_at=0.0, idle_limit=3600.0, boot_id=old.boot_id,
    )


def test_engine_for_loads_slurm_lazily(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    assert engine_for(coord, "local").kind == "local"
    job = Job(record=JobStatus(id="x", name="x", command=["true"], cwd="/"), dir=tmp_path)
    from qex.engine.base import remote_engine

    assert remote_engine(coord, job) is None


def test_the_local_path_never_imports_slurm_code() -> None:
    import subprocess
    import sys

    code = ("import sys, qex.cli.main, qex.coordinator.main, qex.supervisor.main; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('qex.engine'))))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == []


@pytest.mark.parametrize(("fields", "words"), [
    ({"locks": ["db"]}, "the lock db has no meaning on Slurm"),
    ({"claims": {"license": {"count": 1, "size": None}}}, "the claim on license"),
    ({"claims": {"gpu": {"count": 1, "size": None}}}, "1 GPUs (its largest node has 0)"),
])
def test_what_slurm_cannot_obey_is_refused(tmp_path: Path, fields: dict[str, Any],
                                           words: str) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        fake_engine(coord)
        spec = JobSpec(id=str(uuid.uuid4()), name="j", cwd="/", command=["true"], env={},
                       cpu=1, mem=MB, submitted_at=time.time(), engine="slurm", **fields)
        answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
        assert answer["result"] == "error" and words in answer["message"]
    run(body())


def test_a_gpu_claim_becomes_gres(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        engine.partitions = [mapping.Partition(name="gpu", default=True, cpus=8, mem_mb=64000,
                                               gpus=4)]
        spec = JobSpec(id=str(uuid.uuid4()), name="j", cwd="/", command=["true"], env={},
                       cpu=1, mem=MB, submitted_at=time.time(), engine="slurm",
                       claims={"gpu": {"count": 2, "size": None}})
        assert handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})["result"] == \
            "submitted"
        await engine.step()
        assert "--gres=gpu:2" in next(iter(fake.submitted.values()))
    run(body())


def test_a_held_leftover_of_a_dead_coordinator_is_cancelled(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        job_id = submit(coord)
        job = coord.jobs[job_id]
        # The coordinator died after `sbatch --hold` and before it wrote the id.
        leftover = await fake.sbatch(mapping.sbatch_args(mapping.Request(
            job_id=job_id, name=job.record.name, cpu=1, mem=MB)), str(job.dir / "spec.json"))
        engine.close()
        again = make_coord_again(coord)
        engine2, _ = fake_engine(again)
        engine2.slurm = fake
        recovery.recover(again)
        await engine2.step()
        await asyncio.sleep(0.05)
        assert leftover in fake.cancelled
        assert again.jobs[job_id].record.engine_id not in (None, leftover)
    run(body())


def test_a_state_dir_outside_shared_dir_is_refused(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        fake_engine(coord)
        shared = tmp_path / "shared"
        shared.mkdir()
        coord.config = Config(engine=EngineSection(kind="slurm", shared_dir=str(shared)))
        spec = JobSpec(id=str(uuid.uuid4()), name="j", cwd="/", command=["true"], env={},
                       cpu=1, mem=MB, submitted_at=time.time(), engine="slurm")
        answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
        assert answer["result"] == "error"
        assert "is not inside [engine] shared_dir" in answer["message"]
        coord.config = Config(engine=EngineSection(kind="slurm", shared_dir=str(tmp_path)))
        answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
        assert answer["result"] == "submitted"
    run(body())


def test_a_job_whose_supervisor_reported_the_end_is_no_longer_watched(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        job_id = submit(coord)
        await engine.step()
        write_disk(coord, job_id, state="completed", exit_code=0, attempts=1)
        coord.refresh(coord.jobs[job_id])           # the supervisor's job_changed note
        assert engine.describe()["jobs_watched"] == 0
        calls = len(fake.squeue_calls)
        await engine.step()
        assert engine.tracked == {} and len(fake.squeue_calls) == calls
    run(body())


def test_a_burst_of_submissions_costs_no_extra_squeue(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)              # [engine] poll = 3600 s
        fake = FakeSlurm()
        engine = SlurmEngine(coord, slurm=fake)   # its own watcher task, as in the coordinator
        engine.partitions = list(SINFO)
        coord.engines["slurm"] = engine
        for _ in range(10):
            submit(coord)
            await asyncio.sleep(0.01)
        for _ in range(500):
            if len(fake.released) == 10:
                break
            await asyncio.sleep(0.01)
        assert len(fake.released) == 10           # every job was handed over at once
        assert len(fake.squeue_calls) == 1        # and Slurm's queue was read once
        engine.close()
    run(body())


def test_a_slurm_that_does_not_answer_is_asked_once_per_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.engine.slurm import commands

    calls: list[int] = []

    def down() -> list[mapping.Partition]:
        calls.append(1)
        raise commands.SlurmError("`sinfo` failed (exit status 1) and said: no controller")

    monkeypatch.setattr(commands, "partitions_now", down)

    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, _fake = fake_engine(coord)
        engine.partitions = None
        for _ in range(3):
            spec = JobSpec(id=str(uuid.uuid4()), name="j", cwd="/", command=["true"], env={},
                           cpu=1, mem=MB, submitted_at=time.time(), engine="slurm")
            answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
            assert answer["result"] == "error" and "no controller" in answer["message"]
        assert len(calls) == 1
    run(body())


def test_a_failing_squeue_changes_no_record_and_is_logged_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from qex.engine.slurm import commands

    async def body() -> None:
        coord = make_coord(tmp_path)
        engine, fake = fake_engine(coord)
        job_id = submit(coord)
        await engine.step()

        async def broken(ids: Sequence[str]) -> dict[str, mapping.SlurmJob]:
            raise commands.SlurmError("`squeue -h` failed (exit status 1) and said: down")

        fake.squeue = broken  # type: ignore[method-assign]
        for _ in range(3):
            await engine.step()
        assert coord.jobs[job_id].record.state == "queued" and job_id in engine.tracked
    run(body())
    assert capsys.readouterr().out.count("could not read Slurm's queue") == 1
