"""The fallback sandbox: a plain process group, no memory limit, the session's OOM counter.

Used wherever a cgroup of the job's own cannot be made (no systemd user manager, controller
not delegated, hybrid cgroups, macOS) and when `[enforce] mode` is off. It never claims a
limit: `active` is False and `describe()` says why.

Its evidence is the `oom_kill` count in `memory.events` of the cgroup this process sits in
(the path after `0::` in /proc/self/cgroup, under /sys/fs/cgroup). That count also rises when
the kernel kills ANOTHER program of the same session, so it is reported with
`source="session"` and `proven=False`: enough to say `oom`, never enough to retry or learn.
On macOS, or on a hybrid machine whose unified hierarchy has no memory controller, there is
no such file and the evidence is empty.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from qex.platform import host
from qex.platform.sandbox import Evidence, Limits

if TYPE_CHECKING:
    from qex.core.records import Enforcement
    from qex.core.states import EnforceMode

CGROUP_ROOT = Path("/sys/fs/cgroup")


def own_memory_events(proc_cgroup: Path = Path("/proc/self/cgroup"),
                      root: Path = CGROUP_ROOT) -> Path | None:
    """The `memory.events` file of this process's cgroup v2, when there is one.

    Every supervisor asks this once, so it is read with plain os calls and the path is
    joined as text: through pathlib (a text stream, five path objects, `is_file`) it cost a
    forked supervisor half a millisecond, a plain read a tenth of that.
    """
    if not host.linux():
        return None
    try:
        fd = os.open(proc_cgroup, os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, 65536)
        finally:
            os.close(fd)
    except OSError:
        return None
    for line in os.fsdecode(data).splitlines():
        if line.startswith("0::"):
            relative = line[3:].strip().lstrip("/")
            candidate = os.path.join(root, relative, "memory.events")
            try:
                regular = stat.S_ISREG(os.stat(candidate).st_mode)
            except (OSError, ValueError):
                return None
            return Path(candidate) if regular else None
    return None


def read_oom_kills(events: Path | None) -> int | None:
    """The `oom_kill` count of a `memory.events` file, or None when it cannot be read."""
    if events is None:
        return None
    try:
        with open(events) as handle:
            for line in handle:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


class ProcessGroupSandbox:
    """No limit, no cgroup of the job's own; the session's memory-kill count as evidence."""

    backend = "process-group"

    def __init__(self, reason: str | None, *, events: Path | None = None,
                 discover: bool = True) -> None:
        self.active = False
        self.reason = reason
        self._events = events if events is not None or not discover else own_memory_events()
        self._before: int | None = None
        self._mode: EnforceMode = "off"

    def begin_attempt(self, limits: Limits) -> None:
        self._mode = limits.mode
        self._before = read_oom_kills(self._events)

    def child_preexec(self) -> None:
        """Nothing to join: the job stays in the supervisor's cgroup."""
        return None

    def evidence(self) -> Evidence:
        after = read_oom_kills(self._events)
        if self._before is None or after is None:
            return Evidence()
        return Evidence(oom_kills=max(0, after - self._before), proven=False, source="session")

    def describe(self) -> Enforcement:
        return {
            "mode": self._mode,
            "active": False,
            "reason": self.reason,
            "backend": self.backend,
            "unit": None,
            "memory_max": None,
            "memory_high": None,
        }

    def close(self) -> None:
        """Nothing is held."""
