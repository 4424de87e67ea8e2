"""`qex wait ID` for a job that already stopped, through `qex.cli.wire` alone.

An agent's loop runs `qex submit` and then `qex wait` on the id, and a short job has often
stopped by then. For that case (a full id, a job that completed or failed with its own exit
code, no error text, a plain name, a queue that is not paused) this prints the line that
`qex.cli.wait_core` prints, with its exit code, from one `info` and one `status` request.
Every other case returns None having changed nothing, and the full wait runs.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_HEX = frozenset("0123456789abcdef")
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


def wait_finished(word: str, *, quiet: bool) -> int | None:
    """The exit code after printing the result, or None for the full wait."""
    if not is_full_id(word):
        return None
    from qex.cli.wire import Wire

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
    finally:
        wire.close()
    record = answer.get("status") if answer.get("result") == "status" else None
    found = simple_result(record) if isinstance(record, dict) else None
    if found is None:
        return None
    if not quiet:
        import sys

        sys.stdout.write(found[0] + "\n")
        sys.stdout.flush()
    return found[1]
