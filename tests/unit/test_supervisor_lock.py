"""The supervisor's lock as the proof of its life, next to pid and start time."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

from qex.platform import liveness, procs
from qex.store import jobs
from qex.supervisor import main as supervisor_main

_NO_PID_FILE: tuple[int | None, str | None, bool] = (None, None, False)


def _hold(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_the_lock_is_free_only_when_it_exists_and_nobody_holds_it(tmp_path: Path) -> None:
    assert not jobs.supervisor_lock_free(tmp_path)  # no lock yet: no evidence either way
    fd = _hold(tmp_path / jobs.SUPERVISOR_LOCK)
    assert not jobs.supervisor_lock_free(tmp_path)
    os.close(fd)
    assert jobs.supervisor_lock_free(tmp_path)


def test_a_lock_held_by_a_process_that_died_is_free(tmp_path: Path) -> None:
    lock = tmp_path / jobs.SUPERVISOR_LOCK
    script = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
              "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", script, str(lock)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not jobs.supervisor_lock_free(tmp_path)
    finally:
        holder.kill()
        holder.communicate()
    assert jobs.supervisor_lock_free(tmp_path)


def test_a_free_lock_outweighs_a_pid_and_token_that_still_match() -> None:
    # This test process is alive and its token is right: only the lock says it is not the
    # supervisor that wrote the record (a pid reused within the token's resolution).
    me = os.getpid()
    record = {"state": "running", "supervisor_pid": me,
              "supervisor_start_token": procs.start_token(me)}
    assert liveness.observe(record, _NO_PID_FILE).supervisor_alive
    assert not liveness.observe(record, _NO_PID_FILE, lock_free=True).supervisor_alive


def test_the_lock_says_nothing_before_the_supervisor_names_itself() -> None:
    # Between its launch and its first write a new supervisor may not hold the lock yet
    # (a requeued job's directory keeps the lock file of the earlier attempt).
    me = os.getpid()
    pid_file = (me, procs.start_token(me), True)
    facts = liveness.observe({"state": "starting"}, pid_file, lock_free=True)
    assert facts.supervisor_alive and facts.launched


def test_a_supervisor_start_waits_out_a_reader_probe(tmp_path: Path) -> None:
    probe = _hold(tmp_path / jobs.SUPERVISOR_LOCK)
    release = threading.Timer(0.05, os.close, args=(probe,))
    release.start()
    try:
        fd = supervisor_main._take_lock(tmp_path)
    finally:
        release.join()
    assert fd is not None
    os.close(fd)


def test_a_supervisor_start_gives_up_when_another_holds_the_lock(tmp_path: Path) -> None:
    other = _hold(tmp_path / jobs.SUPERVISOR_LOCK)
    try:
        assert supervisor_main._take_lock(tmp_path) is None
    finally:
        os.close(other)


def test_a_supervisor_without_its_go_takes_back_only_its_own_name(tmp_path: Path) -> None:
    from qex.supervisor.main import _unname

    named = tmp_path / "supervisor.pid"
    named.write_text(f"{os.getpid() + 1} 7\n")  # another supervisor's: kept
    _unname(tmp_path)
    assert named.exists()
    named.write_text(f"{os.getpid()} 7\n")
    _unname(tmp_path)
    assert not named.exists()
    _unname(tmp_path)  # no name at all: nothing to do
