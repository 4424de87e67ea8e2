"""Shell completion offers the recent jobs from the records, newest first, for every command
that takes an id: status, wait, logs, rerun and clean (every job), kill (running jobs) and
cancel (queued jobs). It reads the disk only and starts no coordinator."""

from __future__ import annotations

from conftest import Env


def _complete(qex_env: Env, *words: str, incomplete: str = "") -> list[str]:
    line = " ".join(["qex", *words, incomplete])
    out = qex_env.run(extra_env={"_QEX_COMPLETE": "bash_complete", "COMP_WORDS": line,
                                 "COMP_CWORD": str(len(words) + 1)}, timeout=60)
    assert out.returncode == 0, out.stderr
    return [item.split(",", 1)[1] for item in out.stdout.splitlines() if "," in item]


def test_ids_and_names_are_offered_after_every_id_command(qex_env: Env) -> None:
    gate = qex_env.root / "gate"
    done = qex_env.submit("--name", "alpha", "--", "true")
    assert qex_env.run("wait", done, timeout=60).returncode == 0
    running = qex_env.submit("--name", "beta", "--", "sh", "-c",
                             f"while [ ! -e {gate} ]; do sleep 0.05; done")
    qex_env.wait_for(lambda: qex_env.record(running)["state"] == "running", what="beta to run")
    qex_env.run("pause", "queue", check=True)
    queued = qex_env.submit("--name", "gamma", "--", "true")
    for command in ("status", "wait", "logs", "rerun", "clean"):
        offered = _complete(qex_env, command)
        assert {done, running, queued, "alpha", "beta", "gamma"} <= set(offered), (command, offered)
        assert offered.index(queued) < offered.index(done), "the newest job comes first"
    assert set(_complete(qex_env, "kill")) == {running, "beta"}
    assert set(_complete(qex_env, "cancel")) == {queued, "gamma"}
    assert _complete(qex_env, "wait", incomplete=done[:6]) == [done]
    gate.touch()
    qex_env.run("resume", "queue", check=True)
