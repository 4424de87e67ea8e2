"""Submitting a pipeline file: every stage built and checked first, then submitted in order.

Stage ids are made on this side before anything is sent, so a stage's `needs = ["build"]`
becomes the id of THIS run's build. Stages go out in dependency order (the coordinator
requires that a job's `needs` already exist). A stage the coordinator refuses stops the rest;
the message says which stages are already queued and how to remove them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

from qex.cli import jobcmd
from qex.cli.common import warn
from qex.cli.pipeline_output import PipelineReport
from qex.cli.submitting import Submitter
from qex.core.names import new_id, printable_line, safe_name
from qex.core.states import Exit


def submit_pipeline(file: str, *, name: str | None, id_file: str | None,
                    as_json: bool) -> NoReturn:
    from qex.cli.common import get_paths
    from qex.client.errors import ClientError
    from qex.core.capability_check import Stage, pipeline_refusal
    from qex.core.coordinator_notes import floor_refusal, version_warning
    from qex.core.jobfile import UNSET, JobFileError, parse_pipeline
    from qex.core.jobspec import SpecError, stage_options
    from qex.store.structured import StructuredError, read_structured

    paths = get_paths(Exit.QEX_FAILED)
    try:
        pipeline = parse_pipeline(read_structured(Path(file)), os.path.abspath(file))
    except (StructuredError, JobFileError) as exc:
        jobcmd.fail(str(exc))
    try:
        group_name = pipeline.group_name(name, file)
    except JobFileError as exc:
        jobcmd.fail(str(exc))
    group = new_id()
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
    report = PipelineReport(group)
    for stage_name, spec in built:
        try:
            answer = submitter.conn.submit(spec.to_dict())
        except ClientError as exc:
            report.refused(printable_line(exc.message), stage_name)
        report.accepted(stage_name, str(answer["id"]), answer["warning"])
    report.finish(group_name, id_file, as_json=as_json)
    raise SystemExit(0)
