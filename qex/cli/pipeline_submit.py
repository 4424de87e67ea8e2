"""Submitting a pipeline file: every stage built and checked first, then submitted in order.

Stage ids are made on this side before anything is sent, so a stage's `needs = ["build"]`
becomes the id of THIS run's build. Stages go out in dependency order (the coordinator
requires that a job's `needs` already exist). A stage the coordinator refuses stops the rest;
the message says which stages are already queued and how to remove them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from qex.cli import jobcmd
from qex.cli.common import print_json, print_warnings, warn
from qex.cli.idfile import write_id_file
from qex.cli.submitting import Submitter
from qex.core.names import is_safe_name, new_id, printable_line, safe_name, visible
from qex.core.states import Exit


def _group_name(given: str | None, file_name: str | None, path: str) -> str:
    if given is not None:
        if not is_safe_name(given):
            jobcmd.fail(f"the name `{visible(given)}` is not one qex accepts; use letters, "
                        "digits, `.`, `_` and `-` only")
        return given
    if file_name:
        return file_name
    stem = Path(path).name.rsplit(".", 1)[0]
    return safe_name(stem) or "pipeline"


def _refused(message: str, stage: str, group: str, done: list[tuple[str, str]]) -> NoReturn:
    warn(f"the stage `{safe_name(stage)}` was not accepted: {message}")
    if done:
        warn(f"the stages before it are in the queue, in the group {group}:")
        for name, job_id in done:
            warn(f"  {safe_name(name)}: {job_id}")
        warn(f"remove them with `qex cancel {group}`, or keep them and submit the rest yourself")
    raise SystemExit(Exit.QEX_FAILED)


def submit_pipeline(file: str, *, name: str | None, id_file: str | None,
                    as_json: bool) -> NoReturn:
    from qex.cli.common import get_paths
    from qex.client.errors import ClientError
    from qex.core.capability_check import (
        Stage,
        floor_refusal,
        pipeline_refusal,
        version_warning,
    )
    from qex.core.jobfile import UNSET, JobFileError, parse_pipeline
    from qex.core.jobspec import SpecError, stage_options
    from qex.store.structured import StructuredError, read_structured

    paths = get_paths(Exit.QEX_FAILED)
    try:
        pipeline = parse_pipeline(read_structured(Path(file)), os.path.abspath(file))
    except (StructuredError, JobFileError) as exc:
        jobcmd.fail(str(exc))
    group = new_id()
    group_name = _group_name(name, pipeline.name, file)
    order = pipeline.topological_order()
    ids = {str(stage.name): new_id() for stage in order}
    submitter = Submitter.open(paths)
    built: list[tuple[str, Any]] = []
    checks: list[Stage] = []
    for stage in order:
        stage_name = str(stage.name)
        try:
            opts, job_file = stage_options(stage, ids, group=group, group_name=group_name)
        except SpecError as exc:
            jobcmd.fail(str(exc))
        spec, warnings = submitter.build(opts, job_file, job_id=ids[stage_name])
        for note in warnings:
            warn(f"{safe_name(stage_name)}: {note}")
        built.append((stage_name, spec))
        from_config = set()
        if stage.max_queue_time is UNSET and spec.max_queue_time is not None:
            from_config.add("max-queue-time")
        checks.append(Stage(stage_name, spec.to_dict(), from_config))
    info = submitter.conn.info()
    capabilities = submitter.conn.capabilities()
    refusal = floor_refusal(info) or pipeline_refusal(checks, capabilities, info)
    if refusal:
        jobcmd.fail(refusal)
    mismatch = version_warning(info)
    if mismatch:
        warn(mismatch)
    done: list[tuple[str, str]] = []
    for stage_name, spec in built:
        try:
            answer = submitter.conn.submit(spec.to_dict())
        except ClientError as exc:
            _refused(printable_line(exc.message), stage_name, group, done)
        print_warnings(answer)
        done.append((stage_name, str(answer["id"])))
        warn(f"{safe_name(stage_name)}: {answer['id']}")
    if id_file:
        from qex.cli.idfile import group_text

        write_id_file(id_file, group_text(Path(id_file), group, group_name, done))
    if as_json:
        print_json({"group": group, "group_name": safe_name(group_name),
                    "jobs": [{"name": safe_name(n), "id": i} for n, i in done]})
    else:
        sys.stdout.write(group + "\n")
        sys.stdout.flush()
    raise SystemExit(0)
