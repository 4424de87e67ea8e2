"""One job from the command line: build, check, submit, then print, wait or follow.

The order matters for an agent that can be stopped at any moment: the id reaches the id file
(fsynced) and stderr BEFORE any wait begins, so whatever interrupts the wait, a later session
can attach with the id. With `--wait` and `--follow` the id goes to stderr because stdout
carries the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from qex.cli import jobcmd
from qex.cli.common import print_json, print_warnings, warn
from qex.cli.fastwait import announce
from qex.cli.idfile import write_id_file
from qex.cli.submitting import Submitter, read_job_file, submit_options_from
from qex.core.names import new_id
from qex.core.states import exit_code_for

if TYPE_CHECKING:
    from qex.store.paths import Paths

PLAIN, WAIT, FOLLOW = "plain", "wait", "follow"


def submit_one(paths: Paths, values: dict[str, Any], *, mode: str, quiet: bool = False,
               as_json: bool = False, wait_timeout: float | None = None) -> NoReturn:
    """Submit the job that `values` (parsed submit options) describe, and finish the command."""
    from qex.cli.idfile import single_text

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
    if mode == FOLLOW:
        # Ctrl-C stops a followed job; one that arrives before `attach` listens (while we
        # own the job and fetch its record) is held until then, not lost to a bare exit.
        from qex.cli.fastfollow import hold_stop_signals

        hold_stop_signals()
    job_id = str(answer["id"])
    deduplicated = bool(answer.get("deduplicated"))
    print_warnings(answer)
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
    if mode == FOLLOW:
        from qex.cli.attaching import attach

        owned = not deduplicated and _own(conn, job_id)
        attach(paths, conn, _record(conn, job_id, spec.to_dict()), timeout=wait_timeout,
               stop_job=not deduplicated, owned=owned)
    raise SystemExit(wait_and_show(paths, conn, _record(conn, job_id, spec.to_dict()),
                                   timeout=wait_timeout, quiet=quiet, as_json=as_json))


def wait_and_show(paths: Paths, conn: Any, record: dict[str, Any], *, timeout: float | None,
                  quiet: bool, as_json: bool) -> int:
    """`submit --wait`, after the submit (the click and the fast path alike): wait for the
    job, print its record and where its output is, and give the band code."""
    finals, _ = jobcmd.wait_for(paths, conn, [record], timeout=timeout,
                                narrate=not (quiet or as_json), may_start=True)
    if not quiet:
        from qex.cli.status_print import print_records

        print_records(paths, finals, as_json=as_json)
        if not as_json:
            from qex.cli.fastlogs import output_hint

            job_id = str(finals[0].get("id"))
            hint = output_hint(paths.job_dir(job_id), job_id)
            if hint:
                from qex.cli.wait_ends import say

                say(hint)
    return exit_code_for(finals[0])


def _own(conn: Any, job_id: str) -> bool:
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


def _record(conn: Any, job_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The current record of a job just submitted (a minimal one if the coordinator is slow)."""
    from qex.client.errors import Refused
    from qex.core.protocol import NO_SUCH_JOB

    try:
        return dict(conn.status(job_id))
    except Refused as exc:
        if exc.kind != NO_SUCH_JOB:
            return {"id": job_id, "name": spec.get("name"), "state": "queued",
                    "submitted_at": spec.get("submitted_at")}
        jobcmd.fail(f"the coordinator accepted the job {job_id} and then did not know it; "
                    "run `qex list` to look for it")


def parse_wait_timeout(text: str | None) -> float | None:
    if text is None:
        return None
    from qex.core.units import UnitError, parse_duration

    try:
        return parse_duration(text, what="--wait-timeout")
    except UnitError as exc:
        jobcmd.fail(str(exc))


__all__ = ["FOLLOW", "PLAIN", "WAIT", "parse_wait_timeout", "submit_one"]
