"""A partial pass (`Snapshot.partial`): it ends its walk once nothing behind can start, and
what it decides is the whole pass's decision for the jobs it read."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from hypothesis import event, given, settings
from hypothesis import strategies as st
from sched_factory import GB, job, running, snapshot
from test_scheduler_properties import alike_queues, scenarios

from qex.core import model
from qex.core.scheduler import decide
from qex.core.scheduler_types import Decision, JobView, KnownJob, PauseView, Snapshot


class CountingQueue(Sequence[JobView]):
    """A queue that counts the views the walk takes, as the coordinator's makes them."""

    def __init__(self, jobs: Sequence[JobView]) -> None:
        self.jobs = list(jobs)
        self.taken = 0

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self) -> Iterator[JobView]:
        for view in self.jobs:
            self.taken += 1
            yield view

    @overload
    def __getitem__(self, index: int) -> JobView: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[JobView]: ...

    def __getitem__(self, index: int | slice) -> JobView | Sequence[JobView]:
        return self.jobs[index]


@st.composite
def dependent_queues(draw: st.DrawFn) -> Snapshot:
    """Jobs that wait for, or are skipped by, others (finished ones and queued ones), some
    with a queue time limit, in a queue that may be paused."""
    known = [KnownJob(job(50 + n).id, f"k{n}", draw(st.sampled_from(
        ["completed", "failed", "running", "cancelled"]))) for n in range(3)]
    count = draw(st.integers(2, 14))
    ids = [job(n).id for n in range(1, count + 1)] + [k.id for k in known]
    queue = [
        job(n, cpu=draw(st.sampled_from([1, 1, 2])), mem=draw(st.sampled_from([1, 2])) * GB,
            needs=tuple(draw(st.lists(st.sampled_from(ids), max_size=1))),
            after=tuple(draw(st.lists(st.sampled_from(ids), max_size=1))),
            max_queue_time=draw(st.sampled_from([None, None, 100.0, 5000.0])),
            blocked_reason=draw(st.sampled_from([None, "waits for capacity"])))
        for n in range(1, count + 1)
    ]
    active = [running(200 + n, cpu=1, mem=GB) for n in range(draw(st.integers(0, 3)))]
    paused = draw(st.sampled_from([None, None, None, "the queue is paused: by hand"]))
    return snapshot(queue, active, known=known, cpu_budget=draw(st.integers(1, 4)),
                    mem_budget=draw(st.integers(2, 8)) * GB, pause=PauseView(queue_reason=paused),
                    max_bypass=draw(st.sampled_from([0, 1, 3])))


def _read(snap: Snapshot) -> tuple[Decision, list[JobView]]:
    """The partial decision, and the jobs its walk read."""
    queue = CountingQueue(snap.queue)
    dependent = tuple(view for view in snap.queue if view.needs or view.after)
    decision = decide(model.replace(snap, queue=queue, partial=True, dependent=dependent))
    # The walk takes the next job before it finds that it ends there.
    return decision, queue.jobs[:queue.taken - (0 if decision.complete else 1)]


@settings(max_examples=400, deadline=None)
@given(st.one_of(scenarios(), alike_queues(), dependent_queues()))
def test_a_partial_pass_decides_as_the_whole_pass_for_the_jobs_it_read(snap: Snapshot) -> None:
    whole = decide(snap)
    partial, read = _read(snap)
    event("the walk ended early" if not partial.complete else "the walk read every job")
    if partial.complete:
        assert partial == whole
        return
    ids = {view.id for view in read}
    # Nothing behind the point where the walk ended could start, expire or be skipped
    # by capacity: every start of the whole pass is among the partial pass's.
    assert partial.starts == whole.starts
    assert partial.expiries == tuple(e for e in whole.expiries if e.id in ids)
    assert partial.skips == tuple(s for s in whole.skips if s.id in ids)
    assert dict(partial.waits) == {i: w for i, w in whole.waits.items() if i in ids}
    assert (partial.queue_state, partial.head_id, partial.head_blocker) == (
        whole.queue_state, whole.head_id, whole.head_blocker)
    assert whole.complete


@settings(max_examples=200, deadline=None)
@given(st.one_of(scenarios(), alike_queues(), dependent_queues()))
def test_a_partial_pass_ends_only_where_nothing_behind_can_start(snap: Snapshot) -> None:
    """Where the walk ended, the queue was paused, or a head waited (the first job that
    neither started nor waited for a dependency, a lock or the pause), and this queue's
    jobs filled the cores or the memory (or the head held what it reserved)."""
    partial, read = _read(snap)
    if partial.complete:
        assert len(read) == len(snap.queue)
        return
    assert len(read) < len(snap.queue)
    if snap.pause.queue_reason is not None:
        assert read == []
        return
    assert partial.head_id in {view.id for view in read}


def test_a_drain_of_a_long_alike_queue_reads_the_front_only() -> None:
    """2,000 jobs alike behind two busy slots: the whole pass reads each one, a partial pass
    reads the head and stops, and decides the same."""
    queue = [job(n, cpu=1, mem=GB, blocked_reason="stale") for n in range(1, 2001)]
    snap = snapshot(queue, [running(5000, cpu=1, mem=GB), running(5001, cpu=1, mem=GB)],
                    cpu_budget=2)
    partial, read = _read(snap)
    assert not partial.complete
    assert len(read) == 1
    assert partial.head_id == queue[0].id
    whole = decide(snap)
    assert len(whole.waits) == 2000  # "stale" everywhere: the whole pass rewrites each
    assert dict(partial.waits) == {queue[0].id: whole.waits[queue[0].id]}


def test_a_slot_that_comes_free_starts_the_front_job_and_the_walk_ends_behind_it() -> None:
    queue = [job(n, cpu=1, mem=GB) for n in range(1, 501)]
    snap = snapshot(queue, [running(5000, cpu=1, mem=GB)], cpu_budget=2)
    partial, read = _read(snap)
    assert [s.id for s in partial.starts] == [queue[0].id]
    assert [view.id for view in read] == [queue[0].id, queue[1].id]  # the new head
    assert partial.starts == decide(snap).starts


def test_jobs_that_wait_for_others_do_not_end_the_walk() -> None:
    """Jobs waiting for a dependency take no capacity, so the walk goes on past them and a
    job behind that can start does start (a partial pass gives up only on capacity)."""
    first = job(1, cpu=1, mem=GB)
    waiting = [job(n, needs=(job(9999).id,)) for n in range(2, 300)]
    last = job(300, cpu=1, mem=GB)
    pending = KnownJob(job(9999).id, "first", "running")
    snap = snapshot([first, *waiting, last], [running(9999, cpu=1, mem=GB)],
                    known=[pending], cpu_budget=3)
    partial, read = _read(snap)
    assert [s.id for s in partial.starts] == [first.id, last.id]
    assert partial.complete and len(read) == 300


def test_a_partial_pass_of_a_paused_queue_reads_nothing() -> None:
    queue = [job(n) for n in range(1, 200)]
    snap = snapshot(queue, pause=PauseView(queue_reason="paused by hand"))
    partial, read = _read(snap)
    assert read == [] and not partial.complete
    assert partial.starts == () and partial.queue_state == "paused"


def test_the_dependency_rules_read_the_jobs_given_as_dependent() -> None:
    """`Snapshot.dependent` spares the rules a walk of the queue, and decides as the walk."""
    failed = KnownJob(job(9000).id, "root", "failed")
    plain = [job(n) for n in range(1, 50)]
    needing = job(50, needs=(failed.id,))
    after = job(51, after=(job(49).id,))
    queue = [*plain, needing, after]
    base: dict[str, Any] = {"known": [failed], "cpu_budget": 1}
    found = decide(snapshot(queue, **base))
    given_ = decide(snapshot(queue, dependent=(needing, after), **base))
    assert found == given_
    assert [s.id for s in found.skips] == [needing.id]
    assert "job49" in (found.waits[after.id].blocked_reason or "")


def test_a_head_that_holds_what_it_reserved_ends_the_walk() -> None:
    """With `max_bypass` 0 a head that waits for this queue's jobs keeps the capacity that
    comes free: nothing behind it may start, so the walk ends at the head, which the whole
    pass names as held."""
    big = job(1, cpu=3, mem=GB)
    small = [job(n, cpu=1, mem=GB) for n in range(2, 300)]
    snap = snapshot([big, *small], [running(5000, cpu=2, mem=GB)], cpu_budget=4, max_bypass=0)
    partial, read = _read(snap)
    assert [view.id for view in read] == [big.id]
    assert partial.queue_state == decide(snap).queue_state == "held"
    assert partial.starts == ()
