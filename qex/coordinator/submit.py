"""The `submit` request: accept a job, or say exactly why not (reference order of checks).

1. every `needs`/`after` id exists; 2. the dedupe key (a holder answers for the new job);
3. pause notes; 4. the pool check (a claim that can never be met is refused whatever
`[queue] oversized` says); 5. the size check against the budget; 6. the job directory and its
two records; 7. history, sequence, queue, events, and a wake-up of the scheduler.

The handler never awaits, so it is atomic on the loop: two submissions with one dedupe key
cannot both pass the holder rule.
"""

from __future__ import annotations

import errno
import os
import time
from typing import TYPE_CHECKING, Any

from qex.coordinator.log import log
from qex.coordinator.state import Coordinator, Job, label
from qex.core import protocol
from qex.core.names import is_uuid, lock_arg, lock_shown, safe_name, short_id
from qex.core.protocol import Result
from qex.core.records import JobSpec, JobStatus
from qex.core.states import State
from qex.core.units import MAX_COUNT, MAX_DURATION, MAX_SIZE
from qex.store import history
from qex.store import jobs as job_files

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

#: No machine has more cores than this; a larger claim is a slip, not a job.
MAX_CORES = 1 << 20


class Refusal(Exception):
    """A submission that is refused; `answer` is the error to send."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.answer = protocol.error(kind, message)


def parse_spec(raw: object) -> JobSpec:
    """A JobSpec from the wire, with the checks that protect the coordinator's invariants."""
    if not isinstance(raw, dict):
        raise Refusal(protocol.INTERNAL,
                      "qex could not read this job: the request has no `spec` object")
    try:
        spec = JobSpec.from_dict(raw)
    except TypeError as exc:
        raise Refusal(protocol.INTERNAL,
                      f"qex could not read this job: a field is missing ({exc})") from None
    problems = spec_problems(raw)
    if problems:
        raise Refusal(protocol.INTERNAL, "qex could not read this job: " + "; ".join(problems))
    return spec


def _is_text_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_count(value: object, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def spec_problems(raw: dict[str, Any]) -> list[str]:  # noqa: C901, PLR0912 (a check a field)
    """What makes a wire spec unusable (the values are checked as JSON gives them)."""
    problems: list[str] = []
    job_id = raw.get("id")
    if not isinstance(job_id, str) or not is_uuid(job_id):
        problems.append("its id is not a UUID")
    command = raw.get("command")
    if not _is_text_list(command) or not command:
        problems.append("its command is not a list of words")
    cwd = raw.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/"):
        problems.append("its directory is not an absolute path")
    if not isinstance(raw.get("env"), dict):
        problems.append("its environment is not a map")
    for field in ("cpu", "mem"):
        if not _is_count(raw.get(field), 1):
            problems.append(f"its `{field}` claim is not a whole number of 1 or more")
    if not isinstance(raw.get("name"), str):
        problems.append("its name is not text")
    submitted = raw.get("submitted_at")
    if isinstance(submitted, bool) or not isinstance(submitted, (int, float)):
        problems.append("its submission time is not a number")
    for field in ("needs", "after", "locks", "tags"):
        if field in raw and not _is_text_list(raw[field]):
            problems.append(f"its `{field}` is not a list of text")
    if not isinstance(raw.get("claims", {}), dict):
        problems.append("its `claims` is not a map")
    priority = raw.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        problems.append("its priority is not a whole number")
    elif abs(priority) > MAX_COUNT:
        problems.append(f"its priority is beyond any count qex keeps (at most {MAX_COUNT})")
    if _is_count(raw.get("mem"), 1) and raw["mem"] > MAX_SIZE:
        problems.append("its memory claim is larger than any machine (more than 1024PB)")
    if _is_count(raw.get("cpu"), 1) and raw["cpu"] > MAX_CORES:
        problems.append(f"its core claim is larger than any machine (more than {MAX_CORES})")
    for field in ("timeout", "max_queue_time", "dedupe_window"):
        value = raw.get(field)
        if value is None:
            continue
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0 <= value <= MAX_DURATION):
            problems.append(f"its `{field}` is not a time from 0 to 100 years")
    return problems


def _check_dependencies(coord: Coordinator, spec: JobSpec) -> None:
    for dep in [*spec.needs, *spec.after]:
        if dep not in coord.jobs:
            raise Refusal(protocol.NO_SUCH_JOB, (
                f"the job {dep} does not exist, so this job cannot wait for it; check the id "
                "with `qex list`, or submit without that dependency"))


def _dedupe_holder(coord: Coordinator, key: str, window: float) -> Job | None:
    """The job that already answers for this key, or None when the key is free."""
    holder_id = coord.dedupe.get(key)
    holder = coord.jobs.get(holder_id) if holder_id else None
    if holder is None:
        return None
    coord.refresh(holder)  # a job that just ended frees its key
    if not holder.final:
        return holder
    finished = holder.record.finished_at
    recent = finished is not None and coord.now() - finished < window
    if holder.state == State.COMPLETED and window > 0 and recent:
        return holder
    return None


def _deduplicated(holder: Job, key: str) -> dict[str, Any]:
    state = holder.record.state
    where = "starts now" if state == State.STARTING else f"is in the state `{state}`"
    warning = (
        f"this submission started no job: the dedupe key `{safe_name(key)}` belongs to the job "
        f"{holder.id}, which {where}. Wait for that job with `qex wait {short_id(holder.id)}`; "
        "its result answers for this submission too."
    )
    return protocol.answer(Result.SUBMITTED, id=holder.id, warning=warning, deduplicated=True)


def _pause_notes(coord: Coordinator, spec: JobSpec) -> tuple[list[str], str | None]:
    """Warnings about pauses, and the reason the record starts with (the queue pause)."""
    from qex.coordinator.pausing import pause_view

    notes: list[str] = []
    reason: str | None = None
    view = pause_view(coord)
    if view.queue_reason is not None:
        reason = view.queue_reason
        notes.append("the queue is paused, so this job waits; run `qex resume queue` to start "
                     "the queue again, or `qex pause` to see who paused it.")
    for lock in sorted(set(spec.locks) | set(spec.claims)):
        if lock in view.locks:
            notes.append(f"a person holds the lock `{lock_shown(lock)}`, so this job waits until "
                         f"`qex resume lock {lock_arg(lock)}`.")
    return notes, reason


def _size_policy(coord: Coordinator, spec: JobSpec) -> tuple[str | None, str | None]:
    """(warning, initial reason) for a claim larger than the whole budget; raises for reject."""
    from qex.core import size_check

    too_big = size_check.size_reason(spec.cpu, spec.mem, coord.cpu_budget(), coord.mem_budget())
    if too_big is None:
        return None, None
    policy = coord.config.queue.oversized
    if policy == size_check.REJECT:
        raise Refusal(protocol.WRONG_STATE, size_check.oversized_refusal(too_big))
    warning = size_check.oversized_warning(too_big, policy)
    return warning, (too_big if policy == size_check.RUN_WHEN_IDLE else None)


def _write_job(coord: Coordinator, spec: JobSpec, record: JobStatus,
               batch: NewJobs | None = None) -> Job:
    """Create the directory and both records; on any failure leave nothing behind. With
    `batch`, the records are only staged there, and the batch makes them durable
    (`NewJobs.commit`) before the event loop runs anything else."""
    job_dir = coord.paths.job_dir(spec.id)
    try:
        if batch is None:
            job_files.create_job(coord.paths, spec, record)
            return Job.from_records(spec, record, job_dir)
        staged = job_files.stage_job(coord.paths, spec, record)
    except OSError as exc:
        raise _write_refusal(coord, exc, spec.id, job_dir) from None
    job = Job.from_records(spec, record, job_dir)
    batch.pending.append((job, staged))
    return job


def _write_refusal(coord: Coordinator, exc: OSError, job_id: str, job_dir: Path) -> Refusal:
    if exc.errno == errno.EEXIST:
        return Refusal(protocol.WRONG_STATE, (
            f"a job with the id {job_id} already exists; a new submission needs a new id"))
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return Refusal(protocol.INTERNAL, (
            f"the disk that holds {coord.paths.state_dir} is full, so qex could not write the "
            "job record and nothing was queued; free some space (`qex gc` removes old "
            "records) and submit again"))
    return Refusal(protocol.INTERNAL, (
        f"qex could not write the job record in {job_dir} ({exc.strerror or exc}), so nothing "
        "was queued; fix that directory and submit again"))


class NewJobs:
    """The jobs of one group (`submit_words.submit_each`) queued since the batch was last
    committed: in memory as any queued job, their records staged on the disk but not yet
    durable, and not yet announced (no event, no history line).

    Each new job's records took four syncs of their own, and a fan-out of thousands of lines
    waited for all of them in turn; a batch's syncs are issued side by side and share the
    journal's commits (those of 8 jobs in 3.8 ms here against 7.9 ms). The group
    commits its batch before every yield to the event loop and before its answer, so no
    scheduler pass, other request or event reader ever sees a job that a power cut could
    still take back, and no job starts before its records are on the disk.
    """

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        #: Each job of the batch with its staged records, in submission order.
        self.pending: list[tuple[Job, job_files.StagedJob]] = []

    def commit(self) -> dict[str, Any] | None:
        """Make the batch durable and announce its jobs; None, or the refusal for the
        batch's first job when the disk refused the batch, whose jobs are then gone from
        memory and from the disk (the group's jobs before it stay queued)."""
        pending, self.pending = self.pending, []
        if not pending:
            return None
        coord = self.coord
        jobs = [job for job, _staged in pending]
        try:
            job_files.commit_jobs(coord.paths, [staged for _job, staged in pending])
        except OSError as exc:
            for job in jobs:
                coord.forget(job)
            return _write_refusal(coord, exc, jobs[0].id, jobs[0].dir).answer
        for job in jobs:
            _announce(coord, job)
        return None


def _announce(coord: Coordinator, job: Job) -> None:
    """A job now on the disk: its event, and its line in the history."""
    coord.publish(job)
    try:
        history.record_submitted(coord.paths, job.id, job.record.name,
                                 job.record.submitted_at)
    except OSError as exc:
        log(f"qex could not add the job {label(job.record)} to the history: "
            f"{exc.strerror or exc}")


#: In a run of submissions, the scheduler is woken at most once per this many seconds.
GROUP_PASS_GAP_SECS = 0.025
#: The clock of that gap (a test sets its own).
_clock = time.monotonic


class SubmissionWakes:
    """When a run of submissions wakes the scheduler: a group (`submit_words.submit_each`),
    or the `submit` and `cancel` requests of one connection (the full CLI sends a large
    fan-out so, and `qex cancel GROUP` a cancel per queued job: a cancel frees nothing, but
    a job behind the cancelled one may now pass, so it needs a pass as a new job does).

    A whole pass looks at every queued job. One pass per job made a fan-out of N lines cost N passes
    over a growing queue (measured: 1,000 lines took 4.6 s into an empty queue, 10 s behind
    2,000 queued jobs). So the first submission of a run wakes the scheduler at once (a free
    slot takes that job now), and the later ones at most once per `GROUP_PASS_GAP_SECS`: a
    submission that does not wake it leaves a wake-up due at the end of the gap, so no job
    waits longer than that for its pass. A single `qex submit` is a run of one. A job that
    gives a pass nothing to decide (`needs_pass`) asks for no wake-up at all.
    """

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.woken: float | None = None
        self._due: asyncio.TimerHandle | None = None

    def wake_now(self) -> bool:
        """For the next submission: True when it wakes the scheduler itself; False when the
        wake-up due within the gap covers it."""
        now = _clock()
        if self.woken is None or now - self.woken >= GROUP_PASS_GAP_SECS:
            self.woken = now
            if self._due is not None:  # this wake-up covers the jobs it was due for
                self._due.cancel()
                self._due = None
            return True
        if self._due is None:
            import asyncio

            left = self.woken + GROUP_PASS_GAP_SECS - now
            self._due = asyncio.get_running_loop().call_later(left, self._wake)
        return False

    def finish(self) -> None:
        """The run ended: the wake-up that is due happens now."""
        if self._due is not None:
            self._due.cancel()
            self._wake()

    def _wake(self) -> None:
        self._due = None
        self.woken = _clock()
        self.coord.kick()


def handle_submit(coord: Coordinator, message: dict[str, Any], *,
                  wakes: SubmissionWakes | None = None,
                  batch: NewJobs | None = None) -> dict[str, Any]:
    """`wakes`: the run of submissions this one belongs to, which decides when the
    scheduler wakes for it (`SubmissionWakes`); None wakes it at once. `batch`: the group's
    batch of new jobs (`NewJobs`), which the caller commits; a job with a dedupe key, or
    for another engine, is written durably at once all the same."""
    try:
        return _submit(coord, message, wakes, batch)
    except Refusal as refusal:
        return refusal.answer


def reason_at_the_end(coord: Coordinator, record: JobStatus, priority: int) -> str | None:
    """The reason that the next pass will give a job about to join the end of the queue,
    when the job last in the queue already shows it: that job waits for capacity alone (no
    lock, pool, dependency, and not the head, whose sentence is its own) and claims the same
    cores and memory, so the pass's walk reaches both in the same state and judges them
    alike. None when that cannot be known.

    Behind busy slots every queued job gets the same sentence, and a record queued without
    it was written a second time soon after, only to add it: a fan-out of 2,000 lines into
    such a queue wrote 6,000 records where 4,000 now do. A guess that turns out wrong
    (something changed since the last pass) is mended by the pass that the change woke,
    since the passes give every queued job its reason anew (a partial pass ends its walk
    only where nothing behind can start, and a whole one follows within its gap)."""
    if not coord.queue or record.locks or record.claims or record.needs or record.after:
        return None
    last = coord.jobs.get(coord.queue[-1])
    if last is None or last.priority < priority or last.id == coord.head_id:
        return None  # the new job would not follow it, or it is the head
    other = last.record
    if (other.state != State.QUEUED or other.blocked_since is not None
            or other.locks or other.claims or other.needs or other.after
            or (other.cpu, other.mem) != (record.cpu, record.mem)):
        return None
    return other.blocked_reason


def needs_pass(record: JobStatus, paused_reason: str | None, *, like_the_last: bool = False
               ) -> bool:
    """Whether a scheduler pass has anything to decide about a job just queued.

    While the whole queue is paused, a pass gives a job with no dependency, lock or pool
    claim the pause's reason, which is the reason it was queued with (`_pause_notes`), and
    it starts nothing: one more job that cannot start changes no other job's verdict. A
    fan-out into a paused queue still woke the scheduler every `GROUP_PASS_GAP_SECS`, and
    each of those passes gave every queued job its reason again, so the passes grew with
    the queue. A job that waits for another job, or for a lock or a pool (whose reason
    comes before the pause's), is still looked at.

    `like_the_last`: the job was queued with the reason of the job before it
    (`reason_at_the_end`) and has no queue time limit. A pass would judge it as it judged
    that job, which cannot start, and a job at the end of the queue changes no verdict of
    a job before it. Whatever changed since the last pass woke the scheduler itself, and
    the loop's deadlines are those it had, since no new limit came with the job.
    """
    if like_the_last:
        return False
    return (paused_reason is None or record.blocked_reason != paused_reason
            or bool(record.needs or record.after or record.locks or record.claims))


def _submit(coord: Coordinator, message: dict[str, Any],
            wakes: SubmissionWakes | None = None, batch: NewJobs | None = None
            ) -> dict[str, Any]:
    from qex.core.pools import check_claim

    spec = parse_spec(message.get("spec"))
    if spec.id in coord.jobs or os.path.lexists(coord.paths.job_dir(spec.id)):
        raise Refusal(protocol.WRONG_STATE, (
            f"a job with the id {spec.id} already exists; a new submission needs a new id"))
    _check_dependencies(coord, spec)
    key = spec.dedupe_key.strip() if isinstance(spec.dedupe_key, str) else None
    if key:
        holder = _dedupe_holder(coord, key, float(spec.dedupe_window or 0))
        if holder is not None:
            return _deduplicated(holder, key)
    if spec.engine and spec.engine != "local":
        return _submit_to_engine(coord, spec, key)
    warnings, reason = _pause_notes(coord, spec)
    paused_reason = reason
    problem = check_claim(spec.pool_claims(), spec.locks, coord.config.pools,
                          coord.config.defaults.vram,
                          config_path=str(coord.paths.config_file))
    if problem is not None:
        raise Refusal(protocol.WRONG_STATE, problem)
    size_warning, size_reason = _size_policy(coord, spec)
    if size_warning:
        warnings.append(size_warning)
    if reason is None:
        reason = size_reason
    record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=coord.config.retry.on_oom)
    record.sequence = coord.next_sequence
    copied = None if reason is not None else reason_at_the_end(coord, record, int(spec.priority))
    record.blocked_reason = reason if copied is None else copied
    # A dedupe key's holder is remembered beside the record, and a batch that the disk
    # refuses could not give back the holder it replaced: such a job is written at once.
    later = batch if not key else None
    job = _write_job(coord, spec, record, later)
    coord.next_sequence += 1
    coord.jobs[job.id] = job
    if key:
        coord.dedupe[key] = job.id
    coord.enqueue(job)
    if later is None:
        _announce(coord, job)  # a batch's jobs are announced once it is committed
    like_the_last = copied is not None and spec.max_queue_time is None
    if (needs_pass(record, paused_reason, like_the_last=like_the_last)
            and (wakes is None or wakes.wake_now())):
        coord.kick()
    return {"result": Result.SUBMITTED, "id": job.id, "warning": " ".join(warnings) or None,
            "deduplicated": False}


def _submit_to_engine(coord: Coordinator, spec: JobSpec, key: str | None) -> dict[str, Any]:
    """A job for another engine (Slurm): that engine admits it, so the budget, the peers and
    the pause of this machine's queue do not apply; the engine refuses what it can never run."""
    from qex.engine.base import engine_for, known_kinds

    if spec.engine not in known_kinds():
        raise Refusal(protocol.WRONG_STATE, (
            f"this coordinator knows no engine `{safe_name(str(spec.engine))}`; the engines are "
            f"{', '.join(known_kinds())}"))
    engine = engine_for(coord, str(spec.engine))
    problem = engine.refuse(spec)
    if problem is not None:
        raise Refusal(protocol.WRONG_STATE, problem)
    record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=coord.config.retry.on_oom)
    record.sequence = coord.next_sequence
    job = _write_job(coord, spec, record)
    coord.next_sequence += 1
    coord.jobs[job.id] = job
    if key:
        coord.dedupe[key] = job.id
    engine.accept(job)
    _announce(coord, job)
    return {"result": "submitted", "id": job.id, "warning": None, "deduplicated": False}
