"""The coordinator's log: `[<epoch seconds>] <message>` lines on stdout.

The CLI that spawns a coordinator points its stdout at `<state>/run/daemon.log`; under
systemd it goes to the journal. One line per event, flushed at once, so the tail of the file
explains a coordinator that did not start.
"""

from __future__ import annotations

import sys
import time
import traceback


def log(message: str) -> None:
    try:
        sys.stdout.write(f"[{int(time.time())}] {message}\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def log_exception(what: str) -> None:
    """An unexpected fault at a process boundary: one line, then the traceback indented."""
    detail = traceback.format_exc().rstrip().replace("\n", "\n    ")
    log(f"{what}:\n    {detail}")
