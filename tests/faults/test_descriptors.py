"""Descriptor exhaustion: the coordinator at a low RLIMIT_NOFILE, more connections than fit."""

from __future__ import annotations

import socket
import subprocess
import time

from faultkit import QEX, FaultEnv, need_root


def _limits(pid: int) -> tuple[int, int]:
    with open(f"/proc/{pid}/limits") as handle:
        for line in handle:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no open-file limit in /proc")


def test_the_coordinator_raises_its_soft_limit_to_the_hard_one(fault_env: FaultEnv) -> None:
    subprocess.run(["prlimit", "--nofile=256:4096", "--", *QEX, "info"], env=fault_env.env,
                   capture_output=True, text=True, timeout=60, check=True)
    soft, hard = _limits(fault_env.coordinator_pid_file())
    assert (soft, hard) == (4096, 4096)


def test_running_out_of_descriptors_is_one_calm_line(fault_env: FaultEnv) -> None:
    need_root()
    fault_env.answers()
    pid = fault_env.coordinator_pid_file()
    subprocess.run(["prlimit", f"--pid={pid}", "--nofile=48:48"], check=True)
    sock_path = str(fault_env.state / "run" / "qex.sock")
    held: list[socket.socket] = []
    try:
        for _ in range(120):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(2)
            try:
                sock.connect(sock_path)
            except OSError:
                sock.close()
                break
            held.append(sock)
        time.sleep(3)  # several accept retries happen at the limit
    finally:
        for sock in held:
            sock.close()
    assert len(held) > 48  # the limit was reached
    # asyncio accepts again a second after its last EMFILE, then drains the backlog of
    # connections that closed meanwhile; from then on a command is answered at once.
    fault_env.wait_for(lambda: fault_env.run("info", "--no-start", timeout=20).returncode == 0,
                       what="the coordinator to accept again")
    fault_env.answers()
    log = (fault_env.state / "run" / "daemon.log").read_text(errors="replace")
    assert log.count("Too many open files") == 1, log[-4000:]
    assert "Traceback" not in log
    # And it still runs jobs.
    assert fault_env.run("submit", "--wait", "--mem", "8MB", "--", "true", timeout=60).returncode == 0
    fault_env.logs_within_cap()
