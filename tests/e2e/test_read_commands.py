"""End to end: list, logs, kill, cancel, clean, gc, du, pause/resume, events, info, version,
top and completion against a real coordinator in a private state directory.

Jobs are gated with files, never with sleeps: a job that must stay running waits for a file
that the test creates, and a job that must stay queued sits behind a paused queue.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Env

WAIT = ("wait", "--timeout", "120s")
#: A generous bound for a state change on a loaded machine; never a timing assertion.
SLOW = 90.0
GATE_SCRIPT = 'while [ ! -e "$1" ]; do sleep 0.05; done'


def gated(env: Env, name: str, *extra: str) -> tuple[str, Path]:
    """A job that runs until the test creates its gate file."""
    gate = env.root / f"gate-{name}"
    job = env.submit("--name", name, *extra, "--", "sh", "-c", GATE_SCRIPT, "sh", str(gate))
    return job, gate


def finish(env: Env, *ids: str) -> None:
    env.run(*WAIT, *ids, timeout=150)


def running(env: Env, job: str) -> dict[str, Any]:
    return env.wait_for(lambda: (r := env.record(job)).get("state") == "running" and r,
                        timeout=SLOW, what=f"job {job} running")


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# --- list -------------------------------------------------------------------------------


def test_list_filters_and_empty(qex_env: Env) -> None:
    out = qex_env.run("list", check=True)
    assert out.stdout.strip() == "no jobs"
    assert json.loads(qex_env.run("list", "--json", check=True).stdout) == []

    sub = qex_env.root / "proj" / "sub"
    sub.mkdir(parents=True)
    a = qex_env.submit("--name", "alpha", "--tag", "ml", "--", "true")
    b = qex_env.submit("--name", "beta", "--cwd", str(sub), "--", "sh", "-c", "exit 3")
    finish(qex_env, a, b)

    table = qex_env.run("list", check=True).stdout
    assert table.splitlines()[0].split() == ["ID", "STATE", "NAME", "CPU", "MEM", "TIME", "NOTE"]
    assert "alpha" in table and "beta" in table and "exit 3" in table

    def names(*args: str) -> list[str]:
        proc = qex_env.run("list", "--json", *args, check=True)
        return [r["name"] for r in json.loads(proc.stdout)]

    assert names() == ["alpha", "beta"]
    assert names("--state", "failed") == ["beta"]
    assert names("--state", "done") == ["alpha", "beta"]
    assert names("--state", "active") == []
    assert names("--tag", "ml") == ["alpha"]
    assert names("--cwd", str(sub)) == ["beta"]
    assert names("--under", str(qex_env.root / "proj")) == ["beta"]
    # The commands run in the test's root, which holds `proj/sub`.
    assert names("--cwd") == ["alpha"]
    assert names("--under") == ["alpha", "beta"]
    proc = qex_env.run("list", "--cwd", cwd=sub)
    assert "beta" in proc.stdout and "alpha" not in proc.stdout
    assert qex_env.run("list", "--state", "sleeping").returncode == 2
    assert qex_env.run("list", "--group", "nosuchgroup").returncode == 127


# --- logs -------------------------------------------------------------------------------


def test_logs_selection(qex_env: Env) -> None:
    script = ("i=1; while [ $i -le 1000 ]; do echo \"line $i\"; i=$((i+1)); done; "
              "echo 'ERROR one' >&2; echo ok >&2; echo 'ERROR two' >&2")
    job = qex_env.submit("--name", "talker", "--", "sh", "-c", script)
    finish(qex_env, job)

    both = qex_env.run("logs", job, check=True)
    assert "==> stdout <==" in both.stdout and "==> stderr <==" in both.stdout
    out = lines(qex_env.run("logs", job, "--stdout", check=True).stdout)
    assert len(out) == 500 and out[0] == "line 501" and out[-1] == "line 1000"
    assert "500 earlier lines" in qex_env.run("logs", job, "--stdout").stderr

    assert lines(qex_env.run("logs", job, "--stdout", "--head", "2", check=True).stdout) == [
        "line 1", "line 2"]
    assert lines(qex_env.run("logs", job, "--stdout", "--lines", "10:12", check=True).stdout) == [
        "line 10", "line 11", "line 12"]
    assert len(lines(qex_env.run("logs", job, "--stdout", "--all", check=True).stdout)) == 1000

    grep = qex_env.run("logs", job, "--stdout", "--grep", "^line 99[0-9]$", check=True)
    assert lines(grep.stdout)[0] == "line 990" and "10 lines match" in grep.stderr
    ctx = qex_env.run("logs", job, "--stdout", "--grep", "line 500$", "-C", "1", "--number",
                      check=True)
    assert lines(ctx.stdout) == ["   499  line 499", "   500  line 500", "   501  line 501"]
    capped = qex_env.run("logs", job, "--stdout", "--grep", "line 7", "--max-matches", "2",
                         check=True)
    assert lines(capped.stdout) == ["line 7", "line 70"]
    assert "111 lines match" in capped.stderr and "shows 2" in capped.stderr
    fixed = qex_env.run("logs", job, "--stderr", "--grep", "ERROR", "--fixed", check=True)
    assert lines(fixed.stdout) == ["ERROR one", "ERROR two"]

    doc = json.loads(qex_env.run("logs", job, "--json", "--grep", "ERROR", check=True).stdout)
    assert doc["id"] == job and doc["stderr"]["matches"] == 2 and doc["stdout"]["matches"] == 0

    # Mistakes are usage errors (2), an unknown job is 127.
    assert qex_env.run("logs", job, "--head", "1", "--tail", "1").returncode == 2
    assert qex_env.run("logs", job, "--grep", "(").returncode == 2
    assert qex_env.run("logs", job, "--follow", "--head", "3").returncode == 2
    assert qex_env.run("logs", "ffffffff-ffff-4fff-8fff-ffffffffffff").returncode == 127

    # A finished job followed: its last lines, then the command ends by itself.
    followed = qex_env.run("logs", job, "--follow", "--stdout", "--tail", "3", check=True)
    assert lines(followed.stdout) == ["line 998", "line 999", "line 1000"]


def test_logs_from_disk_without_a_coordinator(qex_env: Env) -> None:
    job = qex_env.submit("--name", "quiet", "--", "sh", "-c", "echo from-disk")
    finish(qex_env, job)
    pid = qex_env.coordinator_pid()
    assert pid is not None
    os.kill(pid, 15)
    qex_env.wait_for(lambda: qex_env.run("info", "--no-start").returncode == 1,
                     timeout=SLOW, what="the coordinator to stop")
    out = qex_env.run("logs", job[:8], "--stdout", check=True)
    assert out.stdout.strip() == "from-disk"
    assert qex_env.run("info", "--no-start").returncode == 1  # logs started none
    hook = qex_env.run("logs", job, "--hook", check=True)
    assert "no stop hook" in hook.stderr


def test_logs_follow_prints_new_lines(qex_env: Env) -> None:
    gate = qex_env.root / "gate-follow"
    job = qex_env.submit("--name", "follow", "--", "sh", "-c",
                         f'echo first; while [ ! -e "{gate}" ]; do sleep 0.05; done; echo last')
    running(qex_env, job)
    proc = qex_env.popen("logs", job, "--follow", "--stdout")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "first"
    gate.touch()
    rest, _err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert rest.strip().splitlines()[-1] == "last"


# --- kill / cancel ----------------------------------------------------------------------


def test_kill_and_cancel(qex_env: Env) -> None:
    job, _gate = gated(qex_env, "victim")
    running(qex_env, job)
    out = qex_env.run("kill", job, check=True)
    assert f"{job} received the signal SIGTERM" in out.stdout
    finish(qex_env, job)
    assert qex_env.record(job)["state"] == "killed"
    again = qex_env.run("kill", job)
    assert again.returncode == 1 and again.stderr.startswith("qex: ")

    qex_env.run("pause", "queue", check=True)
    queued = qex_env.submit("--name", "waiter", "--", "true")
    refused = qex_env.run("kill", queued)
    assert refused.returncode == 1 and "cancel" in refused.stderr
    out = qex_env.run("cancel", queued, check=True)
    assert f"{queued} left the queue" in out.stdout
    assert qex_env.record(queued)["state"] == "cancelled"
    assert qex_env.run("cancel", queued).returncode == 1
    assert qex_env.run("cancel", "nosuchjob").returncode == 127
    assert qex_env.run("kill", "nosuchjob", "--signal", "KILL").returncode == 127
    assert qex_env.run("kill", queued, "--signal", "NOPE").returncode == 2
    qex_env.run("resume", check=True)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "click"])
def test_a_group_of_more_jobs_than_a_batch_leaves_the_queue(qex_env: Env, fast: bool) -> None:
    """`qex cancel GROUP` sends its queued stages in one request, which the coordinator
    writes in batches: each stage's line in order, a stage stopped before reported, every
    record `cancelled` on disk, and the queue empty."""
    qex_env.run("pause", "queue", check=True)
    lines = qex_env.root / "lines.txt"
    lines.write_text("".join(f"{n}\n" for n in range(150)))
    group = qex_env.submit("--each-line", str(lines), "--max-jobs", "150", "--", "true", "{}")
    stages = [job["id"] for job in sorted(
        (j for j in json.loads(qex_env.run("list", "--json", check=True).stdout)
         if j.get("group") == group), key=lambda j: j["submitted_at"])]
    assert len(stages) == 150
    qex_env.run("cancel", stages[7], check=True)
    env = None if fast else {"QEX_NO_FAST_PATH": "1"}
    out = qex_env.run("cancel", group, check=True, extra_env=env)
    shown = out.stdout.splitlines()
    assert len(shown) == 150
    assert f"{stages[7]} had already stopped (state `cancelled`)" in shown
    left = [line.split()[0] for line in shown if line.endswith(" left the queue")]
    assert sorted(left) == sorted(s for s in stages if s != stages[7])
    assert {qex_env.record(s)["state"] for s in stages} == {"cancelled"}
    for stage in stages[::30]:
        on_disk = json.loads((qex_env.state / "jobs" / stage / "status.json").read_text())
        assert on_disk["state"] == "cancelled" and on_disk["finished_at"]
    again = qex_env.run("cancel", stages[0], stages[1], extra_env=env)
    assert again.returncode == 1 and again.stderr.count("nothing to cancel") == 2
    qex_env.run("resume", check=True)
    if fast:
        return
    # The cleans of the group go in one request too: every record, in batches.
    out = qex_env.run("clean", group, check=True)
    assert "deleted 150 records" in out.stdout
    assert not any((qex_env.state / "jobs" / stage).exists() for stage in stages)
    gone = qex_env.run("status", stages[0])
    assert gone.returncode == 127 and "deleted" in gone.stderr


# --- clean / gc / du --------------------------------------------------------------------


def test_clean_selection_codes_and_held_records(qex_env: Env) -> None:
    assert qex_env.run("clean").returncode == 2
    ok = qex_env.submit("--name", "ok", "--", "true")
    bad = qex_env.submit("--name", "bad", "--", "false")
    finish(qex_env, ok, bad)
    live, gate = gated(qex_env, "live")
    running(qex_env, live)

    refused = qex_env.run("clean", live)
    assert refused.returncode == 1 and refused.stderr.startswith("qex: ")
    assert qex_env.run("clean", "nosuchjob").returncode == 127
    assert qex_env.run("clean", "--auto", "--all").returncode == 2

    out = qex_env.run("clean", "--state", "failed", check=True)
    assert "deleted 1 record" in out.stdout
    assert not (qex_env.state / "jobs" / bad).exists()
    assert (qex_env.state / "jobs" / ok).exists()

    # A record that a queued job needs stays, and the command says why.
    qex_env.run("pause", "queue", check=True)
    later = qex_env.submit("--name", "later", "--after", ok, "--", "true")
    held = qex_env.run("clean", "done", check=True)
    assert "deleted 0 records" in held.stdout and "1 record stayed" in held.stdout
    assert (qex_env.state / "jobs" / ok).exists()
    qex_env.run("resume", check=True)
    gate.touch()
    finish(qex_env, later, live)
    out = qex_env.run("clean", "--all", check=True)
    assert "deleted 3 records" in out.stdout
    assert json.loads(qex_env.run("list", "--json", check=True).stdout) == []


def test_gc_and_du(qex_env: Env) -> None:
    job = qex_env.submit("--name", "old", "--", "sh", "-c", "echo some output")
    finish(qex_env, job)
    orphan = qex_env.state / "jobs" / "0badbeef-0000-4000-8000-000000000000"
    orphan.mkdir()
    (orphan / "junk").write_text("x" * 1000)
    past = time.time() - 7200
    os.utime(orphan / "junk", (past, past))
    os.utime(orphan, (past, past))

    usage = json.loads(qex_env.run("du", "--json", check=True).stdout)
    assert usage["job_count"] == 2 and usage["directories_with_no_record"] == 1
    assert usage["total_bytes"] >= usage["jobs_bytes"] > 0
    assert usage["largest"][0]["bytes"] >= usage["largest"][-1]["bytes"]
    assert "qex holds" in qex_env.run("du", check=True).stdout

    dry = json.loads(qex_env.run("gc", "--older-than", "0", "--dry-run", "--json",
                                 check=True).stdout)
    assert dry["dry_run"] is True and [j["id"] for j in dry["jobs"]] == [job]
    assert dry["directories_with_no_record"] == [orphan.name]
    assert (qex_env.state / "jobs" / job).exists() and orphan.exists()

    default = json.loads(qex_env.run("gc", "--json", check=True).stdout)
    assert default["jobs"] == [] and default["older_than_secs"] == 86400

    done = qex_env.run("gc", "--older-than", "0", check=True)
    assert "deleted 1 record" in done.stdout and "1 directory" in done.stdout
    assert not (qex_env.state / "jobs" / job).exists() and not orphan.exists()


# --- pause / resume ---------------------------------------------------------------------


def test_pause_and_resume(qex_env: Env) -> None:
    assert "nothing is paused" in qex_env.run("pause", check=True).stdout
    assert qex_env.run("pause", "queue", "--for", "0").returncode == 2
    out = qex_env.run("pause", "queue", "--reason", "demo time", "--for", "30m", check=True)
    assert "demo time" in out.stdout
    state = json.loads(qex_env.run("pause", "--json", check=True).stdout)
    assert state["paused"] is True and state["queue"]["reason"] == "demo time"
    assert state["queue"]["until"] is not None

    job = qex_env.submit("--name", "held", "--", "true")
    listing = qex_env.run("list", check=True)
    assert "paused" in listing.stderr
    assert qex_env.record(job)["state"] == "queued"

    lock = qex_env.run("pause", "lock", "gpu0", "--reason", "mine", check=True)
    assert "gpu0" in lock.stdout
    report = qex_env.run("pause", check=True).stdout
    assert "gpu0" in report and "demo time" in report
    assert "is free" in qex_env.run("resume", "lock", "gpu0", check=True).stdout
    assert "runs again" in qex_env.run("resume", check=True).stdout
    finish(qex_env, job)
    assert qex_env.record(job)["state"] == "completed"
    assert json.loads(qex_env.run("pause", "--json", check=True).stdout)["paused"] is False


def test_pause_drain_returns_when_quiet(qex_env: Env) -> None:
    job, gate = gated(qex_env, "drainer")
    running(qex_env, job)
    proc = qex_env.popen("pause", "queue", "--drain")
    gate.touch()  # the drain may see the job run or already stopped; it must end either way
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "quiet" in out
    qex_env.run("resume", check=True)


# --- events -----------------------------------------------------------------------------


def test_events_count_and_timeout(qex_env: Env) -> None:
    job = qex_env.submit("--name", "evented", "--", "true")
    finish(qex_env, job)
    proc = qex_env.run("events", "--json", "--since", "start", "--count", "2", check=True)
    events = [json.loads(line) for line in lines(proc.stdout)]
    assert events[0]["event"] == "stream" and events[0]["stream_id"]
    jobs = [e for e in events if e["event"] in ("job", "gap")]
    assert len(jobs) == 2 and jobs[0]["id"] == job
    stream = events[0]["stream_id"]
    last = jobs[-1]["seq"]

    timed = qex_env.run("events", "--json", "--since", f"{stream}:{last + 1000}",
                        "--timeout", "1s")
    assert timed.returncode == 124
    bare = qex_env.run("events", "--since", "1", "--count", "1", "--timeout", "5s")
    assert "stream_id" in bare.stderr
    assert qex_env.run("events", "--since", "yesterday").returncode == 2


# --- info / version ---------------------------------------------------------------------


def test_info_and_version(qex_env: Env) -> None:
    none = qex_env.run("info", "--no-start", "--json")
    assert none.returncode == 1 and json.loads(none.stdout) == {"running": False}
    assert qex_env.run("info", "--no-start").stdout.strip() == "no coordinator operates"
    version = qex_env.run("version", check=True)
    assert "coordinator: none operates" in version.stdout

    info = json.loads(qex_env.run("info", "--json", check=True).stdout)
    assert isinstance(info["pid"], int) and info["pid"] > 1 and info["running"] is True
    text = qex_env.run("info", check=True).stdout
    assert f"coordinator pid: {info['pid']}" in text and "queue: healthy" in text

    doc = json.loads(qex_env.run("version", "--json", check=True).stdout)
    assert doc["coordinator"]["pid"] == info["pid"] and doc["coordinator"]["matches"] is True
    assert "events" in doc["capabilities"] and doc["coordinator"]["cannot_do"] == []


# --- top / completion -------------------------------------------------------------------


def test_top_once_never_starts_a_coordinator(qex_env: Env) -> None:
    page = qex_env.run("top", "--once", check=True)
    assert "no coordinator" in page.stdout and "no jobs" in page.stdout
    assert qex_env.run("info", "--no-start").returncode == 1
    job, gate = gated(qex_env, "topped")
    running(qex_env, job)
    page = qex_env.run("top", "--once", "--no-color", check=True)
    assert "topped" in page.stdout and "running" in page.stdout and "\x1b[" not in page.stdout
    row = next(line for line in page.stdout.splitlines() if "topped" in line)
    assert re.search(r"/ \d", row), row  # the live resident memory of the job's group
    gate.touch()
    finish(qex_env, job)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(qex_env: Env, shell: str) -> None:
    script = qex_env.run("completion", shell, check=True).stdout
    assert "_QEX_COMPLETE" in script
    # The fast path prints the generated copy; click prints its own: the same bytes.
    assert script == qex_env.run("completion", shell, check=True,
                                 extra_env={"QEX_NO_FAST_PATH": "1"}).stdout
    guessed = qex_env.run("completion", check=True, extra_env={"SHELL": f"/bin/{shell}"})
    assert guessed.stdout == script


@pytest.mark.parametrize(("args", "shell"), [(("completion",), "/bin/tcsh"),
                                             (("completion",), ""),
                                             (("completion", "tcsh"), "/bin/bash"),
                                             (("completion", "bash", "zsh"), "/bin/bash")])
def test_completion_mistakes_are_clicks(qex_env: Env, args: tuple[str, ...], shell: str) -> None:
    """A shell qex cannot tell or does not know: the fast path leaves the words to click."""
    fast = qex_env.run(*args, extra_env={"SHELL": shell})
    slow = qex_env.run(*args, extra_env={"SHELL": shell, "QEX_NO_FAST_PATH": "1"})
    assert fast.returncode == slow.returncode == 2
    assert (fast.stdout, fast.stderr) == (slow.stdout, slow.stderr)


def test_completion_candidates_come_from_disk(qex_env: Env) -> None:
    job = qex_env.submit("--name", "candidate", "--", "true")
    finish(qex_env, job)
    pid = qex_env.coordinator_pid()
    assert pid is not None
    os.kill(pid, 15)
    qex_env.wait_for(lambda: qex_env.run("info", "--no-start").returncode == 1,
                     timeout=SLOW, what="the coordinator to stop")
    ids = qex_env.run("__complete", "ids", check=True).stdout.split()
    assert ids == [job, "candidate"]
    assert qex_env.run("__complete", "queued", check=True).stdout == ""
    assert qex_env.run("__complete", "nonsense").returncode == 0
    tab = qex_env.run(extra_env={"_QEX_COMPLETE": "bash_complete", "COMP_WORDS": "qex logs ",
                                 "COMP_CWORD": "2"})
    assert job in tab.stdout
    assert qex_env.run("info", "--no-start").returncode == 1


def test_logs_report_output_that_the_limit_removed(qex_env: Env) -> None:
    qex_env.write_config('[logs]\nmax_bytes = "16KB"\n')
    gate1 = qex_env.root / "gate-1"
    gate2 = qex_env.root / "gate-2"
    script = (
        'seq 1 2000; while [ ! -e "$1" ]; do sleep 0.05; done; '
        'seq 2001 40000; while [ ! -e "$2" ]; do sleep 0.05; done; echo the-end'
    )
    job = qex_env.submit("--name", "chatty", "--", "sh", "-c", script, "sh", str(gate1),
                         str(gate2))
    running(qex_env, job)
    log = qex_env.state / "jobs" / job / "stdout.log"
    qex_env.wait_for(lambda: log.exists() and log.stat().st_size > 8000,
                     timeout=SLOW, what="the first part of the output")
    proc = qex_env.popen("logs", job, "--follow", "--stdout", "--tail", "1")
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == "2000"
    gate1.touch()
    # The supervisor cuts the file back; the follower says so on stderr.
    assert "removed the middle" in proc.stderr.readline()
    gate2.touch()
    out, _err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert out.strip().splitlines()[-1] == "the-end"

    finish(qex_env, job)
    shown = qex_env.run("logs", job, "--stdout", "--tail", "2", check=True)
    assert shown.stdout.split() == ["40000", "the-end"]
    assert "[logs] max_bytes" in shown.stderr and "removed" in shown.stderr
    doc = json.loads(qex_env.run("logs", job, "--json", check=True).stdout)
    assert doc["stdout"]["dropped_bytes"] > 0 and doc["stdout"]["dropped_lines"] > 0


def _pipeline(env: Env, gate: Path) -> str:
    spec = env.root / "ci.toml"
    spec.write_text(
        'name = "ci"\n'
        "[[jobs]]\n"
        'name = "build"\n'
        f'command = ["sh", "-c", "while [ ! -e {gate} ]; do sleep 0.05; done"]\n'
        "[[jobs]]\n"
        'name = "test"\n'
        'command = ["true"]\n'
        'needs = ["build"]\n'
    )
    return env.run("pipeline", str(spec), check=True).stdout.strip()


def test_a_group_works_as_a_handle(qex_env: Env) -> None:
    gate = qex_env.root / "gate-ci"
    group = _pipeline(qex_env, gate)
    stages = json.loads(qex_env.run("list", "--json", "--group", group, check=True).stdout)
    assert [s["name"] for s in stages] == ["build", "test"]
    assert len(json.loads(qex_env.run("list", "--json", "--group", "ci", check=True).stdout)) == 2
    build = stages[0]["id"]
    running(qex_env, build)
    refused = qex_env.run("logs", group)
    assert refused.returncode == 127 and "build" in refused.stderr and "test" in refused.stderr

    out = qex_env.run("kill", group, check=True).stdout
    assert f"{build} received the signal" in out and "left the queue" in out
    finish(qex_env, group)
    states = {s["name"]: s["state"] for s in json.loads(
        qex_env.run("list", "--json", "--group", group, check=True).stdout)}
    assert states == {"build": "killed", "test": "cancelled"}
    again = qex_env.run("cancel", group, check=True)
    assert again.stdout.count("already stopped") == 2
    assert "deleted 2 records" in qex_env.run("clean", group, check=True).stdout
    assert qex_env.run("clean", group).returncode == 127


def test_a_state_word_that_also_names_a_job_is_refused(qex_env: Env) -> None:
    job = qex_env.submit("--name", "done", "--", "true")
    finish(qex_env, job)
    proc = qex_env.run("clean", "done")
    assert proc.returncode == 127 and "--state done" in proc.stderr
    assert "deleted 1 record" in qex_env.run("clean", job, check=True).stdout


def test_events_end_with_bye_or_fail_without_it(qex_env: Env) -> None:
    qex_env.run("info", check=True)
    pid = qex_env.coordinator_pid()
    assert pid is not None
    proc = qex_env.popen("events", "--json")
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["event"] == "stream"
    os.kill(pid, 15)
    out, _err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(out.splitlines()[-1])["event"] == "bye"

    qex_env.wait_for(lambda: qex_env.run("info", "--no-start").returncode == 1,
                     timeout=SLOW, what="the coordinator to stop")
    qex_env.run("info", check=True)
    pid = qex_env.coordinator_pid()
    assert pid is not None
    proc = qex_env.popen("events")
    assert proc.stdout is not None
    assert "stream" in proc.stdout.readline()
    os.kill(pid, 9)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "no reason" in err


def test_logs_hook(qex_env: Env) -> None:
    qex_env.write_config('[hooks]\non_stop = ["sh", "-c", "echo hooked $QEX_STATE"]\n')
    job = qex_env.submit("--name", "hooked", "--", "true")
    finish(qex_env, job)
    hook_log = qex_env.state / "jobs" / job / "hook.log"
    def verdict() -> bool:
        return hook_log.exists() and "qex: the stop hook" in hook_log.read_text()

    qex_env.wait_for(verdict, timeout=SLOW, what="the stop hook to finish")
    out = qex_env.run("logs", job, "--hook", check=True)
    assert "hooked completed" in out.stdout
    assert qex_env.run("logs", job, "--hook", "--follow").returncode == 2
