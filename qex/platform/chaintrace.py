"""Timestamps of the steps between one job's end and the next job's exec, for the benchmark.

The per-job overhead of a queue of short jobs is spread over three processes (the finished
job's supervisor, the coordinator, the next job's supervisor), so no single profile shows
it. With `QEX_CHAIN_TRACE` naming a file, each process appends one line per step to it:
`<CLOCK_MONOTONIC ns> <pid> <job id> <step>`. The monotonic clock is the same for every
process on the machine, so `bench/bench.py --only chain` can line the steps up.

Off (the variable unset, as always outside the benchmark) `mark` tests one module global and
returns: nothing is opened, formatted or written. The variable is read once, at import; the
coordinator passes its environment to the fork server and to fresh supervisors, so one
setting at the coordinator's start covers the whole chain.
"""

from __future__ import annotations

import os
import time

#: The trace file, or None when tracing is off.
PATH: str | None = os.environ.get("QEX_CHAIN_TRACE") or None


def mark(step: str, job_id: str) -> None:
    """Append `step` of `job_id` now; a failed write is ignored (tracing never hurts a job)."""
    if PATH is None:
        return
    line = f"{time.monotonic_ns()} {os.getpid()} {job_id} {step}\n".encode()
    try:
        fd = os.open(PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        os.write(fd, line)  # one short write with O_APPEND: lines never interleave
    except OSError:
        pass
    finally:
        os.close(fd)
