"""Shared parts of the commands that speak for a job (the exit-code band): the wait and its
ends, the result line, the coordinator's warnings.

These commands give the job's own code for a job that ran, and 97..127 for everything that
happened to the queue or to the wait (`qex.cli.exits`). Connecting is `qex.cli.reach`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from qex.cli.common import die
from qex.core.states import Exit

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.store.paths import Paths


T = TypeVar("T")


def fail(message: str) -> NoReturn:
    """qex could not do what was asked, and no job ran: 121."""
    die(message, Exit.QEX_FAILED)


def guarded(action: Callable[[], T]) -> T:
    """Run `action`. Its client errors go up to `qex.cli.exits`, which gives the code."""
    return action()


def result_line(record: dict[str, Any]) -> str:
    """One line per job for `qex wait`: who, the state, and how it ended."""
    from qex.core.record_view import JobView, job_label, result_text

    job = JobView(record)
    state = job.state
    text = result_text(job)
    if not text:
        return f"{job_label(job)} {state}"
    if text.startswith(state):
        return f"{job_label(job)} {text}"
    return f"{job_label(job)} {state}: {text}"


def wait_for(paths: Paths, conn: Connection | None, records: list[dict[str, Any]], *,
             timeout: float | None, narrate: bool, may_start: bool,
             group: str | None = None, next_only: bool = False,
             ) -> tuple[list[dict[str, Any]], list[str]]:
    """Wait (all jobs, or the next one); the final records and the ids still pending.

    Handles the ends that are not the job's: Ctrl-C (122), the reader's timeout (124), a record
    that vanished (127); a coordinator failure goes up to `qex.cli.exits`. The job is never
    touched.
    """
    from qex.cli.waiting import (
        JobGone,
        Waiter,
        WaitInterrupted,
        WaitSettings,
        WaitTimedOut,
        report_interrupted,
        report_timeout,
        stop_signals,
    )
    ids = [str(r["id"]) for r in records]
    settings = WaitSettings(timeout=timeout, narrate=narrate, may_start=may_start)
    try:
        with stop_signals():
            waiter = Waiter(paths, conn, records, settings)
            if next_only:
                record, pending = waiter.wait_next()
                return [record], pending
            return waiter.wait_all(), []
    except WaitInterrupted:
        report_interrupted(ids, group)
        raise SystemExit(Exit.WAIT_INTERRUPTED) from None
    except WaitTimedOut:
        report_timeout(ids, group)
        raise SystemExit(Exit.WAIT_TIMEOUT) from None
    except JobGone as exc:
        die(exc.message, Exit.NO_SUCH_JOB)


@contextmanager
def interruptible(words: list[str]) -> Iterator[None]:
    """Cover a whole waiting command: Ctrl-C before the wait proper also gives 122.

    `words` are what the person typed, for the attach hint when no id is known yet.
    """
    from qex.cli.waiting import WaitInterrupted, report_interrupted, stop_signals

    try:
        with stop_signals():
            yield
    except WaitInterrupted:
        report_interrupted(words)
        raise SystemExit(Exit.WAIT_INTERRUPTED) from None
