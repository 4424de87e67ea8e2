"""One selector loop per attempt: the two output pipes, the job's exit, and the timers.

Nothing here polls. The loop sleeps in `select` until output arrives, a child exits (pidfd or
the SIGCHLD descriptor), or the next deadline comes: the `--timeout` of the attempt, the KILL
that follows an ignored TERM, or the end of the wait for the pipes after the job exited.

That last wait exists because a pipe closes only when the LAST process holding it exits: a
daemon that the job left behind (`setsid ... &`) keeps it open for ever. The record is worth
more than the missing lines, so after the grace the loop stops reading and says so.
"""

from __future__ import annotations

import os
import selectors
import signal
import time
from collections.abc import Callable, Mapping

from qex.core.model import dataclass
from qex.platform import procs
from qex.supervisor.children import ChildWatch, Reaper
from qex.supervisor.logcap import CappedLog

READ_SIZE = 64 * 1024


@dataclass
class Watched:
    """How the attempt ended, as far as the loop saw it."""

    status: int            # the wait status of the job
    ended_at: float        # wall-clock time at which the job was seen to end
    timed_out: bool        # the `--timeout` timer fired before the job ended
    incomplete: bool       # a pipe was still open when the wait for it ended


def watch_job(  # noqa: C901, PLR0912, PLR0915 (one event loop)
    pid: int,
    streams: Mapping[int, CappedLog],
    *,
    timeout: float | None,
    term_grace: float,
    pipe_grace: float,
    children: ChildWatch,
    reaper: Reaper,
    pidfd: int | None,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
) -> Watched:
    """Copy output into the logs until the job ended and its pipes closed (or the grace ran out).

    The pipe descriptors in `streams` are closed here.
    """
    selector = selectors.DefaultSelector()
    open_pipes = set(streams)
    for fd in streams:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ, "pipe")
    if pidfd is not None:
        selector.register(pidfd, selectors.EVENT_READ, "pidfd")
    selector.register(children.fileno(), selectors.EVENT_READ, "chld")
    deadline = clock() + timeout if timeout else None
    kill_at: float | None = None
    timed_out = False
    status: int | None = None
    ended_at = 0.0
    pipes_close_by = 0.0
    incomplete = False
    try:
        while status is None or open_pipes:
            now = clock()
            waits: list[float] = []
            if status is None:
                if deadline is not None and not timed_out:
                    waits.append(deadline - now)
                if kill_at is not None:
                    waits.append(kill_at - now)
            else:
                waits.append(pipes_close_by - now)
            wait = max(0.0, min(waits)) if waits else None
            for key, _ in selector.select(wait):
                if key.data == "pipe":
                    fd = int(key.fd)
                    try:
                        data = os.read(fd, READ_SIZE)
                    except BlockingIOError:
                        continue
                    if data:
                        streams[fd].write(data)
                    else:
                        selector.unregister(fd)
                        os.close(fd)
                        open_pipes.discard(fd)
                    continue
                if key.data == "chld":
                    children.drain()
                ended = reaper.reap(pid if status is None else None)
                if status is None and ended is not None:
                    status = ended
                    ended_at = wall()
                    pipes_close_by = clock() + pipe_grace
                    if pidfd is not None:
                        selector.unregister(pidfd)
            now = clock()
            if status is None:
                if deadline is not None and not timed_out and now >= deadline:
                    timed_out = True
                    procs.signal_group(pid, signal.SIGTERM)
                    kill_at = now + term_grace
                if kill_at is not None and now >= kill_at:
                    procs.signal_group(pid, signal.SIGKILL)
                    kill_at = None
            elif open_pipes and now >= pipes_close_by:
                incomplete = True
                break
    finally:
        for fd in open_pipes:
            try:
                selector.unregister(fd)
            except (KeyError, ValueError):
                pass
            os.close(fd)
        selector.close()
    assert status is not None
    return Watched(status=status, ended_at=ended_at, timed_out=timed_out, incomplete=incomplete)
