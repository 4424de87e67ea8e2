"""Monitor-loop detection is pure: plain command lines in, kinds and advice out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.core.watchers import (
    Kind,
    ProcessRow,
    ancestry,
    classify,
    find_watchers,
    instead,
    is_monitor,
    why,
)
from qex.platform import proclist
from qex.platform.proclist import parse_etime, parse_ps


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("bash -c while pgrep -f train.py; do sleep 60; done", Kind.PROCESS_PATTERN),
        ("sh -c until ! ps aux | grep -q solver; do sleep 5; done", Kind.PROCESS_PATTERN),
        ("bash -c while pidof make >/dev/null; do sleep 10; done", Kind.PROCESS_PATTERN),
        ('bash -c while [ "$(ps -eo args | grep -c trainer)" -gt 0 ]; do sleep 300; done',
         Kind.PROCESS_COUNT),
        ("bash -c while [ $(pgrep -f job | wc -l) -gt 1 ]; do sleep 9; done",
         Kind.PROCESS_COUNT),
        ("bash -c while [ $(pgrep --count fit) != 0 ]; do sleep 9; done", Kind.PROCESS_COUNT),
        ("bash -c while ssh gpu1 pgrep -f fit; do sleep 60; done", Kind.REMOTE_PROCESS_LIST),
        ("bash -c while ssh box 'ps aux | grep -c x'; do sleep 60; done",
         Kind.REMOTE_PROCESS_LIST),
        ("bash -c until grep -q FINISHED out.log; do sleep 60; done", Kind.LOG_LINE),
        ("bash -c while ! tail -n1 run.log | grep -q ok; do sleep 2; done", Kind.LOG_LINE),
        ("bash -c until [ -f done.flag ]; do sleep 30; done", Kind.FILE_TEST),
        ("bash -c while [ ! -e /tmp/lock ]; do sleep 1; done", Kind.FILE_TEST),
        ("sh -c until test -f out/result.json; do sleep 5; done", Kind.FILE_TEST),
        ("bash -c while true; do curl -s http://x/health && break; sleep 5; done",
         Kind.UNKNOWN),
    ],
)
def test_classify(command: str, kind: Kind) -> None:
    assert is_monitor(command)
    assert classify(command) == kind


@pytest.mark.parametrize(
    "command",
    [
        "sleep 60",                                   # a sleep, no loop
        "bash -c for f in *.csv; do gzip $f; done",   # a loop, no sleep
        "python train.py --format json --sleepy",     # neither word as a command
        "/usr/bin/python3 -m http.server",
        "vim while.txt",
    ],
)
def test_not_a_monitor(command: str) -> None:
    assert not is_monitor(command)


def test_words_inside_other_words_do_not_count() -> None:
    # `https` holds `ps`, `stepsize` holds `ps`; neither is the ps program.
    assert classify("bash -c while curl https://x; do sleep 5; done") == Kind.UNKNOWN
    assert classify("bash -c while ./go --stepsize 2; do sleep 5; done") == Kind.UNKNOWN
    # A full path to the program still counts.
    assert classify("bash -c while /usr/bin/pgrep x; do sleep 5; done") == Kind.PROCESS_PATTERN


@pytest.mark.parametrize("kind", list(Kind))
def test_every_kind_has_a_reason_and_points_at_qex_wait(kind: Kind) -> None:
    assert why(kind)
    assert "qex wait" in instead(kind)


def _row(pid: int, ppid: int, command: str, started: float | None = 100.0,
         pgid: int | None = None) -> ProcessRow:
    return ProcessRow(pid=pid, ppid=ppid, pgid=pid if pgid is None else pgid,
                      started_at=started, command=command)


LOOP = "bash -c while pgrep -f x; do sleep 60; done"


def test_find_excludes_itself_its_ancestors_its_group_and_other_watchers() -> None:
    rows = [
        _row(1, 0, "/sbin/init"),
        _row(10, 1, "bash -c while true; do qex watchers; sleep 5; done", started=50),
        _row(11, 10, "python -m qex watchers", pgid=11),
        _row(12, 10, "bash -c while sleep 1; do :; done | cat", pgid=11),   # same group
        _row(20, 1, "bash -c while true; do qex watchers --json; sleep 9; done"),
        _row(30, 1, LOOP, started=300.0),
        _row(31, 1, "bash -c until [ -f ok ]; do sleep 1; done", started=200.0),
        _row(32, 1, "bash -c until grep -q x y.log; do sleep 1; done", started=None),
    ]
    found = find_watchers(rows, self_pid=11)
    assert [w.pid for w in found] == [31, 30, 32]   # oldest first, unknown age last
    assert [w.kind for w in found] == [Kind.FILE_TEST, Kind.PROCESS_PATTERN, Kind.LOG_LINE]


def test_find_reports_age_and_advice_as_data() -> None:
    found = find_watchers([_row(30, 1, LOOP, started=100.0)], self_pid=999)
    data = found[0].to_dict(now=160.0)
    assert data["age_secs"] == 60.0
    assert data["kind"] == "process-list-pattern"
    assert "qex wait" in str(data["instead"])
    assert found[0].to_dict(now=50.0)["age_secs"] == 0.0


def test_ancestry_survives_a_loop_in_the_table() -> None:
    assert ancestry(3, {3: 2, 2: 3}) == {2, 3}
    assert ancestry(5, {5: 4, 4: 1, 1: 0}) == {5, 4, 1}


@given(st.lists(st.tuples(st.integers(2, 50), st.integers(0, 50), st.booleans(),
                          st.none() | st.floats(0, 1e9)), max_size=30))
def test_find_never_returns_self_or_an_ancestor_and_is_sorted(
    spec: list[tuple[int, int, bool, float | None]],
) -> None:
    rows = {}
    for pid, ppid, loop, started in spec:
        rows[pid] = _row(pid, ppid, LOOP if loop else "cat", started=started)
    rows[1] = _row(1, 0, LOOP)
    table = list(rows.values())
    self_pid = table[0].pid
    found = find_watchers(table, self_pid=self_pid)
    parents = {r.pid: r.ppid for r in table}
    excluded = ancestry(self_pid, parents)
    assert not {w.pid for w in found} & excluded
    keys = [(w.started_at is None, w.started_at or 0.0, w.pid) for w in found]
    assert keys == sorted(keys)
    assert all(is_monitor(w.command) for w in found)


# --- the ps parser used on macOS (pure as well) ----------------------------------------------


def test_parse_etime() -> None:
    assert parse_etime("05") == 5
    assert parse_etime("01:05") == 65
    assert parse_etime("2:01:05") == 7265
    assert parse_etime("3-02:01:05") == 3 * 86400 + 7265
    assert parse_etime("x") is None
    assert parse_etime("1:2:3:4") is None


def test_parse_ps() -> None:
    output = (
        "  1     0     1   10-00:00:00 /sbin/launchd\n"
        "500     1   500        01:40 bash -c while pgrep x; do sleep 5; done\n"
        "garbage line\n"
    )
    rows = parse_ps(output, now=1000.0)
    assert [(r.pid, r.ppid, r.pgid) for r in rows] == [(1, 0, 1), (500, 1, 500)]
    assert rows[1].started_at == 900.0
    assert rows[1].command == "bash -c while pgrep x; do sleep 5; done"


def _proc_entry(root: Path, pid: int, cmdline: bytes, stat: str | None) -> None:
    entry = root / str(pid)
    entry.mkdir()
    (entry / "cmdline").write_bytes(cmdline)
    if stat is not None:
        (entry / "stat").write_text(stat)


def _stat(pid: int, name: str, ppid: int, pgid: int, start_ticks: int) -> str:
    # Fields after the name: state, ppid, pgrp, then 16 more before starttime (the 22nd).
    return f"{pid} ({name}) S {ppid} {pgid} " + " ".join(["0"] * 16) + f" {start_ticks} 0 0\n"


def test_listing_reads_a_proc_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The /proc reader: the argument vector joined by spaces, the parent and group from
    after the LAST `)` of the name, the start from the boot time and the clock ticks; kernel
    threads (no command line), half-gone entries and other names left out."""
    monkeypatch.setattr(proclist.host, "linux", lambda *_: True)
    (tmp_path / "stat").write_text("cpu 1 2 3\nbtime 1000\n")
    ticks = os.sysconf("SC_CLK_TCK") or 100
    _proc_entry(tmp_path, 42, b"bash\0-c\0while true; do sleep 1; done\0",
                _stat(42, "odd) name (x", 7, 40, 5 * ticks))
    _proc_entry(tmp_path, 2, b"", _stat(2, "kthreadd", 0, 0, 1))
    _proc_entry(tmp_path, 99, b"gone\0", None)
    _proc_entry(tmp_path, 77, b"short\0", "77 (short) S 1 1\n")
    (tmp_path / "self").mkdir()
    rows = proclist.list_processes(str(tmp_path))
    assert rows == [ProcessRow(pid=42, ppid=7, pgid=40, started_at=1005.0,
                               command="bash -c while true; do sleep 1; done")]


def test_listing_finds_this_process() -> None:
    """Against the real /proc: this process with its parent and group, started after boot
    and not in the future."""
    import time

    me = {row.pid: row for row in proclist.list_processes()}[os.getpid()]
    assert (me.ppid, me.pgid) == (os.getppid(), os.getpgid(0))
    assert me.started_at is not None and me.started_at <= time.time()
    assert "pytest" in me.command or "python" in me.command
