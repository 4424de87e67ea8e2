"""`kill`, `cancel` and `clean`: the requests that stop jobs or delete their records.

kill: the `killed-by-user` mark is written BEFORE the signal, so the supervisor classifies
the end as `killed` (a person's stop) and not as a crash or an OOM. The KILL after the grace
goes only to the same process (same pid, still a group leader, same start token): pids are
reused, and a late KILL must never reach a stranger.

clean: a record that unfinished work still reads is not deleted: a queued job decides from
its dependency's record whether to run, and explains a skip with it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from typing import Any

from qex.coordinator.log import log
from qex.coordinator.state import Coordinator, Job, label, submission_key
from qex.coordinator.submit import SubmissionWakes
from qex.core import protocol
from qex.core.names import safe_name
from qex.core.signal_words import signal_name
from qex.core.states import State
from qex.platform import procs
from qex.store import history
from qex.store import jobs as job_files

#: The sentence a job gets when the command that owned it went away before it started.
OWNER_GONE = (
    "the command that started this job stopped before the job could start, so qex took it out "
    "of the queue. Use `qex submit` for work that must outlive the command that starts it."
)


#: How long a kill of a job that is starting waits for its process (`server._kill`).
STARTING_KILL_SECS = 10.0


def has_no_process_yet(coord: Coordinator, job: Job) -> bool:
    """True while a job of this machine is starting: admitted, with no process to signal."""
    if job.state != State.STARTING or job.record.engine:
        return False
    coord.refresh(job)
    return job.state == State.STARTING and not job.record.pid


def _job_or_error(coord: Coordinator, message: dict[str, Any]) -> Job | dict[str, Any]:
    job_id = message.get("id")
    job = coord.jobs.get(job_id) if isinstance(job_id, str) else None
    if job is None:
        return protocol.error(protocol.NO_SUCH_JOB, f"there is no job with the id {job_id}")
    return job


def handle_kill(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    found = _job_or_error(coord, message)
    if isinstance(found, dict):
        return found
    job = found
    coord.refresh(job)
    record = job.record
    if job.state == State.QUEUED:
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} waits in the queue and has no process to signal; use "
            f"`qex cancel {job.id}` to take it out of the queue"))
    if job.final:
        return protocol.error(protocol.WRONG_STATE,
                              f"the job {job.id} already stopped; its state is `{record.state}`")
    signum = message.get("signal", signal.SIGTERM)
    if isinstance(signum, bool) or not isinstance(signum, int) or not 1 <= signum <= 64:
        return protocol.error(protocol.INTERNAL, f"`{signum}` is not a signal number from 1 to 64")
    grace = message.get("grace_secs", 10)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        grace = 10
    if record.engine:
        from qex.engine.base import remote_engine

        engine = remote_engine(coord, job)
        if engine is not None:
            return engine.kill(job, signum)
    return signal_local(coord, job, signum, float(grace))


def signal_local(coord: Coordinator, job: Job, signum: int, grace: float) -> dict[str, Any]:
    """Signal the job group of a job that runs on this machine (the local engine's kill)."""
    record = job.record
    pid = record.pid
    if not pid:
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} is starting and has no process yet; try the command again in a "
            "moment"))
    token = record.pid_start_token
    if not (procs.same_process(pid, token) and procs.leads_group(pid)):
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} has no process: it stopped in the moment before this command, "
            f"and `qex status {job.id}` gives its result"))
    try:
        job_files.mark_killed(job.dir, signum)
    except OSError as exc:
        return protocol.error(protocol.INTERNAL, (
            f"qex could not mark the job {job.id} as stopped by a person "
            f"({exc.strerror or exc}), so it sent no signal; its record could not tell your stop "
            "from a crash"))
    if not procs.signal_group(pid, signum):
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} has no process: it stopped in the moment before this command, "
            f"and `qex status {job.id}` gives its result"))
    log(f"the signal {signal_name(signum)} went to the job {label(record)} (group {pid})")
    if signum != signal.SIGKILL and grace > 0:
        asyncio.get_running_loop().call_later(float(grace), _escalate, coord, job.id, pid, token)
    return protocol.ok()


def _escalate(coord: Coordinator, job_id: str, pid: int, token: str | None) -> None:
    """The grace is over: KILL the group, but only if it is still the same job process."""
    job = coord.jobs.get(job_id)
    if job is None:
        return
    coord.refresh(job)
    if not job.active or job.record.pid != pid:
        return
    if procs.same_process(pid, token) and procs.leads_group(pid):
        procs.signal_group(pid, signal.SIGKILL)
        log(f"the job {label(job.record)} outlived its grace; qex sent KILL to group {pid}")


def handle_cancel(coord: Coordinator, message: dict[str, Any], *,
                  wakes: SubmissionWakes | None = None) -> dict[str, Any]:
    """`wakes`: the connection's run of changes, which wakes the scheduler for the cancels
    of a group at most once per its gap instead of once per job (None: at once)."""
    found = _queued_or_error(coord, message.get("id"))
    if isinstance(found, dict):
        return found
    job = found
    try:
        cancel(coord, job, error=None, strict=True, wake=wakes is None or wakes.wake_now())
    except OSError as exc:
        return _unrecorded_cancel(job, exc)
    return protocol.ok()


#: How many jobs of a `cancel_many` or `clean_many` request are done in one turn of the
#: loop (a cancel's batch shares its syncs): the coordinator answers nobody else while a
#: batch is written (a few ms for 64 on a disk), and yields between batches.
MANY_BATCH = 64


def cancel_batch(coord: Coordinator, job_ids: Sequence[object], *,
                 wakes: SubmissionWakes | None = None) -> list[dict[str, Any]]:
    """The answers that `handle_cancel` gives for each of `job_ids` in turn, with the
    cancelled records of the queued ones written together (`Coordinator.finish_together`):
    one batch of a `cancel_many` request.

    An id that the batch names twice is answered, after the rest, as a second request
    would be. When the batch's write fails, each queued job is tried alone, so that every
    answer says whether its own job left the queue."""
    answers: list[dict[str, Any] | None] = []
    chosen: dict[str, Job] = {}
    again: dict[int, None] = {}  # in order
    for index, job_id in enumerate(job_ids):
        if isinstance(job_id, str) and job_id in chosen:
            again[index] = None
            answers.append(None)
            continue
        found = _queued_or_error(coord, job_id)
        if isinstance(found, dict):
            answers.append(found)
            continue
        chosen[found.id] = found
        answers.append(None)
    jobs = list(chosen.values())
    try:
        _cancel_together(coord, jobs)
    except OSError:
        outcomes = [handle_cancel(coord, {"id": job.id}, wakes=wakes) for job in jobs]
    else:
        if jobs and (wakes is None or wakes.wake_now()):
            coord.kick()
        outcomes = [protocol.ok() for _job in jobs]
    filled = iter(outcomes)
    for index, answer in enumerate(answers):
        if answer is None and index not in again:
            answers[index] = next(filled)
    for index in again:
        answers[index] = handle_cancel(coord, {"id": job_ids[index]}, wakes=wakes)
    return [answer for answer in answers if answer is not None]


def _queued_or_error(coord: Coordinator, job_id: object) -> Job | dict[str, Any]:
    """The queued job that a cancel names, or the answer that refuses it."""
    found = _job_or_error(coord, {"id": job_id})
    if isinstance(found, dict) or found.state == State.QUEUED:
        return found
    job = found
    if job.active:
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} operates now, so it is no longer in the queue; use "
            f"`qex kill {job.id}` to stop it"))
    return protocol.error(protocol.WRONG_STATE, (
        f"the job {job.id} already stopped in the state `{job.record.state}`, so there is "
        "nothing to cancel"))


def _unrecorded_cancel(job: Job, exc: OSError) -> dict[str, Any]:
    # A cancel that lived only in memory would be undone by a restart (the disk still says
    # `queued`, and the job runs), so the person must hear of it.
    from qex.coordinator.state import describe_os_error

    return protocol.error(protocol.INTERNAL, (
        f"qex could not record the cancel of the job {job.id} ({describe_os_error(exc)}), "
        "so the job stays queued; free space in the state directory and cancel it again"))


def _cancel_together(coord: Coordinator, jobs: Sequence[Job]) -> None:
    """`cancel(strict=True)` of several queued jobs, their records written together; the
    caller wakes the scheduler."""
    if not jobs:
        return
    coord.finish_together([(job, None, None) for job in jobs], State.CANCELLED, strict=True,
                          wake=False)
    for job in jobs:
        _leave_engine(coord, job)
        log(f"the job {label(job.record)} left the queue (cancelled)")


def cancel(coord: Coordinator, job: Job, *, error: str | None, strict: bool = False,
           wake: bool = True) -> None:
    """Take a queued job out of the queue, and out of its engine's (Slurm: scancel).

    `strict` (a person's cancel): the cancelled record is written once, durably, before
    anything else changes, and the OSError of a write that fails is raised with the job
    still queued here and in its engine (`Coordinator.finish`). Otherwise (its owner's
    connection ended) the engine hears first, and a failed write is tried again later.
    `wake`: as for `Coordinator.finish`."""
    if not strict:
        _leave_engine(coord, job)
    coord.finish(job, State.CANCELLED, error=error, strict=strict, wake=wake)
    if strict:
        _leave_engine(coord, job)
    log(f"the job {label(job.record)} left the queue (cancelled)")


def _leave_engine(coord: Coordinator, job: Job) -> None:
    if job.record.engine:
        from qex.engine.base import remote_engine

        engine = remote_engine(coord, job)
        if engine is not None:
            engine.cancel(job)


def holders(coord: Coordinator, target: Job) -> tuple[Job | None, Job | None]:
    """(an unfinished job that reads `target` via needs/after, an unfinished job of its group).

    `qex clean` asks this once per record it deletes, so it reads only the jobs that name
    others (`JobTable.linked`) and the unfinished jobs of the target's group
    (`JobTable.unfinished_in_group`), where a walk over every job made the clean of a group
    cost the square of its size."""
    reverse: dict[str, list[Job]] = {}
    for job in coord.jobs.linked():
        record = job.record
        for dep in [*record.needs, *record.after]:
            reverse.setdefault(dep, []).append(job)
    seen: set[str] = set()
    frontier = [target.id]
    while frontier:
        current = frontier.pop()
        for dependant in reverse.get(current, []):
            if dependant.id in seen:
                continue
            seen.add(dependant.id)
            if not dependant.final:
                return dependant, None
            frontier.append(dependant.id)
    group = target.record.group
    if group:
        working = [job for job in coord.jobs.unfinished_in_group(group) if job is not target]
        if working:
            return None, min(working, key=submission_key)  # the first, as the message names it
    return None, None


def handle_clean(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    found = _job_or_error(coord, message)
    if isinstance(found, dict):
        return found
    job = found
    coord.refresh(job)
    if not job.final:
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} has not stopped (its state is `{job.record.state}`); stop it "
            f"first with `qex kill {job.id}`, or `qex cancel {job.id}` while it waits"))
    reader, sibling = holders(coord, job)
    if reader is not None:
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} is needed by {label(reader.record)}, which has not stopped and "
            "reads this record to decide whether to run; wait for that job, or cancel it, and "
            "clean this one afterwards"))
    if sibling is not None:
        return protocol.error(protocol.WRONG_STATE, (
            f"the job {job.id} belongs to a pipeline that has work left ({label(sibling.record)} "
            "has not stopped); the record of each stage stays while the pipeline operates"))
    remove(coord, job)
    return protocol.ok()


def remove(coord: Coordinator, job: Job) -> None:
    """Delete a final job's record and directory, and leave a trace in the history."""
    now = coord.now()
    record = job.record
    # Only a skipped job names a `caused_by`, and a job is skipped only for what it needs,
    # so the jobs that name others hold every such reference (a walk over every job made
    # the clean of a large group cost the square of its size).
    for other in coord.jobs.linked():
        if other.record.caused_by == job.id and other is not job:
            other.record.caused_by = None
            other.record.error = (
                f"the job `{safe_name(record.name)}` ({record.state}) did not succeed, so this "
                "job did not run; that job's record is deleted, so there is no log to read")
            coord.write_logged(other)
    coord.forget(job)
    try:
        history.record_removed(coord.paths, record.id, record.name, record.submitted_at,
                               removed_at=now, final_state=record.state)
    except OSError as exc:
        log(f"qex could not note the removal of {label(record)} in the history: "
            f"{exc.strerror or exc}")
    job_files.remove_job_dir(job.dir)
