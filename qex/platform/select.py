"""Choose the sandbox for one job: a delegated cgroup when the supervisor sits in a qex
systemd scope and enforcement is on, else a plain process group."""

from __future__ import annotations

from qex.platform.sandbox import Sandbox


def open_sandbox(job_id: str, mode: str) -> Sandbox:
    """The sandbox for this supervisor's job. `mode` is `[enforce] mode` (off/soft/hard)."""
    from qex.platform.procgroup import ProcessGroupSandbox

    return ProcessGroupSandbox(reason="enforcement is not built yet")
