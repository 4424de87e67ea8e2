"""`qex coordinator stop | restart` with a coordinator that the CLI started: the coordinator
goes, the jobs stay, and the next command (or `restart`) brings a coordinator back."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Env

from qex.cli.coordinator_control import under_systemd


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
    assert under_systemd(41, str(tmp_path))
    assert not under_systemd(42, str(tmp_path))
    assert not under_systemd(43, str(tmp_path))


def _cmdline(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().replace(b"\0", b" ").strip()


def test_a_coordinator_that_a_command_started_keeps_nothing_of_the_command(
        qex_env: Env) -> None:
    """Forked from the submit on Linux (spawned in the portable implementation), the
    coordinator is a process of its own: `qex daemon` in `ps`, a session of its own, the
    directory /, stdin from /dev/null and its output in daemon.log, and neither the
    command's output pipe nor a descriptor the command's caller left open (a caller that
    reads them to their end would wait for the coordinator's whole life)."""
    from qex.platform import host

    left_read, left_write = os.pipe()
    os.set_inheritable(left_write, True)
    proc = qex_env.popen("submit", "--", "true", pass_fds=(left_write,))
    os.close(left_write)
    out, err = proc.communicate(timeout=60)  # returns: nobody else holds the pipes
    assert proc.returncode == 0, err
    with os.fdopen(left_read, "rb") as left:
        assert left.read() == b""  # end of file: the coordinator does not hold it
    assert qex_env.run("wait", out.strip()).returncode == 0
    pid = qex_env.coordinator_pid()
    assert pid is not None
    assert b"qex daemon" in _cmdline(pid)
    assert os.getsid(pid) == pid
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert os.readlink(f"/proc/{pid}/fd/1") == str(qex_env.state / "run" / "daemon.log")
    if host.linux(qex_env.env):
        assert _cmdline(pid) == b"qex daemon"  # forked, and named for `ps`
        servers = [child for child in _children(pid) if b"--forkserver" in _cmdline(child)]
        assert [_cmdline(child) for child in servers] == [b"qex supervisor --forkserver"]


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    return found
