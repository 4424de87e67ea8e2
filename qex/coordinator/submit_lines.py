"""`submit_words` with `each_line`: a fan-out expanded HERE, one request for all its jobs.

`qex submit --each-line FILE -- CMD {}` used to build the first job's spec in the command
and then send one `submit` per line. The lean path sends the input's text with the options
instead (`protocol.EACH_LINE_TEXT`), and this handler does what the command did, with the
same code (`qex.core.fanout`), in the same order: the input and the template are checked
before anything else, then the first job is built as any `submit_words` job (the config
and dependency refusals read the same), and each line becomes a job of one new group.

An input of more than `fanout_source.PART_JOBS` jobs comes in parts, one request each
(`each_line.part`, `protocol.EACH_LINE_PARTS`): the group that the command named, the
number of the part's first job and the jobs of the whole input, so that each part's jobs
join one group and are named as one request would name them. Each part is checked as a
whole input is (its template, its first job's build), and the limit of `--max-jobs` holds
for the whole input, so a fan-out over it is refused before its first job.

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
    from qex.core.fanout_source import shown_source, too_many
    from qex.core.model import replace
    from qex.core.names import new_id

    if not request_ok(message) or EACH_LINE_FIELD not in message["options"]:
        return malformed()
    options = message["options"]
    sent = options[EACH_LINE_FIELD]
    part = sent.get("part")
    template = list(options.get("command") or ())
    source = shown_source(sent["path"])
    try:
        if part is not None and part["total"] > sent["max_jobs"]:
            raise fanout.FanoutError(too_many(source, part["total"], sent["max_jobs"]))
        parsed = fanout.parse_input(sent["text"].encode(), source=source,
                                    max_jobs=sent["max_jobs"])
        fanout.check_template(template)
    except fanout.FanoutError as exc:
        return build_refusal(str(exc))
    first_number, total = (1, len(parsed.lines)) if part is None else (
        part["first"], part["total"])
    if first_number + len(parsed.lines) - 1 > total:
        return malformed()
    group = new_id() if part is None else part["group"]
    group_name = fanout.group_name(options.get("name"), sent["path"])
    built = build_words(coord, message, fanout={
        "command": fanout.substitute(template, parsed.lines[0]), "group": group,
        "group_name": group_name, "learn_key": fanout.template_key(template)})
    if isinstance(built, dict):
        return built
    first, warnings = built
    names = fanout.job_names(options.get("name") or first.name, parsed.lines,
                             first=first_number, total=total)
    told: dict[str, Any] = {"build_warnings": warnings, "summary": parsed.summary(),
                            "group": group, "group_name": group_name, "total": total}
    specs = ((name, replace(first, id=first.id if index == 0 else new_id(), name=name,
                            command=fanout.substitute(template, line)))
             for index, (name, line) in enumerate(zip(names, parsed.lines, strict=True)))
    return await submit_each(coord, specs, told)
