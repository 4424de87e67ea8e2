"""What can go wrong between a command and the coordinator, as exceptions that say what.

The client never chooses an exit code: it raises one of these, and `qex.cli.exits` (the one
place that knows the exit-code band) turns it into a code for the command that runs.

* `Unreachable`: no coordinator could be reached or started (a socket path that cannot
  work, a sandbox, a coordinator that died at start, a line it sent that qex cannot read);
* `TimedOut`: something is there, but it did not connect or answer within the time allowed;
* `Lost`: an open line ended before the answer came (the coordinator stopped or restarted);
* `Refused`: the coordinator answered, and its answer is an `error` of a known kind.
"""

from __future__ import annotations


class ClientError(Exception):
    """Every failure of a request; `message` is one sentence for the person at the terminal."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CoordinatorError(ClientError):
    """No answer came: the coordinator could not be reached, was too slow, or went away."""

    timeout = False
    lost = False


class Unreachable(CoordinatorError):
    """No coordinator could be reached or started, and waiting longer would not help."""


class TimedOut(CoordinatorError):
    """Something holds the socket but did not connect or answer within the time allowed."""

    timeout = True


class Lost(CoordinatorError):
    """An open connection ended before its answer; a wait reads this as a restart."""

    lost = True


class Refused(ClientError):
    """The coordinator answered `error`; `kind` is one of `qex.core.protocol.ERROR_KINDS`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
