"""Builders for scheduler tests: short ways to make jobs and snapshots."""

from __future__ import annotations

from typing import Any

from qex.core.records import Assignment, PoolClaim
from qex.core.scheduler_types import JobView, KnownJob, Snapshot

GB = 1024**3


def job_id(n: int) -> str:
    return f"{n:08d}-0000-4000-8000-000000000000"


def job(
    n: int,
    *,
    cpu: int = 1,
    mem: int = GB,
    state: str = "queued",
    priority: int = 0,
    claims: dict[str, PoolClaim] | None = None,
    assigned: dict[str, Assignment] | None = None,
    **fields: Any,
) -> JobView:
    return JobView(
        id=job_id(n),
        name=fields.pop("name", f"job{n}"),
        state=state,
        priority=priority,
        submitted_at=fields.pop("submitted_at", 1000.0 + n),
        sequence=n,
        cpu=cpu,
        mem=mem,
        claims=claims or {},
        assigned=assigned or {},
        **fields,
    )


def running(n: int, **fields: Any) -> JobView:
    fields.setdefault("started_at", 1500.0)
    return job(n, state="running", **fields)


def snapshot(
    queue: list[JobView] | tuple[JobView, ...] = (),
    active: list[JobView] | tuple[JobView, ...] = (),
    *,
    known: list[KnownJob] | None = None,
    **fields: Any,
) -> Snapshot:
    everything = {j.id: KnownJob(j.id, j.name, j.state) for j in (*queue, *active)}
    for k in known or []:
        everything[k.id] = k
    fields.setdefault("now", 2000.0)
    fields.setdefault("cpu_budget", 4)
    fields.setdefault("mem_budget", 8 * GB)
    return Snapshot(queue=tuple(queue), active=tuple(active), known=everything, **fields)
