"""The fork server's choice among its waiting supervisors (`forkserver._Spares`), with socket
pairs standing in for the supervisors' ends."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from qex.store.paths import Paths
from qex.supervisor import forkserver
from qex.supervisor.forkserver import FREE, MAX_FREE, Spare, _Spares

#: Every pair a test made, closed after it.
_MADE: list[socket.socket] = []


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    _Spares.current = None
    _Spares.spare_due = None
    _Spares.free.clear()
    _Spares.busy.clear()
    yield
    _Spares.spare_due = None
    _Spares.let_all_go()
    while _MADE:
        _MADE.pop().close()


class Supervisor:
    """The far end of one spare's channel, as the forked child holds it."""

    def __init__(self, pid: int) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.spare = Spare(pid, ours, None)
        self.end = theirs
        _MADE.extend((ours, theirs))

    def says_free(self) -> None:
        self.end.send(FREE)
        _Spares.heard(self.spare.channel.fileno())

    def let_go(self) -> bool:
        """True when the server closed its end (this supervisor would exit)."""
        self.end.setblocking(False)
        try:
            return self.end.recv(16) == b""
        except BlockingIOError:
            return False


def fresh_spare() -> Supervisor:
    supervisor = Supervisor(1)
    _Spares.current = supervisor.spare
    return supervisor


def busy(pid: int) -> Supervisor:
    supervisor = Supervisor(pid)
    _Spares.busy[supervisor.spare.channel.fileno()] = supervisor.spare
    return supervisor


def test_a_supervisor_that_served_comes_before_the_fresh_spare() -> None:
    fresh_spare()
    older, newer = busy(2), busy(3)
    older.says_free()
    newer.says_free()
    assert not _Spares.busy
    taken = [_Spares.take(True), _Spares.take(True), _Spares.take(True), _Spares.take(True)]
    assert [(spare.pid, is_fresh) for spare, is_fresh in filter(None, taken)] == [
        (3, False), (2, False), (1, True)]
    assert taken[3] is None


def test_a_job_with_a_scope_gets_only_the_fresh_spare() -> None:
    busy(2).says_free()
    assert _Spares.take(False) is None
    fresh = fresh_spare()
    assert _Spares.take(False) == (fresh.spare, True)
    assert [spare.pid for spare in _Spares.free] == [2]


def test_free_supervisors_beyond_the_bound_are_let_go() -> None:
    supervisors = [busy(pid) for pid in range(2, 3 + MAX_FREE)]
    for supervisor in supervisors:
        supervisor.says_free()
    assert len(_Spares.free) == MAX_FREE
    assert [s.let_go() for s in supervisors] == [False] * MAX_FREE + [True]


def test_a_supervisor_that_exits_while_busy_is_dropped() -> None:
    gone = busy(2)
    gone.end.close()
    _Spares.heard(gone.spare.channel.fileno())
    assert not _Spares.busy and not _Spares.free


def test_a_channel_with_nothing_to_read_stays_busy() -> None:
    quiet = busy(2)
    _Spares.heard(quiet.spare.channel.fileno())
    assert list(_Spares.busy.values()) == [quiet.spare]


@pytest.fixture
def quiet_poll(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """A poll that finds nothing readable (no request came); the timeouts it was given (ms)."""
    timeouts: list[float | None] = []

    class Quiet:
        def register(self, fd: int, events: int) -> None:
            pass

        def poll(self, timeout: float | None = None) -> list[tuple[int, int]]:
            timeouts.append(timeout)
            return []

    monkeypatch.setattr(forkserver.select, "poll", Quiet)
    return timeouts


def test_after_the_idle_time_the_free_supervisors_go_and_the_spare_stays(
        quiet_poll: list[float | None]) -> None:
    fresh = fresh_spare()
    served = busy(2)
    served.says_free()
    timeouts = quiet_poll
    assert forkserver._requests_ready() is False
    assert timeouts == [forkserver.FREE_IDLE_SECS * 1000]
    assert served.let_go() and not _Spares.free
    assert _Spares.current is fresh.spare and not fresh.let_go()
    assert forkserver._requests_ready() is False
    assert timeouts[-1] is None  # no free supervisor left: the wait has no timeout


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[Supervisor]:
    """The spares that `Spare.fork` made, each a socket pair instead of a process."""
    made: list[Supervisor] = []

    def fork() -> Spare:
        made.append(Supervisor(100 + len(made)))
        return made[-1].spare

    monkeypatch.setattr(Spare, "fork", staticmethod(fork))
    return made


def test_the_next_spare_is_forked_after_a_delay_not_beside_the_job_just_handed_out(
        forks: list[Supervisor]) -> None:
    _Spares.want_spare(1000.0)
    assert _Spares.current is None and _Spares.spare_due == 1000.0 + forkserver.SPARE_DELAY_SECS
    _Spares.want_spare(1000.01)  # a second hand-out meanwhile keeps the first time
    assert _Spares.spare_due == 1000.0 + forkserver.SPARE_DELAY_SECS
    _Spares.fork_spare_if_due(1000.0 + forkserver.SPARE_DELAY_SECS / 2)
    assert not forks and _Spares.current is None
    _Spares.fork_spare_if_due(1000.0 + forkserver.SPARE_DELAY_SECS)
    assert [s.spare for s in forks] == [_Spares.current] and _Spares.spare_due is None
    _Spares.want_spare(1001.0)  # a spare waits: nothing is pending
    assert _Spares.spare_due is None


def test_a_hand_out_leaves_the_next_spare_for_later(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, forks: list[Supervisor]) -> None:
    # The job just handed out starts now; a spare forked now would take its cores.
    fresh = fresh_spare()
    answers: list[str] = []
    monkeypatch.setattr(forkserver, "_open_log",
                        lambda paths, job_id: os.open(os.devnull, os.O_WRONLY))
    monkeypatch.setattr(forkserver.qex.supervisor.main, "remember_config", lambda paths: None)
    monkeypatch.setattr(forkserver, "_answer", answers.append)
    job_id = "00000000-0000-4000-8000-000000000001"
    forkserver._start(Paths.from_env({"HOME": str(tmp_path)}), job_id, 60.0, scoped=False)
    assert answers == ["1 "]  # the spare's pid: it took the job
    assert fresh.end.recv(256).startswith(f"park {job_id} 60 ".encode())
    assert not forks and _Spares.current is None and _Spares.spare_due is not None


def test_the_wait_for_a_request_ends_when_the_spare_is_due_and_keeps_the_free_ones(
        monkeypatch: pytest.MonkeyPatch, forks: list[Supervisor],
        quiet_poll: list[float | None]) -> None:
    served = busy(2)
    served.says_free()
    now = 1000.0
    monkeypatch.setattr(forkserver.time, "monotonic", lambda: now)
    _Spares.want_spare(now)
    assert _Spares.wait_timeout(now) == pytest.approx(forkserver.SPARE_DELAY_SECS)
    now += forkserver.SPARE_DELAY_SECS
    assert forkserver._requests_ready() is False
    assert quiet_poll == [0.0]
    assert _Spares.current is forks[0].spare
    # The wake-up was the spare's: the free supervisor stays, and the next wait is its own.
    assert _Spares.free == [served.spare] and not served.let_go()
    assert _Spares.wait_timeout(now) == forkserver.FREE_IDLE_SECS


def test_without_a_pending_spare_or_a_free_supervisor_the_wait_has_no_limit() -> None:
    fresh_spare()
    assert _Spares.wait_timeout(1000.0) is None


def test_the_end_of_the_coordinator_lets_every_supervisor_go() -> None:
    fresh = fresh_spare()
    waiting, working = busy(2), busy(3)
    waiting.says_free()
    _Spares.let_all_go()
    assert fresh.let_go() and waiting.let_go() and working.let_go()
    assert _Spares.current is None and not _Spares.free and not _Spares.busy
