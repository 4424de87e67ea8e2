"""`qex top` with no coordinator: the budget comes from the config file, the jobs from disk."""

from __future__ import annotations

from conftest import Env


def test_top_without_a_coordinator_shows_the_config_budget(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = 3\nmem = "4GB"\n')
    out = qex_env.run("top", "--once", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "no coordinator answers" in out.stdout
    assert "cores: 0 of 3 claimed" in out.stdout and "of 4GB claimed" in out.stdout, out.stdout
    assert qex_env.coordinator_pid() is None  # top never starts one


def test_top_names_a_config_fault_instead_of_a_budget(qex_env: Env) -> None:
    qex_env.write_config("[budget]\ncpu = 0\n")
    out = qex_env.run("top", "--once", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "budget: unknown" in out.stdout and "[budget] cpu" in out.stdout, out.stdout
