"""The coordinator's job table keeps its live jobs apart, so that a scheduler pass costs in
proportion to the live jobs and not to the history."""

from __future__ import annotations

from pathlib import Path

import pytest
from coordkit import add_job, make_coord

from qex.coordinator import scheduling
from qex.core.scheduler_types import PeerLoad


def test_live_jobs_are_those_not_final(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    done = [add_job(coord, state="completed") for _ in range(3)]
    queued = add_job(coord)
    running = add_job(coord, state="running")
    assert [j.id for j in coord.jobs.live()] == [queued.id, running.id]
    assert [j.id for j in coord.active_jobs()] == [running.id]
    running.record.state = "failed"
    assert [j.id for j in coord.jobs.live()] == [queued.id]
    coord.forget(queued)
    assert list(coord.jobs.live()) == [] and not coord.has_work()
    assert len(coord.jobs) == 4 and all(j.id in coord.jobs for j in done)


def test_a_job_back_in_the_queue_is_live_again(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord, state="running")
    job.record.state = "failed"
    assert list(coord.jobs.live()) == []  # pruned
    job.record.state = "queued"  # never done by the coordinator; enqueue insures it anyway
    coord.enqueue(job)
    assert [j.id for j in coord.jobs.live()] == [job.id]


def test_a_pass_looks_up_only_the_jobs_it_needs(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With a long history, a pass builds the known view of a dependency, not of every job."""
    coord = make_coord(tmp_path)
    history = [add_job(coord, state="completed") for _ in range(300)]
    add_job(coord, needs=[history[7].id])
    looked_up: list[str] = []
    real = scheduling.known_job

    def counting(job: scheduling.Job) -> object:
        looked_up.append(job.id)
        return real(job)

    monkeypatch.setattr(scheduling, "known_job", counting)
    monkeypatch.setattr(coord, "forkserver", None, raising=False)
    monkeypatch.setattr(scheduling, "start_job", lambda *args: None)
    scheduling.run_pass(coord, PeerLoad())
    assert history[7].id in looked_up
    assert len(set(looked_up)) <= 5


def test_a_pass_measures_the_machine_only_for_queued_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An idle coordinator passes once after each command: with nothing queued, that pass
    reads no /proc file; with a queued job, it measures the free memory and the pressure."""
    coord = make_coord(tmp_path)
    add_job(coord, state="completed")
    measured: list[str] = []
    monkeypatch.setattr(scheduling.machine_info, "mem_available",
                        lambda: measured.append("memory") or 1 << 40)
    monkeypatch.setattr(scheduling.machine_info, "memory_pressure",
                        lambda: measured.append("pressure") or 0.0)
    snapshot = scheduling.build_snapshot(coord, coord.now(), PeerLoad())
    assert measured == [] and snapshot.mem_available is None and snapshot.pressure is None
    add_job(coord)
    snapshot = scheduling.build_snapshot(coord, coord.now(), PeerLoad())
    assert measured == ["memory", "pressure"] and snapshot.mem_available == 1 << 40
