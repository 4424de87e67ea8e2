"""The coordinator's own rules, without a socket: queue order, pauses and their credit,
dedupe holders, the clean hold rule, and the recovery verdicts for active records."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from coordkit import add_job, make_coord
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qex.coordinator import control, pausing, recovery
from qex.coordinator.state import Coordinator, Job
from qex.coordinator.submit import _dedupe_holder, spec_problems
from qex.core.records import JobSpec, JobStatus
from qex.platform import procs
from qex.store import jobs as job_files
from qex.store.pause import PauseRecord


def test_enqueue_is_priority_then_fifo(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    low = add_job(coord, priority=0)
    high = add_job(coord, priority=5)
    low2 = add_job(coord, priority=0)
    high2 = add_job(coord, priority=5)
    assert coord.queue == [high.id, high2.id, low.id, low2.id]


@given(st.lists(st.integers(min_value=-3, max_value=3), max_size=40))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_enqueue_keeps_priority_then_submission_order(tmp_path_factory: pytest.TempPathFactory,
                                                      priorities: list[int]) -> None:
    # The newcomer of no higher priority than the last job is appended without a walk; the
    # order must be the one a full walk gives: a stable sort by falling priority.
    coord = make_coord(tmp_path_factory.mktemp("queue"))
    jobs = []
    for priority in priorities:
        spec = JobSpec(id=str(uuid.uuid4()), name="j", cwd="/", command=["true"], env={},
                       cpu=1, mem=1024, priority=priority, submitted_at=time.time())
        job = Job(record=JobStatus.new(spec, boot_id="boot", oom_retries=0),
                  dir=Path("/nonexistent"), priority=priority)
        coord.jobs[job.record.id] = job
        coord.enqueue(job)
        jobs.append(job)
    expected = [job.record.id for job in sorted(jobs, key=lambda job: -job.priority)]
    assert coord.queue == expected


def test_second_pause_keeps_the_first_end_and_reason(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    now = time.time()
    pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "first", "until": now + 1800,
                          "by_pid": 11})
    pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "second", "by_pid": 12})
    record = coord.pauses.queue
    assert record is not None
    assert (record.reason, record.by_pid, record.until) == ("first", 11, now + 1800)
    # A first pause with no reason takes the second one's.
    coord.pauses.queue = None
    pausing.pause(coord, {"target": {"kind": "queue"}, "by_pid": 11})
    pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "late", "by_pid": 12})
    assert coord.pauses.queue is not None and coord.pauses.queue.reason == "late"
    with pytest.raises(pausing.PauseError):
        pausing.pause(coord, {"target": {"kind": "queue"}, "until": now - 5})


def test_a_fault_is_replaced_by_a_real_pause(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    coord.pauses.queue = PauseRecord(paused_at=1.0, reason="broken", fault=True)
    pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "mine", "by_pid": 5})
    assert coord.pauses.queue is not None and not coord.pauses.queue.fault
    assert coord.pauses.queue.reason == "mine"


def test_ending_a_queue_pause_credits_each_queued_job(tmp_path: Path) -> None:
    """A job whose expiry the credit moves has it on disk before the pause is dropped; the
    others take it with the batched writes."""

    async def scenario() -> None:
        coord = make_coord(tmp_path)
        early = add_job(coord, submitted_at=100.0)
        early.max_queue_time = 1000.0
        late = add_job(coord, submitted_at=300.0)
        coord.pauses.queue = PauseRecord(paused_at=200.0, by_pid=1)
        pausing.end_queue_pause(coord, 500.0)
        assert coord.pauses.queue is None
        assert early.record.queue_pause_secs == 300.0   # from the pause start
        assert late.record.queue_pause_secs == 200.0    # from its own submission
        assert job_files.read_status(early.dir).queue_pause_secs == 300.0  # type: ignore[union-attr]
        assert job_files.read_status(late.dir).queue_pause_secs == 0.0  # type: ignore[union-attr]
        coord.flush_deferred()
        assert job_files.read_status(late.dir).queue_pause_secs == 200.0  # type: ignore[union-attr]
        assert coord.idle_since is not None

    asyncio.run(scenario())


def test_the_loop_wakes_for_the_deadline_of_each_timed_job_and_forgets_it_once_gone(
        tmp_path: Path) -> None:
    from qex.coordinator.runner import QUEUED_HEARTBEAT_SECS, Runner

    coord = make_coord(tmp_path)
    now = time.time()
    for _ in range(3):
        add_job(coord, submitted_at=now)  # no queue time limit: never a deadline
    timed = add_job(coord, submitted_at=now)
    timed.max_queue_time = 2.0  # as the spec gives it when the job is made
    coord.enqueue(timed)
    runner = Runner(coord, None, lambda: 0, None)
    assert runner.next_delay(now) == pytest.approx(2.01)  # its expiry, a little late
    assert [job.id for job in coord.timed_queued_jobs()] == [timed.id]
    coord.queue.remove(timed.id)  # it started
    timed.record.state = "starting"
    assert runner.next_delay(now) == pytest.approx(QUEUED_HEARTBEAT_SECS)
    assert not list(coord.timed_queued_jobs()) and not coord._timed


def test_a_job_is_awaited_while_a_queued_job_names_it(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    first, second = add_job(coord), add_job(coord)
    for _ in range(3):
        add_job(coord)  # no dependency: not even looked at
    needs = add_job(coord, needs=[first.id])
    after = add_job(coord, after=[second.id])
    assert list(coord._dependent) == [needs.id, after.id]
    assert coord.awaited(first.id) and coord.awaited(second.id)
    assert not coord.awaited(needs.id)
    coord.queue.remove(needs.id)
    needs.record.state = "starting"
    assert not coord.awaited(first.id) and coord.awaited(second.id)
    assert list(coord._dependent) == [after.id]


def test_due_pauses_end_at_their_until(tmp_path: Path) -> None:
    async def scenario() -> None:
        coord = make_coord(tmp_path)
        job = add_job(coord, submitted_at=0.0)
        coord.pauses.queue = PauseRecord(paused_at=10.0, until=40.0)
        coord.pauses.locks["gpu"] = PauseRecord(paused_at=10.0, until=30.0)
        coord.pauses.locks["net"] = PauseRecord(paused_at=10.0)
        assert pausing.next_pause_deadline(coord) == 30.0
        pausing.end_due_pauses(coord, 100.0)
        assert coord.pauses.queue is None and list(coord.pauses.locks) == ["net"]
        assert job.record.queue_pause_secs == 30.0  # credited up to `until`, not to now

    asyncio.run(scenario())


def test_lock_names_resolve_exactly_or_as_printed(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    add_job(coord, locks=["gpu 0", "target/debug"])
    assert pausing.resolve_lock(coord, "gpu 0") == "gpu 0"
    assert pausing.resolve_lock(coord, "gpu_0") == "gpu_0"  # another lock, not a guess
    assert pausing.resolve_lock(coord, "target/debug") == "target/debug"
    assert pausing.resolve_lock(coord, "brand-new") == "brand-new"
    add_job(coord, locks=["gpu\t0"])
    assert pausing.resolve_lock(coord, "gpu\\t0") == "gpu\t0"  # copied from the screen


def test_dedupe_holder_rule(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    running = add_job(coord, state="running", dedupe_key="k1")
    coord.dedupe["k1"] = running.id
    assert _dedupe_holder(coord, "k1", 0) is running
    done = add_job(coord, state="completed", finished_at=time.time() - 10, dedupe_key="k2")
    coord.dedupe["k2"] = done.id
    assert _dedupe_holder(coord, "k2", 60) is done        # within the asker's window
    assert _dedupe_holder(coord, "k2", 5) is None         # window passed
    assert _dedupe_holder(coord, "k2", 0) is None         # no window: a finished job frees it
    failed = add_job(coord, state="failed", finished_at=time.time(), dedupe_key="k3")
    coord.dedupe["k3"] = failed.id
    assert _dedupe_holder(coord, "k3", 3600) is None      # only a success holds a window
    assert _dedupe_holder(coord, "unknown", 3600) is None


def test_clean_is_held_by_unfinished_work_through_chains(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    root = add_job(coord, state="completed")
    middle = add_job(coord, state="completed", needs=[root.id])
    waiting = add_job(coord, state="queued", after=[middle.id])
    reader, _ = control.holders(coord, root)
    assert reader is waiting
    grouped = add_job(coord, state="failed", group="g1")
    add_job(coord, state="running", group="g1")
    assert control.holders(coord, grouped)[1] is not None
    alone = add_job(coord, state="completed")
    assert control.holders(coord, alone) == (None, None)


def _holders_by_walking_every_job(coord: Coordinator, target: Job) -> tuple[Any, Any]:
    """`control.holders` as it was: every job looked at, for each question."""
    reverse: dict[str, list[Job]] = {}
    for job in coord.jobs.values():
        for dep in [*job.record.needs, *job.record.after]:
            reverse.setdefault(dep, []).append(job)
    seen: set[str] = set()
    frontier = [target.id]
    while frontier:
        for dependant in reverse.get(frontier.pop(), []):
            if dependant.id in seen:
                continue
            seen.add(dependant.id)
            if not dependant.final:
                return dependant, None
            frontier.append(dependant.id)
    siblings = [job for job in coord.jobs.values()
                if job.id != target.id and target.record.group
                and job.record.group == target.record.group and not job.final]
    return None, siblings


_STATES = ("queued", "running", "completed", "failed", "skipped", "cancelled")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_the_holders_of_a_record_are_found_from_the_indexes(tmp_path_factory: pytest.TempPathFactory,
                                                            data: st.DataObject) -> None:
    """Drawn jobs in drawn states, groups and links (`needs`/`after` to earlier jobs, some
    finished on the way): the holders found from the linked jobs and the group's unfinished
    jobs are those that a walk over every job finds, the sibling being the group's first
    unfinished job by submission; and a clean (`remove`) rewrites exactly the skipped jobs
    that named the removed one as their cause."""
    coord = make_coord(tmp_path_factory.mktemp("holders"))
    jobs: list[Job] = []
    for n in range(data.draw(st.integers(1, 14))):
        links = {key: data.draw(st.lists(st.sampled_from([j.id for j in jobs]), max_size=2))
                 if jobs else [] for key in ("needs", "after")}
        state = data.draw(st.sampled_from(_STATES))
        cause = (data.draw(st.sampled_from(links["needs"]))
                 if state == "skipped" and links["needs"] else None)
        jobs.append(add_job(coord, state=state, submitted_at=1000.0 + n,
                            group=data.draw(st.sampled_from([None, "g1", "g2"])),
                            caused_by=cause, **links))
    for target in jobs:
        reader, sibling = control.holders(coord, target)
        expected_reader, siblings = _holders_by_walking_every_job(coord, target)
        assert reader is expected_reader
        if reader is None:
            assert sibling is (min(siblings, key=lambda j: j.record.submitted_at)
                               if siblings else None)
    target = data.draw(st.sampled_from(jobs))
    caused = [j for j in jobs if j.record.caused_by == target.id and j is not target]
    control.remove(coord, target)
    assert all(j.record.caused_by is None for j in caused)
    assert all(j.record.caused_by != target.id for j in coord.jobs.values())


def test_unfinished_jobs_of_a_group_come_from_the_fewer_of_two_sets(tmp_path: Path) -> None:
    """Few live jobs and a large finished group, or many live jobs elsewhere and a small
    group: the same answer either way."""
    coord = make_coord(tmp_path)
    for _ in range(30):
        add_job(coord, state="completed", group="big")
    assert coord.jobs.unfinished_in_group("big") == []
    running = add_job(coord, state="running", group="big")
    assert coord.jobs.unfinished_in_group("big") == [running]
    for _ in range(40):
        add_job(coord, state="queued", group="other")
    small = [add_job(coord, state="queued", group="small"),
             add_job(coord, state="completed", group="small")]
    assert coord.jobs.unfinished_in_group("small") == small[:1]
    assert coord.jobs.unfinished_in_group("big") == [running]
    assert coord.jobs.unfinished_in_group("none") == []


def test_remove_rewrites_skipped_dependants_and_keeps_history(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    failed = add_job(coord, state="failed", name="build")
    skipped = add_job(coord, state="skipped", caused_by=failed.id, needs=[failed.id])
    control.remove(coord, failed)
    assert failed.id not in coord.jobs and not failed.dir.exists()
    assert skipped.record.caused_by is None and "build" in (skipped.record.error or "")
    from qex.store import history

    entry = history.lookup(coord.paths, failed.id)
    assert entry is not None and entry.final_state == "failed"


def test_spec_problems_checks_the_wire_values() -> None:
    good = {"id": str(uuid.uuid4()), "name": "x", "cwd": "/", "command": ["true"], "env": {},
            "cpu": 1, "mem": 1, "submitted_at": 1.0}
    assert spec_problems(good) == []
    bad = dict(good, id="nope", command=[], cpu=0, mem=True, cwd="rel", needs="x")
    problems = " ".join(spec_problems(bad))
    for word in ("UUID", "command", "cpu", "mem", "directory", "needs"):
        assert word in problems


def _recover(coord: Coordinator) -> None:
    async def run() -> None:
        recovery.recover(coord)

    asyncio.run(run())


def test_recovery_requeues_a_job_that_never_got_a_supervisor(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord, state="starting", started_at=5.0)
    coord.jobs.clear()
    coord.queue.clear()
    _recover(coord)
    again = coord.jobs[job.id]
    assert again.record.state == "queued" and coord.queue == [job.id]
    assert job_files.read_status(job.dir).state == "queued"  # type: ignore[union-attr]


def test_recovery_leaves_a_record_with_an_unknown_state_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord)
    data = json.loads((job.dir / job_files.STATUS).read_text())
    (job.dir / job_files.STATUS).write_text(json.dumps({**data, "state": "hibernating"}))
    coord.jobs.clear()
    coord.queue.clear()
    _recover(coord)
    assert job.id not in coord.jobs
    assert "unknown state `hibernating`; qex leaves it alone" in capsys.readouterr().out


def test_recovery_fails_a_job_whose_processes_are_gone(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    dead = add_job(coord, state="running", pid=2**22 + 7, supervisor_pid=2**22 + 9)
    other_boot = add_job(coord, state="running", pid=os.getpid(), boot_id="another-boot",
                         supervisor_pid=os.getpid())
    coord.jobs.clear()
    coord.queue.clear()
    _recover(coord)
    assert coord.jobs[dead.id].record.state == "failed"
    assert "neither the job nor its supervisor" in (coord.jobs[dead.id].record.error or "")
    restarted = coord.jobs[other_boot.id].record
    assert restarted.state == "failed" and "machine restarted" in (restarted.error or "")
    assert restarted.last_pid == os.getpid()  # retired, never signalled


def test_recovery_watches_a_live_supervisor_until_it_exits(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        token = procs.start_token(child.pid)
        job = add_job(coord, state="running", supervisor_pid=child.pid,
                      supervisor_start_token=token)
        coord.jobs.clear()
        coord.queue.clear()

        async def scenario() -> str:
            recovery.recover(coord)
            watched = coord.jobs[job.id]
            assert watched.supervisor_pid == child.pid and watched.record.state == "running"
            # The "supervisor" writes a final record and exits; the watch notices the exit.
            record = job_files.read_status(job.dir)
            assert record is not None
            record.state = "completed"
            record.exit_code = 0
            job_files.write_status(job.dir, record)
            assert child.stdin is not None
            child.stdin.close()
            for _ in range(200):
                await asyncio.sleep(0.02)
                if coord.jobs[job.id].final:
                    break
            return coord.jobs[job.id].record.state

        assert asyncio.run(scenario()) == "completed"
    finally:
        child.kill()
        child.wait()


def _inherit_a_waiting_supervisor(tmp_path: Path) -> tuple[Coordinator, Job,
                                                            subprocess.Popen[bytes]]:
    """A `starting` job whose supervisor.pid names a live process that waits (as a supervisor
    waits for its go), recovered by a new coordinator."""
    coord = make_coord(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    job = add_job(coord, state="starting", started_at=5.0)
    (job.dir / job_files.SUPERVISOR_PID).write_text(
        f"{child.pid} {procs.start_token(child.pid)}\n")
    coord.jobs.clear()
    coord.queue.clear()
    return coord, job, child


async def _until(check: Any) -> None:
    for _ in range(250):
        await asyncio.sleep(0.02)
        if check():
            return


@pytest.mark.parametrize("takes_back_its_name", [True, False])
def test_a_supervisor_inherited_before_its_go_gives_the_job_back_to_the_queue(
        tmp_path: Path, takes_back_its_name: bool) -> None:
    # The earlier coordinator named the supervisor and stopped before its go. The new one
    # finds the waiting supervisor alive and watches it; the supervisor then reads the end
    # of its go pipe and exits without touching the job (after taking back its name, or
    # killed before it could). That job never ran: it is queued again, not failed.
    coord, job, child = _inherit_a_waiting_supervisor(tmp_path)
    try:
        async def scenario() -> None:
            recovery.recover(coord)
            watched = coord.jobs[job.id]
            assert watched.supervisor_pid == child.pid and watched.inherited
            if takes_back_its_name:
                (job.dir / job_files.SUPERVISOR_PID).unlink()
            assert child.stdin is not None
            child.stdin.close()
            await _until(lambda: coord.jobs[job.id].state.value != "starting")

        asyncio.run(scenario())
        again = coord.jobs[job.id]
        assert again.record.state == "queued" and job.id in coord.queue
        assert again.record.error is None and not again.inherited
        assert job_files.read_status(job.dir).state == "queued"  # type: ignore[union-attr]
    finally:
        child.kill()
        child.wait()


def test_an_inherited_supervisor_that_took_the_lock_and_died_fails_its_job(
        tmp_path: Path) -> None:
    # The lock says the supervisor passed its go: it may have started the job, so running
    # the job again could run it twice. The job fails with the supervisor's sentence.
    coord, job, child = _inherit_a_waiting_supervisor(tmp_path)
    try:
        async def scenario() -> None:
            recovery.recover(coord)
            (job.dir / job_files.SUPERVISOR_LOCK).write_text("")
            assert child.stdin is not None
            child.stdin.close()
            await _until(lambda: coord.jobs[job.id].final)

        asyncio.run(scenario())
        record = coord.jobs[job.id].record
        assert record.state == "failed"
        assert "stopped without a result" in (record.error or "")
    finally:
        child.kill()
        child.wait()


def test_a_supervisor_of_this_coordinator_that_dies_before_its_lock_fails_its_job(
        tmp_path: Path) -> None:
    # This coordinator gave the go; a supervisor that dies before its lock met a fault that
    # a second start would meet again, so the job fails instead of looping through the queue.
    from qex.coordinator import reaper

    coord = make_coord(tmp_path)
    job = add_job(coord, state="starting", started_at=5.0, supervisor_pid=None)
    pid, token = 2**22 + 11, None
    (job.dir / job_files.SUPERVISOR_PID).write_text(f"{pid}\n")
    job.supervisor_pid, job.supervisor_token = pid, token

    async def scenario() -> None:
        reaper.supervisor_gone(coord, job)

    asyncio.run(scenario())
    assert job.record.state == "failed" and job.id not in coord.queue


def wire_spec(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(uuid.uuid4()), "name": "x", "cwd": "/", "command": ["true"], "env": {},
        "cpu": 1, "mem": 1024, "submitted_at": time.time(),
    }
    data.update(fields)
    return data


def test_a_full_disk_queues_nothing_and_leaves_nothing(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from qex.coordinator.submit import handle_submit

    coord = make_coord(tmp_path)

    from qex.store import atomic

    real = atomic._write_all
    written: list[int] = []

    def full_at_the_record(fd: int, data: bytes) -> None:
        written.append(fd)
        if len(written) == 2:  # the spec fitted; the first record does not
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(atomic, "_write_all", full_at_the_record)
    spec = wire_spec(dedupe_key="k")
    answer = handle_submit(coord, {"spec": spec})
    assert answer["result"] == "error" and answer["kind"] == "internal"
    assert "full" in answer["message"] and "nothing was queued" in answer["message"]
    assert not coord.paths.job_dir(spec["id"]).exists()
    assert coord.jobs == {} and coord.queue == [] and coord.dedupe == {}


def test_oversized_policies_at_submission(tmp_path: Path) -> None:
    from qex.coordinator.submit import handle_submit
    from qex.core import model
    from qex.core.config import QueueSection

    coord = make_coord(tmp_path)
    huge = 10**6
    answer = handle_submit(coord, {"spec": wire_spec(cpu=huge)})
    assert answer["result"] == "submitted" and answer["warning"]
    record = coord.jobs[answer["id"]].record
    assert record.blocked_reason and str(huge) in record.blocked_reason
    coord.config = model.replace(coord.config, queue=QueueSection(oversized="queue"))
    queued = handle_submit(coord, {"spec": wire_spec(cpu=huge)})
    assert queued["result"] == "submitted" and queued["warning"]
    coord.config = model.replace(coord.config, queue=QueueSection(oversized="reject"))
    refused = handle_submit(coord, {"spec": wire_spec(cpu=huge)})
    assert refused["result"] == "error" and refused["kind"] == "wrong_state"
    assert len(coord.jobs) == 2


def test_a_paused_queue_gives_the_new_job_its_reason_at_once(tmp_path: Path) -> None:
    from qex.coordinator.submit import handle_submit

    coord = make_coord(tmp_path)
    pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "demo", "by_pid": 77})
    pausing.pause(coord, {"target": {"kind": "lock", "name": "gpu0"}, "by_pid": 77})
    answer = handle_submit(coord, {"spec": wire_spec(locks=["gpu0"])})
    assert answer["result"] == "submitted"
    assert "resume queue" in answer["warning"] and "gpu0" in answer["warning"]
    record = coord.jobs[answer["id"]].record
    assert record.blocked_reason and "paused" in record.blocked_reason
    assert record.sequence == 1 and coord.next_sequence == 2


def test_program_replacement_is_noticed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.coordinator import runner

    program = tmp_path / "prog.py"
    program.write_text("one")
    monkeypatch.setattr(runner, "_program", [(str(program), runner._identity(str(program)))])
    assert not runner.program_replaced()
    replacement = tmp_path / "prog.new"
    replacement.write_text("two")
    replacement.rename(program)
    assert runner.program_replaced()
    program.unlink()
    assert runner.program_replaced()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")
def test_file_watch_reports_a_rename_over_the_file(tmp_path: Path) -> None:
    from qex.platform.filewatch import FileWatch

    target = tmp_path / "qex.toml"

    async def scenario() -> int:
        seen: list[int] = []
        changed = asyncio.Event()

        def on_change() -> None:
            seen.append(1)
            changed.set()

        watch = FileWatch.start(target, on_change)
        assert watch is not None
        (tmp_path / "other.txt").write_text("not ours")
        fresh = tmp_path / "qex.toml.tmp"
        fresh.write_text("[budget]\ncpu = 2\n")
        fresh.rename(target)
        await asyncio.wait_for(changed.wait(), 5)
        watch.close()
        return len(seen)

    assert asyncio.run(scenario()) >= 1
    assert FileWatch.start(tmp_path / "missing-dir" / "qex.toml", lambda: None) is None


class _ParkingServer:
    """A fork server whose parked supervisor is the process `child`: at the go it asks the
    recovery rule what a coordinator started at that moment (after a `kill -9` of this one)
    would do with the job, from what the disk says."""

    def __init__(self, child: subprocess.Popen[bytes], job_dir: Path) -> None:
        self.child = child
        self.job_dir = job_dir
        self.verdicts: list[str] = []

    def park(self, job_id: str, seconds: float) -> bool:
        return True

    def release_parked(self, job_id: str, before_go: Any = None) -> Any:
        from qex.core import recovery_rule
        from qex.platform import liveness
        from qex.platform.held import Launched

        pid, token = self.child.pid, procs.start_token(self.child.pid)
        if before_go is not None:
            before_go(pid, token)
        job_dir = self.job_dir
        record = job_files.read_status(job_dir)
        assert record is not None
        facts = liveness.observe(record.to_dict(), job_files.read_supervisor_pid_file(job_dir),
                                 lock=job_files.supervisor_lock(job_dir))
        self.verdicts.append(recovery_rule.judge(record.state, bool(record.pid), facts).action)
        return Launched(pid=pid, start_token=token, backend="process-group", forked=True)


def test_a_parked_supervisor_is_named_on_the_disk_before_its_go(tmp_path: Path) -> None:
    # Were the go sent first, a coordinator killed between the go and the name would find a
    # `starting` record that names no supervisor, put the job back in the queue, and run it
    # a second time beside the supervisor that already runs it.
    from qex.coordinator import scheduling
    from qex.core import recovery_rule

    coord = make_coord(tmp_path)
    job = add_job(coord)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    server = _ParkingServer(child, job.dir)
    coord.forkserver = server  # type: ignore[assignment]
    try:
        async def scenario() -> None:
            scheduling.start_job(coord, job, {}, False, None)
            job.end_watch()

        asyncio.run(scenario())
        assert server.verdicts == [recovery_rule.ALIVE]
        assert job.supervisor_pid == child.pid
        assert job_files.read_supervisor_pid_file(job.dir)[0] == child.pid
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()


def test_deferred_reasons_are_written_a_few_per_turn_without_the_directory_sync(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The resume of a long queue changes every reason at once: the loop must get to its
    # answers and starts between the writes, and a reason needs no sync of its directory.
    from qex.coordinator import state as state_module

    monkeypatch.setattr(state_module, "REASON_WRITES_PER_TURN", 3)
    written: list[tuple[str, bool]] = []
    real = job_files.write_status

    def counting(job_dir: Path, status: JobStatus, *, sync_dir: bool = True) -> Any:
        written.append((job_dir.name, sync_dir))
        return real(job_dir, status, sync_dir=sync_dir)

    async def scenario() -> None:
        coord = make_coord(tmp_path)
        jobs = [add_job(coord) for _ in range(8)]
        monkeypatch.setattr(job_files, "write_status", counting)
        for job in jobs:
            job.record.blocked_reason = "a new reason"
            coord.defer_write(job)
        coord.defer_write(jobs[0])  # once is enough
        jobs[5].record.state = "starting"  # it left the queue: its own writer has it
        coord._start_batch()
        assert len(written) == 3
        coord.defer_write(jobs[7])  # due already: written once, as it is then
        for _ in range(5):
            await asyncio.sleep(0)
        assert sorted(name for name, _sync in written) == sorted(
            job.id for n, job in enumerate(jobs) if n != 5)
        assert {sync for _name, sync in written} == {False}
        assert all(job_files.read_status(job.dir).blocked_reason == "a new reason"  # type: ignore[union-attr]
                   for n, job in enumerate(jobs) if n != 5)
        # At the stop everything left is written at once.
        written.clear()
        jobs[1].record.blocked_reason = "the last reason"
        coord.defer_write(jobs[1])
        coord.flush_deferred()
        assert written == [(jobs[1].id, False)]
        assert coord.write_logged(jobs[1]) and written[-1] == (jobs[1].id, True)

    asyncio.run(scenario())


_GO_CHECKER = """
import os, sys
from pathlib import Path
from qex.core import recovery_rule
from qex.platform import liveness
from qex.store import jobs as job_files
got = os.read(int(os.environ["QEX_SUPERVISOR_GO_FD"]), 1)
job_dir = Path(sys.argv[1])
record = job_files.read_status(job_dir)
facts = liveness.observe(record.to_dict(), job_files.read_supervisor_pid_file(job_dir),
                         lock=job_files.supervisor_lock(job_dir))
print(got.decode(), recovery_rule.judge(record.state, bool(record.pid), facts).action)
"""


def test_a_fresh_supervisor_is_named_on_the_disk_before_its_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without a fork server (macOS, or a server that is off) the supervisor is a new
    # process. It started at once before, and was named after: a coordinator killed in
    # between left a `starting` record that named nobody while the supervisor ran the job,
    # and the job ran twice. The stand-in supervisor asks the recovery rule, at its go,
    # what a coordinator started at that moment would do from what the disk says.
    from qex.coordinator import scheduling
    from qex.platform import launch

    coord = make_coord(tmp_path)
    assert coord.forkserver is None and coord.config.enforce.mode == "off"
    job = add_job(coord)
    started: list[int] = []

    def spawn(argv: list[str], log: Path, env: dict[str, str], *,
              go_fd: int | None = None) -> int:
        assert argv[-1] == job.id
        pid = launch.spawn_logged([sys.executable, "-c", _GO_CHECKER, str(job.dir)], log,
                                  {**env, "PYTHONPATH": os.pathsep.join(sys.path)}, go_fd=go_fd)
        started.append(pid)
        return pid

    monkeypatch.setattr(launch, "_launcher", launch.ScopeLauncher(spawn=spawn))

    async def scenario() -> None:
        scheduling.start_job(coord, job, {}, False, None)

    asyncio.run(scenario())
    assert started and job.supervisor_pid == started[0]
    _, status = os.waitpid(started[0], 0)
    said = (job.dir / "supervisor.log").read_text()
    assert os.waitstatus_to_exitcode(status) == 0, said
    assert said.split() == ["1", "alive"]
    assert job_files.read_supervisor_pid_file(job.dir)[0] == started[0]


def test_the_damaged_rule_names_the_record_first_then_the_spec(tmp_path: Path) -> None:
    """One rule for recovery (which keeps no job for such a directory) and for the commands
    that name a damaged job (`qex.store.jobs.damaged_dirs`)."""
    coord = make_coord(tmp_path)
    job = add_job(coord, name="whole")
    spec, record = job_files.read_spec(job.dir), job_files.read_status(job.dir)
    assert job_files.damaged_file(job.dir, spec, record) is None
    assert job_files.damaged_file(job.dir, spec, None) == job.dir / job_files.STATUS
    assert job_files.damaged_file(job.dir, None, None) == job.dir / job_files.STATUS
    assert job_files.damaged_file(job.dir, None, record) == job.dir / job_files.SPEC
    other = add_job(coord, name="other")
    assert job_files.damaged_file(job.dir, spec, job_files.read_status(other.dir)) == \
        job.dir / job_files.STATUS
    (job.dir / job_files.SPEC).write_text("{")
    from qex.store.jobs import damaged_dirs

    assert damaged_dirs(coord.paths, job.id) == {job.id: str(job.dir / job_files.SPEC)}
    assert damaged_dirs(coord.paths, job.id[:8]) == {job.id: str(job.dir / job_files.SPEC)}
    assert damaged_dirs(coord.paths, other.id) == {}
    assert damaged_dirs(coord.paths, "whole") == {}
    loaded = recovery.load_jobs(coord)
    assert [j.id for j in loaded] == [other.id]
    assert coord.damaged == {job.id: str(job.dir / job_files.SPEC)}
