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


def test_a_reader_that_left_ends_the_page_quietly(qex_env: Env) -> None:
    """As `qex submit --help | true`: the reader is gone before the page is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([*QEX, "submit", "--help"], env=qex_env.env, cwd=qex_env.root,
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
