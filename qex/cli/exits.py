"""The one place that turns what went wrong into an exit code (`qex help exit-codes`).

Commands that give the result of a job (the band: `BAND_COMMANDS`) keep 0..96 for the job and
use 97..127 for everything else, so a failure of qex itself is 121 there; every other command
uses the ordinary 0, 1, 2 and 127. Both use 124 for a limit that ran out.

Nothing below the CLI picks a code: the client raises `qex.client.errors` exceptions, a
command raises `Failure` for "qex could not do it", and `qex.cli.main` hands either to
`report` with the command word it was started with. Imported by `qex.cli.main` on every
call, so it imports nothing at its top but `sys` and the import-free `qex.core.exit_band`:
not `typing` (a third of the interpreter's start-up), and not `qex.core.states` (`enum`).
"""

from __future__ import annotations

import sys

from qex.core.exit_band import Exit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from qex.client.errors import ClientError

#: The `kind` of a refusal for an id that names no job (`qex.core.protocol.NO_SUCH_JOB`).
REFUSED_NO_SUCH_JOB = "no_such_job"

# The codes this module hands out, by the names its callers use.
OK = Exit.OK
FAILURE = Exit.FAILURE
USAGE = Exit.USAGE
JOB_HIGH = Exit.JOB_HIGH
SIGNAL = Exit.SIGNAL
QEX_FAILED = Exit.QEX_FAILED
WAIT_INTERRUPTED = Exit.WAIT_INTERRUPTED
WAIT_TIMEOUT = Exit.WAIT_TIMEOUT
NO_SUCH_JOB = Exit.NO_SUCH_JOB

#: Commands that give the result of a job use the exit-code band.
BAND_COMMANDS = frozenset({"submit", "run", "pipeline", "wait", "status", "rerun"})


class Failure(Exception):
    """qex could not do what was asked (no job ran); the code depends on the command."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.not_found = not_found


def in_band(command: str | None) -> bool:
    return command in BAND_COMMANDS


def failed(command: str | None) -> int:
    """qex could not do it: 121 in the band, 1 elsewhere."""
    return QEX_FAILED if in_band(command) else FAILURE


def usage(command: str | None) -> int:
    """A usage error: 121 in the band, click's 2 elsewhere."""
    return QEX_FAILED if in_band(command) else USAGE


def interrupted(command: str | None) -> int:
    """Ctrl-C outside a wait: 122 in the band, 1 elsewhere."""
    return WAIT_INTERRUPTED if in_band(command) else FAILURE


def code_for(error: ClientError | Failure, command: str | None) -> int:
    """The exit code of a failure of the client or of a command, in `command`."""
    from qex.client.errors import CoordinatorError, Refused

    if isinstance(error, Failure):
        return NO_SUCH_JOB if error.not_found else failed(command)
    if isinstance(error, Refused):
        return NO_SUCH_JOB if error.kind == REFUSED_NO_SUCH_JOB else failed(command)
    if isinstance(error, CoordinatorError) and error.timeout:
        return WAIT_TIMEOUT
    return failed(command)


def report(error: ClientError | Failure, command: str | None) -> NoReturn:
    """One `qex: ...` sentence on stderr, and the exit code for it."""
    from qex.client.errors import Refused

    message = error.message
    if isinstance(error, Refused):  # the coordinator's words: shown safely, on one line
        from qex.core.names import printable_line

        message = printable_line(message)
    sys.stdout.flush()
    sys.stderr.write(f"qex: {message}\n")
    sys.stderr.flush()
    sys.exit(code_for(error, command))
