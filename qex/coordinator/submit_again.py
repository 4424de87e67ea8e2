"""`rerun`: submit a recorded job again, built here from its spec on the disk.

The command sends the id of the one job its word named (it resolves the word as every fast
command does) and its environment, for the config that the command would read; the
coordinator reads the spec, makes the new job (`qex.core.rerun_spec.again`) and submits it
as any other. The command then needs neither its config nor the full client: before, a
rerun loaded click, the config and the capability checks only to send one spec.
"""

from __future__ import annotations

import time
from typing import Any

from qex.coordinator.state import Coordinator
from qex.coordinator.submit import handle_submit
from qex.coordinator.submit_words import (
    build_refusal,
    command_config,
    config_notes,
    version_note,
)
from qex.core import protocol
from qex.core.names import is_uuid, new_id
from qex.core.rerun_spec import again, unreadable
from qex.store import jobs as job_files


def _request_ok(message: dict[str, Any]) -> bool:
    environ = message.get("environ")
    return (isinstance(message.get("id"), str) and is_uuid(message["id"])
            and isinstance(environ, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items()))


def handle_rerun(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    if not _request_ok(message):
        return protocol.error(protocol.INTERNAL,
                              "qex could not read this rerun: the request is malformed")
    old_id = str(message["id"]).lower()
    job = coord.jobs.get(old_id)
    if job is None:
        answer = build_refusal(f"no job has the id {old_id}; run `qex list` to see the jobs "
                               "this queue knows")
        answer["not_found"] = True
        return answer
    found = command_config(message["environ"])
    if isinstance(found, dict):
        return found
    _paths, config = found
    spec = job_files.read_spec(job.dir)
    if spec is None or not spec.command:
        return build_refusal(unreadable(old_id))
    fresh = again(spec, job_id=new_id(), now=time.time())
    answer = handle_submit(coord, protocol.submit(fresh.to_dict()))
    note = version_note(coord, message)
    answer["build_warnings"] = [*config_notes(config), *([note] if note else [])]
    answer["from"] = old_id
    return answer
