"""Start the coordinator in this process: the body of `qex daemon`, without click.

The systemd unit runs `qex daemon --supervised`, and the full CLI and the portable
implementation spawn `python -m qex daemon` when no coordinator listens; both reach
`run_daemon` through the fast path, so the coordinator never imports click (a few megabytes
of resident memory for its whole life, and time at a cold start, when a command waits for
the socket). On Linux the lean CLI forks instead, and its child becomes the coordinator
through `run_forked`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


def run_daemon(detached: bool = False, ready_fd: int | None = None) -> None:
    """Run the coordinator of this state directory until it is idle or told to stop.

    `detached`: this process already left its caller (`qex.platform.detach.fork_detached`).
    `ready_fd`: where to say that the socket listens (the command that forked this process
    waits on it); a spawned coordinator finds it in `READY_FD_VAR`."""
    # asyncio loads the TLS module only to offer TLS servers, which the coordinator never
    # runs; blocking that import saves about 4MB of resident memory for the coordinator's
    # whole life (asyncio treats a missing `ssl` as "no TLS", a supported configuration).
    if "ssl" not in sys.modules:
        sys.modules["ssl"] = None  # type: ignore[assignment]
    if not detached:
        from qex.platform.detach import detach_from_caller, take_ready_fd

        ready_fd = take_ready_fd(os.environ)
        # Directory `/`, and no descriptor of the caller's kept open but the ready pipe.
        detach_from_caller(keep=() if ready_fd is None else (ready_fd,))
    from qex.platform import chaintrace

    chaintrace.mark("co.process", "-")
    from qex.platform import collector

    collector.hold()  # until the coordinator serves (`qex.coordinator.main._main`)
    from qex.coordinator.early import raise_open_file_limit

    raise_open_file_limit()
    from qex.cli.common import get_paths
    from qex.coordinator.main import run

    sys.exit(run(get_paths(code=1), ready_fd))


def run_forked(ready_fd: int) -> NoReturn:
    """The child that a command forked at a cold start (`qex.client.starting`): become the
    coordinator, then end this process without ever returning into the command's code.
    `ready_fd`: the pipe on which the command waits for the socket.

    The child looks like a new program where that matters: `sys.path` loses the entry that
    `python -P` leaves out (the script's directory), `ps` shows `qex daemon`, and a fault is
    written to the log."""
    code: int = 1
    try:
        if not sys.flags.safe_path and sys.path:
            del sys.path[0]
        sys.argv = [sys.argv[0], "daemon"]
        from qex.platform.proctitle import set_title

        set_title("qex daemon", "qex-daemon")
        run_daemon(detached=True, ready_fd=ready_fd)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            sys.stderr.write(f"{exc.code}\n")
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        from qex.platform.detach import flush_standard_streams

        flush_standard_streams()
        os._exit(code & 0xFF)
