"""`qex pause` and `qex resume` without click: what is paused, the queue, a person's lock.

A CI harness or an agent pauses the queue around work that needs the whole machine and
resumes it after, and asks what is paused before it starts; each call should cost what a
read costs. The fast path (`qex.cli.fast`) and the click commands in
`qex.cli.commands.pause` / `.resume` print through the same functions here, so the two
cannot differ. The lean bodies hand over to click, with nothing changed, whenever they
cannot finish alone: nobody listens (the click commands start a coordinator, or read the
pause file), a coordinator too old to know the request (the click commands name it), a
`--for` that click must word, and `pause queue --drain` (which waits on the event stream).
Once a request that changes something is sent, its answer is read to the end here, through
the full client when it is slow, so that nothing is ever sent twice.
"""

from __future__ import annotations

import os
import sys
import time

from qex.core import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from qex.cli.wire import Wire
    from qex.client.connection import Connection


def is_paused(state: dict[str, Any]) -> bool:
    return bool(state.get("queue")) or bool(state.get("locks"))


def print_state(state: dict[str, Any], as_json: bool) -> None:
    """The pauses of a `pause_state` answer: the lines `qex pause` shows, or one object."""
    if as_json:
        print_state_json(state)
        return
    from qex.cli.queue_lines import pause_lines

    lines = pause_lines(state, time.time())
    if not state.get("queue"):
        lines.insert(0, "queue: runs (not paused)")
    else:
        lines.insert(1, "(this pauses your queue only; other users of the machine are not paused)")
    if not is_paused(state):
        lines = ["nothing is paused; the queue runs"]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def print_state_json(state: dict[str, Any]) -> None:
    from qex.cli.common import print_json

    print_json({"paused": is_paused(state), "queue": state.get("queue"),
                "locks": state.get("locks") or []})


def already_paused_warning(answer: dict[str, Any]) -> str | None:
    """The note for a queue that someone else paused first: that pause stays as it was."""
    queue = answer.get("queue")
    if isinstance(queue, dict) and queue.get("by_pid") not in (None, 0, os.getpid()):
        return (f"the queue was already paused by pid {queue.get('by_pid')}; that pause keeps "
                "its end and its reason (run `qex resume queue` first to replace them)")
    return None


def still_running_warning(running: object) -> str | None:
    if isinstance(running, int) and running > 0:
        return (f"{running} job(s) still run and continue; `qex pause queue --drain` waits for "
                "them, and `qex kill <id>` stops one")
    return None


def lock_taken_line(name: str, answer: dict[str, Any]) -> str:
    """What `qex pause lock NAME` says: the lock is yours now, or once its job stops."""
    from qex.core.names import lock_arg, lock_shown, printable_line

    shown = lock_shown(name)
    entry = next((e for e in answer.get("locks") or []
                  if isinstance(e, dict) and str(e.get("name")) == name), None)
    holder = entry.get("held_by") if isinstance(entry, dict) else None
    if isinstance(holder, str) and holder:
        return (f"the job {printable_line(holder)} holds the lock `{shown}` now; it keeps it "
                "until it stops, and then the lock is yours (`qex pause` shows when)")
    return f"the lock `{shown}` is yours: no job takes it until `qex resume lock {lock_arg(name)}`"


def lock_free_line(name: str) -> str:
    from qex.core.names import lock_shown

    return f"the lock `{lock_shown(name)}` is free again; the next job that needs it takes it"


QUEUE_RUNS_LINE = "the queue runs again"


# -- the lean bodies --------------------------------------------------------------------------

def show(as_json: bool) -> int | None:
    """`qex pause`: the coordinator's pauses; None for the click command (nobody listens, or
    the coordinator cannot say: it then reads the pause file)."""
    from qex.cli.fastread import ask
    from qex.cli.wire import Wire

    wire = Wire.connect()
    if wire is None:
        return None
    try:
        answer = ask(wire, protocol.pause_state())
    finally:
        wire.close()
    if answer is None or answer.get("result") != protocol.Result.PAUSE_STATE:
        return None
    print_state(answer, as_json)
    return 0


def pause_queue(reason: str | None, until: float | None, as_json: bool) -> int | None:
    """`qex pause queue` (not `--drain`); `until` is the end as a wall-clock time."""
    line = _Line.connect()
    if line is None:
        return None
    with line:
        answer = line.change(protocol.pause({"kind": "queue"}, reason=reason, until=until,
                                            by_pid=os.getpid(), drain=False))
        if answer is None:
            return None
        from qex.cli.common import warn

        note = already_paused_warning(answer)
        if note:
            warn(note)
        running = answer.get("jobs_running")
        if not isinstance(running, int):  # a coordinator older than the count in the answer
            running = line.read(protocol.info()).get("jobs_running")
    print_state(answer, as_json)
    note = still_running_warning(running)
    if note:
        warn(note)
    return 0


def pause_lock(name: str, reason: str | None, until: float | None, as_json: bool
               ) -> int | None:
    """`qex pause lock NAME`."""
    line = _Line.connect()
    if line is None:
        return None
    with line:
        answer = line.change(protocol.pause({"kind": "lock", "name": name}, reason=reason,
                                            until=until, by_pid=os.getpid(), drain=False))
    if answer is None:
        return None
    if as_json:
        print_state_json(answer)
    else:
        sys.stdout.write(lock_taken_line(name, answer) + "\n")
        sys.stdout.flush()
    return 0


def resume(target: dict[str, Any], as_json: bool) -> int | None:
    """`qex resume [queue]` and `qex resume lock NAME`."""
    line = _Line.connect()
    if line is None:
        return None
    with line:
        answer = line.change(protocol.resume(target))
    if answer is None:
        return None
    if as_json:
        print_state_json(answer)
    else:
        text = lock_free_line(str(target["name"])) if target.get("kind") == "lock" \
            else QUEUE_RUNS_LINE
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    return 0


class _Line:
    """One connection to the coordinator: the lean wire while answers come at once, the full
    client's connection (which then owns the socket) from the first slow one on, so that
    no request is ever sent twice."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.conn: Connection | None = None

    @classmethod
    def connect(cls) -> _Line | None:
        """None when nobody listens (or the socket path is one for the full client)."""
        from qex.cli.wire import Wire

        wire = Wire.connect()
        return None if wire is None else cls(wire)

    def __enter__(self) -> _Line:
        return self

    def __exit__(self, *exc: object) -> None:
        self.wire.close()
        if self.conn is not None:
            self.conn.close()

    def change(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The `pause_state` answer to a request that changes the pauses; None, with nothing
        changed, when the coordinator does not know the request (the click command names
        that coordinator). A refusal ends the command as the full client ends it."""
        answer = self._answer(message)
        return None if protocol.unknown_request(answer) else _checked(message, answer)

    def read(self, message: dict[str, Any]) -> dict[str, Any]:
        return _checked(message, self._answer(message))

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.conn is not None:
            return self.conn.request(message)
        answer = self.wire.request(message)
        if isinstance(answer, dict):
            return answer
        self.conn = answer  # slow: the full client reads it, with its ceiling
        return self.conn.answer(str(message["op"]))


def _checked(message: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """`answer` when it is the plain one; otherwise the full client's error for it (a
    refusal, or an answer of another name), raised by the full client's own check."""
    if answer.get("result") != protocol.ANSWERS.get(message["op"]):
        from qex.client.connection import check

        check(message, answer)
    return answer
