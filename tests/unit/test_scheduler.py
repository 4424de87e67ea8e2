"""One scheduler pass, case by case: admission, holders, bypass, pools, locks, pause, deps."""

from __future__ import annotations

from sched_factory import GB, job, job_id, running, snapshot

from qex.core import model
from qex.core.config import Pool
from qex.core.records import Assignment, PoolClaim
from qex.core.scheduler import decide
from qex.core.scheduler_types import Decision, JobView, KnownJob, PauseView, PeerLoad, Snapshot

GPU = Pool("gpu", devices=(24 * GB, 24 * GB), size="vram", env="CUDA_VISIBLE_DEVICES")
NET = Pool("net", count=2)


def started(decision: Decision) -> list[str]:
    return [start.id for start in decision.starts]


def reason(decision: Decision, n: int) -> str:
    update = decision.waits[job_id(n)]
    assert update.blocked_reason is not None
    return update.blocked_reason


def apply(snap: Snapshot, decision: Decision) -> Snapshot:
    """What the coordinator does with a decision: starts move to active, reasons are stored."""
    by_id = {s.id: s for s in decision.starts}
    gone = set(by_id) | {s.id for s in decision.skips} | {e.id for e in decision.expiries}
    queue: list[JobView] = []
    active = list(snap.active)
    for j in snap.queue:
        if j.id in by_id:
            active.append(model.replace(
                j, state="starting", started_at=snap.now, assigned=by_id[j.id].assigned,
                passed_by=0, blocked_since=None, blocked_reason=None))
        elif j.id not in gone:
            w = decision.waits.get(j.id)
            queue.append(j if w is None else model.replace(
                j, blocked_reason=w.blocked_reason, blocked_since=w.blocked_since,
                passed_by=w.passed_by))
    return model.replace(snap, queue=tuple(queue), active=tuple(active))


# --- admission --------------------------------------------------------------------------------

def test_jobs_that_fit_start_in_queue_order_and_each_start_counts_before_the_next() -> None:
    d = decide(snapshot([job(1, cpu=2), job(2, cpu=2), job(3, cpu=2)]))
    assert started(d) == [job_id(1), job_id(2)]
    assert "already use 4 of the 4 that the budget allows" in reason(d, 3)
    assert d.queue_state == "waits-for-capacity" and d.head_id == job_id(3)
    assert d.head_blocker == "the jobs of this queue"


def test_memory_of_this_queue_is_a_sibling_wait_too() -> None:
    d = decide(snapshot([job(1, mem=5 * GB)], [running(9, mem=4 * GB)]))
    assert started(d) == []
    assert reason(d, 1).startswith("waits for memory: it needs 5GB")


def test_an_empty_queue_is_running() -> None:
    d = decide(snapshot())
    assert d == Decision()


def test_a_decision_is_deterministic_and_an_unchanged_queue_writes_nothing() -> None:
    snap = snapshot([job(1, cpu=3), job(2, cpu=3), job(3)], [running(9, cpu=2)])
    first = decide(snap)
    assert first == decide(snap)
    assert started(first) == [job_id(3)]
    after = apply(snap, first)
    second = decide(after)  # job 3 now holds a core: the reasons say so
    assert second.starts == () and "already use 3 of the 4" in reason(second, 1)
    third = decide(apply(after, second))
    assert third.starts == () and third.waits == {}


# --- the bounded bypass -----------------------------------------------------------------------

def test_smaller_jobs_pass_the_head_until_max_bypass_then_capacity_is_kept() -> None:
    snap = snapshot([job(1, cpu=4), job(2), job(3), job(4)], [running(9, cpu=2)], cpu_budget=5)
    d = decide(snap)
    assert started(d) == [job_id(2), job_id(3)]
    assert d.waits[job_id(1)].passed_by == 2
    assert d.waits[job_id(1)].blocked_since == snap.now
    assert d.queue_state == "held"
    assert "2 jobs went ahead of this one already" in reason(d, 1)
    assert "waits its turn behind 00000001 (job1), the first job" in reason(d, 4)


def test_max_bypass_zero_keeps_strict_order_behind_a_sibling_head() -> None:
    d = decide(snapshot([job(1, cpu=3), job(2), job(3)], [running(9, cpu=2)], max_bypass=0))
    assert started(d) == []
    assert d.queue_state == "held"
    assert d.waits[job_id(1)].passed_by == 0
    assert "waits its turn behind" in reason(d, 2)


def test_blocked_since_is_kept_from_the_first_time_a_job_was_head() -> None:
    d = decide(snapshot([job(1, cpu=3, blocked_since=1234.0, passed_by=1), job(2)],
                        [running(9, cpu=2)]))
    assert d.waits[job_id(1)] .blocked_since == 1234.0
    assert d.waits[job_id(1)].passed_by == 2


def test_another_users_capacity_never_reserves_and_the_wording_says_so() -> None:
    peers = PeerLoad(count=1, cpu=2)
    d = decide(snapshot([job(1, cpu=3, passed_by=9), job(2), job(3)], peers=peers))
    assert started(d) == [job_id(2), job_id(3)]
    text = reason(d, 1)
    assert "this job cannot fit while another user holds capacity" in text
    assert "no one can say when the wait ends" in text
    assert d.queue_state == "waits-for-peer" and d.head_blocker == "another user"
    assert d.waits[job_id(1)].passed_by == 11


def test_the_passed_count_survives_a_change_of_holder_and_holds_at_once() -> None:
    peers = PeerLoad(count=1, cpu=2)
    snap = snapshot([job(1, cpu=3), job(2), job(3)], peers=peers, cpu_budget=4)
    after = apply(snap, decide(snap))
    assert after.queue[0].passed_by == 2
    # The other user leaves; this queue's two jobs now hold the cores: held in the same pass.
    d = decide(model.replace(after, peers=PeerLoad(), queue=(*after.queue, job(5))))
    assert d.queue_state == "held"
    assert started(d) == []


def test_a_head_that_is_parked_or_waits_for_the_machine_never_holds_the_queue() -> None:
    d = decide(snapshot([job(1, cpu=9, passed_by=5), job(2)], oversized="queue"))
    assert started(d) == [job_id(2)]
    assert d.queue_state == "parked"
    d = decide(snapshot([job(1, mem=6 * GB, passed_by=5), job(2)], mem_available=6 * GB,
                        reserve_mem=GB))
    assert started(d) == [job_id(2)]
    assert d.queue_state == "waits-for-machine" and d.head_blocker == "the machine"


# --- the machine ------------------------------------------------------------------------------

def test_available_memory_is_measured_once_so_each_start_takes_its_part() -> None:
    d = decide(snapshot([job(1, mem=2 * GB), job(2, mem=2 * GB), job(3, mem=2 * GB)],
                        mem_available=6 * GB, reserve_mem=GB, mem_budget=64 * GB))
    assert started(d) == [job_id(1), job_id(2)]
    assert "the machine can give a new program only 2GB now" in reason(d, 3)


def test_low_pressure_explains_that_swap_is_not_counted() -> None:
    d = decide(snapshot([job(1, mem=4 * GB)], mem_available=3 * GB, pressure=0.2))
    assert "not really scarce" in reason(d, 1) and "reserve_mem" in reason(d, 1)
    d = decide(snapshot([job(1, mem=4 * GB)], mem_available=3 * GB, pressure=5.0))
    assert "not really scarce" not in reason(d, 1)


def test_pressure_above_the_limit_holds_a_job() -> None:
    d = decide(snapshot([job(1)], pressure=30.0, max_pressure=20.0))
    assert started(d) == []
    assert "the machine reports 30.0, and `[system] max_pressure` allows at most 20" in reason(d, 1)
    assert d.queue_state == "waits-for-machine"


# --- oversized jobs ---------------------------------------------------------------------------

def test_an_oversized_job_starts_alone_when_the_queue_is_idle_and_settled() -> None:
    d = decide(snapshot([job(1, cpu=8), job(2)], idle_since=1990.0, settle=3.0))
    assert [(s.id, s.forced) for s in d.starts] == [(job_id(1), True)]
    assert d.starts[0].forced_reason is not None
    assert "more than the whole budget of 4 cores" in d.starts[0].forced_reason
    assert "waits for cores" in reason(d, 2)


def test_an_oversized_job_waits_for_idle_and_says_what_stands_in_the_way() -> None:
    cases = [
        ({"active": [running(9)]}, "1 job of this queue still runs and must end first"),
        ({"idle_since": 1999.0}, "must stay idle for 3s"),
        ({"peers": PeerLoad(count=1, pools={"net": 1})}, "another user holds capacity, which"),
        ({"pressure": 50.0}, "memory pressure is 50.0, more than the 20 allowed"),
    ]
    for extra, words in cases:
        active = extra.pop("active", [])
        d = decide(snapshot([job(1, mem=20 * GB)], active, **extra))
        assert started(d) == [], extra
        assert words in reason(d, 1), reason(d, 1)
        assert d.queue_state == "waits-for-idle"


def test_a_waiting_oversized_head_may_hold_the_queue_so_it_can_run_alone() -> None:
    d = decide(snapshot([job(1, cpu=8, passed_by=2), job(2)], [running(9)]))
    assert started(d) == []
    assert d.queue_state == "held"
    assert "lets this queue run dry for it" in reason(d, 1)


def test_oversized_queue_and_reject_policies_park_the_job() -> None:
    d = decide(snapshot([job(1, cpu=8)], oversized="queue"))
    assert "oversized = \"queue\"" in reason(d, 1) and started(d) == []
    d = decide(snapshot([job(1, cpu=8)], oversized="reject"))
    assert "will never start" in reason(d, 1) and started(d) == []


# --- pools ------------------------------------------------------------------------------------

def test_devices_are_assigned_and_counted_before_the_next_job() -> None:
    gpu = {"gpu": PoolClaim(1, 16 * GB)}
    snap = snapshot([job(1, claims=gpu), job(2, claims=gpu), job(3, claims=gpu)], pools=(GPU,))
    d = decide(snap)
    assert [s.assigned["gpu"].devices for s in d.starts] == [[0], [1]]
    assert "waits for the pool `gpu`" in reason(d, 3)
    assert "0 qualify now" in reason(d, 3)


def test_small_vram_claims_share_a_device() -> None:
    gpu = {"gpu": PoolClaim(1, 8 * GB)}
    active = [running(9, claims=gpu, assigned={"gpu": Assignment(1, [0], 8 * GB)})]
    d = decide(snapshot([job(1, claims=gpu), job(2, claims=gpu)], active, pools=(GPU,)))
    assert [s.assigned["gpu"].devices for s in d.starts] == [[1], [0]]


def test_a_pool_short_only_because_of_another_user_is_a_peer_wait() -> None:
    peers = PeerLoad(count=1, devices={"gpu": frozenset({0, 1})})
    d = decide(snapshot([job(1, claims={"gpu": PoolClaim(1)}, passed_by=7), job(2)],
                        pools=(GPU,), peers=peers))
    assert "another user holds the pool `gpu`" in reason(d, 1)
    assert started(d) == [job_id(2)]


def test_counted_pool_uses_peer_units_and_our_legacy_records() -> None:
    active = [running(9, locks=("net",))]  # an older record: no `assigned`
    net = {"net": PoolClaim(1)}
    d = decide(snapshot([job(1, claims=net), job(2, claims=net)],
                        active, pools=(NET,), peers=PeerLoad(count=1, pools={"net": 0})))
    assert started(d) == [job_id(1)]
    assert d.starts[0].assigned == {"net": Assignment(1)}
    assert "it needs 1 of the 2 units, and the running jobs of this queue use 2" in reason(d, 2)


def test_a_pool_that_changed_under_a_queued_job_parks_it() -> None:
    d = decide(snapshot([job(1, claims={"gpu": PoolClaim(3)}, passed_by=5), job(2)], pools=(GPU,)))
    assert "no longer fit what this job was accepted with" in reason(d, 1)
    assert started(d) == [job_id(2)] and d.queue_state == "parked"


# --- locks ------------------------------------------------------------------------------------

def test_an_implicit_lock_held_by_a_running_job_names_that_job() -> None:
    d = decide(snapshot([job(1, locks=("db",)), job(2)], [running(9, locks=("db",))]))
    assert started(d) == [job_id(2)]
    assert "the job 00000009 (job9) took it first" in reason(d, 1)
    assert d.head_id is None and d.queue_state == "running"


def test_a_lock_taken_by_a_start_in_this_pass_is_held_for_the_next_job() -> None:
    d = decide(snapshot([job(1, locks=("db",)), job(2, claims={"db": PoolClaim(1)})]))
    assert started(d) == [job_id(1)]
    assert "lock `db`" in reason(d, 2)


def test_a_lock_a_person_holds_matches_its_exact_name_only() -> None:
    pause = PauseView(locks={"gpu 0": ""})
    d = decide(snapshot([job(1, locks=("gpu 0",)), job(2, locks=("gpu_0",))], pause=pause))
    assert started(d) == [job_id(2)]
    assert "a person reserved it" in reason(d, 1) and "qex resume lock 'gpu 0'" in reason(d, 1)
    pause = PauseView(locks={"db": "waits for the lock `db`: Ann took it."})
    d = decide(snapshot([job(1, locks=("db",))], pause=pause))
    assert reason(d, 1) == "waits for the lock `db`: Ann took it."


# --- pause ------------------------------------------------------------------------------------

def test_a_paused_queue_starts_nothing_expires_nothing_but_still_skips() -> None:
    known = [KnownJob(job_id(50), "build", "failed")]
    snap = snapshot(
        [job(1), job(2, needs=(job_id(50),)), job(3, max_queue_time=1.0)],
        known=known, pause=PauseView(queue_reason="the queue is paused (demo)"),
    )
    d = decide(snap)
    assert d.starts == () and d.expiries == ()
    assert [s.id for s in d.skips] == [job_id(2)]
    assert reason(d, 1) == "the queue is paused (demo)"
    assert d.queue_state == "paused" and d.head_id is None


def test_a_pause_fault_holds_the_queue() -> None:
    d = decide(snapshot([job(1)], pause=PauseView(fault=True)))
    assert d.starts == () and d.queue_state == "paused-by-fault"
    assert "cannot be read" in reason(d, 1)


# --- dependencies -----------------------------------------------------------------------------

def test_needs_and_after_wait_without_becoming_the_head() -> None:
    build = running(50, name="build")
    d = decide(snapshot([job(1, needs=(build.id,)), job(2, after=(build.id,)), job(3)], [build]))
    assert started(d) == [job_id(3)]
    assert "waits for the job 00000050 (build) to complete first (it is running" in reason(d, 1)
    assert "whichever way it ends" in reason(d, 2)
    assert d.head_id is None


def test_after_a_failed_or_missing_job_is_ready_and_needs_completed_is_ready() -> None:
    known = [KnownJob(job_id(50), "a", "failed"), KnownJob(job_id(51), "b", "completed")]
    d = decide(snapshot([job(1, after=(job_id(50), job_id(77))), job(2, needs=(job_id(51),))],
                        known=known))
    assert started(d) == [job_id(1), job_id(2)]


def test_a_failed_need_skips_and_names_the_root_through_skipped_jobs() -> None:
    known = [
        KnownJob(job_id(50), "build", "failed"),
        KnownJob(job_id(51), "unit", "skipped", caused_by=job_id(50)),
    ]
    queue = [job(3, needs=(job_id(2),)), job(2, needs=(job_id(51),)), job(4, needs=(job_id(99),))]
    d = decide(snapshot(queue, known=known))
    skips = {s.id: s for s in d.skips}
    assert skips[job_id(2)].caused_by == job_id(50)
    assert skips[job_id(3)].caused_by == job_id(50)  # skipped in this same pass, out of order
    assert "00000050 (build)" in skips[job_id(3)].error
    assert "by way of the job 00000002 (job2)" in skips[job_id(3)].error
    assert "`qex logs 00000050` shows" in skips[job_id(2)].error
    assert skips[job_id(4)].caused_by == job_id(99) and "no longer exists" in skips[job_id(4)].error
    assert d.waits == {}


def test_a_cancelled_need_skips_without_pointing_at_logs() -> None:
    d = decide(snapshot([job(1, needs=(job_id(50),))],
                        known=[KnownJob(job_id(50), "x", "cancelled")]))
    assert "`cancelled`" in d.skips[0].error and "qex logs" not in d.skips[0].error


# --- expiry -----------------------------------------------------------------------------------

def test_a_job_expires_after_its_queue_time_minus_pauses() -> None:
    snap = snapshot(
        [job(1, cpu=3, max_queue_time=750.0, queue_pause_secs=200.0, submitted_at=1000.0),
         job(2, cpu=3, max_queue_time=900.0, submitted_at=1000.0)],
        [running(9, cpu=2)],
        now=1900.0,
    )
    d = decide(snap)
    assert [e.id for e in d.expiries] == [job_id(2)]
    assert "after 15m in the queue" in d.expiries[0].error
    assert "--max-queue-time of 15m" in d.expiries[0].error
    assert "waits for cores" in d.expiries[0].error
    assert job_id(2) not in d.waits


def test_expiry_spares_restarted_exempt_and_starting_jobs() -> None:
    snap = snapshot(
        [job(1, max_queue_time=1.0), job(2, cpu=9, max_queue_time=1.0, queue_time_applies=False),
         job(3, cpu=9, max_queue_time=1.0, started_at=10.0)],
        oversized="queue",
    )
    d = decide(snap)
    assert started(d) == [job_id(1)] and d.expiries == ()


def test_an_expiring_job_does_not_become_the_head() -> None:
    snap = snapshot([job(1, cpu=3, passed_by=5, max_queue_time=1.0), job(2)], [running(9, cpu=2)])
    d = decide(snap)
    assert [e.id for e in d.expiries] == [job_id(1)]
    assert started(d) == [job_id(2)] and d.head_id is None


def test_expiry_remedy_follows_the_cause() -> None:
    build = running(50, name="build")
    d = decide(snapshot([job(1, needs=(build.id,), max_queue_time=1.0),
                         job(2, locks=("db",), max_queue_time=1.0)],
                        [build, running(51, locks=("db",))]))
    errors = {e.id: e.error for e in d.expiries}
    assert "whole pipeline" in errors[job_id(1)]
    assert "different lock names" in errors[job_id(2)]


def test_reasons_show_names_in_safe_form() -> None:
    holder = running(9, name="evil\x1b[2Jname", locks=("db",))
    d = decide(snapshot([job(1, locks=("db",))], [holder]))
    assert "\x1b" not in reason(d, 1) and "evil_2Jname" in reason(d, 1)


def test_alike_jobs_on_either_side_of_a_start_are_judged_against_the_load_each_meets() -> None:
    """A wait is remembered for the jobs that ask the same, but only until a start changes
    the load: the job behind the start reads the cores that start took."""
    for claims in ({}, {"net": PoolClaim(1)}):
        queue = [job(1, cpu=3, claims=dict(claims)), job(2, cpu=1),
                 job(3, cpu=3, claims=dict(claims))]
        d = decide(snapshot(queue, [running(9, cpu=1)], cpu_budget=3, pools=(NET,)))
        assert [s.id for s in d.starts] == [job_id(2)]
        assert "already use 1 of the 3" in d.waits[job_id(1)].blocked_reason
        assert "already use 2 of the 3" in d.waits[job_id(3)].blocked_reason
