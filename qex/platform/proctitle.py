"""The name a forked qex process shows in `ps`, `top` and `pgrep` (Linux).

A process that qex forks without an exec (the coordinator that a command forks at a cold
start, the fork server that the coordinator forks) keeps the command line of the process it
was forked from: without this, `ps` would show the coordinator as the `qex submit ...` that
happened to start it, for as long as it lives. An exec'd process gets its name from its
argv; a forked one rewrites it here, as PostgreSQL's and setproctitle's servers do:

- `/proc/self/cmdline` is read by the kernel from the argv strings on the process's stack,
  between `arg_start` and `arg_end` (fields 48 and 49 of `/proc/self/stat`). The interpreter
  copied those strings into `sys.argv` at its start and never reads them again, so the title
  is written over them through `/proc/self/mem` (this process's own writable memory; no
  `ctypes`). It never grows past the original area, so a long title is cut. The area's last
  byte is made non-NUL: the kernel then reads the command line as one string up to its first
  NUL (its rule for a rewritten title), so readers see the title alone, not a tail of empty
  arguments.
- `/proc/self/comm` (what `top` and a plain `pgrep` match) takes a short name of its own,
  at most 15 bytes and without a space, so that a script that splits `/proc/<pid>/stat` on
  spaces still finds its fields.

Elsewhere (macOS), or where either file refuses, the name stays as it was: a title is a
courtesy to the person reading `ps`, never a reason to fail.
"""

from __future__ import annotations

import os

#: The kernel keeps this many bytes of `comm` (16 with its NUL).
COMM_BYTES = 15


def argv_area(stat_text: str) -> tuple[int, int] | None:
    """(arg_start, arg_end) from the text of `/proc/<pid>/stat`, or None when it has no
    such fields (a kernel before 3.5, or a text that is not a stat line)."""
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = stat_text.rpartition(")")[2].split()
    # Field 3 (the state) is fields[0] here, so field N is fields[N - 3].
    try:
        start, end = int(fields[48 - 3]), int(fields[49 - 3])
    except (IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def fitted(title: str, room: int) -> bytes:
    """`title` as the bytes written over an argv area of `room` bytes (at least 2): cut to
    fit with its NUL, then NUL bytes over the rest of the old command line, and a last byte
    that is not NUL (the kernel's sign of a rewritten title)."""
    data = title.encode("utf-8", "replace")[: room - 2] + b"\0"
    return data + b"\0" * (room - 1 - len(data)) + b" "


def set_title(title: str, short: str) -> bool:
    """Show this process as `title` (its command line) and `short` (its `comm`); True when
    the command line was rewritten."""
    try:
        with open("/proc/self/comm", "wb", buffering=0) as comm:
            comm.write(short.replace(" ", "-").encode("utf-8", "replace")[:COMM_BYTES])
    except OSError:
        pass
    try:
        with open("/proc/self/stat", "rb") as stat:
            area = argv_area(stat.read().decode("ascii", "replace"))
        if area is None or area[1] - area[0] < 2:
            return False
        start, end = area
        fd = os.open("/proc/self/mem", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.pwrite(fd, fitted(title, end - start), start)
        finally:
            os.close(fd)
    except (OSError, OverflowError):
        return False
    return True
