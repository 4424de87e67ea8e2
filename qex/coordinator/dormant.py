"""Queued jobs that wait for a dependency, left out of the scheduler's passes until a job
they wait for changes state.

A job's dependency verdict reads only the states of its `needs` and `after` that have not
stopped (`qex.core.scheduler_types.DependencyWait`). A pass runs at every job's end, and
each one judged every waiting job again and walked past it: 2,000 jobs that needed a long
job slowed a drain of 500 others beside them from 265-300 to 61-63 jobs/s. A dormant job
costs a pass nothing; each pass instead compares the state of each job watched with the
state that the verdict saw (one look-up per watched job, not per dormant one: a fan-out
watches one), and wakes the jobs of any that changed, which the pass then judges anew.
Comparing states, rather than hearing of each change, keeps this true whatever path
changed a record.

Memory only: a coordinator that starts judges every job in its first pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from qex.core.scheduler_types import DependencyWait


class DormantJobs:
    """The dormant jobs, and the jobs they watch with the state each verdict saw."""

    def __init__(self) -> None:
        #: dormant job id -> the ids it watches
        self.jobs: dict[str, tuple[str, ...]] = {}
        #: watched job id -> (the state its sleepers saw, their ids)
        self._watched: dict[str, tuple[str, set[str]]] = {}

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self.jobs

    def __len__(self) -> int:
        return len(self.jobs)

    def watches(self, job_id: str) -> bool:
        """True when a dormant job waits for `job_id`."""
        return job_id in self._watched

    def rest(self, waits: Iterable[DependencyWait]) -> list[str]:
        """Make dormant the jobs of `waits`, and say which. A job whose watched state differs
        from what another dormant job saw of the same job is left awake: one of the two
        verdicts is out of date, and the next pass judges it again."""
        watched = self._watched
        rested: list[str] = []
        for wait in waits:
            if wait.id in self.jobs or not wait.watch:
                continue
            if any(dep in watched and watched[dep][0] != state for dep, state in wait.watch):
                continue
            for dep, state in wait.watch:
                watched.setdefault(dep, (state, set()))[1].add(wait.id)
            self.jobs[wait.id] = tuple(dep for dep, _ in wait.watch)
            rested.append(wait.id)
        return rested

    def wake_changed(self, state_of: Callable[[str], str | None]) -> list[str]:
        """Wake the jobs that watch a job whose state is no longer the one they saw (None:
        the job is gone); their ids, to judge again."""
        changed = [dep for dep, (state, _) in self._watched.items() if state_of(dep) != state]
        woken: list[str] = []
        for dep in changed:
            entry = self._watched.get(dep)
            if entry is None:
                continue
            for job_id in list(entry[1]):
                if self.discard(job_id):
                    woken.append(job_id)
        return woken

    def discard(self, job_id: str) -> bool:
        """Forget a dormant job (it left the queue, or wakes); False if it was not one."""
        deps = self.jobs.pop(job_id, None)
        if deps is None:
            return False
        for dep in deps:
            entry = self._watched.get(dep)
            if entry is not None:
                entry[1].discard(job_id)
                if not entry[1]:
                    del self._watched[dep]
        return True
