"""The supervisor on its own: a job directory made by hand, `python -m qex.supervisor <id>`.

No coordinator runs here. Each test writes spec.json and a `starting` status.json into an
isolated state dir (the `qex_env` fixture), runs the supervisor to its end, and reads what it
left: the record, the logs, the hook's traces, the learner's store. Jobs are gated with files
where they must wait; no assertion depends on how long something took.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import Env

from qex.core.learner import learn_key
from qex.core.logcap_plan import ATTEMPT_MARK
from qex.core.records import JobSpec, JobStatus
from qex.core.states import exit_code_for
from qex.store import jobs
from qex.store.paths import Paths

MIB = 1024 * 1024
SUPERVISOR = [sys.executable, "-m", "qex.supervisor"]


def make_job(env: Env, command: list[str], *, status: dict[str, Any] | None = None,
             job_env: dict[str, str] | None = None, **spec_fields: Any) -> str:
    """Write spec.json and a `starting` status.json the way the coordinator does."""
    from qex.core.names import new_id

    paths = Paths.from_env(env.env)
    job_id = new_id()
    job_dir = jobs.create_job_dir(paths, job_id)
    fields: dict[str, Any] = {"cpu": 1, "mem": 256 * MIB, "cwd": str(env.root)}
    fields.update(spec_fields)
    spec = JobSpec(id=job_id, name="direct", command=command,
                   env={"PATH": os.environ["PATH"], **(job_env or {})},
                   submitted_at=time.time(), **fields)
    jobs.write_spec(job_dir, spec)
    record = JobStatus.new(spec, boot_id=None, oom_retries=None)
    record.state = "starting"
    record.started_at = time.time()
    for key, value in (status or {}).items():
        setattr(record, key, value)
    jobs.write_status(job_dir, record)
    return job_id


def supervise(env: Env, job_id: str, *args: str, extra_env: dict[str, str] | None = None,
              **kwargs: Any) -> subprocess.CompletedProcess[str]:
    run_env = {**env.env, **(extra_env or {})}
    return subprocess.run([*SUPERVISOR, *args, job_id], env=run_env, cwd=str(env.root),
                          capture_output=True, text=True, timeout=120, check=False, **kwargs)


def job_dir(env: Env, job_id: str) -> Path:
    return env.state / "jobs" / job_id


def spec_of(env: Env, job_id: str) -> dict[str, Any]:
    data = json.loads((job_dir(env, job_id) / "spec.json").read_text())
    assert isinstance(data, dict)
    return data


def test_a_job_that_completes(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", "echo out; echo err >&2; cat"])
    done = supervise(qex_env, job_id)
    assert done.returncode == 0, done.stderr
    record = qex_env.record(job_id)
    assert record["state"] == "completed"
    assert record["exit_code"] == 0 and record["signal"] is None
    assert record["attempts"] == 1
    assert record["pid"] is None and isinstance(record["last_pid"], int)
    assert isinstance(record["supervisor_pid"], int) and record["boot_id"]
    assert isinstance(record["supervisor_start_token"], str)
    assert record["finished_at"] >= record["started_at"]
    assert record["usage"]["max_rss"] > 0 and record["usage"]["cpu_secs"] >= 0
    assert record["logs_dropped"] is None and record["error"] is None
    assert record["enforcement"]["backend"] == "process-group"
    assert record["enforcement"]["active"] is False
    folder = job_dir(qex_env, job_id)
    # stdin is /dev/null, so `cat` ended at once.
    assert (folder / "stdout.log").read_text() == "out\n"
    assert (folder / "stderr.log").read_text() == "err\n"
    for name in ("stdout.log", "stderr.log", "status.json"):
        assert (folder / name).stat().st_mode & 0o777 == 0o600
    assert exit_code_for(record) == 0


def test_the_job_gets_exactly_its_environment_and_niceness(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["env"], job_env={"ONLY": "this"}, nice=7)
    supervise(qex_env, job_id)
    lines = (job_dir(qex_env, job_id) / "stdout.log").read_text().splitlines()
    assert sorted(lines) == sorted([f"PATH={os.environ['PATH']}", "ONLY=this"])
    nice_id = make_job(qex_env, [sys.executable, "-c", "import os; print(os.nice(0))"], nice=7)
    supervise(qex_env, nice_id)
    assert (job_dir(qex_env, nice_id) / "stdout.log").read_text().strip() == "7"


def test_assigned_devices_reach_the_job(qex_env: Env) -> None:
    qex_env.write_config('[[pool]]\nname = "gpu"\nsize = "vram"\n'
                         'devices = ["8GB", "8GB"]\nenv = "CUDA_VISIBLE_DEVICES"\n')
    job_id = make_job(
        qex_env, ["sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES $QEX_GPU_DEVICES $QEX_GPU_VRAM"'],
        job_env={"CUDA_VISIBLE_DEVICES": "0,1"},
        status={"assigned": {"gpu": {"units": 1, "devices": [1], "size": None}}},
    )
    supervise(qex_env, job_id)
    out = (job_dir(qex_env, job_id) / "stdout.log").read_text().split()
    assert out == ["1", "1", str(8 * 1024 * MIB)]


def test_exit_codes_and_signals(qex_env: Env) -> None:
    seven = make_job(qex_env, ["sh", "-c", "exit 7"])
    supervise(qex_env, seven)
    record = qex_env.record(seven)
    assert (record["state"], record["exit_code"], record["signal"]) == ("failed", 7, None)
    assert exit_code_for(record) == 7
    high = make_job(qex_env, ["sh", "-c", "exit 200"])
    supervise(qex_env, high)
    assert exit_code_for(qex_env.record(high)) == 97
    segv = make_job(qex_env, ["sh", "-c", "kill -SEGV $$"])
    supervise(qex_env, segv)
    record = qex_env.record(segv)
    assert (record["state"], record["exit_code"], record["signal"]) == ("failed", None, 11)
    assert exit_code_for(record) == 98
    term = make_job(qex_env, ["sh", "-c", "kill -TERM $$"])
    supervise(qex_env, term)
    record = qex_env.record(term)
    assert (record["state"], record["signal"]) == ("killed", 15)
    assert "no qex command sent it" in record["error"]
    assert exit_code_for(record) == 125


def test_an_unexplained_kill_says_qex_could_not_tell(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", "kill -KILL $$"])
    supervise(qex_env, job_id)
    record = qex_env.record(job_id)
    assert (record["state"], record["signal"]) == ("killed", 9)
    assert "no qex command sent it" in record["error"]


def give_mark_path(env: Env, job_id: str) -> None:
    """The mark's path is known only once the directory exists: put it in the job's env."""
    spec = spec_of(env, job_id)
    spec["env"]["MARK"] = str(job_dir(env, job_id) / "killed-by-user")
    (job_dir(env, job_id) / "spec.json").write_text(json.dumps(spec))


def test_a_marked_kill_is_killed(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", 'touch "$MARK"; kill -TERM $$'])
    give_mark_path(qex_env, job_id)
    supervise(qex_env, job_id)
    record = qex_env.record(job_id)
    assert record["state"] == "killed" and record["error"] is None
    # A job that catches the stop and exits with a code is still stopped, and not retried.
    trapped = make_job(qex_env, ["sh", "-c", 'touch "$MARK"; exit 3'], retries=2,
                       status={"retries_left": 2})
    give_mark_path(qex_env, trapped)
    supervise(qex_env, trapped)
    record = qex_env.record(trapped)
    assert (record["state"], record["exit_code"], record["attempts"]) == ("killed", 3, 1)


def test_timeout_stops_the_group(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", "echo begun; sleep 60 & wait"], timeout=0.5)
    supervise(qex_env, job_id)
    record = qex_env.record(job_id)
    assert record["state"] == "timeout"
    assert record["signal"] == signal.SIGTERM
    assert "--timeout" in record["error"]
    assert exit_code_for(record) == 125
    assert (job_dir(qex_env, job_id) / "stdout.log").read_text() == "begun\n"


def test_a_job_that_ignores_term_gets_kill(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"],
                      timeout=0.3)
    supervise(qex_env, job_id, extra_env={"QEX_TERM_GRACE_SECS": "0.3"})
    record = qex_env.record(job_id)
    assert (record["state"], record["signal"]) == ("timeout", signal.SIGKILL)


COUNTER = 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo "run $n"; '


def test_retries_run_again_in_the_same_process_and_log(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", COUNTER + 'echo "err $n" >&2; [ "$n" -ge 3 ]'],
                      retries=3, status={"retries_left": 3})
    done = supervise(qex_env, job_id)
    assert done.returncode == 0, done.stderr
    record = qex_env.record(job_id)
    assert record["state"] == "completed"
    assert record["attempts"] == 3 and record["retries_left"] == 1
    assert record["error"] is None
    out = (job_dir(qex_env, job_id) / "stdout.log").read_text()
    assert out == "run 1\n--- attempt 2 ---\nrun 2\n--- attempt 3 ---\nrun 3\n"
    err = (job_dir(qex_env, job_id) / "stderr.log").read_text()
    assert err == "err 1\n--- attempt 2 ---\nerr 2\n--- attempt 3 ---\nerr 3\n"


def test_retries_run_out(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", "exit 5"], retries=1, status={"retries_left": 1})
    supervise(qex_env, job_id)
    record = qex_env.record(job_id)
    assert (record["state"], record["exit_code"], record["attempts"]) == ("failed", 5, 2)
    assert record["retries_left"] == 0


def test_a_paused_queue_holds_the_next_attempt(qex_env: Env) -> None:
    paused = qex_env.state / "run" / "paused.json"
    paused.parent.mkdir(parents=True, exist_ok=True)
    paused.write_text(json.dumps({"queue": {"paused_at": time.time(), "by_pid": 1,
                                            "reason": None, "until": None, "fault": False},
                                  "locks": {}}))
    job_id = make_job(qex_env, ["sh", "-c", COUNTER + '[ "$n" -ge 2 ]'],
                      retries=1, status={"retries_left": 1})
    with subprocess.Popen([*SUPERVISOR, job_id], cwd=str(qex_env.root), text=True,
                          env={**qex_env.env, "QEX_PAUSE_RECHECK_SECS": "0.05"},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        try:
            qex_env.wait_for(lambda: "queue is paused" in (qex_env.record(job_id)["error"] or ""),
                             what="the pause to show in the record")
            assert (qex_env.root / "count").read_text().strip() == "1"
            assert qex_env.record(job_id)["state"] == "running"
            paused.unlink()
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    record = qex_env.record(job_id)
    assert (record["state"], record["attempts"]) == ("completed", 2)


def test_seq_against_a_64k_limit(qex_env: Env) -> None:
    qex_env.write_config('[logs]\nmax_bytes = "64KB"\n')
    job_id = make_job(qex_env, ["seq", "1", "500000"])
    supervise(qex_env, job_id)
    record = qex_env.record(job_id)
    assert record["state"] == "completed"
    folder = job_dir(qex_env, job_id)
    content = (folder / "stdout.log").read_bytes()
    assert len(content) <= 64 * 1024
    assert not (folder / "stdout.log.tail").exists()
    kept_lines = [line for line in content.splitlines(keepends=True)
                  if not line.startswith(b"[qex] ")]
    kept = b"".join(kept_lines)
    assert kept_lines[0] == b"1\n" and kept_lines[-1] == b"500000\n"
    total = b"".join(b"%d\n" % i for i in range(1, 500_001))
    dropped = record["logs_dropped"]
    assert dropped["limit"] == 64 * 1024 and dropped["incomplete"] is False
    assert len(kept) + dropped["stdout_bytes"] == len(total)
    assert len(kept_lines) + dropped["stdout_lines"] == 500_000
    assert (dropped["stderr_bytes"], dropped["stderr_lines"]) == (0, 0)
    # The kept lines are the first ones and the last ones, in order.
    numbers = [int(line) for line in kept_lines]
    gap = next(i for i in range(1, len(numbers)) if numbers[i] != numbers[i - 1] + 1)
    assert numbers[:gap] == list(range(1, gap + 1))
    assert numbers[gap:] == list(range(numbers[gap], 500_001))


def test_a_daemon_that_holds_the_pipe_does_not_hold_the_record(qex_env: Env) -> None:
    daemon = (
        "import os, time\n"
        "os.setsid()\n"
        "open('daemon.pid', 'w').write(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    # The job waits until the daemon left its process group, then ends.
    wait = "while [ ! -s daemon.pid ]; do sleep 0.01; done"
    job_id = make_job(qex_env, ["sh", "-c", f'{sys.executable} -c "$0" & {wait}; echo started',
                                daemon])
    try:
        supervise(qex_env, job_id, extra_env={"QEX_PIPE_CLOSE_GRACE_SECS": "1"})
        record = qex_env.record(job_id)
        assert record["state"] == "completed"
        assert record["logs_dropped"]["incomplete"] is True
        assert "kept its output open" in record["error"]
        assert (job_dir(qex_env, job_id) / "stdout.log").read_text() == "started\n"
    finally:
        pid_file = qex_env.root / "daemon.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass


def test_leftovers_in_the_job_group_are_stopped(qex_env: Env) -> None:
    # A background child in the job's own group: it dies with the job, so the pipe closes.
    job_id = make_job(qex_env, ["sh", "-c", "sleep 120 & echo $! > child.pid"])
    supervise(qex_env, job_id, extra_env={"QEX_PIPE_CLOSE_GRACE_SECS": "60"})
    record = qex_env.record(job_id)
    assert record["state"] == "completed" and record["logs_dropped"] is None
    child = int((qex_env.root / "child.pid").read_text())
    stat = Path(f"/proc/{child}/stat")
    assert not stat.exists() or stat.read_text().split(")")[-1].split()[0] in ("Z", "X")


def test_a_missing_program_is_one_sentence(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["no-such-program-for-qex", "x"])
    supervise(qex_env, job_id)
    record = qex_env.record(job_id)
    assert record["state"] == "failed"
    assert record["exit_code"] is None and record["signal"] is None
    assert record["attempts"] == 0
    assert "no-such-program-for-qex" in record["error"] and "PATH" in record["error"]
    assert exit_code_for(record) == 121
    not_exec = qex_env.root / "plain.txt"
    not_exec.write_text("echo hi\n")
    not_exec.chmod(0o644)
    denied = make_job(qex_env, [str(not_exec)])
    supervise(qex_env, denied)
    assert "permission" in qex_env.record(denied)["error"].lower()
    gone = make_job(qex_env, ["true"], cwd=str(qex_env.root / "no-such-dir"))
    supervise(qex_env, gone)
    assert "directory" in qex_env.record(gone)["error"]


def test_the_hook_runs_once(qex_env: Env) -> None:
    out = qex_env.root / "hook.out"
    script = ("import os, sys\n"
              "keys = ['QEX_JOB_ID', 'QEX_STATE', 'QEX_EXIT_CODE', 'QEX_ATTEMPTS',\n"
              "        'QEX_JOB_NAME']\n"
              "with open(sys.argv[1], 'a') as f:\n"
              "    f.write(' '.join(os.environ[k] for k in keys) + '\\n')\n"
              "print('hook says hi')\n")
    qex_env.write_config(f"[hooks]\non_stop = [{json.dumps(sys.executable)}, \"-c\", "
                         f"{json.dumps(script)}, {json.dumps(str(out))}]\n")
    job_id = make_job(qex_env, ["sh", "-c", "exit 4"])
    supervise(qex_env, job_id)
    assert out.read_text().split() == [job_id, "failed", "4", "1", "direct"]
    folder = job_dir(qex_env, job_id)
    assert (folder / "hook.ran").read_text().startswith(f"failed {job_id} ")
    log = (folder / "hook.log").read_text()
    assert log.startswith("hook says hi\n") and "qex: the stop hook ran in" in log
    assert (folder / "hook.log").stat().st_mode & 0o777 == 0o600
    again = supervise(qex_env, job_id, "--hook")
    assert again.returncode == 0
    # The coordinator's argv puts the flag after the id (`supervisor_argv(id, "--hook")`).
    after = subprocess.run([*SUPERVISOR, job_id, "--hook"], env=qex_env.env, timeout=60,
                           capture_output=True, text=True, check=False)
    assert after.returncode == 0
    assert len(out.read_text().splitlines()) == 1


def test_the_coordinator_entry_runs_only_the_hook(qex_env: Env) -> None:
    out = qex_env.root / "hook.out"
    qex_env.write_config(f'[hooks]\non_stop = ["sh", "-c", "echo $QEX_STATE >> {out}"]\n'
                         'on_stop_states = ["cancelled"]\n')
    job_id = make_job(qex_env, ["true"], status={"state": "cancelled"})
    assert supervise(qex_env, job_id, "--hook").returncode == 0
    assert out.read_text() == "cancelled\n"
    assert qex_env.record(job_id)["state"] == "cancelled"
    # A state outside the list runs nothing and claims nothing.
    other = make_job(qex_env, ["true"], status={"state": "skipped"})
    supervise(qex_env, other, "--hook")
    assert not (job_dir(qex_env, other) / "hook.ran").exists()


def test_the_hidden_cli_command_is_the_same_supervisor(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", "echo via-cli"])
    done = qex_env.run("supervise", job_id)
    assert done.returncode == 0, done.stderr
    assert qex_env.record(job_id)["state"] == "completed"
    assert (job_dir(qex_env, job_id) / "stdout.log").read_text() == "via-cli\n"
    assert "supervise" not in qex_env.run("--help").stdout


def test_a_record_that_is_not_starting_is_left_alone(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["true"], status={"state": "queued"})
    done = supervise(qex_env, job_id)
    assert done.returncode == 1 and "starting" in done.stderr
    assert qex_env.record(job_id)["state"] == "queued"


def test_the_go_signal(qex_env: Env) -> None:
    ran = qex_env.root / "ran"
    job_id = make_job(qex_env, ["touch", str(ran)])
    before = (job_dir(qex_env, job_id) / "status.json").read_bytes()
    read_end, write_end = os.pipe()
    waiting = subprocess.Popen([*SUPERVISOR, job_id], cwd=str(qex_env.root), pass_fds=(read_end,),
                               env={**qex_env.env, "QEX_SUPERVISOR_GO_FD": str(read_end)},
                               stderr=subprocess.PIPE, text=True)
    os.close(read_end)
    # The coordinator named it, and stopped before the go: the pipe ends without a byte.
    (job_dir(qex_env, job_id) / "supervisor.pid").write_text(f"{waiting.pid} 1\n")
    os.close(write_end)
    _, stderr = waiting.communicate(timeout=120)
    assert waiting.returncode == 3 and "coordinator stopped" in stderr
    # Untouched: the record as the coordinator left it, no lock taken, nothing run; and the
    # name taken back, so that recovery queues the job instead of failing it.
    assert (job_dir(qex_env, job_id) / "status.json").read_bytes() == before
    assert not (job_dir(qex_env, job_id) / "supervisor.lock").exists()
    assert not (job_dir(qex_env, job_id) / "supervisor.pid").exists()
    assert not ran.exists()
    # The next coordinator finds a `starting` record that names no supervisor, queues the
    # job again, and runs it once.
    done = qex_env.run("wait", job_id, "--timeout", "60")
    assert done.returncode == 0, done.stderr
    record = qex_env.record(job_id)
    assert record["state"] == "completed" and record["attempts"] == 1 and ran.exists()
    ran.unlink()
    go_id = make_job(qex_env, ["touch", str(ran)])
    read_end, write_end = os.pipe()
    os.write(write_end, b"1")
    os.close(write_end)
    supervise(qex_env, go_id, extra_env={"QEX_SUPERVISOR_GO_FD": str(read_end)},
              pass_fds=(read_end,))
    os.close(read_end)
    assert qex_env.record(go_id)["state"] == "completed" and ran.exists()


def standby(env: Env, *sent: bytes) -> subprocess.CompletedProcess[str]:
    """`python -m qex.supervisor --standby`, sent `sent` on its go pipe, then end-of-file."""
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen([*SUPERVISOR, "--standby"], cwd=str(env.root),
                                pass_fds=(read_end,), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**env.env, "QEX_SUPERVISOR_GO_FD": str(read_end)})
    finally:
        os.close(read_end)
    for data in sent:
        os.write(write_end, data)
    os.close(write_end)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_a_standby_supervises_the_job_whose_id_it_is_sent(qex_env: Env) -> None:
    ran = qex_env.root / "ran"
    job_id = make_job(qex_env, ["touch", str(ran)])
    done = standby(qex_env, job_id[:10].encode(), f"{job_id[10:]}\n".encode())
    assert done.returncode == 0, done.stderr
    record = qex_env.record(job_id)
    assert record["state"] == "completed" and record["attempts"] == 1 and ran.exists()
    assert done.stderr == ""  # what it says about a job goes to that job's supervisor.log


def test_a_standby_let_go_or_sent_nonsense_touches_nothing(qex_env: Env) -> None:
    ran = qex_env.root / "ran"
    job_id = make_job(qex_env, ["touch", str(ran)])
    before = (job_dir(qex_env, job_id) / "status.json").read_bytes()
    let_go = standby(qex_env)
    assert let_go.returncode == 0 and let_go.stderr == ""
    cut_short = standby(qex_env, job_id.encode())  # no newline: the go never finished
    assert cut_short.returncode == 0 and cut_short.stderr == ""
    nonsense = standby(qex_env, b"../../etc\n")
    assert nonsense.returncode == 2 and "not a job id" in nonsense.stderr
    assert (job_dir(qex_env, job_id) / "status.json").read_bytes() == before
    assert not (job_dir(qex_env, job_id) / "supervisor.lock").exists()
    assert not ran.exists()
    without_pipe = subprocess.run([*SUPERVISOR, "--standby"], env=qex_env.env,
                                  capture_output=True, text=True, timeout=120, check=False)
    assert without_pipe.returncode == 2 and "QEX_SUPERVISOR_GO_FD" in without_pipe.stderr


def test_a_broken_config_runs_with_defaults_and_says_so(qex_env: Env) -> None:
    qex_env.write_config("[logs]\nmax_bytes = \"lots\"\n")
    job_id = make_job(qex_env, ["true"])
    supervise(qex_env, job_id)
    record = qex_env.record(job_id)
    assert record["state"] == "completed"
    assert "config file" in record["error"] and "rerun" in record["error"]


def test_a_completed_job_teaches_the_learner(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["true"])
    supervise(qex_env, job_id)
    key = learn_key(str(qex_env.root), ["true"])
    entry = json.loads((qex_env.state / "usage" / f"{key}.json").read_text())
    assert entry["samples"][0]["kind"] == "peak" and entry["samples"][0]["max_rss"] > 0
    assert not (qex_env.state / "usage.json").exists()


def sandbox_script(env: Env, attempts: list[dict[str, Any]]) -> dict[str, str]:
    script = env.root / "sandbox.json"
    script.write_text(json.dumps({"active": True, "backend": "test", "attempts": attempts,
                                  "limits_log": str(env.root / "limits.jsonl")}))
    return {"QEX_TEST_SANDBOX": str(script)}


PROVEN = [{"oom_kills": 1, "proven": True, "source": "cgroup", "peak": 300 * MIB}]
HINTS = {"QEX_MEM": str(256 * MIB), "QEX_MEM_MB": "256", "QEX_CPU": "1", "KEEP": "mine"}


def test_a_proven_oom_raises_the_claim_and_requeues(qex_env: Env) -> None:
    out = qex_env.root / "hook.out"
    qex_env.write_config('[enforce]\nmode = "hard"\n[budget]\nmem = "2GB"\n'
                         f'[hooks]\non_stop = ["touch", "{out}"]\n')
    job_id = make_job(qex_env, ["sh", "-c", "echo $QEX_MEM; kill -KILL $$"], job_env=HINTS,
                      hint_keys=["QEX_MEM", "QEX_MEM_MB", "QEX_CPU"], explicit_claim=True)
    supervise(qex_env, job_id, extra_env=sandbox_script(qex_env, PROVEN))
    record = qex_env.record(job_id)
    assert record["state"] == "queued"
    assert record["mem"] == 512 * MIB
    assert record["oom_retries_left"] == 1
    assert record["queue_time_applies"] is False
    assert record["attempts"] == 1 and record["started_at"] is not None
    assert record["pid"] is None and record["supervisor_pid"] is None
    assert record["oom_evidence"] == "cgroup"
    assert "256MB" in record["note"] and "512MB" in record["note"]
    assert "too small" in record["error"]
    assert record["usage"]["max_rss"] == 300 * MIB
    assert record["usage"]["source"] == "memory.peak"
    spec = spec_of(qex_env, job_id)
    assert spec["mem"] == 512 * MIB
    assert spec["env"]["QEX_MEM"] == str(512 * MIB) and spec["env"]["QEX_MEM_MB"] == "512"
    assert spec["env"]["QEX_CPU"] == "1" and spec["env"]["KEEP"] == "mine"
    assert not out.exists() and not (job_dir(qex_env, job_id) / "hook.ran").exists()
    limits = [json.loads(line) for line in (qex_env.root / "limits.jsonl").read_text().splitlines()]
    assert limits == [{"mode": "hard", "memory_max": 256 * MIB, "memory_high": None,
                       "swap_max": 0}]
    key = learn_key(str(qex_env.root), spec["command"])
    samples = json.loads((qex_env.state / "usage" / f"{key}.json").read_text())["samples"]
    assert samples[0]["kind"] == "oom" and samples[0]["claim"] == 256 * MIB

    # The coordinator admits the larger claim and starts a new supervisor: it appends.
    record_path = job_dir(qex_env, job_id) / "status.json"
    data = json.loads(record_path.read_text())
    data["state"] = "starting"
    record_path.write_text(json.dumps(data))
    supervise(qex_env, job_id, extra_env=sandbox_script(qex_env, []))
    final = qex_env.record(job_id)
    assert final["state"] == "killed" and final["attempts"] == 2
    log = (job_dir(qex_env, job_id) / "stdout.log").read_text()
    assert log == f"{256 * MIB}\n--- attempt 2 ---\n{512 * MIB}\n"
    assert ATTEMPT_MARK.fullmatch(b"--- attempt 2 ---")
    assert out.exists()


def test_a_proven_oom_at_the_budget_stays_oom(qex_env: Env) -> None:
    qex_env.write_config('[enforce]\nmode = "soft"\nmem_overcommit = 1.5\n'
                         '[budget]\nmem = "256MB"\n')
    job_id = make_job(qex_env, ["sh", "-c", "kill -KILL $$"])
    supervise(qex_env, job_id, extra_env=sandbox_script(qex_env, PROVEN))
    record = qex_env.record(job_id)
    assert (record["state"], record["oom_evidence"]) == ("oom", "cgroup")
    assert "larger `[budget] mem`" in record["error"]
    assert exit_code_for(record) == 99
    limits = json.loads((qex_env.root / "limits.jsonl").read_text())
    assert limits["memory_high"] == 256 * MIB and limits["memory_max"] == 384 * MIB


def test_session_evidence_is_reported_but_not_acted_on(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", "kill -KILL $$"])
    session = [{"oom_kills": 1, "proven": False, "source": "session"}]
    supervise(qex_env, job_id, extra_env=sandbox_script(qex_env, session))
    record = qex_env.record(job_id)
    assert (record["state"], record["oom_evidence"]) == ("oom", "session")
    assert "cannot prove" in record["error"]
    assert record["mem"] == 256 * MIB
    assert not (qex_env.state / "usage.json").exists()
    assert not (qex_env.state / "usage").exists()


def test_a_kill_mark_wins_over_a_proven_oom(qex_env: Env) -> None:
    job_id = make_job(qex_env, ["sh", "-c", 'touch "$MARK"; kill -KILL $$'])
    give_mark_path(qex_env, job_id)
    supervise(qex_env, job_id, extra_env=sandbox_script(qex_env, PROVEN))
    assert qex_env.record(job_id)["state"] == "killed"


_ENTRY_PROBE = """
import gc, json, sys
from qex.supervisor.__main__ import entry

code = entry([sys.argv[1]])
with open(sys.argv[2], "w") as out:
    json.dump({"code": code, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}, out)
"""


def test_a_new_supervisor_process_runs_its_job_with_the_collector_it_held_for_its_start(
        qex_env: Env, tmp_path: Path) -> None:
    # A supervisor that is a program of its own (no fork server: macOS, systemd-run) holds
    # the collector for its imports and releases it before the job runs, for the job's
    # whole life, however long that is.
    job_id = make_job(qex_env, ["true"])
    out = tmp_path / "entry.json"
    done = subprocess.run([sys.executable, "-c", _ENTRY_PROBE, job_id, str(out)],
                          env=qex_env.env, cwd=str(qex_env.root), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())
    assert found["code"] == 0
    assert qex_env.record(job_id)["state"] == "completed"
    assert found["enabled"] is True and found["frozen"] > 1000
