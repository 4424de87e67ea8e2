"""`qex submit` on the fast path: the coordinator builds the spec (`submit_words`).

The command sends what only it knows (its options, environment, directory and version);
the coordinator reads the config, measures the machine, asks the learner and builds the
spec with the same code the click path runs here. The output, the id file, the order of
the warnings and the exit codes are those of `qex.cli.submit_flow`.

This is the one place that speaks the `submit_words` request, so it can move onto a typed
client method without touching the rest of the fast path.
"""

from __future__ import annotations

import os
from typing import Any

#: The sentence start of an older coordinator's answer to a request it does not know.
_UNKNOWN_REQUEST = "this coordinator does not know the request"


def submit(params: dict[str, Any], options: dict[str, Any], *, wait: bool, quiet: bool,
           as_json: bool, wait_timeout: float | None) -> int | None:
    """Submit one job; None (having sent nothing) when the click path must do it."""
    from qex.cli.common import die, get_paths, warn
    from qex.client.connection import CoordinatorError, connect
    from qex.core import protocol

    paths = get_paths(121)
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    try:
        conn = connect(paths, start=False)
    except CoordinatorError as exc:
        die(exc.message, exc.code)
    if conn is None:
        return None  # nobody listens: the click path checks the config and starts one
    request = {"op": "submit_words", "options": options, "environ": dict(os.environ),
               "cwd": cwd, "client_version": protocol.VERSION}
    try:
        answer = conn.request(request)
    except CoordinatorError as exc:
        die(exc.message, exc.code)
    message = str(answer.get("message") or "the coordinator gave no reason")
    if answer.get("result") == "error" and message.startswith(_UNKNOWN_REQUEST):
        conn.close()
        return None
    for note in answer.get("build_warnings") or ():
        warn(str(note))
    if answer.get("result") != "submitted" or not isinstance(answer.get("id"), str):
        if answer.get("build"):
            die(message, 121)
        from qex.core.names import printable_line

        die(printable_line(message), 127 if answer.get("kind") == "no_such_job" else 121)
    from qex.cli.jobcmd import print_warnings

    job_id = str(answer["id"])
    print_warnings(answer)
    if not wait:
        _id_file(params["id_file"], job_id)
        if as_json:
            from qex.cli.common import print_json

            print_json({"id": job_id, "deduplicated": bool(answer.get("deduplicated"))})
        else:
            print(job_id, flush=True)
        return 0
    from qex.cli import jobcmd
    from qex.cli.submit_flow import _record
    from qex.cli.submitting import announce
    from qex.core.states import exit_code_for

    announce(job_id)
    _id_file(params["id_file"], job_id)
    record = _record(conn, job_id, {"submitted_at": None})
    finals, _ = jobcmd.wait_for(paths, conn, [record], timeout=wait_timeout,
                                narrate=not (quiet or as_json), may_start=True)
    if not quiet:
        from qex.cli.render_status import print_records

        print_records(paths, finals, as_json=as_json)
    return exit_code_for(finals[0])


def _id_file(path_text: str | None, job_id: str) -> None:
    if not path_text:
        return
    from qex.cli.idfile import single_text
    from qex.cli.submitting import write_id_file

    write_id_file(path_text, single_text(job_id))
