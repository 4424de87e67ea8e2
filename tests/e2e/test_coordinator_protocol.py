"""The coordinator (`qex daemon`) spoken to directly over its socket, with no CLI in between.

Each test starts the real program against the `qex_env` fixture's private state and talks
JSON lines to it: the protocol's promises (many requests per connection, unknown fields
ignored, a bad line answered and survived), a job from submit to its final record, recovery
after `kill -9` of the coordinator while a job runs, the idle exit, and the event stream's
gap. Jobs are gated with FIFOs, never with sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qex.store.paths import Paths

REPO = Path(__file__).resolve().parents[2]


class Client:
    """A raw JSON-lines client: what any program could write against the protocol."""

    def __init__(self, path: Path, timeout: float = 20.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(str(path))
        except OSError:
            self.sock.close()  # no coordinator yet: the caller tries again
            raise
        self.reader = self.sock.makefile("rb")

    def send_line(self, raw: bytes) -> None:
        self.sock.sendall(raw + b"\n")

    def read(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line, "the coordinator closed the connection"
        data = json.loads(line)
        assert isinstance(data, dict)
        return data

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send_line(json.dumps(message).encode())
        return self.read()

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class Daemon:
    def __init__(self, env: dict[str, str], root: Path) -> None:
        self.env = dict(env)
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        self.paths = Paths.from_env(self.env)
        self.log = root / "daemon-test.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, **extra: str) -> Daemon:
        env = dict(self.env, **extra)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "qex", "daemon"], env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, cwd="/", start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                client = self.client()
            except OSError:
                assert self.proc.poll() is None, self.log.read_text()
                time.sleep(0.02)
                continue
            assert client.ask({"op": "ping"}) == {"result": "ok"}
            client.close()
            return self
        raise AssertionError("the coordinator did not start:\n" + self.log.read_text())

    def client(self) -> Client:
        return Client(self.paths.socket_path)

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        client = self.client()
        try:
            return client.ask(message)
        finally:
            client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def daemon(qex_env: Any) -> Iterator[Daemon]:
    handle = Daemon(qex_env.env, qex_env.root)
    try:
        yield handle
    finally:
        handle.stop()


def spec(command: list[str], **fields: Any) -> dict[str, Any]:
    data = {
        "id": str(uuid.uuid4()), "name": "probe", "cwd": "/", "command": command,
        "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, "cpu": 1, "mem": 16 * 1024**2,
        "submitted_at": time.time(),
    }
    data.update(fields)
    return data


def submit(daemon: Daemon, command: list[str], **fields: Any) -> str:
    answer = daemon.ask({"op": "submit", "spec": spec(command, **fields)})
    assert answer["result"] == "submitted", answer
    return str(answer["id"])


def gate(root: Path, name: str) -> Path:
    fifo = root / name
    os.mkfifo(fifo)
    return fifo


def release(fifo: Path) -> None:
    """Open the FIFO for writing (this waits for the job to be reading) and close it."""
    fd = os.open(fifo, os.O_WRONLY)
    os.close(fd)


def wait_until(predicate: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_ping_capabilities_and_bad_lines_on_one_connection(daemon: Daemon) -> None:
    daemon.start()
    client = daemon.client()
    try:
        assert client.ask({"op": "ping", "from_a_newer_cli": {"x": 1}}) == {"result": "ok"}
        caps = client.ask({"op": "capabilities"})
        assert caps["result"] == "capabilities"
        assert {"events", "pause", "dedupe", "own-job", "job-changed"} <= set(caps["names"])
        client.send_line(b"this is not json")
        bad = client.read()
        assert bad["result"] == "error" and bad["kind"] == "internal"
        client.send_line(b"[1, 2, 3]")
        assert client.read()["result"] == "error"
        client.send_line(b"")  # a blank line is skipped, not answered
        unknown = client.ask({"op": "no-such-request"})
        assert unknown["result"] == "error"
        info = client.ask({"op": "info"})
        assert info["result"] == "info" and info["pid"] == daemon.proc.pid  # type: ignore[union-attr]
        assert info["jobs_running"] == 0 and info["queue_state"] == "running"
        assert client.ask({"op": "ping"}) == {"result": "ok"}
    finally:
        client.close()
    mode = os.stat(daemon.paths.socket_path).st_mode & 0o777
    assert mode == 0o600


def test_a_job_from_submit_to_its_final_record(daemon: Daemon) -> None:
    daemon.start()
    job_id = submit(daemon, ["sh", "-c", "exit 3"], unknown_spec_field="ignored")
    answer = daemon.ask({"op": "wait", "id": job_id, "also_unknown": True})
    assert answer["result"] == "status", answer
    record = answer["status"]
    assert record["state"] == "failed" and record["exit_code"] == 3
    listed = daemon.ask({"op": "list"})
    assert [job["id"] for job in listed["jobs"]] == [job_id]
    on_disk = json.loads((daemon.paths.job_dir(job_id) / "status.json").read_text())
    assert on_disk["state"] == "failed"
    assert os.stat(daemon.paths.job_dir(job_id) / "spec.json").st_mode & 0o777 == 0o600
    assert daemon.ask({"op": "status", "id": str(uuid.uuid4())})["kind"] == "no_such_job"


def test_refusals_name_the_problem(daemon: Daemon) -> None:
    daemon.start()
    missing = daemon.ask({"op": "submit", "spec": spec(["true"], needs=[str(uuid.uuid4())])})
    assert missing["result"] == "error" and missing["kind"] == "no_such_job"
    broken = daemon.ask({"op": "submit", "spec": {"id": "x"}})
    assert broken["result"] == "error"
    impossible = daemon.ask({"op": "submit", "spec": spec(["true"], claims={"gpu": {"count": 1}})})
    assert impossible["result"] == "error" and impossible["kind"] == "wrong_state"
    assert daemon.ask({"op": "list"})["jobs"] == []
    assert not any(daemon.paths.jobs_dir.iterdir())


def test_kill_minus_nine_of_the_coordinator_loses_nothing(daemon: Daemon, qex_env: Any) -> None:
    daemon.start()
    fifo = gate(qex_env.root, "hold")
    job_id = submit(daemon, ["sh", "-c", f"read line < {fifo}; exit 7"])
    wait_until(lambda: daemon.ask({"op": "status", "id": job_id})["status"]["state"] == "running",
               what="the job to run")
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait(10)
    # The socket file stays behind after kill -9; the next coordinator clears it.
    daemon.start()
    record = daemon.ask({"op": "status", "id": job_id})["status"]
    assert record["state"] == "running"
    client = daemon.client()
    client.send_line(json.dumps({"op": "wait", "id": job_id}).encode())
    release(fifo)
    answer = client.read()
    client.close()
    assert answer["result"] == "status"
    assert answer["status"]["state"] == "failed" and answer["status"]["exit_code"] == 7


def test_idle_exit_removes_the_socket(daemon: Daemon) -> None:
    daemon.start(QEX_IDLE_EXIT_SECS="1")
    assert daemon.proc is not None
    assert daemon.proc.wait(20) == 0
    assert not daemon.paths.socket_path.exists()
    assert "the coordinator stopped" in daemon.log.read_text()


def test_a_queued_job_keeps_the_coordinator_alive(daemon: Daemon) -> None:
    daemon.start(QEX_IDLE_EXIT_SECS="1")
    daemon.ask({"op": "pause", "target": {"kind": "queue"}, "by_pid": os.getpid()})
    job_id = submit(daemon, ["true"])
    assert daemon.proc is not None
    with pytest.raises(subprocess.TimeoutExpired):
        daemon.proc.wait(2.5)
    assert daemon.ask({"op": "cancel", "id": job_id}) == {"result": "ok"}
    assert daemon.proc.wait(20) == 0


def test_events_stream_reports_a_gap_and_says_bye(daemon: Daemon) -> None:
    daemon.start(QEX_EVENTS_RETAINED="3")
    paused = daemon.ask({"op": "pause", "target": {"kind": "queue"}, "reason": "hold",
                         "by_pid": os.getpid()})
    assert paused["result"] == "pause_state" and paused["queue"]["reason"] == "hold"
    ids = [submit(daemon, ["true"]) for _ in range(5)]
    reader = daemon.client()
    reader.send_line(json.dumps({"op": "events", "since": "start"}).encode())
    header = reader.read()["event"]
    assert header["event"] == "stream" and header["last_seq"] >= 5
    gap = reader.read()["event"]
    assert gap["event"] == "gap" and gap["missed"] == header["first_seq"] - 1 > 0
    held = [reader.read()["event"] for _ in range(header["last_seq"] - header["first_seq"] + 1)]
    assert all(event["event"] == "job" for event in held)
    assert held[-1]["id"] == ids[-1]
    # A change now arrives on the open stream.
    assert daemon.ask({"op": "cancel", "id": ids[0]}) == {"result": "ok"}
    live = reader.read()["event"]
    assert (live["id"], live["state"], live["previous"]) == (ids[0], "cancelled", "queued")
    assert live["job"]["state"] == "cancelled"
    # A cursor from another stream gives an uncountable gap.
    other = daemon.client()
    other.send_line(json.dumps({"op": "events", "since": f"{uuid.uuid4()}:2"}).encode())
    assert other.read()["event"]["event"] == "stream"
    assert other.read()["event"]["missed"] is None
    other.close()
    daemon.stop()
    rest = []
    while True:
        event = reader.read()["event"]
        rest.append(event)
        if event["event"] == "bye":
            break
    assert rest[-1]["reason"]
    reader.close()


def test_owned_job_is_cancelled_when_its_connection_ends(daemon: Daemon) -> None:
    daemon.start()
    daemon.ask({"op": "pause", "target": {"kind": "queue"}, "by_pid": os.getpid()})
    owner = daemon.client()
    answer = owner.ask({"op": "submit", "spec": spec(["true"])})
    job_id = answer["id"]
    assert owner.ask({"op": "own_job", "id": job_id}) == {"result": "ok"}
    owner.close()
    record = wait_until(
        lambda: (r := daemon.ask({"op": "status", "id": job_id})["status"])["state"] == "cancelled"
        and r, what="the owned job to be cancelled")
    assert "command that started this job" in record["error"]


def test_dedupe_key_answers_with_the_holder(daemon: Daemon) -> None:
    daemon.start()
    daemon.ask({"op": "pause", "target": {"kind": "queue"}, "by_pid": os.getpid()})
    first = submit(daemon, ["true"], dedupe_key="build:/here")
    again = daemon.ask({"op": "submit", "spec": spec(["true"], dedupe_key="build:/here")})
    assert again["result"] == "submitted" and again["id"] == first and again["deduplicated"]
    assert again["warning"]
    assert len(daemon.ask({"op": "list"})["jobs"]) == 1


def test_pause_survives_a_restart_and_resume_credits_the_wait(daemon: Daemon) -> None:
    daemon.start()
    daemon.ask({"op": "pause", "target": {"kind": "queue"}, "reason": "maintenance",
                "by_pid": 4321})
    job_id = submit(daemon, ["true"], max_queue_time=3600)
    daemon.stop()
    assert daemon.paths.paused_file.exists()
    daemon.start()
    state = daemon.ask({"op": "pause_state"})
    assert state["queue"]["by_pid"] == 4321 and state["queue"]["reason"] == "maintenance"
    info = daemon.ask({"op": "info"})
    assert info["queue_state"] == "paused" and "4321" in info["queue_line"]
    record = daemon.ask({"op": "status", "id": job_id})["status"]
    assert record["state"] == "queued" and "paused" in record["blocked_reason"]
    assert daemon.ask({"op": "resume", "target": {"kind": "queue"}})["queue"] is None
    assert not daemon.paths.paused_file.exists()
    done = daemon.ask({"op": "wait", "id": job_id})["status"]
    assert done["queue_pause_secs"] > 0


def test_clean_keeps_a_record_that_queued_work_needs(daemon: Daemon) -> None:
    daemon.start()
    first = submit(daemon, ["true"])
    assert daemon.ask({"op": "wait", "id": first})["status"]["state"] == "completed"
    daemon.ask({"op": "pause", "target": {"kind": "queue"}, "by_pid": os.getpid()})
    second = submit(daemon, ["true"], needs=[first])
    held = daemon.ask({"op": "clean", "id": first})
    assert held["result"] == "error" and held["kind"] == "wrong_state"
    assert daemon.ask({"op": "clean", "id": second})["kind"] == "wrong_state"  # not final
    assert daemon.ask({"op": "cancel", "id": second}) == {"result": "ok"}
    assert daemon.ask({"op": "clean", "id": first}) == {"result": "ok"}
    assert not daemon.paths.job_dir(first).exists()
    history = [json.loads(line) for line in daemon.paths.history_file.read_text().splitlines()]
    assert any(h["id"] == first and h["removed_at"] for h in history)
    assert daemon.ask({"op": "status", "id": first})["kind"] == "no_such_job"


def test_an_oom_handed_back_by_the_supervisor_runs_again_under_the_same_id(
        daemon: Daemon, qex_env: Any) -> None:
    script = qex_env.root / "sandbox.json"
    script.write_text(json.dumps({
        "active": True, "backend": "test",
        "attempts": [{"oom_kills": 1, "proven": True, "source": "cgroup"}, {"oom_kills": 0}],
    }))
    marker = qex_env.root / "second-attempt"
    daemon.start(QEX_TEST_SANDBOX=str(script))
    job_id = submit(daemon, ["sh", "-c", f"[ -f {marker} ] && exit 0; : > {marker}; kill -9 $$"],
                    mem=16 * 1024**2)
    record = daemon.ask({"op": "wait", "id": job_id})["status"]
    assert record["state"] == "completed", record
    assert record["mem"] == 32 * 1024**2
    assert record["attempts"] == 2
    states = []
    reader = daemon.client()
    reader.send_line(json.dumps({"op": "events", "since": "start"}).encode())
    reader.read()
    while True:
        event = reader.read()["event"]
        if event["event"] == "job":
            states.append(event["state"])
        if event["event"] == "job" and event["state"] == "completed":
            break
    reader.close()
    assert states.count("queued") == 2  # submitted, then handed back with the raised claim
    assert "larger claim" in daemon.log.read_text()


def test_kill_marks_the_job_and_signals_its_group(daemon: Daemon, qex_env: Any) -> None:
    daemon.start()
    fifo = gate(qex_env.root, "never")
    job_id = submit(daemon, ["sh", "-c", f"read line < {fifo}"])
    wait_until(lambda: daemon.ask({"op": "status", "id": job_id})["status"]["pid"],
               what="the job process")
    queued_kill = daemon.ask({"op": "kill", "id": str(uuid.uuid4()), "signal": 15})
    assert queued_kill["kind"] == "no_such_job"
    assert daemon.ask({"op": "kill", "id": job_id, "signal": 15, "grace_secs": 5}) == {
        "result": "ok"}
    assert (daemon.paths.job_dir(job_id) / "killed-by-user").exists()
    record = daemon.ask({"op": "wait", "id": job_id})["status"]
    assert record["state"] == "killed"
    again = daemon.ask({"op": "kill", "id": job_id, "signal": 15})
    assert again["kind"] == "wrong_state"


def test_a_pause_answers_with_the_jobs_that_go_on_running(daemon: Daemon, qex_env: Any) -> None:
    """The count that `qex pause queue` warns with comes in the pause's answer (it asked
    `info` for it as well), equal to `info`'s; the other pause answers leave it out."""
    daemon.start()
    fifo = gate(qex_env.root, "never")
    job_id = submit(daemon, ["sh", "-c", f"read line < {fifo}"])
    wait_until(lambda: daemon.ask({"op": "status", "id": job_id})["status"]["pid"],
               what="the job process")
    paused = daemon.ask({"op": "pause", "target": {"kind": "queue"}, "by_pid": os.getpid()})
    assert paused["result"] == "pause_state"
    assert paused["jobs_running"] == daemon.ask({"op": "info"})["jobs_running"] == 1
    assert "jobs_running" not in daemon.ask({"op": "pause_state"})
    daemon.ask({"op": "kill", "id": job_id, "signal": 9})
    daemon.ask({"op": "wait", "id": job_id})
    again = daemon.ask({"op": "pause", "target": {"kind": "lock", "name": "x"},
                        "by_pid": os.getpid()})
    assert again["jobs_running"] == 0


def test_a_supervisor_that_dies_fails_its_job_and_stops_the_process(
        daemon: Daemon, qex_env: Any) -> None:
    daemon.start()
    fifo = gate(qex_env.root, "orphan")
    job_id = submit(daemon, ["sh", "-c", f"read line < {fifo}"])
    record = wait_until(
        lambda: (r := daemon.ask({"op": "status", "id": job_id})["status"])["state"] == "running"
        and r, what="the job to run")
    job_pid = record["pid"]
    os.kill(record["supervisor_pid"], signal.SIGKILL)
    done = daemon.ask({"op": "wait", "id": job_id})["status"]
    assert done["state"] == "failed"
    assert "supervisor" in done["error"] and "stopped the job process" in done["error"]
    wait_until(lambda: not _alive(job_pid), what="the orphaned job process to stop")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_max_queue_time_expires_a_waiting_job_on_its_own_timer(daemon: Daemon) -> None:
    daemon.start()
    daemon.ask({"op": "pause", "target": {"kind": "lock", "name": "scanner"},
                "by_pid": os.getpid()})
    job_id = submit(daemon, ["true"], locks=["scanner"], max_queue_time=1)
    record = daemon.ask({"op": "wait", "id": job_id})["status"]
    assert record["state"] == "expired"
    assert "scanner" in record["error"]
    state = daemon.ask({"op": "pause_state"})
    assert [lock["name"] for lock in state["locks"]] == ["scanner"]


def test_claims_are_published_for_other_users_while_a_job_runs(
        daemon: Daemon, qex_env: Any) -> None:
    peers = Path(daemon.env["QEX_PEERS_DIR"])
    os.chmod(peers, 0o1777)
    daemon.start()
    fifo = gate(qex_env.root, "peer")
    job_id = submit(daemon, ["sh", "-c", f"read line < {fifo}; exit 0"], cpu=1,
                    mem=32 * 1024**2)
    assert daemon.proc is not None
    record_path = peers / f"u{os.getuid()}" / f"peer-{daemon.proc.pid}.json"
    wait_until(record_path.exists, what="the peer record")
    published = json.loads(record_path.read_text())
    assert (published["cpu"], published["mem"]) == (1, 32 * 1024**2)
    release(fifo)
    assert daemon.ask({"op": "wait", "id": job_id})["status"]["state"] == "completed"
    wait_until(lambda: not record_path.exists(), what="the peer record to be withdrawn")


def test_a_request_sent_during_a_wait_is_answered_after_it(daemon: Daemon, qex_env: Any) -> None:
    daemon.start()
    fifo = gate(qex_env.root, "pipelined")
    job_id = submit(daemon, ["sh", "-c", f"read line < {fifo}; exit 0"])
    client = daemon.client()
    client.send_line(json.dumps({"op": "wait", "id": job_id}).encode())
    client.send_line(json.dumps({"op": "ping"}).encode())
    release(fifo)
    first = client.read()
    assert first["result"] == "status" and first["status"]["state"] == "completed"
    assert client.read() == {"result": "ok"}
    client.close()


def test_a_budget_edit_reaches_a_waiting_job_without_a_restart(
        daemon: Daemon, qex_env: Any) -> None:
    qex_env.write_config("[budget]\ncpu = 1\n")
    daemon.start()
    fifo = gate(qex_env.root, "holder")
    holder = submit(daemon, ["sh", "-c", f"read line < {fifo}; exit 0"])
    waiting = submit(daemon, ["true"])
    wait_until(lambda: daemon.ask({"op": "status", "id": waiting})["status"]["blocked_reason"],
               what="a reason for the waiting job")
    fresh = qex_env.config.with_name("qex.toml.new")
    fresh.write_text("[budget]\ncpu = 2\n")
    fresh.rename(qex_env.config)
    assert daemon.ask({"op": "wait", "id": waiting})["status"]["state"] == "completed"
    assert daemon.ask({"op": "info"})["cpu_budget"] == 2
    release(fifo)
    assert daemon.ask({"op": "wait", "id": holder})["status"]["state"] == "completed"


def test_a_second_coordinator_for_the_same_state_stops_quietly(daemon: Daemon) -> None:
    daemon.start()
    second = subprocess.run([sys.executable, "-m", "qex", "daemon"], env=daemon.env,
                            capture_output=True, text=True, timeout=30, cwd="/", check=False)
    assert second.returncode == 0
    assert "a different coordinator operates" in second.stdout
    assert daemon.ask({"op": "ping"}) == {"result": "ok"}


def test_a_socket_that_answers_is_left_alone(daemon: Daemon) -> None:
    path = daemon.paths.socket_path
    path.parent.mkdir(parents=True, exist_ok=True)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(str(path))
    other.listen(4)

    def answer_one() -> None:
        conn, _ = other.accept()
        conn.recv(100)
        conn.sendall(b'{"result":"ok"}\n')
        conn.close()

    thread = threading.Thread(target=answer_one, daemon=True)
    thread.start()
    try:
        result = subprocess.run([sys.executable, "-m", "qex", "daemon"], env=daemon.env,
                                capture_output=True, text=True, timeout=30, cwd="/", check=False)
        assert result.returncode == 0
        assert "different coordinator" in result.stdout
        assert path.exists()
    finally:
        thread.join(5)
        other.close()


def test_the_stop_hook_runs_for_a_state_the_coordinator_decides(
        daemon: Daemon, qex_env: Any) -> None:
    heard = qex_env.root / "heard.txt"
    qex_env.write_config(
        "[hooks]\n"
        f'on_stop = ["/bin/sh", "-c", "echo $QEX_STATE $QEX_JOB_ID >> {heard}"]\n'
        'on_stop_states = ["expired", "cancelled"]\n')
    daemon.start()
    daemon.ask({"op": "pause", "target": {"kind": "lock", "name": "dock"}, "by_pid": 1})
    expired = submit(daemon, ["true"], locks=["dock"], max_queue_time=1)
    assert daemon.ask({"op": "wait", "id": expired})["status"]["state"] == "expired"
    cancelled = submit(daemon, ["true"], locks=["dock"])
    assert daemon.ask({"op": "cancel", "id": cancelled}) == {"result": "ok"}
    lines = wait_until(lambda: heard.exists() and len(heard.read_text().splitlines()) == 2
                       and sorted(heard.read_text().splitlines()), what="two hook runs")
    assert lines == sorted([f"expired {expired}", f"cancelled {cancelled}"])
    assert (daemon.paths.job_dir(expired) / "hook.ran").exists()


def test_a_socket_handed_over_by_systemd_is_used_and_never_unlinked(daemon: Daemon) -> None:
    path = daemon.paths.socket_path
    path.parent.mkdir(parents=True, exist_ok=True)
    # What systemd does for a socket unit: bind, listen, pass it as fd 3 with LISTEN_* set,
    # then exec the service in the same process (so LISTEN_PID is the daemon's pid).
    launcher = (
        "import os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"s.bind({str(path)!r})\n"
        "s.listen(8)\n"
        "os.dup2(s.fileno(), 3)\n"
        "os.set_inheritable(3, True)\n"
        "os.environ['LISTEN_FDS'] = '1'\n"
        "os.environ['LISTEN_PID'] = str(os.getpid())\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'qex', 'daemon', '--supervised'])\n"
    )
    with open(daemon.log, "ab") as log:
        daemon.proc = subprocess.Popen([sys.executable, "-c", launcher], env=daemon.env,
                                       stdout=log, stderr=subprocess.STDOUT, cwd="/",
                                       start_new_session=True)
    wait_until(lambda: "systemd passed" in daemon.log.read_text(), what="the coordinator")
    assert daemon.ask({"op": "ping"}) == {"result": "ok"}
    assert daemon.ask({"op": "info"})["pid"] == daemon.proc.pid
    daemon.stop()
    assert path.exists()  # the socket unit owns the file
