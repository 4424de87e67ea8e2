"""The fast path and the click path of the real program give the same results.

Each argument list runs twice, once as users run it and once with `QEX_NO_FAST_PATH=1`
(click only); the exit codes and the output must match (ids masked where a run makes a new
job). Submissions also compare the spec that the coordinator built (`submit_words`) with
the one the click path built in the command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from conftest import QEX, SETTINGS, Env
from support import isolated_env

CLICK_ONLY = {"QEX_NO_FAST_PATH": "1"}
UUID = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|\b[0-9a-f]{8}\b")
#: Fields of a spec that differ between two submissions of the same command line.
PER_SUBMISSION = {"id", "submitted_at"}


def _mask(text: str) -> str:
    return UUID.sub("<id>", text)


def _both(env: Env, *args: str) -> tuple[Any, Any]:
    fast = env.run(*args)
    slow = env.run(*args, extra_env=CLICK_ONLY)
    return fast, slow


def _same(env: Env, *args: str) -> None:
    fast, slow = _both(env, *args)
    assert (fast.returncode, _mask(fast.stdout), _mask(fast.stderr)) == (
        slow.returncode, _mask(slow.stdout), _mask(slow.stderr)), args


def _spec(env: Env, job_id: str) -> dict[str, Any]:
    data = json.loads((env.state / "jobs" / job_id / "spec.json").read_text())
    if isinstance(data.get("env"), dict):
        data["env"].pop("QEX_NO_FAST_PATH", None)  # the switch itself is captured
    return {k: v for k, v in data.items() if k not in PER_SUBMISSION}


def test_read_commands_agree(qex_env: Env) -> None:
    done = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "echo", "hello")
    qex_env.run("wait", done, check=True)
    failed = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sh", "-c",
                            "echo oops >&2; exit 3")
    qex_env.run("wait", failed)
    for args in (
        ["wait", done], ["wait", failed], ["wait", "--json", done], ["wait", "-q", failed],
        ["wait", done, failed], ["wait", "no-such-job"], ["wait", "-q", "--json", done],
        ["wait", "--timeout", "nonsense", done],
        ["status", done], ["status", done, "--json"], ["status", "--wait", failed],
        ["status", "-q", failed], ["status", "no-such-job", "--json"],
        ["status", failed, "--tail", "1"], ["status", done, "--timeout", "1s"],
        ["list"], ["list", "--json"], ["list", "--state", "failed"], ["list", "--state", "x"],
        ["list", "--json", "--state", "failed"], ["list", "--json", "--group", "nope"],
        ["logs", done], ["logs", failed, "--stderr"], ["logs", done, "--json"],
        ["logs", done, "--stdout", "--stderr"], ["logs", done, "--lines", "x"],
        ["logs", done, "--grep", "nope|^hel"], ["logs", done, "--grep", "lo$|zz"],
        ["kill", done], ["kill", "--signal", "NOPE", done], ["cancel", done],
        ["cancel", "no-such-job"], ["status", "--bogus", done], ["wait"],
    ):
        _same(qex_env, *args)


def _same_submission(env: Env, args: list[str]) -> dict[str, Any]:
    """Submit `args` both ways: the same code and output (ids masked), each run a new job,
    and the same spec; the fast run's spec."""
    fast, slow = _both(env, "submit", *args)
    assert (fast.returncode, _mask(fast.stdout), _mask(fast.stderr)) == (
        slow.returncode, _mask(slow.stdout), _mask(slow.stderr)), args
    ids = [UUID.search(p.stdout) for p in (fast, slow)]
    assert all(ids), (args, fast.stderr)
    fast_id, slow_id = (m.group(0) for m in ids if m)
    spec = _spec(env, fast_id)
    assert spec == _spec(env, slow_id), args
    return spec


def test_submissions_agree(qex_env: Env) -> None:
    qex_env.run("submit", "--wait", "--", "true", check=True)  # a coordinator runs
    qex_env.run("pause", "queue", check=True)
    for args in (
        ["--", "true"],
        ["--cpu", "1", "--mem", "64MB", "--name", "nm", "--tag", "a", "--env", "A=1", "--",
         "sh", "-c", "echo $A"],
        ["--priority", "-3", "--retries", "2", "--nice", "5", "--timeout", "1h",
         "--env-capture", "minimal", "--no-limit-env-hints", "--", "true"],
        ["--cwd", "/tmp", "--lock", "l1", "--max-queue-time", "1d", "--", "true"],
        ["--json", "--", "true"],
        ["--id-file", str(qex_env.root / "one.id"), "--", "true"],
        ["--id-file", str(qex_env.root / "two.id"), "--json", "--", "true"],
        ["--id-file", "/no/such/dir/job.id", "--", "true"],
    ):
        _same_submission(qex_env, args)
    for args in (
        ["--cpu", "abc", "--", "true"], ["--mem", "lots", "--", "true"],
        ["--quiet", "--", "true"], ["--", ], ["--cwd", "/no/such/dir", "--", "true"],
        ["--mem", "99999TB", "--", "true"], ["--retries", "-1", "--", "true"],
        ["--wait-timeout", "1s", "--", "true"],
    ):
        _same(qex_env, "submit", *args)


def test_dependency_submissions_agree(qex_env: Env) -> None:
    """`--needs` and `--after` words (ids, starts of ids, names, groups, comma lists): the
    coordinator resolves them on the fast path, the command on the click path, to the same
    spec; the refusals (a word that names nothing: 127; a name of a job that stopped: 121; a
    deleted job's id: its history) read the same, and the fast form imports no framework."""
    done, gone = (qex_env.submit("--name", name, "--", "true") for name in ("donejob", "gone"))
    qex_env.run("wait", done, gone, check=True)
    qex_env.run("clean", gone, check=True)  # its id is only in the history now
    qex_env.run("pause", "queue", check=True)
    build = qex_env.submit("--name", "build", "--", "true")
    lines = qex_env.root / "fan.txt"
    lines.write_text("a\nb\n")
    qex_env.submit("--each-line", str(lines), "--name", "fan", "--", "echo", "{}")
    for _ in range(2):
        qex_env.submit("--name", "twice", "--", "true")
    for args in (
        ["--after", "build", "--", "true"], ["--needs", build[:8], "--", "true"],
        ["--needs", "fan", "--json", "--", "true"], ["--after", f"build,{done}", "--", "true"],
        ["--needs", done, "--after", "fan", "--after", "build", "--", "true"],
        ["--after", " build ", "--name", "x", "--", "true"],
    ):
        spec = _same_submission(qex_env, args)
        assert spec["needs"] or spec["after"], args
    for args in (["--after", "nosuch"], ["--needs", "donejob"], ["--after", "twice"],
                 ["--after", "build,nosuch"], ["--needs", ""]):
        _same(qex_env, "submit", *args, "--", "true")
    # The age of the deleted record is in the sentence, so the two runs are compared without it.
    fast, slow = _both(qex_env, "submit", "--needs", gone, "--", "true")
    assert fast.returncode == slow.returncode == 127
    assert "HAPPENED" in fast.stderr
    assert fast.stderr.split(" ago")[1:] == slow.stderr.split(" ago")[1:]
    assert qex_env.run("submit", "--after", "nosuch", "--", "true").returncode == 127
    assert qex_env.run("submit", "--needs", "donejob", "--", "true").returncode == 121
    assert not _imported(qex_env, "submit", "--after", "build", "--", "true") & _HEAVY


def test_job_file_submissions_agree(qex_env: Env) -> None:
    """`--job FILE`: the coordinator reads the file's text on the fast path, the command on
    the click path, to the same spec (relative paths, the file's own `needs`, options that
    add to it) and the same refusals; what the fast path leaves to the full one (a file that
    is missing, a directory, not UTF-8) reads the same too."""
    qex_env.run("submit", "--wait", "--", "true", check=True)  # a coordinator runs
    qex_env.run("pause", "queue", check=True)
    build = qex_env.submit("--name", "build", "--", "true")
    sub = qex_env.root / "files"
    (sub / "work").mkdir(parents=True)
    (sub / "job.toml").write_text(
        'name = "from-file"\ncommand = ["sh", "-c", "echo $G"]\ncwd = "work"\n'
        'needs = ["build"]\ntags = ["f"]\n[resources]\ncpu = 1\nmem = "64MB"\n'
        '[env]\nG = "hello"\n')
    (sub / "job.yaml").write_text('command: ["true"]\nafter: [build]\npriority: 3\n')
    (sub / "job.json").write_text(json.dumps({"command": ["true"], "name": "j"}))
    (sub / "bad.toml").write_text('command = ["true"]\ncomand = 1\n')
    (sub / "broken.toml").write_text('command = ["true"\n')
    (sub / "twice.toml").write_text('command = ["true"]\n')
    (sub / "pipe.toml").write_text('[[jobs]]\nname = "a"\ncommand = ["true"]\n')
    (sub / "latin.toml").write_bytes(b'command = ["\xe9"]\n')
    for args in (
        ["--job", "files/job.toml"], ["--job", str(sub / "job.yaml"), "--tag", "x"],
        ["--job", "files/job.json", "--json", "--after", build[:8]],
        ["--job", "files/job.toml", "--mem", "32MB", "--name", "over"],
    ):
        spec = _same_submission(qex_env, args)
    assert spec["needs"] == [build]  # the file's own `needs`
    for args in (["--job", "files/bad.toml"], ["--job", "files/broken.toml"],
                 ["--job", "files/twice.toml", "--", "true"], ["--job", "files/pipe.toml"],
                 ["--job", "files/latin.toml"], ["--job", "files/none.toml"],
                 ["--job", "files"], ["--job", "files/job.toml", "--needs", "nosuch"]):
        _same(qex_env, "submit", *args)
    assert not _imported(qex_env, "submit", "--job", "files/job.json") & _HEAVY


def test_a_deduplicated_submission_reads_the_same(qex_env: Env) -> None:
    qex_env.run("pause", "queue", check=True)
    qex_env.run("submit", "--dedupe-key", "k", "--", "true", check=True)
    _same(qex_env, "submit", "--dedupe-key", "k", "--", "true")
    _same(qex_env, "submit", "--dedupe-key", "k", "--json", "--", "true")


def test_a_broken_config_refuses_the_same_way(qex_env: Env) -> None:
    qex_env.run("submit", "--wait", "--", "true", check=True)  # a coordinator runs
    qex_env.write_config("[budget]\ncpu = \n")
    _same(qex_env, "submit", "--", "true")
    fast = qex_env.run("submit", "--", "true")
    assert fast.returncode == 121
    assert not fast.stdout


def test_config_notes_come_first_both_ways(qex_env: Env) -> None:
    qex_env.run("submit", "--wait", "--", "true", check=True)  # a coordinator runs
    qex_env.write_config("[politeness]\nnice = 50\n")
    _same(qex_env, "submit", "--mem", "99999TB", "--", "true")


def test_submit_then_wait_through_the_fast_path(qex_env: Env) -> None:
    job = qex_env.submit("--", "sh", "-c", "exit 7")
    assert qex_env.run("wait", job).returncode == 7
    done = qex_env.run("submit", "--wait", "-q", "--", "sh", "-c", "exit 5")
    assert done.returncode == 5
    assert not done.stdout


AGO = re.compile(r"\d+(\.\d+)?s ago")
#: The time a queued job has waited, in `status`'s text block.
QUEUED_FOR = re.compile(r"queued for \S+")


def _unclocked(text: str) -> str:
    """`text` with ids and the times that grow between two runs masked."""
    return QUEUED_FOR.sub("queued for <t>", AGO.sub("<t>", _mask(text)))


def _same_pair(env: Env, fast_args: list[str], slow_args: list[str]) -> None:
    """The fast run of `fast_args` and the click run of `slow_args` print the same (ids and
    the "1.2s ago" of a pause line masked); for a command that changes a job, each way gets
    a job of its own."""
    fast = env.run(*fast_args)
    slow = env.run(*slow_args, extra_env=CLICK_ONLY)
    assert (fast.returncode, _unclocked(fast.stdout), _unclocked(fast.stderr)) == (
        slow.returncode, _unclocked(slow.stdout), _unclocked(slow.stderr)), fast_args


def test_reads_through_the_wire_agree(qex_env: Env) -> None:
    """The forms that `qex.cli.fastread` answers over the wire, their fall-backs and their
    refusals, on the same state both ways."""
    done = qex_env.submit("--cpu", "1", "--mem", "16MB", "--name", "hi", "--tag", "t1",
                          "--", "echo", "a\x1bb\n", "é")
    qex_env.run("wait", done, check=True)
    failed = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sh", "-c",
                            "echo oops >&2; exit 3")
    qex_env.run("wait", failed)
    for _ in range(2):  # a name that two jobs share names neither: 127 both ways
        qex_env.run("submit", "--cpu", "1", "--mem", "16MB", "--name", "twice", "--", "true",
                    check=True)
    lines = qex_env.root / "fan.txt"
    lines.write_text("a\nb\nc\n")
    group = qex_env.submit("--cpu", "1", "--mem", "16MB", "--each-line", str(lines),
                           "--name", "fan", "--", "sh", "-c", "echo {}; test {} != b")
    qex_env.wait_for(lambda: json.loads(qex_env.run("list", "--state", "active", "--json",
                                                    check=True).stdout) == [],
                     what="every job to stop")
    unknown = "01234567-89ab-4def-8123-456789abcdef"
    for args in (
        ["status", done, "--json"], ["status", "--wait", done, "--json"], ["status", done],
        ["status", failed, "--json"], ["status", failed, "--json", "--no-logs"],
        ["status", "--wait", failed, "--json"], ["status", unknown, "--json"],
        ["status", "--wait", done], ["status", failed], ["status", failed, "--no-logs"],
        ["status", "--wait", failed, "--no-logs"], ["status", "--wait", failed, "--json",
                                                     "--no-logs"], ["list"],
        ["status", done[:8], "--json"], ["status", done.upper(), "--json"],
        ["status", done[:8]], ["status", failed[:8]], ["status", failed[:6], "--json"],
        ["status", "hi"], ["status", "hi", "--json"], ["status", "--wait", "hi"],
        ["wait", "hi"], ["wait", "-q", "hi", failed[:8]], ["logs", "hi"],
        ["logs", "hi", "--json", "--grep", "a"], ["status", "hi", "--tail", "1"],
        ["status", "twice"], ["wait", "twice"], ["logs", "twice"], ["kill", "twice"],
        ["wait", group], ["wait", "fan"], ["wait", "-q", group[:8]], ["wait", "--next", "fan"],
        ["wait", "fan", "hi"], ["wait", "fan-01-a"], ["status", "fan"], ["logs", "fan"],
        ["status", "fan-03-c", "--json"], ["kill", group], ["cancel", "fan"],
        ["kill", done[:8]], ["cancel", failed[:8]], ["kill", "hi"],
        ["list", "--json"], ["kill", done], ["kill", failed], ["cancel", done],
        ["kill", unknown], ["cancel", unknown], ["kill", "--grace", "10s", done],
        ["kill", "--signal", "TERM", done],
    ):
        _same(qex_env, *args)

    # Queued jobs behind a paused queue: a pause line on stderr, a queue reason, a cancel.
    qex_env.run("pause", "queue", "--reason", "testing", check=True)
    queued = [qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "true") for _ in range(4)]
    for args in (["list", "--json"], ["list", "--json", "--state", "queued"],
                 ["status", queued[0], "--json"],
                 ["status", queued[0], "--json", "--no-logs"], ["status", queued[0]]):
        _same_pair(qex_env, args, args)
    _same_pair(qex_env, ["status", queued[0][:8]], ["status", queued[0][:8]])
    _same_pair(qex_env, ["cancel", queued[0][:8]], ["cancel", queued[1][:8]])
    _same_pair(qex_env, ["kill", queued[2][:8]], ["kill", queued[3][:8]])
    qex_env.run("resume", "queue", check=True)

    # Running jobs (one at a time: the budget may hold one): a signal the coordinator sends.
    shown = []
    for extra in ({}, CLICK_ONLY):
        job = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sleep", "60")
        qex_env.wait_for(lambda j=job: qex_env.record(j).get("state") == "running",
                         what="a running job")
        _same(qex_env, "status", job, "--json")
        proc = qex_env.run("kill", job, extra_env=extra)
        shown.append((proc.returncode, _mask(proc.stdout), _mask(proc.stderr)))
        qex_env.run("wait", job)
    assert shown[0] == shown[1]
    _same(qex_env, "list")  # two killed jobs: the signal's name, read from `_signal`


def test_reads_without_a_coordinator_agree(qex_env: Env) -> None:
    """With nobody listening, the fast forms hand over to the full bodies (which read the
    disk); both ways print the same."""
    done = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "echo", "hello")
    qex_env.run("wait", done, check=True)
    qex_env.run("coordinator", "stop", check=True)
    qex_env.wait_for(lambda: qex_env.coordinator_pid() is None, what="the coordinator to stop")
    for args in (["status", done, "--json"], ["status", done],
                 ["status", "--wait", done, "--json"]):
        _same(qex_env, *args)


def _same_bytes(env: Env, *args: str) -> None:
    """As `_same`, byte for byte: a job's output need not be UTF-8."""
    runs = [subprocess.run([*QEX, *args], capture_output=True, timeout=60, cwd=str(env.root),
                           env={**env.env, **extra}) for extra in ({}, CLICK_ONLY)]
    fast, slow = runs
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        slow.returncode, slow.stdout, slow.stderr), args


def test_logs_agree_with_and_without_a_coordinator(qex_env: Env) -> None:
    """`qex logs ID` of a stopped job reads its files on the fast path (any selection, one
    stream, `--json`, `--follow`); the cases it leaves to the full body (an active job, a
    short or odd id, a hook log, mistakes) print the same too."""
    long = qex_env.submit("--", "sh", "-c",
                          "seq 1 700; printf 'bad \\377 byte\\r\\nno end'; echo e1 >&2")
    empty = qex_env.submit("--", "true")
    one_over = qex_env.submit("--", "sh", "-c", "seq 1 501 >&2; exit 4")
    for job in (long, empty, one_over):
        qex_env.run("wait", job)
    qex_env.run("pause", "queue", check=True)
    queued = qex_env.submit("--", "true")
    cases = [
        ["logs", long], ["logs", empty], ["logs", one_over], ["logs", queued],
        ["logs", long.upper()], ["logs", long[:8]], ["logs", "0" * 8 + long[8:]],
        ["logs", one_over[:8]], ["logs", queued[:8]], ["logs", empty[:5]],
        ["logs", long, "--tail", "3"], ["logs", one_over, "--stderr"],
        ["logs", long, "--tail", "0"], ["logs", long, "--head", "2"], ["logs", long, "--all"],
        ["logs", long, "--stdout", "--tail", "1"], ["logs", one_over, "--stderr", "--head", "1"],
        ["logs", empty, "--stdout", "--all"], ["logs", long, "--head", "900"],
        ["logs", long, "--tail", "2", "--head", "2"], ["logs", long, "--stdout", "--stderr"],
        ["logs", long[:8], "--tail", "4", "--stdout"], ["logs", queued, "--tail", "1"],
        ["logs", long, "--lines", "698:702"], ["logs", long, "--grep", "99"],
        ["logs", long, "--grep", "^7.$", "-C", "1", "-n"], ["logs", long, "--grep", "bad"],
        ["logs", long, "--grep", "1", "--max-matches", "3"], ["logs", long, "--json"],
        ["logs", long, "--grep", "1.", "--fixed", "--all"], ["logs", long, "--grep", "(x"],
        ["logs", long, "--json", "--grep", "e1", "--stderr"], ["logs", one_over, "--json"],
        ["logs", long, "--follow"], ["logs", long, "--follow", "--tail", "2", "--grep", "n"],
        ["logs", one_over, "--follow", "--stderr"], ["logs", long, "--follow", "--head", "2"],
        ["logs", long, "--follow", "--json"], ["logs", long, "--context", "1"],
        ["logs", long[:8], "--grep", "5", "--stdout", "-n"], ["logs", empty, "--follow"],
        ["logs", long, "--follow", "-n", "--grep", "e", "-C", "2", "--tail", "3"],
        ["logs", long, "--grep", "^70|end$", "-n"], ["logs", long, "--grep", "^699$|^1$"],
    ]
    for args in cases:
        _same_bytes(qex_env, *args)
    # Plain branches are matched without `re`, with the lines that `re.search` would pick.
    import re

    shown = qex_env.run("logs", long, "--stdout", "--grep", "^69|0$|end$", "--all",
                        check=True).stdout.splitlines()
    written = [str(n) for n in range(1, 701)] + ["no end"]  # the `bad` line matches none
    assert shown == [line for line in written if re.search("^69|0$|end$", line)]
    fast = qex_env.run("logs", one_over)
    assert fast.stdout.startswith("==> stdout <==\n==> stderr <==\n2\n")
    assert "[stderr] 1 earlier line is not shown" in fast.stderr
    qex_env.run("resume", "queue", check=True)
    qex_env.run("wait", queued)
    qex_env.run("coordinator", "stop", check=True)
    qex_env.wait_for(lambda: qex_env.coordinator_pid() is None, what="the coordinator to stop")
    for args in cases[:8]:  # the full body reads the disk both ways
        _same_bytes(qex_env, *args)


# -- no coordinator yet: the fast submit starts it -------------------------------------------

STAMP = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\]")


def _no_coordinator(env: Env) -> None:
    if env.coordinator_pid() is not None:
        env.run("coordinator", "stop", check=True)
    env.wait_for(lambda: env.coordinator_pid() is None, what="the coordinator to stop")


def _cold_both(env: Env, *args: str) -> list[tuple[int, str, str]]:
    """`args` run with no coordinator, the fast way and then the click way."""
    shown = []
    for extra in ({}, CLICK_ONLY):
        _no_coordinator(env)
        proc = env.run(*args, extra_env=extra)
        shown.append((proc.returncode, STAMP.sub("<t>", _mask(proc.stdout)),
                      STAMP.sub("<t>", _mask(proc.stderr))))
    return shown


def test_a_cold_submission_reads_the_same(qex_env: Env) -> None:
    """The fast path starts the coordinator itself (no click) and gets the same answer, and
    the coordinator builds the same spec (the learner is off: each job that ends would
    teach it a claim for the next submission of the same command)."""
    qex_env.write_config("[learn]\nenabled = false\n")
    for args in (["--", "true"], ["--json", "--", "true"],
                 ["--name", "cold", "--env", "A=1", "--", "sh", "-c", "echo $A"]):
        ids = []
        for extra in ({}, CLICK_ONLY):
            _no_coordinator(qex_env)
            proc = qex_env.run("submit", *args, extra_env=extra)
            assert proc.returncode == 0, proc.stderr
            assert qex_env.coordinator_pid() is not None  # this submission started it
            found = UUID.search(proc.stdout)
            assert found, proc.stdout
            ids.append((found.group(0), _mask(proc.stdout), _mask(proc.stderr)))
        (fast_id, *fast_shown), (slow_id, *slow_shown) = ids
        assert fast_shown == slow_shown, args
        assert _spec(qex_env, fast_id) == _spec(qex_env, slow_id), args
    for job in (fast_id, slow_id):
        assert qex_env.run("wait", job).returncode == 0


def test_a_cold_submission_with_a_broken_config_refuses_the_same_way(qex_env: Env) -> None:
    """The fast path leaves the config to the coordinator, which does not start on a broken
    file; the command then says what the click path says before it starts anything."""
    qex_env.write_config("[budget]\ncpu = \n")
    fast, slow = _cold_both(qex_env, "submit", "--", "true")
    assert fast == slow
    assert fast[0] == 121 and not fast[1] and "qex.toml" in fast[2]
    assert qex_env.coordinator_pid() is None


def test_a_coordinator_that_stops_at_once_is_reported_the_same_way(qex_env: Env) -> None:
    qex_env.state.mkdir(parents=True, exist_ok=True)
    (qex_env.state / "jobs").write_text("not a directory\n")
    fast, slow = _cold_both(qex_env, "submit", "--", "true")
    assert fast == slow
    assert fast[0] != 0 and "the coordinator stopped at once with the code 1" in fast[2]


def test_a_wait_on_a_running_job_agrees(qex_env: Env) -> None:
    """`wait` on a job that still runs: the fast form waits on the wire for a short job and
    hands a longer one to the full wait; either way it prints what the click path prints."""
    qex_env.run("submit", "--wait", "--", "true", check=True)
    for command in ("sleep 0.3; exit 3", "sleep 1.5; exit 4"):
        shown = []
        for extra in ({}, CLICK_ONLY):
            job = qex_env.submit("--", "sh", "-c", command)
            qex_env.wait_for(lambda j=job: qex_env.record(j).get("state") == "running",
                             what="a running job")
            proc = qex_env.run("wait", job, extra_env=extra)
            shown.append((proc.returncode, _mask(proc.stdout), _mask(proc.stderr)))
        assert shown[0] == shown[1], command
        assert shown[0][0] in (3, 4)


def _catches_sigterm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    except OSError:
        pass
    return False


def _stopped_waits(env: Env, *, sigint_ignored: bool) -> list[tuple[int, str, str]]:
    """`wait` on a running job, each way, stopped by SIGTERM: its code and lines. With
    `sigint_ignored`, the wait starts as a script starts `qex wait ID &` (SIGINT ignored)
    and first gets a SIGINT, which must not end it. The job runs on until it is killed."""
    env.run("submit", "--wait", "--", "true", check=True)
    shown = []
    for extra in ({}, CLICK_ONLY):
        job = env.submit("--", "sleep", "60")
        env.wait_for(lambda j=job: env.record(j).get("state") == "running",
                     what="a running job")
        argv = [*QEX, "wait", job]
        if sigint_ignored:  # sh ignores SIGINT, and exec keeps that
            argv = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *argv]
        proc = subprocess.Popen(argv, env={**env.env, **extra}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=str(env.root))
        env.wait_for(lambda p=proc: _catches_sigterm(p.pid), what="the wait to begin")
        if sigint_ignored:
            proc.send_signal(signal.SIGINT)
            time.sleep(0.5)
            assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        shown.append((proc.returncode, _mask(out), _mask(err)))
        assert env.record(job)["state"] == "running"
        env.run("kill", job, check=True)
    return shown


def test_a_stopped_wait_on_a_running_job_reads_the_same(qex_env: Env) -> None:
    """SIGTERM while `wait` waits: the wait stops (122, the two lines), the job runs on."""
    shown = _stopped_waits(qex_env, sigint_ignored=False)
    assert shown[0] == shown[1]
    assert shown[0][0] == 122 and "your wait stopped" in shown[0][2]


def test_a_wait_started_with_sigint_ignored_keeps_ignoring_it(qex_env: Env) -> None:
    """A script's background command (`qex wait ID &`) starts with SIGINT ignored, so that
    the Ctrl-C meant for the script does not end it: both ways the wait goes on through a
    SIGINT, and a SIGTERM still stops it (122)."""
    shown = _stopped_waits(qex_env, sigint_ignored=True)
    assert shown[0] == shown[1]
    assert shown[0][0] == 122 and "your wait stopped" in shown[0][2]


def _records(env: Env) -> list[dict[str, Any]]:
    """Every job's record as it is on disk now (a job still being created is left out)."""
    found = []
    for status in (env.state / "jobs").glob("*/status.json"):
        try:
            found.append(json.loads(status.read_text()))
        except (OSError, ValueError):
            continue
    return found


def test_a_quiet_submit_and_wait_agrees(qex_env: Env) -> None:
    """`submit --wait -q`: the fast form waits on the wire for a job that ends plainly within
    a second, and hands a longer job, or an end that is not plain, to the full wait; every
    way gives the code and the one line on stderr that the click path gives."""
    qex_env.run("submit", "--wait", "--", "true", check=True)
    for command in ("exit 0", "exit 6", "sleep 1.5; exit 4", "kill -9 $$", "exit 99"):
        _same(qex_env, "submit", "--wait", "-q", "--", "sh", "-c", command)
    # With an id file: written before the wait, as the click path writes it.
    for extra in ({}, CLICK_ONLY):
        id_file = qex_env.root / f"job-{len(extra)}.id"
        done = qex_env.run("submit", "--wait", "-q", "--id-file", str(id_file), "--", "sh", "-c",
                           "exit 2", extra_env=extra)
        assert done.returncode == 2
        assert id_file.read_text().strip() in done.stderr


def test_a_submit_and_wait_prints_the_same_record(qex_env: Env) -> None:
    """`submit --wait` and `submit --wait --json`: the fast form prints the final record (and
    the line on the job's output) itself when the job ends plainly within a second; the
    record, the excerpts of a failed job's output, the hint and the code are the click
    path's. (The times that grow between two runs, and the ids, are masked; the learner is
    off, so that each run of a command claims what the first one did.)"""
    qex_env.write_config("[learn]\nenabled = false\n")
    qex_env.run("submit", "--wait", "--", "true", check=True)
    commands = ("true", "echo one; echo two", "echo out; echo err >&2; exit 3", "exit 9",
                "sleep 1.5; echo late", "kill -9 $$", "seq 1 300; exit 2")
    for form in ([], ["--json"]):
        for command in commands:
            fast = qex_env.run("submit", "--wait", *form, "--", "sh", "-c", command)
            slow = qex_env.run("submit", "--wait", *form, "--", "sh", "-c", command,
                               extra_env=CLICK_ONLY)
            shown = [(p.returncode, _stable(p.stdout), _unclocked(p.stderr)) for p in (fast, slow)]
            assert shown[0] == shown[1], (form, command)


#: What differs between two runs of one command in a record: its process ids and the usage
#: it measured (as text, and as JSON fields).
_PER_RUN = re.compile(r"(\bpid:\s+)\d+|(\bused:\s+).*|(\"(?:pid|last_pid|supervisor_pid|"
                      r"supervisor_start_token|pid_start_token|sequence|submitted_at|"
                      r"started_at|finished_at|max_rss|cpu_secs)\": )[^,\n]+")


def _stable(text: str) -> str:
    return _PER_RUN.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "<x>",
                        _unclocked(text))


def test_a_quiet_submit_and_wait_in_a_paused_queue_agrees(qex_env: Env) -> None:
    # The answer carries the pause's warning, so the fast form hands it to the full wait;
    # the queue resumes while both wait.
    qex_env.run("submit", "--wait", "--", "true", check=True)
    shown = []
    for extra in ({}, CLICK_ONLY):
        qex_env.run("pause", "queue", "--reason", "test", check=True)
        proc = subprocess.Popen([*QEX, "submit", "--wait", "-q", "--", "sh", "-c", "exit 3"],
                                env={**qex_env.env, **extra}, text=True, cwd=str(qex_env.root),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        qex_env.wait_for(lambda: any(r.get("state") == "queued" for r in _records(qex_env)),
                         what="the job to be queued")
        qex_env.run("resume", "queue", check=True)
        out, err = proc.communicate(timeout=60)
        shown.append((proc.returncode, _mask(out), _mask(err)))
    assert shown[0] == shown[1]
    assert shown[0][0] == 3


def test_a_stopped_quiet_submit_and_wait_reads_the_same(qex_env: Env) -> None:
    """SIGTERM while `submit --wait -q` waits: the wait stops (122), the job runs on."""
    qex_env.run("submit", "--wait", "--", "true", check=True)
    shown = []
    for extra in ({}, CLICK_ONLY):
        before = {r["id"] for r in _records(qex_env)}
        proc = subprocess.Popen([*QEX, "submit", "--wait", "-q", "--", "sleep", "60"],
                                env={**qex_env.env, **extra}, text=True, cwd=str(qex_env.root),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        qex_env.wait_for(lambda old=before: any(r.get("state") == "running" and r["id"] not in old
                                                for r in _records(qex_env)), what="a running job")
        qex_env.wait_for(lambda p=proc: _catches_sigterm(p.pid), what="the wait to begin")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        shown.append((proc.returncode, _mask(out), _mask(err)))
        job = next(r["id"] for r in _records(qex_env) if r["id"] not in before)
        assert qex_env.record(job)["state"] == "running"
        qex_env.run("kill", job, check=True)
    assert shown[0] == shown[1]
    assert shown[0][0] == 122 and "your wait stopped" in shown[0][2]


def _same_in(env: Env, cwd: Any, *args: str) -> None:
    """`_same`, run in the directory `cwd`."""
    fast = env.run(*args, cwd=cwd)
    slow = env.run(*args, cwd=cwd, extra_env=CLICK_ONLY)
    assert (fast.returncode, _mask(fast.stdout), _mask(fast.stderr)) == (
        slow.returncode, _mask(slow.stdout), _mask(slow.stderr)), args


def test_filtered_lists_agree(qex_env: Env) -> None:
    """`list` with its filters (state, tag, group, `--cwd [DIR]`, `--under [DIR]`) filters on
    the fast path as the full body does: the same rows, warnings and refusals."""
    below = qex_env.root / "work" / "deeper"
    below.mkdir(parents=True)
    claim = ("--cpu", "1", "--mem", "16MB")
    qex_env.run("submit", *claim, "--tag", "t1", "--", "true", check=True)
    qex_env.run("submit", *claim, "--tag", "t2", "--", "sh", "-c", "exit 3",
                cwd=below, check=True)
    qex_env.run("submit", *claim, "--tag", "t1", "--tag", "t2", "--", "true",
                cwd=below.parent, check=True)
    lines = qex_env.root / "lines.txt"
    lines.write_text("a\nb\n")
    for _ in range(2):  # two groups of one name: the list warns and shows both
        qex_env.run("submit", *claim, "--each-line", str(lines), "--", "echo", "{}", check=True)
    # Every job stopped, so that both runs of a form list the same rows: a wait on the name
    # of two groups does not cover both (it ran while the second group's job still ran).
    qex_env.wait_for(lambda: json.loads(qex_env.run("list", "--state", "active", "--json",
                                                    check=True).stdout) == [],
                     what="every job to stop")
    for args in (
        ["list", "--tag", "t1"], ["list", "--tag", "t1", "--tag", "t2"], ["list", "--tag", "no"],
        ["list", "--state", "failed"], ["list", "--state", "done", "--tag", "t2", "--json"],
        ["list", "--cwd"], ["list", "--cwd", "--json"], ["list", "--under"],
        ["list", "--under", str(qex_env.root / "work")], ["list", "--cwd", str(below)],
        ["list", "--cwd", "/no/such/dir"], ["list", "--group", "lines"],
        ["list", "--group", "lines", "--json"], ["list", "--group", "no-such-group"],
        ["list", "--state", "finishd"], ["list", "--tag", "t1", "--cwd=" + str(below.parent)],
    ):
        _same(qex_env, *args)
    for args in (["list", "--cwd"], ["list", "--under", "--json"], ["list", "--under", ".."]):
        _same_in(qex_env, below, *args)


def test_waits_on_several_jobs_agree(qex_env: Env) -> None:
    """`wait` on several ids: the fast form prints each result line and gives the first
    code that is not 0, as the full wait does; a queued job, a `--timeout` that runs out
    and a job that runs on go to the full wait."""
    claim = ("--cpu", "1", "--mem", "16MB")
    done = qex_env.submit(*claim, "--", "true")
    failed = qex_env.submit(*claim, "--", "sh", "-c", "exit 3")
    other = qex_env.submit(*claim, "--", "sh", "-c", "exit 5")
    qex_env.run("wait", done, failed, other)
    for args in (
        ["wait", done, failed, other], ["wait", other, failed], ["wait", "-q", failed, done],
        ["wait", done, done, failed], ["wait", "--timeout", "30s", done, other],
        ["wait", "--timeout", "1h30m", done, failed], ["wait", done, failed[:8]],
        ["wait", done, "01234567-89ab-4def-8123-456789abcdef"],
        ["wait", "--timeout", "5x", done, failed], ["wait", done[:8], other[:8]],
        ["wait", done[:8], done, failed[:10]], ["wait", "-q", other[:8], "true"],
        ["wait", done[:3], failed], ["wait", done.upper(), failed],
    ):
        _same(qex_env, *args)
    # Jobs that run: two that end within the fast form's second, one that runs longer, and
    # a limit shorter than a job.
    for limit, pauses, code in (([], ("0.3", "0.6"), 4), ([], ("0.3", "1.8"), 4),
                                (["--timeout", "0.4s"], ("0.3", "1.8"), 124)):
        shown = []
        for extra in ({}, CLICK_ONLY):
            jobs = [qex_env.submit(*claim, "--", "sh", "-c", f"sleep {pause}; exit {n}")
                    for n, pause in zip((0, 4), pauses, strict=True)]
            qex_env.wait_for(lambda js=jobs: all(qex_env.record(j).get("state") != "queued"
                                                 for j in js), what="two started jobs")
            proc = qex_env.run("wait", *limit, jobs[0][:8], jobs[1], extra_env=extra)
            shown.append((proc.returncode, _mask(proc.stdout), _mask(proc.stderr)))
            qex_env.run("wait", *jobs)
        assert shown[0] == shown[1], (limit, pauses)
        assert shown[0][0] == code
    # A queued job: the full wait narrates its reason.
    qex_env.run("pause", "queue", "--reason", "testing", check=True)
    for extra in ({}, CLICK_ONLY):
        queued = qex_env.submit(*claim, "--", "true")
        proc = qex_env.run("wait", "--timeout", "0.5s", done, queued, extra_env=extra)
        assert proc.returncode == 124, proc.stderr
        assert "testing" in proc.stderr
    qex_env.run("resume", "queue", check=True)


def test_a_submit_and_wait_with_a_limit_agrees(qex_env: Env) -> None:
    """`submit --wait --wait-timeout`: the fast form waits on the wire within the limit, and
    a full wait with what is left of it takes over; the codes and lines are the click
    path's, 124 included when the limit runs out (the job goes on)."""
    qex_env.write_config("[learn]\nenabled = false\n")
    qex_env.run("submit", "--wait", "--", "true", check=True)
    for form in (["-q"], ["--json"], []):
        for limit, command in (("10s", "exit 3"), ("0", "exit 2"), ("0.3s", "sleep 2")):
            shown = []
            for extra in ({}, CLICK_ONLY):
                before = {r["id"] for r in _records(qex_env)}
                proc = qex_env.run("submit", "--wait", "--wait-timeout", limit, *form, "--",
                                   "sh", "-c", command, extra_env=extra)
                shown.append((proc.returncode, _stable(proc.stdout), _unclocked(proc.stderr)))
                for job in {r["id"] for r in _records(qex_env)} - before:
                    qex_env.run("kill", job)
                    qex_env.run("wait", job)
            assert shown[0] == shown[1], (form, limit, command)
            assert shown[0][0] == {"exit 3": 3, "exit 2": 2, "sleep 2": 124}[command]


def _outcome(proc: Any) -> tuple[int, str, str]:
    return proc.returncode, _mask(proc.stdout), _mask(proc.stderr)


def _shared_prefix(env: Env, claim: tuple[str, ...]) -> str:
    """The first character of two jobs' ids (a word that names several jobs); submits
    stopped jobs until two ids share it (17 ids always do)."""
    while True:
        firsts = [job["id"][0] for job in _records(env)]
        shared = [c for c in set(firsts) if firsts.count(c) > 1]
        if shared:
            return shared[0]
        env.run("wait", env.submit(*claim, "--", "true"))


def test_stops_of_several_jobs_agree(qex_env: Env) -> None:
    """`cancel` and `kill` with several ids or starts of ids, a job named twice, a stopped
    job among queued ones (refused, 1), a word that names nothing or several jobs (127,
    nothing stopped), running jobs under `--signal` and `--grace`, and the mistakes that
    click words. Each way stops jobs of its own, with the same roles."""
    qex_env.write_config("[budget]\ncpu = 4\n")  # room for two running jobs
    claim = ("--cpu", "1", "--mem", "16MB")
    done = qex_env.submit(*claim, "--", "true")
    failed = qex_env.submit(*claim, "--", "sh", "-c", "exit 3")
    qex_env.run("wait", done, failed)
    unknown = "01234567-89ab-4def-8123-456789abcdef"
    shared = _shared_prefix(qex_env, claim)
    qex_env.run("pause", "queue", "--reason", "testing", check=True)

    def queued_forms(a: str, b: str, c: str) -> list[list[str]]:
        return [["cancel", a, b[:8], a], ["kill", c[:10], done, failed],
                ["cancel", failed, a, b], ["kill", "--signal", "KILL", "--grace", "0", a, b],
                ["cancel", done, done[:8]], ["kill", "--grace", "2m", done, failed[:8]]]

    shown: list[list[tuple[int, str, str]]] = []
    made: list[str] = []
    for extra in ({}, CLICK_ONLY):
        rounds = []
        for form in range(len(queued_forms("a", "b", "c"))):
            jobs = [qex_env.submit(*claim, "--", "true") for _ in range(3)]
            made += jobs
            rounds.append(_outcome(qex_env.run(*queued_forms(*jobs)[form], extra_env=extra)))
        shown.append(rounds)
    qex_env.run("cancel", *made)  # what the forms left queued need not run
    assert shown[0] == shown[1]
    assert [code for code, _, _ in shown[0]] == [0, 1, 1, 1, 1, 1]  # a queued job: no kill
    queued = [qex_env.submit(*claim, "--", "true") for _ in range(2)]
    for args in (["cancel", queued[0], unknown], ["kill", queued[0][:8], "nothing-here"],
                 ["cancel", queued[1], shared], ["kill", shared, queued[0]],
                 ["kill", "--signal", "NOPE", *queued], ["kill", "--signal", "0", queued[0]],
                 ["kill", "--grace", "5x", *queued], ["kill", "--signal", "65", done, failed]):
        _same(qex_env, *args)
    assert {qex_env.record(j)["state"] for j in queued} == {"queued"}  # nothing was stopped
    qex_env.run("cancel", *queued, check=True)
    qex_env.run("resume", "queue", check=True)

    # Running jobs (two at a time): each signal sent, with a stopped job refused among them.
    for options in (["--signal", "TERM"], ["--signal", "9"], ["--grace", "1s"],
                    ["--signal", "sigusr1", "--grace", "1h"]):
        runs = []
        for extra in ({}, CLICK_ONLY):
            jobs = [qex_env.submit(*claim, "--", "sleep", "60") for _ in range(2)]
            qex_env.wait_for(lambda js=jobs: all(qex_env.record(j).get("state") == "running"
                                                 for j in js), what="two running jobs")
            runs.append(_outcome(qex_env.run("kill", *options, jobs[0], done, jobs[1][:8],
                                             extra_env=extra)))
            qex_env.run("wait", *jobs)
        assert runs[0] == runs[1], options
        assert runs[0][0] == 1 and runs[0][1].count("received the signal") == 2, runs[0]


def test_status_excerpts_agree_with_and_without_a_coordinator(qex_env: Env) -> None:
    """`status ID` with `--tail N`, `--head N`, `--all`, `--stdout`, `--stderr`, text and
    JSON, on jobs that completed, failed, wrote nothing or bytes that are not UTF-8; the
    mistakes and the options left to the full body print the same too."""
    claim = ("--cpu", "1", "--mem", "16MB")
    long = qex_env.submit(*claim, "--", "sh", "-c",
                          "seq 1 30; printf 'bad \\377 byte\\r\\nno end'; seq 5 >&2; exit 2")
    done = qex_env.submit(*claim, "--", "sh", "-c", "echo one; echo two >&2")
    empty = qex_env.submit(*claim, "--", "sh", "-c", "exit 7")
    qex_env.run("wait", long, done, empty)
    cases = [["status", long, "--tail", "3"], ["status", long, "--head", "2"],
             ["status", long, "--all"], ["status", long, "--stdout"], ["status", long, "--stderr"],
             ["status", long, "--json", "--tail", "2"], ["status", long, "--json", "--stdout"],
             ["status", long, "--stderr", "--head", "0"], ["status", long, "--tail", "0"],
             ["status", "--wait", long, "--tail", "4"],
             ["status", "--wait", long, "--json", "--stdout", "--head", "1"]]
    for job in (done, empty):
        cases += [["status", job, "--tail", "3"], ["status", job, "--stdout"],
                  ["status", job, "--json", "--all"], ["status", job, "--stderr", "--head", "0"],
                  ["status", "--wait", job, "--json", "--stdout", "--tail", "1"]]
    cases += [["status", long], ["status", long, "--json"], ["status", long[:8], "--tail", "1"],
              ["status", long, "--no-logs", "--tail", "3"], ["status", long, "--tail", "2",
                                                             "--head", "2"],
              ["status", long, "--stdout", "--stderr"], ["status", long, "--tail", "-1"],
              ["status", long, "--lines", "2:3"], ["status", long, "--grep", "1", "--tail", "2"],
              ["status", long, "--tail", "2", "--show-env"], ["status", "-q", long, "--tail", "2"],
              ["status", long, "--json", "--stderr", "--all", "--no-logs"],
              ["status", long, "--grep", "bad", "-C", "1", "-n"], ["status", long, "--grep", "(x"],
              ["status", long, "--json", "--grep", "[0-9]", "--max-matches", "2"],
              ["status", "--wait", long, "--stdout", "--lines", "29:31"]]
    for args in cases:
        _same_bytes(qex_env, *args)
    bad = qex_env.run("status", long, "--grep", "(x")
    assert bad.returncode == 121 and "not a regular expression" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr
    fast = qex_env.run("status", long, "--stdout", "--tail", "2")
    assert fast.stdout.endswith("--- stdout ---\nbad \ufffd byte\nno end\n... 30 earlier "
                                "lines are not shown; use --all, --head N or --tail N to see "
                                "them.\n"), fast.stdout
    qex_env.run("pause", "queue", check=True)
    queued = qex_env.submit(*claim, "--", "true")
    for args in (["status", queued, "--tail", "1"], ["status", queued, "--json", "--stderr",
                                                     "--all"]):
        _same_pair(qex_env, args, args)
    qex_env.run("cancel", queued, check=True)
    qex_env.run("coordinator", "stop", check=True)
    qex_env.wait_for(lambda: qex_env.coordinator_pid() is None, what="the coordinator to stop")
    for args in cases[:8]:  # the full body reads the disk both ways
        _same_bytes(qex_env, *args)


#: What a hot form may import beyond the interpreter's own start-up and qex: the C halves of
#: `socket` and `json` and the like. A pure-Python framework here costs more than the
#: command's own work (`docs/performance.md`).
_HEAVY = {"typing", "re", "enum", "click", "json", "socket", "pathlib", "subprocess",
          "dataclasses", "collections", "functools", "yaml", "psutil"}


def _uncovered(environ: dict[str, str]) -> dict[str, str]:
    """`environ` without coverage's variables: a process started with it is not measured
    (`[tool.coverage.run]` in pyproject.toml)."""
    return {k: v for k, v in environ.items() if not k.startswith(("COVERAGE_", "COV_CORE_"))}


def _imported(env: Env, *args: str, environ: dict[str, str] | None = None) -> set[str]:
    """The modules that one run of `qex ARGS` imports (`-X importtime`, outside coverage;
    `environ`: another environment than `env`'s, as it is)."""
    proc = subprocess.run([*QEX, *args], capture_output=True, text=True, timeout=60,
                          cwd=str(env.root), env={**(environ or _uncovered(env.env)),
                                                  "PYTHONPROFILEIMPORTTIME": "1"})
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_the_repeated_forms_import_no_framework(qex_env: Env) -> None:
    """The forms an agent repeats (waits on several ids and with a limit, a filtered list, a
    bounded `submit --wait`, status with log options, stops of several jobs, refused or
    not) stay on the lean path: no `typing`, `re`, `enum` or click."""
    claim = ("--cpu", "1", "--mem", "16MB")
    jobs = [qex_env.submit(*claim, "--tag", "t", "--name", f"nm{i}", "--", "true")
            for i in range(2)]
    qex_env.run("wait", *jobs, check=True)
    lines = qex_env.root / "fan.txt"
    lines.write_text("a\nb\n")
    group = qex_env.submit(*claim, "--each-line", str(lines), "--name", "fan", "--", "echo", "{}")
    qex_env.run("wait", group, check=True)
    for args in (["wait", *jobs], ["wait", "nm0", "nm1"], ["status", "nm0"],
                 ["wait", group], ["wait", "-q", "fan", jobs[0]], ["wait", "--next", "fan"],
                 ["logs", "nm1", "--tail", "2"], ["status", "--wait", "nm0", "--json"], ["wait", "--timeout", "1m", *jobs], ["wait", "-q", jobs[0]],
                 ["wait", jobs[0][:8], jobs[1][:8]],
                 ["list", "--tag", "t", "--cwd"], ["list", "--state", "done", "--json"],
                 ["submit", "--wait", "-q", "--wait-timeout", "1m", *claim, "--", "true"],
                 ["submit", "--json", "--id-file", str(qex_env.root / "job.id"), *claim, "--",
                  "true"],
                 ["status", jobs[0]], ["logs", jobs[0], "--tail", "5", "--stderr"],
                 ["status", jobs[0], "--tail", "3"], ["status", jobs[0][:8], "--stdout"],
                 ["status", jobs[0], "--json", "--stderr", "--head", "2"],
                 ["logs", jobs[0], "--grep", "x", "--lines", "1:3"], ["logs", jobs[0], "--follow"],
                 ["logs", jobs[0], "--json", "-n", "--grep", "a b"],
                 ["status", jobs[0], "--lines", "1:2", "--grep", "q"],
                 ["logs", jobs[0], "--grep", "e[a-z]+\\d*|^x", "-C", "1"],
                 ["status", jobs[0], "--grep", "[^ ]+ ?done$"],
                 ["logs", jobs[0], "--grep", "^(warn(ing)?|err)[: ]"],
                 ["logs", jobs[0], "--grep", "(?i)ERROR|^X"],
                 ["status", jobs[0], "--grep", "(?i)[A-Z]+ failed$"],
                 ["kill", jobs[0], jobs[1][:8]], ["cancel", jobs[0], jobs[1]],
                 ["kill", "--signal", "9", "--grace", "1s", *jobs],
                 ["status", "fan"], ["status", group, "--json", "--tail", "1"],
                 ["status", "--wait", "fan"], ["kill", group], ["cancel", "fan", jobs[0]]):
        assert not _imported(qex_env, *args) & _HEAVY, args
    qex_env.run("pause", "queue", check=True)
    queued = [qex_env.submit(*claim, "--", "true") for _ in range(4)]
    for args in (["cancel", queued[0], queued[1][:8]],
                 ["kill", "--signal", "KILL", "--grace", "0", queued[2], queued[3]]):
        assert not _imported(qex_env, *args) & _HEAVY, args
    # A queued job has no process to signal: the coordinator refuses the kill.
    assert [qex_env.record(j)["state"] for j in queued] == ["cancelled"] * 2 + ["queued"] * 2


def test_a_submit_writes_its_id_file_before_it_answers(qex_env: Env) -> None:
    """`submit --id-file F` (with and without `--json`) on the fast path: F holds the id it
    prints, mode 0644, with no temp file left beside it."""
    for form in ([], ["--json"]):
        id_file = qex_env.root / "ids" / f"job{len(form)}.id"
        id_file.parent.mkdir(exist_ok=True)
        proc = qex_env.run("submit", *form, "--id-file", str(id_file), "--cpu", "1", "--mem",
                           "16MB", "--", "true", check=True)
        shown = json.loads(proc.stdout)["id"] if form else proc.stdout.strip()
        assert id_file.read_text() == shown + "\n"
        assert id_file.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in (qex_env.root / "ids").iterdir()) == ["job0.id", "job1.id"]


def test_wait_next_agrees(qex_env: Env) -> None:
    """`wait --next`: the fast form answers when a named job has already ended plainly (the
    first such in the order named, the live ones listed to wait on again), and leaves every
    other case to the full wait; both print the same and give the same code."""
    done = qex_env.submit("--", "true")
    failed = qex_env.submit("--", "sh", "-c", "exit 3")
    qex_env.run("wait", done, failed)
    running = qex_env.submit("--", "sleep", "60")
    qex_env.wait_for(lambda: qex_env.record(running).get("state") == "running",
                     what="a running job")
    for args in (["wait", "--next", done, running], ["wait", "--next", running, failed],
                 ["wait", "--next", failed, done], ["wait", "--next", "-q", running, failed],
                 ["wait", "--next", running[:8], done[:8]], ["wait", "--next", done, done],
                 ["wait", "--next", "--json", failed, running],
                 ["wait", "--next", "--timeout", "0.2", running]):
        _same(qex_env, *args)
    assert not _imported(qex_env, "wait", "--next", running, failed) & _HEAVY
    qex_env.run("kill", running, check=True)


def _two_running(env: Env, second: str) -> tuple[str, str]:
    """A job that runs for a minute and one that runs `second` (a shell script)."""
    slow = env.submit("--mem", "16MB", "--", "sleep", "60")
    quick = env.submit("--mem", "16MB", "--", "sh", "-c", second)
    env.wait_for(lambda: {env.record(j).get("state") for j in (slow, quick)} == {"running"},
                 what="two running jobs")
    return slow, quick


def _holds_a_socket(pid: int) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _three_ends(env: Env, extra: dict[str, str], first: list[str], limited: list[str],
                interrupted: list[str]) -> list[tuple[int, str, str]]:
    """The code and the masked output of three waits on live jobs: `first` (which returns
    when a job ends), `limited` (whose `--timeout` runs out) and `interrupted` (stopped by a
    SIGINT once it waits).

    The SIGINT goes 0.3 s after the wait has connected to the coordinator: by then either
    path has looked its words up and holds its stop handlers, whatever the start-up costs
    (coverage triples it) and whether or not the runner started the tests with SIGINT
    ignored (a shell's background job does, and a signal that comes earlier is then lost)."""
    ends = [env.run("wait", *first, extra_env=extra), env.run("wait", *limited, extra_env=extra)]
    proc = subprocess.Popen([*QEX, "wait", *interrupted], env={**env.env, **extra},
                            cwd=str(env.root), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    env.wait_for(lambda: _holds_a_socket(proc.pid), what="the wait to connect")
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return ([(p.returncode, _mask(p.stdout), _mask(p.stderr)) for p in ends]
            + [(proc.returncode, _mask(out), _mask(err))])


def test_wait_next_on_running_jobs_agrees(qex_env: Env) -> None:
    """`wait --next` on jobs that are all running: the lean form waits for each on a
    connection of its own, so the first to end answers even when it is named last; a short
    `--timeout` and a Ctrl-C end it as the full wait ends it."""
    qex_env.run("coordinator", "stop", check=True)
    qex_env.write_config("[budget]\ncpu = 8\n")  # two jobs at once on any machine
    shown = []
    for extra in ({}, CLICK_ONLY):
        slow, quick = _two_running(qex_env, "sleep 0.4; exit 3")
        shown.append(_three_ends(qex_env, extra, ["--next", slow, quick],
                                 ["--next", "--timeout", "0.3", slow], ["--next", slow]))
        assert qex_env.record(slow)["state"] == "running"  # a wait never stops its job
        qex_env.run("kill", slow, check=True)
    assert shown[0] == shown[1]
    assert [code for code, _, _ in shown[0]] == [3, 124, 122], shown[0]
    assert "failed: exit 3" in shown[0][0][1]
    slow, quick = _two_running(qex_env, "sleep 0.4")
    assert not _imported(qex_env, "wait", "--next", slow, quick) & _HEAVY
    assert qex_env.record(quick)["state"] == "completed"
    qex_env.run("kill", slow, check=True)


def test_a_wait_on_a_running_group_agrees(qex_env: Env) -> None:
    """`wait GROUP` and `wait NAME-OF-GROUP` on stages that run: the lean form waits for
    them, and its ends (a stage's result, a short `--timeout`, a Ctrl-C) read as the full
    wait's, whose hints name the group, not its stages."""
    qex_env.run("coordinator", "stop", check=True)
    qex_env.write_config("[budget]\ncpu = 8\n")  # both stages at once on any machine
    lines = qex_env.root / "fan.txt"
    lines.write_text("0.3\n60\n")
    shown = []
    for extra in ({}, CLICK_ONLY):
        group = qex_env.submit("--mem", "16MB", "--each-line", str(lines), "--name", "fan",
                               "--", "sleep", "{}")
        stages = [r["id"] for r in json.loads(qex_env.run("list", "--json", check=True).stdout)
                  if r.get("group") == group]
        # The quick stage may end before the slow one starts (coverage slows every start).
        qex_env.wait_for(lambda s=stages: qex_env.record(s[1]).get("state") == "running"
                         and qex_env.record(s[0]).get("state") in ("running", "completed"),
                         what="the slow stage to run")
        shown.append(_three_ends(qex_env, extra, ["--next", "fan"],
                                 ["--timeout", "0.3", group], ["fan"]))
        qex_env.run("kill", stages[1], check=True)
        qex_env.run("wait", group)
        qex_env.run("clean", "done", check=True)  # the next round's name is the only `fan`
    assert shown[0] == shown[1]
    assert [code for code, _, _ in shown[0]] == [0, 124, 122], shown[0]
    assert "qex wait <id>\n" in shown[0][2][2], shown[0]  # the group's id, not two ids


def _mixed_group(env: Env, lines: Any, name: str) -> tuple[str, list[str]]:
    """A group whose first stage completed, two stages run and the last one waits (each
    stage claims 2 of 4 cores); its id and its stages' ids."""
    group = env.submit("--cpu", "2", "--mem", "16MB", "--each-line", str(lines), "--name", name,
                       "--", "sleep", "{}")
    stages = [r["id"] for r in json.loads(env.run("list", "--json", check=True).stdout)
              if r.get("group") == group]
    env.wait_for(lambda: [env.record(s).get("state") for s in stages]
                 == ["completed", "running", "running", "queued"], what="the stages' states")
    return group, stages


def test_stops_and_status_of_a_group_agree(qex_env: Env) -> None:
    """`status`, `kill` and `cancel` of a group whose stages are in every phase: both ways
    print the same blocks, stop the same stages in the same order (the queued stage leaves
    the queue before any stage is signalled, so the capacity they free cannot start it), and
    import no framework on the lean path."""
    qex_env.run("coordinator", "stop", check=True)
    qex_env.write_config("[budget]\ncpu = 4\n")
    lines = qex_env.root / "mixed.txt"
    lines.write_text("0\n60\n60\n60\n")
    for verb in ("kill", "cancel"):
        shown = []
        for extra in ({}, CLICK_ONLY):
            name = f"{verb}{len(shown)}"
            group, stages = _mixed_group(qex_env, lines, name)
            status = qex_env.run("status", group, "--json", "--no-logs", extra_env=extra)
            documents = json.loads(status.stdout)
            assert [d["id"] for d in documents] == stages, status.stdout
            if not extra:
                assert not _imported(qex_env, "status", name, "--json") & _HEAVY
            proc = qex_env.run(verb, group, extra_env=extra)
            out = proc.stdout.replace(group, "<group>")
            for i, stage in enumerate(stages):
                out = out.replace(stage, f"<stage {i}>")
            shown.append((proc.returncode, out, _mask(proc.stderr)))
            if verb == "cancel":
                qex_env.run("kill", *stages[1:3], check=True)
            qex_env.run("wait", group)
            assert qex_env.record(stages[3])["state"] == "cancelled"
        assert shown[0] == shown[1], verb
        assert shown[0][1].startswith("<stage 3> left the queue\n"
                                      "<stage 0> had already stopped (state `completed`)\n"), shown
    assert shown[0][0] == 1  # `cancel` refuses the running stages
    assert "operates now" in shown[0][2]


def _stage_specs(env: Env, group: str) -> list[dict[str, Any]]:
    """The specs of a group's stages in submission order, less what differs per run."""
    stages = sorted((r for r in json.loads(env.run("list", "--json", check=True).stdout)
                     if r.get("group") == group), key=lambda r: r["sequence"])
    return [{k: v for k, v in _spec(env, r["id"]).items() if k != "group"} for r in stages]


def _same_fanout(env: Env, args: list[str], stdin: str | None = None) -> None:
    """Submit a fan-out both ways: the same code and lines (ids masked), and stages with the
    same specs, when it was accepted."""
    runs = [env.run("submit", *args, input=stdin, extra_env=extra) for extra in ({}, CLICK_ONLY)]
    fast, slow = runs
    assert (fast.returncode, _mask(fast.stdout), _mask(fast.stderr)) == (
        slow.returncode, _mask(slow.stdout), _mask(slow.stderr)), (args, fast.stderr)
    if fast.returncode == 0:
        groups = [p.stdout.strip() for p in runs]
        assert _stage_specs(env, groups[0]) == _stage_specs(env, groups[1]), args


def test_fanout_submissions_agree(qex_env: Env) -> None:
    """`submit --each-line` from a file or the standard input, with names, id files,
    dependencies and a pause warning shared by every stage: the coordinator expands the
    lines on the fast path, the command on the click path, to the same output and specs;
    the refusals read the same, and the fast form imports no framework."""
    done = qex_env.submit("--name", "dep", "--", "true")
    qex_env.run("wait", done, check=True)
    qex_env.run("pause", "queue", "--reason", "testing", check=True)
    root = qex_env.root
    (root / "in.txt").write_text("alpha\n\n# a comment\nbeta gamma\r\ndelta\n")
    (root / "bad.txt").write_bytes(b"ok\n\xff\xfe\n")
    (root / "blank.txt").write_text("\n# only comments\n")
    (root / "two.txt").write_text("x\ny\n")
    claim = ["--cpu", "1", "--mem", "16MB"]
    for args, stdin in (
        ([*claim, "--each-line", "in.txt", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "in.txt", "--name", "nm", "--tag", "t", "--", "sh", "-c",
          "echo {}; echo {{}}"], None),
        (["--each-line", "in.txt", "--id-file", str(root / "ids.env"), "--", "echo", "{}"],
         None),
        ([*claim, "--each-line", "two.txt", "--id-file", str(root / "ids.json"), "--", "echo",
          "pre-{}"], None),
        ([*claim, "--each-line", "-", "--", "echo", "{}"], "one\ntwo\n"),
        ([*claim, "--each-line", "two.txt", "--after", "dep", "--needs", done[:8], "--",
          "echo", "{}"], None),
        ([*claim, "--each-line", "two.txt", "--max-jobs", "2", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "two.txt", "--max-jobs", "1", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "bad.txt", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "blank.txt", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "no-such-file", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "two.txt", "--", "echo"], None),
        ([*claim, "--each-line", "two.txt", "--after", "nothing-here", "--", "echo", "{}"],
         None),
        ([*claim, "--each-line", "two.txt", "--lock", "db=0", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "two.txt", "--wait", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "two.txt", "--json", "--", "echo", "{}"], None),
        ([*claim, "--each-line", "", "--", "echo", "{}"], None),
        (["--mem", "lots", "--each-line", "two.txt", "--", "echo", "{}"], None),
    ):
        _same_fanout(qex_env, args, stdin)
    proc = subprocess.run([*QEX, "submit", "--each-line", "-", "--", "echo", "{}"],
                          input=b"fine\n\xff\n", capture_output=True, env=qex_env.env,
                          cwd=str(root), timeout=60)
    assert proc.returncode == 121 and b"line 2 of the standard input" in proc.stderr
    assert not _imported(qex_env, "submit", *claim, "--each-line", "two.txt", "--", "echo",
                         "{}") & _HEAVY


def test_long_fanouts_agree(qex_env: Env) -> None:
    """A fan-out over the jobs that one request carries: the lean path sends it in
    parts of one group, the click path one job at a time, to the same output (one summary,
    one warning counted, names numbered to four digits) and specs; a limit below the count
    is refused alike, before any job; and the lean form imports no framework."""
    qex_env.run("pause", "queue", "--reason", "testing", check=True)
    root = qex_env.root
    (root / "long.txt").write_text("# a sweep\n" + "".join(
        f"seed {n}\n" + ("\n" if n % 300 == 0 else "") for n in range(1, 1235)))
    claim = ["--cpu", "1", "--mem", "16MB"]
    for args in (
        [*claim, "--each-line", "long.txt", "--max-jobs", "1500", "--tag", "t", "--", "echo",
         "{}"],
        [*claim, "--each-line", "long.txt", "--max-jobs", "1200", "--", "echo", "{}"],
    ):
        _same_fanout(qex_env, args)
    # The lean wire hands an answer slower than `wire.QUICK_ANSWER_SECS` to the full client,
    # with its imports, and a part of 250 jobs is answered once their records are synced: on
    # a busy disk, or in a coordinator measured by coverage (`--cov`), that can take longer.
    # The imports are counted against a coordinator of a state of its own, without coverage,
    # in memory where the machine has a tmpfs.
    shm = Path("/dev/shm")
    lean_root, lean = isolated_env("qxl", SETTINGS, dir=str(shm) if shm.is_dir() else "/tmp")
    lean = _uncovered(lean)
    try:
        paused = subprocess.run([*QEX, "pause", "queue", "--reason", "testing"], env=lean,
                                cwd=str(root), capture_output=True, text=True, timeout=60)
        assert paused.returncode == 0, paused.stderr
        heavy = _imported(qex_env, "submit", *claim, "--each-line", "long.txt", "--max-jobs",
                          "1234", "--", "true", "{}", environ=lean) & _HEAVY
    finally:
        subprocess.run([*QEX, "coordinator", "stop"], env=lean, cwd=str(root),
                       capture_output=True, timeout=60)
        shutil.rmtree(lean_root, ignore_errors=True)
    assert not heavy, heavy


def _pipeline_specs(env: Env, group: str) -> list[dict[str, Any]]:
    """The specs of a pipeline's stages in submission order, their dependencies written as
    stage positions (each run makes ids of its own)."""
    specs = _stage_specs(env, group)
    stages = sorted((r for r in json.loads(env.run("list", "--json", check=True).stdout)
                     if r.get("group") == group), key=lambda r: r["sequence"])
    where = {r["id"]: i for i, r in enumerate(stages)}
    for spec in specs:
        for key in ("needs", "after"):
            spec[key] = [where.get(i, i) for i in spec.get(key) or ()]
    return specs


def test_pipeline_submissions_agree(qex_env: Env) -> None:
    """`qex pipeline FILE` in TOML, YAML and JSON, with a name, id files and `--json`, in a
    paused queue (a warning per stage): the coordinator builds and submits the stages on
    the fast path, the command on the click path, to the same output and specs; the
    refusals read the same, and the fast form imports no framework."""
    qex_env.run("submit", "--wait", "--", "true", check=True)  # a coordinator runs
    qex_env.run("pause", "queue", "--reason", "testing", check=True)
    root = qex_env.root
    (root / "ci.toml").write_text(
        'name = "ci"\n'
        '[[jobs]]\nname = "build"\ncommand = ["echo", "build"]\n'
        '[jobs.resources]\ncpu = 1\nmem = "16MB"\n'
        '[[jobs]]\nname = "test"\ncommand = ["echo", "test"]\nneeds = ["build"]\n'
        '[[jobs]]\nname = "docs"\ncommand = ["echo", "docs"]\nafter = ["test"]\n'
        'cwd = "sub"\ntags = ["d"]\n')
    (root / "sub").mkdir()
    (root / "two.yaml").write_text(
        "jobs:\n  - name: lint\n    command: [echo, lint]\n"
        "  - name: pack\n    command: [echo, pack]\n    needs: [lint]\n")
    (root / "one.json").write_text(json.dumps({"jobs": [{"name": "solo", "command": ["true"]}]}))
    (root / "circle.toml").write_text(
        '[[jobs]]\nname = "a"\ncommand = ["true"]\nneeds = ["b"]\n'
        '[[jobs]]\nname = "b"\ncommand = ["true"]\nneeds = ["a"]\n')
    (root / "unknown.toml").write_text('[[jobs]]\nname = "a"\ncommand = ["true"]\n'
                                       'needs = ["nobody"]\n')
    (root / "broken.toml").write_text('[[jobs]\nname = "a"\n')
    (root / "field.toml").write_text('[[jobs]]\nname = "a"\ncommand = ["true"]\nnice = "x"\n')
    (root / "latin.toml").write_bytes(b'[[jobs]]\nname = "\xe9"\ncommand = ["true"]\n')
    (root / "huge.toml").write_text(
        '[[jobs]]\nname = "a"\ncommand = ["true"]\n[jobs.resources]\nmem = "99999TB"\n')
    for args in (
        ["ci.toml"], ["ci.toml", "--name", "nightly"], ["two.yaml", "--json"],
        ["one.json", "--id-file", str(root / "ids.env")],
        ["ci.toml", "--id-file", str(root / "ids.json"), "--json"],
        ["circle.toml"], ["unknown.toml"], ["broken.toml"], ["field.toml"], ["latin.toml"],
        ["huge.toml"], ["no-such.toml"], ["ci.toml", "--name", "bad name"], [str(root)],
    ):
        runs = [qex_env.run("pipeline", *args, extra_env=extra) for extra in ({}, CLICK_ONLY)]
        fast, slow = runs
        assert (fast.returncode, _mask(fast.stdout), _mask(fast.stderr)) == (
            slow.returncode, _mask(slow.stdout), _mask(slow.stderr)), (args, fast.stderr)
        if fast.returncode == 0:
            groups = [UUID.search(p.stdout) for p in runs]
            assert all(groups), args
            ids = [m.group(0) for m in groups if m]
            assert _pipeline_specs(qex_env, ids[0]) == _pipeline_specs(qex_env, ids[1]), args
    assert not _imported(qex_env, "pipeline", "ci.toml") & _HEAVY


#: `info --json` fields that count the coordinator's wake-ups up to the moment of the answer.
_INFO_MOMENT = {"wakeups"}
#: How long ago something happened, as `info` words it: it moves between two runs.
_AGO = re.compile(r"\b[0-9][0-9.]*(ms|s|m|h|d) ago\b")


def _info_text(text: str) -> str:
    return _AGO.sub("<t> ago", text)


def test_info_agrees_and_stays_lean(qex_env: Env) -> None:
    """`qex info`, which an agent asks to see whether the machine has room, answers on the
    lean path with what the click command prints, with and without a coordinator."""
    done = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "true")
    qex_env.run("wait", done, check=True)
    fast, slow = _both(qex_env, "info", "--json")
    assert fast.returncode == slow.returncode == 0, (fast.stderr, slow.stderr)
    documents = [json.loads(_info_text(run.stdout)) for run in (fast, slow)]
    for document in documents:
        for key in _INFO_MOMENT:
            document.pop(key)
    assert documents[0] == documents[1]
    fast, slow = _both(qex_env, "info")
    assert (fast.returncode, _info_text(fast.stdout), fast.stderr) == (
        slow.returncode, _info_text(slow.stdout), slow.stderr)
    for args in (["info", "--json"], ["info"]):
        assert not _imported(qex_env, *args) & _HEAVY, args
    qex_env.run("coordinator", "stop", check=True)
    qex_env.wait_for(lambda: qex_env.coordinator_pid() is None, what="the coordinator to stop")
    for args in (["info", "--no-start"], ["info", "--no-start", "--json"], ["info", "--bogus"]):
        _same(qex_env, *args)
    assert qex_env.coordinator_pid() is None


def test_reruns_agree_and_stay_lean(qex_env: Env) -> None:
    """`qex rerun`, which an agent runs after a failure, asks the coordinator to submit the
    recorded spec again (`rerun`): the same output and the same new spec as the click path,
    with and without a coordinator, and no framework imported."""
    first = qex_env.submit("--name", "again", "--cpu", "1", "--mem", "16MB", "--", "sh", "-c",
                           "exit 3", "x")
    assert qex_env.run("wait", first).returncode == 3
    fast, slow = _both(qex_env, "rerun", first)
    assert fast.returncode == slow.returncode == 0, (fast.stderr, slow.stderr)
    assert (_mask(fast.stdout), _mask(fast.stderr)) == (_mask(slow.stdout), _mask(slow.stderr))
    assert "runs again as" in fast.stderr
    made = [fast.stdout.strip(), slow.stdout.strip()]
    assert _spec(qex_env, made[0]) == _spec(qex_env, made[1]) == _spec(qex_env, first)
    qex_env.run("wait", *made)
    id_file = qex_env.root / "again.id"
    shown = qex_env.run("rerun", first[:8], "--id-file", str(id_file), check=True).stdout
    assert id_file.read_text() == shown
    assert not _imported(qex_env, "rerun", first) & _HEAVY
    # Every rerun has ended before the refusal below lists them with their states.
    listed = json.loads(qex_env.run("list", "--json", check=True).stdout)
    qex_env.run("wait", *[r["id"] for r in listed if r["name"] == "again"])
    for word in ("again", "nosuchjob", "12345678-1234-1234-1234-123456789012"):
        _same(qex_env, "rerun", word)  # two jobs by that name, none, an unknown id: 127
    qex_env.write_config("[politeness]\nnice = 50\n")
    _same(qex_env, "rerun", first)  # the config's note first, both ways
    qex_env.write_config("[budget]\ncpu = \n")
    fast, slow = _both(qex_env, "rerun", first)
    assert fast.returncode == slow.returncode == 121 and not fast.stdout
    assert _mask(fast.stderr) == _mask(slow.stderr)
    qex_env.write_config("")
    qex_env.run("coordinator", "stop", check=True)
    qex_env.wait_for(lambda: qex_env.coordinator_pid() is None, what="the coordinator to stop")
    cold = qex_env.run("rerun", first)  # nobody listens: the full body starts one
    assert cold.returncode == 0 and "runs again as" in cold.stderr, cold.stderr
    assert _spec(qex_env, cold.stdout.strip()) == _spec(qex_env, first)


_CLOCK = re.compile(r"\b\d\d:\d\d:\d\d\b")


def _events_shown(out: str, as_json: bool) -> list[Any]:
    """The printed events, less the moment of the `stream` line (each reader's own)."""
    if not as_json:
        return [_CLOCK.sub("<clock>", line) for line in out.splitlines()]
    shown = [json.loads(line) for line in out.splitlines()]
    for event in shown:
        if event.get("event") == "stream":
            event.pop("time")
    return shown


def test_events_agree_and_stay_lean(qex_env: Env) -> None:
    """`qex events`, which an agent runs for each change it waits for, reads the stream on
    the lean path: the same lines and codes as the click path, no framework imported."""
    job = qex_env.submit("--name", "evented", "--cpu", "1", "--mem", "16MB", "--", "true")
    qex_env.run("wait", job, check=True)
    for args in (["--json", "--count", "2"], ["--count", "2"], ["--since", "1", "--count", "1"],
                 ["--json", "--since", "now", "--timeout", "0.2"], ["--since", "bogus"],
                 ["--count", "0"], ["--timeout", "soon"]):
        fast, slow = _both(qex_env, "events", *args)
        as_json = "--json" in args
        assert (fast.returncode, _events_shown(fast.stdout, as_json), _mask(fast.stderr)) == (
            slow.returncode, _events_shown(slow.stdout, as_json), _mask(slow.stderr)), args
    assert not _imported(qex_env, "events", "--json", "--count", "1") & _HEAVY
    assert not _imported(qex_env, "events", "--count", "1") & _HEAVY


_PAUSE_MOMENTS = [
    (re.compile(r"\bpid \d+"), "pid <pid>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<clock>"),
    (re.compile(r"\((?:in )?[^()]*(?:ago|left)?\)"), "(<span>)"),
    (re.compile(r'"(since|until|at|by_pid|paused_at|lifts_at)": [0-9.e+]+'), r'"\1": <n>'),
]


def _pause_text(text: str) -> str:
    """Output about pauses, less what differs between two runs: the pausing pid, the clock
    and the times since and until."""
    for pattern, mask in _PAUSE_MOMENTS:
        text = pattern.sub(mask, text)
    return text


def _same_pauses(env: Env, *args: str) -> None:
    fast, slow = _both(env, *args)
    assert (fast.returncode, _pause_text(fast.stdout), _pause_text(fast.stderr)) == (
        slow.returncode, _pause_text(slow.stdout), _pause_text(slow.stderr)), args


def _same_change(env: Env, args: tuple[str, ...], before: tuple[str, ...] | None,
                 undo: tuple[str, ...]) -> None:
    """`qex ARGS` both ways from the same state (`before` run first each time, by a third
    process), undone after each: the same code and output, masked as `_pause_text`."""
    shown = []
    for extra in ({}, CLICK_ONLY):
        if before is not None:
            env.run(*before, check=True)
        run = env.run(*args, extra_env=extra)
        env.run(*undo, check=True)
        shown.append((run.returncode, _pause_text(run.stdout), _pause_text(run.stderr)))
    assert shown[0] == shown[1], args


def test_pauses_agree_and_stay_lean(qex_env: Env) -> None:
    """`qex pause` and `qex resume`, which a harness runs around work that needs the whole
    machine, print on the lean path what the click commands print, and import no framework."""
    for args in (("pause",), ("pause", "--json")):
        _same_pauses(qex_env, *args)
    queue_off, lock_off = ("resume", "queue"), ("resume", "lock", "gpu0")
    _same_change(qex_env, ("pause", "queue", "--reason", "nightly", "--for", "1h"), None,
                 queue_off)
    _same_change(qex_env, ("pause", "queue", "--json"), None, queue_off)
    _same_change(qex_env, ("pause", "queue"), ("pause", "queue", "--reason", "first"),
                 queue_off)  # someone else paused first: the warning names that pid
    _same_change(qex_env, ("pause", "lock", "gpu0", "--reason", "mine"), None, lock_off)
    _same_change(qex_env, ("pause", "lock", "gpu0", "--json", "--for", "30m"), None, lock_off)
    for args in (("resume",), ("resume", "queue", "--json")):
        _same_change(qex_env, args, ("pause", "queue"), queue_off)
    _same_change(qex_env, ("resume", "lock", "gpu0"), ("pause", "lock", "gpu0"), lock_off)
    qex_env.run("pause", "queue", "--reason", "look", check=True)
    qex_env.run("pause", "lock", "gpu0", check=True)
    for args in (("pause",), ("pause", "--json")):
        _same_pauses(qex_env, *args)
    for args in (["pause"], ["pause", "--json"], ["pause", "queue"], ["pause", "lock", "x"],
                 ["resume", "lock", "x"], ["resume", "--json"]):
        assert not _imported(qex_env, *args) & _HEAVY, args
    qex_env.run("resume", "queue", check=True)
    qex_env.run("resume", "lock", "gpu0", check=True)
    for args in (("pause", "queue", "--for", "0"), ("pause", "queue", "--for", "soon"),
                 ("pause", "lock"), ("resume", "lock"), ("pause", "queue", "extra")):
        _same_pauses(qex_env, *args)  # click words each mistake, with its code
    job = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sleep", "30")
    qex_env.wait_for(lambda: qex_env.record(job)["state"] == "running", what="the job to run")
    _same_change(qex_env, ("pause", "queue"), None, queue_off)  # "1 job(s) still run"
    qex_env.run("kill", job, check=True)
    qex_env.run("coordinator", "stop", check=True)
    qex_env.wait_for(lambda: qex_env.coordinator_pid() is None, what="the coordinator to stop")
    for args in (("pause",), ("pause", "--json")):
        _same_pauses(qex_env, *args)  # nobody listens: the pause file, read by the click command
    assert qex_env.coordinator_pid() is None
    _same_change(qex_env, ("pause", "queue"), None, queue_off)  # starts a coordinator


def test_versions_agree_and_stay_lean(qex_env: Env) -> None:
    """`qex version` and `qex --version`, which tools ask first, print on the lean path what
    click prints, with and without a coordinator."""
    qex_env.run("info", check=True)  # a coordinator runs
    for args in (("version",), ("version", "--json"), ("--version",), ("version", "--bogus")):
        _same(qex_env, *args)
    for args in (["version"], ["version", "--json"], ["--version"]):
        assert not _imported(qex_env, *args) & _HEAVY, args
    assert qex_env.run("--version", check=True).stdout.startswith("qex ")
    qex_env.run("coordinator", "stop", check=True)
    qex_env.wait_for(lambda: qex_env.coordinator_pid() is None, what="the coordinator to stop")
    for args in (("version",), ("version", "--json"), ("--version",)):
        _same(qex_env, *args)
    assert qex_env.coordinator_pid() is None


def test_help_pages_agree_and_stay_lean(qex_env: Env) -> None:
    """`qex help [TOPIC]`, which an agent reads at the start of a session, prints the same
    pages both ways without a framework; a word that names no topic is click's to word."""
    for args in (("help",), ("help", "agents"), ("help", "OOM"), ("help", "nosuch"),
                 ("help", "a", "b")):
        _same(qex_env, *args)
    for args in (["help"], ["help", "agents"]):
        assert not _imported(qex_env, *args) & (_HEAVY | {"pathlib"}), args
    assert qex_env.coordinator_pid() is None  # reading the manual starts nothing



_FREED = re.compile(r"freed \S+\.")
_GATE = 'while [ ! -e "$1" ]; do sleep 0.05; done'


def _cleaned_both_ways(env: Env, make: Any, *args: str) -> tuple[Any, Any]:
    """`qex clean ARGS` on each path, each after `make()` made the same jobs anew in an
    emptied state (a clean deletes what it selects, so each path needs jobs of its own).
    `make` returns what to format `args` with. The results, ids and sizes masked."""
    shown = []
    for extra in ({}, CLICK_ONLY):
        values = make()
        proc = env.run("clean", *(arg.format(**values) for arg in args), extra_env=extra)
        shown.append((proc.returncode, _FREED.sub("freed <size>.", _mask(proc.stdout)),
                      _mask(proc.stderr)))
    return shown[0], shown[1]


def test_cleans_agree_and_leave_click(qex_env: Env) -> None:
    """`qex clean`, which the agents' page lists for after their work, runs on the fast path
    over the wire: the same deletions, lines and codes as the click command (the full body),
    and click words every mistake in the options (found before anything is read)."""
    claim = ("--cpu", "1", "--mem", "16MB")
    gates: list[Path] = []

    def emptied() -> None:
        qex_env.run("resume", "queue")
        for gate in gates:
            gate.touch()
        listed = json.loads(qex_env.run("list", "--json", check=True).stdout)
        if listed:
            qex_env.run("wait", *[str(r["id"]) for r in listed])
            qex_env.run("clean", "--all", check=True)

    def finished() -> dict[str, str]:
        emptied()
        ok = qex_env.submit(*claim, "--name", "ok", "--", "true")
        bad = qex_env.submit(*claim, "--name", "bad", "--", "false")
        qex_env.run("wait", ok, bad)
        return {"ok": ok, "bad": bad}

    def held() -> dict[str, str]:
        """Those, a running job, and a queued one that needs `ok`."""
        values = finished()
        gates.append(qex_env.root / f"gate-{len(gates)}")
        live = qex_env.submit(*claim, "--name", "live", "--", "sh", "-c", _GATE, "sh",
                              str(gates[-1]))
        qex_env.wait_for(lambda: qex_env.record(live)["state"] == "running",
                         what="the gated job to run")
        qex_env.run("pause", "queue", check=True)
        qex_env.submit(*claim, "--name", "later", "--after", values["ok"], "--", "true")
        return {**values, "live": live}

    for args in (("--state", "failed"), ("{bad}",), ("{ok}", "{bad}", "--all"), ("done",),
                 ("--state", "done", "--older-than", "1h"), ("--cwd",), ("--auto",)):
        fast, slow = _cleaned_both_ways(qex_env, finished, *args)
        assert fast == slow, args
        assert fast[0] == 0, (args, fast)
    assert "deleted 2 records" in _cleaned_both_ways(qex_env, finished, "--all")[0][1]

    def grouped() -> dict[str, str]:
        values = finished()
        lines = qex_env.root / "fan.txt"
        lines.write_text("a\nb\n")
        group = qex_env.submit(*claim, "--each-line", str(lines), "--name", "fan", "--",
                               "echo", "{}")
        qex_env.run("wait", group)
        return {**values, "group": group}

    for args in (("{group}",), ("fan", "{ok}"), ("{group}", "--state", "failed")):
        fast, slow = _cleaned_both_ways(qex_env, grouped, *args)
        assert fast == slow and fast[0] == 0, (args, fast)
    assert "deleted 3 records" in _cleaned_both_ways(qex_env, grouped, "fan", "{ok}")[0][1]
    fast, slow = _cleaned_both_ways(qex_env, held, "done")
    assert fast == slow and "deleted 1 record" in fast[1] and "1 record stayed" in fast[1], fast
    fast, slow = _cleaned_both_ways(qex_env, held, "{live}")
    assert fast == slow and fast[0] == 1 and fast[2].startswith("qex: "), fast
    emptied()
    for args in ((), ("--auto", "--all"), ("--state", "bogus"), ("--older-than", "soon"),
                 ("nosuchjob",), ("--bogus",)):
        _same(qex_env, "clean", *args)  # click's usage words and codes, 127 for no such job
    qex_env.submit(*claim, "--name", "failed", "--", "true")
    _same(qex_env, "clean", "failed")  # a state word that names a job: refused both ways
    for args in (("--state", "oom"), ("--cwd",), ("--under", "."), ("--auto",),
                 ("--older-than", "1h", "done"), ("--all",)):
        assert not _imported(qex_env, "clean", *args) & _HEAVY, args  # on the wire
    # A word that names nothing goes to the full body, which says so without click.
    assert "click" not in _imported(qex_env, "clean", "--all", "nosuchjob")


def _framework(env: Env) -> set[str]:
    """What a rare form that left click must not import. It may import the pure core's `re`
    and `enum`, a path's `pathlib`, the config parser's `json` and `typing`; on the portable
    platform also `subprocess` (for `ps`) and psutil (the machine's memory, which Linux reads
    from /proc)."""
    portable = env.env.get("QEX_PLATFORM") == "portable"
    return {"click", "yaml"} if portable else {"click", "yaml", "psutil", "subprocess"}


def test_config_show_and_path_agree_and_leave_click(qex_env: Env) -> None:
    """`qex config show` (how a macOS user or an admin sees whether limits hold) and
    `qex config path` print the same on both paths for no file, a file with pools and
    settings, a file with a fault (exit 1, the key named), and a directory in the file's
    place; a usage mistake stays click's."""
    cases = [["config", "show"], ["config", "show", "--json"], ["config", "path"]]
    for args in cases:
        _same(qex_env, *args)
    qex_env.write_config(
        '[budget]\ncpu = 1\nmem = "50%"\n[defaults]\ntimeout = "2h"\n[logs]\nmax_bytes = "1MB"\n'
        '[retry]\non_oom = 0\n[queue]\noversized = "reject"\n'
        '[[pool]]\nname = "gpu"\nsize = "vram"\ndevices = ["24GB", "12GB"]\n'
        'env = "CUDA_VISIBLE_DEVICES"\n[[pool]]\nname = "licence"\ncount = 2\n')
    for args in cases:
        _same(qex_env, *args)
    shown = qex_env.run("config", "show", check=True).stdout
    assert "gpu: 2 device(s), 24GB/12GB vram each" in shown and "licence: 2 unit(s)" in shown
    qex_env.write_config('[budget]\ncpu = "many"\n')
    fast, slow = _both(qex_env, "config", "show")
    assert fast.returncode == 1 and "`[budget] cpu`" in fast.stderr
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout,
                                                           slow.stderr)
    _same(qex_env, "config", "show", "--json")
    qex_env.config.unlink()
    qex_env.config.mkdir()
    for args in ([*cases[2]], [*cases[0]], ["config", "show", "--bogus"], ["config", "path", "x"]):
        _same(qex_env, *args)
    qex_env.config.rmdir()
    for args in cases:
        assert not _imported(qex_env, *args) & _framework(qex_env), args
    assert not _imported(qex_env, "config", "path") & _HEAVY  # the file named without pathlib
    assert "click" in _imported(qex_env, "config", "show", "--bogus")


def _loop_lines(text: str, pid: int) -> list[str]:
    """The four lines `qex watchers` prints for the loop `pid`, its age masked."""
    lines = text.splitlines()
    at = lines.index(next(line for line in lines if line.startswith(f"pid {pid}, ")))
    return [re.sub(r"running for .*", "running for <age>", lines[at]), *lines[at + 1:at + 4]]


def test_watchers_agree_and_leave_click(qex_env: Env) -> None:
    """`qex watchers`, which the agents' page names as the check for loops left behind,
    finds the same loop on both paths with the same words, advice and exit code 1, and
    imports no framework."""
    marker = f"qx-agree-{os.getpid()}"
    loop = subprocess.Popen(
        ["bash", "-c", f"while pgrep -f {marker} >/dev/null; do sleep 30; done"],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        fast, slow = _both(qex_env, "watchers")
        assert fast.returncode == slow.returncode == 1, (fast.stderr, slow.stderr)
        assert _loop_lines(fast.stdout, loop.pid) == _loop_lines(slow.stdout, loop.pid)
        assert "process-list-pattern" in _loop_lines(fast.stdout, loop.pid)[2]
        assert re.sub(r"\d+", "N", fast.stderr) == re.sub(r"\d+", "N", slow.stderr)
        fast, slow = _both(qex_env, "watchers", "--json")
        assert fast.returncode == slow.returncode == 1
        # The age, and on the portable platform the start (now less `ps`'s elapsed time),
        # move between two runs.
        mine = [[{k: v for k, v in w.items() if k not in ("age_secs", "started_at")}
                 for w in json.loads(run.stdout) if w["pid"] == loop.pid] for run in (fast, slow)]
        assert len(mine[0]) == 1 and mine[0] == mine[1]
        for args in (["watchers"], ["watchers", "--json"]):
            assert not _imported(qex_env, *args) & _framework(qex_env), args
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    _same(qex_env, "watchers", "--bogus")


#: The job directories that `_state_made` leaves with no record and with a damaged one.
_ORPHAN = "0" * 8 + "-0000-4000-8000-" + "0" * 12
_DAMAGED = "1" * 8 + "-1111-4111-8111-" + "1" * 12


def _state_made(env: Env) -> dict[str, str]:
    """An emptied state, then two stopped jobs, a queued job that needs one of them (so `gc`
    keeps it), a job directory with no record, old, and one with a damaged record, new."""
    env.run("resume", "queue")
    listed = json.loads(env.run("list", "--json", check=True).stdout)
    if listed:
        env.run("cancel", *[str(r["id"]) for r in listed if r["state"] == "queued"])
        env.run("wait", *[str(r["id"]) for r in listed])
        env.run("clean", "--all", check=True)
    for leftover in (_ORPHAN, _DAMAGED):
        shutil.rmtree(env.state / "jobs" / leftover, ignore_errors=True)
    claim = ("--cpu", "1", "--mem", "16MB")
    ok = env.submit(*claim, "--name", "ok", "--", "true")
    needed = env.submit(*claim, "--name", "needed", "--", "false")
    env.run("wait", ok, needed)
    env.run("pause", "queue", check=True)
    env.submit(*claim, "--name", "after", "--after", needed, "--", "true")
    orphan = env.state / "jobs" / _ORPHAN
    orphan.mkdir()
    (orphan / "stdout.log").write_text("left behind\n")
    for path in (orphan / "stdout.log", orphan):
        os.utime(path, (time.time() - 3 * 86400,) * 2)
    damaged = env.state / "jobs" / _DAMAGED
    damaged.mkdir()
    (damaged / "status.json").write_text("{not json")
    return {"ok": ok, "needed": needed}


_SIZE = re.compile(r"\b\d+(\.\d+)?[KMGT]?B\b|\"(\w+_)?bytes\": \d+")


def test_du_gc_and_schema_agree_and_leave_click(qex_env: Env) -> None:
    """`qex du`, `qex gc` and `qex schema` print the same on both paths (sizes masked where a
    run's own records change them): the usage of a state with a job directory that has no
    record and a damaged record, the deletions of `gc` (each path on the same jobs made
    anew), and click's words for every mistake in the options."""
    _state_made(qex_env)
    for args in (["du"], ["du", "--json"], ["du", "--top", "1"], ["du", "--top", "0", "--json"],
                 ["gc", "--dry-run"], ["gc", "--older-than", "0", "--dry-run", "--json"],
                 ["du", "--top", "-1"], ["gc", "--older-than", "soon"], ["gc", "--bogus"],
                 ["schema"], ["schema", "Status"], ["schema", "event"], ["schema", "nope"],
                 ["schema", "job", "extra"]):
        fast, slow = _both(qex_env, *args)
        assert (fast.returncode, _SIZE.sub("<size>", _mask(fast.stdout)), fast.stderr) == (
            slow.returncode, _SIZE.sub("<size>", _mask(slow.stdout)), slow.stderr), args
    shown = qex_env.run("gc", "--older-than", "0", "--dry-run", check=True).stdout
    assert "would delete 1 record" in shown and "1 directory with no record" in shown, shown
    assert "1 record stays" in shown and "cannot be read" in shown, shown
    gone = []
    for extra in ({}, CLICK_ONLY):
        made = _state_made(qex_env)
        proc = qex_env.run("gc", "--older-than", "0", extra_env=extra)
        gone.append((proc.returncode, _SIZE.sub("<size>", _mask(proc.stdout)), proc.stderr))
        assert not (qex_env.state / "jobs" / made["ok"]).exists()
        assert (qex_env.state / "jobs" / made["needed"]).exists()
    assert gone[0] == gone[1] and gone[0][0] == 0, gone
    for args in (["du"], ["du", "--json"], ["gc", "--dry-run"], ["gc", "--json", "--dry-run"],
                 ["schema", "status"]):
        assert not _imported(qex_env, *args) & _framework(qex_env), args
    for args in (["du", "--top", "-1"], ["gc", "--older-than", "soon"]):
        assert "click" in _imported(qex_env, *args), args


def test_coordinator_stop_and_restart_agree_and_leave_click(qex_env: Env) -> None:
    """`qex coordinator stop` and `restart` say the same on both paths (pids masked), with
    and without a coordinator, and the fast ones import no framework; a running job goes on
    under its supervisor through every stop."""
    gate = qex_env.root / "gate"
    job = qex_env.submit("--cpu", "1", "--mem", "16MB", "--", "sh", "-c", _GATE, "g", str(gate))
    qex_env.wait_for(lambda: qex_env.status(job)["state"] == "running", what="the job to run")
    pids = re.compile(r"pid \d+")
    said = []
    for extra in ({}, CLICK_ONLY):
        for args in (["coordinator", "restart"], ["coordinator", "stop"],
                     ["coordinator", "stop"], ["coordinator", "restart"]):
            proc = qex_env.run(*args, extra_env=extra)
            said.append((proc.returncode, pids.sub("pid <n>", proc.stdout), proc.stderr))
    assert said[:4] == said[4:], said
    assert [s[0] for s in said] == [0] * 8
    assert "nothing to stop" in said[2][1] and "none was running" in said[3][1], said
    assert qex_env.status(job)["state"] == "running"
    for args in (["coordinator", "stop"], ["coordinator", "restart"]):
        assert not _imported(qex_env, *args) & _framework(qex_env), args
    _same(qex_env, "coordinator", "bogus")
    _same(qex_env, "coordinator", "stop", "now")
    gate.touch()
    assert qex_env.run("wait", job).returncode == 0
