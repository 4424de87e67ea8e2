"""The stop hook runner: its environment, exactly-once, and each verdict (real processes)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from qex.core.records import JobSpec, JobStatus
from qex.store import jobs
from qex.store.paths import Paths
from qex.supervisor.hook import OUTPUT_CAP, claim, hook_env, run_stop_hook

JOB_ID = "0b5c9c2e-4f6e-4d55-9a53-51d7e1f0a001"


def make_job(tmp: Path, config: str, **status: object) -> tuple[Paths, Path]:
    paths = Paths.from_env({"HOME": str(tmp), "XDG_STATE_HOME": str(tmp / "state"),
                            "XDG_CONFIG_HOME": str(tmp / "config")})
    (tmp / "config").mkdir()
    paths.config_file.write_text(config)
    job_dir = jobs.create_job_dir(paths, JOB_ID)
    spec = JobSpec(id=JOB_ID, name="build\x1b[2Jx", cwd=str(tmp), command=["true"], env={},
                   cpu=1, mem=1, submitted_at=0.0, tags=["a\tb", "c"])
    record = JobStatus.new(spec, boot_id=None, oom_retries=None)
    record.state = "completed"
    record.exit_code = 0
    record.started_at, record.finished_at = 100.0, 112.6
    record.attempts = 2
    record.usage = {"max_rss": 4096, "cpu_secs": 1.0}
    for key, value in status.items():
        setattr(record, key, value)
    jobs.write_status(job_dir, record)
    return paths, job_dir


def hook_config(script: str, *extra: str, timeout: str = "30s") -> str:
    argv = json.dumps([sys.executable, "-c", script, *extra])
    return f'[hooks]\non_stop = {argv}\ntimeout = "{timeout}"\n'


def test_hook_env_names_the_job_safely(tmp_path: Path) -> None:
    _, job_dir = make_job(tmp_path, "")
    record = jobs.read_status(job_dir)
    assert record is not None
    env = hook_env(record, job_dir)
    assert env["QEX_JOB_NAME"] == "build_2Jx"
    assert env["QEX_TAGS"] == "a b c"
    assert (env["QEX_STATE"], env["QEX_EXIT_CODE"], env["QEX_SIGNAL"]) == ("completed", "0", "")
    assert (env["QEX_ELAPSED_SECS"], env["QEX_ATTEMPTS"], env["QEX_MAX_RSS"]) == ("13", "2", "4096")
    assert env["QEX_JOB_DIR"] == str(job_dir)
    record.state, record.exit_code, record.signal = "killed", None, 9
    env = hook_env(record, job_dir)
    assert (env["QEX_EXIT_CODE"], env["QEX_SIGNAL"]) == ("", "9")


def test_claim_is_exclusive(tmp_path: Path) -> None:
    _, job_dir = make_job(tmp_path, "")
    record = jobs.read_status(job_dir)
    assert record is not None
    assert claim(job_dir, record, "supervisor")
    assert not claim(job_dir, record, "coordinator")
    assert (job_dir / "hook.ran").read_text().split()[:2] == ["completed", JOB_ID]


def test_runs_once_with_the_environment_and_in_the_job_dir(tmp_path: Path) -> None:
    script = ("import os, sys\n"
              "print(os.getcwd(), os.environ['QEX_STATE'], os.environ['QEX_JOB_ID'])\n"
              "print('to stderr', file=sys.stderr)\n")
    paths, job_dir = make_job(tmp_path, hook_config(script))
    verdict = run_stop_hook(paths, JOB_ID, origin="supervisor")
    assert verdict is not None and verdict.startswith("ran in")
    log = (job_dir / "hook.log").read_text()
    assert f"{tmp_path} completed {JOB_ID}" in log and "to stderr" in log
    assert log.rstrip().endswith(f"qex: the stop hook {verdict}.")
    assert run_stop_hook(paths, JOB_ID, origin="coordinator") is None


def test_only_listed_states_and_only_final_jobs(tmp_path: Path) -> None:
    paths, job_dir = make_job(tmp_path, hook_config("pass") + 'on_stop_states = ["failed"]\n')
    assert run_stop_hook(paths, JOB_ID, origin="supervisor") is None
    assert not (job_dir / "hook.ran").exists()
    record = jobs.read_status(job_dir)
    assert record is not None
    record.state = "running"
    jobs.write_status(job_dir, record)
    assert run_stop_hook(paths, JOB_ID, origin="supervisor") is None


def test_a_failing_hook_is_reported_and_changes_nothing(tmp_path: Path) -> None:
    paths, job_dir = make_job(tmp_path, hook_config("import sys; sys.exit(3)"))
    before = (job_dir / "status.json").read_text()
    verdict = run_stop_hook(paths, JOB_ID, origin="supervisor")
    assert verdict is not None and verdict.startswith("exited with the code 3")
    assert (job_dir / "status.json").read_text() == before


def test_a_missing_program_did_not_start(tmp_path: Path) -> None:
    paths, job_dir = make_job(tmp_path, '[hooks]\non_stop = ["/no/such/notifier"]\n')
    verdict = run_stop_hook(paths, JOB_ID, origin="supervisor")
    assert verdict is not None and verdict.startswith("did not start")
    assert "[hooks] on_stop" in verdict
    assert "did not start" in (job_dir / "hook.log").read_text()


def test_a_slow_hook_is_stopped(tmp_path: Path) -> None:
    paths, _ = make_job(tmp_path, hook_config("import time; time.sleep(60)", timeout="0.3s"))
    started = time.monotonic()
    verdict = run_stop_hook(paths, JOB_ID, origin="supervisor")
    assert verdict is not None and "time limit" not in verdict and "limit of" in verdict
    assert time.monotonic() - started < 30


def test_a_hook_that_traps_term_gets_kill(tmp_path: Path) -> None:
    script = ("import signal, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "time.sleep(60)\n")
    paths, _ = make_job(tmp_path, hook_config(script, timeout="0.3s"))
    verdict = run_stop_hook(paths, JOB_ID, origin="supervisor")
    assert verdict is not None and "limit of" in verdict


def test_output_is_capped_at_one_mebibyte(tmp_path: Path) -> None:
    script = ("import sys, time\n"
              "sys.stdout.write('x' * (3 * 1024 * 1024))\n"
              "sys.stdout.flush()\n"
              "time.sleep(60)\n")
    paths, job_dir = make_job(tmp_path, hook_config(script))
    verdict = run_stop_hook(paths, JOB_ID, origin="supervisor")
    assert verdict is not None and "more than 1MB" in verdict
    size = (job_dir / "hook.log").stat().st_size
    assert OUTPUT_CAP <= size <= OUTPUT_CAP + 200


def test_an_unreadable_config_runs_no_hook(tmp_path: Path) -> None:
    paths, job_dir = make_job(tmp_path, "[hooks\n")
    assert run_stop_hook(paths, JOB_ID, origin="supervisor") is None
    assert not (job_dir / "hook.ran").exists()


def test_an_unreadable_config_is_reported_for_a_final_job_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths, job_dir = make_job(tmp_path, "[hooks\n")
    assert run_stop_hook(paths, JOB_ID, origin="supervisor") is None
    assert "could not be read" in capsys.readouterr().err
    record = jobs.read_status(job_dir)
    assert record is not None
    record.state = "running"
    jobs.write_status(job_dir, record)
    assert run_stop_hook(paths, JOB_ID, origin="supervisor") is None
    assert capsys.readouterr().err == ""


def test_without_a_hook_the_record_is_not_read(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Every supervisor asks at the end of every job; with no hook configured (the usual
    # case) that must cost no read of the record it has just written.
    paths, job_dir = make_job(tmp_path, "[logs]\nmax_bytes = \"1MB\"\n")

    def no_read(_job_dir: Path) -> None:
        raise AssertionError("the record was read")

    monkeypatch.setattr(jobs, "read_status", no_read)
    assert run_stop_hook(paths, JOB_ID, origin="supervisor") is None
    assert not (job_dir / "hook.ran").exists()
