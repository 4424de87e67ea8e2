"""The socket-activated user units of the coordinator, as templates, and their rendering.

The text here is the source of truth; `systemd/qex.socket` and `systemd/qex.service` in the
source tree are the same templates for packagers (a unit test keeps them equal). A wheel
cannot put files where systemd looks, so `qex systemd install` renders these with the real
path of the installed `qex` and the real socket path and writes them for the user.

Placeholders: @SOCKET_PATH@, @EXEC_START@ (the qex program, quoted for systemd) and
@ENVIRONMENT@ (Environment= lines that pin the directories the installing shell used).
"""

from __future__ import annotations

from collections.abc import Mapping

SOCKET_TEMPLATE = """\
# qex coordinator socket (systemd user unit).
# `qex systemd install` writes this file with the placeholders filled in; see docs/systemd.md.
[Unit]
Description=qex coordinator socket

[Socket]
# The same path the qex CLI connects to (Paths.socket_path), so the first command of a
# session starts the coordinator through systemd instead of spawning one itself.
ListenStream=@SOCKET_PATH@
SocketMode=0600
DirectoryMode=0700
FileDescriptorName=qex
Accept=no
# Remove the socket file when the unit stops, so the CLI never finds a dead socket there.
RemoveOnStop=yes

[Install]
WantedBy=sockets.target
"""

SERVICE_TEMPLATE = """\
# qex coordinator (systemd user unit), started by qex.socket on the first connection.
# `qex systemd install` writes this file with the placeholders filled in; see docs/systemd.md.
[Unit]
Description=qex coordinator
Requires=qex.socket
After=qex.socket

[Service]
Type=notify
NotifyAccess=main
ExecStart=@EXEC_START@ daemon --supervised
@ENVIRONMENT@
# Stopping this service, and the coordinator's own exit when it is idle, must never stop a
# job. With a working scope every supervisor lives in its own qex-*.scope, outside this
# unit's cgroup. Without one (enforcement off, or no scope could be made) supervisors are
# children in this cgroup, and the default KillMode=control-group would kill them and their
# jobs. `process` signals the coordinator alone; its supervisors finish their jobs and write
# their records, and the next coordinator adopts them.
KillMode=process
"""


def systemd_quote(word: str) -> str:
    """One ExecStart/Environment word: `%` and `$` doubled, quoted when it holds blanks."""
    text = word.replace("%", "%%").replace("$", "$$")
    if any(ch in text for ch in ' \t"\\\'') or not text:
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def environment_lines(env: Mapping[str, str]) -> str:
    """`Environment=` lines, one per variable, in a stable order."""
    return "\n".join(
        f"Environment={systemd_quote(f'{name}={value}')}" for name, value in sorted(env.items())
    )


def render(template: str, *, socket_path: str, exec_start: list[str],
           environment: Mapping[str, str]) -> str:
    env_text = environment_lines(environment)
    text = (template
            .replace("@SOCKET_PATH@", socket_path.replace("%", "%%"))
            .replace("@EXEC_START@", " ".join(systemd_quote(w) for w in exec_start)))
    if env_text:
        return text.replace("@ENVIRONMENT@", env_text)
    return text.replace("@ENVIRONMENT@\n", "")


UNITS = {"qex.socket": SOCKET_TEMPLATE, "qex.service": SERVICE_TEMPLATE}
