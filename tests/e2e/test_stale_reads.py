"""Reads after a crash: a record whose processes are gone never shows as running.

The coordinator and a job's supervisor are killed with SIGKILL (and, in variants, the record
is made to look like an earlier boot's, or its supervisor pid is given to another process).
Then `qex status` must show the outcome that recovery will write, without a coordinator, and
`qex wait --timeout` must end with that outcome, not with 124.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import Env

from qex.core.states import Exit
from qex.platform import procs


def _running_job(qex_env: Env) -> tuple[str, dict[str, object]]:
    gate = qex_env.root / "gate"
    job = qex_env.submit("--name", "held", "--", "sh", "-c",
                         f"while [ ! -e {gate} ]; do sleep 0.05; done")
    record = qex_env.wait_for(
        lambda: (r := qex_env.record(job))["state"] == "running" and r.get("supervisor_pid") and r,
        what="the job to run")
    return job, record


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _kill_coordinator_and_supervisor(qex_env: Env, record: dict[str, object]) -> None:
    pid = qex_env.coordinator_pid()
    assert pid
    os.kill(pid, signal.SIGKILL)
    qex_env.wait_for(lambda: not _alive(pid), what="the coordinator to die")
    supervisor = int(str(record["supervisor_pid"]))
    os.kill(supervisor, signal.SIGKILL)
    qex_env.wait_for(lambda: not _alive(supervisor), what="the supervisor to die")


def _rewrite(qex_env: Env, job: str, **fields: object) -> None:
    path = qex_env.state / "jobs" / job / "status.json"
    data = json.loads(path.read_text())
    data.update(fields)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(path)


@pytest.mark.parametrize("variant", ["killed", "earlier-boot", "pid-reused"])
def test_status_and_wait_tell_the_truth_after_kill_nine(qex_env: Env, variant: str) -> None:
    job, record = _running_job(qex_env)
    _kill_coordinator_and_supervisor(qex_env, record)
    job_pid = int(str(record["pid"]))
    other: subprocess.Popen[bytes] | None = None
    if variant == "earlier-boot":
        _rewrite(qex_env, job, boot_id="an-earlier-boot")
    elif variant == "pid-reused":
        # The supervisor's pid and start token now both name another live process: what a
        # reused pid looks like when the start time is coarse (the portable one has 1 s steps).
        # Only the supervisor's lock, which died with it, tells the two apart.
        other = subprocess.Popen(["sleep", "60"])
        token = procs.start_token(other.pid)  # this process has the qex under test's QEX_PLATFORM
        assert token
        _rewrite(qex_env, job, supervisor_pid=other.pid, supervisor_start_token=token)
    try:
        shown = qex_env.run("status", job, "--json", timeout=30)
        assert shown.returncode == 0, shown.stderr
        data = json.loads(shown.stdout)
        assert data["state"] == "failed", data
        if variant == "earlier-boot":
            assert "machine restarted" in data["error"]
        else:
            assert "coordinator stopped" in data["error"]
        # A plain read starts no coordinator and writes nothing.
        assert qex_env.coordinator_pid() is None
        assert qex_env.record(job)["state"] == "running"
        # Following the log of a job whose processes are gone ends instead of waiting for ever.
        followed = qex_env.run("logs", job, "--follow", timeout=60)
        assert followed.returncode == 0, followed.stderr

        waited = qex_env.run("wait", job, "--timeout", "30s", timeout=60)
        # The job ran and nobody saw it end: 120 (issue 6), not 121 ("no job ran").
        assert waited.returncode == Exit.RESULT_LOST, (waited.returncode, waited.stderr)
        assert "failed" in waited.stdout + waited.stderr
        written = qex_env.record(job)
        assert written["state"] == "failed"
        if variant != "earlier-boot":
            # Recovery stopped the job process that nothing could record any more.
            qex_env.wait_for(lambda: not _alive(job_pid), what="the orphaned job to stop")
    finally:
        if other is not None:
            other.kill()
            other.wait()


def test_a_wait_whose_supervisor_dies_during_the_wait_ends(qex_env: Env) -> None:
    job, record = _running_job(qex_env)
    waiting = qex_env.popen("wait", job, "--timeout", "60s")
    try:
        time.sleep(0.5)  # let the wait reach the coordinator (not a timing assertion)
        _kill_coordinator_and_supervisor(qex_env, record)
        _out, err = waiting.communicate(timeout=90)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
    assert waiting.returncode == Exit.RESULT_LOST, (waiting.returncode, err)
    assert qex_env.record(job)["state"] == "failed"


def test_a_pause_that_ended_with_no_coordinator_gives_the_time_back(qex_env: Env) -> None:
    qex_env.run("pause", "queue", "--for", "10s", check=True)
    job = qex_env.submit("--max-queue-time", "6s", "--", "true")
    until = json.loads((qex_env.state / "run" / "paused.json").read_text())["queue"]["until"]
    pid = qex_env.coordinator_pid()
    assert pid
    os.kill(pid, signal.SIGKILL)
    submitted = qex_env.record(job)["submitted_at"]
    # No coordinator runs while the pause ends, and the job's 6 s pass: only the credit for
    # the paused time keeps it from expiring once a coordinator runs again.
    while time.time() < max(until + 1, submitted + 7):
        time.sleep(0.1)
    # A read without a coordinator shows the credit that recovery will give.
    shown = json.loads(qex_env.run("status", job, "--json", check=True).stdout)
    assert shown["state"] == "queued" and shown["queue_pause_secs"] > 0, shown
    assert "resumed" not in str(shown.get("blocked_reason")), shown
    assert qex_env.coordinator_pid() is None
    done = qex_env.run("wait", job, "--timeout", "60s", timeout=90)
    assert done.returncode == 0, (done.returncode, done.stderr)
    record = qex_env.record(job)
    assert record["state"] == "completed"
    assert record["queue_pause_secs"] > 0
