"""Damaged records, the state directory's mode, and what a failed start quotes."""

from __future__ import annotations

import json
import os
import stat

from faultkit import FaultEnv, kill9


def test_a_damaged_record_is_listed_with_its_path_and_gc_reports_it(
        fault_env: FaultEnv) -> None:
    job = fault_env.run("submit", "--wait", "--mem", "8MB", "--", "true", check=True)
    del job
    job_id = json.loads(fault_env.run("list", "--json", check=True).stdout)[0]["id"]
    status = fault_env.state / "jobs" / job_id / "status.json"
    status.write_text('{"id": "' + job_id + '", "state": ')  # torn by hand
    kill9(fault_env.coordinator_pid_file())
    proc = fault_env.run("list")
    assert proc.returncode == 0
    assert "DAMAGED" in proc.stderr and str(status) in proc.stderr
    proc = fault_env.run("gc", "--json")
    assert proc.returncode == 0
    assert str(status.parent) in json.loads(proc.stdout)["damaged_kept"]
    assert status.parent.exists()  # its logs may matter: kept until [gc] keep passes
    fault_env.logs_within_cap()


def test_a_damaged_record_is_named_so_by_the_commands_that_take_its_id(
        fault_env: FaultEnv) -> None:
    """Not "its record is gone": the record is there, unreadable, and the sentence says
    where, with the same remedy as `qex list`, whether a coordinator answers or not."""
    job_id = fault_env.submit("--mem", "8MB", "--", "true")
    assert fault_env.run("wait", job_id).returncode == 0
    status = fault_env.state / "jobs" / job_id / "status.json"
    kill9(fault_env.coordinator_pid_file())
    status.write_text('{"id": "' + job_id + '", "state": ')  # torn by hand
    calls = [(("status", job_id), None), (("status", job_id), {"QEX_NO_FAST_PATH": "1"}),
             (("wait", job_id), None), (("logs", job_id), None), (("status", job_id[:8]), None)]
    for args, extra in calls:
        proc = fault_env.run(*args, extra_env=extra)
        assert proc.returncode == 127, (args, proc.stderr)
        assert "is DAMAGED" in proc.stderr and str(status) in proc.stderr, (args, proc.stderr)
        assert "gone" not in proc.stderr
    assert status.read_text() == '{"id": "' + job_id + '", "state": '  # nothing rewritten


def test_the_state_directory_is_private(fault_env: FaultEnv) -> None:
    old = os.umask(0o022)
    try:
        fault_env.answers()
    finally:
        os.umask(old)
    assert stat.S_IMODE(fault_env.state.stat().st_mode) == 0o700


def test_a_failed_start_quotes_only_the_new_coordinators_words(fault_env: FaultEnv) -> None:
    fault_env.answers()
    kill9(fault_env.coordinator_pid_file())
    log = fault_env.state / "run" / "daemon.log"
    with open(log, "a") as handle:
        handle.write("[old] an error from long ago that is fixed\n")
    fault_env.write_config("bogus = 1\n")
    proc = fault_env.run("list")
    assert proc.returncode == 1
    assert "bogus" in proc.stderr
    assert "long ago" not in proc.stderr
