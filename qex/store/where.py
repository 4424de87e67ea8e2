"""The state dir's run files as plain strings, found from the environment without `pathlib`.

`qex.store.paths.Paths` is the one definition of where qex keeps things, but `pathlib` alone
costs about as much as the interpreter's start-up. The commands that talk to the coordinator
over `qex.cli.wire`, the cold `qex submit` that starts one (`qex.client.starting`) and
`qex config path` need only a few of those paths before anything else, so they find them
here. Each function returns None whenever `Paths` could give a different string (an
environment it refuses, a path that `pathlib` would normalise, a socket path too long for
`sun_path`, which `Paths` replaces with a hashed one); the caller then takes the full
`Paths`. `tests/unit` holds the
two against each other.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from qex.store.paths import Paths

#: The longest socket path that fits `sun_path` on every OS qex runs on (macOS: 104 with NUL).
MAX_SOCKET_PATH = 100


def _plain(path: str) -> bool:
    """True when `pathlib` would print `path` exactly as it is (nothing to normalise)."""
    return (bool(path) and path not in (".", "..") and "//" not in path
            and os.path.normpath(path) == path)


def state_dir(env: Mapping[str, str]) -> str | None:
    """qex's state directory for this environment, as `Paths.from_env` finds it; None when
    only `Paths` can say (no HOME to fall back on, or a path that `pathlib` would normalise)."""
    if not (env.get("XDG_CONFIG_HOME") or env.get("HOME")):
        return None  # Paths refuses this environment; let it say so
    state_home = env.get("XDG_STATE_HOME", "")
    if not state_home:
        home = env.get("HOME", "")
        if not home:
            return None
        state_home = os.path.join(home, ".local", "state")
    if not _plain(state_home):
        return None
    return os.path.join(state_home, "qex")


def config_file(env: Mapping[str, str]) -> str | None:
    """The config file for this environment, as `Paths.from_env` names it (which it need
    not exist); None when only `Paths` can say (see `state_dir`: `Paths` refuses an
    environment with no place for the records before it names the config file)."""
    if state_dir(env) is None:
        return None
    config_home = env.get("XDG_CONFIG_HOME", "") or os.path.join(env.get("HOME", ""), ".config")
    return os.path.join(config_home, "qex.toml") if _plain(config_home) else None


def socket_path(env: Mapping[str, str]) -> str | None:
    """The coordinator's socket for this environment, as `Paths.from_env` finds it; None
    when only `Paths` can say (see `state_dir`, or a path too long for `sun_path`)."""
    where = Where.from_env(env)
    return None if where is None else where.socket_path


class Where:
    """The files that connecting to a coordinator, and starting one, touch."""

    __slots__ = ("daemon_log", "run_dir", "socket_dir", "socket_path", "spawn_lock",
                 "state_dir")

    def __init__(self, state: str, run: str, socket: str) -> None:
        self.state_dir = state
        self.run_dir = run
        self.socket_path = socket
        self.socket_dir = os.path.dirname(socket)
        self.spawn_lock = os.path.join(run, "spawn.lock")
        self.daemon_log = os.path.join(run, "daemon.log")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Where | None:
        """The files of this environment's state dir; None when only `Paths` can say."""
        state = state_dir(env)
        if state is None:
            return None
        run = os.path.join(state, "run")
        sock = os.path.join(run, "qex.sock")
        if len(os.fsencode(sock)) > MAX_SOCKET_PATH:
            return None  # Paths hashes it into a short directory elsewhere
        return cls(state, run, sock)

    @classmethod
    def of(cls, paths: Paths) -> Where:
        """The same files, named by `Paths`."""
        return cls(str(paths.state_dir), str(paths.run_dir), str(paths.socket_path))
