"""Fixtures for the Linux enforcement tests, which run inside a qex-vm guest (systemd as
PID 1, pure cgroup v2, a lingering user manager) started by tests/vm/run.sh.

Outside such a guest every test here is skipped; inside one, a machine that cannot make
scopes is a failure, not a skip, because then the suite would prove nothing. Each test gets
its own config and state directories; XDG_RUNTIME_DIR and the bus address stay the real
ones, since the point is to talk to the real user manager.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support import kill_job_groups

from qex.core.model import dataclass, field

IN_GUEST = os.environ.get("QEX_VM_GUEST") == "1"
QEX = [str(Path(sys.executable).parent / "qex")]
if not Path(QEX[0]).exists():
    QEX = [sys.executable, "-m", "qex"]
MB = 1024 * 1024
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if IN_GUEST:
        return
    skip = pytest.mark.skip(reason="runs only inside the qex-vm guest (tests/vm/run.sh)")
    for item in items:
        item.add_marker(skip)


@dataclass
class Guest:
    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def state(self) -> Path:
        return self.root / "state" / "qex"

    def write_config(self, text: str) -> None:
        path = Path(self.env["XDG_CONFIG_HOME"]) / "qex.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def run(self, *args: str, timeout: float = 300, check: bool = False,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **(extra_env or {})}
        for _ in range(3):
            proc = subprocess.run([*QEX, *args], capture_output=True, text=True,
                                  timeout=timeout, env=env, cwd=str(self.root), check=False)
            # Under TCG a busy guest can need more than the CLI's 10 s for a coordinator to
            # start; nothing was sent then, so asking again is safe.
            if "did not open its socket" not in proc.stderr:
                break
        if check and proc.returncode != 0:
            raise AssertionError(f"qex {' '.join(args)} exited {proc.returncode}\n"
                                 f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        return proc

    def submit(self, *args: str) -> str:
        """`qex submit ARGS` that must succeed; the job id."""
        return self.submit_any(*args)[0]

    def submit_any(self, *args: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        """`qex submit ARGS` whatever its exit code (a `--wait` gives the job's band code)."""
        proc = self.run("submit", *args)
        found = UUID.search(proc.stdout + proc.stderr)
        if found is None:
            raise AssertionError(f"qex submit printed no job id (exit {proc.returncode})\n"
                                 f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        return found.group(0), proc

    def record(self, job_id: str) -> dict[str, Any]:
        data = json.loads((self.state / "jobs" / job_id / "status.json").read_text())
        assert isinstance(data, dict)
        return data

    def log(self, job_id: str, stream: str = "stdout") -> str:
        return (self.state / "jobs" / job_id / f"{stream}.log").read_text()

    def info(self) -> dict[str, Any]:
        data = json.loads(self.run("info", "--json", check=True).stdout)
        assert isinstance(data, dict)
        return data

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 120.0,
                 what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}")

    def explain(self, job_id: str) -> str:
        """Everything useful when an assertion about a job fails."""
        job_dir = self.state / "jobs" / job_id
        parts = []
        for name in ("status.json", "supervisor.log", "stdout.log", "stderr.log"):
            try:
                parts.append(f"--- {name}\n{(job_dir / name).read_text()[-3000:]}")
            except OSError:
                pass
        try:
            daemon_log = (self.state / "run" / "daemon.log").read_text()
            parts.append(f"--- daemon.log\n{daemon_log[-3000:]}")
        except OSError:
            pass
        return "\n".join(parts)


BASE_CONFIG = """\
[budget]
mem = "1GB"
cpu = 2
[system]
reserve_mem = "0"
max_pressure = 100
[peers]
enabled = false
[learn]
enabled = false
[enforce]
mode = "{mode}"
mem_overcommit = {overcommit}
[retry]
on_oom = {on_oom}
growth = 2.0
"""


def config_text(mode: str = "hard", overcommit: float = 1.5, on_oom: int = 2) -> str:
    return BASE_CONFIG.format(mode=mode, overcommit=overcommit, on_oom=on_oom)


def _stop(guest: Guest) -> None:
    pid_file = guest.state / "run" / "coordinator.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, IndexError):
        pass
    kill_job_groups(guest.state)


@pytest.fixture
def guest() -> Iterator[Guest]:
    if not IN_GUEST:
        pytest.skip("runs only inside the qex-vm guest")
    from qex.platform.detect import probe

    caps = probe()
    assert caps.enforcement_possible, f"the guest cannot make scopes: {caps.reason}"
    root = Path(tempfile.mkdtemp(prefix="qv", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QEX_", "XDG_"))}
    env.update({
        "HOME": os.environ.get("HOME", "/root"),
        "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_STATE_HOME": str(root / "state"),
        "QEX_PEERS_DIR": str(root / "peers"),
        "QEX_IDLE_EXIT_SECS": "300",
        "NO_COLOR": "1",
    })
    if os.environ.get("QEX_SCOPE_BACKEND"):
        env["QEX_SCOPE_BACKEND"] = os.environ["QEX_SCOPE_BACKEND"]
    for sub in ("config", "state", "peers"):
        (root / sub).mkdir(mode=0o700)
    handle = Guest(root=root, env=env)
    try:
        yield handle
    finally:
        _stop(handle)
        shutil.rmtree(root, ignore_errors=True)


def python_job(code: str) -> list[str]:
    """A job that runs a line of Python with the guest's own interpreter."""
    return ["--", "/usr/bin/python3", "-c", code]


def allocate(mb: int) -> str:
    """Python that touches `mb` MiB (bytes multiplication writes every page) and says so."""
    return f"x = b'1' * ({mb} << 20); print('allocated', len(x) >> 20, flush=True)"
