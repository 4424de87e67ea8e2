"""The supervisor's lock as the proof of its life, next to pid and start time."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

from qex.core import recovery_rule
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


def test_the_probe_tells_a_lock_never_made_from_one_let_go(tmp_path: Path) -> None:
    assert jobs.supervisor_lock(tmp_path) == recovery_rule.LOCK_MISSING
    fd = _hold(tmp_path / jobs.SUPERVISOR_LOCK)
    assert jobs.supervisor_lock(tmp_path) == recovery_rule.LOCK_HELD
    os.close(fd)
    assert jobs.supervisor_lock(tmp_path) == recovery_rule.LOCK_FREE


def test_a_requeued_job_forgets_a_lock_that_nobody_holds(tmp_path: Path) -> None:
    lock = tmp_path / jobs.SUPERVISOR_LOCK
    fd = _hold(lock)
    jobs.forget_supervisor_lock(tmp_path)  # held: a supervisor keeps what it has
    assert lock.exists()
    os.close(fd)
    jobs.forget_supervisor_lock(tmp_path)
    assert not lock.exists()
    jobs.forget_supervisor_lock(tmp_path)  # nothing there: nothing to do


def _dead_pid() -> tuple[int, str | None]:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    token = procs.start_token(gone.pid)
    gone.wait()
    return gone.pid, token


def test_a_named_supervisor_that_never_took_the_lock_never_launched_the_job() -> None:
    # The coordinator names the supervisor in supervisor.pid, then sends its go; the
    # supervisor takes the lock before it touches anything. A coordinator killed between the
    # two leaves a name, a dead supervisor, and no lock: the job never ran, so it is queued
    # again; with a lock the supervisor had passed its go, and the job failed.
    pid, token = _dead_pid()
    record = {"state": "starting"}
    pid_file = (pid, token, True)
    untouched = liveness.observe(record, pid_file, lock=recovery_rule.LOCK_MISSING)
    assert not untouched.supervisor_alive and not untouched.launched
    assert recovery_rule.judge("starting", False, untouched).action == recovery_rule.REQUEUE
    for lock in (recovery_rule.LOCK_FREE, recovery_rule.LOCK_HELD, None):
        touched = liveness.observe(record, pid_file, lock=lock)
        assert touched.launched
        assert recovery_rule.judge("starting", False, touched).action == recovery_rule.FAIL
    # A record that the supervisor wrote itself was launched, lock or not.
    written = liveness.observe({"state": "starting", "supervisor_pid": pid,
                                "supervisor_start_token": token}, (None, None, False),
                               lock=recovery_rule.LOCK_MISSING)
    assert written.launched


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
    assert not liveness.observe(record, _NO_PID_FILE, lock=recovery_rule.LOCK_FREE).supervisor_alive


def test_the_lock_says_nothing_before_the_supervisor_names_itself() -> None:
    # Between its launch and its first write a new supervisor may not hold the lock yet
    # (a requeued job's directory keeps the lock file of the earlier attempt).
    me = os.getpid()
    pid_file = (me, procs.start_token(me), True)
    for lock in (recovery_rule.LOCK_FREE, recovery_rule.LOCK_MISSING):
        facts = liveness.observe({"state": "starting"}, pid_file, lock=lock)
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
