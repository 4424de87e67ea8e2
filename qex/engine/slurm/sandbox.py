"""The supervisor's sandbox inside a Slurm allocation: Slurm's cgroup is the job's own.

Slurm (with `task/cgroup` and `proctrack/cgroup` on cgroup v2) puts every job in a cgroup
of its own, such as `/system.slice/slurmstepd.scope/job_123/step_batch/user/task_0`, and
enforces `--mem` on it. The supervisor and the job both sit in it and nothing else does, so
its `memory.events` `oom_kill` counter PROVES a memory kill of this job, and qex retries with
a larger claim exactly as on one machine. qex sets no limit of its own: Slurm's is in force.

Where the node has no such cgroup (Slurm without cgroups, as in qex's own tests, or cgroup
v1), there is no proof: the evidence is empty, and qex relies on Slurm's `OUT_OF_MEMORY`
end state, which the coordinator reads with `squeue`.

`QEX_TEST_SLURM_CGROUP` (tests only) names a directory that stands for the job's cgroup.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from qex.platform.procgroup import read_oom_kills
from qex.platform.sandbox import Evidence, Limits

if TYPE_CHECKING:
    from qex.core.records import Enforcement
    from qex.core.states import EnforceMode

CGROUP_ROOT = Path("/sys/fs/cgroup")
TEST_CGROUP_VAR = "QEX_TEST_SLURM_CGROUP"


def slurm_job_cgroup(slurm_id: str, proc_cgroup: Path = Path("/proc/self/cgroup"),
                     root: Path = CGROUP_ROOT) -> Path | None:
    """The cgroup v2 directory of this Slurm job (`.../job_<id>`), when this process is in it."""
    try:
        text = proc_cgroup.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if not line.startswith("0::"):
            continue
        parts = line[3:].strip().strip("/").split("/")
        marker = f"job_{slurm_id}"
        if marker not in parts:
            return None
        relative = "/".join(parts[: parts.index(marker) + 1])
        found = root / relative
        return found if (found / "memory.events").is_file() else None
    return None


class SlurmSandbox:
    """No limit of qex's own; the evidence is the Slurm job cgroup's, or none."""

    backend = "slurm"

    def __init__(self, cgroup: Path | None, reason: str | None) -> None:
        self.cgroup = cgroup
        self.active = False
        self.reason = reason
        self._before: int | None = None
        self._mode: EnforceMode = "off"

    @classmethod
    def for_allocation(cls, slurm_id: str) -> SlurmSandbox:
        test = os.environ.get(TEST_CGROUP_VAR)
        if test:
            return cls(Path(test), "Slurm enforces --mem on this job's cgroup (a test cgroup)")
        found = slurm_job_cgroup(slurm_id)
        if found is None:
            return cls(None, (
                "the node has no cgroup v2 of this Slurm job, so neither Slurm nor qex limits its "
                "memory here, and a memory kill is known only from Slurm's OUT_OF_MEMORY"))
        return cls(found, "Slurm enforces --mem on the cgroup of this job; qex adds no limit")

    def begin_attempt(self, limits: Limits) -> None:
        self._mode = limits.mode
        self._before = read_oom_kills(self._events())

    def _events(self) -> Path | None:
        return self.cgroup / "memory.events" if self.cgroup is not None else None

    def child_preexec(self) -> None:
        """Nothing to join: the job stays in the allocation's cgroup, with the supervisor."""
        return None

    def evidence(self) -> Evidence:
        after = read_oom_kills(self._events())
        if self.cgroup is None or self._before is None or after is None:
            return Evidence()
        peak: int | None = None
        try:
            peak = int((self.cgroup / "memory.peak").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            peak = None
        return Evidence(oom_kills=max(0, after - self._before), proven=True, source="cgroup",
                        peak=peak)

    def describe(self) -> Enforcement:
        return {
            "mode": self._mode,
            "active": False,
            "reason": self.reason,
            "backend": self.backend,
            "unit": str(self.cgroup) if self.cgroup is not None else None,
            "memory_max": None,
            "memory_high": None,
        }

    def close(self) -> None:
        """Slurm removes its cgroup when the job ends."""
