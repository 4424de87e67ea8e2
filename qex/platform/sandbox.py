"""The seam between the supervisor and the machine's enforcement: one job's sandbox.

The supervisor asks `open_sandbox()` for the sandbox of its job once, before the first
attempt. On Linux with a delegated systemd scope the answer is a `CgroupSandbox`
(`qex.platform.cgroup_sandbox`): the supervisor has moved itself into a `supervisor/` leaf,
the job goes into a `job/` leaf before it execs, limits sit on that leaf, and the evidence
(`memory.events`, `memory.peak`, `memory.pressure`) is the job's alone. Everywhere else the
answer is a `ProcessGroupSandbox`: no limit, and the OOM evidence is the session's counter,
which may report `oom` but never proves it.

This module stays import-light: the supervisor loads it once per job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from qex.core.model import dataclass, field

if TYPE_CHECKING:
    from collections.abc import Callable

    from qex.core.records import Enforcement
    from qex.core.states import EnforceMode, OomEvidence


@dataclass
class Limits:
    """The memory limits for one attempt. None means "do not set"."""

    mode: EnforceMode = "off"
    memory_max: int | None = None
    memory_high: int | None = None
    swap_max: int | None = None


@dataclass
class Evidence:
    """What the sandbox saw of one attempt."""

    oom_kills: int = 0                # kills counted during this attempt
    proven: bool = False              # True only when the count is this job's own cgroup
    source: OomEvidence | None = None
    peak: int | None = None           # memory.peak of the job leaf, bytes
    #: {"some_avg10": .., "full_avg10": .., "some_total_us": ..}
    pressure: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Sandbox(Protocol):
    #: True when limits are really applied (a job cgroup exists); qex never reports a
    #: limit it did not apply.
    active: bool
    #: Why `active` is False (shown in the record and in `qex config show`).
    reason: str | None
    #: "systemd-scope" or "process-group".
    backend: str

    def begin_attempt(self, limits: Limits) -> None:
        """Apply the limits for the next attempt and snapshot the counters."""

    def child_preexec(self) -> Callable[[], None] | None:
        """What the child must run between fork and exec in this attempt (join the job
        cgroup), or None when nothing: then the supervisor may start the job by posix_spawn,
        which runs no Python in the child. Asked after `begin_attempt`."""

    def evidence(self) -> Evidence:
        """Counters since `begin_attempt`: OOM kills, peak, pressure."""

    def describe(self) -> Enforcement:
        """The `enforcement` field of the record for this attempt."""

    def close(self) -> None:
        """Release what the sandbox holds (nothing to remove for a scope: systemd does it)."""
