"""The pieces of a cold start (no coordinator yet): the light paths of `qex.store.where`,
the spawn without `subprocess`, the coordinator forked from the command and detached as a
new program would be, the fork server forked once the config is read and kept only where
the config uses it, one parse per config content, the random ids, and the wire's bounded
request. No timing: only what each piece does."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import isolated_env, paths_with_config, wait_gone

from qex.client import starting
from qex.client.errors import Unreachable
from qex.core.config import Config, EnforceSection
from qex.core.names import is_uuid, new_id
from qex.platform import detach
from qex.platform.detect import Capabilities
from qex.store import config_file
from qex.store import where as lean_where
from qex.store.paths import Paths
from qex.store.where import Where, socket_path, state_dir

# -- where: Paths without pathlib ---------------------------------------------------------

PARTS = st.sampled_from(["", "/", "//", ".", "..", "a", "b c", "é", "x/", "./y", "/z/..", "q" * 30])
VALUES = st.lists(PARTS, max_size=4).map("".join)


@settings(max_examples=300, deadline=None)
@given(home=st.one_of(st.none(), VALUES), state=st.one_of(st.none(), VALUES),
       config=st.one_of(st.none(), VALUES))
def test_where_names_what_paths_names_or_leaves_it_to_paths(
        home: str | None, state: str | None, config: str | None) -> None:
    env = {name: value for name, value in (("HOME", home), ("XDG_STATE_HOME", state),
                                           ("XDG_CONFIG_HOME", config)) if value is not None}
    named = lean_where.config_file(env)
    if named is not None:
        assert named == str(Paths.from_env(env).config_file)
    where = Where.from_env(env)
    if where is None:
        return  # the full Paths decides (or refuses); nothing to hold against
    paths = Paths.from_env(env)
    assert where.state_dir == str(paths.state_dir)
    assert where.run_dir == str(paths.run_dir)
    assert where.socket_path == str(paths.socket_path) == socket_path(env)
    assert where.socket_dir == str(paths.socket_dir)
    assert where.spawn_lock == str(paths.spawn_lock)
    assert where.daemon_log == str(paths.daemon_log)
    assert state_dir(env) == where.state_dir
    same = Where.of(paths)
    assert (same.socket_path, same.spawn_lock, same.daemon_log) == (
        where.socket_path, where.spawn_lock, where.daemon_log)


@pytest.mark.parametrize("env", [
    {}, {"HOME": ""}, {"XDG_STATE_HOME": "/s"}, {"HOME": "/h", "XDG_STATE_HOME": "/" + "d" * 120},
    {"HOME": "/h", "XDG_STATE_HOME": "."}, {"HOME": "/h", "XDG_STATE_HOME": "./s"},
    {"HOME": "/h", "XDG_STATE_HOME": "/s/"}, {"HOME": "//h"},
])
def test_where_leaves_unusual_environments_to_paths(env: dict[str, str]) -> None:
    assert Where.from_env(env) is None


@pytest.mark.parametrize(("env", "named"), [
    ({"HOME": "/h"}, "/h/.config/qex.toml"),
    ({"HOME": "/h", "XDG_CONFIG_HOME": "/c"}, "/c/qex.toml"),
    ({"XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s"}, "/c/qex.toml"),
    ({"HOME": "/h", "XDG_CONFIG_HOME": ""}, "/h/.config/qex.toml"),
    ({"XDG_CONFIG_HOME": "/c"}, None),  # no place for the records: Paths refuses
    ({"HOME": "/h", "XDG_CONFIG_HOME": "/c/"}, None),  # pathlib drops the slash
    ({"HOME": "h", "XDG_STATE_HOME": "/s"}, "h/.config/qex.toml"),
    ({"HOME": "./h", "XDG_STATE_HOME": "/s"}, None),
])
def test_the_config_file_is_named_as_paths_names_it(env: dict[str, str],
                                                     named: str | None) -> None:
    assert lean_where.config_file(env) == named
    if named is not None:
        assert str(Paths.from_env(env).config_file) == named


# -- the spawn without subprocess, and the daemon's own detachment ---------------------------

REPORT = ("import os, sys; fds = sorted(int(f) for f in os.listdir('/proc/self/fd')); "
          "print(os.getcwd(), os.getsid(0) == os.getpid(), os.readlink('/proc/self/fd/0'), "
          "fds, sep='|', flush=True); sys.exit(int(sys.argv[1]))")
DETACHED_REPORT = ("import os, sys; from qex.platform.detach import detach_from_caller; "
                   "detach_from_caller(); " + REPORT.removeprefix("import os, sys; "))


def _poll_until_done(child: detach.Spawned) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None:
            return code
        time.sleep(0.01)
    raise AssertionError("the spawned child did not end")


def _spawn(tmp_path: Path, code: str, *args: str,
           env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Spawn `python -c code args` detached, with an inheritable pipe of ours open (as a
    descriptor from a command's own parent); its exit code and the fields it printed."""
    log_path = tmp_path / "daemon.log"
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        child = detach.Spawned(detach.spawn_detached([sys.executable, "-c", code, *args], log,
                                                     env))
    finally:
        os.close(log)
        os.close(write_end)
    os.close(read_end)
    code_ = _poll_until_done(child)
    assert child.poll() == code_
    return code_, log_path.read_text().strip().split("|")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_detached_spawn_has_a_session_and_no_descriptor_of_ours(tmp_path: Path) -> None:
    """A new session, stdin from /dev/null, output to the log; what is not close-on-exec
    is inherited (posix_spawn cannot close it), and the directory is ours."""
    code, (cwd, session, stdin, fds) = _spawn(tmp_path, REPORT, "3")
    assert code == 3
    assert cwd == os.getcwd() and session == "True" and stdin == "/dev/null"
    assert fds != "[0, 1, 2, 3]"  # the inheritable pipe came along: the daemon drops it


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_daemon_detaches_itself_from_its_caller(tmp_path: Path) -> None:
    """`detach_from_caller`, the coordinator's first act: directory /, and no descriptor
    but 0 to 2 (3 is the listing's own)."""
    code, (cwd, session, stdin, fds) = _spawn(tmp_path, DETACHED_REPORT, "4",
                                              env={**os.environ, "PYTHONSAFEPATH": "1"})
    assert code == 4
    assert (cwd, session, stdin, fds) == ("/", "True", "/dev/null", "[0, 1, 2, 3]")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_socket_activated_daemon_keeps_what_systemd_passed() -> None:
    """LISTEN_FDS for this very pid: those descriptors stay, the rest go."""
    script = ("import os; os.dup2(os.open('/dev/null', os.O_RDONLY), 3); "
              "os.dup2(os.open('/dev/null', os.O_RDONLY), 4); "
              "os.set_inheritable(3, True); os.set_inheritable(4, True); "
              "os.environ.update(LISTEN_FDS='1', LISTEN_PID=str(os.getpid())); "
              "from qex.platform.detach import detach_from_caller; detach_from_caller(); "
              "print(sorted(int(f) for f in os.listdir('/proc/self/fd')))")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True, cwd="/").stdout.strip()
    assert shown == "[0, 1, 2, 3, 4]"  # 4 is the listing's own


SPAWN_FROM_CLOSED_STDIN = """
import os, sys
from qex.platform import detach
os.close(0)
log = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
assert log == 0
child = detach.Spawned(detach.spawn_detached(
    [sys.executable, "-c", "import os; print(os.readlink('/proc/self/fd/0'))"], log))
while child.poll() is None:
    pass
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_spawn_from_a_starter_without_stdin_still_writes_to_the_log(tmp_path: Path) -> None:
    """The starter's closed stdin made the log descriptor 0: the child's output still goes to
    the log, and its stdin is /dev/null."""
    log = tmp_path / "daemon.log"
    log.touch()
    subprocess.run([sys.executable, "-c", SPAWN_FROM_CLOSED_STDIN, str(log)], check=True,
                   timeout=60)
    assert log.read_text().strip() == "/dev/null"


def test_a_spawn_that_cannot_exec_raises_as_popen_does(tmp_path: Path) -> None:
    log = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        with pytest.raises(OSError) as caught:
            detach.spawn_detached([str(tmp_path / "no-such-program")], log)
        with pytest.raises(FileNotFoundError):
            detach.spawn_detached(["qex-no-such-program"], log, {"PATH": str(tmp_path)})
    finally:
        os.close(log)
    assert caught.value.errno == errno.ENOENT


def test_a_spawned_child_killed_by_a_signal_polls_as_minus_the_signal(tmp_path: Path) -> None:
    log = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        child = detach.Spawned(detach.spawn_detached(
            [sys.executable, "-c", "import time; time.sleep(60)"], log))
    finally:
        os.close(log)
    assert child.poll() is None
    os.kill(child.pid, 9)
    assert _poll_until_done(child) == -9


def test_a_coordinator_that_cannot_be_spawned_says_why(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root, env = isolated_env("qxs", {})
    try:
        where = Where.from_env(env)
        assert where is not None
        os.makedirs(where.run_dir)
        monkeypatch.setattr(sys, "executable", str(root / "gone" / "python"))
        with pytest.raises(Unreachable) as caught:
            starting.spawn_coordinator(where)
        assert caught.value.message == (
            "qex could not start a coordinator (No such file or directory); check that "
            f"{root / 'gone' / 'python'} still exists")
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def test_the_ceiling_needs_no_units_module_when_unset() -> None:
    assert starting.ceiling_from_env({}) == starting.DEFAULT_CEILING
    assert starting.ceiling_from_env({"QEX_COORDINATOR_CEILING_SECS": "20"}) == 20.0
    assert starting.ceiling_from_env({"QEX_COORDINATOR_CEILING_SECS": "0"}) == 300.0


# -- the fork server: started first, kept where it is used ---------------------------------

def _caps(backend: str | None, possible: bool = True) -> Capabilities:
    return Capabilities(os="linux", scope_backend=backend, enforcement_possible=possible)


@pytest.mark.parametrize(("mode", "use_systemd", "caps", "env", "kept"), [
    ("off", True, None, {}, True),
    ("soft", False, None, {}, True),
    ("hard", False, None, {}, True),
    ("soft", True, _caps("pystemd"), {}, True),
    ("hard", True, _caps("pystemd"), {}, True),
    ("soft", True, _caps("pystemd"), {"QEX_SCOPE_FORK": "0"}, False),
    ("soft", True, _caps("systemd-run"), {}, False),
    ("soft", True, _caps(None, possible=False), {}, False),
])
def test_the_fork_server_is_wanted_where_a_launch_uses_it(
        monkeypatch: pytest.MonkeyPatch, mode: str, use_systemd: bool,
        caps: Capabilities | None, env: dict[str, str], kept: bool) -> None:
    from qex.coordinator import forking
    from qex.platform import detect

    asked: list[bool] = []

    def fake_detect(use_systemd: bool = True) -> Capabilities:
        asked.append(use_systemd)
        assert caps is not None, "no scope wanted: nothing to detect"
        return caps

    monkeypatch.setattr(detect, "detect", fake_detect)
    config = Config(enforce=EnforceSection(mode=mode, use_systemd=use_systemd))  # type: ignore[arg-type]
    assert forking.wanted(config, env) is kept
    assert asked in ([], [True])


def test_the_launch_takes_a_held_supervisor_by_the_same_rule() -> None:
    from qex.platform.launch import forks_held

    assert forks_held(_caps("pystemd"), {})
    assert not forks_held(_caps("pystemd"), {"QEX_SCOPE_FORK": "0"})
    assert not forks_held(_caps("systemd-run"), {})
    assert not forks_held(_caps("pystemd", possible=False), {})


@pytest.fixture
def fork_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("QEX_CHAIN_TRACE", raising=False)
    return tmp_path


FORKED_REPORT = """
import os, signal, sys
from qex.platform import detach
signal.signal(signal.SIGINT, lambda *a: None)     # a waiting command's handler
signal.signal(signal.SIGTERM, lambda *a: None)
signal.signal(signal.SIGHUP, signal.SIG_IGN)      # nohup's: stays ignored, as across exec
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
if sys.argv[2] == "stdin closed":
    os.close(0)                                   # the log then opens as descriptor 0
log = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
kept = os.open("/dev/null", os.O_RDONLY)          # a caller's descriptor, not close-on-exec
pid = detach.fork_detached(log)
if pid == 0:
    fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
    print(os.getcwd(), os.getsid(0) == os.getpid(), os.readlink("/proc/self/fd/0"), fds,
          signal.getsignal(signal.SIGINT) is signal.default_int_handler,
          signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
          signal.getsignal(signal.SIGHUP) is signal.SIG_IGN,
          sorted(signal.pthread_sigmask(signal.SIG_BLOCK, set())), sep="|", flush=True)
    os._exit(5)
os.close(log)
child = detach.Spawned(pid)
while child.poll() is None:
    signal.sigtimedwait([], 0.01)
print(child.returncode)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("caller", ["stdin open", "stdin closed"])
def test_a_forked_daemon_is_detached_as_a_spawned_one_detaches_itself(tmp_path: Path,
                                                                      caller: str) -> None:
    """`fork_detached`: its own session, stdin from /dev/null, output on the log (also when
    the caller's closed stdin made the log descriptor 0), directory /, no descriptor of the
    caller's, the caller's handlers and blocked signals gone (an ignored signal stays
    ignored), and the parent sees its exit code."""
    log = tmp_path / "daemon.log"
    log.touch()
    shown = subprocess.run([sys.executable, "-c", FORKED_REPORT, str(log), caller],
                           cwd=tmp_path, capture_output=True, text=True, check=True,
                           timeout=60).stdout
    assert shown.strip() == "5"
    cwd, session, stdin, fds, sigint, sigterm, sighup, blocked = log.read_text().strip().split(
        "|")
    assert (cwd, session, stdin, fds) == ("/", "True", "/dev/null", "[0, 1, 2, 3]")
    assert (sigint, sigterm, sighup, blocked) == ("True", "True", "True", "[]")


OUT_OF_DESCRIPTORS = """
import os, resource, sys
from qex.platform import detach
log = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
held = []
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
while True:
    try:
        held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        break
try:
    pid = detach.fork_detached(log)
except OSError:  # as the command's own handler would take it, in whichever process
    print("the caller's handler ran in", os.getpid(), flush=True)
    raise SystemExit(0)
print("the caller's code ran in", "the child" if pid == 0 else "the parent", flush=True)
if pid:
    child = detach.Spawned(pid)
    while child.poll() is None:
        pass
    print(child.returncode)
"""


def test_a_fork_that_cannot_detach_never_runs_the_callers_code(tmp_path: Path) -> None:
    """Out of descriptors, the child cannot open /dev/null: it exits with 1 at once instead
    of going back into the command (which would release the command's spawn lock, say)."""
    log = tmp_path / "daemon.log"
    log.touch()
    shown = subprocess.run([sys.executable, "-c", OUT_OF_DESCRIPTORS, str(log)],
                           capture_output=True, text=True, check=True, timeout=60).stdout
    assert shown.splitlines() == ["the caller's code ran in the parent", "1"]
    assert "the caller's" not in log.read_text()  # the child's output would be here


def _fd_targets(pid: int) -> dict[int, str]:
    targets = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            pass
    return targets


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the fork server needs pidfd")
def test_a_forked_server_answers_on_its_pipes_and_holds_nothing_of_the_coordinator(
        fork_env: Path) -> None:
    """Forked from this process: a session of its own, named `qex supervisor --forkserver`
    in `ps`, its pipes as stdin and stdout, the log as stderr, and no other descriptor of
    ours (a kept copy of the request pipe's other end would hide the coordinator's exit
    from it); it answers a request and exits when the pipe closes."""
    from qex.coordinator.forking import ForkServer

    marker_read, marker_write = os.pipe()
    server = ForkServer(fork_env / "daemon.log")
    server.start_forked()
    proc = server._proc
    assert proc is not None and server.pid is not None
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"bogus\n")
        line = server._read_line(proc.stdout.fileno())
        assert line is not None and line.startswith(b"error "), line
        with open(f"/proc/{server.pid}/cmdline", "rb") as handle:
            assert handle.read().split(b"\0")[0] == b"qex supervisor --forkserver"
        assert os.getsid(server.pid) == server.pid
        targets = _fd_targets(server.pid)
        ours = {os.readlink(f"/proc/self/fd/{fd}") for fd in (marker_read, marker_write)}
        assert targets[0].startswith("pipe:") and targets[1].startswith("pipe:")
        assert targets[2] == str(fork_env / "daemon.log")
        assert not ours & set(targets.values())
        assert all(target.startswith("socket:") for fd, target in targets.items() if fd > 2)
    finally:
        os.close(marker_read)
        os.close(marker_write)
        server.close()
    assert proc.wait() == 0
    proc.stdout.close()


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the fork server needs pidfd")
def test_a_forked_server_that_is_not_used_is_stopped_and_can_start_again(
        fork_env: Path) -> None:
    """Stopped when the config does not use it; a later job that wants one starts it again
    as a new program (the coordinator may have threads by then)."""
    from qex.coordinator.forking import Forked, ForkServer

    server = ForkServer(fork_env / "daemon.log")
    server.start_forked()
    first = server.pid
    assert first is not None and isinstance(server._proc, Forked)
    server.stop_unused()
    assert server.pid is None
    wait_gone(first)
    server.warm()
    try:
        assert server.pid is not None and server.pid != first
        assert not isinstance(server._proc, Forked)
    finally:
        server.close()
        proc = server._proc
        if proc is not None:
            proc.wait(timeout=20)
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()


def test_a_fork_without_its_log_directory_is_not_final(fork_env: Path) -> None:
    from qex.coordinator.forking import ForkServer

    server = ForkServer(fork_env / "not-yet" / "daemon.log")
    server.start_forked()
    assert server.pid is None
    if hasattr(os, "pidfd_open"):
        assert not server._broken  # `warm` tries again once the directory is there


class _Recorder:
    """Stands in for ForkServer in `main.run`: the calls, in order."""

    calls: ClassVar[list[str]] = []

    def __init__(self, log_path: Path) -> None:
        _Recorder.calls = ["new"]

    def start_forked(self) -> None:
        self.calls.append("start_forked")

    def warm(self) -> None:
        self.calls.append("warm")

    def stop_unused(self) -> None:
        self.calls.append("stop_unused")


@pytest.fixture
def coordinator_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Paths]:
    root, env = isolated_env("qxm", {})
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "TMPDIR"):
        monkeypatch.setenv(name, env[name])
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield Paths.from_env(env)
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(("config", "calls", "code"), [
    ("", ["new", "start_forked", "warm"], 0),
    ('[enforce]\nmode = "soft"\n', ["new", "start_forked", "stop_unused"], 0),
    ("[budget\n", ["new", "stop_unused"], 1),
])
def test_the_coordinator_forks_its_fork_server_after_the_config_and_keeps_it_only_when_used(
        coordinator_env: Paths, monkeypatch: pytest.MonkeyPatch, config: str,
        calls: list[str], code: int) -> None:
    from qex.coordinator import forking, main
    from qex.platform import detect

    monkeypatch.setattr(detect, "detect", lambda use_systemd=True: _caps("systemd-run"))
    monkeypatch.setattr(forking, "ForkServer", _Recorder)
    served: list[bool] = []

    def fake_serve(paths: Paths, config: Config, look: Any, listener: Any,
                   forkserver: Any) -> int:
        served.append(True)
        assert _Recorder.calls[-1] in ("warm", "stop_unused")  # decided before serving
        listener.unlink()
        listener.sock.close()
        return 0

    monkeypatch.setattr(main, "_serve", fake_serve)
    coordinator_env.config_file.parent.mkdir(parents=True, exist_ok=True)
    coordinator_env.config_file.write_text(config)
    assert main.run(coordinator_env) == code
    assert _Recorder.calls == calls
    assert served == ([True] if code == 0 else [])


# -- one parse per config content ------------------------------------------------------------

def test_the_same_config_bytes_are_parsed_once(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    paths = paths_with_config(tmp_path, "[budget]\ncpu = 3\n")
    parses: list[int] = []
    real = config_file.config_from_look

    def counting(look: config_file.Look, path: Path) -> Config:
        parses.append(1)
        return real(look, path)

    monkeypatch.setattr(config_file, "config_from_look", counting)
    monkeypatch.setattr(config_file, "_last_parsed", None)
    config, look = config_file.load_config_and_look(paths)
    assert config.budget.cpu.absolute == 3 and len(parses) == 1
    watcher = config_file.ConfigWatcher(paths, config, first=look)
    assert len(parses) == 1  # the watcher's first look: the same bytes
    assert config_file.parsed_config(config_file.look_at(paths.config_file),
                                     paths.config_file) is config
    assert len(parses) == 1
    paths.config_file.write_text("[budget]\ncpu = 1\n")
    assert config_file.parsed_config(config_file.look_at(paths.config_file),
                                     paths.config_file).budget.cpu.absolute == 1
    assert len(parses) == 2
    assert watcher.check(0.0) is None  # a new content starts to settle, as before


def test_a_watcher_given_an_older_look_still_compares(tmp_path: Path) -> None:
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c"),
                            "XDG_STATE_HOME": str(tmp_path / "s")})
    paths.config_file.parent.mkdir(parents=True)
    paths.config_file.write_text("[budget]\ncpu = 3\n")
    config, look = config_file.load_config_and_look(paths)
    paths.config_file.write_text("[budget]\ncpu = 2\n")
    watcher = config_file.ConfigWatcher(paths, config, first=look)
    assert watcher._installed is None  # the file changed since: nothing counts as in force


# -- ids without the uuid module -------------------------------------------------------------

def test_new_ids_are_version_4_uuids() -> None:
    seen = set()
    for _ in range(2000):
        text = new_id()
        parsed = uuid.UUID(text)
        assert str(parsed) == text and is_uuid(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        seen.add(text)
    assert len(seen) == 2000


# -- the wire's bounded request --------------------------------------------------------------

def _answering(server: socket.socket, reply: bytes | None, delay: float) -> threading.Thread:
    def run() -> None:
        server.recv(1 << 16)
        time.sleep(delay)
        if reply is not None:
            server.sendall(reply)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("reply", "delay", "expected"), [
    (b'{"result":"status","status":{"state":"completed"}}\n', 0.0,
     {"result": "status", "status": {"state": "completed"}}),
    (b'{"result":"status"}\n', 0.5, None),  # later than asked for
    (None, 0.0, None),  # nothing comes
    (b'{"a":1}\n{"b":2}\n', 0.0, None),  # two lines: not the one answer
    (b"not json\n", 0.0, None),
])
def test_a_bounded_request_gives_its_answer_or_none(reply: bytes | None, delay: float,
                                                    expected: dict[str, Any] | None) -> None:
    from qex.cli.wire import Wire

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        thread = _answering(theirs, reply, delay)
        assert Wire(ours).ask({"op": "wait", "id": "x"}, 0.25) == expected
        thread.join(5)
    finally:
        ours.close()
        theirs.close()


def test_a_bounded_request_sees_the_end_of_the_line() -> None:
    from qex.cli.wire import Wire

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.close()
    try:
        assert Wire(ours).ask({"op": "wait", "id": "x"}, 5.0) is None
    finally:
        ours.close()


def test_only_the_qex_program_itself_forks_into_a_coordinator(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller of `main` (a test, an embedder), a process with a thread besides its main
    one, and the portable implementation spawn a new program instead."""
    from qex.cli import main, wire
    from qex.cli.daemon_start import run_forked

    monkeypatch.delenv("QEX_PLATFORM", raising=False)
    monkeypatch.setattr(main, "OWN_PROCESS", False)
    assert wire._fork_target() is None
    monkeypatch.setattr(main, "OWN_PROCESS", True)
    if sys.platform.startswith("linux") and main.single_threaded():  # a plugin may run one
        assert wire._fork_target() is run_forked
    monkeypatch.setenv("QEX_PLATFORM", "portable")
    assert wire._fork_target() is None
    monkeypatch.delenv("QEX_PLATFORM")
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert wire._fork_target() is None
    finally:
        release.set()
        other.join()


# -- the ready pipe: a started coordinator says when its socket listens ----------------------

READY_REPORT = """
import os, select, sys
from qex.cli.daemon_start import run_forked
from qex.client import starting
from qex.store.where import Where
where = Where.from_env(os.environ)
os.makedirs(where.run_dir, mode=0o700, exist_ok=True)
child = starting.spawn_coordinator(where, run_forked if sys.argv[1] == "fork" else None)
readable, _, _ = select.select([child.ready], [], [], 60)
word = os.read(child.ready, 16) if readable else b"(nothing in 60 s)"
outcome, sock, _ = starting.attempt(where, 5.0)
print(word, outcome, flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork is Linux only")
@pytest.mark.parametrize("how", ["fork", "spawn"])
def test_a_started_coordinator_says_on_its_pipe_that_its_socket_listens(how: str) -> None:
    """Forked from the command or spawned as a new program: one line on the ready pipe, and
    the socket takes a connection from then on (the command's request waits in its backlog).
    The pipe's name never reaches the coordinator's environment, so no job inherits it."""
    root, env = isolated_env("qxr", {})
    try:
        shown = subprocess.run([sys.executable, "-c", READY_REPORT, how], env=env,
                               capture_output=True, text=True, timeout=120, check=True)
        assert shown.stdout.strip() == "b'\\n' connected"
        job = subprocess.run([sys.executable, "-m", "qex", "run", "--", "sh", "-c",
                              'echo "${QEX_READY_FD-unset}"; ls /proc/self/fd'],
                             env=env, capture_output=True, text=True, timeout=120, check=True)
        assert job.stdout.split() == ["unset", "0", "1", "2", "3"]  # 3: the listing's own
    finally:
        subprocess.run([sys.executable, "-m", "qex", "coordinator", "stop"], env=env,
                       capture_output=True, timeout=60, check=False)
        import shutil

        shutil.rmtree(root, ignore_errors=True)


KEPT_REPORT = """
import os, sys
from qex.platform import detach
log = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
other = os.open("/dev/null", os.O_RDONLY)          # a caller's descriptor: it goes
read_end, write_end = os.pipe()                    # the ready pipe: its write end stays
pid = detach.fork_detached(log, keep=write_end)
if pid == 0:
    fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
    detach.tell_ready(write_end)
    print(fds, write_end, sep="|", flush=True)
    os._exit(0)
os.close(write_end)
print(os.read(read_end, 16), os.read(read_end, 16))   # its line, then the end of the pipe
while detach.Spawned(pid).poll() is None:
    pass
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_forked_daemon_keeps_only_the_descriptor_it_is_given(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    log.touch()
    shown = subprocess.run([sys.executable, "-c", KEPT_REPORT, str(log)], capture_output=True,
                           text=True, check=True, timeout=60).stdout
    assert shown.strip() == "b'\\n' b''"
    fds, kept = log.read_text().strip().split("|")
    # 3 is the listing's own: the lowest number free once the caller's descriptors closed.
    assert int(kept) > 3 and fds == str([0, 1, 2, 3, int(kept)])


def test_the_ready_descriptor_leaves_the_environment_and_closes_on_exec() -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        env = {detach.READY_FD_VAR: str(write_end), "KEPT": "1"}
        assert detach.take_ready_fd(env) == write_end
        assert env == {"KEPT": "1"}
        assert not os.get_inheritable(write_end)
        assert detach.take_ready_fd(env) is None  # taken once
    finally:
        os.close(read_end)
        os.close(write_end)
    closed = os.open(os.devnull, os.O_RDONLY)
    os.close(closed)
    not_a_pipe = os.open(os.devnull, os.O_RDONLY)
    try:
        for value in ("", "three", "-1", str(closed), str(not_a_pipe)):
            env = {detach.READY_FD_VAR: value}
            assert detach.take_ready_fd(env) is None
            assert env == {}
    finally:
        os.close(not_a_pipe)


def test_telling_a_starter_that_has_gone_is_no_fault() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    detach.tell_ready(write_end)  # EPIPE (Python ignores SIGPIPE): swallowed
    with pytest.raises(OSError):
        os.fstat(write_end)  # closed all the same
    detach.tell_ready(None)


@pytest.mark.parametrize("word", [b"\n", b""])
def test_the_wait_for_the_socket_ends_when_the_child_speaks_or_stops(word: bytes) -> None:
    """A line (the socket listens) or the end of the pipe (the child stopped, or handed
    the work to another coordinator): either ends the pause at once, and the pipe is then
    closed, so the next pauses are plain sleeps until the socket or the child's exit
    code decides."""
    read_end, write_end = os.pipe()
    if word:
        os.write(write_end, word)
    os.close(write_end)
    child = detach.Spawned(os.getpid(), ready=read_end)
    began = time.monotonic()
    starting._pause(child, 120.0)
    assert time.monotonic() - began < 60  # not the whole pause: the pipe ended it
    assert child.ready is None
    with pytest.raises(OSError):
        os.fstat(read_end)
