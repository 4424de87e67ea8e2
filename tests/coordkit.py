"""A coordinator and its jobs in a temporary state, for the tests that drive coordinator
code in-process (unit and fault tests): one definition instead of a copy per file."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from qex.coordinator import scheduling
from qex.coordinator.events import EventHub
from qex.coordinator.state import Coordinator, Job
from qex.core.config import Config, Machine
from qex.core.records import JobSpec, JobStatus
from qex.core.scheduler_types import PeerLoad
from qex.platform import procs
from qex.store import jobs as job_files
from qex.store.paths import Paths


def state_environ(tmp_path: Path) -> dict[str, str]:
    """The environment of a command that uses the state of `make_coord(tmp_path)`."""
    return {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config")}


def make_coord(tmp_path: Path) -> Coordinator:
    paths = Paths.from_env(state_environ(tmp_path))
    paths.jobs_dir.mkdir(parents=True)
    paths.run_dir.mkdir(parents=True)
    return Coordinator(
        paths=paths, config=Config(), machine=Machine(cores=4, mem_total=16 * 1024**3),
        events=EventHub(retained=64, version="test", pid=1, started_at=0.0),
        started_at=0.0, idle_limit=3600.0, boot_id=procs.boot_id(),
    )


def add_job(coord: Coordinator, *, state: str = "queued", priority: int = 0,
            submitted_at: float | None = None, **fields: Any) -> Job:
    job_id = str(uuid.uuid4())
    spec = JobSpec(id=job_id, name=fields.pop("name", "j"), cwd="/", command=["true"], env={},
                   cpu=1, mem=1024, priority=priority,
                   submitted_at=time.time() if submitted_at is None else submitted_at,
                   dedupe_key=fields.pop("dedupe_key", None),
                   dedupe_window=fields.pop("dedupe_window", 0))
    record = JobStatus.new(spec, boot_id=coord.boot_id, oom_retries=2)
    record.state = state
    for key, value in fields.items():
        setattr(record, key, value)
    job_dir = job_files.create_job_dir(coord.paths, job_id)
    job_files.write_spec(job_dir, spec)
    job_files.write_status(job_dir, record)
    job = Job.from_records(spec, record, job_dir)
    coord.jobs[job_id] = job
    if state == "queued":
        coord.enqueue(job)
    return job


def one_pass(coord: Coordinator) -> scheduling.PassResult:
    """One scheduler pass on a loop of its own, and the records it deferred written at once."""

    async def run() -> scheduling.PassResult:
        result = scheduling.run_pass(coord, PeerLoad())
        coord.flush_deferred()
        return result

    return asyncio.run(run())


def add_grouped_jobs(coord: Coordinator, now: float) -> None:
    """Four jobs for the listing filters: two groups named `fan`, one named `other`, tags
    (one not a plain word), and working directories under and beside `/src`."""
    add_job(coord, submitted_at=now - 9, tags=["nightly"], cwd="/src/a", group="g1" * 8,
            group_name="fan")
    add_job(coord, state="completed", submitted_at=now - 8, started_at=now - 8,
            finished_at=now - 7, exit_code=0, tags=["nightly", "gpu"], cwd="/src/a/b",
            group="g2" * 8, group_name="fan")
    add_job(coord, state="failed", submitted_at=now - 7, started_at=now - 7,
            finished_at=now - 6, exit_code=2, tags=["Ω weird"], cwd="/src", group="h3" * 8,
            group_name="other")
    add_job(coord, submitted_at=now - 6, cwd="/elsewhere")


#: Filters of a listing request over `add_grouped_jobs`, as the command sends them.
FILTER_CASES: list[dict[str, Any]] = [
    {"states": ["queued"]}, {"states": ["failed", "completed"]}, {"tags": ["nightly"]},
    {"tags": ["nightly", "gpu"]}, {"tags": ["Ω_weird"]}, {"group": "other"},
    {"group": "g1g1"}, {"cwd": "/src/a"}, {"under": "/src"}, {"under": "/src/a",
                                                              "states": ["completed"]},
    {"tags": ["none-such"]},
]

#: The keywords of `chosen_jobs` for each filter of a request.
FILTER_KEYWORDS = {"states": "states", "tags": "tags", "group": "group_word", "cwd": "cwd_dir",
                   "under": "under_dir"}


class AnsweringWire:
    """A coordinator seen from the fast path's wire (`qex.cli.wire.Wire`): it answers each
    request from a table by its op, and records the ops it was asked, in order."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def request_text(self, message: dict[str, Any]) -> object:
        self.asked.append(message["op"])
        return self.answers[message["op"]]

    def request(self, message: dict[str, Any]) -> object:
        return self.request_text(message)

    def close(self) -> None:
        pass
