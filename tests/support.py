"""Helpers shared by the end-to-end and the VM test fixtures (on sys.path via pyproject)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The folders of an isolated state, each pointed at by one variable of `isolated_env`.
STATE_DIRS = ("home", "config", "state", "run", "peers", "tmp")


def isolated_env(prefix: str, settings: dict[str, str], *, make: tuple[str, ...] = STATE_DIRS,
                 dir: str = "/tmp") -> tuple[Path, dict[str, str]]:
    """A new short root in `dir` (the socket path must fit `sun_path`; /tmp unless a test
    wants another disk, such as a tmpfs) and an environment that points every path of qex
    into it, so no test touches a real state or another test's.

    The caller's own `QEX_*` and `XDG_*` variables are dropped, except `QEX_PLATFORM`:
    tests/run.sh runs the end-to-end suite a second time with it, and the qex under test
    (with the coordinator and the supervisors it starts) must take the portable paths then.
    Everything else is kept, `COVERAGE_PROCESS_CONFIG` above all: under `pytest --cov` it
    makes every qex process of the test measure itself (see [tool.coverage.run]).
    `settings` adds the suite's own knobs; the folders in `make` are created 0700.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QEX_", "XDG_"))}
    if os.environ.get("QEX_PLATFORM"):
        env["QEX_PLATFORM"] = os.environ["QEX_PLATFORM"]
    env.update({
        "HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_RUNTIME_DIR": str(root / "run"),
        "QEX_PEERS_DIR": str(root / "peers"),
        "TMPDIR": str(root / "tmp"),
        "NO_COLOR": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **settings,
    })
    for sub in make:
        (root / sub).mkdir(mode=0o700)
    return root, env


def run_probe(tmp_path: Path, source: str, config: str | None = None) -> Any:
    """Run `source` in a fresh interpreter with a state of its own (`isolated_env`, with
    `config` as its qex.toml); what it wrote as JSON to the path in its `sys.argv[1]`. For
    what must be seen inside one qex process (its modules, its collector), which a test
    cannot change in pytest's own. Its output goes to files, not pipes: a coordinator's
    fork server may outlive it."""
    root, env = isolated_env("qxp", {})
    if config is not None:
        (root / "config" / "qex.toml").write_text(config)
    out, err = tmp_path / "found.json", tmp_path / "stderr.txt"
    try:
        with open(err, "wb") as stderr:
            subprocess.run([sys.executable, "-c", source, str(out)], env=env, cwd=root,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=stderr, timeout=60, check=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert out.exists(), err.read_text()
    return json.loads(out.read_text())


def kill_job_groups(state: Path) -> None:
    """SIGKILL the process group of every job and supervisor recorded under `state`.

    A test that failed half-way can leave a job running; it must not outlive the test, and
    it must not be found by the next test's coordinator.
    """
    jobs = state / "jobs"
    if not jobs.is_dir():
        return
    for status in jobs.glob("*/status.json"):
        try:
            data = json.loads(status.read_text())
        except (OSError, ValueError):
            continue
        for key in ("pid", "supervisor_pid", "last_pid"):
            pid = data.get(key)
            if not isinstance(pid, int) or pid <= 1:
                continue
            if not (_started_under(pid, state) or _started_since(pid, state.parent)):
                continue  # a pid from a record may name another process by now
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


def _started_since(pid: int, made: Path) -> bool:
    """True when the process `pid` started after the folder `made` was created: a process of
    this test, not one whose pid a record names from before. Pids wrap around at 32,768 on
    the development machine, so a stale pid in a record can name any process by then, the
    test runner's own process group among them (the runner died that way once)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of stat: the start time, in ticks after boot
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        born = made.stat().st_mtime
    except (OSError, ValueError, IndexError, StopIteration):
        return False
    # `btime` is in whole seconds: a process is counted as the test's when it started no
    # earlier than a second before the folder.
    return boot + ticks / os.sysconf("SC_CLK_TCK") >= born - 1.0


def _started_under(pid: int, state: Path) -> bool:
    """True when the process `pid` has this state directory in its environment: a job whose
    record was closed without it (a recovery that could not stop a job of an earlier boot)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return str(state.parent).encode() in environ


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    """Until `pid` is gone, reaped or a zombie (PID 1 here does not reap orphans) whose
    other threads have ended too.

    The first thread of a process killed with SIGKILL may be a zombie while its other
    threads (a coordinator's sync helpers) still end, and the descriptors they share stay
    open until the last one has: a command that connected then was taken into the dead
    coordinator's backlog and reset (the kill -9 fault test failed that way about once in
    twenty runs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:
            pass
        if _is_zombie(pid):
            return
        time.sleep(0.02)
    raise AssertionError(f"the process {pid} did not end")


def _is_zombie(pid: int) -> bool:
    """A zombie with no thread left but the first: nothing it held is open any more."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            if handle.read().rsplit(")", 1)[1].split()[0] != "Z":
                return False
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except (OSError, IndexError):
        return True


def paths_with_config(tmp_path: Path, text: str) -> Any:
    """`Paths` of a private state under `tmp_path`, with a config file holding `text`."""
    from qex.store.paths import Paths

    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
                            "XDG_CONFIG_HOME": str(tmp_path / "config")})
    paths.config_file.parent.mkdir(parents=True)
    paths.config_file.write_text(text)
    return paths


def request_lines(conn: Any) -> Any:
    """Each JSON line a client sends on `conn` (a connected socket), until it closes: what a
    stand-in coordinator in a unit test reads."""
    buffer = b""
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


class SocketCoordinator:
    """A stand-in coordinator on a Unix socket, for the unit tests of a client's
    connections: it answers each request line with `answer(message)` (`{"result": "ok"}` by
    default), keeps the requests of each connection it accepted, in order, and closes a
    connection after `close_after` answers when that is set."""

    def __init__(self, path: Path | str,
                 answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None, *,
                 close_after: int | None = None) -> None:
        self.path = Path(path)
        self.answer = answer or (lambda _message: {"result": "ok"})
        self.close_after = close_after
        #: The requests of each accepted connection.
        self.connections: list[list[dict[str, Any]]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen(8)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [message for requests in self.connections for message in requests]

    def ops(self) -> list[list[str]]:
        """The `op` of each request, by connection."""
        return [[str(message.get("op")) for message in requests] for requests in self.connections]

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            requests: list[dict[str, Any]] = []
            self.connections.append(requests)
            with conn:
                for handled, message in enumerate(request_lines(conn), 1):
                    requests.append(message)
                    conn.sendall(json.dumps(self.answer(message)).encode() + b"\n")
                    if self.close_after is not None and handled >= self.close_after:
                        break

    def close(self) -> None:
        try:
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the thread's accept on Linux
        except OSError:
            pass
        self.server.close()
        self.thread.join(5)
