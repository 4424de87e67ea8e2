"""Where qex keeps things: one place that turns the environment into paths.

`Paths.from_env()` reads XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR, TMPDIR, HOME and
QEX_PEERS_DIR; tests point all of them into a temp dir. Nothing here creates a directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from qex.core.model import dataclass
from qex.store.where import MAX_SOCKET_PATH

__all__ = ["MAX_SOCKET_PATH", "PathError", "Paths", "ensure_private_dir", "fallback_socket"]


#: The fallback directories are tried in this order; /tmp is last and always fits.
_FALLBACK_BASES = ("XDG_RUNTIME_DIR", "TMPDIR")


def fallback_socket(preferred: Path, env: Mapping[str, str]) -> Path:
    """A short socket path for a state dir too deep for `sun_path`.

    A private directory named by a hash of the preferred path, so every command of one state
    dir finds the same socket, under the first of $XDG_RUNTIME_DIR, $TMPDIR and /tmp where
    the whole path fits. It always fits: under /tmp it is `/tmp/qex-<uid>-<16 hex>/qex.sock`,
    at most 46 bytes.
    """
    import hashlib  # only here: it loads OpenSSL, which the common case never needs

    digest = hashlib.sha256(os.fsencode(preferred)).hexdigest()[:16]
    leaf = Path(f"qex-{os.getuid()}-{digest}") / "qex.sock"
    for name in _FALLBACK_BASES:
        base = _env_path(env, name)
        if base is not None and base.is_absolute():
            candidate = base / leaf
            if len(os.fsencode(candidate)) <= MAX_SOCKET_PATH:
                return candidate
    return Path("/tmp") / leaf


class PathError(RuntimeError):
    """The environment gives no usable place for qex's files."""


def _env_path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "")
    return Path(value) if value else None


@dataclass(frozen=True)
class Paths:
    config_file: Path
    state_dir: Path
    run_dir: Path
    socket_path: Path
    peers_dir_override: Path | None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Paths:
        env = os.environ if env is None else env
        home = _env_path(env, "HOME")
        config_home = _env_path(env, "XDG_CONFIG_HOME")
        state_home = _env_path(env, "XDG_STATE_HOME")
        if config_home is None:
            if home is None:
                raise PathError(
                    "neither XDG_CONFIG_HOME nor HOME is set, so qex has no place for its "
                    "config file; set HOME"
                )
            config_home = home / ".config"
        if state_home is None:
            if home is None:
                raise PathError(
                    "neither XDG_STATE_HOME nor HOME is set, so qex has no place for its "
                    "records; set HOME"
                )
            state_home = home / ".local" / "state"
        state_dir = state_home / "qex"
        run_dir = state_dir / "run"
        socket_path = run_dir / "qex.sock"
        if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
            socket_path = fallback_socket(socket_path, env)
        return cls(
            config_file=config_home / "qex.toml",
            state_dir=state_dir,
            run_dir=run_dir,
            socket_path=socket_path,
            peers_dir_override=_env_path(env, "QEX_PEERS_DIR"),
        )

    @property
    def jobs_dir(self) -> Path:
        return self.state_dir / "jobs"

    def job_dir(self, job_id: str) -> Path:
        return self.jobs_dir / job_id

    @property
    def socket_dir(self) -> Path:
        return self.socket_path.parent

    @property
    def spawn_lock(self) -> Path:
        return self.run_dir / "spawn.lock"

    @property
    def pid_file(self) -> Path:
        """Held with flock for the coordinator's whole life: the lock is the proof of life."""
        return self.run_dir / "coordinator.pid"

    @property
    def daemon_log(self) -> Path:
        return self.run_dir / "daemon.log"

    @property
    def paused_file(self) -> Path:
        return self.run_dir / "paused.json"

    @property
    def history_file(self) -> Path:
        return self.state_dir / "history.jsonl"

    @property
    def usage_dir(self) -> Path:
        """The learner's store: one file per command (`qex.store.usage`)."""
        return self.state_dir / "usage"

    @property
    def usage_file(self) -> Path:
        """The learner's store as earlier versions kept it: every command in one file."""
        return self.state_dir / "usage.json"

    @property
    def usage_lock(self) -> Path:
        return self.state_dir / "usage.lock"

    def peers_dir(self, configured: str) -> Path:
        return self.peers_dir_override or Path(configured)


def ensure_private_dir(path: Path) -> None:
    """Create a directory (and parents) and force it to 0700 whatever the umask said."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
