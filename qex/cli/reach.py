"""Talking to the coordinator from the commands that do not speak for a job.

Those commands use the ordinary codes (0, 1, 2, 127, and 124 for a coordinator that does
not answer in time), never the band. This module turns every failure into one `qex: ...`
sentence and that code, so each command reads as a list of requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qex.cli.common import die
from qex.core import protocol
from qex.core.names import printable_line

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.store.paths import Paths

NOT_FOUND = 127
FAILURE = 1


def open_connection(paths: Paths, *, start: bool = True) -> Connection | None:
    """A connection, or None when `start` is False and no coordinator runs."""
    from qex.client.connection import CoordinatorError, connect

    try:
        return connect(paths, start=start)
    except CoordinatorError as exc:
        die(exc.message, 124 if exc.timeout else FAILURE)


def ask(conn: Connection, message: dict[str, Any], *,
        timeout: float | None = None) -> dict[str, Any]:
    """One request and its answer (an `error` answer is returned, not raised)."""
    from qex.client.connection import CoordinatorError

    try:
        return conn.request(message, timeout)
    except CoordinatorError as exc:
        die(exc.message, 124 if exc.timeout else FAILURE)


def error_of(answer: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, printable message) of an `error` answer, else None."""
    if answer.get("result") != "error":
        return None
    kind = str(answer.get("kind") or protocol.INTERNAL)
    message = printable_line(str(answer.get("message") or "the coordinator gave no reason"))
    return kind, message


def code_for(kind: str) -> int:
    return NOT_FOUND if kind == protocol.NO_SUCH_JOB else FAILURE


def expect(conn: Connection, message: dict[str, Any], result: str) -> dict[str, Any]:
    """The answer when its `result` is `result`; any other answer ends the command."""
    answer = ask(conn, message)
    failed = error_of(answer)
    if failed is not None:
        die(failed[1], code_for(failed[0]))
    if answer.get("result") != result:
        die(f"the coordinator answered `{message.get('op')}` with `{answer.get('result')}`, not "
            f"`{result}`; a coordinator of a different qex may be running, so run `qex version`",
            FAILURE)
    return answer


def require(conn: Connection, capability: str, what: str) -> None:
    """Refuse to go on when the coordinator lacks `capability`, naming how to replace it."""
    if capability in conn.capabilities():
        return
    info = conn.info()
    pid = info.get("pid") or 0
    version = printable_line(str(info.get("version") or "unknown"))
    die(
        f"the coordinator (pid {pid}, version {version}) cannot {what}, so this command stops "
        f"here; stop that coordinator with `kill {pid}` (its jobs continue, and the next qex "
        "command starts a new one that reads the same records), then run this command again",
        FAILURE,
    )


def list_jobs(conn: Connection, damaged: list[dict[str, Any]] | None = None
              ) -> list[dict[str, Any]]:
    """The records; `damaged` (when given) receives the unreadable records the coordinator
    found, as `{id, path}`."""
    answer = expect(conn, {"op": "list"}, "jobs")
    jobs = answer.get("jobs")
    if damaged is not None and isinstance(answer.get("damaged"), list):
        damaged.extend(d for d in answer["damaged"] if isinstance(d, dict))
    return [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []


def pause_state(conn: Connection) -> dict[str, Any] | None:
    """The coordinator's pauses, or None when it cannot say (no `pause` capability)."""
    if "pause" not in conn.capabilities():
        return None
    answer = ask(conn, {"op": "pause_state"})
    return answer if answer.get("result") == "pause_state" else None
