"""The per-job chain (one job's end to the next job's exec): which record writes wait for the
disk and which do not (docs/records.md), the record that travels with the supervisor's note,
the config parse that a forked supervisor takes from the fork server, and the trace that the
benchmark reads. No timing: only order and effects."""

from __future__ import annotations

import errno
import importlib
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from coordkit import add_job, make_coord
from support import paths_with_config

from qex.coordinator.server import sent_record
from qex.coordinator.state import Job
from qex.core.config import Config
from qex.core.records import JobSpec, JobStatus
from qex.platform import chaintrace
from qex.platform.procgroup import ProcessGroupSandbox
from qex.store import atomic
from qex.store import config_file as config_files
from qex.store import jobs as job_files
from qex.store.paths import Paths
from qex.supervisor import main as supervisor_main
from qex.supervisor import notify
from qex.supervisor import runner as supervisor_runner


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every fsync the code under test asks for (the descriptors), in order."""
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_a_durable_write_syncs_the_file_and_its_directory(tmp_path: Path,
                                                         fsyncs: list[int]) -> None:
    atomic.write_bytes(tmp_path / "r.json", b"{}\n")
    assert len(fsyncs) == 2
    assert (tmp_path / "r.json").read_bytes() == b"{}\n"


def _supervisor_runner(tmp_path: Path) -> supervisor_runner.Runner:
    paths = Paths.from_env({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
                            "XDG_CONFIG_HOME": str(tmp_path / "config")})
    job_id = str(uuid.uuid4())
    spec = JobSpec(id=job_id, name="j", cwd="/", command=["true"], env={}, cpu=1, mem=1024,
                   submitted_at=time.time())
    status = JobStatus.new(spec, boot_id="b", oom_retries=0)
    status.state = "starting"
    job_dir = job_files.create_job_dir(paths, job_id)
    job_files.write_spec(job_dir, spec)
    job_files.write_status(job_dir, status)
    return supervisor_runner.Runner(paths, spec, status, Config(), notes=[],
                                    sandbox=ProcessGroupSandbox(reason="test"))


def _run_attempt(runner: supervisor_runner.Runner) -> supervisor_runner.Outcome:
    """One real attempt of the runner's job, with the child watch it needs."""
    from qex.supervisor.children import ChildWatch

    runner.children = ChildWatch()
    try:
        return runner._attempt()
    finally:
        runner.children.close()


def test_the_supervisor_tells_the_coordinator_after_the_record_is_on_the_disk(
        tmp_path: Path, fsyncs: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _supervisor_runner(tmp_path)
    seen: list[tuple[str, dict[str, object] | None, int]] = []

    def note(socket_path: Path, job_id: str, *, record: dict[str, object] | None = None,
             **_more: object) -> bool:
        on_disk = job_files.read_status(runner.job_dir)
        assert on_disk is not None
        seen.append((on_disk.state, record, len(fsyncs)))
        return True

    monkeypatch.setattr(notify, "job_changed", note)
    fsyncs.clear()
    runner.status.state = "completed"
    runner.status.exit_code = 0
    assert runner.save()
    assert len(seen) == 1
    state_on_disk, record, syncs_before_note = seen[0]
    # The record is in place and synced (file and directory) when the note goes, and the
    # note carries it.
    assert state_on_disk == "completed"
    assert record == runner.status.to_dict()
    assert syncs_before_note == 2


def test_a_decided_result_is_said_before_it_is_written_and_announced_after(
        tmp_path: Path, fsyncs: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # The coordinator may start the next job while the result syncs: it is told first that
    # the job's processes are gone (`pending`, while the disk still says `starting`), and
    # the result only once it is on the disk.
    runner = _supervisor_runner(tmp_path)
    seen: list[tuple[str, str, int]] = []

    def note(socket_path: Path, job_id: str, *, record: dict[str, object] | None = None,
             pending: dict[str, object] | None = None, **_more: object) -> bool:
        on_disk = job_files.read_status(runner.job_dir)
        assert on_disk is not None
        kind = "pending" if pending is not None else "record"
        sent = pending if pending is not None else record
        assert sent == runner.status.to_dict()
        seen.append((kind, on_disk.state, len(fsyncs)))
        return True

    monkeypatch.setattr(notify, "job_changed", note)
    fsyncs.clear()
    runner.status.state = "completed"
    runner.status.exit_code = 0
    runner.save_final()
    assert seen == [("pending", "starting", 0), ("record", "completed", 2)]


@pytest.mark.parametrize("thread_ready", [True, False])
def test_the_logs_open_after_the_exec_unless_the_spawn_waits_for_its_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_ready: bool) -> None:
    # With the spawner thread ready (a parked or a serving supervisor), the two log files
    # are made after the exec, off the path to the job's start; with a thread that starts
    # only now, they are made while it sets itself up. Either way the first attempt's logs
    # hold the job's output and no attempt mark.
    runner = _supervisor_runner(tmp_path)
    runner.spec.command = ["sh", "-c", "echo out; echo err >&2"]
    monkeypatch.setattr(notify, "job_changed", lambda *_args, **_more: True)
    monkeypatch.setattr(supervisor_runner, "prepare", lambda child: thread_ready)
    real_spawn = supervisor_runner.spawn
    logs_there: list[bool] = []

    def spawning(child: object, stdout_fd: int, stderr_fd: int) -> int:
        logs_there.append((runner.job_dir / "stdout.log").exists())
        return real_spawn(child, stdout_fd, stderr_fd)  # type: ignore[arg-type]

    monkeypatch.setattr(supervisor_runner, "spawn", spawning)
    outcome = _run_attempt(runner)
    assert outcome is supervisor_runner.Outcome.FINAL
    assert logs_there == [not thread_ready]
    assert runner.status.state == "completed" and runner.status.attempts == 1
    assert (runner.job_dir / "stdout.log").read_text() == "out\n"
    assert (runner.job_dir / "stderr.log").read_text() == "err\n"


def test_a_hand_back_to_the_queue_is_not_said_before_it_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A job going back to the queue (after a proven OOM) keeps its claims until the
    # coordinator takes the queued record: only the announcement after the write goes.
    runner = _supervisor_runner(tmp_path)
    kinds: list[str] = []

    def note(socket_path: Path, job_id: str, *, pending: object = None, **_more: object) -> bool:
        kinds.append("pending" if pending is not None else "record")
        return True

    monkeypatch.setattr(notify, "job_changed", note)
    runner.status.state = "queued"
    runner.save_final()
    assert kinds == ["record"]


def test_an_ending_job_frees_its_claims_but_tells_no_waiter(tmp_path: Path) -> None:
    from qex.coordinator.scheduling import build_snapshot
    from qex.coordinator.server import take_pending
    from qex.core.scheduler_types import PeerLoad

    coord = make_coord(tmp_path)
    job = add_job(coord, state="running", cpu=2, mem=1024)
    other = add_job(coord, state="running", cpu=1, mem=1024)
    assert coord.claimed() == (3, 2048)
    decided = JobStatus.from_dict(job.record.to_dict())
    decided.state = "completed"
    decided.exit_code = 0
    assert take_pending(job, decided.to_dict(), None)
    assert not take_pending(job, decided.to_dict(), None)  # freed once
    # Its record (what status, wait and list show) still says running ...
    assert job.record.state == "running" and job.record.error is None
    assert job in list(coord.active_jobs())
    # ... but its claims count no more.
    assert coord.claimed() == (1, 1024)
    assert list(coord.holding_jobs()) == [other]
    snapshot = build_snapshot(coord, coord.now(), PeerLoad())
    assert [view.id for view in snapshot.active] == [other.id]
    # The written result arrives: the job is final, and nothing is pending any more.
    assert coord.refresh(job, decided)
    assert job.final and job.pending is None


def test_a_result_whose_claims_came_free_earlier_asks_for_no_second_pass(tmp_path: Path) -> None:
    from qex.coordinator.server import take_pending

    coord = make_coord(tmp_path)
    plain, awaited, last = (add_job(coord, state="running") for _ in range(3))
    dependent = add_job(coord, needs=[awaited.id])

    def ends(job: Job) -> bool:
        """Decided (a pass runs for the claims), then written: True when the write kicked."""
        decided = JobStatus.from_dict(job.record.to_dict())
        decided.state = "completed"
        decided.exit_code = 0
        assert take_pending(job, decided.to_dict(), None)
        coord._wake.clear()
        assert coord.refresh(job, decided)
        return coord._wake.is_set()

    assert not ends(plain)   # nothing else waits for it: the pass at its ending was enough
    assert ends(awaited)     # a queued job needs it: look again
    coord.jobs.pop(dependent.id)
    coord.queue.remove(dependent.id)
    assert ends(last)        # the coordinator has nothing left to do: its idle clock starts


def test_the_supervisor_pid_file_is_replaced_atomically_but_not_synced(
        tmp_path: Path, fsyncs: list[int]) -> None:
    from qex.coordinator.scheduling import _write_supervisor_pid

    coord = make_coord(tmp_path)
    job = add_job(coord, state="starting")
    fsyncs.clear()
    _write_supervisor_pid(job, 1234, "tok")
    assert fsyncs == []
    assert (job.dir / job_files.SUPERVISOR_PID).read_text() == "1234 tok\n"
    assert not [p for p in job.dir.iterdir() if ".tmp." in p.name]
    assert job_files.read_supervisor_pid_file(job.dir) == (1234, "tok", True)


def test_the_starting_record_syncs_its_data_but_leaves_the_rename_to_the_next_commit(
        tmp_path: Path, fsyncs: list[int]) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord)
    job.record.state = "starting"
    fsyncs.clear()
    coord.write(job, sync_dir=False)
    assert len(fsyncs) == 1  # the file's data, never the directory
    on_disk = job_files.read_status(job.dir)
    assert on_disk is not None and on_disk.state == "starting"
    fsyncs.clear()
    coord.write(job)
    assert len(fsyncs) == 2  # every other record: the file and its directory


def test_a_record_the_disk_refuses_is_not_announced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _supervisor_runner(tmp_path)
    notes: list[str] = []
    monkeypatch.setattr(notify, "job_changed", lambda *a, **k: notes.append("note") or True)

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "_write_all", full)
    runner.status.state = "completed"
    assert not runner.save()
    assert notes == []
    on_disk = job_files.read_status(runner.job_dir)
    assert on_disk is not None and on_disk.state == "starting"


def test_the_coordinator_takes_the_sent_record_without_reading_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord, state="running")
    sent = JobStatus.from_dict(job.record.to_dict())
    sent.state = "completed"
    sent.exit_code = 0

    def no_read(_job: object) -> None:
        raise AssertionError("the record was read back from disk")

    monkeypatch.setattr(coord, "read_disk", no_read)
    assert coord.refresh(job, sent)
    assert job.record.state == "completed" and job.final


def test_a_sent_record_never_moves_a_job_back(tmp_path: Path) -> None:
    coord = make_coord(tmp_path)
    job = add_job(coord, state="running")
    older = JobStatus.from_dict(job.record.to_dict())
    older.state = "starting"
    assert not coord.refresh(job, older)
    other = JobStatus.from_dict(job.record.to_dict())
    other.id = str(uuid.uuid4())
    other.state = "completed"
    assert not coord.refresh(job, other)
    assert job.record.state == "running"


def test_a_note_without_a_usable_record_falls_back_to_the_file() -> None:
    assert sent_record(None) is None
    assert sent_record("completed") is None
    assert sent_record({"state": "completed"}) is None  # not a whole record


def test_a_forked_supervisor_reuses_the_servers_parse_of_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = paths_with_config(tmp_path, "[budget]\ncpu = 3\n")
    parses: list[bytes] = []
    real = config_files.config_from_look

    def counting(look: config_files.Look, path: Path) -> Config:
        parses.append(look.data)
        return real(look, path)

    monkeypatch.setattr(config_files, "config_from_look", counting)
    monkeypatch.setattr(config_files, "_last_parsed", None)
    supervisor_main.remember_config(paths)
    assert len(parses) == 1
    supervisor_main.remember_config(paths)  # the same bytes: no second parse in the server
    config, notes = supervisor_main._load_config(paths, "j")
    assert len(parses) == 1 and notes == []
    assert config.budget.cpu.absolute == 3
    # The file changed after the fork server looked: the supervisor parses what is there now.
    paths.config_file.write_text('[budget]\ncpu = 1\n')
    config, notes = supervisor_main._load_config(paths, "j")
    assert len(parses) == 2 and config.budget.cpu.absolute == 1
    # A broken file is never taken from the cache, and its sentence still reaches the record.
    paths.config_file.write_text('[budget\n')
    supervisor_main.remember_config(paths)
    config, notes = supervisor_main._load_config(paths, "j")
    assert config == Config() and notes and "config file" in notes[0]


def test_the_chain_trace_is_silent_when_off_and_one_line_per_step_when_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "chain.trace"
    monkeypatch.delenv("QEX_CHAIN_TRACE", raising=False)
    importlib.reload(chaintrace)
    chaintrace.mark("sup.exec", "j1")
    assert not trace.exists()
    monkeypatch.setenv("QEX_CHAIN_TRACE", str(trace))
    try:
        importlib.reload(chaintrace)
        chaintrace.mark("sup.exec", "j1")
        chaintrace.mark("co.tick", "-")
    finally:
        monkeypatch.delenv("QEX_CHAIN_TRACE")
        importlib.reload(chaintrace)
    lines = [line.split(" ") for line in trace.read_text().splitlines()]
    assert [(words[2], words[3]) for words in lines] == [("j1", "sup.exec"), ("-", "co.tick")]
    assert int(lines[0][0]) <= int(lines[1][0])
    assert int(lines[0][1]) == os.getpid()


_REHEARSAL_PROBE = """
import json, os, sys
from qex.core import records
from qex.platform import jobprocess, procs
from qex.store.paths import Paths
from qex.supervisor import forkserver

before = (os.getcwd(), os.umask(0o022), sorted(os.environ.items()))
os.umask(before[1])
forkserver.preload(Paths.from_env())
after = (os.getcwd(), os.umask(0o022), sorted(os.environ.items()))
libc = jobprocess._libc_handle
print(json.dumps({
    "boot_id": procs._boot_id,
    "tables": sorted(cls.__name__ for cls in records._NAMES),
    "libc": sorted(name for name in ("prctl", "unshare", "syscall")
                   if libc is not None and name in vars(libc)),
    "threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1,
    "unchanged": before == after,
}))
"""


def test_the_fork_server_rehearses_a_supervisor_without_touching_anything(
        tmp_path: Path) -> None:
    """In a fresh interpreter, where nothing else made them, the fork server's preload leaves
    made what every forked supervisor would otherwise make for itself (the records' field
    tables, the boot id, libc's function objects), and nothing else: no file in the state
    directory, no thread (a fork would copy a threaded process), the same directory, umask
    and environment."""
    import json
    import subprocess
    import sys

    from qex.platform import host

    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    env.pop("QEX_CHAIN_TRACE", None)
    out = subprocess.run([sys.executable, "-c", _REHEARSAL_PROBE], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    found = json.loads(out)
    assert found["boot_id"]
    assert {"JobSpec", "JobStatus"} <= set(found["tables"])
    if host.linux():
        assert found["libc"] == ["prctl", "syscall", "unshare"]
    assert found["threads"] == 1 and found["unchanged"]
    assert not (tmp_path / "state").exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize("restarts", [False, True])
def test_a_jobs_notes_share_one_connection_that_its_result_closes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restarts: bool) -> None:
    # From `running` to the written result a job's notes go over one connection, so the
    # ending note (on the path to the next job's start) costs the coordinator no accept;
    # the last note closes it, so a supervisor that serves another job holds no descriptor
    # it did not hold before. A coordinator that closes the connection meanwhile (a
    # restart, here after each answer) gets each note on a new one, and none is lost.
    from support import SocketCoordinator

    runner = _supervisor_runner(tmp_path)
    # A short path: AF_UNIX has a limit.
    coordinator = SocketCoordinator(tmp_path / "s", close_after=1 if restarts else None)
    real_note = notify.job_changed

    def note(_socket_path: Path, job_id: str, **more: Any) -> bool:
        return real_note(coordinator.path, job_id, **more)

    monkeypatch.setattr(notify, "job_changed", note)
    try:
        assert _run_attempt(runner) is supervisor_runner.Outcome.FINAL
    finally:
        left_open, notify._kept = notify._kept, None
        if left_open is not None:
            left_open.close()
        coordinator.close()
    assert left_open is None
    sent = ["pending" if message.get("pending") else message["record"]["state"]
            for message in coordinator.requests]
    assert sent == ["running", "pending", "completed"]
    assert len(coordinator.connections) == (3 if restarts else 1)
