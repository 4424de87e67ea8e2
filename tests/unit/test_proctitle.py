"""The name a forked process shows: the stat fields it reads, the bytes it writes, and a
real rewrite seen from outside the process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.platform.proctitle import COMM_BYTES, argv_area, fitted


def _stat_line(comm: str, start: int, end: int) -> str:
    # pid (comm) state, then fields 4..52; fields 48 and 49 are arg_start and arg_end.
    rest = [str(n) for n in range(4, 53)]
    rest[48 - 4], rest[49 - 4] = str(start), str(end)
    return f"4242 ({comm}) S {' '.join(rest)}\n"


@pytest.mark.parametrize("comm", ["python3", "a b", "x) (y", ")", "qex daemon"])
def test_the_argv_area_is_read_after_the_last_parenthesis(comm: str) -> None:
    assert argv_area(_stat_line(comm, 140737488000000, 140737488000060)) == (
        140737488000000, 140737488000060)


@pytest.mark.parametrize("text", ["", "4242 (python3) S 1 2 3", "no parenthesis at all",
                                  _stat_line("p", 0, 0), _stat_line("p", 90, 80)])
def test_a_stat_line_without_an_argv_area_gives_none(text: str) -> None:
    assert argv_area(text) is None


@given(title=st.text(max_size=80), room=st.integers(min_value=2, max_value=200))
def test_a_title_fills_its_area_exactly_and_ends_as_a_rewritten_title(title: str,
                                                                     room: int) -> None:
    """Never longer than the area (the kernel reads no further), the title's bytes first (cut
    when long), then a NUL, and a last byte that is not NUL."""
    data = fitted(title, room)
    encoded = title.encode("utf-8", "replace")
    assert len(data) == room
    assert data[-1:] != b"\0"
    shown = data.split(b"\0", 1)[0]
    assert b"\0" in data[: room - 1]
    assert encoded.startswith(shown) or b"\0" in encoded
    assert len(shown) == min(len(encoded.split(b"\0", 1)[0]), room - 2)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc (Linux)")
def test_a_process_shows_its_new_title_to_ps_and_pgrep() -> None:
    script = ("import sys, time; from qex.platform.proctitle import set_title; "
              "print(set_title('qex daemon', 'qex daemon here now'), flush=True); "
              "sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", script, "with", "some", "arguments"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "True"
        with open(f"/proc/{child.pid}/cmdline", "rb") as handle:
            assert handle.read() == b"qex daemon\0"
        with open(f"/proc/{child.pid}/comm") as handle:
            assert handle.read().strip() == "qex-daemon-here-now"[:COMM_BYTES]
        with open(f"/proc/{child.pid}/stat") as handle:
            assert handle.read().split()[1] == "(qex-daemon-here)"  # 15 bytes, no space
    finally:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()
