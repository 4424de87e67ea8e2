"""The dependency part of a scheduler pass: who waits for `needs`/`after`, who is skipped.

Pure. A job is skipped when a job it needs ended in any state but `completed`, or when the
record of that job is gone. `caused_by` always names the ROOT: the first job that failed,
followed through jobs that were skipped before (their own `caused_by`) and through jobs
skipped in this very pass, so a pipeline of twenty stages points at one failure, not at
the stage just before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from qex.core import wait_reasons as words
from qex.core.model import dataclass, field
from qex.core.scheduler_types import JobView, KnownJob, Snapshot
from qex.core.states import FINAL, State


@dataclass
class DependencyVerdicts:
    #: job id -> the reason it waits for a dependency
    waiting: dict[str, str] = field(default_factory=dict)
    #: job id -> (caused_by, error) for the jobs to skip now
    skips: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: The jobs with nothing left to wait for and nothing that rules them out: a state that
    #: made them so is final, so it stays so (`Decision.settled`).
    met: list[str] = field(default_factory=list)
    #: job id -> (dependency, its state) for each job in `waiting`: the dependencies that
    #: have not stopped, which alone can change the verdict (`Decision.dependency_waits`).
    watch: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


def _is_final(state: str) -> bool:
    try:
        return State(state) in FINAL
    except ValueError:
        return False


class _Known:
    """`snap.known`, completed by the queue and the active jobs should a caller leave them out.

    The completion is made at the first look-up that `known` cannot answer: the coordinator's
    `known` holds every job, and reading the whole queue for it made every pass cost in
    proportion to the queue."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.known = snap.known
        self.extra: dict[str, KnownJob] | None = None

    def get(self, job_id: str) -> KnownJob | None:
        found = self.known.get(job_id)
        if found is not None:
            return found
        if self.extra is None:
            snap = self.snap
            self.extra = {
                job.id: KnownJob(job.id, job.name, job.state)
                for job in (*snap.queue, *snap.active) if job.id not in snap.known
            }
        return self.extra.get(job_id)

    def __getitem__(self, job_id: str) -> KnownJob:
        found = self.get(job_id)
        if found is None:
            raise KeyError(job_id)
        return found


class _Deps:
    """A queued job's state is `queued`, which is not final: the rules below need no set of
    the queue's ids to tell a queued dependency from a stopped one."""

    def __init__(self, snap: Snapshot) -> None:
        self.known = _Known(snap)

    def label(self, job_id: str) -> str:
        job = self.known.get(job_id)
        return words.job_label(job_id, job.name) if job is not None else job_id[:8]

    def pending(self, dep: str) -> str | None:
        """The state of a dependency that has not stopped yet (a queued one may still be
        skipped below); None for one that stopped or that nobody knows."""
        job = self.known.get(dep)
        return job.state if job is not None and not _is_final(job.state) else None

    def broken_by_record(self, dep: str) -> tuple[str, str] | None:
        """(root, error) when a needed job that is not queued already rules this job out."""
        job = self.known.get(dep)
        if job is None:
            return dep, words.needs_gone(dep)
        if not _is_final(job.state) or job.state == State.COMPLETED:
            return None
        root = job.caused_by or dep
        return root, self.broken_text(root, dep, job.state)

    def broken_text(self, root: str, via: str, via_state: str) -> str:
        root_job = self.known.get(root)
        if root_job is None or root == via:
            state = root_job.state if root_job is not None else via_state
            return words.needs_broken(root, self.label(root), state, None)
        return words.needs_broken(root, self.label(root), root_job.state, self.label(via))


def _dependent(snap: Snapshot) -> Sequence[JobView]:
    """The queued jobs with a `needs` or an `after`: the coordinator's index, or the queue's."""
    if snap.dependent is not None:
        return snap.dependent
    return [job for job in snap.queue if job.needs or job.after]


def dependency_verdicts(snap: Snapshot) -> DependencyVerdicts:
    """Classify every queued job with `needs` or `after`; the others are simply ready."""
    result = DependencyVerdicts()
    dependent = _dependent(snap)
    if not dependent:
        return result
    deps = _Deps(snap)
    with_needs = [job for job in dependent if job.needs]
    for job in with_needs:
        for dep in job.needs:
            broken = deps.broken_by_record(dep)
            if broken is not None:
                result.skips[job.id] = broken
                break
    # A queued job that is skipped now breaks the jobs that need it, in this same pass.
    # Repeat until nothing changes: each round skips at least one more job, or stops.
    changed = True
    while changed:
        changed = False
        for job in with_needs:
            if job.id in result.skips:
                continue
            for dep in job.needs:
                if dep in result.skips:
                    root = result.skips[dep][0]
                    result.skips[job.id] = (root, deps.broken_text(root, dep, State.SKIPPED.value))
                    changed = True
                    break
    for job in dependent:
        if job.id in result.skips:
            continue
        needed = _pending(deps, job.needs)
        followed = _pending(deps, job.after)
        if needed:
            first, state = needed[0]
            result.waiting[job.id] = words.needs_waiting(deps.label(first), state)
        elif followed:
            first, state = followed[0]
            result.waiting[job.id] = words.after_waiting(deps.label(first), state)
        else:
            result.met.append(job.id)
            continue
        result.watch[job.id] = (*needed, *followed)
    return result


def _pending(deps: _Deps, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(id, state) of each of `ids` that has not stopped, in their order."""
    found = []
    for dep in ids:
        state = deps.pending(dep)
        if state is not None:
            found.append((dep, state))
    return found
