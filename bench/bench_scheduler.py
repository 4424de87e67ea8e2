"""How long one scheduler pass takes over a queue of 1000 jobs.

    .venv/bin/python bench/bench_scheduler.py [--jobs 1000] [--repeat 200]

The coordinator runs a pass after every event, so the pass must stay far below the time a
person or an agent could notice (the target is well under 10 ms for 1000 queued jobs).
The first shape makes every job do real work: no head is held (max_bypass is large), so
each job runs the admission tests; the second holds the head, as a busy queue often is.
In both, a tenth of the jobs claim GPUs, a tenth a counted pool, some hold implicit locks,
some wait for dependencies, and free memory and pressure are measured.
Prints the median wall and CPU time and the 90th percentile (wall) in ms for each shape.
"""

from __future__ import annotations

import argparse
import statistics
import time

from qex.core.config import Pool
from qex.core.records import Assignment, PoolClaim
from qex.core.scheduler import decide
from qex.core.scheduler_types import JobView, KnownJob, PeerLoad, Snapshot

GB = 1024**3
POOLS = (
    Pool("gpu", devices=(24 * GB,) * 4, size="vram", env="CUDA_VISIBLE_DEVICES"),
    Pool("net", count=4),
)


def _id(n: int) -> str:
    return f"{n:08d}-0000-4000-8000-000000000000"


def build(jobs: int, *, max_bypass: int, with_peers: bool) -> Snapshot:
    queue: list[JobView] = []
    for n in range(jobs):
        claims: dict[str, PoolClaim] = {}
        if n % 10 == 3:
            claims["gpu"] = PoolClaim(1, 8 * GB)
        if n % 10 == 7:
            claims["net"] = PoolClaim(1)
        queue.append(JobView(
            id=_id(n), name=f"job-{n}", state="queued", priority=0,
            submitted_at=1000.0 + n, sequence=n, cpu=1 + n % 3, mem=(1 + n % 4) * GB,
            locks=("db",) if n % 25 == 0 else (),
            claims=claims,
            needs=(_id(n - 1),) if n % 50 == 49 else (),
            max_queue_time=86400.0,
            blocked_reason="an older reason",
        ))
    active = tuple(
        JobView(id=_id(100000 + i), name=f"run-{i}", state="running", priority=0,
                submitted_at=900.0, sequence=100000 + i, cpu=1, mem=GB, started_at=950.0,
                locks=("db",) if i == 0 else (),
                claims={"gpu": PoolClaim(1, 8 * GB)} if i < 3 else {},
                assigned={"gpu": Assignment(1, [i], 8 * GB)} if i < 3 else {})
        for i in range(10)
    )
    known = {j.id: KnownJob(j.id, j.name, j.state) for j in (*queue, *active)}
    return Snapshot(
        now=2000.0, queue=tuple(queue), active=active, known=known,
        cpu_budget=12, mem_budget=32 * GB, pools=POOLS,
        peers=PeerLoad(count=1, cpu=1, mem=GB, devices={"gpu": frozenset({3})}) if with_peers
        else PeerLoad(),
        mem_available=40 * GB, reserve_mem=2 * GB, pressure=3.0, max_bypass=max_bypass,
    )


def measure(snap: Snapshot, repeat: int) -> tuple[list[float], list[float]]:
    """Wall time and CPU time of each pass, in ms (CPU time is steadier on a busy machine)."""
    decide(snap)  # warm caches and imports
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        decide(snap)
        cpu.append((time.process_time() - start_cpu) * 1000.0)
        wall.append((time.perf_counter() - start) * 1000.0)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    shapes = (("every job judged, peers present", 10**9, True), ("head held", 0, False))
    for label, bypass, with_peers in shapes:
        wall, cpu = measure(build(args.jobs, max_bypass=bypass, with_peers=with_peers), args.repeat)
        p90 = statistics.quantiles(wall, n=10)[-1]
        print(f"decide() on {args.jobs} queued jobs, {label}: "
              f"median {statistics.median(wall):.2f} ms (cpu {statistics.median(cpu):.2f} ms), "
              f"p90 {p90:.2f} ms")


if __name__ == "__main__":
    main()
