"""Rebuild the coordinator's memory from the records on disk, at start.

A coordinator holds no result: a `kill -9` on it loses nothing, because every job's record
is on disk and its supervisor outlives it. The next coordinator reads every job directory
and decides, for each record that was active, whether a process of it still runs. A pid is
trusted only with the same boot id AND the same process start token AND not a zombie
(`qex.platform.procs`); pids are reused, and on this machine an exited orphan stays a zombie
that still answers `kill(pid, 0)`. Processes are never signalled when the boot differs.
"""

from __future__ import annotations

from pathlib import Path

from qex.coordinator import pausing
from qex.coordinator.log import log
from qex.coordinator.reaper import requeue_untouched, stop_job_group, watch_foreign
from qex.coordinator.state import Coordinator, Job, label
from qex.core import recovery_rule
from qex.core.states import ACTIVE, FINAL, State
from qex.platform import liveness, procs
from qex.store import atomic
from qex.store import jobs as job_files
from qex.store.pause import read_pause


def load_jobs(coord: Coordinator) -> list[Job]:
    """Every job directory with both a readable spec and a readable record."""
    loaded: list[Job] = []
    coord.damaged.clear()
    for job_dir in job_files.iter_job_dirs(coord.paths):
        spec = job_files.read_spec(job_dir)
        record = job_files.read_status(job_dir)
        if record is None:
            _say_why_unread(job_dir)
        broken = job_files.damaged_file(job_dir, spec, record)
        if broken is not None:
            # Not silently dropped: `qex list` names it, and `qex gc` removes it in time.
            coord.damaged[job_dir.name] = str(broken)
            log(f"the record {broken} cannot be read; qex lists it as damaged")
            continue
        assert spec is not None and record is not None  # what `damaged_file` found whole
        loaded.append(Job.from_records(spec, record, job_dir))
    return loaded


def _say_why_unread(job_dir: Path) -> None:
    """Log a record that a newer qex wrote with a state this one does not know."""
    raw = atomic.read_json(job_dir / job_files.STATUS)
    state = raw.get("state") if isinstance(raw, dict) else None
    if isinstance(state, str) and state not in {s.value for s in State}:
        log(f"the record in {job_dir} has the unknown state `{state}`; qex leaves it alone")


def recover(coord: Coordinator) -> None:
    """Read the pause file and every record; judge active ones; rebuild queue and dedupe map."""
    now = coord.now()
    expired_pause_end = pausing.load_at_start(coord, read_pause(coord.paths.paused_file, now), now)
    jobs = load_jobs(coord)
    for job in jobs:
        coord.jobs[job.id] = job
    coord.next_sequence = max((job.record.sequence for job in jobs), default=0) + 1
    elsewhere = [job for job in jobs if job.record.engine and not job.final]
    jobs = [job for job in jobs if not (job.record.engine and not job.final)]
    queued = [job for job in jobs if job.state == State.QUEUED]
    queued.sort(key=lambda j: (-j.priority, j.record.submitted_at, j.record.sequence))
    coord.restore_queue(queued)
    for job in jobs:
        if job.state in ACTIVE:
            _judge_active(coord, job)
    if elsewhere:
        _to_engines(coord, elsewhere)
    _rebuild_dedupe(coord)
    if expired_pause_end is not None:
        pausing.end_queue_pause(coord, expired_pause_end)
    for record in coord.sorted_records():
        coord.events.observe(record, now)
    counts = {"queued": 0, "active": 0, "final": 0}
    for job in coord.jobs.values():
        counts["queued" if job.state == State.QUEUED else "final" if job.final else "active"] += 1
    log(f"recovered {len(coord.jobs)} job record(s): {counts['active']} active, "
        f"{counts['queued']} queued, {counts['final']} final")


def _to_engines(coord: Coordinator, jobs: list[Job]) -> None:
    """Jobs of another engine (Slurm) go back to it: it knows whether they still run."""
    from qex.engine.base import known_kinds, remote_engine

    for job in jobs:
        if job.record.engine not in known_kinds():
            coord.finish(job, State.FAILED, error=(
                f"this qex knows no engine `{job.record.engine}`, so it cannot follow this job; "
                "use the qex that submitted it"), hook=False)
            continue
        engine = remote_engine(coord, job)
        if engine is not None:
            engine.adopt(job)


def _rebuild_dedupe(coord: Coordinator) -> None:
    """Among jobs sharing a key, a job that has not stopped wins, then the latest one."""
    best: dict[str, Job] = {}
    for job in coord.jobs.values():
        if not job.dedupe_key:
            continue
        current = best.get(job.dedupe_key)
        if current is None or _dedupe_rank(job) > _dedupe_rank(current):
            best[job.dedupe_key] = job
    coord.dedupe = {key: job.id for key, job in best.items()}


def _dedupe_rank(job: Job) -> tuple[int, float, int]:
    return (0 if job.state in FINAL else 1, job.record.submitted_at, job.record.sequence)


def _judge_active(coord: Coordinator, job: Job) -> None:
    """Apply `qex.core.recovery_rule` (the rule every read without a coordinator applies too)."""
    record = job.record
    pid_file = job_files.read_supervisor_pid_file(job.dir)
    facts = liveness.observe(record.to_dict(), pid_file, coord.boot_id,
                            lock=job_files.supervisor_lock(job.dir))
    verdict = recovery_rule.judge(record.state, bool(record.pid), facts,
                                  job_files.supervisor_log_tail(job.dir))
    if verdict.action == recovery_rule.ALIVE:
        sup_pid, sup_token = liveness.supervisor_of(record.to_dict(), pid_file)
        job.supervisor_pid = sup_pid
        job.supervisor_token = sup_token or procs.start_token(int(sup_pid or 0))
        job.inherited = True
        log(f"the supervisor (pid {sup_pid}) of the job {label(record)} still operates; "
            "qex watches it")
        watch_foreign(coord, job)
        return
    if verdict.action == recovery_rule.REQUEUE:
        requeue_untouched(coord, job)
        log(f"the job {label(record)} had not started when the coordinator stopped; "
            "it is queued again")
        return
    error = verdict.error or "the job's processes are gone"
    if verdict.stop_job:
        stopped = stop_job_group(int(record.pid or 0), record.pid_start_token)
        error = recovery_rule.stopped_note(error, stopped)
    _retire(coord, job, error)


def _retire(coord: Coordinator, job: Job, error: str) -> None:
    record = job.record
    record.supervisor_pid = None
    record.supervisor_start_token = None
    log(f"the job {label(record)} failed at recovery: {error}")
    coord.finish(job, State.FAILED, error=error)
