"""The portable paths (macOS, or QEX_PLATFORM=portable) through the real program.

These tests set the switch themselves, so they check the portable behaviour in both runs
of tests/run.sh; the second run also sends every other end-to-end test through it. The
switch reaches the coordinator and the supervisors through the environment of the command
that starts them, which several tests here prove from the records they leave.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import QEX, Env

PORTABLE = {"QEX_PLATFORM": "portable"}
MIB = 1024 * 1024


def test_config_show_says_what_works_without_linux(qex_env: Env) -> None:
    shown = qex_env.run("config", "show", extra_env=PORTABLE, check=True).stdout
    rows = dict(line.split(":", 1) for line in shown.splitlines())
    assert "QEX_PLATFORM=portable (a test aid)" in rows["platform"]
    assert "so enforcement is off" in rows["platform"]
    assert "claims steer the queue" in rows["still works"] and "GPUs" in rows["still works"]
    assert "memory limits" in rows["unavailable"] and "proven OOM" in rows["unavailable"]
    assert "plain process groups" in rows["enforcement"]
    data = json.loads(qex_env.run("config", "show", "--json", extra_env=PORTABLE,
                                  check=True).stdout)
    assert data["platform"]["name"] == "portable" and data["platform"]["forced"] is True
    assert data["enforcement"]["capabilities"]["os"] == "portable"
    assert data["enforcement"]["capabilities"]["fix"].startswith("unset QEX_PLATFORM")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux words")
def test_config_show_on_linux_has_no_portable_rows(qex_env: Env) -> None:
    linux = {"QEX_PLATFORM": ""}
    shown = qex_env.run("config", "show", extra_env=linux, check=True).stdout
    assert "platform:" not in shown and "still works:" not in shown
    data = json.loads(qex_env.run("config", "show", "--json", extra_env=linux,
                                  check=True).stdout)
    assert data["platform"]["implementation"] == "linux" and data["platform"]["summary"] is None


def test_info_reports_the_coordinators_platform(qex_env: Env) -> None:
    # The coordinator that `info` starts inherits the switch from it.
    text = qex_env.run("info", extra_env=PORTABLE, check=True).stdout
    assert "platform: portable — QEX_PLATFORM=portable (a test aid)" in text
    assert "still works: claims steer the queue" in text
    assert "unavailable: memory limits" in text
    data = json.loads(qex_env.run("info", "--json", check=True).stdout)
    assert data["platform"]["implementation"] == "portable"


def test_supervisors_inherit_the_switch_and_start_fresh(qex_env: Env) -> None:
    # The job prints its supervisor's parent: the coordinator itself when the supervisor
    # started fresh, the fork server otherwise.
    done = qex_env.run("submit", "--wait", "--json", "--", "sh", "-c",
                       "ps -o ppid= -p $PPID", extra_env=PORTABLE)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    coordinator = qex_env.coordinator_pid()
    job_id = record["id"]
    out = (qex_env.state / "jobs" / job_id / "stdout.log").read_text().split()
    assert out and int(out[-1]) == coordinator
    # Identity tokens come from `ps` in the supervisor (its record) and in the coordinator
    # (supervisor.pid, which it writes at the start).
    assert str(record["supervisor_start_token"]).startswith("ps:")
    written = (qex_env.state / "jobs" / job_id / "supervisor.pid").read_text().split(None, 1)
    assert written[1].startswith("ps:")
    assert str(record["boot_id"]).startswith("boot-")


@pytest.mark.parametrize("extra", [PORTABLE, {}], ids=["portable", "as-the-run-is"])
def test_the_peak_memory_of_a_job_is_in_bytes(qex_env: Env, extra: dict[str, str]) -> None:
    size = 96 * MIB
    program = f"b = bytearray({size}); b[::4096] = b'x' * len(b[::4096])"
    done = qex_env.run("submit", "--wait", "--json", "--mem", "1GB", "--",
                       sys.executable, "-c", program, extra_env=extra)
    assert done.returncode == 0, done.stderr
    peak = json.loads(done.stdout)["usage"]["max_rss"]
    # ru_maxrss is KiB on Linux and bytes on macOS; a wrong rule is off by 1024.
    assert size <= peak < 32 * size


def test_an_idle_coordinator_notices_a_config_edit(qex_env: Env) -> None:
    qex_env.write_config("[budget]\ncpu = 1\n")
    assert json.loads(qex_env.run("info", "--json", extra_env=PORTABLE,
                                  check=True).stdout)["cpu_budget"] == 1
    log = qex_env.state / "run" / "daemon.log"
    fresh = qex_env.config.with_name("qex.toml.new")
    fresh.write_text("[budget]\ncpu = 2\n")
    fresh.rename(qex_env.config)
    # No command talks to the coordinator from here on: only its own watch can see the edit.
    qex_env.wait_for(lambda: "the configuration file changed" in log.read_text(),
                     what="the coordinator to take the edited config file")
    assert json.loads(qex_env.run("info", "--json", check=True).stdout)["cpu_budget"] == 2


REPO = Path(__file__).resolve().parents[2]
_ENV_LINE = re.compile(r'ENV\["(\w+)"\] = (?:testpath/"([^"]+)"|(testpath)|"([^"]*)")$')
_MKPATH = re.compile(r'\(testpath/"([^"]+)"\)\.mkpath$')
_SHELL = re.compile(r'shell_output\("#\{bin\}/qex ((?:[^"\\]|\\.)*)"(?:, (\d+))?\)')
_MATCH = re.compile(r'assert_match "((?:[^"\\]|\\.)*)", ')


def test_the_homebrew_test_block_runs_a_real_job(qex_env: Env) -> None:
    """The formula's `test do` block, line by line, against the qex of this checkout.

    No Ruby here: the few forms the block uses (ENV settings, mkpath, shell_output with an
    expected exit status, assert_match, the JSON of `info`, Process.kill) are read with
    patterns, and any other line fails the test, so the block cannot grow a step that this
    test skips. testpath is the fixture's root, so its cleanup stops what the block left.
    """
    formula = (REPO / "packaging" / "homebrew" / "qex-queue.rb").read_text()
    start = formula.index("  test do\n")
    block = formula[start: formula.index("\n  end\n", start)].splitlines()[1:]
    testpath = qex_env.root
    env = {k: v for k, v in qex_env.env.items() if not k.startswith(("QEX_", "XDG_"))}
    if "QEX_PLATFORM" in qex_env.env:
        env["QEX_PLATFORM"] = qex_env.env["QEX_PLATFORM"]
    program = " ".join(shlex.quote(part) for part in QEX)
    info: dict[str, Any] = {}
    ran: list[str] = []
    for raw in block:
        line = raw.strip()
        if not line or line.startswith("#") or line == 'require "json"':
            continue
        if found := _ENV_LINE.match(line):
            name, sub, whole, literal = found.groups()
            env[name] = str(testpath / sub) if sub else str(testpath) if whole else literal
            continue
        if found := _MKPATH.match(line):
            (testpath / found.group(1)).mkdir(parents=True, exist_ok=True)
            continue
        if line.startswith("chmod 0700, testpath/"):
            (testpath / line.split('"')[1]).chmod(0o700)
            continue
        if line.startswith('assert_equal "portable", info["platform"]["implementation"]'):
            if sys.platform == "darwin":
                assert info["platform"]["implementation"] == "portable"
            continue
        if line == 'Process.kill("TERM", info["pid"])':
            os.kill(int(info["pid"]), signal.SIGTERM)
            continue
        shell = _SHELL.search(line)
        assert shell is not None, f"a line of the formula's test block this test cannot run: {line}"
        args = shell.group(1).replace('\\"', '"')
        # `#{bin}/qex ARGS` through a shell, as Homebrew runs it (ARGS may redirect).
        proc = subprocess.run(f"{program} {args}", shell=True, capture_output=True, text=True,
                              env=env, timeout=120, cwd=testpath)
        expected = int(shell.group(2) or 0)
        assert proc.returncode == expected, (line, proc.stdout, proc.stderr)
        output = proc.stdout + (proc.stderr if "2>&1" in args else "")
        if match := _MATCH.search(line):
            assert match.group(1).replace('\\"', '"') in output, (line, output)
        if line.startswith("info = JSON.parse("):
            info = json.loads(output)
        ran.append(args)
    assert "submit --wait -- true 2>&1" in ran  # the real job
    assert any(a.startswith("info --json") for a in ran) and info.get("pid")
