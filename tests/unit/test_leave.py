"""`qex.cli.main.leave`: the process ends with the code `sys.exit` would give, its output
flushed, and the interpreter's teardown skipped only when nothing needs it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: The environment of a user's run: output stays in Python's buffers until the end, as it
#: does where qex runs in a pipe, and no coverage hook is loaded (coverage's patch of
#: `os._exit` runs the exit handlers, which is what these tests look for).
BUFFERED = {k: v for k, v in os.environ.items()
            if k != "PYTHONUNBUFFERED" and not k.startswith("COVERAGE_")}


def _run(body: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom qex.cli.main import leave\n" + body
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, check=False, env=BUFFERED)


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), (124, 124), (256, 0),
                                              (-1, 255)])
def test_the_code_is_the_one_sys_exit_gives(code: int | None, status: int) -> None:
    done = _run(f"leave({code!r})")
    assert done.returncode == status
    assert done.returncode == subprocess.run([sys.executable, "-c", f"import sys; sys.exit({code!r})"],
                                             check=False).returncode


def test_buffered_output_is_written() -> None:
    # Both streams hold their text in a buffer (a pipe, not a terminal) until the end.
    done = _run("sys.stdout.write('out' * 1000)\nsys.stderr.write('err')\nleave(5)")
    assert (done.returncode, done.stdout, done.stderr) == (5, "out" * 1000, "err")


def test_the_teardown_skips_the_exit_handlers() -> None:
    # The measure of "skipped": an exit handler that the teardown would run does not run...
    done = _run("import atexit\natexit.register(print, 'teardown ran')\nleave(0)")
    assert done.stdout == ""


def test_a_live_thread_is_joined_by_the_teardown() -> None:
    # ...unless a thread still runs: its work is finished, as a normal exit would.
    done = _run("import threading, time\n"
                "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n"
                "leave(4)")
    assert (done.returncode, done.stdout) == (4, "thread done\n")


@pytest.mark.parametrize("module", ["logging", "multiprocessing", "tempfile"])
def test_a_module_with_exit_handlers_keeps_the_teardown(module: str) -> None:
    done = _run(f"import {module}, atexit\natexit.register(print, 'teardown ran')\nleave(0)")
    assert done.stdout == "teardown ran\n"


def test_a_temporary_directory_is_removed() -> None:
    done = _run("import tempfile\nplace = tempfile.TemporaryDirectory()\nprint(place.name)\n"
                "leave(0)")
    assert done.returncode == 0
    assert not os.path.exists(done.stdout.strip())


def test_a_text_code_is_printed_as_sys_exit_does() -> None:
    done = _run("leave('no such job')")
    assert (done.returncode, done.stderr) == (1, "no such job\n")


def test_an_output_that_cannot_flush_is_reported_as_before() -> None:
    left = "import sys\nfrom qex.cli.main import leave\nsys.stdout.write('x' * 100)\nleave(0)"
    exited = "import sys\nsys.stdout.write('x' * 100)\nsys.exit(0)"
    # stdout is a pipe whose reader is gone: the text waits in the buffer until the flush.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done, plain = (subprocess.run([sys.executable, "-c", body], stdout=write_end,
                                      stderr=subprocess.PIPE, text=True, timeout=30, check=False,
                                      env=BUFFERED)
                       for body in (left, exited))
    finally:
        os.close(write_end)
    assert done.returncode == plain.returncode == 120
    assert "BrokenPipeError" in done.stderr


def test_program_gives_mains_code() -> None:
    done = subprocess.run([sys.executable, "-m", "qex", "wait", "--no-such-option"],
                          capture_output=True, text=True, timeout=60, check=False)
    plain = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom qex.cli.main import main\n"
         "sys.argv = ['qex', 'wait', '--no-such-option']\nmain()"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == plain.returncode != 0
    assert done.stderr == plain.stderr
