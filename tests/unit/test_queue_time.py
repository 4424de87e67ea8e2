"""The one rule of `--max-queue-time` (qex.core.queue_time), and that the scheduler, the
coordinator's timer and a read without a coordinator all follow it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from sched_factory import job, job_id, running, snapshot

from qex.core import queue_time
from qex.core.records import JobStatus
from qex.core.scheduler import decide

# Whole seconds are exact in a float, so on them the rule can be checked to the last bit.
whole = st.integers(0, 10**9).map(float)
# Times as the coordinator really sees them: epoch seconds with a fraction.
epoch = st.floats(1.5e9, 2.5e9, allow_nan=False)
span = st.floats(0.0, 1e7, allow_nan=False)


def status(submitted: float, paused: float = 0.0, *, started: float | None = None,
           applies: bool = True) -> JobStatus:
    return JobStatus(id="a", name="a", command=["true"], cwd="/", submitted_at=submitted,
                     queue_pause_secs=paused, started_at=started, queue_time_applies=applies)


@given(whole, whole, whole, whole)
def test_expired_exactly_from_the_deadline_on(submitted: float, paused: float, limit: float,
                                              now: float) -> None:
    record = status(submitted, paused)
    deadline = queue_time.deadline(record, limit)
    assert deadline == submitted + paused + limit
    assert queue_time.expired(record, limit, now) == (now >= deadline)
    assert queue_time.waited(record, now) == now - submitted - paused


@given(epoch, span, span)
def test_the_coordinators_wake_up_always_finds_the_job_due(submitted: float, paused: float,
                                                           limit: float) -> None:
    # runner.next_delay wakes 10 ms after the deadline; the pass it runs must expire the job,
    # and nothing may expire it noticeably early.
    record = status(submitted, paused)
    deadline = queue_time.deadline(record, limit)
    assert deadline is not None
    assert queue_time.expired(record, limit, deadline + 0.01)
    assert not queue_time.expired(record, limit, deadline - 0.01)


@given(epoch, span, st.one_of(st.none(), span), st.booleans(), st.one_of(st.none(), epoch),
       epoch)
def test_only_a_limited_job_that_never_ran_expires(
    submitted: float, paused: float, limit: float | None, applies: bool,
    started: float | None, now: float,
) -> None:
    record = status(submitted, paused, started=started, applies=applies)
    can = limit is not None and applies and started is None
    assert queue_time.limited(record, limit) == can
    assert (queue_time.deadline(record, limit) is not None) == can
    if not can:
        assert not queue_time.expired(record, limit, now)


@given(epoch, epoch, span, span, whole)
def test_a_pause_credit_is_the_part_waited_through_and_moves_the_deadline(
    submitted: float, paused_at: float, length: float, limit: float, before: float,
) -> None:
    ended = paused_at + length
    pause = ended - paused_at  # the pause as the float sum holds it
    credit = queue_time.pause_credit(submitted, paused_at, ended)
    assert 0.0 <= credit <= pause
    if submitted >= ended:
        assert credit == 0.0
    if submitted <= paused_at:
        assert credit == pause
    earlier = queue_time.deadline(status(submitted, before), limit)
    later = queue_time.deadline(status(submitted, before + credit), limit)
    assert earlier is not None and later is not None and later >= earlier


def test_the_pause_credit_is_the_part_of_the_pause_the_job_waited_through() -> None:
    assert queue_time.pause_credit(submitted_at=10, paused_at=0, ended_at=30) == 20
    assert queue_time.pause_credit(submitted_at=0, paused_at=10, ended_at=30) == 20
    assert queue_time.pause_credit(submitted_at=40, paused_at=10, ended_at=30) == 0


@given(st.integers(0, 5000).map(float), st.integers(0, 5000).map(float),
       st.integers(1, 5000).map(float), st.integers(0, 20000).map(float))
def test_the_scheduler_expires_by_the_same_rule(submitted: float, paused: float, limit: float,
                                                now: float) -> None:
    # The job cannot start (the one core is taken), so nothing but expiry takes it out.
    queued = job(1, cpu=2, submitted_at=submitted, queue_pause_secs=paused, max_queue_time=limit)
    decision = decide(snapshot([queued], [running(9, cpu=2)], now=now, cpu_budget=2))
    due = queue_time.expired(queued, limit, now)
    assert [e.id for e in decision.expiries] == ([job_id(1)] if due else [])
