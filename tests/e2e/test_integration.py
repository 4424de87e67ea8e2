"""Whole-system checks through the real `qex` program: the log cap, admission by the budget,
bad input that must lose nothing, and a queue of many short jobs through the fork server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import QEX, Env


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def test_seq_half_a_million_lines_against_a_64k_limit(qex_env: Env) -> None:
    qex_env.write_config('[logs]\nmax_bytes = "64KB"\n')
    proc = qex_env.run("submit", "--wait", "--json", "--", "seq", "1", "500000")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    log = qex_env.state / "jobs" / record["id"] / "stdout.log"
    assert log.stat().st_size <= 64 * 1024
    data = _lines(log)
    numbers = [line for line in data if not line.startswith(b"[qex]")]
    assert numbers[0] == b"1"
    assert numbers[-1] == b"500000"
    dropped = record["logs_dropped"]
    total_bytes = sum(len(str(n)) + 1 for n in range(1, 500001))
    kept_bytes = sum(len(line) + 1 for line in numbers)
    # Every byte and every line of the output is either in the file or counted as dropped
    # (a line cut at the head boundary is counted in both halves of its bytes only).
    assert kept_bytes + dropped["stdout_bytes"] == total_bytes
    assert len(numbers) + dropped["stdout_lines"] == 500000
    assert not (qex_env.state / "jobs" / record["id"] / "stdout.log.tail").exists()


def test_the_budget_admits_two_jobs_and_says_why_the_third_waits(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = 2\nmem = "90%"\n[system]\nreserve_mem = "64MB"\n')
    gate = qex_env.root / "gate"
    script = f"while [ ! -e {gate} ]; do sleep 0.02; done"
    ids = [qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sh", "-c", script)
           for _ in range(3)]
    qex_env.wait_for(lambda: [qex_env.status(i)["state"] for i in ids[:2]] == ["running"] * 2,
                     what="two running jobs")
    third = qex_env.wait_for(lambda: qex_env.status(ids[2]).get("blocked_reason"),
                             what="a reason on the third job")
    assert qex_env.status(ids[2])["state"] == "queued"
    assert "core" in third
    gate.touch()
    done = qex_env.run("wait", *ids)
    assert done.returncode == 0, done.stderr
    assert [qex_env.status(i)["state"] for i in ids] == ["completed"] * 3


def test_an_unreadable_job_file_is_one_sentence_and_queues_nothing(qex_env: Env) -> None:
    bad = qex_env.root / "job.toml"
    bad.write_text('command = ["true"]\ncomand = 1\n')
    proc = qex_env.run("submit", "--job", str(bad))
    assert proc.returncode == 121
    assert proc.stderr.startswith("qex: ")
    assert "comand" in proc.stderr
    missing = qex_env.run("submit", "--job", str(qex_env.root / "nope.toml"))
    assert missing.returncode == 121
    jobs = qex_env.state / "jobs"
    assert not jobs.exists() or not list(jobs.iterdir())


def test_a_config_typo_refuses_the_submission_and_keeps_the_records(qex_env: Env) -> None:
    first = qex_env.run("submit", "--wait", "--json", "--", "true")
    assert first.returncode == 0, first.stderr
    job_id = json.loads(first.stdout)["id"]
    before = (qex_env.state / "jobs" / job_id / "status.json").read_bytes()
    qex_env.write_config("[budget]\ncpus = 2\n")
    proc = qex_env.run("submit", "--", "true")
    assert proc.returncode == 121
    assert "cpus" in proc.stderr
    assert (qex_env.state / "jobs" / job_id / "status.json").read_bytes() == before


def test_a_missing_command_and_a_bad_size_are_121(qex_env: Env) -> None:
    assert qex_env.run("submit").returncode == 121
    proc = qex_env.run("submit", "--mem", "lots", "--", "true")
    assert proc.returncode == 121
    assert proc.stderr.count("\n") == 1


def test_many_short_jobs_drain_and_leave_no_zombie(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = 2\nmem = "90%"\n[system]\nreserve_mem = "64MB"\n')
    lines = qex_env.root / "lines"
    lines.write_text("".join(f"{i}\n" for i in range(40)))
    group = qex_env.run("submit", "--each-line", str(lines), "--cpu", "1", "--mem", "16MB",
                        "--", "sh", "-c", 'exit $(( $1 % 2 ))', "job", "{}", check=True)
    gid = group.stdout.strip()
    done = qex_env.run("wait", "-q", gid)
    assert done.returncode == 1  # the first odd line fails with 1
    records = json.loads(qex_env.run("status", gid, "--json", check=True).stdout)
    assert len(records) == 40
    states = sorted(r["state"] for r in records)
    assert states.count("completed") == 20 and states.count("failed") == 20
    time.sleep(0.2)
    for record in records:
        pid = record.get("supervisor_pid") or 0
        if pid:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            assert stat.rsplit(")", 1)[1].split()[0] != "Z", f"supervisor {pid} is a zombie"


def test_kill_nine_of_the_coordinator_while_many_jobs_run(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = 2\nmem = "90%"\n[system]\nreserve_mem = "64MB"\n')
    gate = qex_env.root / "gate"
    script = f"while [ ! -e {gate} ]; do sleep 0.02; done; exit 5"
    ids = [qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sh", "-c", script)
           for _ in range(4)]
    qex_env.wait_for(lambda: sum(qex_env.record(i)["state"] == "running" for i in ids) == 2,
                     what="two running jobs")
    pid = qex_env.coordinator_pid()
    assert pid
    os.kill(pid, signal.SIGKILL)
    gate.touch()
    done = qex_env.run("wait", *ids, timeout=60)
    assert done.returncode == 5, done.stderr
    assert [qex_env.status(i)["exit_code"] for i in ids] == [5, 5, 5, 5]


#: glibc's two internal signals, which posix_spawn of an older glibc leaves ignored.
_GLIBC_INTERNAL = (1 << 31) | (1 << 32)


def test_a_job_starts_with_every_signal_at_its_default_whoever_began_the_coordinator(
        qex_env: Env) -> None:
    # The coordinator is started by a command that ignores SIGINT, SIGQUIT and SIGHUP, as a
    # shell's background job under nohup does, and the fork server ignores SIGINT itself.
    # The jobs still start with no ignored signal, so `kill --signal INT` stops a job that
    # installs no handler of its own.
    if not Path("/proc/self/status").exists():
        return  # the check reads /proc; the rule itself is the same everywhere
    subprocess.run(["sh", "-c", 'trap "" INT QUIT HUP; exec "$@" info --json', "sh", *QEX],
                   env=qex_env.env, capture_output=True, check=True, timeout=60)
    shown = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "cat", "/proc/self/status")
    qex_env.run("wait", "-q", shown, check=True)
    status = (qex_env.state / "jobs" / shown / "stdout.log").read_text()
    ignored = next(int(line.split()[1], 16) for line in status.splitlines()
                   if line.startswith("SigIgn:"))
    assert ignored & ~_GLIBC_INTERNAL == 0, hex(ignored)
    sleeper = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sleep", "30")
    qex_env.wait_for(lambda: qex_env.record(sleeper)["state"] == "running", what="running")
    qex_env.run("kill", "--signal", "INT", sleeper, check=True)
    qex_env.run("wait", "-q", sleeper, timeout=20)
    record = qex_env.record(sleeper)
    assert record["state"] == "killed" and record["signal"] == signal.SIGINT, record
