"""`qex coordinator stop | restart` with a coordinator that the CLI started: the coordinator
goes, the jobs stay, and the next command (or `restart`) brings a coordinator back."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Env

from qex.cli.commands.coordinator import under_systemd


def test_stop_ends_the_coordinator_and_not_the_job(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = 4\nmem = "90%"\n[defaults]\nmem = "64MB"\n')
    gate = qex_env.root / "gate"
    job = qex_env.submit("--", "sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.05; done', "g",
                         str(gate))
    qex_env.wait_for(lambda: qex_env.record(job)["state"] == "running", what="the job to run")
    first = qex_env.coordinator_pid()
    assert first is not None

    stopped = qex_env.run("coordinator", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped the coordinator (pid {first}); jobs keep running" in stopped.stdout
    assert qex_env.coordinator_pid() is None
    supervisor = qex_env.record(job)["supervisor_pid"]
    os.kill(supervisor, 0)  # the job's supervisor outlived the coordinator
    assert qex_env.record(job)["state"] == "running"

    again = qex_env.run("coordinator", "stop")
    assert again.returncode == 0 and "no coordinator runs" in again.stdout

    restarted = qex_env.run("coordinator", "restart")
    assert restarted.returncode == 0, restarted.stderr
    second = qex_env.coordinator_pid()
    assert second is not None and second != first
    assert f"the new one is pid {second}" in restarted.stdout
    third_run = qex_env.run("coordinator", "restart")
    assert f"(was pid {second})" in third_run.stdout
    gate.touch()
    done = qex_env.run("wait", job)
    assert done.returncode == 0, done.stderr
    assert qex_env.record(job)["state"] == "completed"


def test_a_coordinator_in_qex_service_is_told_apart(tmp_path: Path) -> None:
    (tmp_path / "41").mkdir()
    (tmp_path / "41" / "cgroup").write_text(
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/qex.service\n")
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "cgroup").write_text("0::/user.slice/user-1000.slice/session-3.scope\n")
    assert under_systemd(41, tmp_path)
    assert not under_systemd(42, tmp_path)
    assert not under_systemd(43, tmp_path)
