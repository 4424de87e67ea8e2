"""The coordinator's memory: the jobs it knows, the queue order, and the primitive changes.

Everything here runs on the event-loop thread, so no lock is needed: a handler that does
not `await` between reading and writing the state is atomic with respect to every other.

Single-writer rule for `status.json` (see `qex.core.records`): the coordinator writes a
record while the job is queued, at the `starting` step, and when it makes a final state
itself (cancel, skip, expiry, launch failure, a supervisor that died without a result,
recovery). Between the launch and the final record the supervisor writes it, and the
coordinator only reads (`refresh`).
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import filterfalse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.coordinator.dormant import DormantJobs
from qex.coordinator.events import EventHub
from qex.coordinator.filter_index import FilterIndex
from qex.coordinator.job_queue import JobQueue
from qex.coordinator.log import log
from qex.coordinator.word_index import WordIndex
from qex.core.config import Config, Machine
from qex.core.job_words import NameForms, word_test
from qex.core.model import dataclass, field, shallow_copy
from qex.core.records import JobSpec, JobStatus
from qex.core.scheduler_types import DependencyWait, LockSeen, LockWait, PeerLoad
from qex.core.state_words import NOT_FINAL_WORDS
from qex.core.states import ACTIVE, FINAL, State, rank
from qex.store import jobs as job_files
from qex.store.paths import Paths
from qex.store.pause import PauseFile

#: How long a queued job's changed reason may wait before its record is written.
REASON_WRITE_DELAY = 0.5
#: How many of those records are written in one turn of the loop (`_write_turn`).
REASON_WRITES_PER_TURN = 8
#: A record the disk refused is tried again after this pause, doubled up to the maximum.
WRITE_RETRY_FIRST_SECS = 0.5
WRITE_RETRY_MAX_SECS = 10.0
_FINAL_TEXT = frozenset(state.value for state in FINAL)
_ACTIVE_TEXT = frozenset(state.value for state in ACTIVE)


def submission_key(job: Job) -> tuple[float, int]:
    """Where a job stands in submission order, the order of every listing: its submission
    time, then its sequence number for a tie."""
    return job.record.submitted_at, job.record.sequence


def in_submission_order(jobs: Iterable[Job]) -> list[Job]:
    return sorted(jobs, key=submission_key)


class JobTable(dict[str, "Job"]):
    """The coordinator's jobs by id, with the ids of those not yet final kept apart.

    A scheduler pass looks at the queued and active jobs several times, and a coordinator
    that has run for weeks holds thousands of finished ones; scanning them all made every
    pass cost in proportion to the history. A final state never changes again (the
    reaper and the notes refuse a record that moves back), so an id leaves the live set the
    first time `live()` finds its job final, gone, or replaced.

    For the same reason the table keeps the submission order of its jobs (until the jobs it
    holds change), an index of the words that name them (`WordIndex`) and one of their tags
    and directories (`FilterIndex`), both kept as jobs are added and removed (a job's id,
    name, group, tags and directory are set at its submission and every record written
    later copies them).
    """

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[str, None] = {}  # insertion-ordered, like the table
        #: Counts the changes of which jobs the table holds (`ordered` keeps its order
        #: until the next one).
        self.version = 0
        self._sorted: tuple[int, list[Job]] | None = None
        self._words = WordIndex()
        self._filters = FilterIndex()
        #: The jobs that name others in `needs` or `after`, in any state (`linked`).
        self._linked: dict[str, None] = {}
        #: The live jobs outside the queue (`outside`): told by the queue (`joined`, `left`).
        self._outside: dict[str, None] = {}

    def __setitem__(self, job_id: str, job: Job) -> None:
        super().__setitem__(job_id, job)
        self.version += 1
        self._words.add(job.name_forms())
        self._filters.add(job_id, job.record.tags, job.record.cwd)
        if not job.final:
            self._live[job_id] = None
            self._outside[job_id] = None  # until the queue says it joined
        if job.record.needs or job.record.after:
            self._linked[job_id] = None

    def joined(self, job_id: str) -> None:
        """The job entered the queue (`JobQueue`)."""
        self._outside.pop(job_id, None)

    def left(self, job_id: str) -> None:
        """The job left the queue: it starts, or it stopped."""
        if job_id in self:
            self._outside[job_id] = None

    def outside(self) -> Iterator[Job]:
        """The live jobs that are not in the queue, in the order they left it (or were
        added, for those never queued): the active jobs are among them. What a scheduler
        pass asks several times, and with thousands queued a look at every live job made
        each ask cost a walk of the queue."""
        return self._unfinished(self._outside)

    def __delitem__(self, job_id: str) -> None:
        super().__delitem__(job_id)
        self.version += 1
        self._words.remove(job_id)
        self._filters.remove(job_id)
        self._linked.pop(job_id, None)

    def pop(self, job_id: str, *default: Any) -> Any:
        self.version += 1
        self._words.remove(job_id)
        self._filters.remove(job_id)
        self._linked.pop(job_id, None)
        return super().pop(job_id, *default)

    def clear(self) -> None:
        super().clear()
        self.version += 1
        self._words = WordIndex()
        self._filters = FilterIndex()
        self._linked = {}
        self._outside = {}

    def linked(self) -> Iterator[Job]:
        """The jobs that name others in `needs` or `after`, finished or not, in the order
        they were added: what `qex clean` asks about every record it deletes, where most
        jobs name none."""
        for job_id in self._linked:
            job = self.get(job_id)
            if job is not None:
                yield job

    def unfinished_in_group(self, group: str) -> list[Job]:
        """The jobs of one group (a pipeline, a fan-out) that are not final, in no particular
        order: found among the live jobs or among the group's, whichever are fewer (a group
        whose jobs all stopped costs nothing while few jobs live)."""
        if len(self._live) <= self._words.member_count(group):
            return [job for job in self.live() if job.record.group == group]
        found = (self.get(job_id) for job_id in self._words.members(group))
        return [job for job in found if job is not None and not job.final]

    def named_by(self, word: str) -> list[Job]:
        """The jobs that `word` may name (`job_words.may_name`), in submission order: the
        index's few candidates, each tested by the rule."""
        test = word_test(word)
        found = self._words.candidates(word)
        pool = self.values() if found is None else [self[i] for i in found if i in self]
        jobs = [job for job in pool if test(job.name_forms())]
        jobs.sort(key=submission_key)
        return jobs

    def for_states(self, states: Iterable[str] | None) -> list[Job]:
        """The jobs a filter of `states` chooses from, in submission order: only the jobs
        that are not final when every state asked for is one of theirs (`list --state
        running`, which agents repeat, then looks at the queue and the running jobs, not at
        the thousands of finished ones a coordinator may hold); else every job."""
        if states and set(states) <= NOT_FINAL_WORDS:
            return in_submission_order(self.live())
        return self.ordered()

    def tagged_or_in(self, tags: Iterable[str] = (), cwd_dir: str | None = None,
                     under_dir: str | None = None) -> list[Job] | None:
        """The jobs that a filter of tags and directories may keep (`FilterIndex`), in
        submission order; None when the filter has none of the three. A few candidates are
        sorted; many (a directory where most jobs ran) are picked from the kept order, which
        costs a set look-up per job where a sort of thousands cost milliseconds."""
        found = self._filters.candidates(tags, cwd_dir, under_dir)
        if found is None:
            return None
        if len(found) * 8 < len(self):
            return in_submission_order(self[i] for i in found if i in self)
        return [job for job in self.ordered() if job.id in found]

    def ordered(self) -> list[Job]:
        """Every job in submission order (the time, then the sequence for a tie): sorted
        once per change of the jobs held, not for every listing (5,000 records took 2-3 ms
        to sort). The two keys are set at submission and every record written later copies
        them, so a job's place never moves while it is held."""
        kept = self._sorted
        if kept is None or kept[0] != self.version:
            order = in_submission_order(self.values())
            kept = self._sorted = (self.version, order)
        return list(kept[1])

    def track(self, job_id: str) -> None:
        """Count a job as live again (one that re-enters the queue; cheap insurance)."""
        if job_id in self:
            self._live[job_id] = None

    def live(self) -> Iterator[Job]:
        """The jobs that are not final, in the order they were added."""
        return self._unfinished(self._live)

    def _unfinished(self, index: dict[str, None]) -> Iterator[Job]:
        """The jobs of `index` that are not final; an id leaves the index the first time it
        is found final or gone (a final state never changes again)."""
        for job_id in list(index):
            job = self.get(job_id)
            if job is None or job.final:
                index.pop(job_id, None)
            else:
                yield job

if TYPE_CHECKING:
    from qex.coordinator.forking import ForkServer
    from qex.coordinator.listing import Listed


@dataclass
class Job:
    """One job in memory: its record, and what the scheduler needs from its spec."""

    record: JobStatus
    dir: Path
    priority: int = 0
    #: From the spec when the job is made; `Coordinator.enqueue` indexes the jobs that have one.
    max_queue_time: float | None = None
    dedupe_window: float = 0.0
    #: The dedupe key from spec.json (the record holds a reader's copy).
    dedupe_key: str | None = None
    #: The supervisor, when this coordinator knows it: its pid and start token (a child is
    #: reaped on SIGCHLD, one inherited from an earlier coordinator is watched).
    supervisor_pid: int | None = None
    supervisor_token: str | None = None
    #: Ends the watch on an inherited or forked supervisor (`reaper.watch_foreign`). Called
    #: once the job is final: the watch only judges a job that is not, and a forked
    #: supervisor may live on to serve other jobs.
    unwatch: Callable[[], None] | None = None
    #: The supervisor was started by an earlier coordinator (recovery found it alive): when
    #: it exits with the job untouched, the job goes back to the queue (`reaper.supervisor_gone`).
    inherited: bool = False
    #: The scheduler's last view of this job, and the record fields it was built from:
    #: a pass over a long queue reuses the views of the jobs that did not change.
    view_cache: tuple[Any, Any] | None = None
    known_cache: tuple[Any, Any] | None = None
    #: What the two listings keep of this job between listings (`listing.Listed`): the
    #: `list --json` item and the `qex list` row, remade when the record changes.
    listed: Listed | None = None
    #: A result the supervisor has decided but not yet written (it says so just before it
    #: writes a final result, and again while a full disk refuses one), and the sentence to
    #: show while it waits; recorded by the coordinator should the supervisor die first. The
    #: job's processes have ended by then, so it no longer holds its claims (`holding_jobs`).
    pending: JobStatus | None = None
    pending_note: str | None = None
    #: What a typed word is compared with (`name_forms`), made again only when they change.
    forms_cache: NameForms | None = None
    #: The fields the listing filters read, kept once the job is final (`listing`).
    filter_fields: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return self.record.id

    def name_forms(self) -> NameForms:
        """The job's id, group and names in the forms a word is compared with."""
        record = self.record
        group, group_name = record.group or "", record.group_name or ""
        forms = self.forms_cache
        if forms is None or not forms.same(record.id, record.name, group, group_name):
            forms = self.forms_cache = NameForms(record.id, record.name, group, group_name)
        return forms

    def end_watch(self) -> None:
        unwatch, self.unwatch = self.unwatch, None
        if unwatch is not None:
            unwatch()

    @property
    def state(self) -> State:
        return State(self.record.state)

    @property
    def final(self) -> bool:
        # String tests on purpose: these run for every job in every scheduler pass, and
        # building a State from the text each time was a large part of a pass.
        return self.record.state in _FINAL_TEXT

    @property
    def active(self) -> bool:
        return self.record.state in _ACTIVE_TEXT

    @classmethod
    def from_records(cls, spec: JobSpec, record: JobStatus, job_dir: Path) -> Job:
        key = spec.dedupe_key.strip() if isinstance(spec.dedupe_key, str) else None
        return cls(record=record, dir=job_dir, priority=int(spec.priority),
                   max_queue_time=spec.max_queue_time, dedupe_window=float(spec.dedupe_window or 0),
                   dedupe_key=key or None)


def label(record: JobStatus) -> str:
    """`id8 (safe name)`: how a sentence names a job."""
    from qex.core.names import safe_name, short_id

    return f"{short_id(record.id)} ({safe_name(record.name) or 'job'})"


@dataclass
class Coordinator:
    """The live state. Handlers, the scheduler pass and the reaper all work on this object."""

    paths: Paths
    config: Config
    machine: Machine
    events: EventHub
    started_at: float
    idle_limit: float
    boot_id: str
    jobs: JobTable = field(default_factory=JobTable)
    queue: JobQueue = field(default_factory=JobQueue)
    next_sequence: int = 1
    dedupe: dict[str, str] = field(default_factory=dict)
    pauses: PauseFile = field(default_factory=PauseFile)
    #: pid -> job id, for every supervisor this coordinator started (its children).
    children: dict[int, str] = field(default_factory=dict)
    idle_since: float | None = None
    last_start_at: float | None = None
    last_contact: float = 0.0
    config_error: str | None = None
    queue_state: str = "running"
    head_id: str | None = None
    head_blocker: str | None = None
    #: The other coordinators' claims as last read, and why the peers dir is unusable.
    peer_load: PeerLoad = field(default_factory=PeerLoad)
    peers_problem: str | None = None
    stopping: bool = False
    stop_reason: str = ""
    #: Counted for `qex info`: how often the main loop woke (the idle cost of a coordinator).
    wakeups: int = 0
    _waiters: dict[str, list[asyncio.Future[None]]] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set at start: spawns the stop hook of a job that the coordinator made final.
    hook_runner: Callable[[Job], None] | None = None
    #: Set by the runner: reads the other coordinators' claims now (rate-limited).
    peer_refresher: Callable[[], PeerLoad] | None = None
    #: Set at start: forks ready supervisors (None: always start a fresh process).
    forkserver: ForkServer | None = None
    #: The engines other than this machine's queue, by kind (`qex.engine.base.engine_for`).
    engines: dict[str, Any] = field(default_factory=dict)
    #: Queued jobs whose changed reason waits for the next batch (`defer_write`), and those
    #: of the batch now being written, a few per turn of the loop.
    _deferred: dict[str, None] = field(default_factory=dict)
    _due: dict[str, None] = field(default_factory=dict)
    #: The ids of queued jobs with a `max_queue_time` (`timed_queued_jobs`), kept by `enqueue`.
    _timed: dict[str, None] = field(default_factory=dict)
    #: The ids of queued jobs with a `needs` or an `after` (`awaited`), kept by `enqueue`,
    #: less those whose dependencies are met for good (`dependencies_met`).
    _dependent: dict[str, None] = field(default_factory=dict)
    #: Queued jobs that wait for a dependency whose state, or a lock whose holders, have not
    #: changed since a pass judged them (`rest_waiting`): left out of the passes, and out of
    #: `_dependent`.
    dormant: DormantJobs = field(default_factory=DormantJobs)
    _flush_handle: asyncio.TimerHandle | None = None
    _turn_handle: asyncio.Handle | None = None
    #: Records that memory holds and the disk refused (a full disk): written again when
    #: `write_retry_at` comes, with a pause that doubles while the fault lasts.
    unwritten: set[str] = field(default_factory=set)
    #: Job directories whose record could not be read at start: id -> the file's path.
    damaged: dict[str, str] = field(default_factory=dict)
    write_problem: str | None = None
    write_retry_at: float | None = None
    write_backoff: float = 0.0
    #: No job starts before this time: its `starting` record could not be written.
    disk_wait_until: float | None = None
    disk_wait_backoff: float = 0.0

    def __post_init__(self) -> None:
        self.queue.listen(joined=self.jobs.joined, left=self.jobs.left)

    # -- time and wake-ups -------------------------------------------------------------

    @staticmethod
    def now() -> float:
        return time.time()

    def kick(self) -> None:
        """Something changed that the scheduler must look at: wake the main loop."""
        self._wake.set()

    async def wait_for_kick(self, timeout: float | None) -> None:
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            pass
        self._wake.clear()

    def is_stopping(self) -> bool:
        """The flag, read through a call (another task may have set it while we awaited)."""
        return self.stopping

    def touch(self) -> None:
        self.last_contact = self.now()

    # -- views ---------------------------------------------------------------------------

    def started_jobs(self) -> Iterator[Job]:
        """The active jobs, of every engine: found among the live jobs outside the queue
        (`JobTable.outside`), since no queued job is active."""
        return (job for job in self.jobs.outside() if job.active)

    def active_jobs(self) -> Iterator[Job]:
        """The active jobs of this machine (another engine's run elsewhere)."""
        return (job for job in self.started_jobs() if not job.record.engine)

    def running_count(self) -> int:
        """How many jobs of this machine run (`jobs_running` in `info` and in a pause's
        answer)."""
        return sum(1 for _ in self.active_jobs())

    def holding_jobs(self) -> Iterator[Job]:
        """The active jobs that still hold their claims. A job whose supervisor has sent its
        decided result (`Job.pending`) has no process left, so the next job may start while
        that result is synced to the disk; its record still says `running` until then."""
        return (job for job in self.active_jobs() if job.pending is None)

    def queued_jobs(self) -> Iterator[Job]:
        # In C (`map`, `filter`): a pass takes every queued job, once per job as a long queue
        # drains. A `Job` is always true, so `filter(None, ...)` drops only the missing ids.
        return filter(None, map(self.jobs.get, self.queue))

    def judged_queued_jobs(self) -> Iterator[Job]:
        """The queued jobs that a pass reads: all but the dormant ones."""
        if not self.dormant:
            return self.queued_jobs()
        return filter(None, map(self.jobs.get, filterfalse(self.dormant.jobs.__contains__,
                                                           self.queue)))

    def dependent_queued_jobs(self) -> Iterator[Job]:
        """The queued jobs that have a `needs` or an `after` (an index, like
        `timed_queued_jobs`): a pass judges their dependencies without reading the queue."""
        return self._still_queued(self._dependent)

    def dependencies_met(self, job_ids: Iterable[str]) -> None:
        """Take queued jobs whose dependencies a pass found met for good out of the index of
        dependent jobs (`Decision.settled`): every pass judged each of them again, and a
        fan-out of 2,000 jobs that needed one job that had completed drained at 160 jobs/s,
        against 290 for one that needed nothing. A job that joins the queue again is
        indexed again by `enqueue`."""
        for job_id in job_ids:
            self._dependent.pop(job_id, None)

    def rest_waiting(self, waits: Iterable[DependencyWait],
                     locked: Iterable[LockWait] = ()) -> None:
        """Leave out of later passes the queued jobs that a pass found waiting for a
        dependency or a lock (`Decision.dependency_waits`, `Decision.lock_waits`), until
        `wake_dormant` sees what they wait for change."""
        for job_id in self.dormant.rest(waits):
            self._dependent.pop(job_id, None)
        # Those that wait for a lock met their dependencies for good, and a pass settled
        # them already (`dependencies_met`).
        self.dormant.rest_locked(locked)

    def wake_dormant(self, lock_of: Callable[[str], LockSeen] | None = None) -> None:
        """Give back to the passes the dormant jobs that wait for a job whose state changed,
        or for a lock that `lock_of` sees otherwise now (without it, every job that waits
        for a lock wakes). Asked before each pass."""
        if not self.dormant:
            return
        jobs = self.jobs

        def state_of(job_id: str) -> str | None:
            job = jobs.get(job_id)
            return job.record.state if job is not None else None

        # A job woken from a lock met its dependencies for good (the lock rule comes after
        # them): only those woken from a dependency go back to the index of dependent jobs.
        for job_id in self.dormant.wake_changed(state_of, lock_of)[0]:
            job = jobs.get(job_id)
            if job is not None and job.record.state == State.QUEUED:
                self._dependent[job_id] = None

    def wake_locked(self, lock_of: Callable[[str], LockSeen]) -> bool:
        """Give back to the passes the dormant jobs that wait for a lock that `lock_of` sees
        otherwise now; True if any woke. Asked after a pass that started jobs: a start may
        take a name that a sleeper saw free, and a whole judgement may then name that lock
        instead, so the sleeper is judged again at once rather than at the next pass."""
        return bool(self.dormant.wake_changed(None, lock_of)[1])

    def timed_queued_jobs(self) -> Iterator[Job]:
        """The queued jobs that have a `max_queue_time`; the others never expire. The loop
        asks for their deadlines at every wake-up, and with thousands of jobs queued, nearly
        all without a limit, a walk over the whole queue cost half a millisecond each time.
        A job that left the queue is dropped from the index here, when it is next read."""
        return self._still_queued(self._timed)

    def _still_queued(self, index: dict[str, None]) -> Iterator[Job]:
        """The jobs of `index` that are queued; the others leave it."""
        for job_id in list(index):
            job = self.jobs.get(job_id)
            if job is None or job.record.state != State.QUEUED:
                index.pop(job_id, None)
            else:
                yield job

    def has_work(self) -> bool:
        """Any job that is not final keeps the coordinator alive (asked at every turn of the
        loop: a queued job answers it before the live jobs are read)."""
        return bool(self.queue) or any(True for _ in self.jobs.live())

    def sorted_jobs(self) -> list[Job]:
        """Every job in submission order (the time, then the sequence for a tie)."""
        return self.jobs.ordered()

    def sorted_records(self) -> list[JobStatus]:
        return [job.record for job in self.sorted_jobs()]

    # -- records -------------------------------------------------------------------------

    def write(self, job: Job, *, sync_dir: bool = True) -> None:
        """Write the record (atomic). Raises OSError; callers decide what a failure means.

        `sync_dir=False` syncs the data before the rename (so a power cut never leaves a
        torn record), but not the rename itself, so a power cut may bring back the record
        before it. Two writes may lose that way: the `starting` record (recovery treats a
        `starting` record whose supervisor left no trace as `queued`, back to the queue; the
        next synced write in the file system, the supervisor's `running` moments later,
        commits the rename with it), and the deferred writes of a queued job's reason and
        pause credit (`_write_deferred`), which only ever replace one queued record with
        another.
        """
        job_files.write_status(job.dir, job.record, sync_dir=sync_dir)

    def defer_write(self, job: Job) -> None:
        """Write a queued job's new reason soon, not now.

        While a long queue drains, every start changes the reasons of many waiting jobs; the
        coordinator answers for queued jobs from memory, so their records on disk may lag
        by a moment. Batching those writes keeps a drain from being a storm of fsyncs.
        """
        if job.id in self._due:
            return  # written in one of the next turns, as the record is then
        self._deferred[job.id] = None
        if self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(REASON_WRITE_DELAY, self._start_batch)

    def _start_batch(self) -> None:
        """The batch is due: write it `REASON_WRITES_PER_TURN` records at a time."""
        self._flush_handle = None
        self._due.update(self._deferred)
        self._deferred = {}
        self._write_turn()

    def _write_turn(self) -> None:
        """Write a few records of the batch, and leave the rest to the next turn of the loop,
        after the answers and starts that arrived meanwhile. The resume of a long queue
        changes every reason at once, and writing them in one go held the loop for about
        0.45 s with 500 jobs queued and 2 s with 2,000 (each write syncs its data)."""
        self._turn_handle = None
        for _ in range(min(REASON_WRITES_PER_TURN, len(self._due))):
            job_id = next(iter(self._due))
            del self._due[job_id]
            self._write_deferred(job_id)
        if self._due:
            self._turn_handle = asyncio.get_running_loop().call_soon(self._write_turn)

    def flush_deferred(self) -> None:
        """Write every deferred record of a job that is still queued, now (the coordinator
        stops, or a test wants them on the disk)."""
        for handle in (self._flush_handle, self._turn_handle):
            if handle is not None:
                handle.cancel()
        self._flush_handle = self._turn_handle = None
        pending = [*self._due, *self._deferred]
        self._due, self._deferred = {}, {}
        for job_id in pending:
            self._write_deferred(job_id)

    def _write_deferred(self, job_id: str) -> None:
        """Without the directory's sync: each is a queued record that replaces a queued one
        (a new reason, a pause credit of a job without a queue time limit), and the older
        one, should a power cut bring it back, tells as much of the truth as a stale reason
        does. That second sync was a quarter of each such write here (0.56 against 0.40 ms
        for a record of 1.2 KB)."""
        job = self.jobs.get(job_id)
        if job is not None and job.record.state == State.QUEUED.value:
            self.write_logged(job, sync_dir=False)

    def write_logged(self, job: Job, *, sync_dir: bool = True) -> bool:
        """Write the record; a failure keeps it in memory and schedules another try.

        The log hears of a fault once per change of its cause, and once when writes work again.
        `sync_dir`: as for `write`.
        """
        try:
            self.write(job, sync_dir=sync_dir)
        except OSError as exc:
            cause = _why(exc)
            self.unwritten.add(job.id)
            if cause != self.write_problem:
                self.write_problem = cause
                log(f"qex could not write the record of the job {label(job.record)}: {cause}; "
                    "it keeps the record in memory and tries again")
            if self.write_retry_at is None:
                self.write_backoff = min(WRITE_RETRY_MAX_SECS,
                                         max(WRITE_RETRY_FIRST_SECS, self.write_backoff * 2))
                self.write_retry_at = self.now() + self.write_backoff
            return False
        self._written(job)
        return True

    def _written(self, job: Job) -> None:
        """A record of `job` is on the disk: it is no longer one to try again, and the log
        hears once that writes work again."""
        self.unwritten.discard(job.id)
        if not self.unwritten and self.write_problem is not None:
            self.write_problem = None
            self.write_retry_at = None
            self.write_backoff = 0.0
            log("qex can write its records again")

    def retry_unwritten(self) -> None:
        """Try again the records the disk refused, unless a supervisor owns one by now."""
        self.write_retry_at = None
        for job_id in sorted(self.unwritten):
            job = self.jobs.get(job_id)
            if job is None or job.active:
                self.unwritten.discard(job_id)
                continue
            if not self.write_logged(job):
                break
        if not self.unwritten and self.write_problem is not None:
            self.write_problem = None
            self.write_backoff = 0.0
            log("qex can write its records again")

    def publish(self, job: Job) -> None:
        self.events.observe(job.record, self.now())

    def read_disk(self, job: Job) -> JobStatus | None:
        return job_files.read_status(job.dir)

    def refresh(self, job: Job, sent: JobStatus | None = None) -> bool:
        """Take the supervisor's newer record from disk. True when something changed.

        `sent`: the record that the supervisor's note carried, already on the disk as
        status.json; taken instead of reading the file back (the note is sent after the
        write, so it is never older than the file).

        A state never moves back (queued < starting < running < final), and a queued record
        on disk never replaces a queued one in memory: the coordinator owns a queued job's
        reason. A `queued` record written by a supervisor for an OOM retry is taken only when
        that supervisor has exited (the reaper does it), so the claim is never counted twice.
        """
        if job.final:
            return False
        disk = sent if sent is not None else self.read_disk(job)
        if disk is None or disk.id != job.id:
            return False
        if job.pending is not None and not disk.final:
            return False  # the supervisor's result waits for the disk; keep showing that
        if disk == job.record:  # field by field, as their dicts would compare, without copies
            return False
        mem_rank, disk_rank = rank(job.record.state), rank(disk.state)
        if disk_rank < mem_rank or disk.state == State.QUEUED:
            return False
        self.adopt(job, disk)
        return True

    def adopt(self, job: Job, record: JobStatus) -> None:
        """Install a record written by someone else (the supervisor) and tell everyone."""
        was_final = job.final
        was_state = job.record.state
        freed = job.pending is not None
        job.record = record
        job.pending = job.pending_note = None
        if not job.final and record.state != was_state:
            # A request waiting for the job to move on (a kill of a starting job) looks
            # again; a `wait` looks, and waits on.
            self.wake_waiters(job.id)
        if job.final and not was_final:
            job.end_watch()
            # Waiters wake at once, and the scheduler looks again: capacity came free, and
            # jobs that need this one may go. When its claims came free with its decided
            # result (`pending`), a pass already ran for them: only a queued job that
            # depends on this one, or the idle clock, still needs another.
            self._left_queue(job)
            self.wake_waiters(job.id)
            if not freed or self.awaited(job.id) or not self.has_work():
                self.kick()
        self.publish(job)

    def awaited(self, job_id: str) -> bool:
        """True when a queued job names `job_id` in its `needs` or `after`. Asked as every job
        ends, so it reads only the queued jobs that name any (an index), not the queue."""
        return self.dormant.watches(job_id) or any(
            job_id in job.record.needs or job_id in job.record.after
            for job in self.dependent_queued_jobs())

    def finish(self, job: Job, state: State, *, error: str | None, caused_by: str | None = None,
               hook: bool = True, strict: bool = False, wake: bool = True) -> None:
        """Make a final state that the coordinator decides (cancel, skip, expiry, failure).

        `strict`: the final record reaches the disk before anything else changes, and the
        OSError of a write that fails is raised with the job as it was (a person's cancel,
        which must not seem done while a restart would run the job); otherwise a failed
        write keeps the record in memory and is tried again (`write_logged`). `wake`: False
        when the caller's run of changes wakes the scheduler itself (`SubmissionWakes`)."""
        record = self._final_record(job, state, error=error, caused_by=caused_by,
                                    copy=strict)
        if strict:
            job_files.write_status(job.dir, record)  # raises OSError: nothing changed yet
            job.record = record
            self._written(job)
        self._ended(job, written=strict, hook=hook, wake=wake)

    def finish_together(self, ends: Sequence[tuple[Job, str | None, str | None]],
                        state: State, *, strict: bool, wake: bool = True) -> None:
        """`finish` for several jobs, each given as (job, error, caused_by), with their
        records' syncs side by side (`job_files.write_statuses`): a person's cancel of many
        queued jobs (`strict`), the skips and expiries of one scheduler pass. Records
        written one at a time each waited for syncs of their own, and a pass that skipped
        2,000 jobs held the loop for about a millisecond a job on this machine's disk.

        `strict`: as for `finish`, the OSError of a write that fails is raised with every
        job as it was. Otherwise a write that fails is tried again for each job on its own
        (`write_logged`), as `finish` does. Callers keep a batch to some dozens of jobs:
        every record's temp file is open at once."""
        pairs = [(job, self._final_record(job, state, error=error, caused_by=caused_by,
                                          copy=strict))
                 for job, error, caused_by in ends]
        try:
            job_files.write_statuses([(job.dir, record) for job, record in pairs])
        except OSError:
            if strict:
                raise
            written = False
        else:
            written = True
        for job, record in pairs:
            if written:
                job.record = record
                self._written(job)
            self._ended(job, written=written, hook=True, wake=False)
        if wake and pairs:
            self.kick()

    def _final_record(self, job: Job, state: State, *, error: str | None,
                      caused_by: str | None, copy: bool) -> JobStatus:
        """The job's record in its final `state`; a copy when the disk must take it before
        the job may change (`copy`), else the job's own record, changed in place."""
        record = shallow_copy(job.record) if copy else job.record
        record.state = state
        record.finished_at = self.now()
        record.blocked_reason = None
        record.blocked_since = None
        record.error = error
        if caused_by is not None:
            record.caused_by = caused_by
        if record.pid is not None:
            record.last_pid = record.pid
            record.pid = None
        record.pid_start_token = None
        return record

    def _ended(self, job: Job, *, written: bool, hook: bool, wake: bool) -> None:
        """What follows a final record that the coordinator made: the job leaves the queue,
        its record is written (unless `written`), readers and waiters hear of it, its hook
        runs, and the scheduler looks again (`wake`)."""
        job.end_watch()
        self._left_queue(job)
        if not written:
            self.write_logged(job)
        self.publish(job)
        self.wake_waiters(job.id)
        if hook and self.hook_runner is not None:
            self.hook_runner(job)
        if wake:
            self.kick()

    def _left_queue(self, job: Job) -> None:
        self.queue.discard(job.id)
        self.dormant.discard(job.id)

    def _index_queued(self, job: Job) -> None:
        """Count a job that joins the queue in the indexes that the loop and the passes read
        instead of the queue: the live jobs, those with a queue time limit, and those that
        wait for others."""
        self.jobs.track(job.id)
        if job.max_queue_time is not None:
            self._timed[job.id] = None
        if job.record.needs or job.record.after:
            self._dependent[job.id] = None
            self.dormant.discard(job.id)  # judged afresh

    def restore_queue(self, queued: Iterable[Job]) -> None:
        """The queue that recovery found on the disk, in its order, indexed as `enqueue`
        indexes a new job (without them, a recovered job's queue time limit set no deadline,
        and the end of a job that recovered jobs wait for woke no pass)."""
        self.queue.clear()
        for job in queued:
            self._index_queued(job)
            self.queue.append(job.id)

    def enqueue(self, job: Job) -> None:
        """Insert before the first queued job of a strictly lower priority (FIFO within one)."""
        self._index_queued(job)
        if job.id in self.queue:
            return
        # The queue is in that order already (priorities never rise towards its end), so the
        # usual newcomer, of no higher priority than the last job, goes at the end without a
        # walk over a queue that may hold thousands.
        last = self.jobs.get(self.queue[-1]) if self.queue else None
        if not self.queue or (last is not None and last.priority >= job.priority):
            self.queue.append(job.id)
            return
        for index, other_id in enumerate(self.queue):
            other = self.jobs.get(other_id)
            if other is not None and other.priority < job.priority:
                self.queue.insert(index, job.id)
                return
        self.queue.append(job.id)

    def forget(self, job: Job) -> None:
        """Remove a job from memory entirely (its record was deleted)."""
        self._left_queue(job)
        self.jobs.pop(job.id, None)
        self.events.forget(job.id)
        if job.dedupe_key and self.dedupe.get(job.dedupe_key) == job.id:
            del self.dedupe[job.dedupe_key]
        self.wake_waiters(job.id)

    # -- waiters -------------------------------------------------------------------------

    def add_waiter(self, job_id: str) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(job_id, []).append(future)
        return future

    def drop_waiter(self, job_id: str, future: asyncio.Future[None]) -> None:
        futures = self._waiters.get(job_id)
        if futures and future in futures:
            futures.remove(future)
            if not futures:
                del self._waiters[job_id]

    def wake_waiters(self, job_id: str) -> None:
        for future in self._waiters.pop(job_id, []):
            if not future.done():
                future.set_result(None)

    # -- claims --------------------------------------------------------------------------

    def claimed(self) -> tuple[int, int]:
        """Cores and memory held by the active jobs of this queue."""
        cpu = mem = 0
        for job in self.holding_jobs():
            cpu += job.record.cpu
            mem += job.record.mem
        return cpu, mem

    def cpu_budget(self) -> int:
        return self.config.cpu_budget(self.machine)

    def mem_budget(self) -> int:
        return self.config.mem_budget(self.machine)


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    return exc.strerror or str(exc)


def describe_os_error(exc: OSError) -> str:
    return _why(exc)
