"""A submission that asks for no scheduler pass: the pass that it skipped would have
changed nothing (`qex.coordinator.submit.reason_at_the_end` and `needs_pass`).

The claim is checked against the scheduler itself over random queues: running jobs, queued
jobs of several sizes, priorities and locks, oversized ones, a held head, a paused queue.
Whenever a submission asks for no pass, it must bring its reason, and the pass that follows
must start nothing and change no queued job's reason, the new one's included. A wrong guess
would be a job that waits with a false sentence, or worse, one that could start and waits
until something else wakes the scheduler."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from coordkit import add_job, make_coord, one_pass
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from qex.coordinator import pausing, scheduling, submit
from qex.coordinator.state import Coordinator, Job
from qex.core.records import JobSpec
from qex.platform import machine as machine_info

GIB = 1024**3
#: Sizes against the test machine (4 cores, 16 GiB, so a budget of 4 cores): 5 cores is
#: oversized, and the memories reach the budget, the machine's free memory, or neither.
#: Few sizes, so that jobs alike (the case in question) are common.
CORES = st.sampled_from([1, 1, 2, 4, 5])
MEMORY = st.sampled_from([16 * 1024**2, 16 * 1024**2, GIB, 6 * GIB, 15 * GIB])
JOB = st.tuples(CORES, MEMORY, st.integers(min_value=0, max_value=1),
                st.sampled_from([None, None, None, "db"]))
#: The newcomer: a job of its own, or one like the last queued job (None).
NEWCOMER = st.one_of(st.none(), JOB)


def _start_without_a_process(coord: Coordinator, job: Job, assigned: dict[str, Any],
                             forced: bool, forced_reason: str | None) -> None:
    """`start_job` as the scheduler sees it (the job holds its claim), with no supervisor."""
    scheduling._mark_starting(job.record, assigned, forced=forced, forced_reason=forced_reason,
                              now=coord.now(), boot_id=coord.boot_id)
    coord.queue.remove(job.id)


def _settle(coord: Coordinator) -> None:
    """Passes until one changes nothing: the state that the last pass left behind."""
    for _ in range(6):
        decision = one_pass(coord).decision
        if not decision.starts and not decision.waits:
            return
    raise AssertionError("the scheduler did not settle")


@given(running=st.lists(st.tuples(CORES, MEMORY), min_size=1, max_size=3),
       queued=st.lists(JOB, min_size=2, max_size=8), newcomer=NEWCOMER,
       free_memory=st.sampled_from([12 * GIB, 3 * GIB]), paused=st.booleans())
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_submission_that_wakes_no_pass_leaves_that_pass_nothing_to_do(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        running: list[tuple[int, int]], queued: list[tuple[int, int, int, str | None]],
        newcomer: tuple[int, int, int, str | None] | None, free_memory: int,
        paused: bool) -> None:
    monkeypatch.setattr(scheduling, "start_job", _start_without_a_process)
    monkeypatch.setattr(machine_info, "mem_available", lambda: free_memory)
    monkeypatch.setattr(machine_info, "memory_pressure", lambda: None)
    coord = make_coord(tmp_path_factory.mktemp("queue"))
    for cpu, mem in running:
        add_job(coord, state="running", pid=None, started_at=1.0, cpu=cpu, mem=mem)
    for cpu, mem, priority, lock in queued:
        add_job(coord, priority=priority, cpu=cpu, mem=mem, locks=[lock] if lock else [])
    if paused:
        pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "a test", "by_pid": 1})
    _settle(coord)

    kicks: list[int] = []
    monkeypatch.setattr(coord, "kick", lambda: kicks.append(1))
    cpu, mem, priority, lock = newcomer or queued[-1]
    spec = JobSpec(id=str(uuid.uuid4()), name="new", cwd="/", command=["true"], env={},
                   cpu=cpu, mem=mem, priority=priority, submitted_at=time.time(),
                   locks=[lock] if lock else [])
    answer = submit.handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
    assert answer["result"] == "submitted", answer
    given_reason = coord.jobs[spec.id].record.blocked_reason
    if kicks:
        event("a pass was asked for")
        return
    event("queued with a reason, and no pass asked for")
    assert given_reason is not None  # else it would wait for a pass without a sentence
    decision = one_pass(coord).decision
    assert decision.starts == ()
    assert decision.waits == {}
    assert coord.jobs[spec.id].record.blocked_reason == given_reason


def test_the_property_sees_the_case_it_is_about(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The property above is empty unless some submission skips its pass: behind busy slots,
    a job like the last one does."""
    monkeypatch.setattr(scheduling, "start_job", _start_without_a_process)
    coord = make_coord(tmp_path)
    for _ in range(coord.cpu_budget()):
        add_job(coord, state="running", pid=None, started_at=1.0, cpu=1, mem=GIB)
    for _ in range(2):
        add_job(coord, cpu=1, mem=GIB)
    _settle(coord)
    kicks: list[int] = []
    monkeypatch.setattr(coord, "kick", lambda: kicks.append(1))
    spec = JobSpec(id=str(uuid.uuid4()), name="new", cwd="/", command=["true"], env={},
                   cpu=1, mem=GIB, priority=0, submitted_at=time.time())
    submit.handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
    assert kicks == [] and "waits for cores" in str(coord.jobs[spec.id].record.blocked_reason)
