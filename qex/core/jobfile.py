"""Job files and pipeline files: the models, and the checks that turn a parsed file into them.

Pure: `qex.store.structured.read_structured` reads the file (TOML, YAML or JSON); this
module only judges the data. A job file holds ONE job; a pipeline file holds `[[jobs]]`,
each a stage with every job-file field except the dedupe key (a key would answer for one
stage alone, and the stages after it would then wait for a job of an earlier run).

Every field is checked when the file is read, and an unknown field is an error that names
it, suggests the nearest known one and shows a small example: a misspelt `timout` that is
silently ignored looks exactly like a time limit that works.

Values here are parsed but not resolved: claim words stay words (the budget resolves them
at submission), `needs`/`after` stay the names or ids the person wrote (the CLI resolves
them through the coordinator), a relative `cwd` stays relative (to the file's directory).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from qex.core.job_fields import file_keys
from qex.core.jobfile_fields import (
    RESOURCE_FIELDS,
    UNSET,
    Fields,
    JobFileError,
    Resources,
    Unset,
    check_fields,
    parse_command,
    parse_env,
    parse_resources,
)
from qex.core.model import dataclass, field
from qex.core.names import is_safe_name, safe_name, visible
from qex.core.states import ENV_CAPTURES, EnvCapture, pick

__all__ = [
    "RESOURCE_FIELDS",
    "UNSET",
    "JobFile",
    "JobFileError",
    "PipelineFile",
    "Resources",
    "Unset",
    "parse_job_file",
    "parse_pipeline",
]

#: The keys of a job file and of a pipeline stage, from the one table of job fields.
JOB_FIELDS: tuple[str, ...] = file_keys()
STAGE_FIELDS: tuple[str, ...] = file_keys(stage=True)
PIPELINE_FIELDS: tuple[str, ...] = ("name", "jobs")

JOB_EXAMPLE = (
    'command = ["make", "test"], name = "tests", and under [resources]: cpu = 2, mem = "4GB"'
)
PIPELINE_EXAMPLE = (
    'name = "ci", then [[jobs]] with name = "build" and command = ["make"], then [[jobs]] '
    'with name = "test", command = ["make", "test"] and needs = ["build"]'
)


@dataclass(frozen=True)
class JobFile:
    """One job as a file gives it; also one stage of a pipeline (then `name` is required)."""

    source: str
    command: tuple[str, ...] | None = None
    name: str | None = None
    cwd: str | None = None
    timeout: float | Unset | None = UNSET
    max_queue_time: float | Unset | None = UNSET
    tags: tuple[str, ...] = ()
    priority: int | None = None
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    env_capture: EnvCapture | None = None
    nice: int | None = None
    no_limit_env_hints: bool = False
    dedupe_key: str | None = None
    dedupe_window: float | None = None
    locks: tuple[str, ...] = ()
    retries: int | None = None
    resources: Resources = field(default_factory=Resources)
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def base_dir(self) -> str:
        """The directory a relative `cwd` is taken from: the file's own directory."""
        return posixpath.dirname(self.source)


@dataclass(frozen=True)
class PipelineFile:
    """A pipeline: an optional name and its stages, in file order."""

    source: str
    name: str | None
    stages: tuple[JobFile, ...]

    def stage(self, name: str) -> JobFile:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)

    def group_name(self, given: str | None, path: str) -> str:
        """The group's name: `--name` (which must be a safe name), else the file's `name`,
        else the stem of the file's path, else `pipeline`."""
        if given is not None:
            if not is_safe_name(given):
                raise JobFileError(f"the name `{visible(given)}` is not one qex accepts; use "
                                   "letters, digits, `.`, `_` and `-` only")
            return given
        if self.name:
            return self.name
        stem = posixpath.basename(path).rsplit(".", 1)[0]
        return safe_name(stem) or "pipeline"

    def topological_order(self) -> list[JobFile]:
        """Every stage after the stages it waits for; otherwise in file order.

        The CLI submits in this order, so the id of each stage that another names exists
        before the stage that names it is built.
        """
        placed: set[str] = set()
        order: list[JobFile] = []
        remaining = list(self.stages)
        while remaining:
            for position, stage in enumerate(remaining):
                if all(dep in placed for dep in (*stage.needs, *stage.after)):
                    order.append(stage)
                    placed.add(str(stage.name))
                    del remaining[position]
                    break
            else:  # pragma: no cover - parse_pipeline refuses cycles
                raise JobFileError("the stages of the pipeline wait for each other in a circle")
        return order


def _job(table: Mapping[str, Any], source: str, where: str, *, stage: bool) -> JobFile:
    fields = Fields(source, where, table)
    capture_word = fields.text("env_capture")
    env_capture: EnvCapture | None = None
    if capture_word is not None:
        env_capture = pick(capture_word.strip().lower(), ENV_CAPTURES)
        if env_capture is None:
            fields.fail("env_capture", (
                f"is `{fields.shown('env_capture')}`; give all, minimal or "
                "none"
            ))
    name = fields.text("name")
    if name is not None and not is_safe_name(name):
        fields.fail(
            "name",
            f"is `{visible(name)}`, and a name holds only letters, digits, `.`, `_` and `-`, "
            "does not start with `-` and is not an id; choose such a name",
        )
    dedupe_key = None
    if not stage:
        dedupe_key = fields.text("dedupe_key", empty_ok=True)
        if dedupe_key is not None:
            dedupe_key = dedupe_key.strip()
            if not dedupe_key:
                fields.fail("dedupe_key", (
                    "is empty; give a key that names the work and the "
                    "place, such as \"build:/src/app\""
                ))
    window = fields.duration("dedupe_window") if not stage else UNSET
    if window is not UNSET and dedupe_key is None:
        fields.fail("dedupe_window", "needs a `dedupe_key` to keep; add one, or remove the window")
    return JobFile(
        source=source,
        command=parse_command(fields),
        name=name,
        cwd=fields.text("cwd"),
        timeout=fields.duration("timeout"),
        max_queue_time=fields.duration("max_queue_time"),
        tags=fields.words("tags", "tags"),
        priority=fields.whole("priority"),
        needs=fields.words("needs", "job names or ids" if not stage else "stage names"),
        after=fields.words("after", "job names or ids" if not stage else "stage names"),
        env_capture=env_capture,
        nice=fields.whole("nice", low=-20, high=19),
        no_limit_env_hints=fields.flag("no_limit_env_hints"),
        dedupe_key=dedupe_key,
        dedupe_window=None if window is UNSET else (window or 0.0),
        locks=fields.words("locks", "lock names"),
        retries=fields.whole("retries", low=0),
        resources=parse_resources(fields),
        env=parse_env(fields),
    )


def parse_job_file(data: Mapping[str, Any], source: str) -> JobFile:
    """The job in a parsed job file; `source` (the file's path) names it in every message."""
    if "jobs" in data:
        raise JobFileError(
            f"the file {source} has `jobs`, so it is a pipeline file, and a job file holds one "
            "job; submit it with `qex pipeline` instead"
        )
    check_fields(data, JOB_FIELDS, source, "job file", JOB_EXAMPLE)
    return _job(data, source, "job file", stage=False)


def parse_pipeline(data: Mapping[str, Any], source: str) -> PipelineFile:
    """The stages of a parsed pipeline file, checked: unique names, known needs, no circle."""
    if "jobs" not in data and "command" in data:
        raise JobFileError(
            f"the file {source} has a `command` and no [[jobs]], so it is a job file; submit it "
            "with `qex submit --job` instead, or put the job under [[jobs]]"
        )
    check_fields(data, PIPELINE_FIELDS, source, "pipeline file", PIPELINE_EXAMPLE)
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or not is_safe_name(name)):
        raise JobFileError(
            f"in the pipeline file {source}, the name `{visible(str(name))}` is not one qex "
            "accepts; use letters, digits, `.`, `_` and `-` only"
        )
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs or not all(isinstance(j, dict) for j in jobs):
        raise JobFileError(
            f"the pipeline file {source} has no [[jobs]]; give one table for each stage "
            f"(for example: {PIPELINE_EXAMPLE})"
        )
    stages: list[JobFile] = []
    seen: set[str] = set()
    for position, table in enumerate(jobs, start=1):
        label = table.get("name")
        shown = f"`{visible(label)}`" if isinstance(label, str) and label else str(position)
        where = f"stage {shown} of the pipeline file"
        check_fields(table, STAGE_FIELDS, source, where, PIPELINE_EXAMPLE)
        stage = _job(table, source, where, stage=True)
        if stage.name is None:
            raise JobFileError(
                f"in the pipeline file {source}, stage {position} has no name; give each "
                "[[jobs]] a name, such as name = \"build\", so other stages can wait for it"
            )
        if stage.command is None:
            raise JobFileError(
                f"in the pipeline file {source}, the stage `{stage.name}` has no command; give "
                "it one, such as command = [\"make\"]"
            )
        if stage.name in seen:
            raise JobFileError(
                f"the pipeline file {source} has two stages named `{stage.name}`; give each "
                "stage a name of its own"
            )
        seen.add(stage.name)
        stages.append(stage)
    _check_links(stages, source)
    return PipelineFile(source=source, name=name, stages=tuple(stages))


def _check_links(stages: list[JobFile], source: str) -> None:
    names = [str(s.name) for s in stages]
    for stage in stages:
        for dep in (*stage.needs, *stage.after):
            if dep not in names:
                raise JobFileError(
                    f"in the pipeline file {source}, the stage `{stage.name}` waits for "
                    f"`{visible(dep)}`, and the file has no stage of that name (the stages are "
                    f"{', '.join(names)}); a stage can wait only for stages of the same file"
                )
    cycle = _find_cycle(stages)
    if cycle:
        raise JobFileError(
            f"in the pipeline file {source}, the stages wait for each other in a circle: "
            f"{' -> '.join(cycle)}; remove one of those needs or after entries"
        )


def _find_cycle(stages: list[JobFile]) -> list[str] | None:
    """The first circle of waits, written from a stage back to itself, or None.

    Iterative on purpose: a generated pipeline of thousands of chained stages must not hit
    Python's recursion limit.
    """
    edges = {str(s.name): list(dict.fromkeys((*s.needs, *s.after))) for s in stages}
    finished: set[str] = set()
    for stage in stages:
        root = str(stage.name)
        if root in finished:
            continue
        path: list[str] = [root]
        on_path: set[str] = {root}
        cursors: list[int] = [0]
        while path:
            node = path[-1]
            deps = edges[node]
            if cursors[-1] >= len(deps):
                finished.add(node)
                on_path.discard(node)
                path.pop()
                cursors.pop()
                continue
            dep = deps[cursors[-1]]
            cursors[-1] += 1
            if dep in on_path:
                return [*path[path.index(dep):], dep]
            if dep not in finished:
                path.append(dep)
                on_path.add(dep)
                cursors.append(0)
    return None
