"""The stop hook for final states that the coordinator makes itself.

The supervisor runs the hook for a job that ran. Cancel, skip, expiry, a launch failure, a
supervisor that died and recovery are decided here, so the coordinator starts the same hook
runner (`python -m qex.supervisor --hook <id>`) detached; it claims `hook.ran` exactly once,
so a redundant start is harmless. The runner is a separate process so a slow or hanging hook
never touches the coordinator's loop. It is our child, and the SIGCHLD reaper collects it.

Whether a hook is due is judged on the config file as it is when the job stops, not on the
coordinator's values: those change only once a new file has settled (half a second and
more), and a hook written just before a job ends must still run. The file is read again only
when its bytes changed.
"""

from __future__ import annotations

import os

from qex.coordinator.log import log
from qex.coordinator.state import Coordinator, Job, label
from qex.core.config import ConfigError, HooksSection
from qex.core.pyexec import module_argv
from qex.store import jobs as job_files
from qex.store.config_file import CONTENT, MISSING, look_at, parsed_config


class HooksInForce:
    """`[hooks]` of the config file now; the coordinator's values when the file is unusable."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord

    def now(self) -> HooksSection:
        path = self.coord.paths.config_file
        look = look_at(path)
        if look.kind not in (CONTENT, MISSING):
            return self.coord.config.hooks
        try:
            return parsed_config(look, path).hooks  # parsed once per content
        except ConfigError:
            return self.coord.config.hooks


def make_hook_runner(coord: Coordinator) -> None:
    """Install `coord.hook_runner`."""
    in_force = HooksInForce(coord)

    def run_hook(job: Job) -> None:
        hooks = in_force.now()
        # Spawning a Python process per cancelled job would be waste when no hook is set,
        # or when this state is not one the user asked to hear about.
        if not hooks.on_stop or job.record.state not in hooks.on_stop_states:
            return
        if (job.dir / job_files.HOOK_RAN).exists():
            return
        from qex.platform.launch import spawn_logged

        argv = module_argv("qex.supervisor", "--hook", job.id)
        try:
            spawn_logged(argv, job.dir / job_files.SUPERVISOR_LOG, dict(os.environ))
        except OSError as exc:
            log(f"qex could not start the stop hook of the job {label(job.record)}: "
                f"{exc.strerror or exc}")

    coord.hook_runner = run_hook
