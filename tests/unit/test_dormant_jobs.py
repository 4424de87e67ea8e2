"""Dormant jobs: a queued job that waits for a dependency is left out of the passes until a
job it watches changes state (`Decision.dependency_waits`, `qex.coordinator.dormant`).

The property is what makes this safe: with the states unchanged, a pass that reads a
dormant job gives it the reason it has and nothing else, and a pass without it decides the
same for every other job."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coordkit import add_job, make_coord
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_factory import job, snapshot
from test_scheduler_partial import dependent_queues
from test_scheduler_properties import scenarios

from qex.coordinator import pausing, scheduling
from qex.coordinator.dormant import DormantJobs
from qex.core import model
from qex.core.scheduler import decide
from qex.core.scheduler_types import DependencyWait, KnownJob, PeerLoad, Snapshot
from qex.core.states import FINAL, State

FINAL_WORDS = {state.value for state in FINAL}


def _whole(snap: Snapshot) -> Snapshot:
    """`snap` as the coordinator gives it: the index of dependent jobs, and every job known
    (the coordinator's table holds all of them, queued ones included)."""
    known = {**snap.known,
             **{v.id: KnownJob(v.id, v.name, v.state) for v in (*snap.queue, *snap.active)
                if v.id not in snap.known}}
    dependent = tuple(v for v in snap.queue if v.needs or v.after)
    return model.replace(snap, known=known, dependent=dependent)


def _without(snap: Snapshot, ids: set[str]) -> Snapshot:
    assert snap.dependent is not None
    return model.replace(snap, queue=tuple(v for v in snap.queue if v.id not in ids),
                         dependent=tuple(v for v in snap.dependent if v.id not in ids))


@settings(max_examples=300, deadline=None)
@given(st.one_of(scenarios(), dependent_queues()))
def test_a_dormant_job_keeps_its_reason_and_leaving_it_out_changes_nothing(
        snap: Snapshot) -> None:
    snap = _whole(snap)
    first = decide(snap)
    dormant = {w.id: w for w in first.dependency_waits}
    views = {v.id: v for v in snap.queue}
    ended = {s.id for s in first.starts} | {s.id for s in first.skips} | {
        e.id for e in first.expiries}
    for job_id, wait in dormant.items():
        view = views[job_id]
        assert job_id not in ended
        assert view.max_queue_time is None
        # It watches exactly its dependencies that have not stopped, with their states.
        pending = {dep for dep in (*view.needs, *view.after)
                   if dep in snap.known and snap.known[dep].state not in FINAL_WORDS}
        assert pending and {dep for dep, _ in wait.watch} == pending
        for dep, state in wait.watch:
            assert snap.known[dep].state == state
    # The same states, the reasons of this pass written: each dormant job keeps its reason.
    updated = tuple(
        model.replace(v, blocked_reason=first.waits[v.id].blocked_reason)
        if v.id in dormant and v.id in first.waits else v for v in snap.queue)
    again = decide(_whole(model.replace(snap, queue=updated)))
    for job_id, wait in dormant.items():
        assert job_id not in again.waits
        assert wait in again.dependency_waits
    # Left out, the pass decides the same for everyone else.
    without = decide(_without(snap, set(dormant)))
    assert without.starts == first.starts
    assert without.skips == first.skips
    assert without.expiries == first.expiries
    assert {k: v for k, v in first.waits.items() if k not in dormant} == dict(without.waits)
    assert without.dependency_waits == ()
    assert (without.queue_state, without.head_id, without.head_blocker) == (
        first.queue_state, first.head_id, first.head_blocker)
    assert without.settled == first.settled
    # A partial walk may reach its end now where the dormant jobs lay behind its stop.
    assert without.complete or not first.complete


def test_waits_name_the_dependencies_that_have_not_stopped() -> None:
    done = KnownJob(job(900).id, "build", "completed")
    runs = KnownJob(job(901).id, "lint", "running")
    queued_dep = job(7)
    both = job(1, needs=(done.id, queued_dep.id), after=(runs.id,))
    timed = job(2, needs=(runs.id,), max_queue_time=600.0)
    decision = decide(snapshot([queued_dep, both, timed], known=[done, runs], cpu_budget=1))
    assert decision.dependency_waits == (
        DependencyWait(both.id, ((queued_dep.id, "queued"), (runs.id, "running"))),)


def _wait(job_id: str, *watch: tuple[str, str]) -> DependencyWait:
    return DependencyWait(job_id, tuple(watch))


def test_dormant_jobs_wake_when_a_watched_state_changes() -> None:
    dormant = DormantJobs()
    states = {"a": "running", "b": "queued"}
    assert dormant.rest([_wait("j1", ("a", "running")), _wait("j2", ("a", "running"), ("b", "queued")),
                         _wait("j3", ("b", "queued"))]) == ["j1", "j2", "j3"]
    assert len(dormant) == 3 and dormant.watches("a") and dormant.watches("b")
    assert dormant.wake_changed(states.get) == []
    states["b"] = "starting"
    assert sorted(dormant.wake_changed(states.get)) == ["j2", "j3"]
    assert list(dormant.jobs) == ["j1"] and not dormant.watches("b")
    del states["a"]  # a job gone wakes its sleepers too
    assert dormant.wake_changed(states.get) == ["j1"]
    assert not dormant and not dormant.watches("a")


def test_a_verdict_that_disagrees_with_another_stays_awake() -> None:
    dormant = DormantJobs()
    assert dormant.rest([_wait("j1", ("a", "queued")), _wait("j2", ("a", "running")),
                         _wait("j1", ("a", "queued")), _wait("j4")]) == ["j1"]
    assert dormant.discard("j1") and not dormant.discard("j1")
    assert not dormant.watches("a")


def test_the_coordinator_leaves_dormant_jobs_out_until_their_need_ends(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "hold"})  # none starts
        lint = add_job(coord, state="running", name="lint")
        fan = [add_job(coord, needs=[lint.id]) for _ in range(5)]
        follower = add_job(coord, after=[fan[0].id])
        scheduling.run_pass(coord, PeerLoad())
        assert {j.id for j in fan} | {follower.id} == set(coord.dormant.jobs)
        assert "lint" in (fan[0].record.blocked_reason or "")
        assert list(coord.dependent_queued_jobs()) == []
        assert len(scheduling.QueueViews(coord)) == 0  # a pass reads none of them
        assert coord.awaited(lint.id) and coord.awaited(fan[0].id)
        coord.finish(fan[4], State.CANCELLED, error="by hand")
        assert fan[4].id not in coord.dormant
        # Nothing changed: the next pass judges nobody and changes no reason.
        reasons = [j.record.blocked_reason for j in (*fan[:4], follower)]
        scheduling.run_pass(coord, PeerLoad())
        assert [j.record.blocked_reason for j in (*fan[:4], follower)] == reasons
        # The need ends: its sleepers wake and now wait for the pause; the follower, whose
        # job did not change, sleeps on.
        lint.record.state = "completed"
        scheduling.run_pass(coord, PeerLoad())
        assert set(coord.dormant.jobs) == {follower.id}
        assert all("hold" in (j.record.blocked_reason or "") for j in fan[:4])
        assert follower.record.blocked_reason == reasons[-1]

    asyncio.run(body())


def test_a_dormant_job_is_skipped_once_its_need_fails(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "hold"})
        build = add_job(coord, name="build")
        tests = [add_job(coord, needs=[build.id]) for _ in range(3)]
        scheduling.run_pass(coord, PeerLoad())
        assert set(coord.dormant.jobs) == {j.id for j in tests}
        assert "queued" in (tests[0].record.blocked_reason or "")
        coord.finish(build, State.FAILED, error="broke")
        assert coord.awaited(build.id)
        scheduling.run_pass(coord, PeerLoad())
        assert {j.record.state for j in tests} == {"skipped"}
        assert {j.record.caused_by for j in tests} == {build.id}
        assert not coord.dormant

    asyncio.run(body())
