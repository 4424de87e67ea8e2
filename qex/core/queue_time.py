"""How long a queued job has waited, and when `--max-queue-time` gives up on it.

The rule, defined here once: a job's queue time is the time since it was submitted, less
the queue pauses it waited through (`queue_pause_secs`, credited once, when a pause ends).
It expires when that time reaches its `max_queue_time`, and only while it has never run: a
job that ran once (an OOM retry sent it back to the queue, or another engine took it) has
`queue_time_applies` off and never expires, nor does a job without a limit.

The scheduler decides expiry with `expired`; the coordinator sets its wake-up timer from
`deadline`, the same instant; the pause credit that the coordinator writes when a pause ends
and that a read without a coordinator shows comes from `pause_credit`. That the queue
expires nothing WHILE it is paused is the scheduler's rule for the pass, not part of this
clock. Pure: `now` is always passed in.
"""

from __future__ import annotations

from typing import Protocol


class QueueClock(Protocol):
    """The fields of a job that its queue time depends on: a `JobStatus` record and the
    scheduler's `JobView` both have them (the limit itself lives in the spec, so it is passed
    apart)."""

    @property
    def submitted_at(self) -> float: ...

    @property
    def queue_pause_secs(self) -> float: ...

    @property
    def started_at(self) -> float | None: ...

    @property
    def queue_time_applies(self) -> bool: ...


def waited(job: QueueClock, now: float) -> float:
    """The job's queue time at `now`: time since submission, less the credited pauses."""
    return now - job.submitted_at - float(job.queue_pause_secs or 0.0)


def limited(job: QueueClock, limit: float | None) -> bool:
    """Whether `limit` (the job's `max_queue_time`) can still expire the job at all."""
    return limit is not None and job.queue_time_applies and job.started_at is None


def deadline(job: QueueClock, limit: float | None) -> float | None:
    """The instant the job expires, if it waits in the queue that long; None when it never
    does. A later pause credit moves it, so a caller asks again after each change."""
    if limit is None or not limited(job, limit):
        return None
    return job.submitted_at + float(job.queue_pause_secs or 0.0) + limit


def expired(job: QueueClock, limit: float | None, now: float) -> bool:
    """Whether the job has waited its `max_queue_time` out by `now`."""
    if limit is None or not limited(job, limit):
        return False
    return waited(job, now) >= limit


def pause_credit(submitted_at: float, paused_at: float, ended_at: float) -> float:
    """The queue time a queued job gets back for a queue pause: the part of the pause it
    waited through. The coordinator adds it when the pause ends (recovery too, for a pause
    that ended while no coordinator ran), and a read without a coordinator shows the same."""
    return max(0.0, ended_at - max(submitted_at, paused_at))
