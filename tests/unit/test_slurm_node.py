"""The batch script's program on the node: it runs a job only for the allocation that the
record names, and its exit status carries qex's `needs` into Slurm's `afterok`."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from qex.core.records import JobSpec, JobStatus
from qex.engine.slurm import node
from qex.store import jobs as job_files
from qex.store.paths import Paths


def make_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, state: str = "queued",
             engine_id: str | None = "5", command: list[str] | None = None) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    paths = Paths.from_env()
    paths.jobs_dir.mkdir(parents=True)
    job_id = str(uuid.uuid4())
    spec = JobSpec(id=job_id, name="n", cwd=str(tmp_path), command=command or ["true"],
                   env={"PATH": "/usr/bin:/bin"}, cpu=1, mem=64 * 1024 * 1024,
                   submitted_at=time.time(), engine="slurm")
    record = JobStatus.new(spec, boot_id=None, oom_retries=0)
    record.state = state
    record.engine_id = engine_id
    job_dir = job_files.create_job_dir(paths, job_id)
    job_files.write_spec(job_dir, spec)
    job_files.write_status(job_dir, record)
    return job_dir


def test_another_allocation_never_runs_the_job(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = make_job(tmp_path, monkeypatch, engine_id="5")
    monkeypatch.setenv("SLURM_JOB_ID", "6")
    assert node.main([job_dir.name]) == node.REFUSED
    record = job_files.read_status(job_dir)
    assert record is not None and record.state == "queued"


def test_a_record_that_already_ran_is_not_run_again(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = make_job(tmp_path, monkeypatch, state="running")
    monkeypatch.setenv("SLURM_JOB_ID", "5")
    assert node.main([job_dir.name]) == node.REFUSED


def test_a_missing_record_says_the_state_may_not_be_shared(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    make_job(tmp_path, monkeypatch)
    monkeypatch.setenv("SLURM_JOB_ID", "5")
    assert node.main([str(uuid.uuid4())]) == node.REFUSED
    assert "shared with this node" in capsys.readouterr().err


def test_bad_usage() -> None:
    assert node.main([]) == 2
    assert node.main(["not-an-id"]) == 2
