"""A forked supervisor that settled its job serves the next one (`forkserver._serve_jobs`).

What must hold for that to be safe: each job still gets its own environment and directory,
a supervisor that a job left anything in (an orphan it adopted as subreaper) does not serve
again, the coordinator keeps no watch on a supervisor for a job that is over, and no
supervisor serves more than `JOBS_PER_SUPERVISOR` jobs. Where the coordinator starts every
supervisor fresh (no fork server: the portable implementation) there is nothing to test.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import Env

from qex.supervisor.forkserver import JOBS_PER_SUPERVISOR


def _with_fork_server(env: Env) -> int:
    """The coordinator's pid, after a first job; skips where it has no fork server."""
    env.run("submit", "--wait", "-q", "--", "true", check=True)
    pid = env.coordinator_pid()
    assert pid is not None
    children = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        kids = children.read_text().split()
    except OSError:
        pytest.skip("no /proc to find the fork server in")
    for kid in kids:
        try:
            if b"--forkserver" in Path(f"/proc/{kid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    pytest.skip("this coordinator starts every supervisor fresh (no fork server)")


def _supervisor(env: Env, job: str) -> int:
    pid = env.record(job).get("supervisor_pid")
    assert isinstance(pid, int), env.record(job)
    return pid


def _run(env: Env, *command: str, cwd: Path | None = None,
         extra_env: dict[str, str] | None = None) -> str:
    """Submit a job, wait for its end, and give its id."""
    job = env.run("submit", "--", *command, cwd=cwd, extra_env=extra_env,
                  check=True).stdout.strip()
    env.run("wait", "-q", job, check=True)
    return job


def _output(env: Env, job: str) -> str:
    return (env.state / "jobs" / job / "stdout.log").read_text()


def test_jobs_one_after_another_share_a_supervisor_and_nothing_else(qex_env: Env) -> None:
    _with_fork_server(qex_env)
    script = 'echo "${ONLY_SOME-unset} $(pwd) $(umask)"'
    jobs = []
    for index in range(6):
        where = qex_env.root / f"dir{index}"
        where.mkdir()
        extra = {"ONLY_SOME": f"set{index}"} if index % 2 == 0 else None
        job = _run(qex_env, "sh", "-c", script, cwd=where, extra_env=extra)
        jobs.append(job)
        assert qex_env.record(job)["state"] == "completed"
        seen = "set" + str(index) if index % 2 == 0 else "unset"
        assert _output(qex_env, job).split()[:2] == [seen, str(where)]
    supervisors = [_supervisor(qex_env, job) for job in jobs]
    assert len(set(supervisors)) < len(jobs), supervisors  # some served again
    for job in jobs:  # each log has its own job's lines, and a served-again one says nothing
        log = qex_env.state / "jobs" / job / "supervisor.log"
        assert not log.exists() or log.read_text() == "", log.read_text()


def test_a_supervisor_that_adopted_an_orphan_does_not_serve_again(qex_env: Env) -> None:
    _with_fork_server(qex_env)
    # The job ends only once its child has left the job's session: a child still in the
    # job's group when the job ends is a leftover, and the supervisor kills it (on a busy
    # host the child may not have run `setsid` yet when `sh` exits).
    job = _run(qex_env, "sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & pid=$!; "
               "while [ \"$(cut -d' ' -f6 /proc/$pid/stat)\" != \"$pid\" ]; do sleep 0.01; "
               "done; echo $pid")
    orphan = int(_output(qex_env, job).split()[0])
    try:
        supervisor = _supervisor(qex_env, job)
        # The orphan became the supervisor's child (it is the job's subreaper), so the
        # supervisor leaves with it instead of taking the next job.
        qex_env.wait_for(lambda: not Path(f"/proc/{supervisor}").exists()
                         or _parent(orphan) != supervisor, what="the supervisor to leave")
        jobs = [_run(qex_env, "true") for _ in range(2)]
        assert supervisor not in {_supervisor(qex_env, other) for other in jobs}
    finally:
        try:
            os.kill(orphan, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _pidfds(pid: int) -> int:
    count = 0
    for entry in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{entry}") == "anon_inode:[pidfd]":
                count += 1
        except OSError:
            continue
    return count


def test_the_coordinator_keeps_no_watch_on_a_supervisor_for_jobs_that_ended(
        qex_env: Env) -> None:
    coordinator = _with_fork_server(qex_env)
    jobs = [_run(qex_env, "true") for _ in range(8)]
    assert len({_supervisor(qex_env, job) for job in jobs}) < len(jobs)
    assert _pidfds(coordinator) == 0


def test_no_supervisor_serves_more_jobs_than_its_bound(qex_env: Env) -> None:
    qex_env.write_config("[budget]\ncpu = 1\n")
    _with_fork_server(qex_env)
    count = JOBS_PER_SUPERVISOR + 6
    lines = qex_env.root / "lines.txt"
    lines.write_text("".join(f"{index}\n" for index in range(count)))
    group = qex_env.run("submit", "--each-line", str(lines), "--name", "many", "--cpu", "1",
                        "--", "true", "{}", check=True).stdout.strip()
    qex_env.run("wait", "-q", group, timeout=120, check=True)
    records = [json.loads(path.read_text())
               for path in (qex_env.state / "jobs").glob("*/status.json")]
    served = Counter(record["supervisor_pid"] for record in records
                     if record.get("group") == group)
    assert sum(served.values()) == count
    assert max(served.values()) <= JOBS_PER_SUPERVISOR, served
    assert max(served.values()) > 1, served


def test_each_job_reports_its_own_peak_memory(qex_env: Env) -> None:
    # The process-wide high-water mark of reaped children would give a small job the peak of
    # a large one that the same supervisor served before it.
    _with_fork_server(qex_env)
    grow = "b = bytearray(160 << 20); b[::4096] = bytes(len(b) // 4096)"
    big = _run(qex_env, sys.executable, "-c", grow)
    peak = qex_env.record(big)["usage"]["max_rss"]
    assert peak > 150 << 20, qex_env.record(big)["usage"]
    small = [_run(qex_env, "true") for _ in range(3)]
    assert _supervisor(qex_env, big) in {_supervisor(qex_env, job) for job in small}
    for job in small:
        assert qex_env.record(job)["usage"]["max_rss"] < 64 << 20, qex_env.record(job)["usage"]
