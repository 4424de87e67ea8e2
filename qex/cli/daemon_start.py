"""Start the coordinator in this process: the body of `qex daemon`, without click.

The CLI spawns `python -m qex daemon` when no coordinator listens, and the systemd unit runs
`qex daemon --supervised`; both reach this through the fast path, so the coordinator never
imports click (a few megabytes of resident memory for its whole life, and time at a cold
start, when a command waits for the socket).
"""

from __future__ import annotations

import sys


def run_daemon() -> None:
    """Run the coordinator of this state directory until it is idle or told to stop."""
    # asyncio loads the TLS module only to offer TLS servers, which the coordinator never
    # runs; blocking that import saves about 4MB of resident memory for the coordinator's
    # whole life (asyncio treats a missing `ssl` as "no TLS", a supported configuration).
    if "ssl" not in sys.modules:
        sys.modules["ssl"] = None  # type: ignore[assignment]
    from qex.platform.detach import detach_from_caller

    detach_from_caller()  # directory `/`, and no descriptor of the caller's kept open
    from qex.platform import chaintrace

    chaintrace.mark("co.process", "-")
    from qex.coordinator import early

    forkserver = early.start_from_env()  # first: it imports while we do
    from qex.cli.common import get_paths
    from qex.coordinator.main import run

    sys.exit(run(get_paths(code=1), forkserver))
