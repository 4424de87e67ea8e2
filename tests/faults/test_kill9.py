"""`kill -9` of the coordinator and of a supervisor at each step of a job's life.

Every job appends to a marker file, so each case checks that the job ran exactly once,
that its record on disk is right, that `qex wait` gives the right code, and that a
coordinator answers afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faultkit import FaultEnv, kill9


def marker_command(env: FaultEnv, script: str) -> tuple[list[str], Path]:
    marker = env.root / "job.ran"
    return ["sh", "-c", f'echo ran >> "$1"; {script}', "sh", str(marker)], marker


def runs(marker: Path) -> int:
    try:
        return marker.read_text().count("ran")
    except FileNotFoundError:
        return 0


def test_coordinator_killed_while_the_job_is_queued(fault_env: FaultEnv) -> None:
    fault_env.run("pause", "queue", check=True)
    command, marker = marker_command(fault_env, "exit 4")
    job = fault_env.submit("--mem", "8MB", "--", *command)
    kill9(fault_env.coordinator_pid_file())
    assert fault_env.record(job)["state"] == "queued"
    fault_env.run("resume", "queue", check=True)
    assert fault_env.run("wait", job, timeout=60).returncode == 4
    assert runs(marker) == 1
    fault_env.answers()
    fault_env.logs_within_cap()


def test_coordinator_killed_while_the_job_runs(fault_env: FaultEnv) -> None:
    command, marker = marker_command(fault_env, "sleep 1; exit 6")
    job = fault_env.submit("--mem", "8MB", "--", *command)
    fault_env.wait_record(job, lambda r: r["state"] == "running")
    kill9(fault_env.coordinator_pid_file())
    assert fault_env.run("wait", job, timeout=60).returncode == 6
    assert fault_env.record(job)["exit_code"] == 6
    assert runs(marker) == 1
    fault_env.answers()
    fault_env.logs_within_cap()


def test_coordinator_killed_after_the_job_ended(fault_env: FaultEnv) -> None:
    command, marker = marker_command(fault_env, "exit 8")
    job = fault_env.submit("--mem", "8MB", "--", *command)
    fault_env.wait_record(job, lambda r: r["state"] == "failed")
    kill9(fault_env.coordinator_pid_file())
    assert fault_env.run("wait", job, timeout=60).returncode == 8
    assert runs(marker) == 1
    fault_env.answers()


@pytest.mark.parametrize("also_coordinator", [False, True])
def test_supervisor_killed_while_the_job_runs(fault_env: FaultEnv,
                                              also_coordinator: bool) -> None:
    command, marker = marker_command(fault_env, "sleep 30; exit 0")
    job = fault_env.submit("--mem", "8MB", "--", *command)
    running = fault_env.wait_record(job, lambda r: r["state"] == "running")
    if also_coordinator:
        kill9(fault_env.coordinator_pid_file())
    kill9(int(running["supervisor_pid"]))
    proc = fault_env.run("wait", job, timeout=60)
    # The job ran, and how it ended is unknown: not 121 ("no job ran").
    assert proc.returncode == 120, proc.stdout + proc.stderr
    record = fault_env.wait_record(job, lambda r: r["state"] == "failed")
    assert record["exit_code"] is None
    assert "supervisor" in record["error"]
    assert runs(marker) == 1
    fault_env.answers()
    fault_env.logs_within_cap()
