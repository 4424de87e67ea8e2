"""One scheduler pass: measure, build a `Snapshot`, call the pure `decide`, apply the result.

The decision itself lives in `qex.core.scheduler` (pure, tested without processes). This
module is the impure half: it reads the machine and the peers, writes the records that the
decision changes, and starts supervisors. A pass runs only when something changed or a
deadline that the decision depends on arrived (see `runner.next_deadline`).

Start order for one job: the record says `starting` (with `assigned`, `forced`,
`started_at`) BEFORE the supervisor touches the job (a parked supervisor is forked
meanwhile, and released once the record is written), so a crash between the two leaves a
record that recovery can put back in the queue; after the launch the supervisor is the
record's writer, and the coordinator keeps its pid in `supervisor.pid` (written before the
go of a supervisor that waits for one, so no moment exists in which it works on the job
while the disk names no supervisor).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, overload

from qex.coordinator import pausing
from qex.coordinator.log import log
from qex.coordinator.state import Coordinator, Job, describe_os_error, label
from qex.core import lock_table
from qex.core.config import Pool
from qex.core.model import dataclass, shallow_copy
from qex.core.records import Assignment, JobStatus, PoolClaim
from qex.core.scheduler_types import (
    Decision,
    JobView,
    KnownJob,
    LockSeen,
    PauseView,
    PeerLoad,
    Snapshot,
)
from qex.core.states import State
from qex.platform import chaintrace
from qex.platform import machine as machine_info
from qex.platform.held import HOLD_SECONDS
from qex.store import atomic
from qex.store import jobs as job_files

#: After a `starting` record was refused (a full disk), no job starts for this long, doubled
#: while the fault lasts.
DISK_WAIT_FIRST_SECS = 0.5
DISK_WAIT_MAX_SECS = 10.0

if TYPE_CHECKING:
    from qex.core.records import AssignmentPart


@dataclass
class PassResult:
    """What the runner needs to plan the next wake-up."""

    decision: Decision
    external_wait: bool      # a job waits for something outside qex's control (peers, memory)


def job_views(jobs: Iterable[Job]) -> tuple[JobView, ...]:
    """The scheduler's views of `jobs` (`job_view`)."""
    return tuple(map(job_view, jobs))


def job_view(job: Job) -> JobView:
    """The scheduler's view of a job, made again only when a field it shows has changed: a
    pass takes the view of each queued job it reads, once per job that ends while a long
    queue drains."""
    record = job.record
    key = (id(record), record.state, record.passed_by, record.blocked_since,
           record.blocked_reason, record.queue_pause_secs, record.cpu, record.mem,
           record.started_at, record.queue_time_applies, job.priority, job.max_queue_time)
    cached = job.view_cache
    if cached is not None and cached[0] == key:
        view: JobView = cached[1]
        return view
    view = _build_view(job)
    job.view_cache = (key, view)
    return view


class QueueViews(Sequence[JobView]):
    """`Snapshot.queue` over the coordinator's queue, less its dormant jobs
    (`Coordinator.judged_queued_jobs`): each job's view is made when the walk reaches it
    (`job_view`), so a partial pass that ends its walk early reads only the jobs before that
    point. The pass is synchronous, so the queue cannot change under it."""

    def __init__(self, coord: Coordinator) -> None:
        self._coord = coord

    def __len__(self) -> int:
        return sum(1 for _ in self._coord.judged_queued_jobs())

    def __iter__(self) -> Iterator[JobView]:
        return map(job_view, self._coord.judged_queued_jobs())

    @overload
    def __getitem__(self, index: int) -> JobView: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[JobView]: ...

    def __getitem__(self, index: int | slice) -> JobView | Sequence[JobView]:
        return job_views(self._coord.judged_queued_jobs())[index]


def known_job(job: Job) -> KnownJob:
    record = job.record
    key = (record.state, record.caused_by, record.name)
    cached = job.known_cache
    if cached is not None and cached[0] == key:
        known: KnownJob = cached[1]
        return known
    known = KnownJob(job.id, record.name, record.state, record.caused_by)
    job.known_cache = (key, known)
    return known


class KnownJobs(Mapping[str, KnownJob]):
    """`Snapshot.known` over every job of the coordinator, each made when a pass looks it up
    (a dependency's state, a name for a sentence). Building the whole table on each pass
    cost in proportion to the history; the pass is synchronous, so the table cannot change
    under it."""

    def __init__(self, jobs: dict[str, Job]) -> None:
        self._jobs = jobs

    def __getitem__(self, job_id: str) -> KnownJob:
        return known_job(self._jobs[job_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._jobs)

    def __len__(self) -> int:
        return len(self._jobs)


def _build_view(job: Job) -> JobView:
    record = job.record
    claims = {name: PoolClaim(int(c.get("count", 0)), c.get("size"))
              for name, c in (record.claims or {}).items()}
    assigned = {
        name: Assignment(int(a.get("units", 0)), list(a.get("devices") or []), a.get("size"))
        for name, a in (record.assigned or {}).items()
    }
    return JobView(
        id=record.id, name=record.name, state=record.state, priority=job.priority,
        submitted_at=record.submitted_at, sequence=record.sequence, cpu=record.cpu,
        mem=record.mem, locks=tuple(record.locks), claims=claims, needs=tuple(record.needs),
        after=tuple(record.after), max_queue_time=job.max_queue_time,
        queue_time_applies=record.queue_time_applies,
        queue_pause_secs=float(record.queue_pause_secs or 0.0), passed_by=record.passed_by,
        blocked_since=record.blocked_since, blocked_reason=record.blocked_reason,
        started_at=record.started_at, assigned=assigned,
    )


def build_snapshot(coord: Coordinator, now: float, peers: PeerLoad, *,
                   partial: bool = False, pause: PauseView | None = None) -> Snapshot:
    """`partial`: the pass may end its walk once nothing behind can start
    (`Snapshot.partial`). `pause`: the pause view, when the caller has made it already."""
    config = coord.config
    # The machine's free memory and pressure only judge queued jobs: a pass with none (an
    # idle coordinator looks once after each command) reads no /proc file.
    judging = bool(coord.queue)
    return Snapshot(
        now=now,
        queue=QueueViews(coord),
        dependent=job_views(coord.dependent_queued_jobs()),
        partial=partial,
        active=job_views(coord.holding_jobs()),
        known=KnownJobs(coord.jobs),
        cpu_budget=coord.cpu_budget(),
        mem_budget=coord.mem_budget(),
        pools=tuple(config.pools),
        peers=peers,
        mem_available=machine_info.mem_available() if judging else None,
        reserve_mem=config.system.reserve_mem,
        pressure=machine_info.memory_pressure() if judging else None,
        max_pressure=config.system.max_pressure,
        pause=pause if pause is not None else pausing.pause_view(coord),
        oversized=config.queue.oversized,
        max_bypass=config.queue.max_bypass,
        settle=config.queue.settle,
        idle_since=coord.idle_since,
    )


def run_pass(coord: Coordinator, peers: PeerLoad, *, partial: bool = False,
             pause: PauseView | None = None) -> PassResult:
    """Decide and apply once. Safe to call at any time on the loop thread. `partial`: the
    walk may end early (`Snapshot.partial`; `Decision.complete` says whether it did not).
    `pause`: the pause view the caller made after the due pauses ended (`Runner`)."""
    from qex.core.scheduler import decide

    now = coord.now()
    pausing.end_due_pauses(coord, now)
    _track_idle(coord, now)
    if pause is None:
        pause = pausing.pause_view(coord)
    coord.wake_dormant(_lock_view(coord, pause) if coord.dormant.watches_locks() else None)
    decision = decide(build_snapshot(coord, now, peers, partial=partial, pause=pause))
    apply(coord, decision)
    if (decision.starts and coord.dormant.watches_locks()
            and coord.wake_locked(_lock_view(coord, pause))):
        coord.kick()
    _track_idle(coord, coord.now())
    coord.queue_state = decision.queue_state
    coord.head_id = decision.head_id
    coord.head_blocker = decision.head_blocker
    external = decision.queue_state in ("waits-for-peer", "waits-for-machine")
    return PassResult(decision=decision, external_wait=external)


def _lock_view(coord: Coordinator, pause: PauseView) -> Callable[[str], LockSeen]:
    """What the lock rule would read of a name now (`qex.core.lock_table`), from the jobs
    that hold their claims, the declared pools and the person holds: the test of whether a
    job that waits for a lock may sleep on."""
    pools = tuple(coord.config.pools)
    declared = {pool.name for pool in pools}
    held = lock_table.holders(job_views(coord.holding_jobs()), pools)
    person = pause.locks
    return lambda name: lock_table.seen(name, declared, held.get(name), person)


def _track_idle(coord: Coordinator, now: float) -> None:
    if any(True for _ in coord.holding_jobs()):
        coord.idle_since = None
    elif coord.idle_since is None:
        coord.idle_since = now


def apply(coord: Coordinator, decision: Decision) -> None:
    coord.dependencies_met(decision.settled)
    coord.rest_waiting(decision.dependency_waits, decision.lock_waits)
    for job_id, update in decision.waits.items():
        job = coord.jobs.get(job_id)
        if job is None or job.state != State.QUEUED:
            continue
        record = job.record
        if (record.blocked_reason, record.blocked_since, record.passed_by) == (
            update.blocked_reason, update.blocked_since, update.passed_by
        ):
            continue
        record.blocked_reason = update.blocked_reason
        record.blocked_since = update.blocked_since
        record.passed_by = update.passed_by
        coord.defer_write(job)
        coord.publish(job)
    skipped: dict[str, tuple[Job, str | None, str | None]] = {}
    for skip in decision.skips:
        job = coord.jobs.get(skip.id)
        if job is not None and job.state == State.QUEUED:
            skipped.setdefault(job.id, (job, skip.error, skip.caused_by))  # the first
    _finish_in_batches(coord, list(skipped.values()), State.SKIPPED)
    expired: dict[str, tuple[Job, str | None, str | None]] = {}
    for expiry in decision.expiries:
        job = coord.jobs.get(expiry.id)
        if job is None or job.state != State.QUEUED or job.record.started_at is not None:
            continue
        expired.setdefault(job.id, (job, expiry.error, None))
    _finish_in_batches(coord, list(expired.values()), State.EXPIRED)
    holding = coord.disk_wait_until is not None and coord.now() < coord.disk_wait_until
    for start in () if holding else decision.starts:
        job = coord.jobs.get(start.id)
        if job is None or job.state != State.QUEUED:
            continue
        start_job(coord, job, {name: a.to_dict() for name, a in start.assigned.items()},
                  start.forced, start.forced_reason)
    if decision.skips or decision.expiries:
        # A skip can break the jobs that need the skipped one: look again at once.
        coord.kick()


#: How many jobs that a pass skips or expires share one batch of syncs
#: (`Coordinator.finish_together`, which holds a descriptor per record of a batch).
FINISH_BATCH = 64


def _finish_in_batches(coord: Coordinator, ends: list[tuple[Job, str | None, str | None]],
                       state: State) -> None:
    """The jobs that a pass skipped or expired, their records written a batch at a time;
    `apply` wakes the scheduler once for all of them."""
    for start in range(0, len(ends), FINISH_BATCH):
        coord.finish_together(ends[start:start + FINISH_BATCH], state, strict=False,
                              wake=False)


def start_job(coord: Coordinator, job: Job, assigned: dict[str, AssignmentPart],
              forced: bool, forced_reason: str | None) -> None:
    chaintrace.mark("co.start", job.id)
    now = coord.now()
    record = job.record
    before = shallow_copy(record)  # `_mark_starting` sets fields; it changes no list or dict
    _mark_starting(record, assigned, forced=forced, forced_reason=forced_reason, now=now,
                   boot_id=coord.boot_id)
    config = coord.config
    want_scope = config.enforce.mode != "off" and config.enforce.use_systemd
    # Without a scope the ready fork server forks the supervisor while the `starting`
    # record syncs; the child waits for its go until the record is written.
    plain = None if want_scope else coord.forkserver
    if not want_scope:
        _let_standby_go()  # the config no longer asks for scopes: no supervisor waits in one
    parked = plain is not None and plain.park(job.id, HOLD_SECONDS)
    try:
        coord.write(job, sync_dir=False)  # why the rename is not synced: `Coordinator.write`
    except OSError as exc:
        if plain is not None and parked:
            plain.discard_parked()
        wait_for_disk(coord, job, before, describe_os_error(exc), now)
        return
    chaintrace.mark("co.starting.written", job.id)
    coord.queue.remove(job.id)
    if coord.disk_wait_until is not None:
        coord.disk_wait_until = None
        coord.disk_wait_backoff = 0.0
        if not coord.unwritten:
            coord.write_problem = None
            log("qex can write its records again; jobs start")
    coord.last_start_at = now
    naming = _SupervisorName(job)
    forked = plain.release_parked(job.id, naming.write) if plain is not None and parked else None
    if forked is None and plain is not None:
        # A forked supervisor starts in about a millisecond instead of paying for its
        # imports; the fresh process below is the fallback.
        forked = plain.launch(job.id, HOLD_SECONDS, naming.write)
    chaintrace.mark("co.launched", job.id)
    coord.publish(job)
    if forked is not None:
        job.supervisor_pid = forked.pid
        job.supervisor_token = forked.start_token
        naming.ensure(forked.pid, forked.start_token)
        from qex.coordinator.reaper import watch_foreign

        watch_foreign(coord, job)
        # The mark keeps the name it had when the pid file was written here, after the go,
        # so that `bench.py --before` can set older trees beside this one.
        chaintrace.mark("co.pidfile", job.id)
        return
    from qex.platform.launch import launch_supervisor

    # With a scope, the pystemd backend can take a held supervisor from the same server.
    held = coord.forkserver.hold if (coord.forkserver and want_scope) else None
    try:
        launched = launch_supervisor(job.id, job.dir, want_scope=want_scope, env=dict(os.environ),
                                     fork=held, announce=naming.write,
                                     standby_log=coord.paths.daemon_log)
    except Exception as exc:
        log(f"qex could not start the supervisor of the job {label(record)}: {exc}")
        coord.finish(job, State.FAILED, error=(
            f"qex could not start the supervisor of this job: {exc}. Read the coordinator log "
            f"{coord.paths.daemon_log}, and submit the job again once the cause is fixed"))
        return
    job.supervisor_pid = launched.pid
    job.supervisor_token = launched.start_token
    job.inherited = False
    if not launched.forked:
        coord.children[launched.pid] = job.id
    if launched.note:
        log(f"the job {label(record)} runs without a scope: {launched.note}")
    elif launched.unit:
        log(f"the job {label(record)} runs in the scope {launched.unit} ({launched.backend})")
    naming.ensure(launched.pid, launched.start_token)
    if launched.forked:
        from qex.coordinator.reaper import watch_foreign

        watch_foreign(coord, job)


def _let_standby_go() -> None:
    """Let a standby supervisor go, if one waits in a scope (`launch.discard_standby`).

    Only the scope launcher starts standbys, so a coordinator that never loaded it has none,
    and a job started without a scope does not load it (`qex.platform.held` is all that
    start needs)."""
    launch = sys.modules.get("qex.platform.launch")
    if launch is not None:
        launch.discard_standby()


def _mark_starting(record: JobStatus, assigned: dict[str, AssignmentPart], *, forced: bool,
                   forced_reason: str | None, now: float, boot_id: str | None) -> None:
    record.state = State.STARTING
    record.assigned = assigned
    record.forced = forced
    record.forced_reason = forced_reason if forced else None
    record.started_at = now
    record.finished_at = None
    record.blocked_reason = None
    record.blocked_since = None
    record.passed_by = 0
    record.boot_id = boot_id


def wait_for_disk(coord: Coordinator, job: Job, queued: JobStatus, cause: str,
                  now: float) -> None:
    """The `starting` record could not be written: the job stays queued and says why.

    Starting it anyway would leave a record on disk that says `queued` for a job that runs
    (a later coordinator would run it a second time); failing it would tell the person to
    submit again a job that the disk still says is queued. So it waits, and no job starts
    until the pause is over (one fault at a time in the log).
    """
    coord.disk_wait_backoff = min(DISK_WAIT_MAX_SECS,
                                  max(DISK_WAIT_FIRST_SECS, coord.disk_wait_backoff * 2))
    coord.disk_wait_until = now + coord.disk_wait_backoff
    what = "disk space" if cause == "the disk is full" else f"its records to be writable ({cause})"
    queued.blocked_reason = (f"waits for {what}: qex could not write the record that starts it, "
                             "and tries again shortly")
    queued.blocked_since = queued.blocked_since or now
    if coord.write_problem != cause:
        log(f"qex could not write the record that starts the job {label(queued)} ({cause}); "
            "it stays queued and no job starts until the record can be written")
        coord.write_problem = cause
    job.record = queued
    coord.publish(job)


class _SupervisorName:
    """The job's `supervisor.pid`, written once per supervisor: before the go of one that
    waits for it (`write`, handed to the launch), else once its pid is known (`ensure`)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.named: tuple[int, str | None] | None = None

    def write(self, pid: int, token: str | None) -> None:
        _write_supervisor_pid(self.job, pid, token)
        self.named = (pid, token)

    def ensure(self, pid: int, token: str | None) -> None:
        if self.named != (pid, token):
            self.write(pid, token)


def _write_supervisor_pid(job: Job, pid: int, token: str | None) -> None:
    """`supervisor.pid` lets a later coordinator find the supervisor before its first write.

    A supervisor that waits for a go (parked by the fork server, or in the pystemd
    handshakes) is named here before the go (`ForkServer.release_parked`,
    `ScopeLauncher.launch`). Named after it, a `kill -9` of the coordinator between the go
    and this file left a `starting` record that named no supervisor while one ran the job:
    recovery took the job for never launched, queued it again, and it ran twice. A
    supervisor that starts at once (a plain fresh process, systemd-run) is named as soon as
    its pid is known.

    Atomic but not synced: it names a process of this boot, so it only has to survive the
    coordinator's death, which the page cache does. A power cut stops that process too, and
    then the record's boot id decides; until the supervisor's first synced write (moments
    later, in the same file system journal) the job may come back as never launched. Its
    two syncs had competed with the new supervisor's first files on every start.
    """
    text = f"{pid} {token or ''}".rstrip() + "\n"
    try:
        atomic.write_bytes(job.dir / job_files.SUPERVISOR_PID, text.encode(), mode=0o600,
                           durable=False)
    except OSError as exc:
        log(f"qex could not write {job.dir / job_files.SUPERVISOR_PID}: {describe_os_error(exc)}")


def peer_claims(coord: Coordinator) -> tuple[int, int, dict[str, int], dict[str, list[int]]]:
    """What this coordinator publishes: active cores, memory, pool units and device indices.

    Only declared pools are shared; an undeclared name is a lock inside this queue.
    """
    declared: dict[str, Pool] = {pool.name: pool for pool in coord.config.pools}
    cpu = mem = 0
    pools: dict[str, int] = {}
    devices: dict[str, set[int]] = {}
    for job in coord.holding_jobs():
        cpu += job.record.cpu
        mem += job.record.mem
        for name, assignment in (job.record.assigned or {}).items():
            if name not in declared:
                continue
            pools[name] = pools.get(name, 0) + int(assignment.get("units", 0))
            indices = assignment.get("devices") or []
            if indices:
                devices.setdefault(name, set()).update(int(i) for i in indices)
    return cpu, mem, pools, {name: sorted(found) for name, found in devices.items()}
