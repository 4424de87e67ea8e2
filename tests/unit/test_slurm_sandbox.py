"""The supervisor's evidence inside a Slurm allocation: the Slurm job's own cgroup v2, found
from /proc/self/cgroup, proves a memory kill; without it there is no proof."""

from __future__ import annotations

from pathlib import Path

import pytest

from qex.core.config import ConfigError
from qex.core.config_parse import config_to_dict, parse_config
from qex.engine.slurm.sandbox import SlurmSandbox, slurm_job_cgroup
from qex.platform.sandbox import Limits


def fake_cgroup(tmp_path: Path, slurm_id: str, oom_kill: int = 0) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    job = root / "system.slice" / "slurmstepd.scope" / f"job_{slurm_id}"
    task = job / "step_batch" / "user" / "task_0"
    task.mkdir(parents=True)
    for where in (job, task):
        (where / "memory.events").write_text(f"low 0\nhigh 0\nmax 3\noom 1\noom_kill {oom_kill}\n")
    proc = tmp_path / "proc-cgroup"
    proc.write_text(f"0::/system.slice/slurmstepd.scope/job_{slurm_id}/step_batch/user/task_0\n")
    return proc, root


def test_the_job_cgroup_is_found_by_slurms_id(tmp_path: Path) -> None:
    proc, root = fake_cgroup(tmp_path, "77")
    found = slurm_job_cgroup("77", proc, root)
    assert found == root / "system.slice" / "slurmstepd.scope" / "job_77"
    assert slurm_job_cgroup("78", proc, root) is None        # another job's cgroup: no proof


def test_no_cgroup_v2_line_means_no_cgroup(tmp_path: Path) -> None:
    proc = tmp_path / "proc-cgroup"
    proc.write_text("12:memory:/slurm/uid_0/job_77\n")        # cgroup v1
    assert slurm_job_cgroup("77", proc, tmp_path) is None


def test_a_kill_counted_in_the_job_cgroup_is_proven(tmp_path: Path) -> None:
    proc, root = fake_cgroup(tmp_path, "5")
    cgroup = slurm_job_cgroup("5", proc, root)
    sandbox = SlurmSandbox(cgroup, "test")
    sandbox.begin_attempt(Limits(mode="hard"))
    assert cgroup is not None
    (cgroup / "memory.events").write_text("oom 2\noom_kill 2\n")
    (cgroup / "memory.peak").write_text("123456\n")
    evidence = sandbox.evidence()
    assert (evidence.oom_kills, evidence.proven, evidence.source, evidence.peak) == \
        (2, True, "cgroup", 123456)
    assert sandbox.describe()["backend"] == "slurm" and sandbox.active is False


def test_without_a_cgroup_there_is_no_evidence(tmp_path: Path) -> None:
    sandbox = SlurmSandbox(None, "no cgroup")
    sandbox.begin_attempt(Limits())
    evidence = sandbox.evidence()
    assert evidence.oom_kills == 0 and not evidence.proven


def test_test_cgroup_variable_stands_for_the_job_cgroup(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QEX_TEST_SLURM_CGROUP", str(tmp_path))
    (tmp_path / "memory.events").write_text("oom_kill 0\n")
    sandbox = SlurmSandbox.for_allocation("1")
    sandbox.begin_attempt(Limits())
    (tmp_path / "memory.events").write_text("oom_kill 1\n")
    assert sandbox.evidence().proven


def test_engine_section_parses_and_round_trips() -> None:
    text = {"engine": {"kind": "Slurm", "partition": "gpu", "account": "lab", "qos": "high",
                       "sbatch_options": ["--constraint=a100"], "shared_dir": "/shared",
                       "poll": 2, "python": "/opt/qex/bin/python"}}
    config = parse_config(text, "t.toml")
    engine = config.engine
    assert (engine.kind, engine.partition, engine.sbatch_options, engine.poll) == \
        ("slurm", "gpu", ("--constraint=a100",), 2.0)
    assert parse_config(config_to_dict(config), "again") == config


@pytest.mark.parametrize(("table", "words"), [
    ({"kind": "k8s"}, "must be one of"),
    ({"poll": 0.1}, "at most every 0.5 seconds"),
    ({"shared_dir": "relative"}, "not an absolute path"),
    ({"python": "python3"}, "not an absolute path"),
    ({"partition": 3}, "must be text"),
    ({"sbatch_options": "--x"}, "list of sbatch options"),
    ({"nodes": 2}, "[engine]"),
])
def test_engine_section_mistakes_are_named(table: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"engine": table}, "t.toml")
    assert words in str(caught.value)
