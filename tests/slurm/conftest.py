"""Fixtures for the Slurm integration tests: a real one-node Slurm, and the real `qex`.

The session fixture starts Slurm with tests/slurm/harness/slurm-up (root only; Debian's
slurm-wlm and munge must be installed: `slurm-up --install`, or .ci/run). Without root or
Slurm these tests are skipped, unless QEX_REQUIRE_SLURM=1 (CI), which makes that a failure.
Each test gets the isolated state of tests/e2e (under /tmp, which the node shares with the
coordinator here) and a config with `[engine] kind = "slurm"`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import Env, _stop_coordinator
from support import isolated_env, kill_job_groups

HARNESS = Path(__file__).parent / "harness"
PIDS = ("/run/munge/munged.pid", "/run/slurm/slurmctld.pid", "/run/slurm/slurmd.pid")
#: Every wait in these tests ends by this time, whatever happens.
LIMIT = 90.0


def _running(pid_file: str) -> bool:
    try:
        os.kill(int(Path(pid_file).read_text().split()[0]), 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


def _installed() -> bool:
    return shutil.which("slurmctld") is not None or Path("/usr/sbin/slurmctld").exists()


def slurm_available() -> str | None:
    """None when these tests can run here; else why not."""
    if os.geteuid() != 0:
        return "the Slurm tests start slurmctld and slurmd, which needs root"
    if not _installed():
        return ("Slurm is not installed; run tests/slurm/harness/slurm-up --install (Debian's "
                "slurm-wlm, slurm-client and munge)")
    return None


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[None]:
    why = slurm_available()
    if why is not None:
        if os.environ.get("QEX_REQUIRE_SLURM") == "1":
            pytest.fail(f"QEX_REQUIRE_SLURM=1, but {why}")
        pytest.skip(why)
    started_here = not all(_running(p) for p in PIDS)
    done = subprocess.run([str(HARNESS / "slurm-up")], capture_output=True, text=True,
                          timeout=120, check=False)
    if done.returncode != 0:
        pytest.fail(f"slurm-up failed: {done.stdout}{done.stderr}")
    yield
    if started_here and os.environ.get("QEX_KEEP_SLURM") != "1":
        subprocess.run([str(HARNESS / "slurm-down")], timeout=120, check=False)


class SlurmEnv(Env):
    """The e2e environment, plus what the Slurm tests ask of Slurm."""

    def slurm_id(self, job_id: str) -> str:
        found: str = self.wait_until(lambda: self.record(job_id).get("engine_id"),
                                     f"Slurm's id for {job_id[:8]}")
        return found

    def state_of(self, job_id: str) -> str:
        return str(self.record(job_id)["state"])

    def wait_until(self, predicate: Callable[[], Any], what: str) -> Any:
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            try:
                value = predicate()
            except (OSError, ValueError, KeyError):
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")


def scontrol(slurm_id: str) -> dict[str, str]:
    """`scontrol show job -o` as a dict (Slurm keeps a finished job for MinJobAge)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", slurm_id], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    fields: dict[str, str] = {}
    for word in out.split():
        key, sep, value = word.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


@pytest.fixture
def slurm_env(slurm_cluster: None) -> Iterator[SlurmEnv]:
    root, env = isolated_env("qxs", {"QEX_IDLE_EXIT_SECS": "120"})
    handle = SlurmEnv(root=root, env=env)
    handle.write_config('[engine]\nkind = "slurm"\npoll = 1\n')
    try:
        yield handle
    finally:
        _stop_coordinator(handle)
        for status in (handle.state / "jobs").glob("*/status.json"):
            try:
                slurm_id = json.loads(status.read_text()).get("engine_id")
            except (OSError, ValueError):
                continue
            if slurm_id:
                subprocess.run(["scancel", str(slurm_id)], capture_output=True, timeout=30,
                               check=False)
        kill_job_groups(handle.state)
        shutil.rmtree(root, ignore_errors=True)
