"""`submit_words` with `each_line`: the coordinator expands a fan-out as the command did."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from coordkit import make_coord, one_pass, state_environ

from qex.coordinator import submit, submit_lines, submit_words
from qex.coordinator.state import Coordinator
from qex.core import protocol


def _message(tmp_path: Path, text: str, command: list[str], **options: Any) -> dict[str, Any]:
    environ = {**state_environ(tmp_path), "PATH": "/usr/bin:/bin"}
    options = {"command": command, "cpu": 1, "mem": "16MB",
               "each_line": {"path": "names.txt", "text": text, "max_jobs": 1000}, **options}
    return protocol.submit_words(options, environ=environ, cwd=str(tmp_path),
                                 client_version=protocol.VERSION)


def _expand(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(submit_lines.handle_submit_lines(coord, message))


@pytest.fixture
def coord(tmp_path: Path) -> Coordinator:
    return make_coord(tmp_path)


def test_every_line_is_a_stage_of_one_new_group(coord: Coordinator, tmp_path: Path) -> None:
    answer = _expand(coord, _message(tmp_path, "a\n\n# skip\nb c\n", ["echo", "{}"]))
    assert answer["result"] == protocol.Result.SUBMITTED, answer
    assert answer["summary"].startswith("this input gives 2 job(s)")
    assert [j["name"] for j in answer["jobs"]] == ["echo-01-a", "echo-02-b-c"]
    assert answer["group_name"] == "names" and answer["total"] == 2
    stages = [coord.jobs[j["id"]].record for j in answer["jobs"]]
    assert [s.command for s in stages] == [["echo", "a"], ["echo", "b c"]]
    assert {s.group for s in stages} == {answer["group"]}
    assert {s.group_name for s in stages} == {"names"}


def test_the_input_and_the_template_are_checked_before_anything(coord: Coordinator,
                                                                 tmp_path: Path) -> None:
    for text, command, words in (("a\n", ["echo"], "has no `{}`"),
                                 ("\n# none\n", ["echo", "{}"], "gives no job"),
                                 ("a\nb\n", ["echo", "{}"], "the limit is 1")):
        message = _message(tmp_path, text, command)
        if words == "the limit is 1":
            message["options"]["each_line"]["max_jobs"] = 1
        answer = _expand(coord, message)
        assert answer["result"] == "error" and answer["build"] is True, answer
        assert words in answer["message"]
    assert not coord.jobs


def test_a_refused_stage_ends_the_fan_out_with_the_stages_already_queued(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = submit_words.handle_submit
    calls: list[int] = []

    def refuse_the_second(coord: Coordinator, message: dict[str, Any],
                          **how: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 2:
            return protocol.error(protocol.WRONG_STATE, "no room for this one")
        return real(coord, message, **how)

    monkeypatch.setattr(submit_words, "handle_submit", refuse_the_second)
    answer = _expand(coord, _message(tmp_path, "a\nb\nc\n", ["echo", "{}"]))
    assert answer["result"] == "error" and answer["message"] == "no room for this one"
    assert [j["name"] for j in answer["jobs"]] == ["echo-01-a"]
    assert answer["total"] == 3 and len(calls) == 2
    assert list(coord.jobs) == [answer["jobs"][0]["id"]]


class _Clock:
    """The clock of `SubmissionWakes`: it moves by `step` seconds at each reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 1000.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _count_wakes(coord: Coordinator, monkeypatch: pytest.MonkeyPatch, step: float) -> list[int]:
    """The number of jobs queued at each wake-up of the scheduler. The gap is an hour here, so
    that no wake-up falls due on the real clock while the test runs."""
    wakes: list[int] = []
    real = coord.kick
    monkeypatch.setattr(coord, "kick", lambda: (wakes.append(len(coord.jobs)), real())[1])
    monkeypatch.setattr(submit, "GROUP_PASS_GAP_SECS", 3600.0)
    monkeypatch.setattr(submit, "_clock", _Clock(step * 3600.0))
    return wakes


def test_a_fan_out_wakes_the_scheduler_for_its_first_job_and_at_its_end_within_the_gap(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One pass per job made a fan-out quadratic in the queue; within the gap it takes two.
    wakes = _count_wakes(coord, monkeypatch, step=0.0)
    answer = _expand(coord, _message(tmp_path, "".join(f"{i}\n" for i in range(40)),
                                     ["echo", "{}"]))
    assert answer["result"] == protocol.Result.SUBMITTED and len(answer["jobs"]) == 40
    assert wakes == [1, 40]  # after the first job was queued, and after the last


def test_a_slow_fan_out_wakes_the_scheduler_once_per_gap(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wakes = _count_wakes(coord, monkeypatch, step=0.6)
    _expand(coord, _message(tmp_path, "".join(f"{i}\n" for i in range(10)), ["echo", "{}"]))
    assert wakes == [1, 3, 5, 7, 9, 10]  # every second job, and the end for the tenth


def test_a_refused_stage_still_wakes_the_scheduler_for_the_jobs_queued_before_it(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wakes = _count_wakes(coord, monkeypatch, step=0.0)
    real = submit_words.handle_submit

    def refuse_the_third(coord: Coordinator, message: dict[str, Any],
                         **how: Any) -> dict[str, Any]:
        if len(coord.jobs) == 2:
            return protocol.error(protocol.WRONG_STATE, "no room for this one")
        return real(coord, message, **how)

    monkeypatch.setattr(submit_words, "handle_submit", refuse_the_third)
    answer = _expand(coord, _message(tmp_path, "a\nb\nc\nd\n", ["echo", "{}"]))
    assert answer["result"] == "error" and len(answer["jobs"]) == 2
    assert wakes == [1, 2]


def test_a_submission_inside_the_gap_is_woken_for_when_the_gap_ends(
        coord: Coordinator, monkeypatch: pytest.MonkeyPatch) -> None:
    # The run does not end (a connection that stays open): the due wake-up still comes.
    kicks: list[float] = []
    monkeypatch.setattr(coord, "kick", lambda: kicks.append(submit._clock()))
    monkeypatch.setattr(submit, "GROUP_PASS_GAP_SECS", 0.01)

    async def run() -> None:
        wakes = submit.SubmissionWakes(coord)
        assert wakes.wake_now() is True  # the caller wakes the scheduler for this one
        assert wakes.wake_now() is False
        assert wakes.wake_now() is False  # one wake-up is due for both
        assert kicks == []
        await asyncio.sleep(0.1)  # the timer of 10 ms fires before this sleep ends
        assert len(kicks) == 1
        wakes.finish()  # nothing is due any more
        assert len(kicks) == 1

    asyncio.run(run())


def test_a_malformed_input_field_is_refused(coord: Coordinator, tmp_path: Path) -> None:
    for bad in ({"path": "x", "text": "a\n"}, {"path": "x", "text": b"a", "max_jobs": 1},
                {"path": "x", "text": "a\n", "max_jobs": 0},
                {"path": "x", "text": "a\n", "max_jobs": True}):
        message = _message(tmp_path, "a\n", ["echo", "{}"])
        message["options"]["each_line"] = bad
        assert _expand(coord, message)["kind"] == protocol.INTERNAL
    assert not coord.jobs


def _pause_queue(coord: Coordinator) -> None:
    from qex.coordinator import pausing

    pausing.pause(coord, {"target": {"kind": "queue"}, "reason": "batch", "by_pid": 77})


def test_a_fan_out_into_a_paused_queue_wakes_no_pass_that_would_change_nothing(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each job is queued with the pause's reason, which is what a pass would give it: the
    pass that follows changes no record and starts nothing."""
    from qex.coordinator.scheduling import run_pass
    from qex.core.scheduler_types import PeerLoad

    _pause_queue(coord)
    wakes = _count_wakes(coord, monkeypatch, step=0.6)
    answer = _expand(coord, _message(tmp_path, "".join(f"{i}\n" for i in range(10)),
                                     ["echo", "{}"]))
    assert answer["result"] == protocol.Result.SUBMITTED and len(answer["jobs"]) == 10
    assert wakes == []
    reasons = {coord.jobs[j["id"]].record.blocked_reason for j in answer["jobs"]}
    assert len(reasons) == 1 and "paused" in str(reasons.pop())
    result = run_pass(coord, PeerLoad())
    assert result.decision.waits == {} and result.decision.starts == ()
    assert result.decision.skips == () and result.decision.expiries == ()


def test_a_paused_fan_out_that_waits_for_a_lock_still_wakes_the_scheduler(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A lock's reason comes before the pause's, so the pass has something to say.
    _pause_queue(coord)
    wakes = _count_wakes(coord, monkeypatch, step=0.0)
    answer = _expand(coord, _message(tmp_path, "a\nb\nc\n", ["echo", "{}"], locks=["gpu0"]))
    assert answer["result"] == protocol.Result.SUBMITTED, answer
    assert wakes == [1, 3]


def test_needs_pass_only_skips_a_job_that_the_pause_alone_holds() -> None:
    from qex.core.records import JobStatus

    def record(**fields: Any) -> JobStatus:
        return JobStatus.from_dict({"id": "j", "name": "j", "state": "queued", "cpu": 1,
                                    "mem": 1, "submitted_at": 1.0, "command": ["true"],
                                    "cwd": "/", "blocked_reason": "paused", **fields})

    assert not submit.needs_pass(record(), "paused")
    assert submit.needs_pass(record(), None)  # not paused: a slot may be free
    assert submit.needs_pass(record(blocked_reason="too big"), "paused")
    for waits in ({"needs": ["x"]}, {"after": ["x"]}, {"locks": ["gpu0"]},
                  {"claims": {"gpu": {"count": 1}}}):
        assert submit.needs_pass(record(**waits), "paused"), waits


def _busy(coord: Coordinator) -> None:
    """Running jobs that hold every core of the budget, so that queued jobs wait for cores."""
    from coordkit import add_job

    for _ in range(coord.cpu_budget()):
        add_job(coord, state="running", pid=None, started_at=1.0)


def test_behind_busy_slots_a_job_is_queued_with_the_reason_its_pass_gives_it(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job before it at the end of the queue waits for cores alone and claims as much:
    the new record is written once, with its reason, instead of again after the pass."""
    _busy(coord)
    first = _expand(coord, _message(tmp_path, "a\nb\n", ["echo", "{}"]))
    one_pass(coord)  # the first job is the head; the second waits behind it
    writes: list[str] = []
    real_write = coord.write
    monkeypatch.setattr(coord, "write", lambda job, **how: (writes.append(job.id),
                                                            real_write(job, **how))[1])
    wakes = _count_wakes(coord, monkeypatch, step=0.6)
    answer = _expand(coord, _message(tmp_path, "c\nd\ne\n", ["echo", "{}"]))
    assert wakes == []  # nor is the scheduler woken for a pass that would change nothing
    later = [j["id"] for j in answer["jobs"]]
    reasons = {coord.jobs[i].record.blocked_reason for i in later}
    second = coord.jobs[first["jobs"][1]["id"]].record.blocked_reason
    assert reasons == {second} and "waits for cores" in str(second)
    result = one_pass(coord)
    assert not set(later) & set(result.decision.waits)  # the pass has nothing to change
    assert result.decision.starts == ()
    assert not set(later) & set(writes)  # so no record is written a second time


def test_a_job_unlike_the_one_before_it_waits_for_its_pass_to_be_given_a_reason(
        coord: Coordinator, tmp_path: Path) -> None:
    _busy(coord)
    _expand(coord, _message(tmp_path, "a\nb\n", ["echo", "{}"]))
    one_pass(coord)
    for options in ({"mem": "32MB"}, {"locks": ["db"]}, {"cpu": 2}):
        answer = _expand(coord, _message(tmp_path, "z\n", ["echo", "{}"], **options))
        assert answer["result"] == protocol.Result.SUBMITTED, answer
        assert coord.jobs[answer["jobs"][0]["id"]].record.blocked_reason is None, options
        one_pass(coord)


def test_the_head_s_own_sentence_is_not_given_to_the_job_behind_it(
        coord: Coordinator, tmp_path: Path) -> None:
    _busy(coord)
    head = _expand(coord, _message(tmp_path, "a\n", ["echo", "{}"]))["jobs"][0]["id"]
    one_pass(coord)
    assert coord.head_id == head and coord.jobs[head].record.blocked_since is not None
    answer = _expand(coord, _message(tmp_path, "b\n", ["echo", "{}"]))
    assert coord.jobs[answer["jobs"][0]["id"]].record.blocked_reason is None


def test_a_job_like_the_last_but_with_a_queue_time_limit_still_wakes_the_scheduler(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its limit is a deadline that the loop learns of only in a pass.
    _busy(coord)
    _expand(coord, _message(tmp_path, "a\nb\n", ["echo", "{}"]))
    one_pass(coord)
    wakes = _count_wakes(coord, monkeypatch, step=0.0)
    answer = _expand(coord, _message(tmp_path, "c\n", ["echo", "{}"], max_queue_time="1h"))
    job = coord.jobs[answer["jobs"][0]["id"]]
    assert job.max_queue_time == 3600 and "waits for cores" in str(job.record.blocked_reason)
    assert wakes == [len(coord.jobs)]


def _fsynced(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The paths that `os.fsync` is called for, from any thread."""
    import os

    synced: set[str] = set()
    real = os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        synced.add(os.readlink(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def _durable(coord: Coordinator, synced: set[str]) -> bool:
    """Every job in memory has both records in place, each synced under its temp name, and
    its directory synced: nothing a power cut could take back."""
    for job in coord.jobs.values():
        for name in ("spec.json", "status.json"):
            if not (job.dir / name).is_file() or not any(
                    path.startswith(f"{job.dir}/.{name}.tmp.") for path in synced):
                return False
        if str(job.dir) not in synced:
            return False
    return str(coord.paths.jobs_dir) in synced


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors by /proc")
def test_a_fan_out_is_durable_at_every_yield_and_at_its_answer(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs between two yields to the event loop are synced as one batch, before the
    yield: a pass, another request or an event reader never sees a job that is not on the
    disk, and each job is announced (its event) once it is."""
    synced = _fsynced(monkeypatch)
    yields: list[int] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        assert _durable(coord, synced), "a job not yet durable at a yield"
        assert coord.events.last_seq == len(coord.jobs)
        yields.append(len(coord.jobs))
        await real_sleep(delay)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    count = 2 * submit_words.JOBS_PER_BATCH + 3
    answer = _expand(coord, _message(tmp_path, "".join(f"{i}\n" for i in range(count)),
                                     ["echo", "{}"]))
    assert answer["result"] == protocol.Result.SUBMITTED and len(answer["jobs"]) == count
    assert yields == [submit_words.JOBS_PER_BATCH, 2 * submit_words.JOBS_PER_BATCH]
    assert _durable(coord, synced) and coord.events.last_seq == count


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors by /proc")
@pytest.mark.parametrize("failing", ["data", "directory"])
def test_a_batch_the_disk_refuses_is_taken_back_whole(
        coord: Coordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        failing: str) -> None:
    """A sync of the second batch fails: that batch's jobs leave memory and the disk, the
    answer names its first job, and the first batch stays queued and announced."""
    import errno
    import os

    real = os.fsync
    batches: list[int] = []

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        is_dir = os.path.isdir(path)
        if path.endswith("/jobs"):
            batches.append(1)
        if len(batches) == 1 and is_dir is (failing == "directory") and not path.endswith(
                "/jobs"):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    per = submit_words.JOBS_PER_BATCH
    answer = _expand(coord, _message(tmp_path, "".join(f"{i}\n" for i in range(per + 3)),
                                     ["echo", "{}"]))
    if failing == "directory":  # a directory that cannot be synced is left as it is
        assert answer["result"] == protocol.Result.SUBMITTED and len(coord.jobs) == per + 3
        return
    assert answer["result"] == "error" and "could not write the job record" in answer["message"]
    assert answer["stage"] == f"echo-{per + 1:02d}-{per}"
    kept = [entry["id"] for entry in answer["jobs"]]
    assert len(kept) == per and list(coord.jobs) == kept and coord.queue == kept
    assert coord.events.last_seq == per
    assert sorted(p.name for p in coord.paths.jobs_dir.iterdir()) == sorted(kept)


def _part(tmp_path: Path, text: str, group: str, first: int, total: int,
          max_jobs: int = 1000) -> dict[str, Any]:
    message = _message(tmp_path, text, ["echo", "{}"])
    message["options"]["each_line"].update(
        max_jobs=max_jobs, part={"group": group, "first": first, "total": total})
    return message


def test_the_parts_of_a_long_input_join_one_group_named_as_one_request(
        coord: Coordinator, tmp_path: Path) -> None:
    """Three parts of one input give the jobs, names and group that the whole input gives
    in one request (numbered to the whole input's width), each answer telling the total."""
    from qex.core import fanout_source
    from qex.core.names import new_id

    lines = [f"item{i}" for i in range(1, 12)]
    text = "# head\n" + "\n".join(lines) + "\n"
    group = new_id()
    parts = fanout_source.split_parts(text, per_part=4)
    names = []
    for part in parts:
        answer = _expand(coord, _part(tmp_path, part.text, group, part.first, 11))
        assert answer["result"] == protocol.Result.SUBMITTED, answer
        assert (answer["group"], answer["total"], answer["group_name"]) == (group, 11, "names")
        names += [job["name"] for job in answer["jobs"]]
    whole = make_coord(tmp_path / "whole")
    one = _expand(whole, _message(tmp_path / "whole", text, ["echo", "{}"]))
    assert names == [job["name"] for job in one["jobs"]] == [
        f"echo-{i:02d}-item{i}" for i in range(1, 12)]
    records = sorted((job.record for job in coord.jobs.values()), key=lambda r: r.sequence)
    assert [r.command for r in records] == [["echo", line] for line in lines]
    assert {r.group for r in records} == {group}


def test_a_fan_out_over_its_limit_is_refused_at_its_first_part(
        coord: Coordinator, tmp_path: Path) -> None:
    from qex.core.names import new_id

    answer = _expand(coord, _part(tmp_path, "a\nb\n", new_id(), 1, 2500, max_jobs=2000))
    assert answer["result"] == "error" and answer["build"] is True, answer
    assert "gives 2500 jobs and the limit is 2000" in answer["message"]
    assert "--max-jobs 2500" in answer["message"]
    assert not coord.jobs


@pytest.mark.parametrize("part", [
    {"group": "not-an-id", "first": 1, "total": 2},
    {"group": "0" * 36, "first": 1, "total": 2},
    {"first": 1, "total": 2},
    {"group": None, "first": 1, "total": 2},
    {"group": "{id}", "first": 0, "total": 2},
    {"group": "{id}", "first": 3, "total": 2},
    {"group": "{id}", "first": 1, "total": 2, "more": 1},
    {"group": "{id}", "first": True, "total": 2},
    {"group": "{id}", "first": 2, "total": 2},  # two lines from job 2 of 2: past the total
])
def test_a_malformed_part_is_refused(coord: Coordinator, tmp_path: Path,
                                     part: dict[str, Any]) -> None:
    from qex.core.names import new_id

    message = _message(tmp_path, "a\nb\n", ["echo", "{}"])
    if part.get("group") == "{id}":
        part = {**part, "group": new_id()}
    message["options"]["each_line"]["part"] = part
    answer = _expand(coord, message)
    assert answer["result"] == "error" and not coord.jobs, answer
