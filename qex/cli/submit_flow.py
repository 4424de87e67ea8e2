"""One job from the command line: build, check, submit, then print, wait or follow.

The order matters for an agent that can be stopped at any moment: the id reaches the id file
(fsynced) and stderr BEFORE any wait begins, so whatever interrupts the wait, a later session
can attach with the id. With `--wait` and `--follow` the id goes to stderr because stdout
carries the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from qex.cli import jobcmd
from qex.cli.common import print_json, warn
from qex.cli.submitting import (
    Submitter,
    announce,
    read_job_file,
    submit_options_from,
    write_id_file,
)
from qex.core.names import new_id
from qex.core.states import exit_code_for

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.store.paths import Paths

PLAIN, WAIT, FOLLOW = "plain", "wait", "follow"


def submit_one(paths: Paths, values: dict[str, Any], *, mode: str, quiet: bool = False,
               as_json: bool = False, wait_timeout: float | None = None) -> NoReturn:
    """Submit the job that `values` (parsed submit options) describe, and finish the command."""
    from qex.cli.idfile import single_text
    from qex.cli.reach import deadline_of

    job_file = read_job_file(values["job"]) if values.get("job") else None
    opts = submit_options_from(values)
    submitter = Submitter.open(paths)
    file_needs = list(job_file.needs) if job_file is not None else []
    file_after = list(job_file.after) if job_file is not None else []
    opts.needs = submitter.dependency_ids([*file_needs, *(values.get("needs") or ())], "--needs")
    opts.after = submitter.dependency_ids([*file_after, *(values.get("after") or ())], "--after")
    spec, warnings = submitter.build(opts, job_file, job_id=new_id())
    for note in warnings:
        warn(note)
    submitter.preflight([spec.to_dict()])
    answer = submitter.send(spec)
    job_id = answer["id"]
    deduplicated = answer["deduplicated"]
    jobcmd.print_warnings(answer)
    if mode == PLAIN:
        write_id_file(values.get("id_file"), single_text(job_id))
        if as_json:
            print_json({"id": job_id, "deduplicated": deduplicated})
        else:
            print(job_id, flush=True)
        raise SystemExit(0)
    announce(job_id)
    write_id_file(values.get("id_file"), single_text(job_id))
    conn = submitter.conn
    # From here on the person's --wait-timeout bounds every request; the submit itself was
    # not bounded by it, so a slow answer can never leave it unknown whether the job exists.
    conn.until = deadline_of(wait_timeout)
    if mode == FOLLOW:
        from qex.cli.attaching import attach
        from qex.cli.waiting import WaitInterrupted, stop_signals

        # One handler from here to the end: a Ctrl-C that comes before the attach begins
        # stops the job too, as `qex run` promises (attach's own handler nests inside).
        with stop_signals():
            record: dict[str, Any] = {"id": job_id, "name": spec.name, "state": "queued"}
            owned = interrupted = False
            try:
                owned = not deduplicated and _own(conn, job_id)
                record = _record(conn, job_id, spec.to_dict())
            except WaitInterrupted:
                interrupted = True
            attach(paths, conn, record, timeout=wait_timeout, stop_job=not deduplicated,
                   owned=owned, interrupted=interrupted)
    record = _record(conn, job_id, spec.to_dict())
    finals, _ = jobcmd.wait_for(paths, conn, [record], timeout=wait_timeout,
                                narrate=not (quiet or as_json), may_start=True)
    if not quiet:
        from qex.cli.render_status import print_records

        print_records(paths, finals, as_json=as_json)
    raise SystemExit(exit_code_for(finals[0]))


def _own(conn: Connection, job_id: str) -> bool:
    """Ask the coordinator to cancel the job if this command vanishes before it starts."""
    from qex.client.errors import Refused

    if "own-job" not in conn.capabilities():
        warn("the coordinator cannot tie this job to this command, so the job stays queued "
             "even if this command is stopped before it starts")
        return False
    try:
        conn.own_job(job_id)
    except Refused:
        return False
    return True


def _record(conn: Connection, job_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The current record of a job just submitted (a minimal one if the coordinator is slow)."""
    from qex.client.errors import Refused
    from qex.core.protocol import NO_SUCH_JOB

    try:
        return conn.status(job_id)
    except Refused as exc:
        if exc.kind == NO_SUCH_JOB:
            jobcmd.fail(f"the coordinator accepted the job {job_id} and then did not know it; "
                        "run `qex list` to look for it")
    return {"id": job_id, "name": spec.get("name"), "state": "queued",
            "submitted_at": spec.get("submitted_at")}


def parse_wait_timeout(text: str | None) -> float | None:
    if text is None:
        return None
    from qex.core.units import UnitError, parse_duration

    try:
        return parse_duration(text, what="--wait-timeout")
    except UnitError as exc:
        jobcmd.fail(str(exc))


__all__ = ["FOLLOW", "PLAIN", "WAIT", "parse_wait_timeout", "submit_one"]
