"""The bodies of `qex kill` and `qex cancel`, without click (the fast path calls them too)."""

from __future__ import annotations

import sys

from qex.cli.common import get_paths
from qex.core.state_words import FINAL_WORDS, QUEUED

TYPE_CHECKING = False  # `qex.cli.fastread` imports the sentences below: no `typing` here
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, NoReturn


def signalled_line(job_id: str, signum: int) -> str:
    """What `kill` prints for a job that the coordinator signalled."""
    from qex.core.signal_words import signal_name

    return f"{job_id} received the signal {signal_name(signum)}"


def left_queue_line(job_id: str) -> str:
    """What `kill` and `cancel` print for a job taken out of the queue."""
    return f"{job_id} left the queue"


def already_stopped(record: dict[str, Any]) -> str:
    """What `kill` and `cancel` print for a stage of a named group that had already stopped."""
    return f"{record.get('id')} had already stopped (state `{record.get('state')}`)"


#: What a stop does with one job: send the command's own request, take the job out of the
#: queue (a queued stage of a group that `kill` named has nothing to signal), or report a
#: stage of a named group that had already stopped.
SEND, DEQUEUE, REPORT = "send", "dequeue", "report"


def stop_plan(named: Iterable[tuple[list[dict[str, Any]], str | None]]
              ) -> list[tuple[dict[str, Any], str]]:
    """Each job that the words named, once, with what to do to it; `named` holds, per word,
    its records and the group it named (None for one job). Both bodies follow this plan.

    The queued stages of named groups leave the queue first: a stage signalled before them
    frees its capacity, and the scheduler could start a queued stage in that moment, which
    the person meant to stop. The rest keep the order in which they were named."""
    first: list[tuple[dict[str, Any], str]] = []
    rest: list[tuple[dict[str, Any], str]] = []
    seen: set[object] = set()
    for records, group in named:
        for record in records:
            job_id = record.get("id")
            if job_id in seen:
                continue
            seen.add(job_id)
            state = record.get("state")
            if group is None:
                rest.append((record, SEND))
            elif state == QUEUED:
                first.append((record, DEQUEUE))
            elif state in FINAL_WORDS:
                rest.append((record, REPORT))
            else:
                rest.append((record, SEND))
    return first + rest


def cancels(what: str, verb: str) -> bool:
    """True when a step of the plan takes its job out of the queue: a queued stage that a
    group's stop dequeues, or any job that `cancel` names."""
    return what == DEQUEUE or (what == SEND and verb == "cancel")


def steps(plan: Sequence[tuple[dict[str, Any], str]], verb: str
          ) -> list[list[tuple[dict[str, Any], str]]]:
    """The plan as the bodies send it: each run of cancels as one step (one `cancel_many`
    request when it holds several jobs, whose records the coordinator then writes
    together), every other job a step of its own. The order stays the plan's."""
    out: list[list[tuple[dict[str, Any], str]]] = []
    for item in plan:
        if out and cancels(item[1], verb) and cancels(out[-1][-1][1], verb):
            out[-1].append(item)
        else:
            out.append([item])
    return out


def _stop_each(jobs: Sequence[str], verb: str,
               act: Callable[[Any, Any, str], None]) -> NoReturn:
    """The loop of `kill` and `cancel`: every job the words name, as `stop_plan` says;
    `act(outcome, conn, job_id)` sends the command's own request. Ends the command with the
    outcome's code."""
    from qex.cli.reach import open_connection
    from qex.cli.stop_jobs import Outcome, resolve_all, send

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    outcome = Outcome(verb)
    with conn:
        named = [(found.jobs, found.group) for found in resolve_all(conn, paths, jobs)]
        for step in steps(stop_plan(named), verb):
            record, what = step[0]
            job_id = str(record.get("id"))
            if what == REPORT:
                print(already_stopped(record), flush=True)
            elif len(step) > 1:
                _cancel_run(outcome, conn, [str(record.get("id")) for record, _what in step])
            elif what == DEQUEUE:
                send(outcome, left_queue_line(job_id), conn.cancel, job_id)
            else:
                act(outcome, conn, job_id)
    sys.exit(outcome.code)


def _cancel_run(outcome: Any, conn: Any, job_ids: list[str]) -> None:
    """Several cancels in one request, each job's line or refusal printed in order; a
    coordinator older than the request gets a `cancel` per job."""
    from qex.cli.stop_jobs import report, send

    answers = conn.cancel_many(job_ids)
    if answers is None:
        for job_id in job_ids:
            send(outcome, left_queue_line(job_id), conn.cancel, job_id)
        return
    for job_id, answer in zip(job_ids, answers, strict=True):
        report(outcome, left_queue_line(job_id), answer)


def kill_jobs(jobs: Sequence[str], signum: int, grace_secs: float) -> None:
    """Send `signum` to the running jobs that `jobs` name; end the command with its code."""
    from qex.cli.stop_jobs import send

    def act(outcome: Any, conn: Any, job_id: str) -> None:
        send(outcome, signalled_line(job_id, signum), conn.kill, job_id, signum, grace_secs)

    _stop_each(jobs, "kill", act)


def cancel_jobs(jobs: Sequence[str]) -> None:
    """Take the queued jobs that `jobs` name out of the queue; end the command with its code."""
    from qex.cli.stop_jobs import send

    def act(outcome: Any, conn: Any, job_id: str) -> None:
        send(outcome, left_queue_line(job_id), conn.cancel, job_id)

    _stop_each(jobs, "cancel", act)
