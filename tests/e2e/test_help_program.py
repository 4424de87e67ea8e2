"""The help pages from the real `qex` program: the same bytes with and without click, a
reader that has left, and no coordinator started for a page."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import QEX, Env


@pytest.mark.parametrize("args", [(), ("--help",), ("-h",), ("submit", "--help"),
                                  ("pause", "queue", "-h"), ("config", "show", "--help")])
def test_a_page_reads_the_same_without_click(qex_env: Env, args: tuple[str, ...]) -> None:
    fast = qex_env.run(*args)
    slow = qex_env.run(*args, extra_env={"QEX_NO_FAST_PATH": "1"})
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, slow.stdout, "")
    assert slow.returncode == 0
    assert fast.stdout.count("Usage: qex") == 1
    assert qex_env.coordinator_pid() is None


@pytest.mark.parametrize(("args", "extra"), [
    (("submit", "--help"), {}),                            # the page without click
    (("submit", "--help"), {"QEX_NO_FAST_PATH": "1"}),     # the page from click
    (("schema", "status"), {}),                            # a command that only click runs
])
def test_a_reader_that_left_ends_the_output_quietly(qex_env: Env, args: tuple[str, ...],
                                                    extra: dict[str, str]) -> None:
    """As `qex submit --help | true`: the reader is gone before the output is written. Both
    paths end with 0 and say nothing (click alone would exit 1)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([*QEX, *args], env={**qex_env.env, **extra}, cwd=qex_env.root,
                              stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (0, b"")


def test_a_tab_press_still_completes(qex_env: Env) -> None:
    """The completion scripts run `qex` alone with `_QEX_COMPLETE` set: no page for that."""
    tab = qex_env.run(extra_env={"_QEX_COMPLETE": "bash_complete", "COMP_WORDS": "qex subm",
                                 "COMP_CWORD": "1"})
    assert tab.returncode == 0, tab.stderr
    assert "submit" in tab.stdout and "Usage" not in tab.stdout
