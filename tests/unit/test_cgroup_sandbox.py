"""The job cgroup inside a delegated scope, against a fake cgroupfs that keeps the kernel's
rules (no internal processes, controllers only from the parent, pids move)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.platform.cgroup import (
    CgroupError,
    CgroupFS,
    parse_flat_keyed,
    parse_limit,
    parse_pressure,
    unified_path,
)
from qex.platform.cgroup_sandbox import CgroupSandbox
from qex.platform.select import limits_for, open_sandbox
from qex.testing.fakes import FakeCgroupFS, fake_tree

MB = 1024 * 1024
USER = "/user.slice/user-1000.slice/user@1000.service"
SCOPE = f"{USER}/qex.slice/qex-1a2b3c4d-1.scope"
UNIT = "qex-1a2b3c4d-1.scope"
SUPERVISOR_PID = 4242


@pytest.fixture
def fs(tmp_path: Path) -> FakeCgroupFS:
    tree = fake_tree(tmp_path / "cg")
    tree.set_file(USER, "cgroup.subtree_control", "cpu memory pids\n")
    tree.make(f"{USER}/qex.slice", ("cpu", "memory", "pids"))
    tree.set_file(f"{USER}/qex.slice", "cgroup.subtree_control", "cpu memory pids\n")
    tree.make(SCOPE, ("cpu", "memory", "pids"), procs=(SUPERVISOR_PID,))
    return tree


def opened(fs: FakeCgroupFS, mode: str = "hard") -> CgroupSandbox:
    return CgroupSandbox.open(fs, SCOPE, UNIT, mode, pid=SUPERVISOR_PID)


def test_open_moves_supervisor_out_and_enables_controllers(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    assert fs.procs(SCOPE) == []
    assert fs.procs(f"{SCOPE}/supervisor") == [SUPERVISOR_PID]
    assert {"memory", "pids", "cpu"} <= fs.subtree_control(SCOPE)
    assert box.active and box.reason is None and box.backend == "systemd-scope"


def test_open_refuses_a_scope_without_memory(fs: FakeCgroupFS) -> None:
    fs.set_file(SCOPE, "cgroup.controllers", "cpu pids\n")
    with pytest.raises(CgroupError, match="memory controller"):
        opened(fs)


def test_a_second_process_in_the_scope_blocks_the_controllers(fs: FakeCgroupFS) -> None:
    # The kernel's no-internal-process rule: qex must not pretend it could enable memory.
    fs.set_file(SCOPE, "cgroup.procs", f"{SUPERVISOR_PID}\n999\n")
    with pytest.raises(CgroupError, match="busy"):
        opened(fs)


def test_hard_mode_sets_max_and_no_swap(fs: FakeCgroupFS) -> None:
    box = opened(fs, "hard")
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    leaf = f"{SCOPE}/job-1"
    assert fs.limit(leaf, "memory.max") == 64 * MB
    assert fs.limit(leaf, "memory.swap.max") == 0
    assert fs.limit(leaf, "memory.high") is None
    assert fs.read(leaf, "memory.oom.group") == "1\n"
    info = box.describe()
    assert info == {
        "mode": "hard", "active": True, "reason": None, "backend": "systemd-scope",
        "unit": UNIT, "cgroup": leaf, "memory_max": 64 * MB, "memory_high": None, "swap_max": 0,
    }


def test_soft_mode_sets_high_at_claim_and_max_at_overcommit(fs: FakeCgroupFS) -> None:
    box = opened(fs, "soft")
    claim = 100 * MB + 123  # not page-aligned: the kernel rounds, and the record says so
    box.begin_attempt(limits_for("soft", claim, 1.5))
    leaf = f"{SCOPE}/job-1"
    assert fs.limit(leaf, "memory.high") == (claim // 4096) * 4096
    assert fs.limit(leaf, "memory.max") == (int(claim * 1.5) // 4096) * 4096
    assert fs.read(leaf, "memory.swap.max") == "max\n"
    info = box.describe()
    assert info["memory_high"] == fs.limit(leaf, "memory.high")
    assert info["memory_max"] == fs.limit(leaf, "memory.max")
    assert info["swap_max"] is None


def test_preexec_puts_the_child_into_the_job_leaf(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    subprocess.run([sys.executable, "-c", "pass"], preexec_fn=box.preexec, check=True)
    # A real kernel replaces "0" with the writer's pid; the fake keeps what was written.
    assert fs.read(f"{SCOPE}/job-1", "cgroup.procs") == "0"


def test_the_child_step_is_asked_for_only_with_a_leaf_to_join(fs: FakeCgroupFS) -> None:
    """The supervisor starts a job by posix_spawn only when the sandbox has no step for the
    child: never while a job leaf waits for it."""
    box = opened(fs)
    assert box.child_preexec() is None  # no attempt yet: no leaf
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    assert box.child_preexec() == box.preexec
    off = opened(fs, mode="off")
    off.begin_attempt(limits_for("off", 64 * MB, 1.5))
    assert off.child_preexec() == off.preexec  # mode off in a scope still joins its leaf


def test_preexec_failure_stops_the_spawn(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    (fs.host_path(f"{SCOPE}/job-1") / "cgroup.procs").unlink()
    with pytest.raises(subprocess.SubprocessError):
        subprocess.run([sys.executable, "-c", "pass"], preexec_fn=box.preexec, check=True)


def test_evidence_proves_an_oom_kill_of_this_attempt(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    leaf = f"{SCOPE}/job-1"
    quiet = box.evidence()
    assert quiet.oom_kills == 0 and not quiet.proven and quiet.source == "cgroup"
    fs.bump_event(leaf, "oom_kill")
    fs.bump_event(leaf, "oom_group_kill")
    fs.bump_event(leaf, "max", 7)
    fs.set_file(leaf, "memory.peak", f"{64 * MB}\n")
    fs.set_file(leaf, "memory.pressure",
                "some avg10=1.50 avg60=0.20 avg300=0.00 total=1234\n"
                "full avg10=0.75 avg60=0.10 avg300=0.00 total=999\n")
    ev = box.evidence()
    assert ev.oom_kills == 1 and ev.proven and ev.source == "cgroup"
    assert ev.peak == 64 * MB
    assert ev.pressure is not None
    assert ev.pressure["some_avg10"] == 1.5 and ev.pressure["full_total_us"] == 999
    assert ev.extra["max_events"] == 7 and ev.extra["cgroup"] == leaf


def test_counters_are_deltas_from_the_attempt_start(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    box._attempt = 0
    fs.mkdir(f"{SCOPE}/job-1")
    fs.bump_event(f"{SCOPE}/job-1", "oom_kill", 3)  # an earlier run left a leaf behind
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    # The used name is skipped: the new attempt gets a fresh leaf with fresh counters.
    assert box.describe()["cgroup"] == f"{SCOPE}/job-2"
    assert box.evidence().oom_kills == 0


def test_each_attempt_gets_a_fresh_leaf_and_the_old_one_goes(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    box.begin_attempt(limits_for("hard", 64 * MB, 2.0))
    fs.bump_event(f"{SCOPE}/job-1", "oom_kill")
    assert box.evidence().proven
    box.begin_attempt(limits_for("hard", 128 * MB, 2.0))
    assert not fs.exists(f"{SCOPE}/job-1")
    assert fs.limit(f"{SCOPE}/job-2", "memory.max") == 128 * MB
    assert box.evidence().oom_kills == 0
    box.close()
    assert not fs.exists(f"{SCOPE}/job-2")


def test_close_kills_what_the_job_left(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    box.begin_attempt(limits_for("hard", 64 * MB, 2.0))
    fs.set_file(f"{SCOPE}/job-1", "cgroup.procs", "777\n")
    box.close()
    assert not fs.exists(f"{SCOPE}/job-1")


def test_a_refused_limit_makes_the_sandbox_inactive_not_a_liar(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    original = fs.write

    def refuse(cgroup: str, name: str, value: str) -> None:
        if name == "memory.max":
            raise CgroupError("the kernel refused it", 22)
        original(cgroup, name, value)

    fs.write = refuse  # type: ignore[method-assign]
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    assert not box.active
    assert box.reason is not None and "refused" in box.reason
    assert box.describe()["memory_max"] is None
    box.preexec()  # no leaf: nothing to join, and no error
    assert box.child_preexec() is None  # so the job may start by posix_spawn
    assert box.evidence().source is None


def test_missing_swap_file_is_reported_not_claimed(fs: FakeCgroupFS) -> None:
    box = opened(fs)
    original = fs.mkdir

    def mkdir_without_swap(cgroup: str) -> None:
        original(cgroup)
        path = fs.host_path(cgroup, "memory.swap.max")
        if path.exists():
            path.unlink()

    fs.mkdir = mkdir_without_swap  # type: ignore[method-assign]
    box.begin_attempt(limits_for("hard", 64 * MB, 1.5))
    info = box.describe()
    assert info["active"] and info["memory_max"] == 64 * MB
    assert info["swap_max"] is None
    assert any("memory.swap.max" in note for note in info["notes"])


# -- open_sandbox: the choice -----------------------------------------------------------------


class RecordingProcessGroup:
    backend = "process-group"
    active = False

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason


@pytest.fixture
def stub_procgroup(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("qex.platform.procgroup")
    module.ProcessGroupSandbox = RecordingProcessGroup  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "qex.platform.procgroup", module)


@pytest.mark.usefixtures("stub_procgroup")
def test_open_sandbox_off_mode_is_a_process_group() -> None:
    box: Any = open_sandbox("id", "off", own_cgroup=SCOPE)
    assert isinstance(box, RecordingProcessGroup)
    assert "off" in (box.reason or "")


@pytest.mark.usefixtures("stub_procgroup")
def test_open_sandbox_in_a_scope_is_a_cgroup(fs: FakeCgroupFS) -> None:
    fs.set_file(SCOPE, "cgroup.procs", f"{os.getpid()}\n")  # this process plays the supervisor
    box: Any = open_sandbox("id", "hard", own_cgroup=SCOPE, fs=fs)
    assert isinstance(box, CgroupSandbox)
    assert box.scope == SCOPE and box.unit == UNIT
    # Opened again from the supervisor leaf (a second call in the same process): same scope.
    again: Any = open_sandbox("id", "hard", own_cgroup=f"{SCOPE}/supervisor", fs=fs)
    assert isinstance(again, CgroupSandbox) and again.scope == SCOPE


@pytest.mark.usefixtures("stub_procgroup")
def test_open_sandbox_outside_a_scope_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QEX_SCOPE_NOTE", "systemd said no")
    box: Any = open_sandbox("id", "hard", own_cgroup="/user.slice/user-1000.slice/session-2.scope")
    assert isinstance(box, RecordingProcessGroup)
    assert box.reason == "systemd said no"


@pytest.mark.usefixtures("stub_procgroup")
def test_open_sandbox_falls_back_when_the_scope_has_no_memory(fs: FakeCgroupFS) -> None:
    fs.set_file(SCOPE, "cgroup.controllers", "pids\n")
    box: Any = open_sandbox("id", "soft", own_cgroup=SCOPE, fs=fs)
    assert isinstance(box, RecordingProcessGroup)
    assert UNIT in (box.reason or "") and "memory" in (box.reason or "")


def test_real_process_group_sandbox_takes_a_reason() -> None:
    procgroup = pytest.importorskip("qex.platform.procgroup")
    box = procgroup.ProcessGroupSandbox(reason="because")
    assert box.active is False and box.reason == "because"
    assert box.child_preexec() is None  # nothing to join: the job may start by posix_spawn


# -- pure parts ----------------------------------------------------------------------------------


@given(claim=st.integers(min_value=1, max_value=2**44),
       overcommit=st.floats(min_value=0.1, max_value=10, allow_nan=False))
def test_limits_never_loosen_the_claim(claim: int, overcommit: float) -> None:
    hard = limits_for("hard", claim, overcommit)
    assert hard.memory_max == claim and hard.swap_max == 0 and hard.memory_high is None
    soft = limits_for("soft", claim, overcommit)
    assert soft.memory_high == claim
    assert soft.memory_max is not None and soft.memory_max >= claim
    assert limits_for("off", claim, overcommit).memory_max is None


def test_parsers() -> None:
    assert parse_flat_keyed("oom 1\noom_kill 2\nbad\nx y\n") == {"oom": 1, "oom_kill": 2}
    assert parse_limit("max\n") is None and parse_limit("4096\n") == 4096
    assert unified_path("12:memory:/x\n0::/user.slice/a.scope\n") == "/user.slice/a.scope"
    assert unified_path("4:memory:/x\n") is None
    psi = parse_pressure("some avg10=2.00 avg60=1.00 avg300=0.50 total=10\n")
    assert psi == {"some_avg10": 2.0, "some_avg60": 1.0, "some_avg300": 0.5, "some_total_us": 10}


def test_real_cgroupfs_write_does_not_create_files(tmp_path: Path) -> None:
    real = CgroupFS(tmp_path)
    (tmp_path / "a").mkdir()
    with pytest.raises(CgroupError, match="cannot open"):
        real.write("/a", "memory.max", "1")
    assert real.read("/a", "memory.max") is None
