"""The NOT ACTIVE path on a machine that cannot make job cgroups (this development box:
PID 1 is not systemd and cgroups are hybrid v1/v2). Nothing is faked here except spawning:
the real probe decides, and every layer must repeat its reason instead of claiming a limit.

Inside a systemd guest with pure cgroup v2 these tests skip; tests/vm covers that side.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from qex.platform.detect import detect, enforcement_summary, probe
from qex.platform.launch import ScopeLauncher
from qex.platform.select import open_sandbox

CAPS = probe()
pytestmark = pytest.mark.skipif(
    CAPS.enforcement_possible, reason="this machine can make job cgroups (see tests/vm)"
)


def test_probe_names_a_reason_and_a_fix() -> None:
    assert CAPS.reason and CAPS.fix
    assert CAPS.scope_backend is None
    if sys.platform.startswith("linux") and Path("/sys/fs/cgroup/unified").is_dir():
        # The hybrid layout of the development machines.
        assert CAPS.cgroup_mode == "hybrid"
        assert "hybrid" in CAPS.reason
        assert "systemd.unified_cgroup_hierarchy=1" in CAPS.fix


def test_summary_says_not_active_for_soft_and_hard() -> None:
    for mode in ("soft", "hard"):
        line = enforcement_summary(mode, detect())
        assert line.startswith(f"mode: {mode} — NOT ACTIVE")
        assert str(CAPS.reason).rstrip(". ") in line
    assert enforcement_summary("off", detect()).startswith("mode: off")


def test_launch_wanting_a_scope_runs_plain_and_says_why(tmp_path: Path) -> None:
    spawned: list[dict[str, str]] = []

    def spawn(argv: list[str], log: Path, env: dict[str, str], *, go_fd: int | None = None) -> int:
        # A plain supervisor, which (as every fresh one) waits for its go on a pipe.
        assert go_fd is not None and argv[0] != "systemd-run"
        spawned.append(dict(env))
        return 1

    got = ScopeLauncher(spawn=spawn).launch("1a2b3c4d-x", tmp_path, want_scope=True, env={})
    assert got.backend == "process-group" and got.unit is None
    assert got.note is not None and str(CAPS.reason) in got.note
    assert spawned[0]["QEX_SCOPE_NOTE"] == got.note


class Plain:
    backend = "process-group"
    active = False

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason


def test_supervisor_gets_a_process_group_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("qex.platform.procgroup")
    module.ProcessGroupSandbox = Plain  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "qex.platform.procgroup", module)
    monkeypatch.delenv("QEX_SCOPE_NOTE", raising=False)
    for mode in ("soft", "hard"):
        box: Any = open_sandbox("1a2b3c4d-x", mode)
        assert isinstance(box, Plain) and box.reason == CAPS.reason
