"""What the scheduler's lock rule reads of each name a job claims (`LockSeen`).

A pass records it for each job that waits for a lock (`Decision.lock_waits`), and the
coordinator makes it again from its live jobs before the next pass to see whether any name
moved (`qex.coordinator.dormant`). Both make it with `seen`, and `holders` counts a lock's
holder as the scheduler's load does (the first job, in the order of the active jobs, whose
claim on the name has no pool), so the two disagree only when the locks did change. Pure:
job views, pools and the person holds in.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping

from qex.core.config import Pool
from qex.core.pools import effective_claims
from qex.core.scheduler_types import JobView, LockSeen


def holders(active: Iterable[JobView], pools: Iterable[Pool]) -> dict[str, str]:
    """Lock name -> the id of the first of `active` that holds it, as the scheduler counts
    its load (`--lock NAME`, or a claim on a name that no pool declares)."""
    pools = tuple(pools)
    found: dict[str, str] = {}
    for job in active:
        if not job.locks and not job.claims:
            continue
        for name, claim in effective_claims(job.locks, job.claims, pools).items():
            if claim.pool is None:
                found.setdefault(name, job.id)
    return found


def seen(name: str, declared: Container[str], holder: str | None,
         person: Mapping[str, str]) -> LockSeen:
    """The lock rule's view of `name`: a declared pool is capacity, so its holder does not
    count; a person's hold counts on any name."""
    pool = name in declared
    return pool, None if pool else holder, person.get(name)
