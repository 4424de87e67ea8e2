"""Invariants of the scheduler over random queues, loads, pools, peers and pauses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_factory import GB, job, snapshot

from qex.core import model, scheduler
from qex.core.config import Pool
from qex.core.pools import PoolUsage, assign, pool_usage
from qex.core.records import PoolClaim
from qex.core.scheduler import decide
from qex.core.scheduler_types import Decision, JobView, KnownJob, PauseView, PeerLoad, Snapshot
from qex.core.states import FINAL, State

OWN_HOLDERS = {"the jobs of this queue", "its own size"}


@st.composite
def pools(draw: st.DrawFn) -> tuple[Pool, ...]:
    sizes = draw(st.lists(st.sampled_from([8, 16, 24, 24]), min_size=1, max_size=4))
    gpu = Pool("gpu", devices=tuple(s * GB for s in sizes), size="vram", env="CUDA_VISIBLE_DEVICES")
    return (gpu, Pool("net", count=draw(st.integers(1, 4))))


@st.composite
def queued_jobs(draw: st.DrawFn, first: int, count: int) -> list[JobView]:
    jobs = []
    for n in range(first, first + count):
        claims: dict[str, PoolClaim] = {}
        if draw(st.booleans()):
            size = draw(st.one_of(st.none(), st.sampled_from([4, 8, 8, 12]).map(lambda g: g * GB)))
            claims["gpu"] = PoolClaim(draw(st.integers(1, 2)), size)
        if draw(st.booleans()):
            claims["net"] = PoolClaim(draw(st.integers(1, 2)))
        locks = tuple(draw(st.lists(st.sampled_from(["db", "disk"]), max_size=1)))
        jobs.append(job(
            n,
            cpu=draw(st.sampled_from([1, 1, 1, 2, 3, 6])),
            mem=draw(st.sampled_from([1, 1, 2, 3, 6, 10])) * GB,
            claims=claims,
            locks=locks,
            passed_by=draw(st.sampled_from([0, 0, 0, 1, 3])),
        ))
    return jobs


@st.composite
def scenarios(draw: st.DrawFn) -> Snapshot:
    """A queue on top of active jobs that an earlier pass really started (so they are valid)."""
    declared = draw(pools())
    base: dict[str, Any] = {
        "cpu_budget": draw(st.integers(2, 12)),
        "mem_budget": draw(st.integers(4, 24)) * GB,
        "pools": declared,
        "oversized": draw(st.sampled_from(["run-when-idle", "run-when-idle", "queue", "reject"])),
        "max_bypass": draw(st.sampled_from([0, 1, 2, 2, 3, 5])),
    }
    earlier = draw(queued_jobs(100, draw(st.integers(0, 4))))
    first = decide(snapshot(earlier, **base))
    by_id = {s.id: s for s in first.starts}
    active = [
        model.replace(j, state="running", started_at=1500.0, assigned=by_id[j.id].assigned)
        for j in earlier if j.id in by_id
    ]
    queue = draw(queued_jobs(1, draw(st.integers(1, 12))))
    gpu_total = declared[0].total
    peers = PeerLoad(
        count=1,
        cpu=draw(st.sampled_from([0, 0, 1, 3])),
        mem=draw(st.sampled_from([0, 0, 1, 4])) * GB,
        pools={"net": draw(st.integers(0, 2))},
        devices={"gpu": frozenset(draw(st.lists(st.integers(0, gpu_total - 1), max_size=2)))},
    )
    return snapshot(
        queue, active,
        peers=draw(st.sampled_from([PeerLoad(), peers])),
        mem_available=draw(st.one_of(st.none(), st.none(), st.integers(0, 24).map(gigabytes))),
        reserve_mem=draw(st.sampled_from([0, GB, 2 * GB])),
        pressure=draw(st.one_of(st.none(), st.none(), st.floats(0, 40))),
        idle_since=draw(st.one_of(st.none(), st.floats(1900, 2000))),
        **base,
    )


def gigabytes(count: int) -> int:
    return count * GB


def position(snap: Snapshot, job_id: str) -> int:
    return next(i for i, j in enumerate(snap.queue) if j.id == job_id)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_non_forced_starts_stay_within_the_budget_the_peers_and_free_memory(snap: Snapshot) -> None:
    d = decide(snap)
    assert d == decide(snap)
    queued = {j.id: j for j in snap.queue}
    new = [queued[s.id] for s in d.starts]
    if any(s.forced for s in d.starts):
        assert len(d.starts) == 1 and not snap.active
        return
    if not new:
        return
    cpu = sum(j.cpu for j in (*snap.active, *new))
    mem = sum(j.mem for j in (*snap.active, *new))
    peers = snap.peers
    if peers.cpu or peers.mem:
        cpu, mem = cpu + peers.cpu, mem + peers.mem
    assert cpu <= snap.cpu_budget
    assert mem <= snap.mem_budget
    if snap.mem_available is not None:
        assert snap.mem_available - sum(j.mem for j in new) >= snap.reserve_mem
    if snap.pressure is not None:
        assert snap.pressure <= snap.max_pressure


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_device_capacity_and_pool_totals_are_never_exceeded(snap: Snapshot) -> None:
    d = decide(snap)
    gpu, net = snap.pools
    everything = [j.assigned for j in snap.active] + [s.assigned for s in d.starts]
    usage = pool_usage(everything, snap.pools)
    if "gpu" in usage:
        for index, used in usage["gpu"].per_device.items():
            assert used <= (gpu.devices or ())[index]
    peer_devices = snap.peers.devices.get("gpu", frozenset())
    for start in d.starts:
        if "gpu" in start.assigned:
            got = start.assigned["gpu"]
            assert not set(got.devices) & peer_devices
            assert len(got.devices) == len(set(got.devices)) == got.units
    if any("net" in s.assigned for s in d.starts):
        assert usage["net"].units + snap.peers.pools.get("net", 0) <= net.total


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_devices_alone_never_overfill_and_never_use_a_peers_device(data: st.DataObject) -> None:
    """Only GPU claims and a generous budget, so every pass really places devices."""
    draw = data.draw
    gpu = Pool("gpu", devices=tuple(draw(st.lists(st.sampled_from([8 * GB, 24 * GB]),
                                                  min_size=1, max_size=4))), size="vram")

    def gpu_jobs(first: int, count: int) -> list[JobView]:
        sizes = st.one_of(st.none(), st.sampled_from([4 * GB, 8 * GB, 16 * GB]))
        return [job(n, claims={"gpu": PoolClaim(draw(st.integers(1, 2)), draw(sizes))})
                for n in range(first, first + count)]

    base: dict[str, Any] = {
        "cpu_budget": 64, "mem_budget": 256 * GB, "pools": (gpu,), "max_bypass": 10**6,
    }
    earlier = gpu_jobs(100, draw(st.integers(0, 4)))
    first = decide(snapshot(earlier, **base))
    by_id = {s.id: s for s in first.starts}
    active = [model.replace(j, state="running", assigned=by_id[j.id].assigned)
              for j in earlier if j.id in by_id]
    peer_devices = frozenset(draw(st.lists(st.integers(0, gpu.total - 1), max_size=2)))
    snap = snapshot(gpu_jobs(1, draw(st.integers(1, 8))), active,
                    peers=PeerLoad(count=1, devices={"gpu": peer_devices}), **base)
    d = decide(snap)
    usage = pool_usage([j.assigned for j in active] + [s.assigned for s in d.starts], (gpu,))
    for index, used in usage.get("gpu", PoolUsage()).per_device.items():
        assert used <= (gpu.devices or ())[index]
    for start in d.starts:
        assert not set(start.assigned["gpu"].devices) & peer_devices
    # No head is held here, so the pass wastes nothing: a job left waiting cannot be placed
    # even now (usage only grows during a pass, so it could not be placed at its turn either).
    final = usage.get("gpu", PoolUsage())
    placed = {s.id for s in d.starts}
    for j in snap.queue:
        if j.id not in placed:
            assert assign(j.claims["gpu"], gpu, final, peer_devices) is None


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_a_head_that_keeps_capacity_is_passed_at_most_max_bypass_times(snap: Snapshot) -> None:
    d = decide(snap)
    if d.head_id is None or d.head_blocker not in OWN_HOLDERS:
        return
    head_at = position(snap, d.head_id)
    behind = [s for s in d.starts if position(snap, s.id) > head_at]
    before = snap.queue[head_at].passed_by
    assert len(behind) <= max(0, snap.max_bypass - before)
    if snap.max_bypass == 0:
        assert behind == [] and d.queue_state == "held"
    if d.queue_state != "held":
        assert before + len(behind) < snap.max_bypass


@settings(max_examples=50, deadline=None)
@given(scenarios())
def test_a_paused_queue_starts_nothing_and_expires_nothing(snap: Snapshot) -> None:
    for pause in (PauseView(queue_reason="paused for a test"), PauseView(fault=True)):
        d = decide(model.replace(snap, pause=pause))
        assert d.starts == () and d.expiries == ()
        assert d.queue_state in ("paused", "paused-by-fault")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_held_head_starts_before_anything_behind_it(data: st.DataObject) -> None:
    """Run passes while active jobs end one by one: nothing overtakes a held head.

    A held head stops being the head without starting in two ways only: a job in front of it
    becomes ready (when a lock it waited for comes free), or a job that passed it took a lock
    that it needs (a lock wait keeps no capacity, by design).
    """
    queue = data.draw(queued_jobs(1, data.draw(st.integers(2, 10))))
    declared = (Pool("gpu", devices=(24 * GB, 24 * GB), size="vram"), Pool("net", count=2))
    snap = snapshot(queue, cpu_budget=6, mem_budget=12 * GB,
                    max_bypass=data.draw(st.integers(0, 2)), pools=declared)
    held: str | None = None
    for _ in range(40):
        d = decide(snap)
        if held is not None:
            ids = [s.id for s in d.starts]
            if held in ids:
                held = None
            elif d.head_id == held:
                assert all(position(snap, i) < position(snap, held) for i in ids)
            elif d.head_id is None or position(snap, d.head_id) > position(snap, held):
                update = d.waits.get(held)
                assert update is not None and update.blocked_reason is not None
                assert update.blocked_reason.startswith("waits for the lock")
                held = None
        if d.queue_state == "held":
            held = d.head_id
        snap = _apply(snap, d)
        if snap.active:  # the oldest active job ends
            snap = model.replace(snap, active=snap.active[1:], idle_since=None)
        if not snap.queue and not snap.active:
            break


def _apply(snap: Snapshot, d: Decision) -> Snapshot:
    by_id = {s.id: s for s in d.starts}
    gone = set(by_id) | {s.id for s in d.skips} | {e.id for e in d.expiries}
    active = list(snap.active)
    queue = []
    for j in snap.queue:
        if j.id in by_id:
            active.append(model.replace(j, state="running", assigned=by_id[j.id].assigned))
        elif j.id not in gone:
            w = d.waits.get(j.id)
            queue.append(j if w is None else model.replace(
                j, blocked_reason=w.blocked_reason, blocked_since=w.blocked_since,
                passed_by=w.passed_by))
    return model.replace(snap, queue=tuple(queue), active=tuple(active))


FAILED_STATES = sorted(s.value for s in FINAL - {State.COMPLETED, State.SKIPPED})


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_skipped_job_is_caused_by_a_job_that_failed(data: st.DataObject) -> None:
    draw = data.draw
    known = []
    for n in range(50, 50 + draw(st.integers(0, 5))):
        known.append(KnownJob(job(n).id, f"k{n}", draw(st.sampled_from(["completed", "running",
                                                                          *FAILED_STATES]))))
    failed = [k.id for k in known if k.state in FAILED_STATES]
    if failed:  # a job skipped by an earlier pass points at its root
        root = draw(st.sampled_from(failed))
        known.append(KnownJob(job(60).id, "k60", "skipped", caused_by=root))
    count = draw(st.integers(1, 8))
    ids = [job(n).id for n in range(1, count + 1)] + [k.id for k in known]
    queue = [
        job(n, needs=tuple(draw(st.lists(st.sampled_from(ids), max_size=2))),
            after=tuple(draw(st.lists(st.sampled_from(ids), max_size=1))))
        for n in range(1, count + 1)
    ]
    draw(st.randoms()).shuffle(queue)
    snap = snapshot(queue, known=known)
    d = decide(snap)
    states = {k.id: k.state for k in known}
    for skip in d.skips:
        assert skip.caused_by in states
        assert states[skip.caused_by] in FAILED_STATES
    skipped = {s.id for s in d.skips}
    for j in snap.queue:  # every job with a failed need is skipped, in this very pass
        if any(states.get(dep) in (*FAILED_STATES, "skipped") or dep in skipped for dep in j.needs):
            assert j.id in skipped


@st.composite
def alike_queues(draw: st.DrawFn) -> Snapshot:
    """A queue of jobs without locks or pools, few sizes, behind a small budget: many jobs
    judged against the same load, and starts of small jobs between waits of larger ones."""
    queue = [job(n, cpu=draw(st.sampled_from([1, 2, 3])), mem=draw(st.sampled_from([1, 2, 5])) * GB,
                 passed_by=draw(st.sampled_from([0, 0, 2])))
             for n in range(1, draw(st.integers(2, 16)))]
    return snapshot(queue, [], cpu_budget=draw(st.integers(1, 6)),
                    mem_budget=draw(st.integers(2, 12)) * GB,
                    mem_available=draw(st.one_of(st.none(), st.integers(0, 12).map(gigabytes))),
                    max_bypass=draw(st.sampled_from([0, 1, 3])),
                    oversized=draw(st.sampled_from(["run-when-idle", "queue"])))


@st.composite
def alike_claimed_queues(draw: st.DrawFn) -> Snapshot:
    """A scenario whose queue is made again of a few kinds of its jobs (cores, memory,
    pools, locks): many jobs with the same claims judged against the same load and peers."""
    snap = draw(scenarios())
    kinds = snap.queue[:3]
    queue = [job(n, cpu=kind.cpu, mem=kind.mem, claims=dict(kind.claims), locks=kind.locks,
                 passed_by=draw(st.sampled_from([0, 0, 2])))
             for n, kind in enumerate(draw(st.lists(st.sampled_from(kinds), min_size=2,
                                                    max_size=20)), start=1)]
    known = {view.id: KnownJob(view.id, view.name, view.state) for view in (*queue, *snap.active)}
    return model.replace(snap, queue=tuple(queue), known=known)


def _effective_claims_afresh(walk: scheduler._Walk, view: JobView) -> Any:
    return scheduler.effective_claims(view.locks, view.claims, walk.pools.values())


def _decides_as_afresh(snap: Snapshot) -> None:
    remembered = decide(snap)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scheduler._Walk, "judge", scheduler._Walk._judge)
        patch.setattr(scheduler._Walk, "claims_of", _effective_claims_afresh)
        afresh = decide(snap)
    assert remembered == afresh


@settings(max_examples=300, deadline=None)
@given(st.one_of(scenarios(), alike_queues()))
def test_judging_alike_jobs_once_per_load_decides_as_judging_each(snap: Snapshot) -> None:
    """The pass remembers a wait by the job's cores, memory, claims and the load at that
    moment; deciding with that memory gives the decision that judging every job afresh
    gives."""
    _decides_as_afresh(snap)


@settings(max_examples=300, deadline=None)
@given(alike_claimed_queues())
def test_judging_alike_claimed_jobs_once_per_load_decides_as_judging_each(snap: Snapshot
                                                                          ) -> None:
    """The same for jobs with pools and locks: their claims are made once for all the jobs
    that ask the same, and their waits remembered with them."""
    _decides_as_afresh(snap)
