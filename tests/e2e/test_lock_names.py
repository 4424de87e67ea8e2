"""Lock names as people write them: paths, names with spaces, `:N` as the count.

A lock is a word that jobs agree on, very often a directory (`target/debug`), so any
printable name is taken as given and shown as given (control bytes escaped), and two names
that differ in one character are two different locks.
"""

from __future__ import annotations

import json

from conftest import Env


def _state(qex_env: Env, job: str) -> str:
    return str(qex_env.record(job)["state"])


def test_paths_spaces_and_colons_are_lock_names(qex_env: Env) -> None:
    qex_env.write_config('[budget]\ncpu = 8\nmem = "90%"\n[system]\nreserve_mem = "64MB"\n')
    gate = qex_env.root / "gate"
    hold = ["sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done"]
    holder = qex_env.submit("--mem", "16MB", "--lock", "target/debug", "--lock", "/srv/data/cache",
                            "--lock", "my build dir", "--", *hold)
    qex_env.wait_for(lambda: _state(qex_env, holder) == "running", what="the holder to run")
    assert sorted(qex_env.record(holder)["locks"]) == ["/srv/data/cache", "my build dir",
                                                       "target/debug"]
    shown = json.loads(qex_env.run("status", holder, "--json", check=True).stdout)
    assert "target/debug" in shown["locks"]

    small = ("--mem", "16MB")
    waiting = qex_env.submit(*small, "--lock", "target/debug", "--", "true")
    spaced = qex_env.submit(*small, "--lock", "my build dir:1", "--", "true")
    other = qex_env.submit(*small, "--lock", "target_debug", "--", "true")  # another lock
    assert qex_env.run("wait", other, timeout=60).returncode == 0
    qex_env.wait_for(lambda: "target/debug" in str(qex_env.record(waiting).get("blocked_reason")),
                     what="the reason to name the lock")
    text = qex_env.run("status", waiting, check=True).stdout
    assert "`target/debug`" in text
    assert _state(qex_env, waiting) == "queued" and _state(qex_env, spaced) == "queued"
    gate.touch()
    assert qex_env.run("wait", holder, waiting, spaced, timeout=60).returncode == 0


def test_a_colon_count_and_bad_lock_names(qex_env: Env) -> None:
    job = qex_env.submit("--lock", "net:1", "--", "true")
    assert qex_env.record(job)["locks"] == ["net"]
    for bad in ("net:", "cpu", "a\tb", "x:0"):
        out = qex_env.run("submit", "--lock", bad, "--", "true")
        assert out.returncode == 121, (bad, out.stderr)
        assert out.stderr.startswith("qex: ") and out.stderr.count("\n") == 1, out.stderr


def test_a_lock_name_with_a_control_byte_is_shown_escaped(qex_env: Env) -> None:
    evil = "deploy\x1b[2J"
    out = qex_env.run("pause", "lock", evil, check=True)
    assert "\x1b" not in out.stdout + out.stderr
    assert "deploy\\x1b[2J" in out.stdout
    listed = qex_env.run("pause", check=True)
    assert "\x1b" not in listed.stdout + listed.stderr
    assert "deploy\\x1b[2J" in listed.stdout + listed.stderr
    qex_env.run("resume", "lock", evil, check=True)
