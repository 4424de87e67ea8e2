"""The isolated environment that the end-to-end fixtures give every qex process they start."""

from __future__ import annotations

import shutil

import pytest
from support import isolated_env


def test_isolated_env_drops_qex_and_xdg_but_keeps_coverage(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under `pytest --cov` the coordinators and supervisors measure themselves only if the
    # variable that coverage's start-up hook reads reaches them.
    monkeypatch.setenv("COVERAGE_PROCESS_CONFIG", "config")
    monkeypatch.setenv("QEX_IDLE_EXIT_SECS", "1")
    monkeypatch.setenv("XDG_DATA_HOME", "/nowhere")
    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    root, env = isolated_env("qu", {"QEX_X": "own"}, make=())
    try:
        assert env["COVERAGE_PROCESS_CONFIG"] == "config"
        assert "QEX_IDLE_EXIT_SECS" not in env and "XDG_DATA_HOME" not in env
        assert env["QEX_X"] == "own" and env["XDG_STATE_HOME"] == str(root / "state")
    finally:
        shutil.rmtree(root)
