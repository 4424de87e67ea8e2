"""Following a short job through `qex.cli.wire` alone: `qex run`, `submit --follow`, and
`status ID --follow`.

`qex run -- make test` is what a person types and what an agent calls when it wants the
output here and the exit code back; before, every call loaded click, the job-spec code and
the full wait, about eight interpreter start-ups in all. Here the output is copied by the
same `OutputFollower` as the full attach (`qex.cli.attaching.attach`), while one `wait`
request on the submit's own connection waits for the job to end. When it ends plainly
(`fastwait.simple_result`: completed, or failed with its own exit code) within
`fastwait.LIVE_WAIT_SECS`, the last output is copied and its code returned: the full attach
adds nothing to such an end. Everything else is handed over to the full attach with the copy
so far (no byte is shown twice) and the latest record: a queued job (the full wait narrates
its reason), a job that runs longer, an end that carries a sentence (a kill, a time limit,
memory), and a stop signal.

SIGINT and SIGTERM are BLOCKED from the submit's answer on (`hold_stop_signals`), as the
full path holds them: a Ctrl-C stays pending, this loop sees it within `wire.TICK_SECS`,
and hands over; the full attach then releases the signals inside its own handler, which
stops the job as a Ctrl-C during the full wait would (`qex run`), or only the watching
(`status --follow`, a deduplicated run).

The connection that owns the job (`own_job`: the coordinator cancels a queued job when its
owner goes away) stays open until this process ends once the full attach takes over, so
ownership never lapses in between (`_KEPT`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from qex.cli.follow_output import OutputFollower
    from qex.cli.wire import Wire

#: Connections kept open until the process ends (see the module's last paragraph).
_KEPT: list[Wire] = []


class HeldSignals:
    """SIGINT and SIGTERM blocked: one that arrives waits, pending, until they are released
    (`release`, or the full wait's `wait_ends.stop_signals`, which delivers it to its
    handler)."""

    def __init__(self) -> None:
        import _signal  # type: ignore[import-not-found]  # `signal` would import `enum`

        self._watched = {_signal.SIGINT, _signal.SIGTERM}
        self._before = _signal.pthread_sigmask(_signal.SIG_BLOCK, self._watched)

    def pending(self) -> bool:
        """True when one of them arrived while held."""
        import _signal

        return bool(self._watched & _signal.sigpending())

    def release(self) -> None:
        """The signal mask as it was; a pending signal is delivered now."""
        import _signal

        _signal.pthread_sigmask(_signal.SIG_SETMASK, self._before)


def hold_stop_signals() -> HeldSignals:
    """Hold Ctrl-C and SIGTERM from the moment a followed job exists: one that arrives before
    the wait listens (while the command owns the job and fetches its record) must reach the
    wait, which stops the job, and not end the command with the job left running."""
    return HeldSignals()


def follow_submitted(wire: Wire, job_id: str, record: dict[str, Any] | None,
                     held: HeldSignals, *, seconds: float, timeout: float | None,
                     stop_job: bool, owned: bool) -> int:
    """The exit code of the job that this command submitted and follows, on the connection
    that submitted it (and owns it, when `owned`), with the stop signals held. `record`: its
    record after the submit, or None when that did not come. `seconds`: how long the lean
    wait may take; `timeout`: the reader's limit, for the full attach."""
    from qex.cli.wire import state_dir

    state = state_dir(os.environ)
    if record is None or state is None:
        _hand_over(wire, {"id": job_id, "state": "queued"}, None, timeout=timeout,
                   stop_job=stop_job, owned=owned)
    return _follow(wire, record, os.path.join(state, "jobs", job_id), held, seconds=seconds,
                   timeout=timeout, stop_job=stop_job, owned=owned)


def follow_status(word: str, timeout: float | None) -> int | None:
    """`qex status WORD --follow` [--timeout]: the job's exit code, or None (having sent
    nothing that changes anything) when the full body must resolve `word`: a name, a group,
    no coordinator."""
    import time

    from qex.cli.fastread import job_record
    from qex.cli.fastwait import left_of, live_budget
    from qex.cli.wire import Wire, state_dir

    began = time.monotonic()
    state = state_dir(os.environ)
    wire = Wire.connect() if state is not None else None
    if wire is None or state is None:
        return None
    record = job_record(wire, word)
    job_id = record.get("id") if record is not None else None
    if record is None or not isinstance(job_id, str):
        wire.close()
        return None
    held = hold_stop_signals()
    timeout = left_of(timeout, began)
    return _follow(wire, record, os.path.join(state, "jobs", job_id), held,
                   seconds=live_budget(timeout), timeout=timeout, stop_job=False, owned=False)


def _follow(wire: Wire, record: dict[str, Any], job_dir: str, held: HeldSignals, *,
            seconds: float, timeout: float | None, stop_job: bool, owned: bool) -> int:
    import time

    from qex.cli.fastwait import LIVE_STATES, left_of, simple_result
    from qex.cli.follow_output import OutputFollower
    from qex.cli.wire import status_record

    began = time.monotonic()
    follower = OutputFollower(job_dir)
    job_id = str(record["id"])

    def tick() -> bool:
        follower.pump()
        return not held.pending()

    if record.get("state") in LIVE_STATES and not held.pending():
        ended = status_record(wire.ask({"op": "wait", "id": job_id}, seconds, tick=tick))
        if ended is not None:
            record = ended
    found = simple_result(record)
    if found is None or held.pending():
        _hand_over(wire, record, follower, timeout=left_of(timeout, began), stop_job=stop_job,
                   owned=owned)
    follower.finish()
    wire.close()
    held.release()
    return found[1]


def _hand_over(wire: Wire, record: dict[str, Any], follower: OutputFollower | None, *,
               timeout: float | None, stop_job: bool, owned: bool) -> NoReturn:
    """The full attach from here: on a new connection, with the newest record, the copy so
    far and the signals still held (it releases them)."""
    from qex.cli.attaching import attach
    from qex.cli.common import get_paths
    from qex.client.connection import connect
    from qex.client.errors import ClientError
    from qex.core.states import Exit

    _KEPT.append(wire)
    paths = get_paths(Exit.QEX_FAILED)
    job_id = str(record["id"])
    try:
        conn = connect(paths, start=False)
    except ClientError:
        conn = None  # the attach looks for a coordinator, and reads the record, on its own
    if conn is not None:
        from qex.cli.submit_flow import _record

        record = _record(conn, job_id, record)
    attach(paths, conn, record, timeout=timeout, stop_job=stop_job, owned=owned,
           follower=follower)
