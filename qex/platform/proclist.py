"""List the processes of this machine: pid, parent, group, start time and command line.

Used by `qex watchers`. Linux reads /proc directly with plain `os` calls (no psutil, no
pathlib and no subprocess, so the command stays near the interpreter's start-up); the
portable implementation (macOS, `QEX_PLATFORM=portable`) asks `ps`, the only view
there; its start times are to the second. A process that ends while we read
it is skipped: the listing is a snapshot, and a vanished process is not a monitor.
"""

from __future__ import annotations

import os
import time

from qex.core.watchers import ProcessRow
from qex.platform import host


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _boot_time(proc: str) -> float | None:
    try:
        for line in _read(os.path.join(proc, "stat")).decode("ascii", "replace").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _linux_row(entry: str, pid: int, boot: float | None, ticks: int) -> ProcessRow | None:
    try:
        raw = _read(os.path.join(entry, "cmdline"))
        stat = _read(os.path.join(entry, "stat")).decode("utf-8", "replace")
    except OSError:
        return None
    if not raw:
        return None  # kernel threads and zombies have no command line
    command = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    # The command name in parentheses may hold spaces or ')': split after the LAST ')'.
    close = stat.rfind(")")
    fields = stat[close + 2 :].split() if close >= 0 else []
    if len(fields) < 20:
        return None
    try:
        ppid, pgid, start_ticks = int(fields[1]), int(fields[2]), int(fields[19])
    except ValueError:
        return None
    started = None if boot is None else boot + start_ticks / ticks
    return ProcessRow(pid=pid, ppid=ppid, pgid=pgid, started_at=started,
                      command=command)


def _linux(proc: str) -> list[ProcessRow]:
    boot = _boot_time(proc)
    ticks = os.sysconf("SC_CLK_TCK") or 100
    rows: list[ProcessRow] = []
    try:
        names = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return rows
    for name in names:
        row = _linux_row(os.path.join(proc, name), int(name), boot, ticks)
        if row is not None:
            rows.append(row)
    return rows


def parse_etime(text: str) -> float | None:
    """Seconds from the `etime` column of ps: `[[dd-]hh:]mm:ss`."""
    days = 0
    rest = text.strip()
    if "-" in rest:
        day_text, rest = rest.split("-", 1)
        if not day_text.isdigit():
            return None
        days = int(day_text)
    parts = rest.split(":")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return None
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return float(days * 86400 + seconds)


def parse_ps(output: str, now: float) -> list[ProcessRow]:
    """Rows from `ps -axo pid=,ppid=,pgid=,etime=,command=`."""
    rows: list[ProcessRow] = []
    for line in output.splitlines():
        parts = line.split(None, 4)
        if len(parts) < 5:
            continue
        try:
            pid, ppid, pgid = int(parts[0]), int(parts[1]), int(parts[2])
        except ValueError:
            continue
        age = parse_etime(parts[3])
        rows.append(ProcessRow(pid=pid, ppid=ppid, pgid=pgid,
                               started_at=None if age is None else now - age,
                               command=parts[4]))
    return rows


def _ps() -> list[ProcessRow]:
    import subprocess

    try:
        done = subprocess.run(
            ["ps", "-axo", "pid=,ppid=,pgid=,etime=,command="],
            capture_output=True, text=True, check=False, timeout=30,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_ps(done.stdout, time.time())


def list_processes(proc_root: str = "/proc") -> list[ProcessRow]:
    """Every process this user can see, in no particular order."""
    if host.linux() and os.path.isdir(proc_root):
        return _linux(proc_root)
    return _ps()
