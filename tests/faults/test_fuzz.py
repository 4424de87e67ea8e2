"""Bounded fuzzing: random lines on the socket, random job files (hypothesis).

The socket case talks to one real coordinator; the job-file case runs the parser in this
process (fast) and, for the nesting that once gave a traceback, the real `qex submit`.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from faultkit import FaultEnv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)
_ops = st.sampled_from(["ping", "info", "list", "status", "wait", "kill", "cancel", "clean",
                        "submit", "pause", "resume", "own_job", "job_changed", "capabilities",
                        "nonsense"])
_message = st.one_of(
    st.builds(lambda op, extra: json.dumps({"op": op, **extra}), _ops,
              st.dictionaries(st.sampled_from(["id", "spec", "pending", "note", "since",
                                               "what", "reason"]), _json, max_size=3)),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    st.integers(1, 5000).map(lambda n: '{"op":"list","x":' + "[" * n),
)


def _ask(sock_path: str, line: str) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(sock_path)
        sock.sendall(line.replace("\n", " ").encode("utf-8", "replace") + b"\n")
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk


def test_random_lines_on_the_socket(fault_env: FaultEnv) -> None:
    fault_env.answers()
    sock_path = str(fault_env.state / "run" / "qex.sock")

    @settings(max_examples=80, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(_message)
    def one(line: str) -> None:
        answer = _ask(sock_path, line)
        for raw in answer.splitlines():
            assert isinstance(json.loads(raw), dict)

    one()
    fault_env.answers()
    fault_env.logs_within_cap()


_fields = st.dictionaries(
    st.sampled_from(["command", "name", "cwd", "timeout", "priority", "env", "resources",
                     "retries", "nice", "tags", "needs", "locks", "max_queue_time", "bogus"]),
    _json, max_size=6)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_fields)
def test_random_job_files_give_one_sentence(fields: dict[str, Any]) -> None:
    from qex.core.jobfile import JobFileError, parse_job_file
    from qex.store.structured import StructuredError, parse_structured

    for name, data in (("job.json", json.dumps(fields)),):
        try:
            parse_job_file(parse_structured(data.encode(), Path(name)), name)
        except (JobFileError, StructuredError, ValueError) as exc:
            assert "\n" not in str(exc).strip() and "Traceback" not in str(exc)


def test_deep_nesting_in_a_job_file_is_121_without_a_traceback(fault_env: FaultEnv) -> None:
    for suffix, text in ((".json", '{"command":["echo"],"env":' + "[" * 100_000),
                         (".toml", 'command = ["echo"]\nenv = ' + "[" * 100_000),
                         (".yaml", "command: [echo]\nenv: " + "[" * 100_000)):
        path = fault_env.root / f"deep{suffix}"
        path.write_text(text)
        proc = fault_env.run("submit", "--job", str(path))
        assert proc.returncode == 121, proc.stderr[-500:]
        assert "Traceback" not in proc.stderr and "nests" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_sizes_and_numbers_no_machine_has_are_refused(fault_env: FaultEnv) -> None:
    path = fault_env.root / "huge.toml"
    path.write_text('command = ["true"]\npriority = 1e308\n')
    assert fault_env.run("submit", "--job", str(path)).returncode == 121
    for args in (("--mem", "999999999999999999999999GB"), ("--priority", "9" * 30),
                 ("--timeout", "99999999999d")):
        proc = fault_env.run("submit", *args, "--", "true")
        assert proc.returncode == 121, (args, proc.stdout, proc.stderr)
    assert fault_env.answers() == []
