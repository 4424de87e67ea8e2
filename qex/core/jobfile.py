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

import difflib
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NoReturn

from qex.core.claims import (
    ClaimError,
    ClaimRequest,
    parse_cpu_claim,
    parse_mem_claim,
    resource_name_problem,
)
from qex.core.names import is_safe_name, visible
from qex.core.records import PoolClaim
from qex.core.units import UnitError, parse_count, parse_duration, parse_size


class Unset(Enum):
    """Marks a field the file did not give, where None already means "no limit"."""

    UNSET = "unset"


UNSET = Unset.UNSET

JOB_FIELDS: tuple[str, ...] = (
    "name", "cwd", "command", "timeout", "max_queue_time", "tags", "priority", "needs",
    "after", "env_capture", "nice", "no_limit_env_hints", "dedupe_key", "dedupe_window",
    "locks", "retries", "resources", "env",
)
STAGE_FIELDS: tuple[str, ...] = tuple(f for f in JOB_FIELDS if not f.startswith("dedupe_"))
RESOURCE_FIELDS: tuple[str, ...] = ("cpu", "mem", "gpu", "vram", "claims")
PIPELINE_FIELDS: tuple[str, ...] = ("name", "jobs")
CAPTURE_MODES = ("all", "minimal", "none")

JOB_EXAMPLE = (
    'command = ["make", "test"], name = "tests", and under [resources]: cpu = 2, mem = "4GB"'
)
PIPELINE_EXAMPLE = (
    'name = "ci", then [[jobs]] with name = "build" and command = ["make"], then [[jobs]] '
    'with name = "test", command = ["make", "test"] and needs = ["build"]'
)


class JobFileError(ValueError):
    """A job or pipeline file that qex cannot use; the message names the file and field."""


@dataclass(frozen=True)
class Resources:
    """`[resources]`: cpu and mem as given (a number or `half`/`full`), GPUs, other pools."""

    cpu: ClaimRequest | None = None
    mem: ClaimRequest | None = None
    gpu: int | None = None
    #: Bytes on each device; None = the whole device (written `0`); UNSET = not given.
    vram: int | Unset | None = UNSET
    claims: Mapping[str, PoolClaim] = field(default_factory=dict)


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
    env_capture: str | None = None
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


class _Fields:
    """The fields of one table, with typed getters that fail naming the file and the field."""

    def __init__(self, source: str, where: str, table: Mapping[str, Any]) -> None:
        self.source = source
        self.where = where
        self.table = table

    def fail(self, key: str, detail: str) -> NoReturn:
        raise JobFileError(f"in the {self.where} {self.source}, `{key}` {detail}")

    def shown(self, key: str) -> str:
        return visible(str(self.table[key]))

    def text(self, key: str, *, empty_ok: bool = False) -> str | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, str) or "\0" in value or (not empty_ok and not value.strip()):
            self.fail(key, "must be a non-empty text in quotation marks")
        return value

    def words(self, key: str, what: str) -> tuple[str, ...]:
        """A list of texts; one text alone is taken as a list of one."""
        if key not in self.table:
            return ()
        value = self.table[key]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
            self.fail(key, f"must be a list of {what}, such as [\"a\", \"b\"]")
        for item in items:
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in item):
                self.fail(key, f"holds `{visible(item)}`, with a control character; remove it")
        return tuple(items)

    def whole(self, key: str, low: int | None = None, high: int | None = None) -> int | None:
        if key not in self.table:
            return None
        try:
            number = parse_count(self.table[key], what="the value")
        except UnitError as exc:
            self.fail(key, f"is wrong: {exc}")
        if (low is not None and number < low) or (high is not None and number > high):
            span = f"{low} or more" if high is None else f"from {low} to {high}"
            self.fail(key, f"is {number}, and it must be {span}")
        return number

    def duration(self, key: str) -> float | Unset | None:
        if key not in self.table:
            return UNSET
        try:
            return parse_duration(self.table[key], what="time")
        except UnitError as exc:
            self.fail(key, f"is wrong: {exc}")

    def flag(self, key: str) -> bool:
        value = self.table.get(key, False)
        if not isinstance(value, bool):
            self.fail(key, "must be true or false, with no quotation marks")
        return value


def _check_fields(table: Mapping[str, Any], allowed: tuple[str, ...], source: str, where: str,
                  example: str) -> None:
    for key in table:
        if key in allowed:
            continue
        name = visible(str(key))
        if key in ("dedupe_key", "dedupe_window") and where.startswith("stage"):
            raise JobFileError(
                f"the {where} {source} gives `{name}`, and a pipeline stage "
                "takes no dedupe key: a key would answer for that stage alone, and the stages "
                "after it would wait for a job of an earlier run; remove it"
            )
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"the fields are {', '.join(allowed)};"
        raise JobFileError(
            f"the {where} {source} has a field `{name}` that qex does not know; {hint} "
            f"qex refuses unknown fields so that none is silently ignored (for example: {example})"
        )


def _resources(fields: _Fields) -> Resources:
    raw = fields.table.get("resources")
    if raw is None:
        return Resources()
    if not isinstance(raw, dict):
        fields.fail("resources", (
            "must be a table, written [resources] with cpu, mem, gpu, vram "
            "or claims under it"
        ))
    _check_fields(raw, RESOURCE_FIELDS, fields.source, f"[resources] of the {fields.where}",
                  '[resources] with cpu = 2, mem = "4GB", gpu = 1, vram = "20GB"')
    res = _Fields(fields.source, fields.where, raw)
    try:
        cpu = parse_cpu_claim(raw["cpu"], what="[resources] cpu") if "cpu" in raw else None
        mem = parse_mem_claim(raw["mem"], what="[resources] mem") if "mem" in raw else None
    except ClaimError as exc:
        raise JobFileError(f"in the {fields.where} {fields.source}, {exc}") from None
    gpu = res.whole("gpu", low=0)
    vram: int | Unset | None = UNSET
    if "vram" in raw:
        try:
            vram = parse_size(raw["vram"], what="vram") or None
        except UnitError as exc:
            res.fail("vram", f"is wrong: {exc}")
    claims: dict[str, PoolClaim] = {}
    table = raw.get("claims", {})
    if not isinstance(table, dict):
        res.fail("claims", "must be a table, written [resources.claims] with NAME = N under it")
    for name, value in table.items():
        claims[str(name)] = _pool_claim(str(name), value, fields)
    if "gpu" in claims and (gpu is not None or vram is not UNSET):
        res.fail("claims", (
            "claims `gpu` and [resources] also gives gpu or vram; give the GPU "
            "claim once"
        ))
    return Resources(cpu=cpu, mem=mem, gpu=gpu, vram=vram, claims=claims)


def _pool_claim(name: str, value: Any, fields: _Fields) -> PoolClaim:
    label = f"[resources.claims] {visible(name)}"
    problem = resource_name_problem(name, what="the pool name")
    if problem is not None:
        raise JobFileError(f"in the {fields.where} {fields.source}, {problem}")
    count_value: Any = value
    size: int | None = None
    if isinstance(value, dict):
        extra = [k for k in value if k not in ("count", "size")]
        if extra or "count" not in value:
            fields.fail(label, "must be a number, or a table with `count` and an optional `size`, "
                        "such as { count = 2, size = \"8GB\" }")
        count_value = value["count"]
        if "size" in value:
            try:
                size = parse_size(value["size"], what="size") or None
            except UnitError as exc:
                fields.fail(label, f"is wrong: {exc}")
    try:
        count = parse_count(count_value, what="the count")
    except UnitError as exc:
        fields.fail(label, f"is wrong: {exc}")
    if count < 1:
        fields.fail(label, (
            f"claims {count} units; a claim is 1 unit or more, so raise it or "
            "remove the line"
        ))
    return PoolClaim(count=count, size=size)


def _env(fields: _Fields) -> dict[str, str]:
    raw = fields.table.get("env")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        fields.fail("env", "must be a table of NAME = \"value\", written [env] in TOML")
    env: dict[str, str] = {}
    for key, value in raw.items():
        name = str(key)
        if not name or "=" in name or "\0" in name:
            fields.fail("env", f"holds the name `{visible(name)}`, which no variable can have")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            fields.fail(f"env.{visible(name)}", "must be a text (put the value in quotation marks)")
        text = str(value)
        if "\0" in text:
            fields.fail(f"env.{visible(name)}", (
                "holds a NUL character, which no program can "
                "receive"
            ))
        env[name] = text
    return env


def _command(fields: _Fields) -> tuple[str, ...] | None:
    if "command" not in fields.table:
        return None
    value = fields.table["command"]
    if isinstance(value, str):
        fields.fail(
            "command",
            "is one text, and qex starts no shell to split it; give a list of arguments, such "
            "as command = [\"make\", \"test\"], or name the shell: [\"bash\", \"-lc\", \"a | b\"]",
        )
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        fields.fail("command", "must be a non-empty list of texts, such as [\"make\", \"test\"]")
    if not value[0]:
        fields.fail("command", "starts with an empty program name; put the program first")
    if any("\0" in v for v in value):
        fields.fail("command", "holds a NUL character, which no program can receive")
    return tuple(value)


def _job(table: Mapping[str, Any], source: str, where: str, *, stage: bool) -> JobFile:
    fields = _Fields(source, where, table)
    env_capture = fields.text("env_capture")
    if env_capture is not None:
        env_capture = env_capture.strip().lower()
        if env_capture not in CAPTURE_MODES:
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
        command=_command(fields),
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
        resources=_resources(fields),
        env=_env(fields),
    )


def parse_job_file(data: Mapping[str, Any], source: str) -> JobFile:
    """The job in a parsed job file; `source` (the file's path) names it in every message."""
    if "jobs" in data:
        raise JobFileError(
            f"the file {source} has `jobs`, so it is a pipeline file, and a job file holds one "
            "job; submit it with `qex pipeline` instead"
        )
    _check_fields(data, JOB_FIELDS, source, "job file", JOB_EXAMPLE)
    return _job(data, source, "job file", stage=False)


def parse_pipeline(data: Mapping[str, Any], source: str) -> PipelineFile:
    """The stages of a parsed pipeline file, checked: unique names, known needs, no circle."""
    if "jobs" not in data and "command" in data:
        raise JobFileError(
            f"the file {source} has a `command` and no [[jobs]], so it is a job file; submit it "
            "with `qex submit --job` instead, or put the job under [[jobs]]"
        )
    _check_fields(data, PIPELINE_FIELDS, source, "pipeline file", PIPELINE_EXAMPLE)
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
        _check_fields(table, STAGE_FIELDS, source, where, PIPELINE_EXAMPLE)
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
