"""A supervisor forked ahead of its job and held until its go, as the coordinator sees it.

The fork server forks a supervisor that waits for `GO_SIGNAL` before it touches the job
(`qex.supervisor.forkserver`); the coordinator holds a `PidfdHeld` of it and sends the go, or
kills it, through a pidfd. Without a scope that is every job's start, so it lives apart from
the scope launcher (`qex.platform.launch`): a coordinator that makes no scopes never imports
the launcher and its cgroup, scope and detection modules (about 2 ms before a cold start's
first job, measured in the thirty-fourth pass of issue 7).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Protocol

from qex.core.model import dataclass
from qex.platform import procs

#: The signal that releases a supervisor held by the fork server (see `HeldSupervisor`).
GO_SIGNAL = signal.SIGUSR1

#: How long a held supervisor waits for its go before it exits untouched. Well above
#: `qex.platform.launch.SCOPE_TIMEOUT`; the coordinator sends no go once half of it has
#: passed, so a go can never meet a child that has already given up.
HOLD_SECONDS = 60.0


@dataclass
class Launched:
    """What a start gave the coordinator: the supervisor to watch, and how it runs (the
    record's enforcement and the log's line come from it)."""

    pid: int
    start_token: str | None
    backend: str                 # process-group | systemd-run | pystemd
    unit: str | None = None      # the scope unit name when there is one
    note: str | None = None      # why no scope was used, when one was wanted
    #: True when the fork server forked it: it is not the caller's child (watch it by pidfd).
    forked: bool = False


#: Asks the fork server for a supervisor of a job that waits for its go for so many seconds;
#: (pid, start token), or None when the server cannot give one.
ForkHeld = Callable[[str, float], "tuple[int, str | None] | None"]
#: Names a supervisor on the disk (pid, start token) before it gets its go.
NameSupervisor = Callable[[int, "str | None"], None]


class HeldSupervisor(Protocol):
    """A forked supervisor that waits for its go; the handle can release or kill it."""

    pid: int

    def release(self) -> None:
        """Send the go. Raises OSError when the process is gone."""

    def discard(self) -> None:
        """Kill it (it never got the go, so it never touched the job) and let go of it."""

    def close(self) -> None:
        """Let go of the handle (after `release`)."""


class PidfdHeld:
    """A held supervisor named by a pidfd, so that neither the go nor the kill can reach
    another process that later got the same pid."""

    def __init__(self, pid: int, token: str | None) -> None:
        self.pid = pid
        self._fd: int | None = os.pidfd_open(pid)
        if token is not None and not procs.same_process(pid, token):
            self.close()
            raise ProcessLookupError(f"the process {pid} is not the forked supervisor")

    def release(self) -> None:
        if self._fd is None:
            raise ProcessLookupError("the handle is closed")
        signal.pidfd_send_signal(self._fd, GO_SIGNAL)

    def discard(self) -> None:
        if self._fd is not None:
            try:
                signal.pidfd_send_signal(self._fd, signal.SIGKILL)
            except OSError:
                pass  # gone already; the fork server reaps it either way
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
