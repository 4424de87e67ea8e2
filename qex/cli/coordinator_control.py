"""Stopping and restarting the coordinator, without click (`qex coordinator stop | restart`).

Stopping the coordinator never stops a job: every job runs under its own supervisor, which
writes the record when the job ends, and the next coordinator adopts whatever still runs.

Two kinds of coordinator are told apart by the cgroup of the running process:

* socket-activated, as the systemd user unit `qex.service` (`qex systemd install` or a
  distribution package): it is stopped and restarted through `systemctl --user`, so the
  user manager knows; `qex.socket` keeps listening, and the next command starts a new one;
* started by the CLI: it gets SIGTERM, and qex waits until it has let go of its pid lock.

A person runs `stop` after an upgrade and a test harness after each test, so the fast path
(`qex.cli.fast`) and the click commands both call `stop` and `restart` here.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

    from qex.store.paths import Paths

SERVICE = "qex.service"
#: How long a coordinator may take to exit after SIGTERM.
STOP_WAIT = 10.0


def running_pid(paths: Paths) -> int | None:
    """The pid of the coordinator that holds the pid lock of this state dir, or None."""
    try:
        fd = os.open(paths.pid_file, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None  # nobody holds the lock: no coordinator runs
        except OSError:
            pass
        try:
            return int(os.read(fd, 64).split()[0])
        except (ValueError, IndexError):
            return None
    finally:
        os.close(fd)


def under_systemd(pid: int, proc: str = "/proc") -> bool:
    """Whether the process runs in the cgroup of the user unit qex.service."""
    try:
        with open(os.path.join(proc, str(pid), "cgroup")) as handle:
            text = handle.read()
    except OSError:
        return False
    return any(line.rstrip().endswith("/" + SERVICE) for line in text.splitlines())


def _systemctl(*args: str) -> subprocess.CompletedProcess[str] | None:
    """`systemctl --user ...`, or None when there is no systemctl or no user manager."""
    import subprocess

    try:
        proc = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc


def _wait_gone(paths: Paths, pid: int) -> bool:
    deadline = time.monotonic() + STOP_WAIT
    while time.monotonic() < deadline:
        if running_pid(paths) != pid:
            return True
        time.sleep(0.05)
    return False


def stop_running(paths: Paths, *, verb: str) -> tuple[int | None, bool]:
    """Stop the coordinator (`verb` is `stop` or `restart` for systemctl). Returns its pid
    (None when none ran) and whether systemd manages it."""
    from qex.cli.common import die

    pid = running_pid(paths)
    if pid is None:
        return None, False
    if under_systemd(pid):
        proc = _systemctl(verb, SERVICE)
        if proc is None or proc.returncode != 0:
            said = "" if proc is None else (proc.stderr or proc.stdout).strip().replace("\n", " ")
            die(f"the coordinator (pid {pid}) runs as the systemd user unit {SERVICE}, and "
                f"`systemctl --user {verb} {SERVICE}` did not work here"
                f"{': ' + said if said else ''}; run it in a login session of this user", 1)
        if verb == "stop" and not _wait_gone(paths, pid):
            die(f"systemd stopped {SERVICE}, but pid {pid} still holds the coordinator's lock; "
                f"see `systemctl --user status {SERVICE}`", 1)
        return pid, True
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return None, False
    except PermissionError:
        die(f"the coordinator (pid {pid}) belongs to another user; only they can stop it", 1)
    if not _wait_gone(paths, pid):
        die(f"the coordinator (pid {pid}) did not exit within {STOP_WAIT:g}s of SIGTERM; look "
            f"at {paths.run_dir / 'daemon.log'}, or `kill -9 {pid}` (jobs keep running)", 1)
    return pid, False


def stop() -> int:
    """Stop the coordinator of this state directory (never its jobs); the exit code."""
    from qex.cli.common import get_paths

    paths = get_paths()
    pid, systemd = stop_running(paths, verb="stop")
    if pid is None:
        said = f"qex: no coordinator runs for {paths.state_dir}; nothing to stop"
    elif systemd:
        said = (f"qex: stopped {SERVICE} (pid {pid}) with systemctl --user; jobs keep running, "
                "and qex.socket starts the coordinator again at the next command")
    else:
        said = (f"qex: stopped the coordinator (pid {pid}); jobs keep running, and the next qex "
                "command starts a new one")
    sys.stdout.write(said + "\n")
    return 0


def restart() -> int:
    """Replace the coordinator with a new one, which adopts the running jobs; the exit code."""
    from qex.cli.common import get_paths
    from qex.cli.reach import open_connection

    paths = get_paths()
    old, systemd = stop_running(paths, verb="restart")
    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        new = conn.info().get("pid")
    how = f"{SERVICE} with systemctl --user" if systemd else "the coordinator"
    before = f" (was pid {old})" if old is not None else " (none was running)"
    sys.stdout.write(f"qex: restarted {how}{before}; the new one is pid {new}\n")
    return 0
