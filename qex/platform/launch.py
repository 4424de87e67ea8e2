"""Start a supervisor for one job, detached from the coordinator's session.

The coordinator stays the parent (it reaps on SIGCHLD, so no zombie lingers on machines whose
PID 1 does not reap), but the supervisor leads its own session, so neither a terminal hang-up
nor the coordinator's death reaches it. On Linux with systemd the supervisor is started
inside a transient user scope (see `qex.platform.scope`); `launch_supervisor` hides which.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from qex.platform import procs


@dataclass
class Launched:
    pid: int
    start_token: str | None
    backend: str                 # process-group | systemd-run | pystemd
    unit: str | None = None      # the scope unit name when there is one
    note: str | None = None      # why no scope was used, when one was wanted


def supervisor_argv(job_id: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "qex.supervisor", job_id, *extra]


def spawn_detached(argv: list[str], log_path: Path, env: Mapping[str, str]) -> int:
    """posix_spawn with a new session, stdin from /dev/null, output appended to `log_path`."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, fd, 1),
            (os.POSIX_SPAWN_DUP2, fd, 2),
        ]
        return os.posix_spawn(argv[0], argv, dict(env), file_actions=actions, setsid=True)
    finally:
        os.close(fd)


def launch_supervisor(
    job_id: str, job_dir: Path, *, want_scope: bool, env: Mapping[str, str]
) -> Launched:
    """Start `python -m qex.supervisor <id>`; inside a scope when `want_scope` and possible."""
    argv = supervisor_argv(job_id)
    pid = spawn_detached(argv, job_dir / "supervisor.log", env)
    return Launched(pid=pid, start_token=procs.start_token(pid), backend="process-group",
                    note="systemd scopes are not built yet" if want_scope else None)
