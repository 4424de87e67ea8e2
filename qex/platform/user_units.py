"""The socket-activated user units of the coordinator and the admin drop-in, and their
rendering.

The files in `qex/data/systemd/` are the one source: they ship in the wheel as package
data, `qex systemd install` renders them for one user (the real path of this `qex`, the
real socket path, the directories of the installing shell), and `qex systemd export`
renders them as a distribution package ships them (`/usr/bin/qex`, the socket under each
user's home). The Debian, RPM and Arch recipes call `export`; none keeps a copy.

Placeholders: @SOCKET_PATH@, @EXEC_START@ (the qex program, quoted for systemd) and
@ENVIRONMENT@ (Environment= lines that pin the directories the installing shell used).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

#: Where the unit files and the drop-in live inside the installed package.
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "systemd"
SOCKET_UNIT = "qex.socket"
SERVICE_UNIT = "qex.service"
DROP_IN_FILE = "qex-delegate.conf"
#: Where an administrator installs the drop-in.
DROP_IN_TARGET = "/etc/systemd/system/user@.service.d/qex-delegate.conf"
#: The socket of a packaged unit: the path the CLI computes with the default XDG variables,
#: with %h (the user's home) in a form systemd expands.
PACKAGED_SOCKET = "%h/.local/state/qex/run/qex.sock"
PACKAGED_PROGRAM = "/usr/bin/qex"


def template(name: str) -> str:
    """The text of a shipped file (`qex.socket`, `qex.service` or the drop-in)."""
    return (DATA_DIR / name).read_text(encoding="utf-8")


def drop_in_path() -> Path:
    return DATA_DIR / DROP_IN_FILE


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


def render(text: str, *, socket_path: str, exec_start: list[str],
           environment: Mapping[str, str], socket_specifiers: bool = False) -> str:
    """Fill the placeholders of a unit template. With `socket_specifiers`, `%` in the socket
    path is left for systemd to expand (`%h`); otherwise it is taken literally."""
    env_text = environment_lines(environment)
    listen = socket_path if socket_specifiers else socket_path.replace("%", "%%")
    text = (text
            .replace("@SOCKET_PATH@", listen)
            .replace("@EXEC_START@", " ".join(systemd_quote(w) for w in exec_start)))
    if env_text:
        return text.replace("@ENVIRONMENT@", env_text)
    return text.replace("@ENVIRONMENT@\n", "")


def for_user(*, socket_path: str, exec_start: list[str],
             environment: Mapping[str, str]) -> dict[str, str]:
    """The two units as `qex systemd install` writes them for one user."""
    return {
        name: render(template(name), socket_path=socket_path, exec_start=exec_start,
                     environment=environment)
        for name in (SOCKET_UNIT, SERVICE_UNIT)
    }


def packaged(program: str = PACKAGED_PROGRAM) -> dict[str, str]:
    """The two units as a distribution package installs them in /usr/lib/systemd/user."""
    return {
        name: render(template(name), socket_path=PACKAGED_SOCKET, exec_start=[program],
                     environment={}, socket_specifiers=True)
        for name in (SOCKET_UNIT, SERVICE_UNIT)
    }
