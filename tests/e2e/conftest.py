"""End-to-end fixtures: the real `qex` program against a private state.

Every test gets its own XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR, QEX_PEERS_DIR,
TMPDIR and HOME inside a short temp dir, so no test touches ~/.local/state/qex or /tmp/qex,
and a coordinator started by one test is stopped at its end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import isolated_env, kill_job_groups

from qex.core.model import dataclass, field

QEX = [sys.executable, "-m", "qex"]
_bin = Path(sys.executable).parent / "qex"
if _bin.exists():
    QEX = [str(_bin)]

#: The suite's knobs: an idle coordinator lingers a minute after its last job, and a client
#: waits at most 20 seconds for any one answer.
SETTINGS = {"QEX_IDLE_EXIT_SECS": "60", "QEX_COORDINATOR_CEILING_SECS": "20"}


@dataclass
class Env:
    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def state(self) -> Path:
        return self.root / "state" / "qex"

    @property
    def config(self) -> Path:
        return self.root / "config" / "qex.toml"

    def write_config(self, text: str) -> None:
        self.config.parent.mkdir(parents=True, exist_ok=True)
        self.config.write_text(text)

    def run(self, *args: str, input: str | None = None, timeout: float = 60,
            check: bool = False, cwd: str | Path | None = None,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if extra_env:
            env.update(extra_env)
        proc = subprocess.run(
            [*QEX, *args], input=input, capture_output=True, text=True, timeout=timeout,
            env=env, cwd=str(cwd or self.root),
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"qex {' '.join(args)} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    def popen(self, *args: str, **kwargs: Any) -> subprocess.Popen[str]:
        return subprocess.Popen([*QEX, *args], env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=str(self.root), **kwargs)

    def submit(self, *args: str) -> str:
        proc = self.run("submit", *args, check=True)
        return proc.stdout.strip()

    def status(self, job_id: str) -> dict[str, Any]:
        proc = self.run("status", job_id, "--json", check=True)
        data = json.loads(proc.stdout)
        assert isinstance(data, dict)
        return data

    def record(self, job_id: str) -> dict[str, Any]:
        data = json.loads((self.state / "jobs" / job_id / "status.json").read_text())
        assert isinstance(data, dict)
        return data

    def coordinator_pid(self) -> int | None:
        proc = self.run("info", "--json", "--no-start")
        if proc.returncode != 0:
            return None
        return int(json.loads(proc.stdout)["pid"])

    def wait_for(self, predicate: Any, timeout: float = 20.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}")


def _stop_coordinator(env: Env) -> None:
    pid_file = env.state / "run" / "coordinator.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


@pytest.fixture
def qex_env() -> Iterator[Env]:
    root, env = isolated_env("qx", SETTINGS)
    handle = Env(root=root, env=env)
    try:
        yield handle
    finally:
        _stop_coordinator(handle)
        # Stop any job or supervisor still running from this test's state dir.
        kill_job_groups(handle.state)
        shutil.rmtree(root, ignore_errors=True)
