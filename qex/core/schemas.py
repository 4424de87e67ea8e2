"""JSON Schemas (draft 2020-12) of the formats that qex writes and reads.

Pure data, built on demand so that `qex schema status` costs nothing for other commands.
The documents describe OUR formats: `status` is `qex.core.records.JobStatus.to_dict()`,
`job` is a job file (`qex submit --job`), `pipeline` is a pipeline file (`qex pipeline`),
and `event` is one line of `qex events --json`.

The record and event schemas allow unknown properties, because the format is additive: a
newer qex may add a field, and a reader must ignore it. The job and pipeline schemas do NOT,
because qex refuses a file with a misspelt key rather than ignore it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from qex.core.states import FINAL, State

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_BASE_ID = "urn:qex:schema:"

Schema = dict[str, Any]

# --- building blocks -------------------------------------------------------------------

_STRING: Schema = {"type": "string"}
_UUID: Schema = {"type": "string", "format": "uuid"}
_COUNT: Schema = {"type": "integer", "minimum": 0}
_EPOCH: Schema = {"type": "number", "description": "seconds since the Unix epoch"}
_STRINGS: Schema = {"type": "array", "items": {"type": "string"}}
_UUIDS: Schema = {"type": "array", "items": _UUID}


def _nullable(schema: Schema) -> Schema:
    """The same schema, or null. Kept flat (a type list) where the schema has one type."""
    kind = schema.get("type")
    if isinstance(kind, str) and set(schema) <= {"type", "format", "minimum", "description"}:
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _described(schema: Schema, text: str) -> Schema:
    return {**schema, "description": text}


STATE_NAMES: tuple[str, ...] = tuple(s.value for s in State)
FINAL_NAMES: tuple[str, ...] = tuple(s.value for s in State if s in FINAL)
CLAIM_SOURCES = ("explicit", "learned", "default", "fan-out")
ENV_CAPTURE = ("all", "minimal", "none")
#: Words that a job file may give for `cpu` or `mem` in place of a number.
CLAIM_WORDS = ("half", "guess", "auto", "full", "max", "all")

_POOL_CLAIM: Schema = {
    "type": "object",
    "description": "A claim on one pool: `count` units and `size` bytes on each device.",
    "properties": {
        "count": _COUNT,
        "size": _described(_nullable(_COUNT), "bytes per device; null = the whole device"),
    },
    "required": ["count"],
    "additionalProperties": True,
}

_ASSIGNMENT: Schema = {
    "type": "object",
    "description": "What the coordinator gave the job from one pool.",
    "properties": {
        "units": _COUNT,
        "devices": {"type": "array", "items": _COUNT,
                    "description": "device indices, ascending"},
        "size": _described(_nullable(_COUNT), "bytes per device; null = the whole device"),
    },
    "required": ["units", "devices"],
    "additionalProperties": True,
}

_USAGE: Schema = {
    "type": "object",
    "description": "What the job really used.",
    "properties": {
        "max_rss": _described(_COUNT, "peak memory in bytes, the largest over all attempts"),
        "cpu_secs": {"type": "number", "minimum": 0,
                     "description": "user + system CPU seconds of the last attempt"},
        "source": _described(_STRING, "where max_rss came from: `memory.peak` or `rusage`"),
        "orphans_reaped": _described(_COUNT, "processes the job left behind that qex reaped"),
        "pressure": _described(_nullable({"type": "object"}),
                               "the job's own memory PSI (some_avg10, full_avg10, ...)"),
    },
    "required": ["max_rss", "cpu_secs"],
    "additionalProperties": True,
}

_LOGS_DROPPED: Schema = {
    "type": "object",
    "description": "Output that `[logs] max_bytes` kept out of the log files.",
    "properties": {
        "stdout_bytes": _COUNT,
        "stdout_lines": _COUNT,
        "stderr_bytes": _COUNT,
        "stderr_lines": _COUNT,
        "limit": _described(_COUNT, "the limit in bytes for each stream; 0 = no limit"),
        "incomplete": {"type": "boolean",
                       "description": "true when a log may be missing its last part"},
    },
    "additionalProperties": True,
}

_ENFORCEMENT: Schema = {
    "type": "object",
    "description": "How memory was enforced for the last attempt (`qex help enforcement`).",
    "properties": {
        "mode": {"enum": ["off", "soft", "hard"]},
        "active": {"type": "boolean"},
        "reason": _nullable(_STRING),
        "backend": _nullable(_STRING),
        "unit": _described(_nullable(_STRING), "the systemd scope of the attempt"),
        "cgroup": _described(_nullable(_STRING), "the job's own cgroup"),
        "memory_max": _nullable(_COUNT),
        "memory_high": _nullable(_COUNT),
        "swap_max": _nullable(_COUNT),
        "notes": _STRINGS,
    },
    "additionalProperties": True,
}

# --- status.json ---------------------------------------------------------------------------

#: Every field of JobStatus, in the order the record writes them.
STATUS_PROPERTIES: dict[str, Schema] = {
    "id": _UUID,
    "name": _described(_STRING, "as given; shown in safe form"),
    "command": _described(_STRINGS, "the argument vector; no shell"),
    "cwd": _STRING,
    "state": {"enum": list(STATE_NAMES)},
    "submitted_at": _EPOCH,
    "sequence": _described(_COUNT, "submission order"),
    "cpu": {"type": "integer", "minimum": 1, "description": "cores claimed, in force now"},
    "mem": _described(_COUNT, "bytes of memory claimed, in force now"),
    "claim_source": {"enum": list(CLAIM_SOURCES)},
    "pid": _described(_nullable(_COUNT), "the job's pid while it runs"),
    "pid_start_token": _nullable(_STRING),
    "last_pid": _described(_nullable(_COUNT), "history only; never signal it"),
    "supervisor_pid": _nullable(_COUNT),
    "supervisor_start_token": _nullable(_STRING),
    "boot_id": _nullable(_STRING),
    "exit_code": _described(_nullable({"type": "integer"}), "the job's own exit code"),
    "signal": _described(_nullable(_COUNT), "the signal that ended the job"),
    "started_at": _nullable(_EPOCH),
    "finished_at": _nullable(_EPOCH),
    "group": _nullable(_UUID),
    "group_name": _nullable(_STRING),
    "usage": _nullable(_USAGE),
    "forced": _described({"type": "boolean"}, "started alone because the claim is over budget"),
    "forced_reason": _nullable(_STRING),
    "queue_pause_secs": {"type": "number", "minimum": 0,
                         "description": "time the queue was paused while this job waited"},
    "blocked_reason": _described(_nullable(_STRING), "why a queued job waits"),
    "blocked_since": _nullable(_EPOCH),
    "passed_by": _described(_COUNT, "jobs that started before this one while it was at the front"),
    "error": _nullable(_STRING),
    "needs": _UUIDS,
    "after": _UUIDS,
    "locks": _STRINGS,
    "dedupe_key": _nullable(_STRING),
    "claims": {"type": "object", "additionalProperties": _POOL_CLAIM},
    "assigned": {"type": "object", "additionalProperties": _ASSIGNMENT},
    "attempts": _described(_COUNT, "how many times the job was started"),
    "retries_left": _COUNT,
    "oom_retries_left": _described(_nullable(_COUNT), "memory corrections left ([retry] on_oom)"),
    "caused_by": _described(_nullable(_UUID), "for `skipped`: the job that failed first"),
    "logs_dropped": _nullable(_LOGS_DROPPED),
    "tags": _STRINGS,
    "enforcement": _nullable(_ENFORCEMENT),
    "oom_evidence": _described(_nullable({"enum": ["cgroup", "session", "slurm"]}),
                               "cgroup = proven by the job's own cgroup; slurm = Slurm's "
                               "OUT_OF_MEMORY"),
    "queue_time_applies": {"type": "boolean"},
    "note": _nullable(_STRING),
    "engine": _described(_nullable({"enum": ["slurm"]}), "where the job runs; null = this machine"),
    "engine_id": _described(_nullable(_STRING), "the engine's own id of the job (Slurm's job id)"),
}


def status_schema() -> Schema:
    """The record in `status.json`, and in `qex status --json` and event lines."""
    return {
        "$schema": DIALECT,
        "$id": _BASE_ID + "status",
        "title": "qex job status record",
        "description": "The primary record of one job. Readers ignore unknown fields.",
        "type": "object",
        "properties": STATUS_PROPERTIES,
        "required": list(STATUS_PROPERTIES),
        "additionalProperties": True,
    }


# --- job and pipeline files ------------------------------------------------------------

_DURATION: Schema = {
    "description": "`30s`, `5m`, `4h`, `2d`, a number of seconds, or 0/none/never for no limit",
    "type": ["string", "number"],
}
_SIZE: Schema = {
    "description": "a number of bytes, or a size such as `512MB` or `8GB` (steps of 1024)",
    "type": ["string", "integer"],
}
_CPU: Schema = {
    "description": "whole cores, or a word: half/guess/auto or full/max/all",
    "anyOf": [
        {"type": "integer", "minimum": 1},
        {"type": "string", "pattern": "^\\s*[0-9]+\\s*$"},
        {"enum": list(CLAIM_WORDS)},
    ],
}
_MEM: Schema = {
    "description": "bytes, a size such as `8GB`, or a word: half/guess/auto or full/max/all",
    "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string"}],
}
_RESOURCES: Schema = {
    "type": "object",
    "properties": {
        "cpu": _CPU,
        "mem": _MEM,
        "gpu": _described(_COUNT, "devices from the pool `gpu`"),
        "vram": _described(_SIZE, "on EACH device that the job gets"),
        "claims": {
            "type": "object",
            "description": "other pools: NAME = count, or NAME = {count, size}",
            "additionalProperties": {
                "anyOf": [
                    {"type": "integer", "minimum": 1},
                    {
                        "type": "object",
                        "properties": {"count": {"type": "integer", "minimum": 1},
                                       "size": _SIZE},
                        "required": ["count"],
                        "additionalProperties": False,
                    },
                ]
            },
        },
    },
    "additionalProperties": False,
}

#: The keys that a job file and a pipeline stage share.
_COMMON_FIELDS: dict[str, Schema] = {
    "name": _described(_STRING, "letters, digits, `.`, `_` and `-`; not a uuid"),
    "cwd": _described(_STRING, "the default is the directory of the submission"),
    "command": {"type": "array", "items": _STRING, "minItems": 1,
                "description": "program and arguments; no shell unless you name one"},
    "timeout": _described(_DURATION, "limit on the time the job RUNS"),
    "max_queue_time": _described(_DURATION, "limit on the time the job WAITS"),
    "tags": _STRINGS,
    "priority": {"type": "integer", "description": "larger starts earlier"},
    "needs": _described(_STRINGS, "jobs that must succeed first"),
    "after": _described(_STRINGS, "jobs that must stop first, whatever their result"),
    "env_capture": {"enum": list(ENV_CAPTURE)},
    "nice": {"type": "integer", "minimum": -20, "maximum": 19},
    "no_limit_env_hints": {"type": "boolean"},
    "locks": _STRINGS,
    "retries": _COUNT,
    "resources": _RESOURCES,
    "env": {"type": "object", "additionalProperties": _STRING},
}


def job_schema() -> Schema:
    """A job file (`qex submit --job FILE`): TOML, YAML or JSON with these keys."""
    properties = {
        **_COMMON_FIELDS,
        "dedupe_key": _described(_STRING, "start no second job while one with this key lives"),
        "dedupe_window": _described(_DURATION, "keep the key this long after a success"),
    }
    return {
        "$schema": DIALECT,
        "$id": _BASE_ID + "job",
        "title": "qex job file",
        "description": "One job. Unknown keys are an error.",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }


def pipeline_schema() -> Schema:
    """A pipeline file (`qex pipeline FILE`): stages under `jobs`, linked by name."""
    stage = {
        "type": "object",
        "description": "One stage; `needs` and `after` name other stages of the same file.",
        "properties": dict(_COMMON_FIELDS),
        "required": ["name", "command"],
        "additionalProperties": False,
    }
    return {
        "$schema": DIALECT,
        "$id": _BASE_ID + "pipeline",
        "title": "qex pipeline file",
        "description": "Several jobs submitted as one group. Unknown keys are an error.",
        "type": "object",
        "properties": {
            "name": _described(_STRING, "the name of the group"),
            "jobs": {"type": "array", "items": {"$ref": "#/$defs/stage"}, "minItems": 1},
        },
        "required": ["jobs"],
        "additionalProperties": False,
        "$defs": {"stage": stage},
    }


# --- event lines -----------------------------------------------------------------------------


def _event(kind: str, properties: dict[str, Schema], required: list[str]) -> Schema:
    return {
        "type": "object",
        "properties": {"event": {"const": kind}, **properties},
        "required": ["event", *required],
        "additionalProperties": True,
    }


def event_schema() -> Schema:
    """One line of `qex events --json`. A line with an unknown `event` is valid: skip it."""
    status = {k: v for k, v in status_schema().items() if k not in ("$schema", "$id")}
    kinds = {
        "stream": _event("stream", {
            "time": _EPOCH, "version": _STRING, "pid": _COUNT, "stream_id": _UUID,
            "coordinator_started_at": _EPOCH, "first_seq": _COUNT, "last_seq": _COUNT,
        }, ["time", "stream_id", "first_seq", "last_seq"]),
        "job": _event("job", {
            "seq": {"type": "integer", "minimum": 1}, "time": _EPOCH, "id": _UUID,
            "name": _STRING, "state": {"enum": list(STATE_NAMES)},
            "previous": _nullable({"enum": list(STATE_NAMES)}),
            "change": {"enum": ["state", "reason"]},
            "job": {"$ref": "#/$defs/status"},
        }, ["seq", "time", "id", "name", "state", "previous", "change", "job"]),
        "gap": _event("gap", {
            "time": _EPOCH,
            "missed": _described(_nullable(_COUNT), "null when qex cannot count the loss"),
            "next_seq": _COUNT, "reason": _STRING,
        }, ["time", "missed", "reason"]),
        "bye": _event("bye", {"time": _EPOCH, "reason": _STRING}, ["time", "reason"]),
    }
    return {
        "$schema": DIALECT,
        "$id": _BASE_ID + "event",
        "title": "qex event line",
        "description": "One JSON object per line. Ignore an `event` type you do not know.",
        "type": "object",
        "properties": {"event": _STRING},
        "required": ["event"],
        "allOf": [
            {
                "if": {"properties": {"event": {"const": name}}, "required": ["event"]},
                "then": {"$ref": f"#/$defs/{name}"},
            }
            for name in kinds
        ],
        "$defs": {**kinds, "status": status},
    }


SCHEMAS: dict[str, Callable[[], Schema]] = {
    "status": status_schema,
    "job": job_schema,
    "pipeline": pipeline_schema,
    "event": event_schema,
}


def render(name: str) -> str:
    """The schema as indented JSON text; KeyError for a name that is not in SCHEMAS."""
    return json.dumps(SCHEMAS[name](), indent=2)
