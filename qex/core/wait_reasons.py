"""The sentences the scheduler writes: why one job waits, why it was skipped or expired.

Pure. Every reason names the HOLDER (the jobs of this queue, another user, the machine, the
job's own size, a lock and who has it, a dependency) and what ends the wait, because a queue
that does not move with no stated cause is the complaint this text exists to answer. Names
pass through `safe_name` and lock names through `lock_shown` (escapes), so text from another
agent cannot repaint a screen.

The sentences a long queue repeats (the same numbers for every job behind a full budget) are
cached, so a pass over 1000 jobs does not build 1000 equal strings.
"""

from __future__ import annotations

from functools import lru_cache

from qex.core.names import lock_shown, safe_name, short_id
from qex.core.size_check import cores_text
from qex.core.units import format_duration, format_size


@lru_cache(maxsize=4096)
def job_label(job_id: str, name: str) -> str:
    """`a1b2c3d4 (build)`: how every reason names a job."""
    return f"{short_id(job_id)} ({safe_name(name)})"


def _jobs(count: int) -> str:
    return "1 job" if count == 1 else f"{count} jobs"


# --- dependencies ---------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def needs_waiting(dep_label: str, dep_state: str) -> str:
    return (
        f"waits for the job {dep_label} to complete first (it is {dep_state} now); should that "
        "job end in any other way, this one is skipped."
    )


@lru_cache(maxsize=4096)
def after_waiting(dep_label: str, dep_state: str) -> str:
    return (
        f"waits until the job {dep_label} ends, whichever way it ends; that job is "
        f"{dep_state} now."
    )


def needs_gone(dep_id: str) -> str:
    return (
        f"this job was skipped: it needs the job {short_id(dep_id)}, whose record no longer "
        "exists, so qex has no proof that it completed. Submit this job again without that "
        "dependency if it should still run."
    )


def needs_broken(root_id: str, root_label: str, root_state: str, via_label: str | None) -> str:
    chain = f" (by way of the job {via_label})" if via_label else ""
    text = (
        f"this job was skipped: the job {root_label} that it depends on{chain} ended as "
        f"`{root_state}`, and a job runs only after everything it needs has completed."
    )
    if root_state not in ("cancelled", "expired", "skipped"):
        text += f" `qex logs {short_id(root_id)}` shows what went wrong there."
    return text


# --- locks ----------------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def lock_held_by_job(lock: str, holder_label: str) -> str:
    return (
        f"waits for the lock `{lock_shown(lock)}`: the job {holder_label} took it first and "
        "gives it up when it ends."
    )


# --- capacity: this queue -------------------------------------------------------------------

_MEANWHILE = "jobs behind this one may start in the meantime."


@lru_cache(maxsize=4096)
def own_cores(need: int, held: int, budget: int) -> str:
    return (
        f"waits for cores: it needs {cores_text(need)}, but the running jobs of this queue "
        f"already use {held} of the {budget} that the budget allows"
    )


@lru_cache(maxsize=4096)
def own_memory(need: int, held: int, budget: int) -> str:
    return (
        f"waits for memory: it needs {format_size(need)}, but the running jobs of this queue "
        f"already use {format_size(held)} of the {format_size(budget)} budget"
    )


@lru_cache(maxsize=4096)
def sibling_free(text: str) -> str:
    return f"{text}. That comes back as the running jobs of this queue end, and {_MEANWHILE}"


def sibling_held(text: str, passed: int) -> str:
    return (
        f"{text}. That comes back as the running jobs of this queue end; {_jobs(passed)} "
        "went ahead of this one already, so qex now saves what frees up for it and starts "
        "nothing behind it. `qex list` shows the jobs that hold it."
    )


def pool_sibling(name: str, arithmetic: str) -> str:
    return f"waits for the pool `{safe_name(name)}`: {arithmetic}"


# --- capacity: other users ------------------------------------------------------------------

@lru_cache(maxsize=4096)
def peer_capacity(details: tuple[str, ...], peers: int) -> str:
    who = "that user" if peers <= 1 else f"those users ({peers} queues)"
    return (
        f"this job cannot fit while another user holds capacity: {'; '.join(details)}. "
        f"Nothing in this queue can make {who} let go, so no one can say when the wait "
        f"ends; {_MEANWHILE} `qex info` shows the load of the machine."
    )


@lru_cache(maxsize=4096)
def peer_cores(need: int, ours: int, theirs: int, budget: int) -> str:
    return (
        f"it needs {cores_text(need)}, while this queue uses {ours} and other users claim "
        f"{theirs} of the {budget} cores in the budget"
    )


@lru_cache(maxsize=4096)
def peer_memory(need: int, ours: int, theirs: int, budget: int) -> str:
    return (
        f"it needs {format_size(need)}, while this queue uses {format_size(ours)} and other "
        f"users claim {format_size(theirs)} of the {format_size(budget)} budget"
    )


def pool_peer(name: str, arithmetic: str) -> str:
    return (
        f"this job cannot fit while another user holds the pool `{safe_name(name)}`: "
        f"{arithmetic}. Nothing in this queue can make that user let go, so no one can say "
        f"when the wait ends; {_MEANWHILE}"
    )


def devices_arithmetic(count: int, size: int | None, total: int, fit: int, peer_held: int) -> str:
    each = "completely free"
    if size is not None:
        each = f"with {format_size(size)} to spare"
    text = f"it needs {count} of the {total} devices {each}, and {fit} qualify now"
    if peer_held:
        text += f" ({peer_held} in use by other users)"
    return text


def units_arithmetic(count: int, total: int, ours: int, theirs: int) -> str:
    text = f"it needs {count} of the {total} units, and the running jobs of this queue use {ours}"
    if theirs:
        text += f" while other users claim {theirs}"
    return text


# --- the machine ----------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def machine_memory(available: int, need: int, reserve: int, pressure: float | None) -> str:
    text = (
        f"waits for free memory on the machine: starting it takes {format_size(need)} plus "
        f"the {format_size(reserve)} reserve, and the machine can give a new program only "
        f"{format_size(max(available, 0))} now."
    )
    if pressure is not None and pressure < 1.0:
        text += (
            f" With memory pressure at just {pressure:.1f}, memory is not really scarce: the "
            "figure ignores what sits in swap. A smaller claim, or a lower `[system] "
            "reserve_mem`, lets this job start."
        )
    else:
        text += " `qex info` shows the load, and `qex list` what this queue runs."
    return text + (
        " Programs outside this queue hold that memory, so no one can say when the wait "
        f"ends; {_MEANWHILE}"
    )


@lru_cache(maxsize=4096)
def machine_pressure(pressure: float, limit: float) -> str:
    return (
        f"waits for memory pressure to ease: the machine reports {pressure:.1f}, and "
        f"`[system] max_pressure` allows at most {limit:g}; the job can start once it drops."
    )


# --- its own size ---------------------------------------------------------------------------

def idle_obstacle_active(count: int) -> str:
    verb = "runs" if count == 1 else "run"
    return f"{_jobs(count)} of this queue still {verb} and must end first"


def idle_obstacle_settle(settle: float) -> str:
    return f"the queue must stay idle for {format_duration(settle)} first"


def idle_obstacle_peers() -> str:
    return "another user holds capacity, which this queue cannot free"


def idle_obstacle_pressure(pressure: float, limit: float) -> str:
    return f"memory pressure is {pressure:.1f}, more than the {limit:g} allowed"


def _alone(size: str) -> str:
    return (
        f"{size}, so it can only run by itself: on an idle queue, with no claims from other "
        "users and acceptable memory pressure"
    )


def oversized_waiting(size: str, obstacle: str) -> str:
    return f"{_alone(size)}. At the moment {obstacle}; {_MEANWHILE}"


def oversized_held(size: str, obstacle: str, passed: int) -> str:
    return (
        f"{_alone(size)}. At the moment {obstacle}. {_jobs(passed)} went ahead of it already, "
        "so qex starts nothing else and lets this queue run dry for it."
    )


def oversized_parked(size: str) -> str:
    return (
        f"{size}; with `[queue] oversized = \"queue\"` in the config file it stays queued "
        "until its claim or the budget changes, without blocking the jobs behind it."
    )


def oversized_rejected(size: str) -> str:
    return (
        f"{size}; the config file now says `[queue] oversized = \"reject\"`, so this job "
        "will never start: cancel it and submit a smaller claim, or raise `[budget]`. It "
        "does not block the jobs behind it."
    )


def pools_changed(message: str) -> str:
    return (
        f"{message}. The `[[pool]]` settings no longer fit what this job was accepted with; "
        "it stays queued without blocking the jobs behind it. Cancel it and submit it again, "
        "or restore the pool."
    )


def device_not_free(name: str, count: int, fit: int) -> str:
    shown = safe_name(name)
    return f"the pool `{shown}` has {fit} device(s) that could take this job, and it needs {count}"


# --- behind a held head ---------------------------------------------------------------------

@lru_cache(maxsize=4096)
def behind_held_head(head_label: str, cpu: int, mem: int, passed: int) -> str:
    return (
        f"waits its turn behind {head_label}, the first job in the queue (it needs "
        f"{cores_text(cpu)} and {format_size(mem)}): after {_jobs(passed)} went ahead of that "
        "one, qex saves freed capacity for it, and this job follows once it has started."
    )


# --- expiry ---------------------------------------------------------------------------------

CAUSE_CAPACITY = "capacity"
CAUSE_LOCK = "lock"
CAUSE_DEPENDENCY = "dependency"
CAUSE_PAUSE = "pause"


def expired(waited: float, limit: float, last_reason: str | None, cause: str) -> str:
    last = last_reason or "it waited for free capacity."
    if cause == CAUSE_DEPENDENCY:
        remedy = (
            "Waiting for other jobs uses up the same allowance, so give a --max-queue-time "
            "that covers the whole pipeline, or none."
        )
    elif cause == CAUSE_LOCK:
        remedy = (
            "Only one job at a time holds a lock, so allow for how long the others keep it, "
            "or give work that may overlap different lock names."
        )
    else:
        remedy = (
            "Submit it again with a smaller claim, at a quieter time, or with a longer "
            "--max-queue-time."
        )
    return (
        f"the job gave up before starting: after {format_duration(waited)} in the queue it "
        f"reached its --max-queue-time of {format_duration(limit)}. It was waiting because: "
        f"{last} {remedy}"
    )
