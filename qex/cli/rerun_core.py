"""`qex rerun`'s lean body, shared by the fast path and the click command.

One word in, one request out: a whole id goes to the coordinator as it is, any other word is
resolved as every fast command resolves it (`fastread.job_record`), and the coordinator
reads the recorded spec and submits it again (`protocol.rerun`,
`qex.coordinator.submit_again`). Whatever this body cannot decide goes
to the full body in `qex.cli.commands.rerun`, before anything was changed: nobody listens
(the full body starts a coordinator), the word is not one plain job or the coordinator knows
no job by that id (the full body says what the word names), or the coordinator is older
than the request.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def rerun(word: str, id_file: str | None) -> int | None:
    """0 once the job is queued again under a new id (printed on stdout); None, with nothing
    sent that changes anything, when the full body must do it. A refusal ends the command
    with its code (121; 127 for a job the coordinator does not know)."""
    import os

    from qex.cli.wire import Wire

    wire = Wire.connect()
    if wire is None:
        return None
    from qex.cli.fastwait import is_full_id

    if is_full_id(word):
        old_id: object = word.lower()  # asked at once: a group's id is refused as unknown
    else:
        from qex.cli.fastread import job_record

        try:
            record = job_record(wire, word)
        except BaseException:
            wire.close()
            raise
        old_id = record.get("id") if record is not None else None
    if not isinstance(old_id, str):
        wire.close()
        return None
    from qex import __version__
    from qex.cli.fastsubmit import lean_request
    from qex.core import protocol

    answer = lean_request(protocol.rerun(old_id, environ=dict(os.environ),
                                         client_version=__version__), wire)
    if answer is None or protocol.unknown_request(answer) or answer.get("not_found"):
        return None  # nothing was queued; the full body says what the word names
    show(answer, old_id, id_file)
    return 0


def show(answer: dict[str, Any], old_id: str, id_file: str | None) -> None:
    """The config's notes and the coordinator's warnings, the id file, the line that says
    which job runs again, and the new id; a refusal ends the command here."""
    from qex.cli.common import print_warnings, warn

    for note in answer.get("build_warnings") or ():
        warn(str(note))
    new_id = answer.get("id")
    if answer.get("result") != "submitted" or not isinstance(new_id, str):
        from qex.cli.fastsubmit import refused_before_any

        refused_before_any(answer)
    print_warnings(answer)
    if id_file:
        from qex.cli.idfile import single_text, write_id_file

        write_id_file(id_file, single_text(new_id))
    warn(f"the job {old_id[:8]} runs again as {new_id}")
    import sys

    sys.stdout.write(new_id + "\n")
    sys.stdout.flush()
