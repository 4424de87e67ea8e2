"""Dormant jobs: a queued job that waits for a dependency is left out of the passes until a
job it watches changes state (`Decision.dependency_waits`, `qex.coordinator.dormant`), and
one that waits for a lock until what the lock rule read of its names changes
(`Decision.lock_waits`, `qex.core.lock_table`).

The properties are what make this safe: with what it watches unchanged, a pass that reads a
dormant job gives it the reason it has and nothing else, and a pass without it decides the
same for every other job."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from coordkit import add_job, make_coord
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_factory import job, snapshot
from test_scheduler_partial import dependent_queues
from test_scheduler_properties import scenarios

from qex.coordinator import pausing, scheduling
from qex.coordinator.dormant import DormantJobs
from qex.coordinator.state import Coordinator, Job
from qex.core import lock_table, model
from qex.core.config import Pool
from qex.core.pools import effective_claims
from qex.core.scheduler import decide
from qex.core.scheduler_types import (
    Decision,
    DependencyWait,
    KnownJob,
    LockSeen,
    LockWait,
    PauseView,
    PeerLoad,
    Snapshot,
)
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
    assert dormant.wake_changed(states.get) == ([], [])
    states["b"] = "starting"
    assert sorted(dormant.wake_changed(states.get)[0]) == ["j2", "j3"]
    assert list(dormant.jobs) == ["j1"] and not dormant.watches("b")
    del states["a"]  # a job gone wakes its sleepers too
    assert dormant.wake_changed(states.get) == (["j1"], [])
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


# -- locks ------------------------------------------------------------------------------------

@st.composite
def held_by_people(draw: st.DrawFn) -> Snapshot:
    """A scenario (locks `db` and `disk`, pools `gpu` and `net`, jobs holding them), where
    a queued job may take both locks and a person may hold a lock or a pool's name."""
    snap = draw(scenarios())
    queue = tuple(model.replace(v, locks=("db", "disk")) if draw(st.booleans()) else v
                  for v in snap.queue)
    names = draw(st.lists(st.sampled_from(["db", "disk", "net"]), unique=True, max_size=2))
    return model.replace(snap, queue=queue,
                         pause=PauseView(locks={n: f"a person holds {n}" for n in names}))


def _after(snap: Snapshot, first: Decision) -> Snapshot:
    """The state that `first` leaves: its starts active, its skips and expiries gone, its
    reasons written."""
    starts = {s.id: s for s in first.starts}
    gone = {*starts, *(s.id for s in first.skips), *(e.id for e in first.expiries)}
    started = tuple(model.replace(v, state="starting", started_at=snap.now,
                                  assigned=dict(starts[v.id].assigned))
                    for v in snap.queue if v.id in starts)
    queue = tuple(
        model.replace(v, blocked_reason=first.waits[v.id].blocked_reason,
                      blocked_since=first.waits[v.id].blocked_since,
                      passed_by=first.waits[v.id].passed_by) if v.id in first.waits else v
        for v in snap.queue if v.id not in gone)
    active = (*snap.active, *started)
    known = {**snap.known, **{v.id: KnownJob(v.id, v.name, v.state) for v in (*queue, *active)}}
    return model.replace(snap, queue=queue, active=active, known=known,
                         dependent=tuple(v for v in queue if v.needs or v.after))


def _now_seen(snap: Snapshot) -> dict[str, LockSeen]:
    """What the coordinator would see of every lock name before the next pass."""
    held = lock_table.holders(snap.active, snap.pools)
    declared = {pool.name for pool in snap.pools}
    names = {"db", "disk", "gpu", "net"}
    return {n: lock_table.seen(n, declared, held.get(n), snap.pause.locks) for n in names}


@settings(max_examples=300, deadline=None)
@given(held_by_people())
def test_a_job_asleep_on_a_lock_keeps_its_reason_and_leaving_it_out_changes_nothing(
        snap: Snapshot) -> None:
    snap = _whole(snap)
    first = decide(snap)
    views = {v.id: v for v in snap.queue}
    ended = {s.id for s in first.starts} | {s.id for s in first.skips} | {
        e.id for e in first.expiries}
    holders = {v.id for v in snap.active} | {s.id for s in first.starts}
    waiting = {job_id: w for w in first.lock_waits for job_id in w.ids}
    assert sum(len(w.ids) for w in first.lock_waits) == len(waiting)  # once each
    assert len({w.watch for w in first.lock_waits}) == len(first.lock_waits)  # one group each
    for job_id, wait in waiting.items():
        view = views[job_id]
        assert job_id not in ended and view.max_queue_time is None
        assert first.waits[job_id].blocked_reason.startswith(("waits for the lock", "a person"))
        # It watches every name it claims, as the rule saw it.
        claims = effective_claims(view.locks, view.claims, snap.pools)
        assert [name for name, _ in wait.watch] == list(claims)
        for name, (pool, holder, person) in wait.watch:
            assert pool == (claims[name].pool is not None)
            assert holder is None or (holder in holders and not pool)
            assert person == snap.pause.locks.get(name)
    # The next pass, over the state this one left: a job whose names read as they did sleeps
    # through it. A whole judgement would start none of them, and would give each the same
    # reason and watch unless a start of that pass took one of its names, which the look
    # after the pass sees (`Coordinator.wake_locked`); and leaving the sleepers out changes
    # nothing for anyone else.
    nxt = _after(snap, first)
    seen = _now_seen(nxt)
    asleep = {job_id: w.watch for job_id, w in waiting.items()
              if all(seen[name] == was for name, was in w.watch)}
    again = decide(nxt)
    again_waiting = {job_id: w.watch for w in again.lock_waits for job_id in w.ids}
    seen_after = _now_seen(_after(nxt, again))
    for job_id, watch in asleep.items():
        assert job_id not in {s.id for s in again.starts}
        assert job_id in again_waiting
        if job_id in again.waits or again_waiting[job_id] != watch:
            assert any(seen_after[name] != was for name, was in watch)
    without = decide(_without(nxt, set(asleep)))
    assert without.starts == again.starts
    assert without.skips == again.skips
    assert without.expiries == again.expiries
    assert {k: v for k, v in again.waits.items() if k not in asleep} == dict(without.waits)
    assert {job_id for w in without.lock_waits for job_id in w.ids} == set(again_waiting) - set(
        asleep)
    assert (without.queue_state, without.head_id, without.head_blocker) == (
        again.queue_state, again.head_id, again.head_blocker)
    assert without.complete or not again.complete


def test_lock_waits_name_what_the_rule_read() -> None:
    holder = job(90, state="running", locks=("db",))
    both = job(1, locks=("db", "disk"))
    pooled = job(2, locks=("net",))
    timed = job(3, locks=("db",), max_queue_time=600.0)
    alike = job(4, locks=("disk", "db"))
    takes = job(5, locks=("disk",))
    after_it = job(6, locks=("db", "disk"))
    pools = (Pool("net", count=1),)
    decision = decide(snapshot([both, pooled, timed, alike, takes, after_it], [holder],
                               pools=pools, pause=PauseView(locks={"net": "a person holds net"})))
    assert [s.id for s in decision.starts] == [takes.id]
    assert decision.lock_waits == (
        LockWait((("db", (False, holder.id, None)), ("disk", (False, None, None))),
                 (both.id, alike.id)),
        LockWait((("net", (True, None, "a person holds net")),), (pooled.id,)),
        # A job that claims the same names after a start took one reads it held.
        LockWait((("db", (False, holder.id, None)), ("disk", (False, takes.id, None))),
                 (after_it.id,)),
    )


def _lock_wait(job_id: str, *watch: tuple[str, LockSeen]) -> LockWait:
    return LockWait(tuple(watch), (job_id,))


def test_jobs_asleep_on_a_lock_wake_when_what_they_read_of_it_moves() -> None:
    dormant = DormantJobs()
    db: LockSeen = (False, "a", None)
    free: LockSeen = (False, None, None)
    now = {"db": db, "disk": free}
    assert dormant.rest_locked([_lock_wait("j1", ("db", db)),
                                _lock_wait("j2", ("db", db), ("disk", free))]) == ["j1", "j2"]
    assert dormant.rest([_wait("j3", ("a", "running"))]) == ["j3"]
    assert dormant.watches_locks() and dormant.watches("a") and not dormant.watches("db")
    assert dormant.wake_changed({"a": "running"}.get, now.__getitem__) == ([], [])
    now["disk"] = (False, "b", None)  # another job took `disk`
    assert dormant.wake_changed({"a": "running"}.get, now.__getitem__) == ([], ["j2"])
    now["db"] = (False, "a", "a person holds db")
    assert dormant.wake_changed({"a": "running"}.get, now.__getitem__) == ([], ["j1"])
    assert not dormant.watches_locks() and list(dormant.jobs) == ["j3"]
    # Without a view of the locks, every job that sleeps on one wakes.
    assert dormant.rest_locked([_lock_wait("j4", ("db", db)), _lock_wait("j5", ("db", free))]) \
        == ["j4"]
    assert dormant.wake_changed({"a": "running"}.get) == ([], ["j4"])
    assert list(dormant.jobs) == ["j3"]
    # A group rests once; a job that sleeps already keeps its watch.
    assert dormant.rest_locked([LockWait((("db", db),), ("j6", "j7", "j3"))]) == ["j6", "j7"]
    assert dormant.jobs["j3"].keys == ("a",)


def test_the_coordinator_leaves_jobs_out_while_their_lock_is_held(tmp_path: Path) -> None:
    async def body() -> None:
        coord = make_coord(tmp_path)
        pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "hold"})  # none starts
        holder = add_job(coord, state="running", name="migrate", locks=["db"])
        waiting = [add_job(coord, locks=["db"]) for _ in range(4)]
        free = add_job(coord, locks=["disk"])
        scheduling.run_pass(coord, PeerLoad())
        assert set(coord.dormant.jobs) == {j.id for j in waiting}
        assert "migrate" in (waiting[0].record.blocked_reason or "")
        assert "hold" in (free.record.blocked_reason or "")
        assert [j.id for j in coord.judged_queued_jobs()] == [free.id]
        # Nothing changed: the next pass leaves them as they are.
        reasons = [j.record.blocked_reason for j in waiting]
        scheduling.run_pass(coord, PeerLoad())
        assert set(coord.dormant.jobs) == {j.id for j in waiting}
        # A person takes the lock: the person is named first; a person's release names the
        # job again.
        pausing.pause(coord, {"target": {"kind": "lock", "name": "db"}, "reason": "backup"})
        scheduling.run_pass(coord, PeerLoad())
        assert all("backup" in (j.record.blocked_reason or "") for j in waiting)
        assert set(coord.dormant.jobs) == {j.id for j in waiting}
        pausing.resume(coord, {"target": {"kind": "lock", "name": "db"}})
        scheduling.run_pass(coord, PeerLoad())
        assert [j.record.blocked_reason for j in waiting] == reasons
        # The config declares a pool `db` of two: a claim, no longer a lock.
        coord.config = model.replace(coord.config, pools=(Pool("db", count=2),))
        scheduling.run_pass(coord, PeerLoad())
        assert not coord.dormant
        assert all("hold" in (j.record.blocked_reason or "") for j in waiting)
        coord.config = model.replace(coord.config, pools=())
        scheduling.run_pass(coord, PeerLoad())
        assert set(coord.dormant.jobs) == {j.id for j in waiting}
        # The holder's processes end: its result waits for the disk (`pending`), and the
        # lock is free at once.
        holder.pending = holder.record
        scheduling.run_pass(coord, PeerLoad())
        assert not coord.dormant
        assert all("hold" in (j.record.blocked_reason or "") for j in waiting)
        coord.finish(waiting[0], State.CANCELLED, error="by hand")
        assert waiting[0].id not in coord.dormant

    asyncio.run(body())


def test_a_start_that_takes_a_name_a_sleeper_saw_free_wakes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that waits for `disk` and also claims `db` sleeps having seen `db` free; a
    later pass starts a job that takes `db`. A whole judgement would now name `db` (it comes
    first), so the look after that pass wakes the sleeper and asks for another pass."""
    def start(coord: Coordinator, job: Job, *_: object) -> None:
        job.record.state = "starting"
        coord.queue.remove(job.id)

    monkeypatch.setattr(scheduling, "start_job", start)

    async def body() -> None:
        coord = make_coord(tmp_path)
        fsck = add_job(coord, state="running", name="fsck", locks=["disk"])
        both = add_job(coord, locks=["db", "disk"])
        needer = add_job(coord, needs=[fsck.id])
        scheduling.run_pass(coord, PeerLoad())
        assert both.id in coord.dormant and "fsck" in (both.record.blocked_reason or "")
        assert needer.id in coord.dormant
        kicks: list[bool] = []
        monkeypatch.setattr(coord, "kick", lambda: kicks.append(True))
        migrate = add_job(coord, name="migrate", locks=["db"])
        scheduling.run_pass(coord, PeerLoad())
        assert migrate.record.state == "starting"
        assert both.id not in coord.dormant and kicks
        assert needer.id in coord.dormant  # the look after a pass reads only the locks
        scheduling.run_pass(coord, PeerLoad())
        assert "migrate" in (both.record.blocked_reason or "")
        assert both.id in coord.dormant
        # A pass whose starts take no watched name wakes nobody.
        kicks.clear()
        add_job(coord, name="plain")
        scheduling.run_pass(coord, PeerLoad())
        assert both.id in coord.dormant and not kicks

    asyncio.run(body())
