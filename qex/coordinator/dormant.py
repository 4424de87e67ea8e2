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
from typing import NamedTuple

from qex.core.scheduler_types import DependencyWait, LockSeen, LockWait

#: watched job id or lock name -> (what its sleepers saw of it, their ids)
_Watched = dict[str, tuple[object, set[str]]]


class Sleep(NamedTuple):
    """Where a dormant job sleeps: the table of its kind, and its keys there."""

    table: _Watched
    keys: tuple[str, ...]


class DormantJobs:
    """The dormant jobs, and what they watch with what each verdict saw of it. A job sleeps
    on the states of other jobs or on locks, never both, so each kind has its own table."""

    def __init__(self) -> None:
        #: dormant job id -> where it sleeps
        self.jobs: dict[str, Sleep] = {}
        self._jobs_watched: _Watched = {}
        self._locks_watched: _Watched = {}

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self.jobs

    def __len__(self) -> int:
        return len(self.jobs)

    def watches(self, job_id: str) -> bool:
        """True when a dormant job waits for `job_id`."""
        return job_id in self._jobs_watched

    def watches_locks(self) -> bool:
        """True when a dormant job waits for a lock (the caller then makes `lock_of`)."""
        return bool(self._locks_watched)

    def rest(self, waits: Iterable[DependencyWait]) -> list[str]:
        """Make dormant the jobs of `waits`, and say which."""
        rested: list[str] = []
        for wait in waits:
            rested += self._rest(self._jobs_watched, (wait.id,), wait.watch)
        return rested

    def rest_locked(self, waits: Iterable[LockWait]) -> list[str]:
        """Make dormant the jobs of `waits` (jobs that wait for a lock), and say which."""
        rested: list[str] = []
        for wait in waits:
            rested += self._rest(self._locks_watched, wait.ids, wait.watch)
        return rested

    def _rest(self, watched: _Watched, ids: Iterable[str],
              watch: Iterable[tuple[str, object]]) -> list[str]:
        """Jobs whose watch differs from what other dormant jobs saw of the same key are left
        awake: one of the verdicts is out of date, and the next pass judges them again. A
        job that sleeps already keeps its watch."""
        watch = tuple(watch)
        if not watch or any(key in watched and watched[key][0] != seen for key, seen in watch):
            return []
        jobs = self.jobs
        new = list(filterfalse(jobs.__contains__, ids))
        if not new:
            return []
        for key, seen in watch:
            watched.setdefault(key, (seen, set()))[1].update(new)
        jobs.update(dict.fromkeys(new, Sleep(watched, tuple(key for key, _ in watch))))
        return new

    def wake_changed(self, state_of: Callable[[str], str | None] | None,
                     lock_of: Callable[[str], LockSeen] | None = None
                     ) -> tuple[list[str], list[str]]:
        """Wake the jobs that watch a job whose state is no longer the one they saw (None:
        the job is gone), or a lock that `lock_of` now sees otherwise (without `lock_of`,
        every job that waits for a lock wakes), to be judged again. Their ids: those that
        waited for jobs, then those that waited for locks. Without `state_of`, only the
        locks are looked at."""
        for_jobs = self._wake(self._jobs_watched, state_of) if state_of is not None else []
        return for_jobs, self._wake(self._locks_watched, lock_of)

    def _wake(self, watched: _Watched, now: Callable[[str], object] | None) -> list[str]:
        """Wake the sleepers of `watched` whose key `now` sees otherwise (all without it)."""
        changed = [key for key, (seen, _) in watched.items() if now is None or now(key) != seen]
        woken: list[str] = []
        jobs = self.jobs
        for key in changed:
            entry = watched.pop(key, None)
            if entry is None:
                continue  # its sleepers woke with another key
            sleepers = entry[1]
            woken.extend(sleepers)
            for job_id in sleepers:
                keys = jobs.pop(job_id).keys
                if len(keys) > 1:  # the other keys it watched forget it too
                    self._forget(job_id, watched, keys)
        return woken

    def discard(self, job_id: str) -> bool:
        """Forget a dormant job (it left the queue, or wakes); False if it was not one."""
        sleep = self.jobs.pop(job_id, None)
        if sleep is None:
            return False
        self._forget(job_id, sleep.table, sleep.keys)
        return True

    @staticmethod
    def _forget(job_id: str, watched: _Watched, keys: Iterable[str]) -> None:
        for key in keys:
            entry = watched.get(key)
            if entry is not None:
                entry[1].discard(job_id)
                if not entry[1]:
                    del watched[key]
