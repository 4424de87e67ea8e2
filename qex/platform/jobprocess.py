"""What a supervisor does to itself and to the job process it is about to exec.

- `become_subreaper`: orphans of the job (a daemon it leaves behind) are re-parented to the
  supervisor instead of PID 1, so they are reaped promptly and counted; on machines whose
  PID 1 does not reap, they would otherwise stay zombies.
- `ioprio_setter`: the `[politeness] io` class (best-effort / idle) through the ioprio_set
  system call, which Python does not wrap. Prepared in the parent, called in the child.
- `set_oom_score_adj`: `[politeness] oom_score_adj` for the job (Linux).
- `children_usage`: getrusage(RUSAGE_CHILDREN), normalised to bytes and seconds.
- `pidfd_open`: a descriptor that becomes readable when the job exits (Linux 5.3+).
- `unshare_directory`: a directory and umask of the calling thread's own (unshare(CLONE_FS)),
  so that the thread that spawns a job can enter the job's directory while the supervisor's
  main thread stays where it is.
- `JOB_DEFAULT_SIGNALS`: every signal a job starts with at its default action.

The portable implementation (`qex.platform.host`) does none of the Linux calls: no
subreaper, no I/O class, no oom_score_adj, no pidfd (the SIGCHLD path watches the job).

Every call here is best effort: a politeness value that cannot be applied must not stop a job.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C functions, without signal's enums
import os
import resource
from collections.abc import Callable
from typing import Any

from qex.platform import host

#: The signals whose action a job gets at the default: all that can be set. An exec keeps
#: an ignored signal ignored, and the supervisor ignores what its start-up ignored: SIGINT
#: in the fork server, and whatever the command that happened to start the coordinator
#: ignored (a shell's background job ignores SIGINT and SIGQUIT, `nohup` SIGHUP, Python
#: SIGPIPE and SIGXFSZ). A job must not depend on who started the coordinator, and `qex kill
#: --signal INT` must reach a job that installs no handler (Python installs its Ctrl-C
#: handler only where SIGINT is not ignored at its start).
JOB_DEFAULT_SIGNALS: tuple[int, ...] = tuple(sorted(
    int(number) for number in _signal.valid_signals()
    if number not in (_signal.SIGKILL, _signal.SIGSTOP)))

_PR_SET_CHILD_SUBREAPER = 36
_CLONE_FS = 0x200
_IOPRIO_WHO_PROCESS = 1
_IOPRIO_CLASS_SHIFT = 13
#: (class, level) per `[politeness] io` word; `none` makes no call at all.
_IO_CLASSES = {"best-effort": (2, 4), "idle": (3, 0)}
#: ioprio_set's number differs per architecture.
_IOPRIO_SET_NR = {
    "x86_64": 251, "i386": 289, "i686": 289, "aarch64": 30, "arm64": 30, "riscv64": 30,
    "loongarch64": 30, "armv7l": 314, "armv6l": 314, "ppc64le": 273, "ppc64": 273, "s390x": 282,
}

_libc_handle: Any = None


def _libc() -> Any:
    global _libc_handle
    if _libc_handle is None:
        import ctypes

        _libc_handle = ctypes.CDLL(None, use_errno=True)
    return _libc_handle


def preload() -> None:
    """Look up the libc functions that supervisors call, in a process that forks them.

    ctypes makes a function object at the first lookup of a name and keeps it on the
    library; made in the fork server, it is shared by every supervisor instead of being
    made (and its pages copied) in each.
    """
    if not host.linux():
        return
    try:
        libc = _libc()
        for name in ("prctl", "unshare", "syscall"):
            getattr(libc, name)
    except (OSError, AttributeError):
        pass


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux only)."""
    if not host.linux():
        return False
    try:
        return int(_libc().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def ioprio_setter(io: str) -> Callable[[], None] | None:
    """A function for the child that applies the I/O class, or None when there is nothing to do."""
    if not host.linux() or io not in _IO_CLASSES:
        return None
    number = _IOPRIO_SET_NR.get(os.uname().machine)
    if number is None:
        return None
    io_class, level = _IO_CLASSES[io]
    value = (io_class << _IOPRIO_CLASS_SHIFT) | level
    try:
        syscall = _libc().syscall
    except (OSError, AttributeError):
        return None

    def apply() -> None:
        syscall(number, _IOPRIO_WHO_PROCESS, 0, value)

    return apply


def unshare_directory() -> bool:
    """Give the calling thread its own directory and umask (Linux only).

    Threads share them by default (CLONE_FS); after this, a chdir in this thread moves it
    alone, and a child it vforks starts there. False where that cannot be had: the caller
    then must not chdir in a thread.
    """
    if not host.linux():
        return False
    try:
        return int(_libc().unshare(_CLONE_FS)) == 0
    except (OSError, AttributeError):
        return False


def be_polite(nice: int | None, set_ioprio: Callable[[], None] | None) -> None:
    """Give the calling thread the job's nice value and I/O class, which a process forked or
    spawned from it inherits (both are per-thread on Linux). Best effort: a value the system
    refuses does not stop the job."""
    if nice is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError:
            pass
    if set_ioprio is not None:
        try:
            set_ioprio()
        except OSError:
            pass


def set_oom_score_adj(value: int) -> None:
    """Offer this process to the OOM killer first (positive) or last (negative); Linux only."""
    if not host.linux() or value == 0:
        return
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(str(value))
    except OSError:
        pass


def children_usage() -> tuple[int, float]:
    """(peak RSS in bytes, user+system seconds) of every child reaped so far.

    The peak is a high-water mark over all children, so it only ever grows; the cpu time is a
    sum, so callers subtract a snapshot to get one attempt's share.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return host.maxrss_bytes(usage.ru_maxrss), float(usage.ru_utime + usage.ru_stime)


def pidfd_open(pid: int) -> int | None:
    """A pidfd for `pid`, or None where the kernel or Python has none, or under portable."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None or not host.linux():
        return None
    try:
        fd = opener(pid)
    except OSError:
        return None
    return int(fd)
