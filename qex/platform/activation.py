"""Socket activation and readiness: the systemd side of the coordinator's start.

`listen_socket()` adopts the listening socket that `qex.socket` hands over (LISTEN_FDS /
LISTEN_PID, fd 3 on); `notify()` sends sd_notify datagrams (READY=1, STATUS=...). Both are
no-ops without systemd, so the self-spawned coordinator uses the same code.

An adopted socket belongs to systemd: the coordinator must neither unlink its path nor call
shutdown() on it (systemd keeps listening on its own copy and starts the next coordinator).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the forked fork server reads LISTEN_VARS: no heavy import here
if TYPE_CHECKING:
    import socket
    from collections.abc import MutableMapping

SD_LISTEN_FDS_START = 3
#: `FileDescriptorName=` in systemd/qex.socket.
FD_NAME = "qex"
#: What systemd sets for a socket-activated process.
LISTEN_VARS = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def listen_socket(env: MutableMapping[str, str] | None = None) -> socket.socket | None:
    """The inherited listening socket, or None when systemd handed none to this process.

    The variables are removed from the environment in every case, and every passed fd is
    made close-on-exec, so supervisors started later neither believe the fds are theirs
    nor keep the listening socket open after the coordinator is gone.
    """
    env = os.environ if env is None else env
    raw = {name: env.get(name, "") for name in LISTEN_VARS}
    for name in LISTEN_VARS:
        env.pop(name, None)
    try:
        pid = int(raw["LISTEN_PID"] or "0")
        count = int(raw["LISTEN_FDS"] or "0")
    except ValueError:
        return None
    if pid != os.getpid() or count < 1:
        return None
    fds = list(range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + count))
    for fd in fds:
        try:
            os.set_inheritable(fd, False)
        except OSError:
            continue
    names = raw["LISTEN_FDNAMES"].split(":") if raw["LISTEN_FDNAMES"] else []
    chosen = fds[0]
    if FD_NAME in names and names.index(FD_NAME) < count:
        chosen = fds[names.index(FD_NAME)]
    import socket

    try:
        sock = socket.socket(fileno=chosen)
    except OSError:
        return None
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
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
    elif not address.startswith("/"):
        return False  # vsock: and other transports are not for a user service
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode("utf-8"))
        return True
    except OSError:
        return False

