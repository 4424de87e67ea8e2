"""Socket activation and sd_notify, with real sockets and a child process that plays the
service: systemd's side of the protocol is a few environment variables and fd 3."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from qex.platform.activation import listen_socket, notify

CHILD = r"""
import os, socket, sys
from qex.platform.activation import listen_socket
path, names, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path); listener.listen(1)
other = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
# Park both above the fds systemd would use, then place them as systemd does.
high_listener, high_other = os.dup(listener.fileno()) + 20, os.dup(other.fileno()) + 20
os.dup2(listener.fileno(), high_listener); os.dup2(other.fileno(), high_other)
listener.close(); other.close()
os.dup2(high_other, 3)
os.dup2(high_listener, 3 + count - 1)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS=str(count))
if names:
    os.environ["LISTEN_FDNAMES"] = names
sock = listen_socket()
left = [k for k in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES") if k in os.environ]
if sock is None:
    print("none", left); sys.exit(0)
print(sock.fileno(), sock.family == socket.AF_UNIX, os.get_inheritable(sock.fileno()), left)
"""


def run_child(tmp_path: Path, names: str, count: int) -> str:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "s.sock"), names, str(count)],
                         capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


def test_adopts_the_named_socket(tmp_path: Path) -> None:
    # fd 3 is another socket; the named one (fd 4) is the coordinator's.
    assert run_child(tmp_path, "other:qex", 2) == "4 True False []"


def test_unnamed_single_socket_is_fd_3(tmp_path: Path) -> None:
    assert run_child(tmp_path, "", 1) == "3 True False []"


def test_wrong_type_is_refused(tmp_path: Path) -> None:
    # Only a datagram socket at the named place: not a coordinator socket.
    assert run_child(tmp_path, "qex:other", 2) == "none []"


def test_other_pid_is_ignored_and_vars_are_cleared() -> None:
    env = {"LISTEN_PID": str(os.getpid() + 100000), "LISTEN_FDS": "1", "LISTEN_FDNAMES": "qex"}
    assert listen_socket(env) is None
    assert env == {}
    garbage = {"LISTEN_PID": "x", "LISTEN_FDS": "1"}
    assert listen_socket(garbage) is None and garbage == {}


def test_notify_sends_datagrams(tmp_path: Path) -> None:
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(str(path))
        env = {"NOTIFY_SOCKET": str(path)}
        assert notify("READY=1\nSTATUS=serving 0 jobs", env)
        assert server.recv(200) == b"READY=1\nSTATUS=serving 0 jobs"
        assert notify("STOPPING=1", env)
        assert server.recv(200) == b"STOPPING=1"


def test_notify_abstract_namespace() -> None:
    name = f"qex-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind("\0" + name)
        assert notify("STATUS=x", {"NOTIFY_SOCKET": "@" + name})
        assert server.recv(100) == b"STATUS=x"


def test_notify_without_systemd_is_a_no_op(tmp_path: Path) -> None:
    assert notify("READY=1", {}) is False
    assert notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "absent")}) is False
    assert notify("READY=1", {"NOTIFY_SOCKET": "vsock:2:1234"}) is False
