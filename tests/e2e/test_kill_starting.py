"""A kill of a job that is starting (admitted, with no process yet) waits for the process
and stops it, where it was refused before ("try the command again in a moment").

`qex kill` right after `qex submit`, and a Ctrl-C of `qex run` in its first moments, land in
that window. The test widens it: the coordinator's supervisor fork server is stopped
(SIGSTOP), so the job stays `starting` until the coordinator gives up on the server and
spawns the supervisor itself.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import psutil
import pytest
from conftest import Env


def _fork_server(env: Env) -> psutil.Process | None:
    pid = env.coordinator_pid()
    if pid is None:
        return None
    for child in psutil.Process(pid).children():
        try:
            if "--forkserver" in child.cmdline():
                return child
        except psutil.Error:
            continue
    return None


@pytest.fixture
def stopped_fork_server(qex_env: Env) -> Iterator[psutil.Process]:
    qex_env.run("submit", "--wait", "--", "true", check=True)  # a coordinator and its server
    server = _fork_server(qex_env)
    if server is None:
        pytest.skip("this coordinator has no supervisor fork server to hold the job back")
    server.send_signal(signal.SIGSTOP)
    try:
        yield server
    finally:
        try:
            server.send_signal(signal.SIGCONT)
        except psutil.Error:
            pass


def test_a_kill_of_a_starting_job_stops_it(qex_env: Env,
                                           stopped_fork_server: psutil.Process) -> None:
    job = qex_env.submit("--", "sleep", "60")
    qex_env.wait_for(lambda: qex_env.record(job).get("state") == "starting",
                     what="the job to be starting")
    assert not qex_env.record(job).get("pid")
    began = time.monotonic()
    killed = qex_env.run("kill", job)
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout == f"{job} received the signal SIGTERM\n"
    assert time.monotonic() - began < 30
    qex_env.wait_for(lambda: qex_env.record(job).get("state") == "killed", what="the kill")
    log = (qex_env.state / "run" / "daemon.log").read_text()
    assert f"the signal SIGTERM went to the job {job[:8]}" in log
