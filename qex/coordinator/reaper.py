"""Supervisor exits: reap our children, watch inherited supervisors, judge what each left.

The coordinator is the parent of every supervisor it starts, and on this kind of machine
PID 1 does not reap orphans, so the coordinator must reap ALL of its children (SIGCHLD ->
`waitpid(-1, WNOHANG)` until none is left); a zombie would otherwise still answer
`kill(pid, 0)` and look alive. Supervisors inherited from an earlier coordinator are not
our children: on Linux a pidfd becomes readable when such a process exits (zombie or not);
elsewhere a slow poll of the process identity stands in.

When a supervisor is gone, its record says what happened:
- final: adopt it (the supervisor normally told us already through `job_changed`);
- queued: the supervisor handed the job back for an OOM retry with a raised claim; the job
  goes back into the queue under the same id;
- anything else: the supervisor died without a result. If the job process is still ours, qex
  stops its group (it can no longer be measured or recorded), and the job is `failed` with a
  sentence that quotes the supervisor's last words.
"""

from __future__ import annotations

import asyncio
import os
import signal

from qex.coordinator.log import log
from qex.coordinator.state import Coordinator, Job, label
from qex.core import recovery_rule
from qex.core.records import JobStatus
from qex.core.states import State
from qex.platform import host, liveness, procs
from qex.store import jobs as job_files
from qex.store.jobs import supervisor_log_tail

#: How long a job's group gets after TERM before KILL, when qex stops an orphaned job.
GROUP_STOP_GRACE = 2.0
#: Identity poll for an inherited supervisor where no pidfd exists (the portable
#: implementation: macOS, or QEX_PLATFORM=portable).
FOREIGN_POLL_SECS = 2.0
#: Background tasks are kept referenced until they end (asyncio holds weak references only).
_TASKS: set[asyncio.Task[None]] = set()


def reap_children(coord: Coordinator) -> None:
    """SIGCHLD: collect every exited child, and judge the supervisors among them."""
    for pid in procs.reap_exited():
        job_id = coord.children.pop(pid, None)
        if job_id is None:
            continue  # a stop hook runner, or a child we do not track
        job = coord.jobs.get(job_id)
        if job is not None and job.supervisor_pid == pid:
            supervisor_gone(coord, job)


def watch_foreign(coord: Coordinator, job: Job) -> None:
    """Watch a supervisor that an earlier coordinator started (not our child)."""
    pid = job.supervisor_pid
    if pid is None:
        return
    loop = asyncio.get_running_loop()
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None and host.linux():
        try:
            fd = pidfd_open(pid)
        except ProcessLookupError:
            supervisor_gone(coord, job)
            return
        except OSError:
            fd = -1
        if fd >= 0:
            # The pid could have been reused between the identity check and the open.
            if not procs.same_process(pid, job.supervisor_token):
                os.close(fd)
                supervisor_gone(coord, job)
                return

            def unwatch() -> None:
                loop.remove_reader(fd)
                os.close(fd)

            def readable() -> None:
                job.unwatch = None
                unwatch()
                if job.supervisor_pid == pid:
                    supervisor_gone(coord, job)

            job.end_watch()  # one watch per job: the newest supervisor is the one that counts
            loop.add_reader(fd, readable)
            job.unwatch = unwatch
            return
    task = loop.create_task(_poll_foreign(coord, job, pid))
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


async def _poll_foreign(coord: Coordinator, job: Job, pid: int) -> None:
    """The portable fallback: a slow identity check of one inherited supervisor."""
    while not coord.stopping and job.supervisor_pid == pid:
        if not procs.same_process(pid, job.supervisor_token) or (
                job.record.supervisor_pid and job_files.supervisor_lock_free(job.dir)):
            supervisor_gone(coord, job)
            return
        await asyncio.sleep(FOREIGN_POLL_SECS)


def supervisor_gone(coord: Coordinator, job: Job) -> None:
    """The supervisor of `job` exited. Take its result, requeue it, or fail it."""
    job.supervisor_pid = None
    job.supervisor_token = None
    if job.final:
        return
    disk = coord.read_disk(job)
    if disk is not None and disk.final:
        coord.adopt(job, disk)
        return
    pending = job.pending
    if pending is not None and pending.final:
        # The supervisor died while its result waited for the disk: the result is known,
        # so record it (tried again with back-off while the disk refuses).
        log(f"the supervisor of the job {label(pending)} stopped before it could write the "
            "result; the coordinator records it")
        coord.adopt(job, pending)
        coord.write_logged(job)
        if coord.hook_runner is not None:
            coord.hook_runner(job)  # the supervisor died before it could run the stop hook
        return
    if pending is not None and pending.state == State.QUEUED:
        disk = pending
    if disk is not None and disk.state == State.QUEUED and job.state != State.QUEUED:
        requeue_after_oom(coord, job, disk)
        return
    if job.inherited and disk is not None and never_passed_go(coord, job, disk):
        job.record = disk
        requeue_untouched(coord, job)
        coord.publish(job)
        log(f"the supervisor that an earlier coordinator started for the job {label(disk)} "
            "exited before its go, and the job was not touched; it is queued again")
        coord.kick()
        return
    fail_without_result(coord, job, disk,
                        cause="the supervisor of this job stopped without a result")


def never_passed_go(coord: Coordinator, job: Job, disk: JobStatus) -> bool:
    """True when the recovery rule, asked again now that the supervisor has exited, finds the
    job never launched: a `starting` record with no job pid, whose supervisor took back its
    name or never took the job's lock.

    Only for a supervisor inherited from an earlier coordinator, which may have stopped
    between the name and the go: recovery found the waiting supervisor alive and watched it,
    and it then exits untouched. A supervisor that this coordinator let go and that dies
    before its lock has failed (its log says why), and queueing the job again would only
    repeat the fault.
    """
    pid_file = job_files.read_supervisor_pid_file(job.dir)
    facts = liveness.observe(disk.to_dict(), pid_file, coord.boot_id,
                             lock=job_files.supervisor_lock(job.dir))
    verdict = recovery_rule.judge(disk.state, bool(disk.pid), facts)
    return verdict.action == recovery_rule.REQUEUE


def requeue_untouched(coord: Coordinator, job: Job) -> None:
    """Put back in the queue a `starting` job that no supervisor touched, as if it had never
    been admitted (the same id, its place by submission time)."""
    record = job.record
    record.back_to_queue()
    record.started_at = None
    record.error = None
    record.assigned = {}
    record.forced = False
    record.forced_reason = None
    job.inherited = False
    job_files.forget_supervisor_lock(job.dir)
    coord.write_logged(job)
    coord.enqueue(job)


def requeue_after_oom(coord: Coordinator, job: Job, disk: JobStatus) -> None:
    """The supervisor raised the claim after a proven OOM and gave the job back to the queue."""
    disk.back_to_queue()
    job.record = disk
    job_files.forget_supervisor_lock(job.dir)
    coord.enqueue(job)
    coord.write_logged(job)
    coord.publish(job)
    log(f"the job {label(disk)} went back to the queue with a larger claim after a kill for memory")
    coord.kick()


def fail_without_result(
    coord: Coordinator, job: Job, disk: JobStatus | None, *, cause: str
) -> None:
    """Mark a job failed because nothing is left to report its result; stop its processes."""
    if disk is not None and disk.state != State.QUEUED:
        job.record = disk
    record = job.record
    stopped = bool(record.pid) and stop_job_group(int(record.pid or 0), record.pid_start_token)
    error = cause
    said = supervisor_log_tail(job.dir)
    if said:
        error += f". The supervisor said: {said}"
    if stopped:
        error += "; qex stopped the job process"
    record.supervisor_pid = None
    record.supervisor_start_token = None
    log(f"the job {label(record)} failed: {error}")
    coord.finish(job, State.FAILED, error=error)


async def _finish_group_stop(pgid: int, token: str | None) -> None:
    """TERM was sent; KILL the group if the same process is still there after the grace."""
    steps = int(GROUP_STOP_GRACE / 0.1)
    for _ in range(steps):
        await asyncio.sleep(0.1)
        if not procs.same_process(pgid, token):
            return
    procs.signal_group(pgid, signal.SIGKILL)


def stop_job_group(pid: int, token: str | None) -> bool:
    """Stop a job's process group (TERM now, KILL after a short grace). True if signalled."""
    if not (procs.same_process(pid, token) and procs.leads_group(pid)):
        return False
    if not procs.signal_group(pid, signal.SIGTERM):
        return False
    task = asyncio.get_running_loop().create_task(_finish_group_stop(pid, token))
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)
    return True
