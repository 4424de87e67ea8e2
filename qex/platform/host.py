"""The one place that answers "is this Linux?": which implementation of each OS mechanism
this process uses.

Two implementations exist for every mechanism that differs between systems:

========================  ===================================  ================================
mechanism                 linux                                portable (macOS, other POSIX)
========================  ===================================  ================================
process identity          /proc/<pid>/stat (start ticks, Z)    `ps -o stat= -o lstart=`
process listing           /proc/*/cmdline                      `ps -axo ...`
boot id                   /proc/sys/kernel/random/boot_id      start time of pid 1 (`ps`)
machine memory            /proc/meminfo, PSI                   psutil; no pressure figure
reaping a foreign pid     pidfd                                identity poll every 2 s
supervisor start          fork server                          a fresh process per job
coordinator from a CLI    the command forks itself into it     a fresh `python -m qex daemon`
config watching           inotify on the config directory      a stat() every few seconds
job politeness            subreaper, ioprio, oom_score_adj     none of them
ru_maxrss unit            KiB                                  by kernel: bytes on darwin
========================  ===================================  ================================

`QEX_PLATFORM=portable` in the environment selects the portable column on a Linux machine.
It is a TEST AID (CI runs the end-to-end suite a second time with it, so the macOS paths
run against the real program on every change), not a user setting: it turns enforcement off
and makes several things slower or coarser (docs/portable.md has the figures). The
coordinator and the supervisors inherit it through the environment of the command that
started them. Any other value, or none, means "what this system is".

Reading it costs one dictionary lookup; nothing is imported.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: The switch, read from the environment at each question (tests set and unset it).
ENV_VAR = "QEX_PLATFORM"
LINUX = "linux"
PORTABLE = "portable"


def kind(env: Mapping[str, str] | None = None) -> str:
    """`linux` or `portable`: the implementation this process uses."""
    value = (os.environ if env is None else env).get(ENV_VAR, "")
    if value.strip().lower() == PORTABLE:
        return PORTABLE
    return LINUX if sys.platform.startswith("linux") else PORTABLE


def linux(env: Mapping[str, str] | None = None) -> bool:
    """True when the Linux implementations are in use (/proc, pidfd, inotify, cgroups)."""
    return kind(env) == LINUX


def forced(env: Mapping[str, str] | None = None) -> bool:
    """True when the switch, not the system, chose the portable implementations."""
    return kind(env) == PORTABLE and sys.platform.startswith("linux")


def system_name(env: Mapping[str, str] | None = None) -> str:
    """The name `config show`, `info` and `detect` give: `portable` under the switch,
    else the system's own (`linux`, `darwin`, `freebsd14`, ...)."""
    return PORTABLE if forced(env) else sys.platform


SWITCH_WORDS = (f"{ENV_VAR}=portable (a test aid) makes qex act as on a system without Linux "
                "and systemd")


def describe(name: str) -> str:
    """A system name from `system_name()` in words, for the start of a sentence."""
    if name == PORTABLE:
        return SWITCH_WORDS
    if name == "darwin":
        return "this system is macOS, not Linux with systemd"
    return f"this system is {name}, not Linux with systemd"


def maxrss_bytes(raw: int, kernel: str | None = None) -> int:
    """`ru_maxrss` in bytes. The unit belongs to the kernel that filled it in, not to the
    implementation chosen above: darwin counts bytes, Linux and the BSDs count KiB. So the
    portable path on a Linux kernel (the switch in CI) must still multiply by 1024."""
    system = sys.platform if kernel is None else kernel
    return int(raw) * (1 if system == "darwin" else 1024)


#: What still works and what does not, where enforcement is impossible (config show, info).
STILL_WORKS = ("claims steer the queue (cores, memory, GPUs and other pools by count, locks)",
               "waiting, attaching and the records of every job",
               "time limits, cancel and signals to the job's process group")
DOES_NOT_WORK = ("memory limits (the job gets no cgroup of its own, so [enforce] soft and "
                 "hard do nothing)",
                 "proven OOM: a memory kill cannot be proven, so no retry with a larger claim "
                 "and no learning from it")


def portable_summary(env: Mapping[str, str] | None = None) -> str | None:
    """Plain words for a system without Linux enforcement, or None on Linux."""
    if linux(env):
        return None
    return (f"{describe(system_name(env))}, so enforcement is off and jobs run as plain process "
            f"groups. Still works: {'; '.join(STILL_WORKS)}. Does not work: "
            f"{'; '.join(DOES_NOT_WORK)}")


def platform_info(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `platform` object of `config show --json` and of the coordinator's `info`."""
    portable = not linux(env)
    return {
        "name": system_name(env),
        "implementation": kind(env),
        "forced": forced(env),
        "summary": portable_summary(env),
        "still_works": list(STILL_WORKS) if portable else None,
        "does_not_work": list(DOES_NOT_WORK) if portable else None,
    }


def platform_lines(info: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, text) rows for a portable system, from `platform_info()`; none on Linux."""
    if info.get("implementation") != PORTABLE:
        return []
    name = str(info.get("name") or "?")
    head = (f"{name} — {describe(name)}, so enforcement is off and jobs run as plain process "
            "groups")
    rows = [("platform", head)]
    works = info.get("still_works")
    if isinstance(works, list) and works:
        rows.append(("still works", "; ".join(str(w) for w in works)))
    missing = info.get("does_not_work")
    if isinstance(missing, list) and missing:
        rows.append(("unavailable", "; ".join(str(m) for m in missing)))
    return rows
