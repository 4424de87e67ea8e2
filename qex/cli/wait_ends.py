"""How a wait ends when the job did not: a signal, the reader's time limit, a vanished record.

Each of these leaves the job untouched, so each message says so and gives the command that
attaches to the same job again. The first SIGINT/SIGTERM becomes `WaitInterrupted` (122); the
handlers then stay at their defaults, so a second Ctrl-C ends the command the ordinary way.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TextIO


class WaitInterrupted(Exception):
    """SIGINT or SIGTERM arrived during a wait; the job was not touched."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class WaitTimedOut(Exception):
    """The reader's `--timeout` passed; the job goes on."""


class JobGone(Exception):
    """The job's record disappeared during the wait (it was cleaned); exit 127."""

    def __init__(self, job_id: str, message: str) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.message = message


_signal_state = {"depth": 0}


def _release_stop_signals() -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


@contextmanager
def stop_signals() -> Iterator[None]:
    """Turn the first SIGINT/SIGTERM into WaitInterrupted; the next one kills as usual.

    After a caught signal the default actions stay in place, so a second Ctrl-C while the
    command reports (or while `qex run` stops its job) ends the process immediately.
    """
    if _signal_state["depth"]:
        # Already inside: the outer block owns the handlers (re-entrant, so a command can
        # cover its whole run and a helper can still say "this part is a wait").
        _signal_state["depth"] += 1
        try:
            yield
        finally:
            _signal_state["depth"] -= 1
        return
    # A signal ignored when the command started stays ignored: a shell script starts its
    # background commands (`qex wait ID &`) with SIGINT ignored, so that the Ctrl-C meant for
    # the script's foreground does not end them.
    watched = tuple(signum for signum in (signal.SIGINT, signal.SIGTERM)
                    if signal.getsignal(signum) != signal.SIG_IGN)
    previous = {signum: signal.getsignal(signum) for signum in watched}
    caught: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        for other in watched:
            signal.signal(other, signal.SIG_DFL)
        caught.append(signum)
        raise WaitInterrupted(signum)

    for signum in watched:
        signal.signal(signum, handler)
    _signal_state["depth"] = 1
    try:
        _release_stop_signals()  # one held by `fastfollow.hold_stop_signals` arrives here, caught
        yield
    finally:
        _signal_state["depth"] = 0
        if not caught:
            for signum, old in previous.items():
                signal.signal(signum, old)


def attach_command(ids: list[str], group: str | None = None) -> str:
    """The command that attaches to the same work again."""
    if group:
        return f"qex wait {group}"
    if len(ids) == 1:
        return f"qex status {ids[0]} --wait"
    return "qex wait " + " ".join(ids)


def say(message: str, out: TextIO | None = None) -> None:
    print(f"qex: {message}", file=out or sys.stderr, flush=True)


def report_interrupted(ids: list[str], group: str | None = None) -> None:
    many = len(ids) > 1 or group is not None
    say("your wait stopped, and the " + ("jobs continue" if many else "job continues")
        + "; nothing was sent to " + ("them" if many else "it"))
    say(("attach to them again:  " if many else "attach to it again:  ")
        + attach_command(ids, group))


def report_timeout(ids: list[str], group: str | None = None) -> None:
    many = len(ids) > 1 or group is not None
    what = "jobs continue" if many else "job continues"
    say(f"the wait reached its time limit, and the {what}")
    say(("attach to them again:  " if many else "attach to it again:  ")
        + attach_command(ids, group))
