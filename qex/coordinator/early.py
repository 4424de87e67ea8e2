"""What the coordinator does first, before its own imports: raise its descriptor limit and
start the supervisor fork server.

The fork server imports for about as long as the coordinator does (both are Python
processes that load most of qex). Started here, the two import side by side on two cores,
and the first job finds the server ready instead of waiting for its start-up. So this
module imports only what that takes: `subprocess` (for the server's pipes) and the plain
path of the log (`qex.store.where`), no `pathlib`, `typing` or `socket`.
`qex.coordinator.main` decides after reading the config whether the server stays.
"""

from __future__ import annotations

import os

from qex.coordinator.forking import ForkServer
from qex.platform.activation import LISTEN_VARS


def raise_open_file_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit: every connection and job costs descriptors,
    and the soft default (often 1024) is a convention, not a resource the machine lacks."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard and (hard == resource.RLIM_INFINITY or soft < hard):
            # An unlimited hard limit is not a number select() or a kernel table accepts.
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):
        pass


def without_listen_vars(env: dict[str, str] | os._Environ[str]) -> dict[str, str] | None:
    """`env` without systemd's LISTEN_* variables, for a child started before
    `qex.platform.activation.listen_socket` took them out; None (inherit ours) when there
    are none. (Every descriptor of ours is closed in the child anyway.)"""
    if not any(name in env for name in LISTEN_VARS):
        return None
    return {name: value for name, value in env.items() if name not in LISTEN_VARS}


def start(log_path: str | os.PathLike[str]) -> ForkServer:
    """The process's first steps: the limit (before the server, whose supervisors inherit
    it), then the fork server, logging to `log_path`."""
    raise_open_file_limit()
    server = ForkServer(log_path)
    server.start_early(without_listen_vars(os.environ))
    return server


def start_from_env() -> ForkServer | None:
    """`start` with the log that the environment names, before `Paths` is imported; None
    when only `Paths` can name it (the coordinator then calls `start` itself)."""
    from qex.store.where import Where

    where = Where.from_env(os.environ)
    return None if where is None else start(where.daemon_log)
