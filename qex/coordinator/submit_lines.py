"""`submit_words` with `each_line`: a fan-out expanded HERE, one request for all its jobs.

`qex submit --each-line FILE -- CMD {}` used to build the first job's spec in the command
and then send one `submit` per line. The lean path sends the input's text with the options
instead (`protocol.EACH_LINE_TEXT`), and this handler does what the command did, with the
same code (`qex.core.fanout`), in the same order: the input and the template are checked
before anything else, then the first job is built as any `submit_words` job (the config
and dependency refusals read the same), and each line becomes a job of one new group.

The jobs go in through `submit_words.submit_each`, which writes them in durable batches and
yields to the event loop between two. A job that the submit refuses ends the fan-out as it
ended the command's loop: the answer is the refusal, with the jobs already queued (`jobs`),
which the command lists with the way to remove them.
"""

from __future__ import annotations

from typing import Any

from qex.coordinator.state import Coordinator
from qex.coordinator.submit_words import (
    EACH_LINE_FIELD,
    build_refusal,
    build_words,
    malformed,
    request_ok,
    submit_each,
)


async def handle_submit_lines(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    from qex.core import fanout
    from qex.core.fanout_source import shown_source
    from qex.core.model import replace
    from qex.core.names import new_id

    if not request_ok(message) or EACH_LINE_FIELD not in message["options"]:
        return malformed()
    options = message["options"]
    sent = options[EACH_LINE_FIELD]
    template = list(options.get("command") or ())
    try:
        parsed = fanout.parse_input(sent["text"].encode(), source=shown_source(sent["path"]),
                                    max_jobs=sent["max_jobs"])
        fanout.check_template(template)
    except fanout.FanoutError as exc:
        return build_refusal(str(exc))
    group = new_id()
    group_name = fanout.group_name(options.get("name"), sent["path"])
    built = build_words(coord, message, fanout={
        "command": fanout.substitute(template, parsed.lines[0]), "group": group,
        "group_name": group_name, "learn_key": fanout.template_key(template)})
    if isinstance(built, dict):
        return built
    first, warnings = built
    names = fanout.job_names(options.get("name") or first.name, parsed.lines)
    told: dict[str, Any] = {"build_warnings": warnings, "summary": parsed.summary(),
                            "group": group, "group_name": group_name, "total": len(names)}
    specs = ((name, replace(first, id=first.id if index == 0 else new_id(), name=name,
                            command=fanout.substitute(template, line)))
             for index, (name, line) in enumerate(zip(names, parsed.lines, strict=True)))
    return await submit_each(coord, specs, told)
