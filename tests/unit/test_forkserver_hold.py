"""The fork server's `hold` and `park` requests: a forked supervisor that waits for its go.

Real processes, no systemd: the go only counts from the coordinator (the server's parent,
here this test), a child without a go exits by itself and leaves the job alone, and a
child released outside a qex scope (as every process on a test machine is) refuses to run
when it was held for a scope, and runs when it was parked for its `starting` record.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import wait_gone

from qex.platform import host
from qex.platform.held import GO_SIGNAL, PidfdHeld
from qex.supervisor.forkserver import wait_for_go

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qex.coordinator.forking import ForkServer as ForkServerType

pytestmark = pytest.mark.skipif(not (host.linux() and hasattr(os, "pidfd_open")),
                                reason="held supervisors need Linux and pidfds")

JOB = "1a2b3c4d-0000-4000-8000-0000000000aa"


def _fork_waiter(sender: int, timeout: float) -> int:
    """A child that blocks the go, waits for it, and exits 0 on the go, 3 without."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {GO_SIGNAL})
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0 if wait_for_go(sender, timeout) else 3
        os._exit(code)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return pid


def _exit_code(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_the_go_from_the_sender_releases_the_child() -> None:
    pid = _fork_waiter(os.getpid(), 20)
    held = PidfdHeld(pid, None)
    held.release()
    held.close()
    assert _exit_code(pid) == 0


def test_an_early_go_is_not_lost() -> None:
    # Sent at once, before the child can have reached its wait: blocked, so it stays pending.
    pid = _fork_waiter(os.getpid(), 20)
    os.kill(pid, GO_SIGNAL)
    assert _exit_code(pid) == 0


def test_a_go_from_another_process_is_ignored() -> None:
    pid = _fork_waiter(os.getpid(), 1.5)
    time.sleep(0.2)
    subprocess.run(["kill", f"-{GO_SIGNAL.name.removeprefix('SIG')}", str(pid)], check=True)
    started = time.monotonic()
    assert _exit_code(pid) == 3  # it kept waiting, then gave up
    assert time.monotonic() - started > 0.5


def test_discard_kills_a_waiting_child() -> None:
    pid = _fork_waiter(os.getpid(), 20)
    PidfdHeld(pid, None).discard()
    assert _exit_code(pid) == -signal.SIGKILL


def _server(tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("QEX_CHAIN_TRACE", None)
    return subprocess.Popen([sys.executable, "-m", "qex.supervisor", "--forkserver"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def _job_dir(tmp_path: Path) -> Path:
    job_dir = tmp_path / "state" / "qex" / "jobs" / JOB
    job_dir.mkdir(parents=True)
    (job_dir / "status.json").write_text('{"sentinel": true}\n')
    return job_dir


def _hold(server: subprocess.Popen[bytes], seconds: float,
          verb: str = "hold") -> tuple[int, str | None]:
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(f"{verb} {JOB} {seconds:g}\n".encode())
    server.stdin.flush()
    words = server.stdout.readline().decode().split()
    assert words and words[0].isdigit(), words
    return int(words[0]), (words[1] if len(words) > 1 else None)


def _release_and_wait(pid: int, token: str | None) -> None:
    """Send the coordinator's go to a held or parked child, and wait until it is gone."""
    held = PidfdHeld(pid, token)
    held.release()
    held.close()
    wait_gone(pid, timeout=20.0)


def _finish(server: subprocess.Popen[bytes]) -> None:
    assert server.stdin is not None and server.stdout is not None
    server.stdin.close()
    server.wait(timeout=20)
    server.stdout.close()


@pytest.mark.parametrize("verb", ["hold", "park"])
@pytest.mark.parametrize("go_from", ["nobody", "stranger"])
def test_a_held_child_without_the_go_leaves_the_job_alone(tmp_path: Path, go_from: str,
                                                         verb: str) -> None:
    job_dir = _job_dir(tmp_path)
    before = sorted(p.name for p in job_dir.iterdir())
    server = _server(tmp_path)
    try:
        pid, _token = _hold(server, 1, verb)
        if go_from == "stranger":
            subprocess.run(["kill", "-USR1", str(pid)], check=True)
        wait_gone(pid, timeout=20.0)
    finally:
        _finish(server)
    assert (job_dir / "status.json").read_text() == '{"sentinel": true}\n'
    log = (job_dir / "supervisor.log").read_text()
    assert "no go for the job" in log and "without touching the job" in log
    assert sorted(p.name for p in job_dir.iterdir()) == sorted([*before, "supervisor.log"])


@pytest.mark.parametrize("verb", ["hold", "park"])
def test_a_released_child_outside_a_scope(tmp_path: Path, verb: str) -> None:
    # On this machine no process sits in a qex scope. Held for a scope, the go alone is not
    # enough: the child refuses. Parked for its record, it goes on as a supervisor, and this
    # one finds no valid record (the sentinel) and says so.
    job_dir = _job_dir(tmp_path)
    server = _server(tmp_path)
    try:
        _release_and_wait(*_hold(server, 20, verb))
    finally:
        _finish(server)
    log = (job_dir / "supervisor.log").read_text()
    assert ("outside a qex scope" in log) == (verb == "hold")
    assert ("no readable spec.json and status.json" in log) == (verb == "park")
    assert (job_dir / "status.json").read_text() == '{"sentinel": true}\n'
    assert not (job_dir / "supervisor.lock").exists()


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.parametrize("verb", ["hold", "park"])
def test_a_parked_child_prepares_its_spawner_before_the_go(tmp_path: Path, verb: str) -> None:
    # Parked (no scope), the child starts the thread that will spawn the job while it
    # waits for its go; held for a scope it must not (it still has to join its cgroup).
    # Either way the job's files stay as they were.
    from qex.core.records import JobSpec
    from qex.store import jobs as job_files

    job_dir = _job_dir(tmp_path)
    job_files.write_spec(job_dir, JobSpec(id=JOB, name="j", cwd="/", command=["true"], env={},
                                          cpu=1, mem=1024, submitted_at=time.time()))
    before = {p.name: p.read_bytes() for p in job_dir.iterdir()}
    server = _server(tmp_path)
    try:
        pid, token = _hold(server, 20, verb)
        deadline = time.monotonic() + 20
        want = 2 if verb == "park" else 1
        while _threads(pid) != want and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # and no thread comes later
        assert _threads(pid) == want
        PidfdHeld(pid, token).discard()
        wait_gone(pid, timeout=20.0)
    finally:
        _finish(server)
    after = {p.name: p.read_bytes() for p in job_dir.iterdir() if p.name != "supervisor.log"}
    assert after == before


def test_a_bad_hold_request_is_refused(tmp_path: Path) -> None:
    server = _server(tmp_path)
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(f"hold {JOB} forever\n".encode())
        server.stdin.flush()
        assert server.stdout.readline().startswith(b"error ")
    finally:
        _finish(server)


def test_coordinator_side_hold_starts_a_cold_server_without_waiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.coordinator.forking import ForkServer

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("QEX_CHAIN_TRACE", raising=False)
    job_dir = _job_dir(tmp_path)
    server = ForkServer(tmp_path / "daemon.log")
    assert server.hold(JOB, 20) is None  # cold: this job takes the fresh path
    assert server.pid is not None
    try:
        answer = server.hold(JOB, 20)
        assert answer is not None
        pid, token = answer
        PidfdHeld(pid, token).discard()
        wait_gone(pid, timeout=20.0)
    finally:
        server.close()
        proc = server._proc
        if proc is not None and proc.stdout is not None:
            proc.wait(timeout=20)
            proc.stdout.close()
    assert (job_dir / "status.json").read_text() == '{"sentinel": true}\n'


def _coordinator_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ForkServerType:
    from qex.coordinator.forking import ForkServer

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("QEX_CHAIN_TRACE", raising=False)
    server = ForkServer(tmp_path / "daemon.log")
    server.warm()
    return server


def _close(server: ForkServerType) -> None:
    server.close()
    proc = server._proc
    if proc is not None and proc.stdout is not None:
        proc.wait(timeout=20)
        proc.stdout.close()


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children the coordinator's side opened a pidfd handle on, in order."""
    pids: list[int] = []
    real = PidfdHeld.__init__

    def remember(self: PidfdHeld, pid: int, token: str | None) -> None:
        pids.append(pid)
        real(self, pid, token)

    monkeypatch.setattr(PidfdHeld, "__init__", remember)
    return pids


def test_coordinator_side_park_then_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            handled: list[int]) -> None:
    pids = handled
    job_dir = _job_dir(tmp_path)
    server = _coordinator_server(tmp_path, monkeypatch)
    try:
        assert server.park(JOB, 20)
        assert not server.park(JOB, 20)  # one parked request at a time
        # A release for another job takes the answer and kills that child, so no later
        # request can mistake the answer for its own.
        assert server.release_parked("ffffffff-0000-4000-8000-000000000000") is None
        assert len(pids) == 1
        wait_gone(pids[0], timeout=20.0)
        assert server.park(JOB, 20)
        launched = server.release_parked(JOB)
        assert launched is not None and launched.forked and launched.pid != pids[0]
        wait_gone(launched.pid, timeout=20.0)
        # A plain start while a park is outstanding gets its own answer, not the park's.
        assert server.park(JOB, 20)
        started = server.launch(JOB, 20)
        assert started is not None and started.pid == pids[-1] != pids[-2]
        wait_gone(started.pid, timeout=20.0)
        wait_gone(pids[-2], timeout=20.0)  # the parked one was killed
    finally:
        _close(server)
    log = (job_dir / "supervisor.log").read_text()
    assert log.count("no readable spec.json and status.json") == 2


@pytest.mark.parametrize("start", ["park", "launch"])
def test_coordinator_side_names_the_child_before_its_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: str) -> None:
    # The coordinator writes `supervisor.pid` in `before_go`: the child must still wait
    # then, so that no moment exists in which it works on the job and nothing on the disk
    # names it (a coordinator killed there would put the job back in the queue, and it
    # would run twice).
    job_dir = _job_dir(tmp_path)
    server = _coordinator_server(tmp_path, monkeypatch)
    named: list[tuple[int, str | None]] = []
    started_early: list[bool] = []

    def before_go(pid: int, token: str | None) -> None:
        named.append((pid, token))
        time.sleep(0.3)  # a released child would have written its complaint by now
        started_early.append("no readable" in (job_dir / "supervisor.log").read_text())

    try:
        if start == "park":
            assert server.park(JOB, 20)
            launched = server.release_parked(JOB, before_go)
        else:  # the start that follows a park that could not be sent or released
            launched = server.launch(JOB, 20, before_go)
        assert launched is not None
        assert named == [(launched.pid, launched.start_token)]
        assert started_early == [False]
        wait_gone(launched.pid, timeout=20.0)
    finally:
        _close(server)
    assert "no readable spec.json and status.json" in (job_dir / "supervisor.log").read_text()


def test_coordinator_side_discard_kills_the_parked_child(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handled: list[int]) -> None:
    pids = handled
    job_dir = _job_dir(tmp_path)
    server = _coordinator_server(tmp_path, monkeypatch)
    try:
        assert server.park(JOB, 20)
        server.discard_parked()
        assert pids
        wait_gone(pids[0], timeout=20.0)
    finally:
        _close(server)
    assert (job_dir / "status.json").read_text() == '{"sentinel": true}\n'
    assert "no readable" not in (job_dir / "supervisor.log").read_text()


def test_coordinator_side_a_late_release_discards(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The `starting` record took longer than half of the wait: no go, a fresh start instead.
    from qex.coordinator import forking

    job_dir = _job_dir(tmp_path)
    server = _coordinator_server(tmp_path, monkeypatch)
    said: list[str] = []
    monkeypatch.setattr(forking, "log", said.append)
    try:
        assert server.park(JOB, 2)
        clock = time.monotonic() + 5
        monkeypatch.setattr(forking, "time", SimpleNamespace(monotonic=lambda: clock))
        assert server.release_parked(JOB) is None
    finally:
        _close(server)
    assert any("half of the 2s" in line for line in said)
    assert "no readable" not in (job_dir / "supervisor.log").read_text()


def _children(pid: int) -> set[int]:
    """The live (not zombie) children of `pid`, from /proc."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry))
    return found


def _spare_of(server: subprocess.Popen[bytes], besides: frozenset[int] = frozenset()) -> int:
    """The one child of the server outside `besides`: the spare it forked ahead of need."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        fresh = _children(server.pid) - besides
        if fresh:
            assert len(fresh) == 1, fresh
            return fresh.pop()
        time.sleep(0.02)
    raise AssertionError("the fork server forked no spare supervisor")


def test_a_request_takes_the_supervisor_forked_ahead(tmp_path: Path) -> None:
    # The child that answers a request was there before it, and the next one is forked after
    # the answer; both behave as a child forked on request (no go: the job is left alone).
    job_dir = _job_dir(tmp_path)
    server = _server(tmp_path)
    try:
        spare = _spare_of(server)
        pid, token = _hold(server, 1, "park")
        assert pid == spare and token is not None
        held = PidfdHeld(pid, token)  # the token is the spare's own
        held.close()
        next_spare = _spare_of(server, besides=frozenset({pid}))
        assert next_spare != spare
        wait_gone(pid, timeout=20.0)
    finally:
        _finish(server)
    assert (job_dir / "status.json").read_text() == '{"sentinel": true}\n'
    assert "no go for the job" in (job_dir / "supervisor.log").read_text()


def test_a_spare_that_died_is_replaced_by_a_fork_on_request(tmp_path: Path) -> None:
    job_dir = _job_dir(tmp_path)
    server = _server(tmp_path)
    try:
        spare = _spare_of(server)
        os.kill(spare, signal.SIGKILL)
        wait_gone(spare, timeout=20.0)
        pid, token = _hold(server, 20, "park")
        assert pid != spare
        _release_and_wait(pid, token)
    finally:
        _finish(server)
    # Released for its record, the child went on as a supervisor and found the sentinel.
    assert "no readable spec.json and status.json" in (job_dir / "supervisor.log").read_text()


def test_the_server_lets_its_spare_go_when_the_coordinator_leaves(tmp_path: Path) -> None:
    server = _server(tmp_path)
    spare = _spare_of(server)
    _finish(server)  # waits for the server, which waits for its last child
    wait_gone(spare, timeout=20.0)
    assert not _children(server.pid)
