"""`qex run`, `submit --follow` and `status ID --follow` on the lean path (`qex.cli.fastfollow`).

Each form runs as users run it and with `QEX_NO_FAST_PATH=1` (click only): the output, the
lines on stderr and the exit code must be the same, whether the job ends plainly within the
lean wait, runs longer (the full attach takes over mid-output), ends with a sentence of its
own (a signal), or waits in the queue. A stop signal in the lean wait must do what it does
in the full one: stop the job that this command started, or only the watching.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from typing import Any

from conftest import QEX, Env
from test_fast_and_click_agree import _HEAVY, CLICK_ONLY, _imported, _mask, _records

#: Jobs that end plainly at once, plainly after the lean wait gave up (the full attach copies
#: the rest), with a lot of output, and by a signal (a final sentence).
COMMANDS = ("echo out; echo err >&2; exit 3", "true", "seq 1 3000",
            "echo early; sleep 1.6; echo late >&2; exit 5", "echo gone; kill -9 $$")


def _shown(proc: Any) -> tuple[int, str, str]:
    return proc.returncode, _mask(proc.stdout), _mask(proc.stderr)


def test_run_and_submit_follow_agree(qex_env: Env) -> None:
    qex_env.run("submit", "--wait", "--", "true", check=True)  # a coordinator, warm
    for form in (["run"], ["submit", "--follow"]):
        for command in COMMANDS:
            fast = qex_env.run(*form, "--", "sh", "-c", command)
            slow = qex_env.run(*form, "--", "sh", "-c", command, extra_env=CLICK_ONLY)
            assert _shown(fast) == _shown(slow), (form, command)
            assert fast.stderr.startswith("qex: job "), fast.stderr
    seq = qex_env.run("run", "--", "seq", "1", "3000")
    assert seq.stdout == "".join(f"{n}\n" for n in range(1, 3001))  # each line once, in order


def test_run_writes_its_id_file_first(qex_env: Env) -> None:
    id_file = qex_env.root / "run.id"
    proc = qex_env.run("run", "--id-file", str(id_file), "--", "sh", "-c", "exit 7")
    assert proc.returncode == 7
    job_id = id_file.read_text().strip()
    assert proc.stderr.startswith(f"qex: job {job_id}\n")
    assert qex_env.record(job_id)["state"] == "failed"


def test_status_follow_agrees(qex_env: Env) -> None:
    done = qex_env.submit("--", "sh", "-c", "echo one; echo two >&2")
    failed = qex_env.submit("--", "sh", "-c", "echo bad; exit 4")
    killed = qex_env.submit("--", "sh", "-c", "echo x; kill -9 $$")
    qex_env.run("wait", done, failed, killed)
    running = qex_env.submit("--", "sh", "-c", "echo begun; sleep 60")
    qex_env.wait_for(lambda: qex_env.record(running).get("state") == "running",
                     what="a running job")
    for args in (["status", done, "--follow"], ["status", failed[:8], "--follow"],
                 ["status", killed, "--follow"], ["status", "no-such-job", "--follow"],
                 ["status", running, "--follow", "--timeout", "0.3"],
                 ["status", running, "--follow", "--timeout", "1.5s"]):
        fast = qex_env.run(*args)
        slow = qex_env.run(*args, extra_env=CLICK_ONLY)
        assert _shown(fast) == _shown(slow), args
    assert qex_env.run("status", running, "--follow", "--timeout", "0.3").returncode == 124
    assert qex_env.record(running)["state"] == "running"  # a watcher's limit stops nothing
    qex_env.run("kill", running, check=True)


def test_the_follow_forms_import_no_framework(qex_env: Env) -> None:
    qex_env.run("submit", "--wait", "--", "true", check=True)
    job = qex_env.submit("--", "true")
    qex_env.run("wait", job, check=True)
    for args in (["run", "--", "true"], ["submit", "--follow", "--", "sh", "-c", "exit 2"],
                 ["status", job, "--follow"], ["status", job[:8], "--follow"]):
        assert not _imported(qex_env, *args) & _HEAVY, args


def _new_job(env: Env, before: set[str]) -> dict[str, Any] | None:
    return next((r for r in _records(env) if r["id"] not in before), None)


def test_a_stop_signal_right_after_the_submit_stops_the_job(qex_env: Env) -> None:
    """The signal comes as soon as the id is on stderr: inside the lean wait on the fast
    path. Both paths stop the job (cancelled if it had not started yet, else killed) and
    say that this command did it."""
    qex_env.run("submit", "--wait", "--", "true", check=True)
    for extra in ({}, CLICK_ONLY):
        for signum in (signal.SIGINT, signal.SIGTERM):
            before = {r["id"] for r in _records(qex_env)}
            proc = subprocess.Popen([*QEX, "run", "--", "sleep", "60"], text=True,
                                    env={**qex_env.env, **extra}, cwd=str(qex_env.root),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert proc.stderr is not None
            first = proc.stderr.readline()
            assert first.startswith("qex: job "), first
            proc.send_signal(signum)
            _out, rest = proc.communicate(timeout=60)
            assert proc.returncode == 125, (extra, signum, first + rest)
            assert "this command" in rest, rest
            job = _new_job(qex_env, before)
            assert job is not None and job["state"] in ("killed", "cancelled"), job


def _holds_sigterm(pid: int) -> bool:
    """True once the process blocks or catches SIGTERM (the lean wait blocks it, the full
    wait catches it): a signal sent then is the wait's."""
    bit = 1 << (signal.SIGTERM - 1)
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(("SigBlk:", "SigCgt:")) and int(line.split()[1], 16) & bit:
                    return True
    except OSError:
        pass
    return False


def test_a_stopped_status_follow_leaves_the_job_running(qex_env: Env) -> None:
    job = qex_env.submit("--", "sh", "-c", "echo begun; sleep 60")
    qex_env.wait_for(lambda: qex_env.record(job).get("state") == "running", what="a running job")
    shown = []
    for extra in ({}, CLICK_ONLY):
        proc = subprocess.Popen([*QEX, "status", job, "--follow"], text=True,
                                env={**qex_env.env, **extra}, cwd=str(qex_env.root),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        qex_env.wait_for(lambda p=proc: _holds_sigterm(p.pid), what="the follow to begin")
        time.sleep(0.2)  # the output copied so far, either way
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        shown.append((proc.returncode, _mask(out), _mask(err)))
        assert qex_env.record(job)["state"] == "running"
    assert shown[0] == shown[1]
    assert shown[0][0] == 122 and shown[0][1] == "begun\n" and "your wait stopped" in shown[0][2]
    qex_env.run("kill", job, check=True)


def test_a_queued_run_says_why_and_then_follows(qex_env: Env) -> None:
    """A run in a paused queue: the full attach narrates the reason (the lean one hands the
    queued job over at once), and copies the output once the queue resumes."""
    qex_env.run("submit", "--wait", "--", "true", check=True)
    shown = []
    for extra in ({}, CLICK_ONLY):
        qex_env.run("pause", "queue", "--reason", "test", check=True)
        before = {r["id"] for r in _records(qex_env)}
        proc = subprocess.Popen([*QEX, "run", "--", "sh", "-c", "echo ran; exit 6"], text=True,
                                env={**qex_env.env, **extra}, cwd=str(qex_env.root),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        said = []
        while not said or "waits for" not in said[-1]:  # the attach narrates the reason
            said.append(proc.stderr.readline())
            assert said[-1], said
        assert (_new_job(qex_env, before) or {}).get("state") == "queued"
        qex_env.run("resume", "queue", check=True)
        out, err = proc.communicate(timeout=60)
        told = re.sub(r"pid \d+|\d\d:\d\d:\d\d", "<x>", "".join(said) + err)  # the pauses'
        shown.append((proc.returncode, _mask(out), _mask(told)))
    assert shown[0] == shown[1]
    assert shown[0][0] == 6 and shown[0][1] == "ran\n" and "paused" in shown[0][2], shown[0]
