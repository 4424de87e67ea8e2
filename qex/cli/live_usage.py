"""Live CPU and memory of running jobs, measured per process group, for `qex top`.

Every job leads its own process group, so the group holds the job and everything it
started. One pass over the process table serves all jobs: each process is charged to its
group. CPU is a counter (seconds); the cores in use are the growth of that counter between
two samples divided by the time between them. psutil is imported here only, so no other
command pays for it.
"""

from __future__ import annotations

import os
import time

from qex.core.model import dataclass


@dataclass(frozen=True)
class GroupSample:
    cpu_secs: float
    rss: int
    processes: int
    at: float


def sample_groups(pgids: set[int]) -> dict[int, GroupSample]:
    """CPU seconds (including reaped children) and resident memory of each process group."""
    if not pgids:
        return {}
    import psutil

    now = time.monotonic()
    totals: dict[int, list[float]] = {}
    for proc in psutil.process_iter():
        try:
            pgid = os.getpgid(proc.pid)
        except OSError:
            continue
        if pgid not in pgids:
            continue
        try:
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                times = proc.cpu_times()
                rss = proc.memory_info().rss
        except psutil.Error:
            continue
        cpu = times.user + times.system + times.children_user + times.children_system
        entry = totals.setdefault(pgid, [0.0, 0.0, 0.0])
        entry[0] += cpu
        entry[1] += rss
        entry[2] += 1
    return {pgid: GroupSample(cpu_secs=v[0], rss=int(v[1]), processes=int(v[2]), at=now)
            for pgid, v in totals.items()}


def cores_in_use(before: GroupSample | None, after: GroupSample | None) -> float | None:
    """Cores used between two samples of one group; None without two samples."""
    if before is None or after is None or after.at <= before.at:
        return None
    return max(0.0, (after.cpu_secs - before.cpu_secs) / (after.at - before.at))
