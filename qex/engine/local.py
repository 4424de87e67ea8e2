"""The local engine: this machine's queue, admitted by qex's own scheduler.

Its work is done where it always was (the scheduler pass in `qex.coordinator.scheduling`
starts supervisors, `qex.coordinator.control` signals their job groups); this class is the
same work seen through the `Engine` interface, so the coordinator treats every engine alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qex.coordinator.state import Coordinator, Job
    from qex.core.records import JobSpec


class LocalEngine:
    kind = "local"

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord

    def refuse(self, spec: JobSpec) -> str | None:
        """The pool check: a claim no declared pool can ever meet (the size policy follows)."""
        from qex.core.pools import check_claim

        config = self.coord.config
        return check_claim(spec.pool_claims(), spec.locks, config.pools, config.defaults.vram)

    def accept(self, job: Job) -> None:
        self.coord.enqueue(job)

    def adopt(self, job: Job) -> None:
        if job.record.state == "queued":
            self.coord.enqueue(job)

    def kill(self, job: Job, signum: int) -> dict[str, Any]:
        from qex.coordinator.control import signal_local

        return signal_local(self.coord, job, signum, grace=10.0)

    def cancel(self, job: Job) -> None:
        """Nothing outside the queue holds a queued local job."""

    def close(self) -> None:
        """No background work of its own."""

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}
