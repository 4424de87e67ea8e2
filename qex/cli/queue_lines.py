"""One-line summaries of the queue: what is paused, and whether the queue is healthy.

`list`, `info`, `top` and `pause` print the same lines, so a person who forgot a pause sees
the same words wherever they look. No I/O: the caller passes the coordinator's answers and
`now`. Clock times are local HH:MM:SS, because a person reads them.
"""

from __future__ import annotations

import time

from qex.core import pause_text
from qex.core.names import printable_line
from qex.core.unit_text import format_duration, format_size

TYPE_CHECKING = False  # `list` and `status` print these lines while a pause is on
if TYPE_CHECKING:
    from typing import Any

#: A job that started within this many seconds makes a queue "healthy" whatever the head.
RECENT_START = 15 * 60


def clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pause_times(record: dict[str, Any], now: float) -> dict[str, Any]:
    at = _num(record.get("paused_at"))
    until = _num(record.get("until"))
    pid = record.get("by_pid")
    reason = record.get("reason")
    return {
        "paused_clock": clock(at) if at is not None else "an unknown time",
        "paused_for": format_duration(max(0.0, now - at)) if at is not None else "unknown",
        "by_pid": pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        "until_clock": clock(until) if until is not None else None,
        "until_in": format_duration(max(0.0, until - now)) if until is not None else None,
        "reason": reason if isinstance(reason, str) else None,
    }


def queue_pause_line(record: dict[str, Any], now: float) -> str:
    """The queue's pause in one line (the words live in `qex.core.pause_text`)."""
    if record.get("fault"):
        reason = record.get("reason")
        return pause_text.fault_summary(reason if isinstance(reason, str) else "unknown")
    return pause_text.queue_pause_summary(**_pause_times(record, now))


def lock_pause_line(entry: dict[str, Any], now: float) -> str:
    """One paused lock in one line: who took it, and whether a job still holds it."""
    record = entry.get("record")
    record = record if isinstance(record, dict) else {}
    holder = entry.get("held_by")
    return pause_text.lock_pause_summary(
        name=str(entry.get("name", "?")),
        holder=printable_line(holder) if isinstance(holder, str) and holder else None,
        **_pause_times(record, now),
    )


def pause_lines(state: dict[str, Any] | None, now: float) -> list[str]:
    """Every pause line of a `pause_state` answer (queue first); empty when nothing is paused."""
    if not state:
        return []
    lines: list[str] = []
    queue = state.get("queue")
    if isinstance(queue, dict):
        lines.append(queue_pause_line(queue, now))
    locks = state.get("locks")
    if isinstance(locks, list):
        lines.extend(lock_pause_line(e, now) for e in locks if isinstance(e, dict))
    return lines


def pause_state_from_info(info: dict[str, Any]) -> dict[str, Any]:
    """The `pause_state` shape, built from the paused_* fields of an `info` answer."""
    queue: dict[str, Any] | None = None
    if info.get("paused_at") is not None or info.get("queue_state") == "paused-by-fault":
        queue = {
            "paused_at": info.get("paused_at"),
            "by_pid": info.get("paused_by_pid"),
            "reason": info.get("paused_reason"),
            "until": info.get("paused_until"),
            "fault": info.get("queue_state") == "paused-by-fault",
        }
    locks = info.get("paused_locks")
    return {"queue": queue, "locks": locks if isinstance(locks, list) else []}


_BLOCKERS = {
    "waits-for-capacity": "capacity that running jobs of this queue hold",
    "held": "capacity that running jobs of this queue hold, and qex keeps it for that job",
    "waits-for-peer": "capacity that another user of the machine holds",
    "waits-for-machine": "memory that programs outside qex use, or memory pressure",
    "waits-for-idle": "a quiet machine, because its claim is larger than the budget",
    "parked": "a change of the configuration, because its claim is larger than the budget",
}
_OUTSIDE = {"waits-for-peer", "waits-for-machine"}


def health_line(info: dict[str, Any], now: float) -> str:
    """The answer to "is the queue healthy", from an `info` answer.

    Healthy: nothing waits, a job started recently, or the job at the front waits for a
    cause outside this queue (another user, the machine). STUCK: nothing started for
    RECENT_START seconds and the front waits for this queue's own jobs or for its own size.
    The description is the coordinator's `queue_line` when it gives one.
    """
    state = str(info.get("queue_state") or "")
    described = info.get("queue_line")
    described = printable_line(described) if isinstance(described, str) and described else None
    if state in ("paused", "paused-by-fault"):
        text = described or "paused"
        return text if text.lower().startswith(("queue", "paused by")) else f"queue: {text}"
    raw_health = info.get("health")
    health: dict[str, Any] = raw_health if isinstance(raw_health, dict) else {}
    last = _num(health.get("last_start_at"))
    started = (f"the last job started {format_duration(max(0.0, now - last))} ago"
               if last is not None else "no job started since the coordinator started")
    queued = info.get("jobs_queued")
    head = health.get("head_job")
    if queued == 0:
        return f"queue: healthy: no job waits; {started}"
    if state not in _BLOCKERS:
        return (f"queue: healthy: {queued} job(s) wait for jobs that they need or for locks, "
                f"and none for capacity; {started}")
    else:
        passed = health.get("head_passed_by")
        passed_text = ""
        if isinstance(passed, int) and passed:
            passed_text = f", and {passed} job(s) started before it"
        who = printable_line(head) if isinstance(head, str) else "at the front"
        text = f"the job {who} at the front waits for {_BLOCKERS[state]}{passed_text}"
        recent = last is not None and now - last <= RECENT_START
        verdict = "healthy" if state in _OUTSIDE or recent else "STUCK"
    return f"queue: {verdict}: {described or text}; {started}"


def others_line(info: dict[str, Any]) -> str:
    """`other users: none` / `2 coordinator(s) with 4 cores and 8GB` / `unknown`."""
    health = info.get("health")
    if not isinstance(health, dict) or not isinstance(health.get("peer_count"), int):
        return "other users: unknown"
    count = int(health["peer_count"])
    if count == 0:
        return "other users: none"
    cpu = health.get("peer_cpu") or 0
    mem = health.get("peer_mem") or 0
    return (f"other users: {count} coordinator(s) with {cpu} core(s) and "
            f"{format_size(int(mem))} claimed")
