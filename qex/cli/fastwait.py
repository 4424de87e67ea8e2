"""`qex wait ID` for a short job, through `qex.cli.wire` alone.

An agent's loop runs `qex submit` and then `qex wait` on the id, and a short job has often
stopped by then, or stops within a moment. For that case (a full id, a job that completed
or failed with its own exit code, no error text, a plain name, a queue that is not paused)
this prints the line that `qex.cli.wait_core` prints, with its exit code, from one `info`
and one `status` request; for a job that is `starting` or `running`, it also sends the
`wait` request on the same connection and waits up to `LIVE_WAIT_SECS` for the answer
(which comes when the job is final), with SIGINT and SIGTERM ending the wait as the full
wait ends it (its two lines, 122) from then on. Every other case (a queued job, whose
reason the full wait narrates; a job that runs longer; an end that is not plain) returns
None having changed nothing (a `wait` request changes nothing, and closing the connection
drops it), and the full wait runs.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_HEX = frozenset("0123456789abcdef")
#: How long a job that is starting or running may take to end before the full wait (with
#: its narration and its recovery when the coordinator goes away) takes over.
LIVE_WAIT_SECS = 1.0
_LIVE = frozenset({"starting", "running"})
_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def is_full_id(word: str) -> bool:
    parts = word.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(set(p) <= _HEX for p in parts)


def simple_result(record: dict[str, Any]) -> tuple[str, int] | None:
    """(the result line, the exit code) of a plainly finished job, else None."""
    name = record.get("name") or "job"
    job_id = record.get("id")
    if not isinstance(name, str) or not isinstance(job_id, str) or record.get("error"):
        return None
    if not set(name) <= _NAME or name.startswith("-") or len(name) > 64:
        return None
    state, code = record.get("state"), record.get("exit_code")
    if state == "completed":
        text, result = "exit 0", 0
    elif state == "failed" and isinstance(code, int) and not isinstance(code, bool) \
            and 0 < code <= 96:
        text, result = f"exit {code}", code
    else:
        return None
    return f"{job_id[:8]} ({name}) {state}: {text}", result


def announce(job_id: str) -> None:
    """`qex: job <id>` on stderr: with --wait/--follow/run the id never goes to stdout."""
    import sys

    sys.stderr.write(f"qex: job {job_id}\n")
    sys.stderr.flush()


def stop_signals(job_id: str) -> Callable[[], None]:
    """From now on the first SIGINT or SIGTERM ends the command as the full wait ends it
    (`qex.cli.jobcmd.interruptible`: its two lines, then 122; the handlers are then the
    defaults, so a second one ends the command at once). Kept when the full wait takes over,
    until it puts its own in place, so that no signal falls between the two. Returns the
    call that puts the previous handlers back."""
    import _signal  # type: ignore[import-not-found]  # `signal` would import `enum`

    watched = (_signal.SIGINT, _signal.SIGTERM)
    previous = {signum: _signal.getsignal(signum) for signum in watched}

    def handler(signum: int, _frame: object) -> None:
        for other in watched:
            _signal.signal(other, _signal.SIG_DFL)
        from qex.cli.exits import WAIT_INTERRUPTED
        from qex.cli.wait_ends import report_interrupted

        report_interrupted([job_id])
        raise SystemExit(WAIT_INTERRUPTED)

    def restore() -> None:
        for signum, old in previous.items():
            _signal.signal(signum, old)

    for signum in watched:
        _signal.signal(signum, handler)
    return restore


def wait_finished(word: str, *, quiet: bool) -> int | None:
    """The exit code after printing the result, or None for the full wait."""
    if not is_full_id(word):
        return None
    from qex.cli.wire import Wire, status_record

    wire = Wire.connect()
    if wire is None:
        return None
    try:
        info = wire.request({"op": "info"})
        if not isinstance(info, dict):
            info.close()
            return None
        if info.get("result") != "info" or info.get("paused") is not None:
            return None
        answer = wire.request({"op": "status", "id": word})
        if not isinstance(answer, dict):
            answer.close()
            return None
        record = status_record(answer)
        restore: Callable[[], None] | None = None
        if record is not None and record.get("state") in _LIVE:
            restore = stop_signals(word)
            record = status_record(wire.ask({"op": "wait", "id": word}, LIVE_WAIT_SECS))
    finally:
        wire.close()
    found = simple_result(record) if record is not None else None
    if found is None:
        return None
    if restore is not None:
        restore()
    if not quiet:
        import sys

        sys.stdout.write(found[0] + "\n")
        sys.stdout.flush()
    return found[1]
