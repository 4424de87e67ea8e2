"""Knowing, without polling, that a child exited; and reaping every child, orphans included.

`ChildWatch` turns SIGCHLD into a readable descriptor (signal.set_wakeup_fd), so the
supervisor's one selector loop wakes on a child's exit exactly as it wakes on output. On
Linux the job itself is also watched through a pidfd, which cannot miss an exit; the SIGCHLD
descriptor is still needed for the orphans that the job leaves to the subreaper.

`Reaper.reap` waits for the job WITHOUT reaping it first (WNOWAIT), so its pid, which is also
its process group id, cannot be reused while the leftovers of that group get SIGKILL; only
then is the job reaped. (macOS has no usable waitid, so there the job is reaped first; a
group id stays reserved while any member lives, which is the case that matters.) Every other
child that exited is reaped and counted as an orphan.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import contextlib
import os
import signal
from types import FrameType

from qex.platform import host, procs

TYPE_CHECKING = False
if TYPE_CHECKING:
    import resource


def _ignore(signum: int, frame: FrameType | None) -> None:
    """A Python-level handler must exist for the wakeup descriptor to receive SIGCHLD."""


class ChildWatch:
    """A descriptor that becomes readable whenever SIGCHLD arrives."""

    def __init__(self) -> None:
        if hasattr(os, "pipe2"):  # one call instead of five (macOS has no pipe2)
            self._read, self._write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        else:
            self._read, self._write = os.pipe()
            os.set_blocking(self._read, False)
            os.set_blocking(self._write, False)
        # The C function: `signal.signal` would look the old handler up in an enum, a cost
        # (and, in a forked supervisor, page copies) paid by every job for nothing.
        self._old_handler = _signal.signal(_signal.SIGCHLD, _ignore)
        self._old_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)

    def fileno(self) -> int:
        return self._read

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(self._read, 4096):
                pass

    def close(self) -> None:
        signal.set_wakeup_fd(self._old_fd)
        signal.signal(signal.SIGCHLD, self._old_handler)
        os.close(self._read)
        os.close(self._write)


def forget_in_child() -> None:
    """In a forked child before exec: stop writing SIGCHLD into the parent's descriptor."""
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)


class Reaper:
    """Reaps the job (once) and any orphan that exited; counts the orphans, and keeps the
    largest resident size that any process it reaped reached (`peak_rss`, bytes).

    Why its own peak and not `getrusage(RUSAGE_CHILDREN)`: that is a high-water mark over
    every child this process ever reaped, and a supervisor may serve several jobs
    (`forkserver._serve_jobs`), so a small job would report the peak of a large one before
    it, and the memory learner would raise its claim. `wait4` gives each reaped process's
    own figure (with the descendants it waited for)."""

    def __init__(self) -> None:
        self.orphans = 0
        self.peak_rss = 0

    def _waited(self, usage: resource.struct_rusage) -> None:
        self.peak_rss = max(self.peak_rss, host.maxrss_bytes(usage.ru_maxrss))

    def reap(self, pid: int | None, *, kill_leftovers: bool = True) -> int | None:
        """The wait status of `pid` if it ended now (it is then reaped), else None."""
        status: int | None = None
        if pid is not None:
            status = self._reap_job(pid, kill_leftovers)
        while True:
            try:
                child, child_status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if child == 0:
                break
            self._waited(usage)
            if child == pid and status is None:
                status = child_status
            else:
                self.orphans += 1
        return status

    def _reap_job(self, pid: int, kill_leftovers: bool) -> int | None:
        # The portable implementation takes the macOS path even where waitid exists.
        waitid = getattr(os, "waitid", None) if host.linux() else None
        if waitid is None:  # macOS, or QEX_PLATFORM=portable
            try:
                done, status, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if not done:
                return None
            self._waited(usage)
            if kill_leftovers:
                procs.signal_group(pid, signal.SIGKILL)
            return status
        try:
            info = waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return None
        if info is None:
            return None
        if kill_leftovers:
            procs.signal_group(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
        self._waited(usage)
        return status
