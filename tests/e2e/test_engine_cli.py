"""`--engine` and `[engine]` without a Slurm: the refusals are one sentence with a remedy,
exit 121, and nothing is left on disk. (The Slurm path itself: tests/slurm.)"""

from __future__ import annotations

from conftest import Env


def test_an_unknown_engine_is_refused(qex_env: Env) -> None:
    proc = qex_env.run("submit", "--engine", "k8s", "--", "true")
    assert proc.returncode == 121
    assert "names no engine; give local or slurm" in proc.stderr
    assert not (qex_env.state / "jobs").exists() or not list((qex_env.state / "jobs").iterdir())


def test_slurm_that_does_not_answer_refuses_the_job(qex_env: Env) -> None:
    empty = qex_env.root / "no-slurm"
    empty.mkdir()
    proc = qex_env.run("submit", "--engine", "slurm", "--", "true",
                       extra_env={"QEX_SLURM_BIN": str(empty)})
    assert proc.returncode == 121, proc.stderr
    assert "qex could not read Slurm's partitions" in proc.stderr
    assert "--engine local" in proc.stderr
    assert not list((qex_env.state / "jobs").glob("*"))


def test_engine_section_shows_in_config_and_a_bad_kind_is_named(qex_env: Env) -> None:
    qex_env.write_config('[engine]\nkind = "slurm"\npartition = "gpu"\n')
    shown = qex_env.run("config", "show", "--json", check=True).stdout
    assert '"partition": "gpu"' in shown
    qex_env.write_config('[engine]\nkind = "nomad"\n')
    proc = qex_env.run("submit", "--", "true")
    assert proc.returncode == 121
    assert "[engine] kind" in proc.stderr


def test_local_engine_on_the_command_line_wins_over_the_config(qex_env: Env) -> None:
    qex_env.write_config('[engine]\nkind = "slurm"\n')
    empty = qex_env.root / "no-slurm"
    empty.mkdir()
    proc = qex_env.run("submit", "--wait", "--engine", "local", "--", "true",
                       extra_env={"QEX_SLURM_BIN": str(empty)})
    assert proc.returncode == 0, proc.stderr
