"""The bodies of `qex kill` and `qex cancel`, without click (the fast path calls them too)."""

from __future__ import annotations

import sys

from qex.cli.common import get_paths

TYPE_CHECKING = False  # `qex.cli.fastread` imports the sentences below: no `typing` here
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn


def signalled_line(job_id: str, signum: int) -> str:
    """What `kill` prints for a job that the coordinator signalled."""
    from qex.platform.signal_words import signal_name

    return f"{job_id} received the signal {signal_name(signum)}"


def left_queue_line(job_id: str) -> str:
    """What `kill` and `cancel` print for a job taken out of the queue."""
    return f"{job_id} left the queue"


def _stop_each(jobs: Sequence[str], verb: str,
               act: Callable[[Any, Any, str, str], None]) -> NoReturn:
    """The loop of `kill` and `cancel`: every job the words name, once; a finished member of
    a named group is reported, not refused; `act(outcome, conn, job_id, state)` does the rest.
    Ends the command with the outcome's code."""
    from qex.cli.reach import open_connection
    from qex.cli.stop_jobs import Outcome, already_stopped, resolve_all
    from qex.core.states import FINAL

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    final = {s.value for s in FINAL}
    outcome = Outcome(verb)
    with conn:
        for found in resolve_all(conn, paths, jobs):
            for record in found.jobs:
                job_id = str(record.get("id"))
                if not outcome.first_time(job_id):
                    continue
                state = str(record.get("state"))
                if found.group is not None and state in final:
                    print(already_stopped(record), flush=True)
                    continue
                # A queued member of a named group leaves the queue: there is nothing to signal.
                act(outcome, conn, job_id, "queued-in-group"
                    if found.group is not None and state == "queued" else state)
    sys.exit(outcome.code)


def kill_jobs(jobs: Sequence[str], signum: int, grace_secs: float) -> None:
    """Send `signum` to the running jobs that `jobs` name; end the command with its code."""
    from qex.cli.stop_jobs import send

    def act(outcome: Any, conn: Any, job_id: str, state: str) -> None:
        if state == "queued-in-group":
            send(outcome, left_queue_line(job_id), conn.cancel, job_id)
        else:
            send(outcome, signalled_line(job_id, signum), conn.kill, job_id, signum, grace_secs)

    _stop_each(jobs, "kill", act)


def cancel_jobs(jobs: Sequence[str]) -> None:
    """Take the queued jobs that `jobs` name out of the queue; end the command with its code."""
    from qex.cli.stop_jobs import send

    def act(outcome: Any, conn: Any, job_id: str, _state: str) -> None:
        send(outcome, left_queue_line(job_id), conn.cancel, job_id)

    _stop_each(jobs, "cancel", act)
