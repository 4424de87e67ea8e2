"""submit / run / wait / status / rerun / pipeline / --each-line against the real program.

Jobs are gated with files (a job loops until a file exists), never with fixed sleeps in the
test, and no assertion depends on how long something took.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

from conftest import Env

GATE_LOOP = 'while [ ! -e "$1" ]; do sleep 0.05; done'


def gated(env: Env, name: str = "gate") -> tuple[list[str], Path]:
    """A command that runs until the file `name` exists in the test root."""
    gate = env.root / name
    return ["sh", "-c", GATE_LOOP, "gated", str(gate)], gate


def roomy(env: Env) -> None:
    """A budget where several small jobs run at once (the test machine may have 2 cores)."""
    env.write_config('[budget]\ncpu = 8\nmem = "90%"\n[defaults]\nmem = "64MB"\n')


def state_of(env: Env, job_id: str) -> str:
    try:
        return str(env.record(job_id)["state"])
    except (OSError, ValueError, KeyError):
        return ""


def test_exit_codes_of_the_job(qex_env: Env) -> None:
    seven = qex_env.run("submit", "--wait", "-q", "--", "sh", "-c", "exit 7")
    assert seven.returncode == 7, seven.stderr
    assert seven.stdout == ""
    assert "qex: job " in seven.stderr
    high = qex_env.run("submit", "--wait", "--json", "--", "sh", "-c", "exit 100")
    assert high.returncode == 97, high.stderr
    record = json.loads(high.stdout)
    assert record["exit_code"] == 100
    assert record["state"] == "failed"
    ok = qex_env.run("run", "--", "sh", "-c", "echo to-out; echo to-err >&2")
    assert ok.returncode == 0, ok.stderr
    assert "to-out" in ok.stdout
    assert "to-err" in ok.stderr


def test_plain_submit_then_wait_and_status(qex_env: Env) -> None:
    job_id = qex_env.submit("--name", "three", "--", "sh", "-c", "echo visible; exit 3")
    uuid.UUID(job_id)
    waited = qex_env.run("wait", job_id)
    assert waited.returncode == 3, waited.stderr
    assert "failed" in waited.stdout and "exit 3" in waited.stdout
    by_name = qex_env.run("status", "three")
    assert by_name.returncode == 0
    assert "exit code: 3" in by_name.stdout
    assert "--- stdout ---" in by_name.stdout and "visible" in by_name.stdout
    quiet = qex_env.run("status", job_id[:8], "-q")
    assert quiet.returncode == 3
    assert quiet.stdout == ""
    data = qex_env.status(job_id)
    assert data["id"] == job_id and data["exit_code"] == 3


def test_unknown_ids_are_127(qex_env: Env) -> None:
    missing = str(uuid.uuid4())
    waited = qex_env.run("wait", missing)
    assert waited.returncode == 127
    assert waited.stderr.startswith("qex: ")
    assert qex_env.run("status", "no-such-name").returncode == 127
    qex_env.submit("--", "true")
    assert qex_env.run("status", missing, "--json").returncode == 127


def test_usage_errors_are_121_with_one_sentence(qex_env: Env) -> None:
    bad_mem = qex_env.run("submit", "--mem", "lots", "--", "true")
    assert bad_mem.returncode == 121
    lines = [line for line in bad_mem.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("qex: ") and "lots" in lines[0]
    assert qex_env.run("submit", "--quiet", "--", "true").returncode == 121
    assert qex_env.run("status").returncode == 121
    no_command = qex_env.run("submit")
    assert no_command.returncode == 121


def test_kill_gives_125_and_names_the_cause(qex_env: Env) -> None:
    command, _gate = gated(qex_env)
    job_id = qex_env.submit("--", *command)
    qex_env.wait_for(lambda: state_of(qex_env, job_id) == "running", what="job running")
    killed = qex_env.run("kill", job_id)
    assert killed.returncode == 0, killed.stderr
    waited = qex_env.run("wait", job_id)
    assert waited.returncode == 125, waited.stderr
    assert qex_env.record(job_id)["state"] == "killed"


def test_cancel_gives_125_and_expiry_123(qex_env: Env) -> None:
    command, gate = gated(qex_env)
    holder = qex_env.submit("--lock", "gate", "--", *command)
    qex_env.wait_for(lambda: state_of(qex_env, holder) == "running", what="holder running")
    queued = qex_env.submit("--lock", "gate", "--", "true")
    expiring = qex_env.submit("--lock", "gate", "--max-queue-time", "1s", "--", "true")
    assert qex_env.run("cancel", queued).returncode == 0
    assert qex_env.run("wait", queued).returncode == 125
    expired = qex_env.run("wait", expiring)
    assert expired.returncode == 123, expired.stderr
    assert qex_env.record(expiring)["state"] == "expired"
    gate.touch()
    assert qex_env.run("wait", holder).returncode == 0


def test_ctrl_c_on_a_wait_is_122_and_the_job_goes_on(qex_env: Env) -> None:
    command, gate = gated(qex_env)
    job_id = qex_env.submit("--", *command)
    qex_env.wait_for(lambda: state_of(qex_env, job_id) == "running", what="job running")
    waiter = qex_env.popen("wait", job_id)
    qex_env.wait_for(lambda: _waits_on_socket(waiter.pid), what="the wait to block")
    waiter.send_signal(signal.SIGINT)
    _out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 122, err
    assert f"qex status {job_id} --wait" in err
    assert state_of(qex_env, job_id) == "running"
    gate.touch()
    assert qex_env.run("status", job_id, "--wait", "-q").returncode == 0


def _waits_on_socket(pid: int) -> bool:
    """True once the process holds two sockets: the `wait` request and the event stream, which
    it opens only inside the wait (its signal handling is in place by then)."""
    count = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
    except OSError:
        return False
    return count >= 2


def test_a_wait_survives_the_coordinator(qex_env: Env) -> None:
    command, gate = gated(qex_env)
    job_id = qex_env.submit("--", *command)
    qex_env.wait_for(lambda: state_of(qex_env, job_id) == "running", what="job running")
    waiter = qex_env.popen("wait", job_id)
    qex_env.wait_for(lambda: _waits_on_socket(waiter.pid), what="the wait to block")
    pid = qex_env.coordinator_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    gate.touch()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert "completed" in out


def test_twenty_submits_start_one_coordinator(qex_env: Env) -> None:
    procs = [qex_env.popen("submit", "--", "true") for _ in range(20)]
    ids = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        ids.append(out.strip())
    assert len(set(ids)) == 20
    log = (qex_env.state / "run" / "daemon.log").read_text()
    assert log.count("the coordinator started") == 1, log
    assert qex_env.run("wait", *ids).returncode == 0


def test_dedupe_key_gives_the_same_id(qex_env: Env) -> None:
    command, gate = gated(qex_env)
    first = qex_env.run("submit", "--dedupe-key", "build:here", "--", *command)
    assert first.returncode == 0
    second = qex_env.run("submit", "--dedupe-key", "build:here", "--json", "--", *command)
    assert second.returncode == 0, second.stderr
    answer = json.loads(second.stdout)
    assert answer == {"id": first.stdout.strip(), "deduplicated": True}
    gate.touch()
    assert qex_env.run("wait", answer["id"]).returncode == 0


def test_id_file_is_written_before_the_wait(qex_env: Env) -> None:
    command, gate = gated(qex_env)
    id_file = qex_env.root / "home" / "build.id"
    proc = qex_env.popen("submit", "--wait", "-q", "--id-file", str(id_file), "--", *command)
    qex_env.wait_for(id_file.exists, what="the id file")
    job_id = id_file.read_text().strip()
    uuid.UUID(job_id)
    gate.touch()
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"qex: job {job_id}" in err
    tmp_file = qex_env.root / "job.id"
    scratch = qex_env.run("submit", "--id-file", str(tmp_file), "--", "true")
    assert "does not last" in scratch.stderr
    assert tmp_file.read_text().strip() == scratch.stdout.strip()


def test_status_quiet_is_100_while_running_and_wait_next(qex_env: Env) -> None:
    roomy(qex_env)
    command, gate = gated(qex_env)
    slow = qex_env.submit("--", *command)
    fast = qex_env.submit("--", "sh", "-c", "exit 5")
    qex_env.wait_for(lambda: state_of(qex_env, slow) == "running", what="job running")
    assert qex_env.run("status", slow, "-q").returncode == 100
    nxt = qex_env.run("wait", "--next", slow, fast)
    assert nxt.returncode == 5, nxt.stderr
    assert fast[:8] in nxt.stdout
    assert f"qex wait --next {slow}" in nxt.stderr
    timed = qex_env.run("wait", slow, "--timeout", "0.5")
    assert timed.returncode == 124
    assert state_of(qex_env, slow) == "running"
    gate.touch()
    assert qex_env.run("wait", slow, fast).returncode == 5


def test_rerun(qex_env: Env) -> None:
    job_id = qex_env.submit("--name", "again", "--", "sh", "-c", "echo $QEX_MARK", "x")
    assert qex_env.run("wait", job_id).returncode == 0
    rerun = qex_env.run("rerun", job_id)
    assert rerun.returncode == 0, rerun.stderr
    new_id = rerun.stdout.strip()
    assert new_id != job_id
    assert "runs again as" in rerun.stderr
    assert qex_env.run("wait", new_id).returncode == 0
    assert qex_env.record(new_id)["command"] == qex_env.record(job_id)["command"]


def test_pipeline_group_is_a_handle(qex_env: Env) -> None:
    pipeline = qex_env.root / "ci.toml"
    pipeline.write_text(
        'name = "ci"\n'
        '[[jobs]]\nname = "build"\ncommand = ["sh", "-c", "echo built"]\n'
        '[[jobs]]\nname = "test"\ncommand = ["sh", "-c", "exit 4"]\nneeds = ["build"]\n'
        '[[jobs]]\nname = "ship"\ncommand = ["true"]\nneeds = ["test"]\n'
    )
    ids_file = qex_env.root / "home" / "ids.env"
    result = qex_env.run("pipeline", str(pipeline), "--id-file", str(ids_file))
    assert result.returncode == 0, result.stderr
    group = result.stdout.strip()
    uuid.UUID(group)
    assert "build: " in result.stderr
    waited = qex_env.run("wait", group)
    assert waited.returncode == 4, waited.stderr
    records = json.loads(qex_env.run("status", group, "--json").stdout)
    assert [r["name"] for r in records] == ["build", "test", "ship"]
    states = {r["name"]: r["state"] for r in records}
    assert states == {"build": "completed", "test": "failed", "ship": "skipped"}
    assert qex_env.run("status", "ci", "-q").returncode == 4
    env_lines = ids_file.read_text().splitlines()
    assert env_lines[0] == f"group={group}"
    assert any(line.startswith("ship=") for line in env_lines)
    ship = next(r for r in records if r["name"] == "ship")
    assert qex_env.run("wait", ship["id"]).returncode == 126


def test_each_line_fan_out(qex_env: Env) -> None:
    inputs = qex_env.root / "inputs.txt"
    inputs.write_text("alpha\n\n# skip me\n two words \r\nlast")
    result = qex_env.run("submit", "--each-line", str(inputs), "--", "sh", "-c",
                         'printf "%s|" "$1"', "arg", "{}")
    assert result.returncode == 0, result.stderr
    group = result.stdout.strip()
    assert "1 empty" in result.stderr and "1 comment" in result.stderr
    assert "3 jobs in the group `inputs`" in result.stderr
    assert qex_env.run("wait", group, "-q").returncode == 0
    records = json.loads(qex_env.run("status", group, "--json").stdout)
    outputs = [(qex_env.state / "jobs" / r["id"] / "stdout.log").read_text() for r in records]
    assert outputs == ["alpha|", "two words|", "last|"]
    assert [r["name"] for r in records] == ["sh-01-alpha", "sh-02-two-words", "sh-03-last"]
    refused = qex_env.run("submit", "--each-line", str(inputs), "--", "echo", "no-placeholder")
    assert refused.returncode == 121
    piped = qex_env.run("submit", "--each-line", "-", "--json", "--", "echo", "{}", input="a\n")
    assert piped.returncode == 121


def test_status_of_a_queued_job_says_why(qex_env: Env) -> None:
    command, gate = gated(qex_env)
    holder = qex_env.submit("--lock", "db", "--", *command)
    qex_env.wait_for(lambda: state_of(qex_env, holder) == "running", what="holder running")
    waiting = qex_env.submit("--lock", "db", "--", "true")
    qex_env.wait_for(lambda: qex_env.record(waiting).get("blocked_reason"), what="a reason")
    text = qex_env.run("status", waiting).stdout
    assert "waits for:" in text and "db" in text
    gate.touch()
    assert qex_env.run("wait", holder, waiting).returncode == 0


def test_jobs_that_wait_for_a_running_job_keep_their_reason_and_go_when_it_ends(
        qex_env: Env) -> None:
    """Waiting jobs are left out of the passes while the job they wait for runs (dormant):
    other jobs come and go meanwhile, the reasons stay true, and the end of the job they
    need starts them, or skips them when it failed."""
    roomy(qex_env)
    build, build_gate = gated(qex_env, "build-gate")
    _lint, lint_gate = gated(qex_env, "lint-gate")
    built = qex_env.submit("--name", "build", "--", *build)
    linted = qex_env.submit("--name", "lint", "--", "sh", "-c", GATE_LOOP + "; exit 3",
                            "gated", str(lint_gate))
    tests = [qex_env.submit("--needs", built, "--", "true") for _ in range(4)]
    after = qex_env.submit("--after", tests[0], "--", "true")
    doomed = [qex_env.submit("--needs", linted, "--", "true") for _ in range(3)]

    def reason(job_id: str) -> str:
        return str(qex_env.record(job_id).get("blocked_reason") or "")

    qex_env.wait_for(lambda: all("(it is running now)" in reason(j) for j in tests),
                     what="the tests to wait for a running build")
    assert "that job is queued now" in reason(after)
    # Jobs that start and end meanwhile run passes; the waiting jobs stay as they are.
    for _ in range(3):
        assert qex_env.run("submit", "--wait", "-q", "--", "true").returncode == 0
    assert all("build" in reason(j) and "(it is running now)" in reason(j) for j in tests)
    assert {state_of(qex_env, j) for j in (*tests, after, *doomed)} == {"queued"}
    lint_gate.touch()
    assert qex_env.run("wait", *doomed).returncode != 0
    assert {state_of(qex_env, j) for j in doomed} == {"skipped"}
    assert {qex_env.record(j).get("caused_by") for j in doomed} == {linted}
    assert {state_of(qex_env, j) for j in (*tests, after)} == {"queued"}
    build_gate.touch()
    assert qex_env.run("wait", built, *tests, after).returncode == 0
    assert {state_of(qex_env, j) for j in (built, *tests, after)} == {"completed"}


def test_jobs_that_wait_for_a_lock_keep_their_reason_and_go_when_it_comes_free(
        qex_env: Env) -> None:
    """Jobs that wait for a lock a running job holds are left out of the passes (dormant):
    other jobs come and go meanwhile, a person who takes and gives back the lock is named
    and then the job again, and the holder's end lets them run."""
    roomy(qex_env)
    command, gate = gated(qex_env, "migrate-gate")
    holder = qex_env.submit("--name", "migrate", "--lock", "db", "--", *command)
    waiting = [qex_env.submit("--lock", "db", "--", "true") for _ in range(4)]

    def reasons() -> set[str]:
        return {str(qex_env.record(j).get("blocked_reason") or "") for j in waiting}

    qex_env.wait_for(lambda: all("migrate" in r and "took it first" in r for r in reasons()),
                     what="the jobs to wait for the lock that the running job holds")
    held = reasons()
    for _ in range(3):
        assert qex_env.run("submit", "--wait", "-q", "--", "true").returncode == 0
    assert reasons() == held
    qex_env.run("pause", "lock", "db", "--reason", "backup", check=True)
    qex_env.wait_for(lambda: all("backup" in r for r in reasons()),
                     what="the waiting jobs to name the person who holds the lock")
    qex_env.run("resume", "lock", "db", check=True)
    qex_env.wait_for(lambda: reasons() == held, what="the waiting jobs to name the job again")
    assert {state_of(qex_env, j) for j in waiting} == {"queued"}
    gate.touch()
    assert qex_env.run("wait", holder, *waiting).returncode == 0
    assert {state_of(qex_env, j) for j in (holder, *waiting)} == {"completed"}


def test_run_ctrl_c_stops_the_job(qex_env: Env) -> None:
    command, _gate = gated(qex_env)
    proc = subprocess.Popen(
        [*_qex(), "run", "--", *command], env=qex_env.env, cwd=str(qex_env.root),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    qex_env.wait_for(lambda: _running_jobs(qex_env), what="the job to run")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 125, err
    assert "this command stopped the job" in err


def _qex() -> list[str]:
    from conftest import QEX

    return list(QEX)


def _running_jobs(env: Env) -> bool:
    jobs = env.state / "jobs"
    if not jobs.is_dir():
        return False
    for status in jobs.glob("*/status.json"):
        try:
            if json.loads(status.read_text()).get("state") == "running":
                return True
        except (OSError, ValueError):
            continue
    return False


def test_follow_forms_copy_the_output(qex_env: Env) -> None:
    followed = qex_env.run("submit", "--follow", "--", "sh", "-c", "echo one; echo two >&2; exit 2")
    assert followed.returncode == 2, followed.stderr
    assert followed.stdout == "one\n"
    assert "two" in followed.stderr
    job_id = followed.stderr.split("qex: job ", 1)[1].split()[0]
    again = qex_env.run("status", job_id, "--follow")
    assert again.returncode == 2
    assert again.stdout == "one\n"


def test_job_file_and_pipeline_json(qex_env: Env) -> None:
    job_file = qex_env.root / "job.toml"
    job_file.write_text(
        'name = "from-file"\ncommand = ["sh", "-c", "echo $GREETING"]\n'
        '[resources]\ncpu = 1\nmem = "64MB"\n[env]\nGREETING = "hello-file"\n'
    )
    done = qex_env.run("submit", "--job", str(job_file), "--wait", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["name"] == "from-file" and record["claim_source"] == "explicit"
    log = qex_env.state / "jobs" / record["id"] / "stdout.log"
    assert log.read_text() == "hello-file\n"
    pipeline = qex_env.root / "p.json"
    pipeline.write_text(json.dumps({"jobs": [{"name": "a", "command": ["true"]},
                                             {"name": "b", "command": ["true"], "after": ["a"]}]}))
    result = qex_env.run("pipeline", str(pipeline), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["group_name"] == "p"
    assert [job["name"] for job in data["jobs"]] == ["a", "b"]
    assert qex_env.run("wait", data["group"], "-q").returncode == 0
    broken = qex_env.root / "bad.toml"
    broken.write_text('[[jobs]]\nname = "x"\ncommand = ["true"]\nneeds = ["y"]\n')
    assert qex_env.run("pipeline", str(broken)).returncode == 121
