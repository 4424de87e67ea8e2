"""The stop hook for final states that the coordinator makes itself.

The supervisor runs the hook for a job that ran. Cancel, skip, expiry, a launch failure, a
supervisor that died and recovery are decided here, so the coordinator starts the same hook
runner (`python -m qex.supervisor --hook <id>`) detached; it claims `hook.ran` exactly once,
so a redundant start is harmless. The runner is a separate process so a slow or hanging hook
never touches the coordinator's loop. It is our child, and the SIGCHLD reaper collects it.
"""

from __future__ import annotations

import os
import sys

from qex.coordinator.log import log
from qex.coordinator.state import Coordinator, Job, label
from qex.store import jobs as job_files


def make_hook_runner(coord: Coordinator) -> None:
    """Install `coord.hook_runner`."""

    def run_hook(job: Job) -> None:
        hooks = coord.config.hooks
        # Spawning a Python process per cancelled job would be waste when no hook is set,
        # or when this state is not one the user asked to hear about.
        if not hooks.on_stop or job.record.state not in hooks.on_stop_states:
            return
        if (job.dir / job_files.HOOK_RAN).exists():
            return
        from qex.platform.launch import spawn_detached

        argv = [sys.executable, "-m", "qex.supervisor", "--hook", job.id]
        try:
            spawn_detached(argv, job.dir / job_files.SUPERVISOR_LOG, dict(os.environ))
        except OSError as exc:
            log(f"qex could not start the stop hook of the job {label(job.record)}: "
                f"{exc.strerror or exc}")

    coord.hook_runner = run_hook
