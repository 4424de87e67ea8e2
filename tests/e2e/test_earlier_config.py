"""A config file written for the earlier qex is read with one warning, never refused.

Its `[update]` section (the update check) and its `[enforce] mode` words have no effect
here; every command still works. A name that no qex knows is still refused.
"""

from __future__ import annotations

from conftest import Env

EARLIER = """\
[budget]
cpu = 2
[enforce]
mode = "cooperative"
[update]
check = "7d"
url = "https://example.invalid/releases/latest"
timeout = "5s"
"""


def test_the_earlier_qex_sections_warn_once_and_change_nothing(qex_env: Env) -> None:
    qex_env.write_config(EARLIER)
    submitted = qex_env.run("submit", "--", "true")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    warnings = [line for line in submitted.stderr.splitlines() if "earlier qex" in line]
    assert len(warnings) == 1, submitted.stderr
    assert "[update]" in warnings[0] and "no effect" in warnings[0]
    assert qex_env.run("wait", job, timeout=60).returncode == 0
    shown = qex_env.run("config", "show")
    assert shown.returncode == 0 and "budget:       2 cores" in shown.stdout, shown.stderr
    assert shown.stderr.count("earlier qex") == 1
    assert qex_env.run("status", job, check=True).returncode == 0


def test_an_unknown_name_is_still_refused(qex_env: Env) -> None:
    qex_env.write_config('[update]\nchek = "7d"\n')
    out = qex_env.run("submit", "--", "true")
    assert out.returncode == 121 and "chek" in out.stderr, out.stderr
    qex_env.write_config('[updates]\ncheck = "7d"\n')
    out = qex_env.run("submit", "--", "true")
    assert out.returncode == 121 and "updates" in out.stderr, out.stderr
    assert not (qex_env.state / "jobs").exists() or not any((qex_env.state / "jobs").iterdir())


def test_a_bad_politeness_value_runs_submit_and_rerun_with_the_defaults(qex_env: Env) -> None:
    job = qex_env.submit("--", "true")
    assert qex_env.run("wait", job, timeout=60).returncode == 0
    qex_env.write_config("[politeness]\nnice = 50\n")
    for args in (["submit", "--", "true"], ["rerun", job]):
        out = qex_env.run(*args, timeout=60)
        assert out.returncode == 0, (args, out.stderr)
        notes = [line for line in out.stderr.splitlines() if "politeness" in line]
        assert len(notes) == 1 and "nice" in notes[0] and "default" in notes[0], out.stderr
        new = out.stdout.strip().splitlines()[-1]
        assert qex_env.run("wait", new, timeout=60).returncode == 0
