"""One rule for every command: a word that names no job, or more than one, is 127.

The message lists the candidates, so the person (or agent) can pick one; no command acts on
a guess.
"""

from __future__ import annotations

from conftest import Env


def _two_runs_of_one_pipeline(qex_env: Env) -> None:
    spec = qex_env.root / "ci.toml"
    spec.write_text('name = "ci"\n[[jobs]]\nname = "build"\ncommand = ["true"]\n'
                    '[[jobs]]\nname = "test"\ncommand = ["true"]\nneeds = ["build"]\n')
    for _ in range(2):
        qex_env.run("pipeline", str(spec), check=True)


def test_a_word_naming_two_groups_is_127_for_every_command(qex_env: Env) -> None:
    _two_runs_of_one_pipeline(qex_env)
    qex_env.run("wait", "ci", timeout=60)  # the word is ambiguous: nothing waits
    for command in (["kill"], ["cancel"], ["clean"], ["status"], ["wait"], ["logs"],
                    ["rerun"], ["status", "--json"]):
        out = qex_env.run(*command, "ci", timeout=60)
        assert out.returncode == 127, (command, out.returncode, out.stderr)
        assert "names 2 groups" in out.stderr, (command, out.stderr)


def test_a_name_of_two_jobs_and_a_group_for_one_job_are_127(qex_env: Env) -> None:
    first = qex_env.submit("--name", "twin", "--", "true")
    second = qex_env.submit("--name", "twin", "--", "true")
    qex_env.run("wait", first, second, check=True, timeout=60)
    for command in (["kill"], ["cancel"], ["clean"], ["status"], ["wait"], ["logs"]):
        out = qex_env.run(*command, "twin", timeout=60)
        assert out.returncode == 127, (command, out.returncode, out.stderr)
        assert first in out.stderr and second in out.stderr, (command, out.stderr)
    nothing = qex_env.run("clean", "nosuchword")
    assert nothing.returncode == 127
