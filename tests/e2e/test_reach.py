"""Reaching the coordinator when something is wrong with the line: every wait is bounded by
the person's `--timeout`, and a socket path that cannot work never leaves qex without one.

A subprocess limit well above the command's own `--timeout` guards each test; no assertion
depends on how long something took.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import Env
from support import kill_job_groups

from qex.store.paths import Paths


@contextmanager
def silent_socket(path: Path) -> Iterator[None]:
    """A listener at `path` that accepts every connection and never answers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)  # kept open: the command waits for a line that never comes

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def test_wait_timeout_caps_a_silent_coordinator(qex_env: Env) -> None:
    paths = Paths.from_env(qex_env.env)
    # The default ceiling (300 s): only the person's --timeout may end this command early.
    ceiling = {"QEX_COORDINATOR_CEILING_SECS": "300"}
    job = str(uuid.uuid4())
    with silent_socket(paths.socket_path):
        proc = qex_env.run("wait", job, "--timeout", "3s", timeout=90, extra_env=ceiling)
        assert proc.returncode == 124, proc.stderr
        assert "--timeout" in proc.stderr
        status = qex_env.run("status", job, "--wait", "--timeout", "2s", timeout=90,
                             extra_env=ceiling)
        assert status.returncode == 124, status.stderr


def test_a_200_character_state_path_still_gets_a_coordinator(qex_env: Env) -> None:
    root = qex_env.root
    state_home = root / "s"
    state_home = state_home / ("x" * (200 - len(str(state_home)) - 1))
    runtime = root / ("r" * 150)
    runtime.mkdir(mode=0o700)
    env = {**qex_env.env, "XDG_STATE_HOME": str(state_home), "XDG_RUNTIME_DIR": str(runtime)}
    assert len(str(state_home)) == 200
    deep = Env(root=root, env=env)
    paths = Paths.from_env(env)
    assert len(os.fsencode(paths.socket_path)) <= 108
    try:
        proc = deep.run("submit", "--wait", "--", "true", timeout=90)
        assert proc.returncode == 0, proc.stderr
        info = deep.run("info", "--json", "--no-start", timeout=60)
        assert info.returncode == 0, info.stderr
    finally:
        pid_file = paths.pid_file
        try:
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            pass
        kill_job_groups(paths.state_dir)


def test_a_socket_path_that_cannot_work_says_so_at_once(qex_env: Env) -> None:
    """A connect error that waiting cannot cure ends the command with its reason, not 124."""
    paths = Paths.from_env(qex_env.env)
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    paths.socket_path.symlink_to(paths.socket_path)  # connect() gives ELOOP, every time
    proc = qex_env.run("list", timeout=60, extra_env={"QEX_COORDINATOR_CEILING_SECS": "300"})
    assert proc.returncode == 1, proc.stderr
    assert "waiting would not change that" in proc.stderr


def test_timeout_caps_starting_a_coordinator(qex_env: Env) -> None:
    """A queued job, no coordinator, and another command that holds the spawn lock: the
    start of a coordinator is one more phase that the person's --timeout bounds."""
    import fcntl
    import json

    paths = Paths.from_env(qex_env.env)
    job = str(uuid.uuid4())
    paths.job_dir(job).mkdir(parents=True)
    (paths.job_dir(job) / "status.json").write_text(json.dumps(
        {"id": job, "name": "waiting", "state": "queued", "submitted_at": 0}))
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    with open(paths.spawn_lock, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = qex_env.run("status", job, "--wait", "--timeout", "2s", timeout=90,
                           extra_env={"QEX_COORDINATOR_CEILING_SECS": "300"})
    assert proc.returncode == 124, proc.stderr


def test_timeout_caps_the_recovery_start_of_a_stale_wait(qex_env: Env) -> None:
    """A stale record (its supervisor is gone) makes a wait start a coordinator to write the
    truth; with another command holding the spawn lock, --timeout bounds that start too, and
    the wait still ends with the outcome judged from the record."""
    import fcntl
    import json

    paths = Paths.from_env(qex_env.env)
    job = str(uuid.uuid4())
    paths.job_dir(job).mkdir(parents=True)
    (paths.job_dir(job) / "status.json").write_text(json.dumps({
        "id": job, "name": "gone", "state": "running", "submitted_at": 0, "started_at": 1,
        "boot_id": "an-earlier-boot", "supervisor_pid": 1, "pid": 1}))
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    with open(paths.spawn_lock, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = qex_env.run("wait", job, "--timeout", "2s", timeout=90,
                           extra_env={"QEX_COORDINATOR_CEILING_SECS": "300"})
    assert proc.returncode not in (0, 124), proc.stderr
