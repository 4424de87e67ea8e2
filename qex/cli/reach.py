"""Reaching the coordinator from any command: one connection helper for all of them.

Failures are not handled here: the client raises what happened (`qex.client.errors`), and
`qex.cli.main` turns it into the sentence and the exit code of the command that runs
(`qex.cli.exits`). So each command reads as a list of requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from qex.cli.exits import Failure
from qex.core.names import printable_line

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.client.errors import Refused
    from qex.store.paths import Paths


def open_connection(paths: Paths, *, start: bool = True,
                    until: float | None = None) -> Connection | None:
    """A connection, or None when `start` is False and no coordinator runs.

    `until` (a time.monotonic() instant) is the person's `--timeout`: connecting, starting a
    coordinator and every request on the connection end by then.
    """
    from qex.client.connection import connect

    return connect(paths, start=start, until=until)


def deadline_of(timeout: float | None) -> float | None:
    """The time.monotonic() instant at which a `--timeout` of `timeout` seconds runs out."""
    if timeout is None:
        return None
    import time

    return time.monotonic() + timeout


def require(conn: Connection, capability: str, what: str) -> None:
    """Refuse to go on when the coordinator lacks `capability`, naming how to replace it."""
    if capability in conn.capabilities():
        return
    info = conn.info()
    pid = info.get("pid") or 0
    version = printable_line(str(info.get("version") or "unknown"))
    raise Failure(
        f"the coordinator (pid {pid}, version {version}) cannot {what}, so this command stops "
        f"here; stop that coordinator with `kill {pid}` (its jobs continue, and the next qex "
        "command starts a new one that reads the same records), then run this command again")


def pause_state(conn: Connection) -> dict[str, Any] | None:
    """The coordinator's pauses, or None when it cannot say (no `pause` capability)."""
    if "pause" not in conn.capabilities():
        return None
    from qex.client.errors import Refused

    try:
        return conn.pause_state()
    except Refused:
        return None


def refusal(request: Callable[..., object], *args: Any) -> Refused | None:
    """Make one request; None when it succeeded, the coordinator's refusal when it did not.

    For commands that act on many jobs and report each refusal; any other failure (no
    answer, a lost line) still ends the command.
    """
    from qex.client.errors import Refused

    try:
        request(*args)
    except Refused as exc:
        exc.message = printable_line(exc.message)
        return exc
    return None


def cleaned(conn: Connection, job_ids: list[str]) -> list[Refused | None]:
    """`refusal` of a `clean` for each of `job_ids`, in order, from one `clean_many`
    request; a coordinator older than that request gets a `clean` per job."""
    from qex.client.errors import Refused
    from qex.core.protocol import error_of

    if not job_ids:
        return []
    answers = conn.clean_many(job_ids)
    if answers is None:
        return [refusal(conn.clean, job_id) for job_id in job_ids]
    found: list[Refused | None] = []
    for answer in answers:
        failed = error_of(answer)
        found.append(None if failed is None else Refused(failed[0], printable_line(failed[1])))
    return found
