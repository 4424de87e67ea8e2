"""Pause logic: the queue pause, the locks a person took, and the time credit at the end.

A queue pause starts nothing and expires nothing: `--max-queue-time` measures the wait for
the QUEUE, and a person holding the machine is not the queue. So when a queue pause ends,
each queued job is credited the paused time (`queue_pause_secs`), once, at the end. A lock
pause does not stop that clock: a job waiting for a lock expires the same way whatever holds
it. The pause file (`qex.store.pause`) is written after every change and survives restarts.
"""

from __future__ import annotations

import time
from typing import Any

from qex.coordinator.log import log
from qex.coordinator.state import Coordinator, label
from qex.core import pause_text
from qex.core.names import lock_shown
from qex.core.protocol import Result
from qex.core.queue_time import pause_credit
from qex.core.scheduler_types import PauseView
from qex.core.units import format_duration
from qex.store.pause import PauseFile, PauseRecord, write_pause


class PauseError(ValueError):
    """A pause request that cannot be obeyed; the message says why."""


def clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def save(coord: Coordinator) -> None:
    try:
        write_pause(coord.paths.paused_file, coord.pauses)
    except OSError as exc:
        log(f"qex could not write the pause file {coord.paths.paused_file}: {exc.strerror or exc}")


def pause_view(coord: Coordinator) -> PauseView:
    """What the scheduler needs: the queue's reason text and the person-held locks."""
    pauses = coord.pauses
    queue_reason: str | None = None
    fault = False
    record = pauses.queue
    if record is not None:
        if record.fault:
            fault = True
            queue_reason = pause_text.queue_fault_reason(record.reason or "unknown fault")
        else:
            queue_reason = pause_text.queue_paused_reason(
                record.reason, record.by_pid, clock(record.paused_at),
                clock(record.until) if record.until is not None else None,
            )
    locks = {
        name: pause_text.lock_paused_reason(name, rec.reason, rec.by_pid, clock(rec.paused_at))
        for name, rec in pauses.locks.items()
    }
    return PauseView(queue_reason=queue_reason, fault=fault, locks=locks)


def end_queue_pause(coord: Coordinator, end: float) -> None:
    """Credit the paused time to every queued job, then drop the pause.

    The credit only moves the expiry of a job with `--max-queue-time`, so only such a
    job's record is written before the pause file drops the pause (a crash in between
    must not expire it early). Every other record takes the credit with the batched
    reason writes: a resume of a long queue would otherwise hold the coordinator for two
    fsyncs per queued job before the first of them could start.
    """
    record = coord.pauses.queue
    if record is None:
        return
    coord.pauses.queue = None
    if not record.fault:
        for job in list(coord.queued_jobs()):
            credit = pause_credit(job.record.submitted_at, record.paused_at, end)
            if credit > 0:
                job.record.queue_pause_secs = float(job.record.queue_pause_secs or 0.0) + credit
                if job.max_queue_time is not None and job.record.queue_time_applies:
                    coord.write_logged(job)
                else:
                    coord.defer_write(job)
    # An oversized job must not jump in the moment the queue opens: the quiet time restarts.
    coord.idle_since = coord.now()
    save(coord)
    coord.kick()


def end_due_pauses(coord: Coordinator, now: float) -> None:
    """Pauses whose `until` has passed end now (a queue pause is credited up to `until`)."""
    record = coord.pauses.queue
    if record is not None and record.until is not None and record.until <= now:
        log("the queue pause reached its end; the queue operates again")
        end_queue_pause(coord, record.until)
    changed = False
    for name, rec in list(coord.pauses.locks.items()):
        if rec.until is not None and rec.until <= now:
            del coord.pauses.locks[name]
            changed = True
    if changed:
        save(coord)
        coord.kick()


def next_pause_deadline(coord: Coordinator) -> float | None:
    times = [rec.until for rec in coord.pauses.locks.values() if rec.until is not None]
    if coord.pauses.queue is not None and coord.pauses.queue.until is not None:
        times.append(coord.pauses.queue.until)
    return min(times) if times else None


def _known_locks(coord: Coordinator) -> set[str]:
    names: set[str] = set(coord.pauses.locks)
    for job in coord.jobs.values():
        names.update(job.record.locks)
        names.update(job.record.claims)
    return names


def resolve_lock(coord: Coordinator, word: str) -> str:
    """The stored lock name a word means: exact, or as qex prints it (control bytes escaped,
    so a name copied from the screen still works). Unknown: a new lock of that name."""
    known = _known_locks(coord)
    if word in known:
        return word
    matches = sorted(name for name in known if lock_shown(name) == word)
    if len(matches) > 1:
        raise PauseError(
            f"`{lock_shown(word)}` names {len(matches)} locks that differ only in characters "
            "that qex does not show; give the exact name of the lock"
        )
    return matches[0] if matches else word


def _merge(old: PauseRecord | None, new: PauseRecord) -> PauseRecord:
    """A second pause keeps the first one's start, pauser, end and reason where it had them."""
    if old is None or old.fault:
        return new
    return PauseRecord(
        paused_at=old.paused_at, by_pid=old.by_pid,
        reason=old.reason if old.reason is not None else new.reason,
        until=old.until if old.until is not None else new.until,
    )


def _target(message: dict[str, Any]) -> tuple[str, str | None]:
    target = message.get("target")
    if target is None or target == "queue":
        return "queue", None
    if isinstance(target, dict):
        kind = target.get("kind", "queue")
        if kind == "queue":
            return "queue", None
        if kind == "lock":
            name = target.get("name")
            if isinstance(name, str) and name.strip():
                return "lock", name
            raise PauseError("a lock pause needs the name of the lock; give `qex pause lock NAME`")
    raise PauseError("the pause target must be the queue or a lock; give `queue` or `lock NAME`")


def pause(coord: Coordinator, message: dict[str, Any]) -> None:
    kind, name = _target(message)
    now = coord.now()
    reason = message.get("reason")
    until = message.get("until")
    by_pid = message.get("by_pid", 0)
    if reason is not None and not isinstance(reason, str):
        raise PauseError("the reason of a pause must be text")
    if until is not None:
        if isinstance(until, bool) or not isinstance(until, (int, float)):
            raise PauseError("the end of a pause must be a time in epoch seconds")
        if until <= now:
            raise PauseError("the end of the pause is not in the future; give a time longer "
                             "than zero, or run `qex resume queue` to end a pause now")
    if not isinstance(by_pid, int) or isinstance(by_pid, bool):
        by_pid = 0
    new = PauseRecord(paused_at=now, by_pid=by_pid, reason=reason or None,
                      until=float(until) if until is not None else None)
    if kind == "queue":
        coord.pauses.queue = _merge(coord.pauses.queue, new)
        log(f"the queue is paused (by pid {by_pid})")
    else:
        assert name is not None
        stored = resolve_lock(coord, name)
        coord.pauses.locks[stored] = _merge(coord.pauses.locks.get(stored), new)
        log(f"a person took the lock `{lock_shown(stored)}` (pid {by_pid})")
    save(coord)
    coord.kick()


def resume(coord: Coordinator, message: dict[str, Any]) -> None:
    kind, name = _target(message)
    if kind == "queue":
        if coord.pauses.queue is not None:
            end_queue_pause(coord, coord.now())
            log("the queue operates again")
        return
    assert name is not None
    stored = resolve_lock(coord, name)
    if coord.pauses.locks.pop(stored, None) is not None:
        log(f"the lock `{lock_shown(stored)}` is free again")
        save(coord)
        coord.kick()


def lock_holder(coord: Coordinator, name: str) -> str | None:
    """`id8 (name)` of the active job that still holds a lock a person asked for."""
    for job in coord.holding_jobs():
        if name in job.record.locks or name in job.record.claims:
            return label(job.record)
    return None


def state_answer(coord: Coordinator) -> dict[str, Any]:
    """The `pause_state` answer: the queue record and each lock with its current holder."""
    return {
        "result": Result.PAUSE_STATE,
        "queue": coord.pauses.queue.to_dict() if coord.pauses.queue else None,
        "locks": paused_locks(coord),
    }


def paused_locks(coord: Coordinator) -> list[dict[str, Any]]:
    return [
        {"name": name, "record": rec.to_dict(), "held_by": lock_holder(coord, name)}
        for name, rec in sorted(coord.pauses.locks.items())
    ]


def queue_summary(coord: Coordinator) -> str | None:
    """One line for `qex info` while the queue is paused; None when it is not."""
    record = coord.pauses.queue
    if record is None:
        return None
    if record.fault:
        return pause_text.fault_summary(record.reason or "unknown fault")
    now = coord.now()
    return pause_text.queue_pause_summary(
        paused_clock=clock(record.paused_at),
        paused_for=format_duration(max(0.0, now - record.paused_at)),
        by_pid=record.by_pid,
        until_clock=clock(record.until) if record.until is not None else None,
        until_in=(format_duration(max(0.0, record.until - now))
                  if record.until is not None else None),
        reason=record.reason,
    )


def load_at_start(coord: Coordinator, pauses: PauseFile, now: float) -> float | None:
    """Install the pauses read at start. Returns the end time of a queue pause that ran out
    while no coordinator operated (its credit is given once the jobs are loaded)."""
    expired_end: float | None = None
    record = pauses.queue
    if record is not None and not record.fault and record.until is not None and record.until <= now:
        expired_end = record.until
    coord.pauses = pauses
    for name, rec in list(pauses.locks.items()):
        if rec.until is not None and rec.until <= now:
            del pauses.locks[name]
    return expired_end
