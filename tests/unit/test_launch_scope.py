"""Starting a supervisor in a transient scope: the handshake, both backends, every fallback.

The user manager is `FakeScopeManager`; spawning is recorded instead of run, except in the
test of `spawn_logged` itself, which starts a real child to prove the go pipe arrives.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from qex.core.model import dataclass, field
from qex.platform.detect import Capabilities
from qex.platform.launch import GO_FD, STANDBY_MISSES, ScopeLauncher, spawn_logged
from qex.platform.scope import (
    PystemdScopeManager,
    ScopeError,
    ScopeRequest,
    in_unit,
    is_qex_scope,
    scope_in_path,
    scope_properties,
    standby_unit_name,
    systemd_run_argv,
    unit_name,
)
from qex.testing.fakes import FakeScopeManager

JOB = "1a2b3c4d-0000-4000-8000-000000000001"


def caps(backend: str | None = "pystemd", possible: bool = True,
         reason: str | None = None) -> Capabilities:
    return Capabilities(os="linux", scope_backend=backend, enforcement_possible=possible,
                        reason=reason)


@dataclass
class Spawner:
    """Records each spawn; keeps the go pipe open like a waiting supervisor would."""

    next_pid: int = 50000
    calls: list[dict[str, Any]] = field(default_factory=list)
    go_fds: list[int] = field(default_factory=list)

    def __call__(self, argv: list[str], log: Path, env: dict[str, str], *,
                 go_fd: int | None = None) -> int:
        self.next_pid += 1
        self.calls.append({"argv": argv, "log": log, "env": dict(env), "go_fd": go_fd,
                           "pid": self.next_pid})
        if go_fd is not None:
            self.go_fds.append(os.dup(go_fd))
        return self.next_pid

    def sent(self, index: int = -1) -> bytes | None:
        """What was written on the go pipe of a spawn so far: None while the pipe is open
        and empty, b"" at its end."""
        fd = self.go_fds[index]
        os.set_blocking(fd, False)
        try:
            return os.read(fd, 256)
        except BlockingIOError:
            return None

    def go_byte(self, index: int = -1) -> bytes:
        return self.sent(index) or b""


def launcher(manager: Any, spawner: Spawner, capabilities: Capabilities,
             killed: list[int]) -> ScopeLauncher:
    return ScopeLauncher(
        capabilities=lambda: capabilities,
        manager_factory=lambda: manager,
        spawn=spawner,
        cgroup_of=manager.cgroup_of,
        kill=killed.append,
    )


def test_no_scope_wanted_is_a_plain_process_group(tmp_path: Path) -> None:
    spawner, killed = Spawner(), []
    got = launcher(FakeScopeManager(), spawner, caps(), killed).launch(
        JOB, tmp_path, want_scope=False, env={"PATH": "/bin"})
    assert got.backend == "process-group" and got.note is None and got.unit is None
    assert spawner.calls[0]["argv"][-2:] == ["qex.supervisor", JOB]
    assert "QEX_SCOPE_NOTE" not in spawner.calls[0]["env"]
    assert spawner.calls[0]["log"] == tmp_path / "supervisor.log"


def test_machine_without_scopes_says_why(tmp_path: Path) -> None:
    spawner, killed = Spawner(), []
    got = launcher(FakeScopeManager(), spawner, caps(None, False, "cgroups are hybrid"),
                   killed).launch(JOB, tmp_path, want_scope=True, env={})
    assert got.backend == "process-group"
    assert got.note == "cgroups are hybrid"
    assert spawner.calls[0]["env"]["QEX_SCOPE_NOTE"] == got.note


def test_pystemd_handshake_scope_first_then_go(tmp_path: Path) -> None:
    spawner, killed, manager = Spawner(), [], FakeScopeManager()
    run = launcher(manager, spawner, caps("pystemd"), killed)
    got = run.launch(JOB, tmp_path, want_scope=True, env={"A": "1"})
    call = spawner.calls[0]
    assert call["env"]["QEX_SUPERVISOR_GO_FD"] == str(GO_FD) and call["go_fd"] is not None
    assert got.backend == "pystemd" and got.unit == "qex-1a2b3c4d-1.scope" and got.note is None
    request, pid = manager.started[0]
    assert pid == got.pid and request.delegate and request.slice == "qex.slice"
    assert request.collect_mode == "inactive-or-failed" and request.oom_policy == "continue"
    assert spawner.go_byte() == b"1"
    assert killed == []
    # The next attempt of the same job gets a new scope name.
    again = run.launch(JOB, tmp_path, want_scope=True, env={})
    assert again.unit == "qex-1a2b3c4d-2.scope"


def test_pystemd_refusal_kills_the_waiting_supervisor_and_runs_plain(tmp_path: Path) -> None:
    spawner, killed = Spawner(), []
    at_kill: list[str] = []

    def kill(pid: int) -> None:
        # The waiting supervisor must die before it could see end-of-file (which would make
        # it record the job as failed under the feet of its replacement).
        fd = spawner.go_fds[0]
        os.set_blocking(fd, False)
        try:
            at_kill.append("eof" if os.read(fd, 1) == b"" else "byte")
        except BlockingIOError:
            at_kill.append("open")
        killed.append(pid)

    manager = FakeScopeManager(fail="Access denied")
    run = launcher(manager, spawner, caps("pystemd"), killed)
    run.kill = kill
    got = run.launch(JOB, tmp_path, want_scope=True, env={"A": "1"})
    assert at_kill == ["open"]
    first, second = spawner.calls
    assert killed == [first["pid"]]
    assert spawner.go_byte(0) == b""  # it never got the go: it never touched the job
    assert got.backend == "process-group" and got.pid == second["pid"]
    assert got.note is not None and "Access denied" in got.note
    assert second["env"]["QEX_SCOPE_NOTE"] == got.note
    # The replacement waits for its own go, on a pipe of its own.
    assert second["env"]["QEX_SUPERVISOR_GO_FD"] == str(GO_FD) and spawner.go_byte(1) == b"1"


def test_scope_that_did_not_take_the_pid_is_caught(tmp_path: Path) -> None:
    # systemd issue 36781: success reported, process not moved. /proc is the judge.
    spawner, killed = Spawner(), []
    manager = FakeScopeManager(misplace=True)
    got = launcher(manager, spawner, caps("pystemd"), killed).launch(
        JOB, tmp_path, want_scope=True, env={})
    assert killed == [spawner.calls[0]["pid"]]
    assert got.backend == "process-group"
    assert got.note is not None and "session-1.scope" in got.note


def test_supervisor_that_died_before_go_is_replaced(tmp_path: Path) -> None:
    spawner, killed = Spawner(), []
    manager = FakeScopeManager()

    def spawn_and_die(argv: list[str], log: Path, env: dict[str, str], *,
                      go_fd: int | None = None) -> int:
        pid = spawner(argv, log, env, go_fd=go_fd)
        if go_fd is not None:
            os.close(spawner.go_fds.pop())  # the child is gone: no reader is left
        return pid

    run = launcher(manager, spawner, caps("pystemd"), killed)
    run.spawn = spawn_and_die
    got = run.launch(JOB, tmp_path, want_scope=True, env={})
    assert got.backend == "process-group" and got.note is not None
    assert "did not wait" in got.note


def test_systemd_run_wraps_the_supervisor(tmp_path: Path) -> None:
    spawner, killed = Spawner(), []
    got = launcher(FakeScopeManager(), spawner, caps("systemd-run"), killed).launch(
        JOB, tmp_path, want_scope=True, env={"QEX_SCOPE_NOTE": "stale"})
    argv = spawner.calls[0]["argv"]
    assert argv[:5] == ["systemd-run", "--user", "--scope", "--quiet", "--collect"]
    assert "--unit=qex-1a2b3c4d-1.scope" in argv and "--slice=qex.slice" in argv
    assert argv[argv.index("-p") + 1] == "Delegate=yes"
    assert "OOMPolicy=continue" in argv
    tail = argv[argv.index("--") + 1:]
    assert tail[1:] == ["-P", "-m", "qex.supervisor", JOB]
    assert got.backend == "systemd-run" and got.unit == "qex-1a2b3c4d-1.scope"
    assert "QEX_SCOPE_NOTE" not in spawner.calls[0]["env"]
    # systemd-run execs the supervisor with our descriptors: it waits for its go like any.
    assert spawner.calls[0]["env"]["QEX_SUPERVISOR_GO_FD"] == str(GO_FD)
    assert spawner.go_byte() == b"1"


def test_systemd_run_missing_falls_back(tmp_path: Path) -> None:
    spawner, killed = Spawner(), []

    def spawn(argv: list[str], log: Path, env: dict[str, str], *,
              go_fd: int | None = None) -> int:
        if argv[0] == "systemd-run":
            raise FileNotFoundError("`systemd-run` is not on PATH")
        return spawner(argv, log, env, go_fd=go_fd)

    run = launcher(FakeScopeManager(), spawner, caps("systemd-run"), killed)
    run.spawn = spawn
    got = run.launch(JOB, tmp_path, want_scope=True, env={})
    assert got.backend == "process-group" and got.note is not None
    assert "systemd-run" in got.note


def test_spawn_logged_hands_over_the_go_pipe(tmp_path: Path) -> None:
    log = tmp_path / "supervisor.log"
    read_end, write_end = os.pipe()
    script = ("import os, sys; fd = int(os.environ['QEX_SUPERVISOR_GO_FD']); "
              "print('go', os.read(fd, 1).decode(), os.getsid(0) == os.getpid(), flush=True)")
    try:
        pid = spawn_logged([sys.executable, "-c", script], log,
                             {**os.environ, "QEX_SUPERVISOR_GO_FD": str(GO_FD)}, go_fd=read_end)
    finally:
        os.close(read_end)
    os.write(write_end, b"1")
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert log.read_text().strip() == "go 1 True"
    assert oct(log.stat().st_mode & 0o777) == "0o600"


# -- the D-Bus manager's logic, with a fake bus ----------------------------------------------


@dataclass
class FakeBus:
    refuse_oom_policy: bool = False
    result: str = "done"
    hang: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False

    def start_transient_unit(self, name: str, properties: dict[str, Any]) -> str:
        self.calls.append({"name": name, **properties})
        if self.refuse_oom_policy and "OOMPolicy" in properties:
            raise RuntimeError("Cannot set property OOMPolicy, or unknown property.")
        return f"/org/freedesktop/systemd1/job/{len(self.calls)}"

    def wait_job(self, job: str, timeout: float) -> str:
        if self.hang:
            raise ScopeError(f"the user manager did not finish the start job {job} in {timeout:g}s")
        return self.result

    def close(self) -> None:
        self.closed = True


def request() -> ScopeRequest:
    return ScopeRequest(unit="qex-1a2b3c4d-1.scope", description="qex job x")


def test_manager_sends_pids_delegate_and_oom_policy() -> None:
    bus = FakeBus()
    PystemdScopeManager(bus_factory=lambda: bus).start(request(), 321, 5)
    sent = bus.calls[0]
    assert sent["PIDs"] == [321] and sent["Delegate"] is True and sent["Slice"] == "qex.slice"
    assert sent["OOMPolicy"] == "continue" and sent["CollectMode"] == "inactive-or-failed"


def test_manager_retries_without_oom_policy_and_remembers() -> None:
    bus = FakeBus(refuse_oom_policy=True)
    manager = PystemdScopeManager(bus_factory=lambda: bus)
    manager.start(request(), 321, 5)
    assert [("OOMPolicy" in c) for c in bus.calls] == [True, False]
    manager.start(request(), 322, 5)
    assert "OOMPolicy" not in bus.calls[-1] and len(bus.calls) == 3


def test_manager_reports_a_failed_start_job() -> None:
    bus = FakeBus(result="failed")
    with pytest.raises(ScopeError, match="ended `failed`"):
        PystemdScopeManager(bus_factory=lambda: bus).start(request(), 321, 5)


def test_manager_drops_a_broken_connection() -> None:
    bus = FakeBus(hang=True)
    made: list[FakeBus] = []

    def factory() -> FakeBus:
        made.append(bus)
        return bus

    manager = PystemdScopeManager(bus_factory=factory)
    with pytest.raises(ScopeError, match="did not finish"):
        manager.start(request(), 321, 0.01)
    assert bus.closed
    bus.hang = False
    manager.start(request(), 321, 1)
    assert len(made) == 2  # reconnected


def test_manager_without_a_bus() -> None:
    def no_bus() -> FakeBus:
        raise OSError("Could not open a bus to DBus")

    with pytest.raises(ScopeError, match="cannot reach the systemd user manager"):
        PystemdScopeManager(bus_factory=no_bus).start(request(), 1, 1)


# -- names and paths ---------------------------------------------------------------------------


def test_names_and_paths() -> None:
    assert unit_name(JOB, 3) == "qex-1a2b3c4d-3.scope"
    assert unit_name("a/b c", 1) == "qex-a_b_c-1.scope"
    path = "/user.slice/user-0.slice/user@0.service/qex.slice/qex-1a2b3c4d-1.scope/supervisor"
    assert scope_in_path(path) == (path.rsplit("/", 1)[0], "qex-1a2b3c4d-1.scope")
    assert scope_in_path("/user.slice/user-0.slice/session-3.scope") is None
    assert in_unit(path, "qex-1a2b3c4d-1.scope") and not in_unit(path, "qex-1a2b3c4d-2.scope")
    assert not in_unit(None, "x")
    standby = standby_unit_name()
    assert standby != standby_unit_name()  # two coordinators' standbys never share a name
    assert scope_in_path(f"/user.slice/qex.slice/{standby}/job-1") == (
        f"/user.slice/qex.slice/{standby}", standby)
    props = scope_properties(request(), 9, with_oom_policy=False)
    assert "OOMPolicy" not in props and props["Description"] == "qex job x"


def test_systemd_run_line_without_oom_policy() -> None:
    line = systemd_run_argv(ScopeRequest(unit="u.scope", oom_policy=None), ["prog"],
                            "/usr/bin/systemd-run")
    assert line[0] == "/usr/bin/systemd-run" and line[-2:] == ["--", "prog"]
    assert not any(a.startswith("OOMPolicy") for a in line)


def test_sequence_survives_a_new_launcher(tmp_path: Path) -> None:
    spawner, killed = Spawner(), []
    for _ in range(2):
        launcher(FakeScopeManager(), spawner, caps("systemd-run"), killed).launch(
            JOB, tmp_path, want_scope=True, env={})
    units = [c["argv"][5] for c in spawner.calls]
    assert units == ["--unit=qex-1a2b3c4d-1.scope", "--unit=qex-1a2b3c4d-2.scope"]
    assert (tmp_path / "scope.seq").read_text().strip() == "2"


# -- a supervisor held by the fork server (pystemd) ------------------------------------------


@dataclass
class FakeHeld:
    """A held supervisor's handle: records the go and the kill instead of signalling."""

    pid: int
    events: list[str] = field(default_factory=list)
    release_fails: bool = False

    def release(self) -> None:
        if self.release_fails:
            raise ProcessLookupError(3, "No such process")
        self.events.append("go")

    def discard(self) -> None:
        self.events.append("killed")

    def close(self) -> None:
        self.events.append("closed")


@dataclass
class HoldingServer:
    """The fork server's `hold`: hands out pids of waiting children (or None)."""

    answer: bool = True
    asked: list[tuple[str, float]] = field(default_factory=list)
    handles: list[FakeHeld] = field(default_factory=list)
    next_pid: int = 70000

    def __call__(self, job_id: str, seconds: float) -> tuple[int, str | None] | None:
        self.asked.append((job_id, seconds))
        if not self.answer:
            return None
        self.next_pid += 1
        return self.next_pid, f"token-{self.next_pid}"

    def open(self, pid: int, token: str | None) -> FakeHeld:
        handle = FakeHeld(pid)
        self.handles.append(handle)
        return handle


def held_launcher(manager: FakeScopeManager, server: HoldingServer, spawner: Spawner,
                  backend: str = "pystemd") -> ScopeLauncher:
    run = launcher(manager, spawner, caps(backend), [])
    run.open_held = server.open
    return run


def test_held_supervisor_gets_its_go_only_after_the_scope_check(tmp_path: Path) -> None:
    spawner, server = Spawner(), HoldingServer()
    order: list[str] = []

    @dataclass
    class Watching(FakeScopeManager):
        def start(self, request: ScopeRequest, pid: int, timeout: float = 10.0) -> None:
            order.append(f"scope:{server.handles[-1].events}")
            super().start(request, pid, timeout)

        def cgroup_of(self, pid: int) -> str | None:
            order.append(f"check:{server.handles[-1].events}")
            return super().cgroup_of(pid)

    manager = Watching()
    run = held_launcher(manager, server, spawner)
    run.cgroup_of = manager.cgroup_of
    got = run.launch(JOB, tmp_path, want_scope=True, env={}, fork=server)
    handle = server.handles[0]
    assert order == ["scope:[]", "check:[]"]  # no go before the scope and the check
    assert handle.events == ["go", "closed"]
    assert manager.started[0][1] == handle.pid == got.pid
    assert got.forked and got.backend == "pystemd" and got.unit == "qex-1a2b3c4d-1.scope"
    assert got.start_token == f"token-{handle.pid}" and got.note is None
    assert spawner.calls == []  # no fresh process
    assert server.asked == [(JOB, run.hold_seconds)]


def test_a_supervisor_that_waits_is_announced_before_its_go(tmp_path: Path) -> None:
    # The coordinator writes `supervisor.pid` in `announce`: the supervisor must not have its
    # go yet, so that the disk names it before it can touch the job.
    spawner, server = Spawner(), HoldingServer()
    said: list[str] = []
    run = held_launcher(FakeScopeManager(), server, spawner)
    got = run.launch(JOB, tmp_path, want_scope=True, env={}, fork=server,
                     announce=lambda pid, token: said.append(
                         f"{pid} {token} {server.handles[-1].events}"))
    assert said == [f"{got.pid} {got.start_token} []"]
    assert server.handles[0].events == ["go", "closed"]
    # The fresh handshake: the go byte is not in the pipe when the supervisor is announced.
    fresh = launcher(FakeScopeManager(), spawner, caps("pystemd"), [])
    seen: list[tuple[int, bytes]] = []
    got = fresh.launch(JOB, tmp_path, want_scope=True, env={},
                       announce=lambda pid, token: seen.append((pid, spawner.go_byte())))
    assert seen == [(got.pid, b"")]
    assert spawner.go_byte() == b"1"


@pytest.mark.parametrize("backend", ["pystemd", "held"])
def test_a_supervisor_killed_before_its_go_is_not_announced(tmp_path: Path,
                                                            backend: str) -> None:
    spawner, server = Spawner(), HoldingServer()
    manager = FakeScopeManager(fail="Access denied")
    run = held_launcher(manager, server, spawner)
    said: list[int] = []
    got = run.launch(JOB, tmp_path, want_scope=True, env={},
                     fork=server if backend == "held" else None,
                     announce=lambda pid, token: said.append(pid))
    # Only the plain supervisor that replaces it is named.
    assert said == [got.pid] and got.backend == "process-group" and got.note
    assert got.pid == spawner.calls[-1]["pid"]


@pytest.mark.parametrize("fault", ["refused", "misplaced", "gone", "slow"])
def test_held_supervisor_is_killed_on_any_fault_and_a_plain_one_runs(
        tmp_path: Path, fault: str) -> None:
    spawner, server = Spawner(), HoldingServer()
    manager = FakeScopeManager(fail="Access denied" if fault == "refused" else None,
                               misplace=fault == "misplaced")
    run = held_launcher(manager, server, spawner)
    if fault == "gone":
        def opened(pid: int, token: str | None) -> FakeHeld:
            handle = HoldingServer.open(server, pid, token)
            handle.release_fails = True
            return handle
        run.open_held = opened
    if fault == "slow":
        ticks = iter([0.0, run.hold_seconds, run.hold_seconds])
        run.clock = lambda: next(ticks)
    got = run.launch(JOB, tmp_path, want_scope=True, env={"A": "1"}, fork=server)
    handle = server.handles[0]
    assert "go" not in handle.events and handle.events[-1] == "killed"
    assert not got.forked and got.backend == "process-group" and got.note
    plain = spawner.calls[-1]
    assert got.pid == plain["pid"] and plain["env"]["QEX_SCOPE_NOTE"] == got.note
    assert plain["go_fd"] is not None and spawner.go_byte() == b"1"


def test_no_held_supervisor_means_the_fresh_handshake(tmp_path: Path) -> None:
    spawner, server, manager = Spawner(), HoldingServer(answer=False), FakeScopeManager()
    run = held_launcher(manager, server, spawner)
    got = run.launch(JOB, tmp_path, want_scope=True, env={}, fork=server)
    assert server.asked and server.handles == []
    assert got.backend == "pystemd" and not got.forked
    assert spawner.calls[0]["go_fd"] is not None and spawner.go_byte() == b"1"


def test_a_held_child_without_a_handle_is_left_to_time_out(tmp_path: Path) -> None:
    spawner, server, manager = Spawner(), HoldingServer(), FakeScopeManager()
    run = held_launcher(manager, server, spawner)

    def no_pidfd(pid: int, token: str | None) -> FakeHeld:
        raise ProcessLookupError(3, "No such process")

    run.open_held = no_pidfd
    got = run.launch(JOB, tmp_path, want_scope=True, env={}, fork=server)
    # Nothing was asked of the user manager for that child: it never gets a go.
    assert [pid for _, pid in manager.started] == [spawner.calls[0]["pid"]]
    assert got.backend == "pystemd" and not got.forked


@pytest.mark.parametrize("backend,want", [("systemd-run", True), ("pystemd", False)])
def test_fork_server_not_asked_where_it_cannot_serve(tmp_path: Path, backend: str,
                                                    want: bool) -> None:
    spawner, server = Spawner(), HoldingServer()
    run = held_launcher(FakeScopeManager(), server, spawner, backend)
    got = run.launch(JOB, tmp_path, want_scope=want, env={}, fork=server)
    assert server.asked == [] and not got.forked


def test_pidfd_handle_refuses_a_reused_pid() -> None:
    from qex.platform.held import PidfdHeld

    with pytest.raises(ProcessLookupError):
        PidfdHeld(os.getpid(), "not-the-start-token")


def test_scope_fork_0_starts_the_supervisor_fresh(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QEX_SCOPE_FORK", "0")
    spawner, server, manager = Spawner(), HoldingServer(), FakeScopeManager()
    got = held_launcher(manager, server, spawner).launch(JOB, tmp_path, want_scope=True,
                                                         env={}, fork=server)
    assert server.asked == [] and not got.forked and spawner.go_byte() == b"1"


@pytest.mark.parametrize("backend", [None, "unusable", "systemd-run", "systemd-run-missing"])
def test_a_supervisor_that_starts_fresh_is_named_before_its_go(tmp_path: Path,
                                                               backend: str | None) -> None:
    # A coordinator killed between the start of a supervisor and its name on the disk left a
    # `starting` record that named nobody while the supervisor ran the job: recovery queued
    # it again and it ran twice. Every fresh supervisor now waits for a go that follows its
    # name; at end-of-file (the coordinator gone) it leaves the job alone.
    spawner = Spawner()
    if backend == "systemd-run-missing":
        real = spawner

        def spawner_without_systemd_run(argv: list[str], log: Path, env: dict[str, str], *,
                                        go_fd: int | None = None) -> int:
            if argv[0] == "systemd-run":
                raise FileNotFoundError("`systemd-run` is not on PATH")
            return real(argv, log, env, go_fd=go_fd)

        spawn: Any = spawner_without_systemd_run
    else:
        spawn = spawner
    capabilities = (caps("systemd-run") if backend and backend.startswith("systemd-run")
                    else caps(None, False, "no user manager"))
    run = launcher(FakeScopeManager(), spawner, capabilities, [])
    run.spawn = spawn
    seen: list[tuple[int, str | None, bytes]] = []
    got = run.launch(JOB, tmp_path, want_scope=backend is not None, env={},
                     announce=lambda pid, token: seen.append((pid, token, spawner.go_byte())))
    assert seen == [(got.pid, got.start_token, b"")]  # named while it waits
    assert spawner.go_byte() == b"1"  # and then let go
    assert len(spawner.calls) == 1 and spawner.calls[0]["go_fd"] is not None
    assert spawner.calls[0]["env"]["QEX_SUPERVISOR_GO_FD"] == str(GO_FD)


def test_a_supervisor_gone_before_its_go_costs_no_error(tmp_path: Path) -> None:
    # The go meets a closed pipe: the launch still answers, and the reaper judges the exit.
    spawner = Spawner()

    def spawn_and_die(argv: list[str], log: Path, env: dict[str, str], *,
                      go_fd: int | None = None) -> int:
        pid = spawner(argv, log, env, go_fd=go_fd)
        os.close(spawner.go_fds.pop())
        return pid

    run = launcher(FakeScopeManager(), spawner, caps(), [])
    run.spawn = spawn_and_die
    got = run.launch(JOB, tmp_path, want_scope=False, env={})
    assert got.pid == spawner.calls[0]["pid"] and got.backend == "process-group"


def test_the_go_pipe_reaches_its_number_even_from_that_number(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A pipe end that already has the number the child expects must still be copied there:
    # a dup2 of a descriptor onto itself keeps close-on-exec on macOS, and the supervisor
    # would read no go. The real spawn runs in a child process that owns its descriptor 3.
    from qex.platform import detach

    seen: list[list[tuple[Any, ...]]] = []
    monkeypatch.setattr(detach.os, "posix_spawn",
                        lambda path, argv, env, file_actions, setsid: seen.append(
                            file_actions) or 4242)
    read_end, write_end = os.pipe()
    try:
        os.fstat(detach.PASSED_FD)  # open in this process (pytest's own files)
        detach.spawn_detached(["/bin/true"], write_end, {}, pass_fd=detach.PASSED_FD)
        copies = [action[1] for action in seen[-1]
                  if action[0] == os.POSIX_SPAWN_DUP2 and action[2] == detach.PASSED_FD]
        assert len(copies) == 1 and copies[0] != detach.PASSED_FD
        with pytest.raises(OSError):
            os.fstat(copies[0])  # the spare number is closed again
    finally:
        os.close(read_end)
        os.close(write_end)
    monkeypatch.undo()
    script = f"""
import os, sys
from qex.platform import detach
r, w = os.pipe()
if r != {detach.PASSED_FD}:  # a fresh interpreter's first pipe has it already
    os.dup2(r, {detach.PASSED_FD}, inheritable=False)
    os.close(r)
assert not os.get_inheritable({detach.PASSED_FD})
log = os.open({str(tmp_path / 'log')!r}, os.O_WRONLY | os.O_CREAT, 0o600)
pid = detach.spawn_detached([sys.executable, "-c",
                             "import os; print(os.read({detach.PASSED_FD}, 1).decode())"],
                            log, pass_fd={detach.PASSED_FD})
os.write(w, b"1")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "log").read_text().strip() == "1"


JOB2 = "1a2b3c4d-0000-4000-8000-000000000002"
JOB3 = "1a2b3c4d-0000-4000-8000-000000000003"


def standby_launcher(spawner: Spawner, placed: dict[int, str],
                     alive: set[int] | None = None) -> ScopeLauncher:
    """systemd-run, with /proc's answers for the standby in `placed` (pid -> cgroup) and the
    living pids in `alive` (every pid when None)."""
    run = launcher(FakeScopeManager(), spawner, caps("systemd-run"), [])
    run.cgroup_of = placed.get
    run.alive = lambda pid, token: alive is None or pid in alive
    return run


def test_systemd_run_starts_a_standby_that_a_later_job_takes(tmp_path: Path) -> None:
    spawner, placed = Spawner(), {}
    run = standby_launcher(spawner, placed)
    daemon_log = tmp_path / "daemon.log"
    named: list[tuple[int, str | None]] = []

    def announce(pid: int, token: str | None) -> None:
        assert spawner.sent(1) is None, "the go came before the name"
        named.append((pid, token))

    first = run.launch(JOB, tmp_path, want_scope=True, env={"A": "1"}, standby_log=daemon_log)
    assert first.unit == "qex-1a2b3c4d-1.scope" and len(spawner.calls) == 2
    standby = spawner.calls[1]
    argv = standby["argv"]
    unit = next(a for a in argv if a.startswith("--unit=")).removeprefix("--unit=")
    assert re.fullmatch(r"qex-standby_[0-9a-f]{8}-1\.scope", unit) and is_qex_scope(unit)
    assert argv[argv.index("--") + 1:][1:] == ["-P", "-m", "qex.supervisor", "--standby"]
    assert "Delegate=yes" in argv and "--slice=qex.slice" in argv
    assert standby["log"] == daemon_log and standby["env"]["A"] == "1"
    assert standby["env"]["QEX_SUPERVISOR_GO_FD"] == str(GO_FD)
    # Not in its scope yet: the next job starts fresh, and the standby waits on.
    second = run.launch(JOB2, tmp_path / "2", want_scope=True, env={}, standby_log=daemon_log)
    assert second.pid == spawner.calls[2]["pid"] and second.unit == "qex-1a2b3c4d-1.scope"
    assert spawner.calls[2]["argv"][-1] == JOB2 and len(spawner.calls) == 3
    assert spawner.sent(1) is None
    # In its scope: the job after takes it, named first, then its id as the go.
    placed[standby["pid"]] = f"/user.slice/user-1000.slice/user@1000.service/qex.slice/{unit}"
    third = run.launch(JOB3, tmp_path, want_scope=True, env={}, standby_log=daemon_log,
                       announce=announce)
    assert (third.pid, third.unit, third.backend) == (standby["pid"], unit, "systemd-run")
    assert named == [(standby["pid"], None)] and not third.forked
    assert spawner.sent(1) == f"{JOB3}\n".encode()
    # The id went whole, then the pipe ended; and the next standby is on its way.
    assert spawner.calls[-1]["argv"][-1] == "--standby" and len(spawner.calls) == 4


def test_a_standby_that_died_is_let_go_and_replaced(tmp_path: Path) -> None:
    spawner, placed = Spawner(), {}
    run = standby_launcher(spawner, placed, alive=set())
    daemon_log = tmp_path / "daemon.log"
    run.launch(JOB, tmp_path, want_scope=True, env={}, standby_log=daemon_log)
    got = run.launch(JOB2, tmp_path, want_scope=True, env={}, standby_log=daemon_log)
    assert spawner.calls[2]["argv"][-1] == JOB2 and got.pid == spawner.calls[2]["pid"]
    assert spawner.sent(1) == b""  # let go: end-of-file
    assert spawner.calls[3]["argv"][-1] == "--standby"


def test_a_standby_is_let_go_when_no_systemd_run_scope_is_wanted(tmp_path: Path) -> None:
    spawner, placed = Spawner(), {}
    run = standby_launcher(spawner, placed)
    run.launch(JOB, tmp_path, want_scope=True, env={}, standby_log=tmp_path / "daemon.log")
    assert spawner.sent(1) is None
    run.launch(JOB2, tmp_path, want_scope=False, env={}, standby_log=tmp_path / "daemon.log")
    assert spawner.sent(1) == b""
    assert [c["argv"][-1] for c in spawner.calls].count("--standby") == 1


@pytest.mark.parametrize("env,log", [({"QEX_SCOPE_STANDBY": "0"}, True), ({}, False)])
def test_no_standby_when_switched_off_or_not_asked(tmp_path: Path, env: dict[str, str],
                                                  log: bool) -> None:
    spawner = Spawner()
    standby_launcher(spawner, {}).launch(JOB, tmp_path, want_scope=True, env=env,
                                         standby_log=tmp_path / "d.log" if log else None)
    assert len(spawner.calls) == 1 and spawner.calls[0]["argv"][-1] == JOB


def test_a_standby_that_cannot_start_costs_nothing(tmp_path: Path) -> None:
    spawner = Spawner()
    run = standby_launcher(spawner, {})

    def spawn(argv: list[str], log: Path, env: dict[str, str], *,
              go_fd: int | None = None) -> int:
        if argv[-1] == "--standby":
            raise OSError(24, "Too many open files")
        return spawner(argv, log, env, go_fd=go_fd)

    run.spawn = spawn
    first = run.launch(JOB, tmp_path, want_scope=True, env={}, standby_log=tmp_path / "d.log")
    second = run.launch(JOB2, tmp_path, want_scope=True, env={}, standby_log=tmp_path / "d.log")
    assert first.backend == second.backend == "systemd-run"
    assert [c["argv"][-1] for c in spawner.calls] == [JOB, JOB2]


def pystemd_with_systemd_run() -> Capabilities:
    return Capabilities(os="linux", scope_backend="pystemd", enforcement_possible=True,
                        systemd_run=True)


def test_pystemd_takes_a_standby_and_spares_the_coordinator_its_d_bus_call(
        tmp_path: Path) -> None:
    spawner, server, placed = Spawner(), HoldingServer(), {}
    manager = FakeScopeManager()
    run = held_launcher(manager, server, spawner)
    run.capabilities = pystemd_with_systemd_run
    run.cgroup_of = lambda pid: placed.get(pid) or manager.cgroup_of(pid)
    run.alive = lambda pid, token: True
    daemon_log = tmp_path / "daemon.log"
    first = run.launch(JOB, tmp_path, want_scope=True, env={}, fork=server,
                       standby_log=daemon_log)
    assert first.backend == "pystemd" and first.forked and len(manager.started) == 1
    standby = spawner.calls[0]
    assert standby["argv"][0] == "systemd-run" and standby["argv"][-1] == "--standby"
    unit = next(a for a in standby["argv"] if a.startswith("--unit=")).removeprefix("--unit=")
    # In its scope but still starting (not in its `supervisor` leaf): the held supervisor is
    # faster, so the next job is held and placed over D-Bus as before.
    scope = f"/user.slice/user-1000.slice/user@1000.service/qex.slice/{unit}"
    placed[standby["pid"]] = scope
    second = run.launch(JOB2, tmp_path, want_scope=True, env={}, fork=server,
                        standby_log=daemon_log)
    assert second.forked and len(manager.started) == 2 and spawner.sent(0) is None
    # Settled in its leaf: the next job takes it; neither the manager nor the fork server
    # is asked.
    placed[standby["pid"]] = f"{scope}/supervisor"
    third = run.launch(JOB3, tmp_path, want_scope=True, env={}, fork=server,
                       standby_log=daemon_log)
    assert (third.pid, third.unit, third.backend) == (standby["pid"], unit, "systemd-run")
    assert not third.forked and spawner.sent(0) == f"{JOB3}\n".encode()
    assert len(manager.started) == 2 and len(server.asked) == 2
    assert spawner.calls[-1]["argv"][-1] == "--standby" and len(spawner.calls) == 2


def test_pystemd_without_a_held_supervisor_takes_a_standby_still_starting(
        tmp_path: Path) -> None:
    # No fork server to hold a child (or QEX_SCOPE_FORK=0): the other way is a fresh
    # process, slower than a standby that is in its scope but still importing.
    spawner, placed = Spawner(), {}
    manager = FakeScopeManager()
    run = launcher(manager, spawner, pystemd_with_systemd_run(), [])
    run.cgroup_of = lambda pid: placed.get(pid) or manager.cgroup_of(pid)
    run.alive = lambda pid, token: True
    assert run.start_standby({}, tmp_path / "daemon.log")
    standby = spawner.calls[0]
    unit = next(a for a in standby["argv"] if a.startswith("--unit=")).removeprefix("--unit=")
    placed[standby["pid"]] = f"/user.slice/user-1000.slice/user@1000.service/qex.slice/{unit}"
    got = run.launch(JOB, tmp_path, want_scope=True, env={}, standby_log=tmp_path / "d.log")
    assert (got.pid, got.unit) == (standby["pid"], unit) and manager.started == []


def test_pystemd_without_systemd_run_starts_no_standby(tmp_path: Path) -> None:
    spawner, server = Spawner(), HoldingServer()
    run = held_launcher(FakeScopeManager(), server, spawner)
    got = run.launch(JOB, tmp_path, want_scope=True, env={}, fork=server,
                     standby_log=tmp_path / "daemon.log")
    assert got.backend == "pystemd" and spawner.calls == []


def test_standbys_that_keep_dying_are_no_longer_started(tmp_path: Path) -> None:
    # systemd-run present but unable to make a scope (an option this manager refuses, say),
    # while pystemd can: each standby dies at once, and after STANDBY_MISSES of them in a
    # row the launcher stops paying a process per job for nothing.
    spawner, server = Spawner(), HoldingServer()
    run = held_launcher(FakeScopeManager(), server, spawner)
    run.capabilities = pystemd_with_systemd_run
    run.alive = lambda pid, token: False
    jobs = [f"1a2b3c4d-0000-4000-8000-00000000001{n}" for n in range(STANDBY_MISSES + 3)]
    for job in jobs:
        got = run.launch(job, tmp_path, want_scope=True, env={}, fork=server,
                         standby_log=tmp_path / "daemon.log")
        assert got.backend == "pystemd" and got.forked
    standbys = [c for c in spawner.calls if c["argv"][-1] == "--standby"]
    assert len(standbys) == STANDBY_MISSES


@pytest.mark.parametrize("capabilities,env,started", [
    (caps("systemd-run"), {}, True),
    (caps("systemd-run"), {"QEX_SCOPE_STANDBY": "0"}, False),
    (caps("pystemd"), {}, False),
    (pystemd_with_systemd_run(), {}, True),
    (pystemd_with_systemd_run(), {"QEX_SCOPE_STANDBY": "0"}, False),
    (caps(None, False, "cgroups are hybrid"), {}, False),
])
def test_a_coordinator_starts_a_standby_for_its_first_scoped_job(
        tmp_path: Path, capabilities: Capabilities, env: dict[str, str], started: bool) -> None:
    spawner = Spawner()
    run = standby_launcher(spawner, {})
    run.capabilities = lambda: capabilities
    assert run.start_standby(env, tmp_path / "daemon.log") is started
    assert [c["argv"][-1] for c in spawner.calls] == (["--standby"] if started else [])
    if started:
        assert spawner.calls[0]["log"] == tmp_path / "daemon.log"
        run.start_standby(env, tmp_path / "daemon.log")
        assert len(spawner.calls) == 1  # one standby at a time
