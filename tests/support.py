"""Helpers shared by the end-to-end and the VM test fixtures (on sys.path via pyproject)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path


def kill_job_groups(state: Path) -> None:
    """SIGKILL the process group of every job and supervisor recorded under `state`.

    A test that failed half-way can leave a job running; it must not outlive the test, and
    it must not be found by the next test's coordinator.
    """
    jobs = state / "jobs"
    if not jobs.is_dir():
        return
    for status in jobs.glob("*/status.json"):
        try:
            data = json.loads(status.read_text())
        except (OSError, ValueError):
            continue
        for key in ("pid", "supervisor_pid"):
            pid = data.get(key)
            if isinstance(pid, int) and pid > 1:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
