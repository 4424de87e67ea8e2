"""A wait on a group of thousands narrates only the job at its front, and finds that job
without walking the whole group for every record that comes (which made `qex wait GROUP`
on 1,985 jobs spend seconds of CPU before it waited)."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest

from qex.cli import waiting
from qex.core.records import JobSpec, JobStatus
from qex.store.paths import Paths


def _record(n: int, state: str = "queued", reason: str | None = "waits for a slot") -> dict[str, Any]:
    spec = JobSpec(id=f"{n:08d}-0000-4000-8000-000000000000", name=f"job-{n}", cwd="/",
                   command=["true"], env={}, cpu=1, mem=1024, submitted_at=time.time())
    record = JobStatus.new(spec, boot_id="b", oom_retries=0)
    record.state = state
    record.blocked_reason = reason if state == "queued" else None
    return record.to_dict()


def test_only_the_front_of_a_large_group_is_narrated_and_found_cheaply(
        tmp_path: Path) -> None:
    count = 3000
    out = io.StringIO()
    waiter = waiting.Waiter(Paths.from_env({"HOME": str(tmp_path)}), None,
                            [_record(n) for n in range(count)],
                            waiting.WaitSettings(narrate=True, out=out))
    looked = 0
    real = waiter._final

    def counted(job_id: str) -> bool:
        nonlocal looked
        looked += 1
        return real(job_id)

    waiter._final = counted  # type: ignore[method-assign]
    # Every job's reason changes, then the jobs end one after the other in order, each
    # end followed by a new reason for every job still queued near the front.
    for n in range(count):
        waiter._update(_record(n, reason="behind a lock"))
    for n in range(count):
        waiter._update(_record(n, state="completed"))
        if n + 1 < count:
            waiter._update(_record(n + 1, reason=f"next after {n}"))
    assert looked < 6 * count  # a walk from the start each time: millions
    said = out.getvalue().splitlines()
    assert said[0].endswith("waits for a slot") and "00000000" in said[0]
    assert "00000000" in said[1] and said[1].endswith("behind a lock")
    assert len(said) == 2 + count - 1  # the front job's new reason each time, no other
    assert all(f"{n:08d}"[:8] in said[1 + n] for n in range(1, count))
    assert waiter._first_pending() is None


class _SlowConnection:
    """A coordinator that answers nothing before the wait's own limit."""

    def send_wait(self, job_id: str) -> None:
        pass

    def pending(self) -> bool:
        return False

    def receive_status(self) -> dict[str, Any]:
        from qex.client.errors import TimedOut

        raise TimedOut("the coordinator did not answer within the time allowed")

    def close(self) -> None:
        pass


def test_a_wait_that_reaches_its_own_limit_reads_no_record_from_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection's time-out at the wait's own limit is the end of the wait, not a
    lost coordinator: no record is read again from the disk (a group's thousands were)."""
    waiter = waiting.Waiter(Paths.from_env({"HOME": str(tmp_path)}), _SlowConnection(),  # type: ignore[arg-type]
                            [_record(n) for n in range(20)],
                            waiting.WaitSettings(timeout=0.01, narrate=False))
    monkeypatch.setattr(waiter, "_select", list)  # the answer is "ready" at once
    monkeypatch.setattr(waiter, "_ensure_events", lambda **_kw: None)
    read: list[int] = []
    monkeypatch.setattr(waiter, "_refresh_from_disk", lambda: read.append(1) or [])
    time.sleep(0.02)
    with pytest.raises(waiting.WaitTimedOut):
        waiter.wait_all()
    assert read == []
