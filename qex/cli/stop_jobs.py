"""What `qex kill` and `qex cancel` share: resolve every word first, then act on each job.

Every word is resolved before anything is sent, so a typo in the third id stops the command
(127) before the first job is touched. A job named twice is acted on once. A group's stages
are treated by state: a stage that already stopped is reported and left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from qex.cli.common import warn
from qex.cli.exits import code_for

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.client.errors import Refused
    from qex.core.word_match import Resolved
    from qex.store.paths import Paths


def resolve_all(conn: Connection, paths: Paths, words: Iterable[str]) -> list[Resolved]:
    from qex.cli.resolve import resolve

    return [resolve(conn, paths, word) for word in words]


class Outcome:
    """The exit code of a command that acts on several jobs: the first failure decides."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.code = 0
        self.done: set[str] = set()

    def fail(self, code: int) -> None:
        if self.code == 0:
            self.code = code

    def first_time(self, job_id: str) -> bool:
        if job_id in self.done:
            return False
        self.done.add(job_id)
        return True


def send(outcome: Outcome, success: str, request: Callable[..., object], *args: Any) -> bool:
    """Make one request; print `success` on stdout, or the coordinator's refusal on stderr
    (and note its code). Any other failure ends the command."""
    from qex.client.errors import Refused

    try:
        request(*args)
    except Refused as exc:
        _refused(outcome, exc)
        return False
    print(success, flush=True)
    return True


def report(outcome: Outcome, success: str, answer: dict[str, Any]) -> bool:
    """`send` for a request already answered: one job's answer in a `cancel_many`'s list."""
    from qex.client.errors import Refused
    from qex.core.protocol import error_of

    failed = error_of(answer)
    if failed is not None:
        _refused(outcome, Refused(*failed))
        return False
    print(success, flush=True)
    return True


def _refused(outcome: Outcome, exc: Refused) -> None:
    from qex.core.names import printable_line

    warn(printable_line(exc.message))
    outcome.fail(code_for(exc, outcome.command))

