"""One scheduler pass: which queued jobs start now, and why each other one waits.

Pure and deterministic: `decide(snapshot)` reads a `Snapshot` and returns a `Decision`; it
touches no file, process or clock (`now` is in the snapshot), so the hard rules of qex can be
tested with hypothesis in milliseconds.

The pass, in order:
1. Dependencies: a job whose `needs` failed is skipped (`caused_by` names the first job that
   failed, followed through skipped jobs); a job whose `needs`/`after` have not stopped waits,
   and is named in `Decision.dependency_waits` with the states that its verdict read.
2. Locks: a lock a person took, or an implicit lock an active job holds, makes a job wait,
   and is named in `Decision.lock_waits` with what the rule read of each name it claims.
   Jobs waiting for a dependency, a lock or the pause take no capacity, so they never become
   the head of the queue and never reserve anything.
3. The pause: nothing starts and nothing expires; skips still happen.
4. The walk over the ready jobs in queue order (see `_Walk`): admission tests, oversized jobs,
   and the bounded bypass that keeps capacity for the head after `max_bypass` jobs passed it.
   Several jobs may start in one pass; each start is counted before the next job is judged.
5. Expiry of jobs whose `max_queue_time` is over (never one that starts in this pass; the
   rule is `qex.core.queue_time`).

A partial pass (`Snapshot.partial`) ends its walk where nothing behind can start: the queue
is paused, the head holds the capacity it reserved, or the head waits and this queue's jobs
fill its cores or its memory, so that no job of a core and a byte fits. Each job's verdict
reads only the jobs before it, so what a partial pass decides is exactly what the whole pass
decides for the jobs it read; the jobs behind keep the reasons they have until the next
pass that reads them all. A long queue that drains runs a pass at every job's end, and the
whole walk made each pass cost in proportion to the queue (8,000 jobs drained at a third of
the rate of 500).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from qex.core import lock_table, queue_time
from qex.core import wait_reasons as words
from qex.core.config import Pool
from qex.core.model import dataclass
from qex.core.pause_text import lock_person_default, queue_fault_reason
from qex.core.pools import (
    EffectiveClaim,
    PoolUsage,
    add_assignment,
    assign,
    check_effective,
    effective_claims,
    free_devices,
)
from qex.core.records import Assignment
from qex.core.scheduler_deps import DependencyVerdicts, dependency_verdicts
from qex.core.scheduler_types import (
    Decision,
    DependencyWait,
    Expiry,
    JobView,
    LockSeen,
    LockWait,
    Skip,
    Snapshot,
    Start,
    WaitUpdate,
)
from qex.core.size_check import QUEUE, RUN_WHEN_IDLE, forced_reason, size_reason

#: Blocker classes: the words `qex info` shows as the queue state.
SIBLING = "waits-for-capacity"
PEER = "waits-for-peer"
MACHINE = "waits-for-machine"
IDLE = "waits-for-idle"
PARKED = "parked"
#: Only a wait whose holder qex itself will release may keep capacity for the head.
RESERVING = frozenset({SIBLING, IDLE})
#: Who holds the head back, for the health line (`Decision.head_blocker`).
HOLDERS = {
    SIBLING: "the jobs of this queue",
    PEER: "another user",
    MACHINE: "the machine",
    IDLE: "its own size",
    PARKED: "its own size or the configuration",
}


@dataclass(slots=True)
class _Verdict:
    """The outcome of the admission tests for one ready job."""

    blocker: str | None = None            # None: the job starts
    reason: str | None = None
    held: Callable[[int], str] | None = None  # the reason as a reserved head, given passed_by
    assigned: Mapping[str, Assignment] | None = None
    forced: bool = False
    forced_reason: str | None = None


class _Load:
    """What this queue holds: active jobs plus the ones started earlier in this pass."""

    def __init__(self, snap: Snapshot, pools: Mapping[str, Pool]) -> None:
        self.pools = pools
        self.cpu = 0
        self.mem = 0
        self.count = 0
        self.started_mem = 0
        self.usage: dict[str, PoolUsage] = {}
        self.lock_holders: dict[str, JobView] = {}
        for job in snap.active:
            self.add(job, job.assigned, started_now=False)

    def full(self, cpu_budget: int, mem_budget: int) -> bool:
        """No job of a core or more and a byte or more fits beside what this queue holds (an
        oversized one waits for the queue to be idle, which it is not)."""
        return self.count > 0 and (self.cpu >= cpu_budget or self.mem >= mem_budget)

    def add(self, job: JobView, assigned: Mapping[str, Assignment], *, started_now: bool) -> None:
        self.cpu += job.cpu
        self.mem += job.mem
        self.count += 1
        if started_now:
            self.started_mem += job.mem
        for name, assignment in assigned.items():
            usage = self.usage.setdefault(name, PoolUsage())
            add_assignment(usage, self.pools.get(name), assignment)
        if not job.locks and not job.claims:
            return
        for name, claim in effective_claims(job.locks, job.claims, self.pools.values()).items():
            if claim.pool is None:
                self.lock_holders.setdefault(name, job)
            elif name not in assigned:
                # An older record with no `assigned`: count the units it asked for.
                self.usage.setdefault(name, PoolUsage()).units += claim.count


_NO_CLAIMS: Mapping[str, EffectiveClaim] = {}


class _Walk:
    """Judges ready jobs against the live load, one at a time, in queue order."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.pools = {pool.name: pool for pool in snap.pools}
        self.load = _Load(snap, self.pools)
        # Exact names only: `target/debug` and `target_debug` are two locks. The coordinator
        # already turned what the person typed into the stored name (`pausing.resolve_lock`).
        self.person_locks = {name: name for name in snap.pause.locks}
        # Waits by (cores, memory, the load's count, the claims' mapping if any): a verdict
        # depends on nothing else, and a long queue of alike jobs is judged once per change
        # of the load instead of once per job (the pass runs at every job's end). The
        # mapping is known by its identity, which `claims_of` makes one per set of claims.
        self._waits: dict[tuple[int, ...], _Verdict] = {}
        self._watches: dict[tuple[tuple[str, ...], int], tuple[tuple[str, LockSeen], ...]] = {}
        self._claims: dict[object, Mapping[str, EffectiveClaim]] = {}

    def claims_of(self, job: JobView) -> Mapping[str, EffectiveClaim]:
        """Every name `job` needs, with its pool (`effective_claims`), made once a pass for
        every job that asks the same: a long queue of jobs that wait for one lock or one
        pool is judged again at each job's end. The mapping is shared, so nothing here may
        change it."""
        if not job.claims and not job.locks:
            return _NO_CLAIMS  # the walk tests this itself, to spare the call
        key: object = job.locks
        if job.claims:
            key = (job.locks, *[(name, claim.count, claim.size)
                                for name, claim in job.claims.items()])
        known = self._claims.get(key)
        if known is None:
            known = self._claims[key] = effective_claims(job.locks, job.claims,
                                                         self.pools.values())
        return known

    # -- locks --------------------------------------------------------------------------------

    def lock_reason(self, job: JobView, claims: Mapping[str, EffectiveClaim]) -> str | None:
        """Why a lock keeps this job waiting, or None; a person's hold is named first."""
        if self.person_locks:
            for name in claims:
                held = self.person_locks.get(name)
                if held is not None:
                    return self.snap.pause.locks[held] or lock_person_default(name)
        for name, claim in claims.items():
            if claim.pool is None:
                holder = self.load.lock_holders.get(name)
                if holder is not None:
                    return words.lock_held_by_job(name, words.job_label(holder.id, holder.name))
        return None

    def lock_watch(self, claims: Mapping[str, EffectiveClaim]) -> tuple[tuple[str, LockSeen], ...]:
        """What `lock_reason` read for a job with these claims: each name, as
        `lock_table.seen`. The same until a start changes the holders, so a queue of jobs
        that claim the same names makes it once (by the names and the load's count)."""
        key = (tuple(claims), self.load.count)
        known = self._watches.get(key)
        if known is not None:
            return known
        held = self.load.lock_holders
        person = self.snap.pause.locks
        watch = tuple(
            (name, lock_table.seen(name, self.pools, held[name].id if name in held else None,
                                   person))
            for name in claims)
        self._watches[key] = watch
        return watch

    # -- admission ----------------------------------------------------------------------------

    def judge(self, job: JobView, claims: Mapping[str, EffectiveClaim]) -> _Verdict:
        """`claims` must come from `claims_of` (its identity is part of the key)."""
        count = self.load.count
        key = (job.cpu, job.mem, count, id(claims)) if claims else (job.cpu, job.mem, count)
        known = self._waits.get(key)
        if known is not None:
            return known
        verdict = self._judge(job, claims)
        if verdict.blocker is not None:
            self._waits[key] = verdict
        return verdict

    def _judge(self, job: JobView, claims: Mapping[str, EffectiveClaim]) -> _Verdict:
        snap = self.snap
        if claims:
            message = check_effective(claims)
            if message is not None:
                return _Verdict(PARKED, words.pools_changed(message.rstrip(".")))
        too_big = size_reason(job.cpu, job.mem, snap.cpu_budget, snap.mem_budget)
        if too_big is not None:
            return self.judge_oversized(job, claims, too_big)
        return self.judge_fitting(job, claims)

    def judge_oversized(
        self, job: JobView, claims: Mapping[str, EffectiveClaim], too_big: str
    ) -> _Verdict:
        policy = self.snap.oversized
        if policy == QUEUE:
            return _Verdict(PARKED, words.oversized_parked(too_big))
        if policy != RUN_WHEN_IDLE:
            return _Verdict(PARKED, words.oversized_rejected(too_big))
        obstacle = self.idle_obstacle()
        if obstacle is None:
            outcome = self.pool_test(claims)
            if isinstance(outcome, dict):
                return _Verdict(assigned=outcome, forced=True, forced_reason=forced_reason(too_big))
            return outcome
        return _Verdict(
            IDLE,
            words.oversized_waiting(too_big, obstacle),
            lambda passed: words.oversized_held(too_big, obstacle, passed),
        )

    def idle_obstacle(self) -> str | None:
        """What stops an oversized job from running alone now, or None when it may."""
        snap = self.snap
        if self.load.count:
            return words.idle_obstacle_active(self.load.count)
        if snap.idle_since is not None and snap.now - snap.idle_since < snap.settle:
            return words.idle_obstacle_settle(snap.settle)
        if snap.peers.holds_anything:
            return words.idle_obstacle_peers()
        if snap.pressure is not None and snap.pressure > snap.max_pressure:
            return words.idle_obstacle_pressure(snap.pressure, snap.max_pressure)
        return None

    def judge_fitting(self, job: JobView, claims: Mapping[str, EffectiveClaim]) -> _Verdict:
        snap, load, peers = self.snap, self.load, self.snap.peers
        # 1. This queue's own jobs.
        own = ""
        if load.cpu + job.cpu > snap.cpu_budget:
            own = words.own_cores(job.cpu, load.cpu, snap.cpu_budget)
        elif load.mem + job.mem > snap.mem_budget:
            own = words.own_memory(job.mem, load.mem, snap.mem_budget)
        if own:
            return _sibling(own)
        # 2. Other users' claims on the same budget.
        if peers.cpu > 0 or peers.mem > 0:
            details: list[str] = []
            if load.cpu + peers.cpu + job.cpu > snap.cpu_budget:
                details.append(words.peer_cores(job.cpu, load.cpu, peers.cpu, snap.cpu_budget))
            if load.mem + peers.mem + job.mem > snap.mem_budget:
                details.append(words.peer_memory(job.mem, load.mem, peers.mem, snap.mem_budget))
            if details:
                return _Verdict(PEER, words.peer_capacity(tuple(details), peers.count))
        # 3. Pools.
        outcome = self.pool_test(claims)
        if not isinstance(outcome, dict):
            return outcome
        # 4. Memory the machine says a new program can use (measured once, so count our starts).
        if snap.mem_available is not None:
            available = snap.mem_available - load.started_mem
            if available < snap.reserve_mem + job.mem:
                return _Verdict(
                    MACHINE,
                    words.machine_memory(available, job.mem, snap.reserve_mem, snap.pressure),
                )
        # 5. Pressure.
        if snap.pressure is not None and snap.pressure > snap.max_pressure:
            return _Verdict(MACHINE, words.machine_pressure(snap.pressure, snap.max_pressure))
        return _Verdict(assigned=outcome)

    def pool_test(self, claims: Mapping[str, EffectiveClaim]) -> dict[str, Assignment] | _Verdict:
        """Assign every declared pool the job claims, or say which one is short and why."""
        assigned: dict[str, Assignment] = {}
        peers = self.snap.peers
        for name, claim in claims.items():
            pool = claim.pool
            if pool is None:
                continue
            usage = self.load.usage.get(name) or PoolUsage()
            peer_devices = peers.devices.get(name, frozenset())
            peer_units = peers.pools.get(name, 0) if not pool.indexed else 0
            got = assign(claim, pool, usage, peer_devices, peer_units)
            if got is not None:
                assigned[name] = got
                continue
            alone = assign(claim, pool, PoolUsage(), peer_devices, peer_units)
            arithmetic = self.arithmetic(claim, pool, usage, peer_devices, peer_units)
            if alone is not None:
                return _sibling(words.pool_sibling(name, arithmetic))
            if peer_devices or peer_units:
                return _Verdict(PEER, words.pool_peer(name, arithmetic))
            fit = len(free_devices(pool, claim.size, PoolUsage()))
            text = words.pools_changed(words.device_not_free(name, claim.count, fit))
            return _Verdict(PARKED, text)
        return assigned

    @staticmethod
    def arithmetic(
        claim: EffectiveClaim, pool: Pool, usage: PoolUsage, peer_devices: frozenset[int],
        peer_units: int,
    ) -> str:
        if pool.indexed:
            fit = len(free_devices(pool, claim.size, usage, peer_devices))
            return words.devices_arithmetic(claim.count, claim.size, pool.total, fit,
                                            len(peer_devices))
        return words.units_arithmetic(claim.count, pool.total, usage.units, peer_units)


def _sibling(text: str) -> _Verdict:
    return _Verdict(
        SIBLING, words.sibling_free(text), lambda passed: words.sibling_held(text, passed)
    )


def _pause_reason(snap: Snapshot) -> str | None:
    pause = snap.pause
    if pause.queue_reason is not None:
        return pause.queue_reason
    if pause.fault:
        return queue_fault_reason("the pause record is damaged")
    return None


def decide(snap: Snapshot) -> Decision:  # noqa: C901, PLR0912, PLR0915 (one pass, in the order of the rules)
    """Run one scheduler pass over `snap` (see the module docstring for the order)."""
    deps = dependency_verdicts(snap)
    pause_reason = _pause_reason(snap)
    paused = pause_reason is not None
    walk = _Walk(snap)
    now = snap.now

    new_reason: dict[str, str] = {}
    cause: dict[str, str] = {}
    starts: list[Start] = []
    started: set[str] = set()
    # Jobs whose queue time is over (none while paused, none that is skipped). Found in the
    # walk itself, before any rule passes a job over: each test reads the job alone, and
    # the walk runs at every job's end (a partial one does not reach them all: the runner
    # makes the pass whole once a limit is due).
    expiring: set[str] = set()

    head: JobView | None = None
    head_verdict = _Verdict()
    head_passed = 0
    reserved = False
    partial = snap.partial
    load = walk.load
    walked: list[JobView] = []
    read = walked.append
    dormant: list[DependencyWait] = []
    locked: dict[tuple[tuple[str, LockSeen], ...], list[str]] = {}
    complete = True
    for job in snap.queue:
        if partial and (paused or reserved or (
                head is not None and load.full(snap.cpu_budget, snap.mem_budget))):
            complete = False
            break
        read(job)
        if job.id in deps.skips:
            continue
        if (not paused and job.max_queue_time is not None
                and queue_time.expired(job, job.max_queue_time, now)):
            expiring.add(job.id)
        waiting = deps.waiting.get(job.id)
        if waiting is not None:
            new_reason[job.id], cause[job.id] = waiting, words.CAUSE_DEPENDENCY
            if job.max_queue_time is None:
                dormant.append(DependencyWait(job.id, deps.watch[job.id]))
            continue
        claims = walk.claims_of(job) if job.locks or job.claims else _NO_CLAIMS
        if claims:
            lock = walk.lock_reason(job, claims)
            if lock is not None:
                new_reason[job.id], cause[job.id] = lock, words.CAUSE_LOCK
                if job.max_queue_time is None:
                    locked.setdefault(walk.lock_watch(claims), []).append(job.id)
                continue
        if pause_reason is not None:
            new_reason[job.id], cause[job.id] = pause_reason, words.CAUSE_PAUSE
            continue
        cause[job.id] = words.CAUSE_CAPACITY
        if reserved and head is not None:
            new_reason[job.id] = words.behind_held_head(
                words.job_label(head.id, head.name), head.cpu, head.mem, head_passed)
            continue
        verdict = walk.judge(job, claims)
        if verdict.blocker is None:
            assigned = verdict.assigned or {}
            starts.append(Start(job.id, assigned, verdict.forced, verdict.forced_reason))
            started.add(job.id)
            load.add(job, assigned, started_now=True)
            if head is not None:
                head_passed += 1
                if head_verdict.blocker in RESERVING and head_passed >= snap.max_bypass:
                    reserved = True
            continue
        new_reason[job.id] = verdict.reason or ""
        if head is None and job.id not in expiring:
            head, head_verdict, head_passed = job, verdict, job.passed_by
            if verdict.blocker in RESERVING and head_passed >= snap.max_bypass:
                reserved = True

    if head is not None and reserved:
        new_reason[head.id] = _held_text(head_verdict, head_passed)

    expiries = tuple(
        Expiry(job.id, words.expired(queue_time.waited(job, now), job.max_queue_time or 0.0,
                                     new_reason.get(job.id) or job.blocked_reason,
                                     cause.get(job.id, words.CAUSE_CAPACITY)))
        for job in walked if job.id in expiring and job.id not in started
    )
    gone = started | {e.id for e in expiries} | set(deps.skips)
    waits: dict[str, WaitUpdate] = {}
    for job in walked:
        if job.id in gone:
            continue
        text = new_reason.get(job.id, job.blocked_reason)
        blocked_since, passed = job.blocked_since, job.passed_by
        if job is head:
            passed = head_passed
            if blocked_since is None:
                blocked_since = now
        if (text, blocked_since, passed) != (job.blocked_reason, job.blocked_since, job.passed_by):
            waits[job.id] = WaitUpdate(text, blocked_since, passed)

    return Decision(
        starts=tuple(starts),
        waits=waits,
        skips=_skips(walked, deps),
        expiries=expiries,
        queue_state=_queue_state(snap, paused, head, head_verdict, reserved),
        head_id=head.id if head is not None else None,
        head_blocker=HOLDERS.get(head_verdict.blocker or "") if head is not None else None,
        complete=complete,
        settled=tuple(deps.met),
        dependency_waits=tuple(dormant),
        lock_waits=tuple(LockWait(watch, tuple(ids)) for watch, ids in locked.items()),
    )


def _held_text(verdict: _Verdict, passed: int) -> str:
    if verdict.held is not None:
        return verdict.held(passed)
    return verdict.reason or ""


def _skips(walked: list[JobView], deps: DependencyVerdicts) -> tuple[Skip, ...]:
    if not deps.skips:
        return ()
    return tuple(
        Skip(job.id, deps.skips[job.id][1], deps.skips[job.id][0])
        for job in walked if job.id in deps.skips
    )


def _queue_state(
    snap: Snapshot, paused: bool, head: JobView | None, verdict: _Verdict, reserved: bool
) -> str:
    if paused:
        return "paused-by-fault" if snap.pause.fault else "paused"
    if head is None:
        return "running"
    if reserved:
        return "held"
    return verdict.blocker or "running"
