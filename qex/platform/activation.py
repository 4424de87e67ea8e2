"""Socket activation and readiness: the systemd side of the coordinator's start.

`listen_socket()` adopts the listening socket that `qex.socket` hands over (LISTEN_FDS /
LISTEN_PID, fd 3 on); `notify()` sends sd_notify datagrams (READY=1, STATUS=...). Both are
no-ops without systemd, so the self-spawned coordinator uses the same code.
"""

from __future__ import annotations

import os
import socket
from collections.abc import MutableMapping

SD_LISTEN_FDS_START = 3


def listen_socket(env: MutableMapping[str, str] | None = None) -> socket.socket | None:
    """The inherited listening socket, or None when systemd handed none to this process.

    The variables are removed from the environment so that supervisors started later do not
    believe the fds are theirs.
    """
    env = os.environ if env is None else env
    try:
        pid = int(env.get("LISTEN_PID", "0"))
        count = int(env.get("LISTEN_FDS", "0"))
    except ValueError:
        return None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(name, None)
    if pid != os.getpid() or count < 1:
        return None
    fd = SD_LISTEN_FDS_START
    os.set_inheritable(fd, False)
    sock = socket.socket(fileno=fd)
    if sock.family != socket.AF_UNIX:
        sock.detach()
        return None
    return sock


def notify(message: str, env: MutableMapping[str, str] | None = None) -> bool:
    """Send one sd_notify message; False when there is no NOTIFY_SOCKET or it failed."""
    env = os.environ if env is None else env
    address = env.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode("utf-8"))
        return True
    except OSError:
        return False
