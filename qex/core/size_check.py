"""Whether a claim is larger than the whole budget, and what qex says about it.

Pure. The coordinator asks at submission (to warn, queue or refuse by `[queue] oversized`)
and the scheduler asks on every pass (the budget can change under a queued job), so both
read the same sentence from here.
"""

from __future__ import annotations

from qex.core.units import format_size

#: `[queue] oversized` values.
RUN_WHEN_IDLE = "run-when-idle"
QUEUE = "queue"
REJECT = "reject"
OVERSIZED_POLICIES = (RUN_WHEN_IDLE, REJECT, QUEUE)


def cores_text(count: int) -> str:
    return f"{count} core" if count == 1 else f"{count} cores"


def size_reason(cpu: int, mem: int, cpu_budget: int, mem_budget: int) -> str | None:
    """Why the claim can never fit beside any other job, or None when it fits the budget."""
    parts: list[str] = []
    if cpu > cpu_budget:
        parts.append(
            f"the job claims {cores_text(cpu)}, more than the whole budget of "
            f"{cores_text(cpu_budget)}"
        )
    if mem > mem_budget:
        parts.append(
            f"the job claims {format_size(mem)} of memory, more than the whole budget of "
            f"{format_size(mem_budget)}"
        )
    return "; ".join(parts) if parts else None


def oversized_refusal(reason: str) -> str:
    """The submission error when `[queue] oversized = "reject"`."""
    return (
        f"{reason}. The config file sets [queue] oversized = \"reject\", so qex refuses it; "
        "lower the claim, or raise [budget] in the config file."
    )


def oversized_warning(reason: str, policy: str) -> str:
    """The submission warning for a job that is accepted although it is too large."""
    if policy == QUEUE:
        return (
            f"{reason}. The config file sets [queue] oversized = \"queue\", so this job stays "
            "queued until the budget or its claim changes."
        )
    return (
        f"{reason}. qex will run it alone, once no other job of this queue runs and the "
        "machine is quiet; it may swap or be stopped for memory."
    )


def forced_reason(reason: str) -> str:
    """The `forced_reason` of an oversized job that qex started alone."""
    return (
        f"{reason}. qex started it on its own because no other job of this queue was "
        "running, no other user held capacity, and memory pressure was within the limit."
    )
