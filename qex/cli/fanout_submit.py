"""`qex submit --each-line FILE -- CMD {}`: one job per line, one group id for all of them.

All or nothing wherever qex can make it so: the input, the template and the claim are checked
before the first job is submitted. The one fault qex cannot rule out is a coordinator that
stops in the middle; then the jobs already submitted stay queued, and the message gives their
group id and the command that cancels them, because stdout only carries the group id of a
fan-out that succeeded in full.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from qex.cli import jobcmd
from qex.cli.common import warn
from qex.cli.fanout_output import FanoutReport
from qex.cli.submitting import Submitter, submit_options_from
from qex.core import fanout, model
from qex.core.names import new_id, printable_line

if TYPE_CHECKING:
    from qex.store.paths import Paths


def read_input(source: str) -> tuple[bytes, str]:
    """The raw input (`fanout_input`, which the lean path may have read already) and how
    messages name it; an unreadable file ends the command with 121."""
    from qex.cli.fanout_input import read_input as read_once

    try:
        return read_once(source)
    except OSError as exc:
        jobcmd.fail(f"qex cannot read the --each-line file {source} ({exc.strerror or exc}); "
                    "check the path")


def submit_fanout(paths: Paths, values: dict[str, Any], *, source: str, max_jobs: int) -> NoReturn:
    from qex.cli.exits import code_for
    from qex.client.errors import ClientError

    data, shown = read_input(source)
    try:
        parsed = fanout.parse_input(data, source=shown, max_jobs=max_jobs)
        template = list(values.get("command_args") or ())
        fanout.check_template(template)
    except fanout.FanoutError as exc:
        jobcmd.fail(str(exc))
    group = new_id()
    group_name = fanout.group_name(values.get("name"), source)
    opts = submit_options_from(values)
    opts.command = fanout.substitute(template, parsed.lines[0])
    opts.group = group
    opts.group_name = group_name
    submitter = Submitter.open(paths)
    opts.needs = submitter.dependency_ids(values.get("needs") or (), "--needs")
    opts.after = submitter.dependency_ids(values.get("after") or (), "--after")
    first, warnings = submitter.build(opts, None, job_id=new_id(),
                                      learn_key=fanout.template_key(template))
    for note in warnings:
        warn(note)
    names = fanout.job_names(values.get("name") or first.name, parsed.lines)
    specs = [
        model.replace(first, id=first.id if index == 0 else new_id(), name=name,
                            command=fanout.substitute(template, line))
        for index, (name, line) in enumerate(zip(names, parsed.lines, strict=True))
    ]
    submitter.preflight([specs[0].to_dict()])
    warn(parsed.summary())
    report = FanoutReport(group, len(specs))
    for spec in specs:
        try:
            answer = submitter.conn.submit(spec.to_dict())
        except ClientError as exc:
            report.abort(printable_line(exc.message), code_for(exc, "submit"))
        report.accepted(spec.name, str(answer["id"]), answer["warning"])
    report.finish(group_name, values.get("id_file"))
    raise SystemExit(0)
