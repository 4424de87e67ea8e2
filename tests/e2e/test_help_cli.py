"""`qex help`, `qex schema` and `qex watchers` as a user runs them: the real program."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from typing import Any

Env = Any  # the `qex_env` fixture of tests/e2e/conftest.py


def test_help_alone_lists_the_topics(qex_env: Env) -> None:
    proc = qex_env.run("help")
    assert proc.returncode == 0
    assert "qex help agents" in proc.stdout
    for topic in ("agents", "job-file", "exit-codes", "each-line", "enforcement"):
        assert topic in proc.stdout


def test_help_agents_prints_the_page(qex_env: Env) -> None:
    proc = qex_env.run("help", "agents")
    assert proc.returncode == 0
    assert proc.stdout.startswith("qex for agents\n")
    assert "qex submit --wait" in proc.stdout
    assert proc.stderr == ""


def test_help_alias_and_case(qex_env: Env) -> None:
    assert qex_env.run("help", "OOM").stdout == qex_env.run("help", "enforcement").stdout


def test_an_unknown_topic_exits_2_with_one_sentence(qex_env: Env) -> None:
    proc = qex_env.run("help", "no-such-topic")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("qex: ")
    assert "agents" in lines[0]


def test_help_touches_no_state(qex_env: Env) -> None:
    qex_env.run("help", "config")
    assert not qex_env.state.exists()


def test_schema_status_is_json(qex_env: Env) -> None:
    proc = qex_env.run("schema", "status")
    assert proc.returncode == 0
    document = json.loads(proc.stdout)
    assert document["$schema"].startswith("https://json-schema.org/draft/2020-12")
    assert "state" in document["properties"]


def test_schema_of_an_unknown_format_exits_2(qex_env: Env) -> None:
    proc = qex_env.run("schema", "nope")
    assert proc.returncode == 2
    assert proc.stderr.startswith("qex: ")


def test_watchers_json_runs(qex_env: Env) -> None:
    proc = qex_env.run("watchers", "--json")
    assert proc.returncode in (0, 1)
    found = json.loads(proc.stdout)
    assert isinstance(found, list)
    assert (proc.returncode == 1) == bool(found)


def test_watchers_finds_a_loop_and_not_itself(qex_env: Env) -> None:
    marker = f"qx-watch-{os.getpid()}"
    loop = subprocess.Popen(
        ["bash", "-c", f"while pgrep -f {marker} >/dev/null; do sleep 30; done"],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        proc = qex_env.run("watchers", "--json")
        found = json.loads(proc.stdout)
        mine = [w for w in found if w["pid"] == loop.pid]
        assert proc.returncode == 1
        assert len(mine) == 1, found
        assert mine[0]["kind"] == "process-list-pattern"
        assert "qex wait" in mine[0]["instead"]
        assert not [w for w in found if w["pid"] == os.getpid()]
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()


def test_a_loop_that_runs_watchers_is_not_reported(qex_env: Env) -> None:
    import shlex
    import sys

    script = (f"while true; do {shlex.quote(sys.executable)} -m qex watchers --json; "
              "echo \"shell=$$\"; break; sleep 1; done")
    proc = subprocess.run(["bash", "-c", script], check=False, capture_output=True, text=True,
                          env=qex_env.env, cwd=str(qex_env.root), timeout=60,
                          start_new_session=True)
    body, _, tail = proc.stdout.rpartition("shell=")
    shell_pid = int(tail.strip())
    found = json.loads(body)
    assert shell_pid not in [w["pid"] for w in found]
