"""`Decision.settled`: the queued jobs whose dependencies are met for good, which the
coordinator then stops giving to the dependency rules; a pass without them decides the
same."""

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
from qex.core import model
from qex.core.scheduler import decide
from qex.core.scheduler_types import KnownJob, PeerLoad, Snapshot
from qex.core.states import FINAL


def _dependent(snap: Snapshot) -> list[object]:
    return [view for view in snap.queue if view.needs or view.after]


@settings(max_examples=300, deadline=None)
@given(st.one_of(scenarios(), dependent_queues()))
def test_a_pass_without_the_settled_jobs_decides_the_same(snap: Snapshot) -> None:
    """Each settled job waits for nothing and nothing rules it out; left out of
    `dependent`, the next pass over the same state makes the same decision, and settles
    nothing more."""
    first = decide(model.replace(snap, dependent=tuple(_dependent(snap))))
    dependent_ids = {view.id for view in _dependent(snap)}  # type: ignore[attr-defined]
    assert set(first.settled) <= dependent_ids
    for job_id in first.settled:
        assert job_id not in {s.id for s in first.skips}
        view = next(v for v in snap.queue if v.id == job_id)
        for dep in view.needs:
            found = snap.known.get(dep)
            assert found is not None and found.state == "completed"
        for dep in view.after:
            found = snap.known.get(dep)
            assert found is None or found.state in {s.value for s in FINAL}
    kept = tuple(v for v in _dependent(snap) if v.id not in first.settled)  # type: ignore[attr-defined]
    again = decide(model.replace(snap, dependent=kept))
    assert again == model.replace(first, settled=())


def test_jobs_that_need_a_completed_job_settle_and_the_others_wait() -> None:
    done = KnownJob(job(900).id, "build", "completed")
    runs = KnownJob(job(901).id, "lint", "running")
    fan = [job(n, needs=(done.id,)) for n in range(1, 5)]
    mixed = job(5, needs=(done.id,), after=(runs.id,))
    decision = decide(snapshot([*fan, mixed], known=[done, runs], cpu_budget=1))
    assert decision.settled == tuple(j.id for j in fan)
    assert "lint" in (decision.waits[mixed.id].blocked_reason or "")


def test_the_coordinator_stops_judging_settled_jobs_and_judges_new_ones(
        tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "hold"})  # none starts
        build = add_job(coord, state="completed", name="build")
        lint = add_job(coord, state="running", name="lint")
        fan = [add_job(coord, needs=[build.id]) for _ in range(5)]
        waiting = add_job(coord, after=[lint.id])
        assert {j.id for j in coord.dependent_queued_jobs()} == {j.id for j in (*fan, waiting)}
        scheduling.run_pass(coord, PeerLoad())
        assert {j.record.state for j in fan} == {"queued"}
        # The job that waits for `lint` is dormant now (`qex.coordinator.dormant`).
        assert [j.id for j in coord.dependent_queued_jobs()] == []
        assert waiting.id in coord.dormant
        assert coord.awaited(lint.id) and not coord.awaited(build.id)
        later = add_job(coord, needs=[build.id])
        assert later.id in {j.id for j in coord.dependent_queued_jobs()}

    asyncio.run(body())
