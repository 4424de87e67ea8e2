"""The requests that only read: ping, info, capabilities, list, status, complete; and `wait`.

The two listings that the coordinator keeps text for are in `qex.coordinator.listing`.

`info` answers the question "is the queue healthy?": the load against the budget, other
users, the pause, the pools, the job at the front and what holds it, and whether memory
limits are really applied (`enforcement`, from `qex.platform.detect`; qex never reports a
limit that it did not apply). Fields follow the additive rule: new ones may appear, none
changes meaning.
"""

from __future__ import annotations

import os
from typing import Any

from qex.coordinator import pausing
from qex.coordinator.state import Coordinator, label
from qex.core import protocol
from qex.core.names import short_id
from qex.core.pools import pool_usage
from qex.core.protocol import Result
from qex.core.records import Assignment
from qex.platform.host import platform_info


def handle_capabilities(coord: Coordinator) -> dict[str, Any]:
    return protocol.answer(Result.CAPABILITIES, names=list(protocol.CAPABILITIES),
                           version=protocol.VERSION)


def handle_list(coord: Coordinator, message: dict[str, Any] | None = None) -> dict[str, Any]:
    """`list`: every record, or only those that a `word` may name or a `states` filter
    keeps (`protocol.list_jobs`), so that finding a short id, or the running jobs, among
    thousands encodes a few records, not all of them."""
    refresh_active(coord)
    message = message or {}
    word, states = message.get("word"), message.get("states")
    wanted = set(states) if isinstance(states, list) and all(
        isinstance(s, str) for s in states) else None
    jobs = coord.jobs.named_by(word) if isinstance(word, str) else coord.jobs.for_states(wanted)
    records = [job.record for job in jobs]
    if wanted is not None:
        from qex.core.state_words import listed_for

        records = [r for r in records if listed_for(str(r.state), wanted)]
    answer = protocol.answer(Result.JOBS, jobs=[record.to_dict() for record in records])
    damaged = damaged_entries(coord)
    if damaged:
        answer["damaged"] = damaged
    return answer


def handle_complete(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    """`complete`: what a Tab press may offer, from the records held here (the command's
    own read of 2,000 records from disk takes about 70 ms of each press)."""
    from qex.core import job_candidates

    kind, prefix = message.get("kind"), message.get("prefix")
    if kind not in job_candidates.KINDS or not isinstance(prefix, str):
        return protocol.error(protocol.INTERNAL,
                              "qex could not read this request: `complete` takes a kind "
                              f"({', '.join(job_candidates.KINDS)}) and a prefix")
    states = job_candidates.states_of(kind)
    if states is not None:
        # A job's move from starting to running is written by its supervisor.
        refresh_active(coord)
    jobs = coord.jobs.for_states(states)
    pairs = (job_candidates.pair(job.record.id, job.record.name)
             for job in reversed(jobs) if job_candidates.kept(kind, job.record.state))
    chosen: list[list[str]] = []
    for job_id, name in job_candidates.matching(pairs, prefix):
        chosen.append([job_id, name])
        if len(chosen) >= job_candidates.MAX_ITEMS:
            break  # each pair gives at least one candidate
    return protocol.answer(Result.CANDIDATES, jobs=chosen)


def refresh_active(coord: Coordinator) -> None:
    """Take the newer records that running jobs' supervisors wrote (a listing shows them)."""
    for job in list(coord.started_jobs()):
        coord.refresh(job)


def damaged_entries(coord: Coordinator) -> list[dict[str, str]]:
    """The job directories whose records cannot be read, while their directory is there."""
    damaged = {job_id: path for job_id, path in coord.damaged.items()
               if job_id not in coord.jobs and os.path.isdir(os.path.dirname(path))}
    return [{"id": job_id, "path": path} for job_id, path in sorted(damaged.items())]


def handle_status(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    job_id = message.get("id")
    job = coord.jobs.get(job_id) if isinstance(job_id, str) else None
    if job is None:
        return protocol.error(protocol.NO_SUCH_JOB, f"there is no job with the id {job_id}")
    coord.refresh(job)
    return protocol.answer(Result.STATUS, status=job.record.to_dict())


def _enforcement(coord: Coordinator) -> dict[str, Any]:
    from qex.platform.detect import detect, enforcement_state

    mode = coord.config.enforce.mode
    try:
        caps = detect(use_systemd=coord.config.enforce.use_systemd)
    except Exception as exc:
        return {"mode": mode, "active": False, "possible": False,
                "reason": f"the probe failed: {exc}", "fix": None, "backend": None}
    return enforcement_state(mode, caps)


def _pools(coord: Coordinator) -> list[dict[str, Any]]:
    pools = coord.config.pools
    active = [
        {name: Assignment(int(a.get("units", 0)), list(a.get("devices") or []), a.get("size"))
         for name, a in (job.record.assigned or {}).items()}
        for job in coord.holding_jobs()
    ]
    usage = pool_usage(active, pools)
    peers = coord.peer_load
    answer: list[dict[str, Any]] = []
    for pool in pools:
        used = usage.get(pool.name)
        peer_devices = peers.devices.get(pool.name, frozenset())
        devices = [
            {"index": index, "capacity": capacity,
             "used": used.per_device.get(index, 0) if used else 0,
             "peer": index in peer_devices}
            for index, capacity in enumerate(pool.devices or ())
        ]
        answer.append({
            "name": pool.name, "total": pool.total, "used": used.units if used else 0,
            "peer_used": len(peer_devices) if pool.indexed else peers.pools.get(pool.name, 0),
            "size_name": pool.size, "devices": devices,
        })
    return answer


def queue_line(coord: Coordinator) -> str:
    """One line about the queue's health, for `qex info` and `qex top`."""
    paused = pausing.queue_summary(coord)
    if paused is not None:
        return paused
    queued = len(coord.queue)
    head = coord.jobs.get(coord.head_id) if coord.head_id else None
    if head is None:
        if queued:
            return f"operates: {queued} job(s) wait, and none waits for capacity"
        return "operates: no job waits"
    holder = coord.head_blocker or "capacity"
    passed = head.record.passed_by
    text = f"the job {label(head.record)} is at the front and waits for {holder}"
    if coord.queue_state == "held":
        text += f"; qex keeps capacity for it after {passed} job(s) passed it"
    elif passed:
        text += f"; {passed} job(s) started before it"
    return text


def handle_info(coord: Coordinator) -> dict[str, Any]:
    cpu_claimed, mem_claimed = coord.claimed()
    running = coord.running_count()
    head = coord.jobs.get(coord.head_id) if coord.head_id else None
    peers = coord.peer_refresher() if coord.peer_refresher is not None else coord.peer_load
    record = coord.pauses.queue
    return {
        "result": Result.INFO,
        "pid": os.getpid(),
        "version": protocol.VERSION,
        "started_at": coord.started_at,
        "program_replaced": program_replaced(coord),
        "jobs_running": running,
        "jobs_queued": len(coord.queue),
        "cpu_budget": coord.cpu_budget(),
        "mem_budget": coord.mem_budget(),
        "cpu_claimed": cpu_claimed,
        "mem_claimed": mem_claimed,
        "config_error": coord.config_error,
        "platform": platform_info(),
        "queue_state": coord.queue_state,
        "queue_line": queue_line(coord),
        "paused": record.to_dict() if record else None,
        "paused_at": record.paused_at if record else None,
        "paused_by_pid": record.by_pid if record else None,
        "paused_reason": record.reason if record else None,
        "paused_until": record.until if record else None,
        "paused_locks": pausing.paused_locks(coord),
        "health": {
            "last_start_at": coord.last_start_at,
            "peer_count": peers.count,
            "peer_cpu": peers.cpu,
            "peer_mem": peers.mem,
            "head_job": label(head.record) if head else None,
            "head_id": short_id(head.id) if head else None,
            "head_blocker": coord.head_blocker if head else None,
            "head_passed_by": head.record.passed_by if head else None,
        },
        "peers_enabled": coord.config.peers.enabled,
        "peers_problem": coord.peers_problem,
        "pools": _pools(coord),
        "enforcement": _enforcement(coord),
        "wakeups": coord.wakeups,
        "events_stream": coord.events.stream_id,
        "engines": {kind: engine.describe() for kind, engine in coord.engines.items()},
    }


def program_replaced(coord: Coordinator) -> bool:
    from qex.coordinator.runner import program_replaced as replaced

    return replaced()
