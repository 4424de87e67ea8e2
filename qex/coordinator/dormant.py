"""Queued jobs that wait for a dependency or a lock, left out of the scheduler's passes
until what their verdict read changes.

A job's dependency verdict reads only the states of its `needs` and `after` that have not
stopped (`qex.core.scheduler_types.DependencyWait`), and a lock verdict only what the lock
rule saw of each name the job claims (`LockWait`, `qex.core.lock_table`). A pass runs at
every job's end, and each one judged every waiting job again and walked past it: 2,000
jobs that needed a long job slowed a drain of 500 others beside them from 265-300 to 61-63
jobs/s, and 2,000 that waited for its lock to 49-54 jobs/s. A dormant job costs a pass
nothing; each pass instead compares what each watched job or lock is now with what the
verdicts saw (one look-up per watched key, not per dormant job: a fan-out watches one),
and wakes the jobs of any that changed, which the pass then judges anew. Comparing, rather
than hearing of each change, keeps this true whatever path changed a record, a lock or the
config.

Memory only: a coordinator that starts judges every job in its first pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import filterfalse

from qex.core.scheduler_types import DependencyWait, LockSeen, LockWait

#: A watched thing: a job's id (its state is watched), or ("lock", name).
Key = str | tuple[str, str]


class DormantJobs:
    """The dormant jobs, and what they watch with what each verdict saw of it."""

    def __init__(self) -> None:
        #: dormant job id -> the keys it watches
        self.jobs: dict[str, tuple[Key, ...]] = {}
        #: watched key -> (what its sleepers saw, their ids)
        self._watched: dict[Key, tuple[object, set[str]]] = {}
        self._lock_keys = 0

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
        """Make dormant the jobs of `waits`, and say which."""
        rested: list[str] = []
        for wait in waits:
            rested += self._rest((wait.id,), wait.watch)
        return rested

    def rest_locked(self, waits: Iterable[LockWait]) -> list[str]:
        """Make dormant the jobs of `waits` (jobs that wait for a lock), and say which."""
        rested: list[str] = []
        for wait in waits:
            rested += self._rest(wait.ids, [(("lock", name), seen) for name, seen in wait.watch])
        return rested

    def _rest(self, ids: Iterable[str], watch: Iterable[tuple[Key, object]]) -> list[str]:
        """Jobs whose watch differs from what other dormant jobs saw of the same key are left
        awake: one of the verdicts is out of date, and the next pass judges them again. A
        job that sleeps already keeps its watch."""
        watch = tuple(watch)
        watched = self._watched
        if not watch or any(key in watched and watched[key][0] != seen for key, seen in watch):
            return []
        jobs = self.jobs
        new = list(filterfalse(jobs.__contains__, ids))
        if not new:
            return []
        for key, seen in watch:
            entry = watched.get(key)
            if entry is None:
                entry = watched[key] = (seen, set())
                self._lock_keys += isinstance(key, tuple)
            entry[1].update(new)
        jobs.update(dict.fromkeys(new, tuple(key for key, _ in watch)))
        return new

    def wake_changed(self, state_of: Callable[[str], str | None] | None,
                     lock_of: Callable[[str], LockSeen] | None = None
                     ) -> tuple[list[str], list[str]]:
        """Wake the jobs that watch a job whose state is no longer the one they saw (None:
        the job is gone), or a lock that `lock_of` now sees otherwise (without `lock_of`,
        every job that waits for a lock wakes), to be judged again. Their ids: those that
        waited for jobs, then those that waited for locks (a job sleeps for one or the
        other, never both). Without `state_of`, only the locks are looked at."""
        def moved(key: Key, seen: object) -> bool:
            if isinstance(key, tuple):
                return lock_of is None or lock_of(key[1]) != seen
            return state_of is not None and state_of(key) != seen

        changed = [key for key, (seen, _) in self._watched.items() if moved(key, seen)]
        for_jobs: list[str] = []
        for_locks: list[str] = []
        jobs = self.jobs
        for key in changed:
            entry = self._watched.pop(key, None)
            if entry is None:
                continue  # its sleepers woke with another key
            self._lock_keys -= isinstance(key, tuple)
            sleepers = entry[1]
            (for_locks if isinstance(key, tuple) else for_jobs).extend(sleepers)
            for job_id in sleepers:
                keys = jobs.pop(job_id)
                if len(keys) > 1:  # the other keys it watched forget it too
                    self._forget(job_id, keys)
        return for_jobs, for_locks

    def watches_locks(self) -> bool:
        """True when a dormant job waits for a lock (the caller then makes `lock_of`)."""
        return self._lock_keys > 0

    def discard(self, job_id: str) -> bool:
        """Forget a dormant job (it left the queue, or wakes); False if it was not one."""
        keys = self.jobs.pop(job_id, None)
        if keys is None:
            return False
        self._forget(job_id, keys)
        return True

    def _forget(self, job_id: str, keys: Iterable[Key]) -> None:
        for key in keys:
            entry = self._watched.get(key)
            if entry is not None:
                entry[1].discard(job_id)
                if not entry[1]:
                    del self._watched[key]
                    self._lock_keys -= isinstance(key, tuple)
