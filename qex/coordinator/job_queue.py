"""The queue's order: the ids of the queued jobs, in the order they may start.

A list keeps the order, and a set beside it answers "is this job queued" without reading
the list: a submission asked it once (so a fan-out of N jobs read the queue N times), and
every job that ended asked it once more when it left a queue it was no longer in. Both
grew with the queue; a long queue made each of them cost a walk of thousands of ids.

The table of jobs hears of each id that joins or leaves (`JobTable.joined`/`left`), so that
it can name the live jobs outside the queue (the active ones) without reading the queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import overload


def _nothing(job_id: str) -> None:
    """A listener that ignores the change (a queue that no table watches, as in tests)."""


class JobQueue:
    """The queued ids in order, with the operations the coordinator uses on them."""

    __slots__ = ("_ids", "_joined", "_left", "_members")

    def __init__(self, ids: Iterable[str] = (), *,
                 joined: Callable[[str], None] = _nothing,
                 left: Callable[[str], None] = _nothing) -> None:
        self._ids: list[str] = []
        self._members: set[str] = set()
        self._joined = joined
        self._left = left
        for job_id in ids:
            self.append(job_id)

    def listen(self, *, joined: Callable[[str], None], left: Callable[[str], None]) -> None:
        """Tell `joined`/`left` of every id that joins or leaves from now on, and of those here."""
        self._joined, self._left = joined, left
        for job_id in self._ids:
            joined(job_id)

    # -- reading -------------------------------------------------------------------------

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __bool__(self) -> bool:
        return bool(self._ids)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self._ids[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JobQueue):
            return self._ids == other._ids
        if isinstance(other, list):
            return self._ids == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it wraps

    def __repr__(self) -> str:
        return f"JobQueue({self._ids!r})"

    # -- changes -------------------------------------------------------------------------

    def append(self, job_id: str) -> None:
        """Add `job_id` at the end; an id already queued stays where it is."""
        if job_id in self._members:
            return
        self._ids.append(job_id)
        self._members.add(job_id)
        self._joined(job_id)

    def insert(self, index: int, job_id: str) -> None:
        """Add `job_id` before the id at `index`; an id already queued stays where it is."""
        if job_id in self._members:
            return
        self._ids.insert(index, job_id)
        self._members.add(job_id)
        self._joined(job_id)

    def remove(self, job_id: str) -> None:
        """Take `job_id` out; ValueError when it is not queued, as a list says."""
        if job_id not in self._members:
            raise ValueError(f"{job_id} is not queued")
        self.discard(job_id)

    def discard(self, job_id: str) -> bool:
        """Take `job_id` out if it is queued; whether it was. The list is read only for an id
        that is in it (a job that starts is near its front)."""
        if job_id not in self._members:
            return False
        self._members.discard(job_id)
        self._ids.remove(job_id)
        self._left(job_id)
        return True

    def clear(self) -> None:
        ids, self._ids = self._ids, []
        self._members = set()
        for job_id in ids:
            self._left(job_id)
