"""The portable implementations, selected by QEX_PLATFORM=portable on this Linux machine.

Each test sets the switch, then shows that the mechanism took its portable path (the Linux
path is made to fail where that proves it) and still gives right answers.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qex.platform import host, jobprocess, machine, proclist, procs

LINUX = sys.platform.startswith("linux")
linux_only = pytest.mark.skipif(not LINUX, reason="shows the switch overriding Linux")


@pytest.fixture
def portable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(host.ENV_VAR, "portable")
    procs.forget_boot_id()
    yield
    procs.forget_boot_id()


@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(host.ENV_VAR, raising=False)


def _no_proc(*_: Any, **__: Any) -> Any:
    raise AssertionError("the portable path read /proc")


# -- the switch ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["portable", " Portable ", "PORTABLE"])
def test_the_switch_selects_portable(value: str) -> None:
    env = {host.ENV_VAR: value}
    assert host.kind(env) == host.PORTABLE and not host.linux(env)


@linux_only
@pytest.mark.parametrize("value", ["", "linux", "auto", "portabel"])
def test_other_values_leave_linux_alone(value: str) -> None:
    env = {host.ENV_VAR: value} if value else {}
    assert host.kind(env) == host.LINUX and not host.forced(env)
    assert host.system_name(env) == sys.platform
    assert host.portable_summary(env) is None


def test_macos_is_portable_without_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert host.kind({}) == host.PORTABLE
    assert not host.forced({}) and host.system_name({}) == "darwin"
    summary = host.portable_summary({})
    assert summary is not None and summary.startswith("this system is macOS")


@linux_only
def test_the_summary_names_the_switch_and_what_works() -> None:
    env = {host.ENV_VAR: "portable"}
    assert host.forced(env) and host.system_name(env) == "portable"
    summary = host.portable_summary(env)
    assert summary is not None
    assert "QEX_PLATFORM=portable (a test aid)" in summary
    assert "enforcement is off" in summary
    assert "claims steer the queue" in summary and "GPUs" in summary
    assert "memory limits" in summary and "proven OOM" in summary


# -- rusage units -------------------------------------------------------------------------


def test_maxrss_follows_the_kernel_not_the_switch() -> None:
    assert host.maxrss_bytes(5_000_000, "darwin") == 5_000_000
    assert host.maxrss_bytes(5_000, "linux") == 5_000 * 1024
    assert host.maxrss_bytes(5_000, "freebsd14") == 5_000 * 1024


@linux_only
def test_children_usage_is_in_bytes_under_portable(portable: None) -> None:
    size = 80 * 1024 * 1024
    subprocess.run([sys.executable, "-c", f"b = bytearray({size}); b[::4096] = b'x' * "
                    f"len(b[::4096])"], check=True)
    peak, cpu = jobprocess.children_usage()
    assert size <= peak < 64 * size  # KiB taken for bytes would be 1024 times too small
    assert cpu >= 0


# -- process identity ---------------------------------------------------------------------


def test_parse_ps_states() -> None:
    output = "    1 Ss   Tue Dec  1 15:20:35 2026\n  812 Z    Tue Dec  1 15:21:00 2026\n"
    assert procs.parse_ps_states(output) == {
        1: ("Ss", "Tue Dec 1 15:20:35 2026"), 812: ("Z", "Tue Dec 1 15:21:00 2026")}
    assert procs.parse_ps_states("") == {}
    assert procs.parse_ps_states("  77 Z\n") == {}


def test_one_ps_gives_the_own_token_and_the_boot_id(
        portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[int]] = []
    real = procs.ps_states

    def counted(pids: list[int]) -> dict[int, tuple[str, str]]:
        calls.append(list(pids))
        return real(pids)

    monkeypatch.setattr(procs, "ps_states", counted)
    token = procs.start_token(os.getpid())
    boot = procs.boot_id()
    assert token is not None and token.startswith(procs.PS_TOKEN)
    assert boot.startswith("boot-") and calls == [[1, os.getpid()]]


def test_identity_asks_ps_not_proc(portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "_linux_stat", _no_proc)
    me = os.getpid()
    token = procs.start_token(me)
    assert token is not None and token.startswith(procs.PS_TOKEN)
    assert procs.same_process(me, token)
    assert procs.exists(me) and not procs.is_zombie(me)
    assert not procs.same_process(me, procs.PS_TOKEN + "Thu Jan 1 00:00:00 1970")
    assert procs.boot_id().startswith("boot-") and procs.boot_id() != "boot-unknown"


def test_a_zombie_is_dead_under_portable(portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "_linux_stat", _no_proc)
    child = subprocess.Popen(["true"])
    token = procs.start_token(child.pid)
    try:
        # Not reaped: the child stays a zombie, and kill(pid, 0) still succeeds.
        deadline = time.monotonic() + 20
        while not procs.is_zombie(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert procs.is_zombie(child.pid)
        os.kill(child.pid, 0)
        assert not procs.exists(child.pid)
        assert not procs.same_process(child.pid, token)
        assert not procs.same_process(child.pid, None)
    finally:
        child.wait()
    assert procs.start_token(child.pid) is None


@linux_only
def test_a_token_of_the_other_implementation_means_alive(
        monkeypatch: pytest.MonkeyPatch) -> None:
    me = os.getpid()
    monkeypatch.delenv(host.ENV_VAR, raising=False)
    linux_token = procs.start_token(me)
    assert linux_token is not None and procs.same_process(me, linux_token)
    assert procs.same_process(me, procs.PS_TOKEN + "some other time")
    monkeypatch.setenv(host.ENV_VAR, "portable")
    assert procs.same_process(me, linux_token)


def test_listing_asks_ps(portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proclist, "_linux", _no_proc)
    rows = {row.pid: row for row in proclist.list_processes()}
    assert os.getpid() in rows
    assert rows[os.getpid()].ppid == os.getppid()
    assert rows[os.getpid()].started_at is not None


# -- machine memory -----------------------------------------------------------------------


def test_memory_comes_from_psutil(portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    monkeypatch.setattr(machine, "_meminfo", _no_proc)
    assert machine.mem_total() == psutil.virtual_memory().total
    available = machine.mem_available()
    assert available is not None and 0 < available <= machine.mem_total()
    assert machine.memory_pressure() is None


# -- the job process ----------------------------------------------------------------------


def test_no_linux_calls_for_the_job(portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobprocess, "_libc", _no_proc)
    assert jobprocess.become_subreaper() is False
    assert jobprocess.ioprio_setter("idle") is None
    jobprocess.set_oom_score_adj(500)  # no write to /proc/self/oom_score_adj
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert jobprocess.pidfd_open(child.pid) is None
    finally:
        child.kill()
        child.wait()


def test_no_session_oom_counter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from qex.platform.procgroup import own_memory_events

    proc_cgroup = tmp_path / "cgroup"
    proc_cgroup.write_text("0::/user.slice/session-1.scope\n")
    events = tmp_path / "root" / "user.slice" / "session-1.scope" / "memory.events"
    events.parent.mkdir(parents=True)
    events.write_text("oom_kill 0\n")
    monkeypatch.delenv(host.ENV_VAR, raising=False)
    if LINUX:
        assert own_memory_events(proc_cgroup, tmp_path / "root") == events
    monkeypatch.setenv(host.ENV_VAR, "portable")
    assert own_memory_events(proc_cgroup, tmp_path / "root") is None


# -- enforcement and sandbox --------------------------------------------------------------


@linux_only
def test_detect_names_the_switch(portable: None) -> None:
    from qex.platform.detect import probe

    caps = probe()
    assert caps.os == "portable" and not caps.enforcement_possible
    assert caps.reason is not None and "QEX_PLATFORM=portable (a test aid)" in caps.reason
    assert caps.fix is not None and caps.fix.startswith("unset QEX_PLATFORM")


def test_detect_on_macos_says_macos(tmp_path: Path) -> None:
    from qex.platform.detect import Probe, probe

    caps = probe(Probe(platform="darwin", cgroup_root=tmp_path))
    assert caps.reason is not None and caps.reason.startswith("this system is macOS")


def test_the_sandbox_reads_no_cgroup(portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import qex.platform.cgroup as cgroup
    from qex.platform import detect
    from qex.platform.select import open_sandbox

    detect.reset_cache()
    monkeypatch.setattr(cgroup, "cgroup_of", _no_proc)
    try:
        sandbox = open_sandbox("job", "hard", own_cgroup=None)
        assert not sandbox.active
        assert "plain process groups" in str(sandbox.describe()["reason"])
    finally:
        detect.reset_cache()


def test_gpu_discovery_needs_linux(portable: None, tmp_path: Path) -> None:
    from qex.platform.devices import DiscoveryError, discover

    with pytest.raises(DiscoveryError, match="write the \\[\\[pool\\]\\] by hand"):
        discover("sysfs")
    (tmp_path / "bus" / "pci" / "devices").mkdir(parents=True)
    assert discover("sysfs", tmp_path) == ([], "sysfs")  # a copied tree is still read


# -- watching and reaping -----------------------------------------------------------------


def test_the_coordinator_and_cli_watchers_are_off(portable: None, tmp_path: Path) -> None:
    from qex.platform.filewatch import FileWatch, InotifyWatcher, SlowWatcher, open_watcher

    assert InotifyWatcher.open([tmp_path]) is None
    assert isinstance(open_watcher([tmp_path]), SlowWatcher)

    async def main() -> object:
        return FileWatch.start(tmp_path / "qex.toml", lambda: None)

    assert asyncio.run(main()) is None


def test_a_polling_watch_notices_an_edit(portable: None, tmp_path: Path) -> None:
    from qex.platform.pollwatch import PollingWatch, start_config_watch

    path = tmp_path / "qex.toml"
    path.write_text("[budget]\ncpu = 1\n")

    def no_inotify(_path: Path, _on_change: Any) -> None:
        raise AssertionError("inotify asked under portable")

    async def main() -> tuple[int, int]:
        heard = asyncio.Event()
        watch = start_config_watch(path, heard.set, no_inotify, interval=0.05)
        assert isinstance(watch, PollingWatch) and not watch.closed
        while watch.looks < 2:
            await asyncio.sleep(0.05)
        assert not heard.is_set()  # nothing changed yet
        fresh = tmp_path / "qex.toml.new"
        fresh.write_text("[budget]\ncpu = 2\n")
        fresh.rename(path)
        await asyncio.wait_for(heard.wait(), 20)
        watch.close()
        looks = watch.looks
        await asyncio.sleep(0.2)
        return looks, watch.looks

    before, after = asyncio.run(main())
    assert before == after  # closed: no more looks


@linux_only
def test_linux_keeps_inotify(native: None, tmp_path: Path) -> None:
    from qex.platform.pollwatch import start_config_watch

    sentinel = SimpleNamespace(closed=False, close=lambda: None)
    asked: list[Path] = []

    def inotify(path: Path, _on_change: Any) -> Any:
        asked.append(path)
        return sentinel

    assert start_config_watch(tmp_path / "x", lambda: None, inotify) is sentinel
    assert asked == [tmp_path / "x"]


def test_no_fork_server_under_portable(portable: None, tmp_path: Path) -> None:
    from qex.coordinator.forking import ForkServer

    server = ForkServer(tmp_path / "daemon.log")
    assert server.launch("job", 20) is None and server.pid is None


@pytest.mark.parametrize("ends_by", ["exit", "lock"])
def test_an_inherited_supervisor_is_polled(portable: None, monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path, ends_by: str) -> None:
    """Its end is seen by pid and start time, or (when its pid now names a process of the
    same start second) by its lock, which nobody holds any more."""
    from qex.coordinator import reaper
    from qex.store import jobs

    def no_pidfd(_pid: int) -> int:
        raise AssertionError("pidfd under portable")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd, raising=False)
    monkeypatch.setattr(reaper, "FOREIGN_POLL_SECS", 0.05)
    gone: list[object] = []
    monkeypatch.setattr(reaper, "supervisor_gone", lambda coord, job: gone.append(job))
    child = subprocess.Popen(["sleep", "30"])
    lock = os.open(tmp_path / jobs.SUPERVISOR_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    job = SimpleNamespace(supervisor_pid=child.pid, supervisor_token=procs.start_token(child.pid),
                          record=SimpleNamespace(supervisor_pid=child.pid), dir=tmp_path)
    coord = SimpleNamespace(stopping=False)

    async def main() -> None:
        reaper.watch_foreign(coord, job)  # type: ignore[arg-type]
        await asyncio.sleep(0.2)
        assert gone == []
        if ends_by == "lock":
            os.close(lock)
        else:
            child.kill()
            child.wait()
        deadline = time.monotonic() + 20
        while not gone and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    try:
        asyncio.run(main())
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if ends_by == "exit":
            os.close(lock)
    assert gone == [job]


def test_the_supervisor_reaps_the_job_without_waitid(
        portable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from qex.supervisor.children import Reaper

    def no_waitid(*_: Any) -> Any:
        raise AssertionError("waitid under portable")

    monkeypatch.setattr(os, "waitid", no_waitid, raising=False)
    child = subprocess.Popen(["sh", "-c", "exit 3"], start_new_session=True)
    reaper = Reaper()
    deadline = time.monotonic() + 20
    status = None
    while status is None and time.monotonic() < deadline:
        status = reaper.reap(child.pid)
        time.sleep(0.02)
    assert status is not None and os.WEXITSTATUS(status) == 3
    child.returncode = 3  # reaped here, not by Popen


@linux_only
def test_same_process_under_linux_reads_state_and_start_time_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One read of /proc/<pid>/stat decides: a zombie is dead, a start time must match."""
    monkeypatch.delenv(host.ENV_VAR, raising=False)
    me = os.getpid()
    token = procs.start_token(me)
    assert token is not None
    reads: list[int] = []
    real = procs._linux_stat

    def counted(pid: int) -> list[str] | None:
        reads.append(pid)
        return real(pid)

    monkeypatch.setattr(procs, "_linux_stat", counted)
    assert procs.same_process(me, token)
    assert reads == [me]
    assert not procs.same_process(me, str(int(token) + 1))
    child = subprocess.Popen(["true"])
    child_stat = real(child.pid)
    try:
        deadline = time.monotonic() + 20
        while not procs.is_zombie(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert procs.is_zombie(child.pid)
        os.kill(child.pid, 0)  # a zombie still answers kill(pid, 0)
        assert child_stat is not None
        assert not procs.same_process(child.pid, child_stat[19])  # its own start time
        assert not procs.same_process(child.pid, None)
    finally:
        child.wait()
    assert not procs.same_process(child.pid, None)
