"""The data the scheduler decides on, and the decision it returns.

Pure. The coordinator builds a `Snapshot` from its live queue and its measurements (machine
memory, pressure, peers, pause), calls `qex.core.scheduler.decide(snapshot)`, and applies the
`Decision`: starts, reason updates, skips and expiries. No process, file or clock is touched
by the scheduler: `now` is in the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qex.core.config import Pool
from qex.core.model import dataclass, field
from qex.core.records import Assignment, PoolClaim


@dataclass(frozen=True)
class JobView:
    """A queued or active job as the scheduler sees it."""

    id: str
    name: str
    state: str
    priority: int
    submitted_at: float
    sequence: int
    cpu: int
    mem: int
    locks: tuple[str, ...] = ()
    claims: Mapping[str, PoolClaim] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    max_queue_time: float | None = None
    queue_time_applies: bool = True
    queue_pause_secs: float = 0.0
    passed_by: int = 0
    blocked_since: float | None = None
    blocked_reason: str | None = None
    started_at: float | None = None
    assigned: Mapping[str, Assignment] = field(default_factory=dict)


@dataclass(frozen=True)
class KnownJob:
    """Any job in memory, final ones included: what `needs`/`after` look at."""

    id: str
    name: str
    state: str
    caused_by: str | None = None


@dataclass(frozen=True)
class PeerLoad:
    """What other users' coordinators publish (summed)."""

    count: int = 0
    cpu: int = 0
    mem: int = 0
    pools: Mapping[str, int] = field(default_factory=dict)
    devices: Mapping[str, frozenset[int]] = field(default_factory=dict)

    @property
    def holds_anything(self) -> bool:
        return bool(self.cpu or self.mem or any(self.pools.values()) or any(self.devices.values()))


@dataclass(frozen=True)
class PauseView:
    """The queue pause (if any) and the locks that a person holds."""

    queue_reason: str | None = None            # the full reason text when the queue is paused
    fault: bool = False
    locks: Mapping[str, str] = field(default_factory=dict)  # lock name -> reason text


@dataclass(frozen=True)
class Snapshot:
    now: float
    #: The queued jobs, in queue order; the coordinator's sequence makes each view only when
    #: the walk reaches it (`qex.coordinator.scheduling.QueueViews`). A job that an earlier
    #: pass found waiting for a dependency may be left out, of `dependent` too, while none of
    #: the jobs it watches changed state (`Decision.dependency_waits`), and one it found
    #: waiting for a lock while none of its names changed (`Decision.lock_waits`): its
    #: reason stands.
    queue: Sequence[JobView]
    active: tuple[JobView, ...]                # starting/running jobs (they hold capacity)
    known: Mapping[str, KnownJob]
    cpu_budget: int
    mem_budget: int
    pools: tuple[Pool, ...] = ()
    peers: PeerLoad = PeerLoad()
    mem_available: int | None = None
    reserve_mem: int = 0
    pressure: float | None = None              # PSI memory some avg10, None when unknown
    max_pressure: float = 20.0
    pause: PauseView = PauseView()
    oversized: str = "run-when-idle"
    max_bypass: int = 2
    settle: float = 3.0
    #: When the last active job stopped (reset it to `now` when a queue pause ends). None with
    #: no active job means "idle for as long as we know": an oversized job may start at once.
    idle_since: float | None = None
    #: The walk may end once no job behind can start (`qex.core.scheduler.decide`): the jobs
    #: it did not reach keep the reasons they have until a pass that reads the whole queue.
    partial: bool = False
    #: The queued jobs with a `needs` or an `after`, so that the dependency rules read them
    #: without a walk over the whole queue; None: found in `queue`. A job whose dependencies
    #: an earlier pass found met for good (`Decision.settled`) may be left out: it is ready
    #: as a job without any.
    dependent: Sequence[JobView] | None = None


@dataclass(frozen=True)
class Start:
    id: str
    assigned: Mapping[str, Assignment] = field(default_factory=dict)
    forced: bool = False
    forced_reason: str | None = None


@dataclass(frozen=True)
class WaitUpdate:
    """The new reason fields of a job that stays queued."""

    blocked_reason: str | None
    blocked_since: float | None
    passed_by: int


@dataclass(frozen=True)
class Skip:
    id: str
    error: str
    caused_by: str | None


@dataclass(frozen=True)
class Expiry:
    id: str
    error: str


@dataclass(frozen=True)
class DependencyWait:
    """A queued job that waits for a dependency, and the jobs whose states alone can change
    that: its `needs` and `after` that have not stopped, each with the state this pass saw.
    A pass over the same states would give it the same reason and start, skip or expire
    nothing of it, so the coordinator may leave it out of its passes until one of those
    states changes (`qex.coordinator.dormant`)."""

    id: str
    watch: tuple[tuple[str, str], ...]


#: What the lock rule reads of one name a job claims: whether a pool of that name is
#: declared (then it is counted capacity, not a lock), which active job holds it as a lock
#: (the first, in the order of `Snapshot.active` and the starts of the pass), and the reason
#: of a person who holds it (`PauseView.locks`). `qex.core.lock_table` makes it.
LockSeen = tuple[bool, str | None, str | None]


@dataclass(frozen=True)
class LockWait:
    """Queued jobs that wait for a lock, and what the lock rule read for each name they
    claim (`LockSeen`). Nothing else enters that verdict: the lock rule comes after the
    dependencies, which these jobs have met for good, and before the pause and capacity, so
    a pass over the same locks gives them the same reason and starts none of them. The
    coordinator may leave them out of its passes until one of those names changes
    (`qex.coordinator.dormant`). Jobs that read the same are one group: a long queue of jobs
    that take one lock is one watch, made once per pass."""

    watch: tuple[tuple[str, LockSeen], ...]
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    starts: tuple[Start, ...] = ()
    waits: Mapping[str, WaitUpdate] = field(default_factory=dict)   # only changed jobs
    skips: tuple[Skip, ...] = ()
    expiries: tuple[Expiry, ...] = ()
    #: paused-by-fault | paused | running | held | waits-for-capacity | waits-for-peer |
    #: waits-for-machine | waits-for-idle | parked
    queue_state: str = "running"
    head_id: str | None = None
    #: Who holds the head back, for the health line: "the jobs of this queue", "another
    #: user", "the machine", "its own size" or "its own size or the configuration".
    head_blocker: str | None = None
    #: Every queued job was read; False when a partial pass ended its walk early, leaving
    #: the reasons of the jobs behind as they were.
    complete: bool = True
    #: Queued jobs of `Snapshot.dependent` whose dependencies are met for good: every job
    #: they need completed, every job they follow stopped. Final states never change, so
    #: later passes need not judge them again (`Coordinator.dependencies_met`).
    settled: tuple[str, ...] = ()
    #: The jobs this pass read that wait for a dependency, except those with a queue time
    #: limit (a pass must read them to expire them).
    dependency_waits: tuple[DependencyWait, ...] = ()
    #: The jobs this pass read that wait for a lock, except those with a queue time limit,
    #: in groups that read the same.
    lock_waits: tuple[LockWait, ...] = ()
