"""The sentences the scheduler writes: why one job waits, why it was skipped or expired.

Pure. Every reason names the HOLDER (the jobs of this queue, another user, the machine, the
job's own size, a lock and who has it, a dependency) and what ends the wait, because a queue
that does not move with no stated cause is the complaint this text exists to answer. Names
and lock names pass through `safe_name`, so text from another agent cannot repaint a screen.
"""

from __future__ import annotations

from qex.core.names import safe_name, short_id
from qex.core.size_check import cores_text
from qex.core.units import format_duration, format_size


def job_label(job_id: str, name: str) -> str:
    """`a1b2c3d4 (build)`: how every reason names a job."""
    return f"{short_id(job_id)} ({safe_name(name)})"


def _jobs(count: int) -> str:
    return "1 job" if count == 1 else f"{count} jobs"


# --- dependencies ---------------------------------------------------------------------------

def needs_waiting(dep_label: str, dep_state: str) -> str:
    return (
        f"waits for the job {dep_label} that it needs, which is {dep_state}; this job starts "
        "once that one completes, and is skipped if that one ends any other way."
    )


def after_waiting(dep_label: str, dep_state: str) -> str:
    return (
        f"waits for the job {dep_label} to stop (it is {dep_state}); this job runs after that "
        "one ends, whatever its result."
    )


def needs_gone(dep_id: str) -> str:
    return (
        f"the record of the job {short_id(dep_id)} that this job needs is gone, so qex cannot "
        "tell whether it succeeded, and this job did not run. Submit it again without that "
        "dependency if it should still run."
    )


def needs_broken(root_id: str, root_label: str, root_state: str, via_label: str | None) -> str:
    chain = f" (through the job {via_label})" if via_label else ""
    text = (
        f"this job did not run because the job {root_label} that it depends on{chain} ended "
        f"as `{root_state}`."
    )
    if root_state not in ("cancelled", "expired", "skipped"):
        text += f" Read `qex logs {short_id(root_id)}` for the cause."
    return text


# --- locks ----------------------------------------------------------------------------------

def lock_held_by_job(lock: str, holder_label: str) -> str:
    return (
        f"waits for the lock `{safe_name(lock)}`: the job {holder_label} holds it, and it is "
        "free again when that job stops."
    )


# --- capacity: this queue -------------------------------------------------------------------

def _behind_may_start() -> str:
    return "jobs behind this one may start in the meantime."


def _held_tail(passed: int) -> str:
    return (
        f"{_jobs(passed)} already started ahead of it, so qex now keeps the capacity that "
        "frees up for this job and starts nothing behind it."
    )


def own_cores(need: int, held: int, budget: int) -> str:
    return (
        f"waits for cores: it needs {cores_text(need)}, and the jobs of this queue hold {held} "
        f"of the {cores_text(budget)} in the budget. They release them when they stop;"
    )


def own_memory(need: int, held: int, budget: int) -> str:
    return (
        f"waits for memory: it needs {format_size(need)}, and the jobs of this queue hold "
        f"{format_size(held)} of the {format_size(budget)} budget. They release it when they stop;"
    )


def sibling_free(text: str) -> str:
    return f"{text} {_behind_may_start()}"


def sibling_held(text: str, passed: int) -> str:
    return f"{text} {_held_tail(passed)} `qex list` shows what holds it."


def pool_sibling(name: str, arithmetic: str) -> str:
    return (
        f"waits for the pool `{safe_name(name)}`: {arithmetic} The jobs of this queue release "
        "it when they stop;"
    )


# --- capacity: other users ------------------------------------------------------------------

def peer_capacity(details: list[str], peers: int) -> str:
    who = "another user" if peers <= 1 else f"other users ({peers} queues)"
    return (
        f"this job cannot fit while another user holds capacity: {'; '.join(details)}. "
        f"qex cannot make {who} release it, so this wait has no known end; "
        f"{_behind_may_start()} `qex info` shows the load of the machine."
    )


def peer_cores(need: int, ours: int, theirs: int, budget: int) -> str:
    return (
        f"it needs {cores_text(need)}, this queue holds {ours} and other users hold {theirs} "
        f"of the {cores_text(budget)} in the budget"
    )


def peer_memory(need: int, ours: int, theirs: int, budget: int) -> str:
    return (
        f"it needs {format_size(need)}, this queue holds {format_size(ours)} and other users "
        f"hold {format_size(theirs)} of the {format_size(budget)} budget"
    )


def pool_peer(name: str, arithmetic: str) -> str:
    return (
        f"this job cannot fit while another user holds the pool `{safe_name(name)}`: "
        f"{arithmetic} qex cannot make that user release it, so this wait has no known end; "
        f"{_behind_may_start()}"
    )


def devices_arithmetic(count: int, size: int | None, total: int, fit: int, peer_held: int) -> str:
    each = "that are entirely free"
    if size is not None:
        each = f"with {format_size(size)} free on each"
    text = f"it needs {count} device(s) {each}, the pool has {total}, and {fit} can take it now"
    if peer_held:
        text += f" ({peer_held} held by other users)"
    return text + "."


def units_arithmetic(count: int, total: int, ours: int, theirs: int) -> str:
    text = f"it needs {count} of the {total} units, and the jobs of this queue hold {ours}"
    if theirs:
        text += f" while other users hold {theirs}"
    return text + "."


# --- the machine ----------------------------------------------------------------------------

def machine_memory(available: int, need: int, reserve: int, pressure: float | None) -> str:
    text = (
        f"waits for free memory on the machine: {format_size(max(available, 0))} is available "
        f"to a new program, and this job needs {format_size(need)} with {format_size(reserve)} "
        "kept in reserve."
    )
    if pressure is not None and pressure < 1.0:
        text += (
            f" Memory pressure is only {pressure:.1f}, so the machine is not short of memory: "
            "the available figure leaves out memory the kernel moved to swap. A smaller claim "
            "or a lower `[system] reserve_mem` lets this job start."
        )
    else:
        text += " `qex info` shows the load, and `qex list` what this queue holds."
    return text + (
        " Programs outside this queue hold that memory, so this wait has no known end; "
        f"{_behind_may_start()}"
    )


def machine_pressure(pressure: float, limit: float) -> str:
    return (
        f"waits for the machine: memory pressure is {pressure:.1f}, above the limit of "
        f"{limit:g} in `[system] max_pressure`; it can start when the pressure falls."
    )


# --- its own size ---------------------------------------------------------------------------

def idle_obstacle_active(count: int) -> str:
    verb = "runs" if count == 1 else "run"
    return f"{_jobs(count)} of this queue still {verb} and must stop first"


def idle_obstacle_settle(settle: float) -> str:
    return f"the queue must stay idle for {format_duration(settle)} first"


def idle_obstacle_peers() -> str:
    return "another user holds capacity, and qex cannot make that user release it"


def idle_obstacle_pressure(pressure: float, limit: float) -> str:
    return f"memory pressure is {pressure:.1f}, above the limit of {limit:g}"


def oversized_waiting(size: str, obstacle: str) -> str:
    return (
        f"{size}; qex runs it alone once no other job of this queue runs, no other user holds "
        f"capacity and memory pressure is within the limit. Now {obstacle}; "
        f"{_behind_may_start()}"
    )


def oversized_held(size: str, obstacle: str, passed: int) -> str:
    return (
        f"{size}; qex runs it alone once no other job of this queue runs, no other user holds "
        f"capacity and memory pressure is within the limit. Now {obstacle}. {_jobs(passed)} "
        "already started ahead of it, so qex starts nothing else and lets this queue empty."
    )


def oversized_parked(size: str) -> str:
    return (
        f"{size}; the config file sets `[queue] oversized = \"queue\"`, so this job stays "
        "queued until its claim or the budget changes, and the jobs behind it start meanwhile."
    )


def oversized_rejected(size: str) -> str:
    return (
        f"{size}; the config file now sets `[queue] oversized = \"reject\"`, so this job will "
        "never start: cancel it and submit a smaller claim, or raise `[budget]`. The jobs "
        "behind it start meanwhile."
    )


def pools_changed(message: str) -> str:
    return (
        f"{message}. The pool configuration changed after this job was submitted, so it "
        "cannot start as it is; the jobs behind it start meanwhile."
    )


def device_not_free(name: str, count: int, fit: int) -> str:
    return (
        f"waits for the pool `{safe_name(name)}`: it needs {count} device(s), and {fit} can "
        "take it now."
    )


# --- behind a reserved head -----------------------------------------------------------------

def behind_held_head(head_label: str, cpu: int, mem: int, passed: int) -> str:
    return (
        f"waits behind the job {head_label}, which is at the front of the queue and needs "
        f"{cores_text(cpu)} and {format_size(mem)}: {_jobs(passed)} already started ahead of "
        "it, so qex keeps the capacity that frees up for that job. This job's turn comes "
        "once it starts."
    )


# --- expiry ---------------------------------------------------------------------------------

CAUSE_CAPACITY = "capacity"
CAUSE_LOCK = "lock"
CAUSE_DEPENDENCY = "dependency"
CAUSE_PAUSE = "pause"


def expired(waited: float, limit: float, last_reason: str | None, cause: str) -> str:
    last = last_reason or "it waited for free capacity"
    if cause == CAUSE_DEPENDENCY:
        remedy = (
            "Time spent waiting for other jobs counts too, so give a --max-queue-time that "
            "covers the whole pipeline, or none."
        )
    elif cause == CAUSE_LOCK:
        remedy = (
            "A lock goes to one job at a time, so give a --max-queue-time that covers how long "
            "others hold it, or use different lock names for work that may overlap."
        )
    else:
        remedy = (
            "Submit it again with a smaller claim, when the machine is quieter, or with a "
            "longer --max-queue-time."
        )
    return (
        f"the job never started: it waited {format_duration(waited)} in the queue, and its "
        f"--max-queue-time is {format_duration(limit)}. Its last reason: {last} {remedy}"
    )
