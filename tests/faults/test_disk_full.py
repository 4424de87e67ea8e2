"""A full disk at each step of a job's life (the state directory on a 2MB tmpfs).

The promise under test: what the coordinator says and what the disk holds never disagree,
no result is lost, and no job runs twice. Each job appends a line to a marker file outside
the small disk, so "ran once" is counted, not guessed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from faultkit import Disk, FaultEnv, kill9

SUBMIT = ("submit", "--cpu", "1", "--mem", "8MB")


def marker_job(env: FaultEnv, name: str, script: str) -> tuple[list[str], Path]:
    marker = env.root / f"{name}.ran"
    return ["sh", "-c", f'echo ran >> "$1"; {script}', "sh", str(marker)], marker


def runs(marker: Path) -> int:
    try:
        return marker.read_text().count("ran")
    except FileNotFoundError:
        return 0


def test_a_submission_on_a_full_disk_is_refused_and_nothing_runs(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    fault_env.answers()  # the coordinator and its dirs exist before the disk fills
    command, marker = marker_job(fault_env, "a", "exit 3")
    small_disk.fill()
    proc = fault_env.run(*SUBMIT, "--wait", "--", *command)
    assert proc.returncode == 121
    assert "full" in proc.stderr and "Traceback" not in proc.stderr
    assert fault_env.answers() == []
    small_disk.free()
    proc = fault_env.run(*SUBMIT, "--wait", "--", *command, timeout=60)
    assert proc.returncode == 3
    assert runs(marker) == 1
    fault_env.logs_within_cap()


def test_a_fan_out_that_fills_the_disk_keeps_what_it_queued_and_runs_each_job_once(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    """The disk fills in the middle of a fan-out, whose jobs are written in batches: the jobs
    the answer lists as queued are whole on the disk and run once each, and no other job,
    and no part of one, is left."""
    fault_env.run("pause", "queue", check=True)
    lines = fault_env.root / "lines.txt"
    lines.write_text("".join(f"{i}\n" for i in range(60)))
    marker = fault_env.root / "fan.ran"
    command = ["sh", "-c", 'echo ran >> "$1"', "sh", str(marker)]
    fault_env.answers()
    small_disk.fill()
    size = small_disk.filler.stat().st_size
    os.truncate(small_disk.filler, max(0, size - 96 * 1024))  # room for a few jobs
    proc = fault_env.run(*SUBMIT, "--each-line", str(lines), "--", *command, "{}")
    assert proc.returncode != 0 and "full" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    queued = [r["id"] for r in fault_env.answers()]
    assert 0 < len(queued) < 60, len(queued)
    jobs_dir = fault_env.state / "jobs"
    assert sorted(p.name for p in jobs_dir.iterdir()) == sorted(queued)
    for job in queued:
        assert sorted(p.name for p in (jobs_dir / job).iterdir()) == ["spec.json", "status.json"]
        assert fault_env.record(job)["state"] == "queued"
    small_disk.free()
    fault_env.run("resume", "queue", check=True)
    assert fault_env.run("wait", *queued, timeout=120).returncode == 0
    assert runs(marker) == len(queued)
    fault_env.logs_within_cap()


def test_a_group_cancel_on_a_full_disk_leaves_every_job_queued_and_says_so(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    """`qex cancel GROUP` sends its 70 jobs in one request, written in batches: on a full
    disk each job is refused with the cause, and each stays queued in the coordinator and on
    the disk (a cancel kept only in memory would be undone by a restart). Once there is
    room, the same command cancels them all, and none of them ever runs."""
    fault_env.run("pause", "queue", check=True)
    lines = fault_env.root / "lines.txt"
    lines.write_text("".join(f"{i}\n" for i in range(70)))
    command, marker = marker_job(fault_env, "cancelled", "true")
    group = fault_env.run(*SUBMIT, "--each-line", str(lines), "--", *command, "{}",
                          check=True).stdout.strip()
    queued = [r["id"] for r in fault_env.answers()]
    assert len(queued) == 70
    small_disk.fill()
    proc = fault_env.run("cancel", group)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("stays queued") == 70, proc.stderr[-2000:]
    assert {r["state"] for r in fault_env.answers()} == {"queued"}
    for job in queued:
        assert fault_env.record(job)["state"] == "queued"
    small_disk.free()
    proc = fault_env.run("cancel", group, check=True)
    assert proc.stdout.count("left the queue") == 70
    for job in queued:
        assert fault_env.record(job)["state"] == "cancelled"
    fault_env.run("resume", "queue", check=True)
    assert {r["state"] for r in fault_env.answers()} == {"cancelled"}
    assert runs(marker) == 0
    fault_env.logs_within_cap()


def test_a_job_whose_start_cannot_be_recorded_stays_queued_and_runs_once(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    # A job larger than the budget starts once the queue was idle for `settle`: a start that
    # comes from a timer, so nothing the test does frees space at that moment.
    fault_env.write_config('[queue]\nsettle = "3s"\noversized = "run-when-idle"\n')
    command, marker = marker_job(fault_env, "b", "exit 5")
    job = fault_env.submit("--cpu", "4096", "--mem", "8MB", "--", *command)
    fault_env.wait_record(job, lambda r: r["state"] == "queued")
    small_disk.fill()

    def says_it_waits() -> dict[str, object] | None:
        found = [r for r in fault_env.answers() if r["id"] == job]
        reason = str(found[0].get("blocked_reason") or "") if found else ""
        return found[0] if "disk space" in reason else None

    shown = fault_env.wait_for(says_it_waits, what="the reason that names the disk")
    assert shown["state"] == "queued"
    assert fault_env.record(job)["state"] == "queued"  # the disk agrees
    assert runs(marker) == 0
    small_disk.free()
    proc = fault_env.run("wait", job, timeout=60)
    assert proc.returncode == 5
    assert fault_env.record(job)["exit_code"] == 5
    assert runs(marker) == 1
    fault_env.answers()
    fault_env.logs_within_cap()


def test_a_result_waits_for_the_disk_and_is_kept(fault_env: FaultEnv, small_disk: Disk) -> None:
    command, marker = marker_job(fault_env, "c", "sleep 1; exit 7")
    job = fault_env.submit(*SUBMIT[1:], "--", *command)
    fault_env.wait_record(job, lambda r: r["state"] == "running")
    small_disk.fill()

    def says_it_waits() -> dict[str, object] | None:
        found = [r for r in fault_env.answers() if r["id"] == job]
        error = str(found[0].get("error") or "") if found else ""
        return found[0] if "waits for disk space" in error else None

    shown = fault_env.wait_for(says_it_waits, what="the sentence about the kept result")
    assert "stopped with 7" in str(shown["error"])
    assert shown["state"] == "running"
    assert fault_env.record(job)["state"] == "running"  # not final anywhere until written
    small_disk.free()
    proc = fault_env.run("wait", job, timeout=60)
    assert proc.returncode == 7
    record = fault_env.record(job)
    assert (record["state"], record["exit_code"]) == ("failed", 7)
    assert runs(marker) == 1
    fault_env.answers()
    fault_env.logs_within_cap()


def test_the_kept_result_survives_a_coordinator_restart(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    command, marker = marker_job(fault_env, "d", "sleep 1; exit 7")
    job = fault_env.submit(*SUBMIT[1:], "--", *command)
    fault_env.wait_record(job, lambda r: r["state"] == "running")
    small_disk.fill()
    fault_env.wait_for(lambda: "waits for disk space" in str(fault_env.status(job).get("error")),
                       what="the kept result")
    kill9(fault_env.coordinator_pid_file())
    small_disk.free()
    proc = fault_env.run("wait", job, timeout=60)
    assert proc.returncode == 7
    assert fault_env.record(job)["exit_code"] == 7
    assert runs(marker) == 1
    fault_env.answers()
    fault_env.logs_within_cap()


def test_the_coordinator_records_a_kept_result_when_the_supervisor_dies(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    command, marker = marker_job(fault_env, "e", "sleep 1; exit 9")
    job = fault_env.submit(*SUBMIT[1:], "--", *command)
    running = fault_env.wait_record(job, lambda r: r["state"] == "running")
    small_disk.fill()
    fault_env.wait_for(lambda: "waits for disk space" in str(fault_env.status(job).get("error")),
                       what="the kept result")
    kill9(int(running["supervisor_pid"]))
    small_disk.free()
    proc = fault_env.run("wait", job, timeout=60)
    assert proc.returncode == 9
    record = fault_env.wait_record(job, lambda r: r["state"] == "failed")
    assert record["exit_code"] == 9
    assert runs(marker) == 1
    fault_env.answers()
    fault_env.logs_within_cap()


def test_output_that_fills_the_disk_costs_lines_not_the_result(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    code = "for i in range(100000): print('x' * 100, i)"
    proc = fault_env.run(*SUBMIT, "--wait", "--", "python3", "-c", code, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job = json.loads(fault_env.run("list", "--json").stdout)[0]["id"]
    record = fault_env.record(job)
    assert record["state"] == "completed" and record["exit_code"] == 0
    dropped = record["logs_dropped"]
    assert dropped["write_error"]
    assert dropped["stdout_bytes"] > 0 and dropped["stdout_lines"] > 0
    assert "could not write all of the job's output" in record["error"]
    fault_env.answers()
    fault_env.logs_within_cap()


def test_a_full_disk_never_floods_the_coordinator_log(
        fault_env: FaultEnv, small_disk: Disk) -> None:
    fault_env.write_config('[queue]\nsettle = "2s"\noversized = "run-when-idle"\n')
    jobs = [fault_env.submit("--cpu", "4096", "--mem", "8MB", "--", "true") for _ in range(3)]
    small_disk.fill()
    fault_env.wait_for(lambda: any("disk" in str(r.get("blocked_reason") or "")
                                   for r in fault_env.answers()),
                       what="a reason that names the disk")
    # Several back-off rounds pass while the coordinator keeps answering.
    for _ in range(20):
        fault_env.answers()
    # What the coordinator says is what the disk holds.
    for shown in fault_env.answers():
        if shown["state"] == "queued":
            assert fault_env.record(shown["id"])["state"] == "queued"
    small_disk.free()
    for job in jobs:
        assert fault_env.run("wait", job, timeout=60).returncode == 0
    # The log (on the same disk) kept what it could; the cause appears once per change,
    # not once per try.
    log = (fault_env.state / "run" / "daemon.log").read_text(errors="replace")
    assert log.count("the disk is full") <= 3, log
    fault_env.answers()
    fault_env.logs_within_cap()
