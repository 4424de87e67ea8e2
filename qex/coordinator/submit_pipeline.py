"""`submit_pipeline`: a pipeline file's stages built and submitted HERE, in one request.

`qex pipeline FILE` used to parse the file (`tomllib` or YAML), build every stage's spec and
send one `submit` per stage. The lean path sends the file's text as the command read it
(the path as typed, for the sentences that name it; the absolute path, for the stages'
relative `cwd`), and this handler does what the command did, with the same code and in the
same order: the file and the group's name first, then every stage built (the config's notes
first, each stage's warnings under its name, then the note on the command's version), then
each stage submitted in the order of its dependencies. A coordinator from before this
request answers that it does not know it, and the command takes the full path.

The stages go in through `submit_words.submit_each`, which writes them in durable batches
and yields to the event loop between two. A stage that the submit refuses ends the pipeline
as it ended the command's loop: the answer is the refusal, with the stage (`stage`) and the
stages already queued (`jobs`).
"""

from __future__ import annotations

from typing import Any

from qex.coordinator.state import Coordinator
from qex.coordinator.submit_words import (
    BuildContext,
    build_refusal,
    submit_each,
    version_note,
)
from qex.core import protocol


def request_ok(message: dict[str, Any]) -> bool:
    """The request has the shape of `protocol.submit_pipeline`."""
    sent, environ = message.get("pipeline"), message.get("environ")
    return (isinstance(sent, dict) and set(sent) == {"path", "source", "text"}
            and all(isinstance(v, str) for v in sent.values())
            and isinstance(message.get("name"), str | None)
            and isinstance(environ, dict) and isinstance(message.get("cwd"), str)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items()))


async def handle_submit_pipeline(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    from pathlib import Path

    from qex.core.jobfile import JobFileError, parse_pipeline
    from qex.core.jobspec import SpecError, stage_options
    from qex.core.names import new_id, safe_name
    from qex.store.structured import StructuredError, parse_structured

    if not request_ok(message):
        return protocol.error(protocol.INTERNAL,
                              "qex could not read this pipeline: the request is malformed")
    sent = message["pipeline"]
    try:
        pipeline = parse_pipeline(parse_structured(sent["text"].encode(), Path(sent["path"])),
                                  sent["source"])
        group_name = pipeline.group_name(message.get("name"), sent["path"])
    except (StructuredError, JobFileError) as exc:
        return build_refusal(str(exc))
    group = new_id()
    order = pipeline.topological_order()
    ids = {str(stage.name): new_id() for stage in order}
    ctx = BuildContext.of(message)
    if isinstance(ctx, dict):
        return ctx
    warnings = ctx.notes
    built: list[tuple[str, Any]] = []
    for stage in order:
        name = str(stage.name)
        try:
            opts, job_file = stage_options(stage, ids, group=group, group_name=group_name)
        except SpecError as exc:
            return build_refusal(str(exc))
        one = ctx.build(opts, job_file, job_id=ids[name])
        if isinstance(one, dict):
            return one
        spec, notes = one
        warnings.extend(f"{safe_name(name)}: {note}" for note in notes)
        built.append((name, spec))
    note = version_note(coord, message)
    if note:
        warnings.append(note)
    return await submit_each(coord, built, {"build_warnings": warnings, "group": group,
                                            "group_name": group_name})
