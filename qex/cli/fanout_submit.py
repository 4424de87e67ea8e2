"""`qex submit --each-line FILE -- CMD {}`: one job per line, one group id for all of them.

All or nothing wherever qex can make it so: the input, the template and the claim are checked
before the first job is submitted. The one fault qex cannot rule out is a coordinator that
stops in the middle; then the jobs already submitted stay queued, and the message gives their
group id and the command that cancels them, because stdout only carries the group id of a
fan-out that succeeded in full.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn

from qex.cli import jobcmd
from qex.cli.common import print_warnings, warn
from qex.cli.idfile import write_id_file
from qex.cli.submitting import Submitter, submit_options_from
from qex.core import fanout, model
from qex.core.names import new_id, printable_line, safe_name

if TYPE_CHECKING:
    from qex.store.paths import Paths


def read_input(source: str) -> tuple[bytes, str]:
    """The raw input (at most one byte past the cap, so the cap can be reported)."""
    limit = fanout.MAX_INPUT_BYTES + 1
    if source == "-":
        return sys.stdin.buffer.read(limit), "the standard input"
    try:
        with open(source, "rb") as handle:
            return handle.read(limit), source
    except OSError as exc:
        jobcmd.fail(f"qex cannot read the --each-line file {source} ({exc.strerror or exc}); "
                    "check the path")


def _abort(message: str, code: int, group: str, done: list[tuple[str, str]],
           total: int) -> NoReturn:
    warn(message)
    if done:
        warn(f"the fan-out stopped after {len(done)} of {total} jobs; those jobs are in the "
             f"queue, in the group {group}:")
        for name, job_id in done:
            warn(f"  {safe_name(name)}: {job_id}")
        warn(f"remove them with `qex cancel {group}` (queued jobs) or `qex kill {group}`, or "
             "submit the missing lines alone")
    raise SystemExit(code)


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
    done: list[tuple[str, str]] = []
    seen_warnings: dict[str, int] = {}
    for spec in specs:
        try:
            answer = submitter.conn.submit(spec.to_dict())
        except ClientError as exc:
            _abort(printable_line(exc.message), code_for(exc, "submit"), group, done, len(specs))
        warning = answer["warning"]
        if warning is not None and warning.strip():
            if warning not in seen_warnings:
                print_warnings(answer)
            seen_warnings[warning] = seen_warnings.get(warning, 0) + 1
        done.append((spec.name, str(answer["id"])))
        warn(f"{safe_name(spec.name)}: {answer['id']}")
    for count in seen_warnings.values():
        if count > 1:
            warn(f"the same warning applies to {count - 1} more job(s) of this fan-out")
    if values.get("id_file"):
        from pathlib import Path

        from qex.cli.idfile import group_text

        write_id_file(values["id_file"], group_text(Path(values["id_file"]), group, group_name,
                                                    done))
    warn(f"{len(done)} jobs in the group `{safe_name(group_name)}`")
    print(group, flush=True)
    raise SystemExit(0)
