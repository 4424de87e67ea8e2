"""The words qex uses about a pause: the reason a queued job shows, and one-line summaries.

Pure. Callers pass clock times already formatted (local HH:MM:SS) and durations already
measured, so the text does not depend on when or where it is built. A queued job's reason
holds no elapsed time on purpose: it is written to the record once, not every second.

Text typed by a person (the `--reason`) and fault messages pass through `printable_line`, so
a control byte in them cannot repaint a terminal that shows the line.
"""

from __future__ import annotations

from qex.core.names import lock_arg, lock_shown, printable_line


def _pauser(by_pid: int | None) -> str:
    return f"pid {by_pid}" if by_pid else "an unknown process"


def _note(reason: str | None) -> str | None:
    if reason is None:
        return None
    text = printable_line(reason).strip()
    return text or None


def queue_paused_reason(
    reason: str | None, by_pid: int | None, clock_text: str, until_clock: str | None = None
) -> str:
    """The reason every startable job shows while the queue is paused."""
    note = _note(reason)
    noted = f" (note: {note})" if note else ""
    text = (
        f"waits for the queue to be resumed: {_pauser(by_pid)} paused it at {clock_text}"
        f"{noted}, and no job starts until then."
    )
    if until_clock:
        return text + (
            f" The pause lifts by itself at {until_clock}, or earlier with `qex resume queue`."
        )
    return text + " It has no end set; `qex resume queue` lifts it."


def queue_fault_reason(fault: str) -> str:
    """The reason while qex holds the queue because its pause record cannot be read."""
    return (
        "waits because qex is holding the queue: its pause record cannot be read "
        f"({printable_line(fault)}), and since that record might describe a pause, qex starts "
        "nothing rather than guess. Fix the file, or run `qex resume queue` to replace it."
    )


def lock_paused_reason(
    name: str, reason: str | None, by_pid: int | None, clock_text: str
) -> str:
    """The reason of a job that needs a lock a person took with `qex pause lock`."""
    shown = lock_shown(name)
    text = (
        f"waits for the lock `{shown}`: {_pauser(by_pid)} reserved it for a person at "
        f"{clock_text}"
    )
    note = _note(reason)
    if note:
        text += f" (note: {note})"
    return text + f", and the job can take it after `qex resume lock {lock_arg(name)}`."


def lock_person_default(name: str) -> str:
    """The same reason when the coordinator gave no detail about the person's hold."""
    shown = lock_shown(name)
    return (
        f"waits for the lock `{shown}`: a person reserved it with `qex pause lock`, and the "
        f"job can take it after `qex resume lock {lock_arg(name)}`."
    )


def _end_text(until_clock: str | None, until_in: str | None, resume: str) -> str:
    if until_clock:
        suffix = f" (in {until_in})" if until_in else ""
        return f"lifts at {until_clock}{suffix}"
    return f"NO END SET: it lasts until `{resume}`"


def queue_pause_summary(
    *,
    paused_clock: str,
    paused_for: str,
    by_pid: int | None,
    until_clock: str | None = None,
    until_in: str | None = None,
    reason: str | None = None,
) -> str:
    """One line for `info`, `top`, `list`, `wait` and `pause` while the queue is paused."""
    line = (
        f"queue paused at {paused_clock} ({paused_for} ago) by {_pauser(by_pid)} · "
        + _end_text(until_clock, until_in, "qex resume queue")
    )
    note = _note(reason)
    if note:
        line += f" · note: {note}"
    return line


def fault_summary(fault: str) -> str:
    """The same line when the pause record could not be read."""
    return (
        "QUEUE HELD BY A FAULT: the pause record is unreadable, so no job starts · "
        f"{printable_line(fault)} · `qex resume queue` replaces the record"
    )


def lock_pause_summary(
    *,
    name: str,
    paused_clock: str,
    paused_for: str,
    by_pid: int | None,
    holder: str | None = None,
    until_clock: str | None = None,
    until_in: str | None = None,
    reason: str | None = None,
) -> str:
    """One line per paused lock; `holder` is "id8 (name)" of the job that still has it."""
    shown = lock_shown(name)
    line = f"lock `{shown}`: paused at {paused_clock} ({paused_for} ago) by {_pauser(by_pid)} · "
    if holder:
        line += f"the job {holder} still holds it; yours once that job ends"
    else:
        line += "yours now"
    line += " · " + _end_text(until_clock, until_in, f"qex resume lock {lock_arg(name)}")
    note = _note(reason)
    if note:
        line += f" · note: {note}"
    return line
