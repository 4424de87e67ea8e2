"""Helpers and fixtures of the fault suite (tests/faults/conftest.py registers them): the real `qex` against a private state, and the faults.

Most faults need root (a small tmpfs for a full disk, a second local user, `prlimit` on
another process); those tests skip with the reason when the suite does not run as root.
CI runs it as root. Every mount, user and process a test makes is removed at its end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import QEX, Env, _stop_coordinator
from support import isolated_env, kill_job_groups, wait_gone

__all__ = ["QEX", "Disk", "Env", "FaultEnv", "fault_env", "kill9", "small_disk"]

#: How long `qex list` may take right after a fault: a bound that tells a coordinator that
#: still answers from one that hangs, not a speed claim. On a 2-core CI machine that also runs
#: the systemd guest, the command's own start has taken over 3 s, hence the margin.
ANSWER_SECS = 10.0
#: No qex log may pass this in these tests (daemon.log is capped lower by the fixture).
LOG_CAP = 64 * 1024


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("this fault needs root (a tmpfs mount, a second user or prlimit on "
                    "another process); CI runs the fault suite as root")


class FaultEnv(Env):
    """An Env with the checks every fault test ends with."""

    def answers(self) -> list[dict[str, Any]]:
        """The coordinator is alive and answers `qex list` promptly."""
        proc = self.run("list", "--json", timeout=ANSWER_SECS)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert isinstance(data, list)
        return data

    def logs_within_cap(self) -> None:
        """Every log qex writes for itself stays under its cap; none holds a traceback."""
        run_dir = self.state / "run"
        for name in ("daemon.log", "daemon.log.1"):
            path = run_dir / name
            if path.exists():
                text = path.read_text(errors="replace")
                assert path.stat().st_size <= LOG_CAP, f"{name} is {path.stat().st_size} bytes"
                assert "Traceback" not in text, text[-3000:]
        for path in (self.state / "jobs").glob("*/supervisor.log"):
            assert path.stat().st_size <= 256 * 1024 + 200

    def coordinator_pid_file(self) -> int:
        return int((self.state / "run" / "coordinator.pid").read_text().split()[0])

    def wait_record(self, job_id: str, predicate: Any, timeout: float = 30.0,
                    what: str = "the record") -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            try:
                data = self.record(job_id)
            except (OSError, ValueError):
                return None
            return data if predicate(data) else None

        found: dict[str, Any] = self.wait_for(probe, timeout=timeout, what=what)
        return found


@pytest.fixture
def fault_env() -> Iterator[FaultEnv]:
    # No peers dir yet: the tests make it, with the owner and mode each attack needs.
    root, env = isolated_env("qf", {
        "QEX_IDLE_EXIT_SECS": "60", "QEX_COORDINATOR_CEILING_SECS": "20",
        "QEX_DAEMON_LOG_MAX_BYTES": str(LOG_CAP // 2),
    }, make=("home", "config", "state", "run", "tmp"))
    os.chmod(root, 0o755)  # a second user must reach the peers dir below it
    handle = FaultEnv(root=root, env=env)
    try:
        yield handle
    finally:
        _stop_coordinator(handle)
        kill_job_groups(handle.state)
        if os.path.ismount(root / "state"):
            subprocess.run(["umount", "-l", str(root / "state")], check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def small_disk(fault_env: FaultEnv) -> Iterator[Disk]:
    """The state directory on a 2MB tmpfs, with `fill()` and `free()`."""
    need_root()
    target = fault_env.root / "state"
    mount_tmpfs(target, "size=2m,mode=0700")
    disk = Disk(target)
    try:
        yield disk
    finally:
        disk.free()
        _stop_coordinator(fault_env)
        kill_job_groups(fault_env.state)
        subprocess.run(["umount", "-l", str(target)], check=False)


def mount_tmpfs(target: Path, options: str) -> None:
    """Mount a small tmpfs, or skip: root in a container may lack the right to mount."""
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"this machine lets no tmpfs be mounted here ({proc.stderr.strip()}), "
                    "so a full disk cannot be made")


class Disk:
    def __init__(self, mount: Path) -> None:
        self.mount = mount
        self.filler = mount / "filler"

    def fill(self) -> None:
        """Write until the tmpfs refuses even one page."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (65536, 4096, 512, 1):
                block = b"\0" * size
                while True:
                    try:
                        if os.write(fd, block) < size:
                            break
                    except OSError:
                        break
        finally:
            os.close(fd)

    def free(self) -> None:
        try:
            self.filler.unlink()
        except FileNotFoundError:
            pass


def kill9(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_gone(pid)
