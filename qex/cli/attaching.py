"""Following one job to its end with its output on this terminal: `run`, and `--follow`.

The output arrives from the job's FIRST line. When the job stops, a last sentence on stderr
names any cause that is not the job's own exit (a kill, a cancel, a time limit, memory, a
failed dependency) and says whether THIS command caused it, because 125 alone does not tell
"you pressed Ctrl-C" from "another agent killed your job".

Only `qex run` (and `qex submit --follow`) stop the job on Ctrl-C or SIGTERM: they started it
and the person watching it owns it. `qex status --follow` and a run that a dedupe key joined
to someone else's job only stop watching (122).
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any, NoReturn

from qex.cli.common import die, warn
from qex.core.names import printable_line
from qex.core.states import Exit, State, exit_code_for

if TYPE_CHECKING:
    from qex.cli.follow_output import OutputFollower
    from qex.client.connection import Connection
    from qex.store.paths import Paths

KILL_GRACE = 10.0


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(int(number)).name
    except (TypeError, ValueError):
        return f"signal {number}"


def final_sentence(record: dict[str, Any], *, stopped_by_us: str | None) -> str | None:
    """Why the job ended, when the reason is not its own exit; None for completed/failed."""
    from qex.cli.waiting import job_of

    job = job_of(record)
    if job is None:
        return None  # a state this qex does not know: no sentence of its own to add
    job_id = job.id
    state = job.state
    error = job.error
    detail = f": {printable_line(error)}" if isinstance(error, str) and error.strip() else ""
    if state is State.KILLED:
        if stopped_by_us == "kill":
            return f"this command stopped the job {job_id}"
        sig = job.signal
        what = f"the signal {_signal_name(sig)}" if sig is not None else "a kill"
        return (f"{what} stopped the job {job_id}, and this command did not send it; "
                f"`qex status {job_id}` holds the record")
    if state is State.CANCELLED:
        if stopped_by_us == "cancel":
            return f"this command removed the job {job_id} from the queue before it started"
        return (f"a different command removed the job {job_id} from the queue before it "
                "started")
    if state is State.TIMEOUT:
        return f"the job {job_id} ran longer than its --timeout, so qex stopped it"
    if state is State.OOM:
        return (f"the kernel stopped the job {job_id} for memory{detail}; `qex status {job_id}` "
                "compares the claim with the use")
    if state is State.SKIPPED:
        return f"the job {job_id} did not run, because a job that it needs did not succeed{detail}"
    if state is State.EXPIRED:
        return f"the job {job_id} never started{detail}"
    if state is State.FAILED and job.exit_code is None and job.signal is not None:
        return f"the signal {_signal_name(job.signal)} stopped the job {job_id}"
    if state is State.FAILED and job.exit_code is None:
        return f"the job {job_id} failed{detail}"
    return None


def _stop(paths: Paths, job_id: str) -> str | None:
    """Stop the job this command started: cancel it while queued, else TERM then KILL."""
    from qex.cli.reach import refusal
    from qex.cli.waiting import job_of
    from qex.client.connection import CoordinatorError, Refused, connect

    try:
        # A new connection: the old one is busy with its `wait` request.
        conn = connect(paths, start=False)
        if conn is None:
            warn(f"no coordinator answers, so this command could not stop the job {job_id}; "
                 f"run `qex kill {job_id}`")
            return None
        with conn:
            try:
                record: dict[str, Any] | None = conn.status(job_id)
            except Refused:
                record = None
            job = job_of(record)
            if (job is not None and job.state is State.QUEUED
                    and refusal(conn.cancel, job_id) is None):
                return "cancel"
            # A job that left the queue meanwhile may still be starting: the coordinator
            # holds the kill until its process exists (`control.STARTING_KILL_SECS`).
            failed = refusal(conn.kill, job_id, int(signal.SIGTERM), KILL_GRACE)
            if failed is None:
                return "kill"
            if failed.message:
                warn(failed.message)
    except CoordinatorError as exc:
        warn(f"this command could not stop the job {job_id}: {exc.message}")
    return None


def attach(paths: Paths, conn: Connection | None, record: dict[str, Any], *,
           timeout: float | None, stop_job: bool, owned: bool = False,
           follower: OutputFollower | None = None) -> NoReturn:
    """Copy the output until the job is final, then exit with its band code.

    `follower`: the copy so far, when the lean follow (`qex.cli.fastfollow`) began it; a
    stop signal that it held is delivered as the wait begins, and acted on then.
    """
    from qex.cli.follow_output import OutputFollower
    from qex.cli.waiting import (
        JobGone,
        Waiter,
        WaitInterrupted,
        WaitSettings,
        WaitTimedOut,
        report_interrupted,
        report_timeout,
        stop_signals,
    )
    from qex.client.connection import CoordinatorError, connect

    job_id = str(record["id"])
    if follower is None:
        follower = OutputFollower(paths.job_dir(job_id))
    settings = WaitSettings(timeout=timeout, narrate=True, may_start=True, tick=follower.pump)
    stopped: str | None = None
    try:
        # The waiter exists before the signals are released: a Ctrl-C held since the submit
        # is delivered as `stop_signals` starts, and the handler below needs the waiter.
        waiter = Waiter(paths, conn, [record], settings)
        if owned:
            waiter.on_reconnect = lambda new: _own(new, job_id)
        try:
            with stop_signals():
                final = waiter.wait_all()[0]
        except WaitInterrupted:
            if not stop_job:
                follower.finish()
                report_interrupted([job_id])
                raise SystemExit(Exit.WAIT_INTERRUPTED) from None
            latest = waiter.records[job_id]
            # Stop first, then close: closing the line that owns a queued job would cancel
            # it behind our back, and the final sentence would blame "a different command".
            stopped = _stop(paths, job_id)
            waiter.close()
            # Handlers stay at their defaults now: a second Ctrl-C ends this command at once.
            settings.timeout = None
            settings.narrate = False
            try:
                again = connect(paths, start=False)
            except CoordinatorError:
                again = None
            waiter = Waiter(paths, again, [latest], settings)
            final = waiter.wait_all()[0]
    except WaitTimedOut:
        follower.finish()
        report_timeout([job_id])
        raise SystemExit(Exit.WAIT_TIMEOUT) from None
    except JobGone as exc:
        follower.finish()
        die(exc.message, Exit.NO_SUCH_JOB)
    follower.finish()
    sentence = final_sentence(final, stopped_by_us=stopped)
    if sentence:
        warn(sentence)
    raise SystemExit(exit_code_for(final))


def _own(conn: Connection, job_id: str) -> None:
    """Tell a new coordinator that this command owns the job (it cancels it if we vanish)."""
    from qex.client.errors import ClientError

    try:
        if "own-job" in conn.capabilities():
            conn.own_job(job_id)
    except ClientError:
        pass
