"""Records read without a coordinator, judged by the rule the coordinator applies at start.

When the coordinator and a job's supervisor both died (`kill -9`, the OOM killer, a reboot),
the record on disk still says `running`, and nothing will ever correct it until a coordinator
starts and recovers. A read must not repeat that claim: every command that reads records
from disk passes them through `settle`, which applies `qex.core.recovery_rule` (boot id,
process identity, zombie check) and shows each record as recovery will write it. The record
on disk is not touched here: the coordinator stays its only writer for such a change, and it
also stops a job that outlived its supervisor and runs the stop hook. Commands that wait for
an outcome call `recover_now`, which starts a coordinator so that the record is written.

The cost on the common path is nothing for final and queued records, and two small reads of
/proc for an active one whose supervisor lives.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.core import recovery_rule

if TYPE_CHECKING:
    from qex.store.paths import Paths

_ACTIVE = ("starting", "running")


def verdict_for(job_dir: Path, record: dict[str, Any]) -> recovery_rule.Verdict | None:
    """The rule's verdict for an active record; None for a record that is not active."""
    if record.get("state") not in _ACTIVE:
        return None
    from qex.platform import liveness
    from qex.store.jobs import read_supervisor_pid_file, supervisor_lock, supervisor_log_tail

    facts = liveness.observe(record, read_supervisor_pid_file(job_dir),
                             lock=supervisor_lock(job_dir))
    if facts.supervisor_alive:
        return recovery_rule.Verdict(recovery_rule.ALIVE)
    said = supervisor_log_tail(job_dir)
    return recovery_rule.judge(str(record.get("state")), bool(record.get("pid")), facts, said)


def as_recovered(record: dict[str, Any], verdict: recovery_rule.Verdict,
                 now: float) -> dict[str, Any]:
    """A copy of `record` as the coordinator's recovery will write it."""
    shown = dict(record)
    if verdict.action == recovery_rule.REQUEUE:
        shown.update(state="queued", pid=None, pid_start_token=None, supervisor_pid=None,
                     supervisor_start_token=None, started_at=None, error=None, assigned={},
                     forced=False, forced_reason=None, blocked_reason=(
                         "the job had not started when the coordinator stopped; it starts "
                         "again once a coordinator runs"))
        return shown
    error = verdict.error or "the job's processes are gone"
    if verdict.stop_job:
        error += "; a coordinator stops the job process when it starts"
    if shown.get("pid") is not None:
        shown["last_pid"] = shown["pid"]
    shown.update(state="failed", finished_at=now, error=error, pid=None, pid_start_token=None,
                 supervisor_pid=None, supervisor_start_token=None, blocked_reason=None,
                 blocked_since=None)
    return shown


def _reread(job_dir: Path, job_id: str) -> dict[str, Any] | None:
    from qex.store import atomic
    from qex.store.jobs import STATUS

    data = atomic.read_json(job_dir / STATUS)
    return data if isinstance(data, dict) and data.get("id") == job_id else None


#: How a queued job's reason begins while the queue is paused (`pause_text`).
_PAUSED_REASON = "waits for the queue to be resumed"


def _ended_pause(paths: Paths, now: float) -> tuple[float, float] | None:
    """(paused_at, until) of a queue pause that ran out while no coordinator ran, if any."""
    from qex.store.pause import read_pause

    record = read_pause(paths.paused_file, now).queue
    if record is None or record.fault or record.until is None or record.until > now:
        return None
    return record.paused_at, record.until


def _credited(record: dict[str, Any], pause: tuple[float, float]) -> dict[str, Any]:
    """A queued record with the credit that recovery gives for the ended pause."""
    from qex.core.queue_time import pause_credit  # only on this rare path: status stays lean

    submitted = record.get("submitted_at")
    if not isinstance(submitted, (int, float)):
        return record
    credit = pause_credit(float(submitted), pause[0], pause[1])
    shown = dict(record)
    before = shown.get("queue_pause_secs")
    shown["queue_pause_secs"] = (float(before) if isinstance(before, (int, float)) else 0.0
                                 ) + credit
    reason = shown.get("blocked_reason")
    if isinstance(reason, str) and reason.startswith(_PAUSED_REASON):
        shown["blocked_reason"] = ("the queue pause has ended, and the job starts once a "
                                   "coordinator runs (any command that submits starts one)")
    return shown


def settle(paths: Paths, records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The records as recovery will leave them, and the ids whose records were judged stale.

    Besides active records, queued ones get the time back of a queue pause that ended
    while no coordinator ran (recovery credits it), so their queue time reads right."""
    out: list[dict[str, Any]] = []
    stale: list[str] = []
    now = time.time()
    pause = (_ended_pause(paths, now)
             if any(r.get("state") == "queued" for r in records) else None)
    for record in records:
        job_id = str(record.get("id") or "")
        if record.get("state") == "queued" and pause is not None:
            out.append(_credited(record, pause))
            continue
        if record.get("state") not in _ACTIVE or not job_id:
            out.append(record)
            continue
        job_dir = paths.job_dir(job_id)
        verdict = verdict_for(job_dir, record)
        if verdict is None or verdict.action == recovery_rule.ALIVE:
            out.append(record)
            continue
        # The supervisor may have written the final record and exited between our two reads.
        fresh = _reread(job_dir, job_id)
        if fresh is not None and fresh.get("state") not in _ACTIVE:
            out.append(fresh)
            continue
        stale.append(job_id)
        out.append(as_recovered(record, verdict, now))
    return out, stale


def recover_now(paths: Paths, ids: list[str], *,
                until: float | None = None) -> list[dict[str, Any]] | None:
    """Start a coordinator (it recovers every record at start) and return the written records
    of `ids`; None when no coordinator could be started (the caller keeps its judged copies)."""
    from qex.client.connection import ClientError, connect

    try:
        conn = connect(paths, start=True, until=until)
    except ClientError:
        return None
    if conn is None:
        return None
    records: list[dict[str, Any]] = []
    try:
        for job_id in ids:
            records.append(conn.status(job_id))
    except ClientError:
        return None
    finally:
        conn.close()
    return records
