"""The socket protocol shared by the CLI, the coordinator and the supervisor.

One JSON object per line over an AF_UNIX stream. Requests carry `op`, answers `result`.
Additive only: a field is never removed, renamed or retyped; unknown fields are ignored on
the wire; a change that cannot be additive takes a new op name and a capability.

Requests (op -> fields -> answer):
  ping                                   -> ok
  info                                   -> info {pid, version, started_at, ...}
  capabilities                           -> capabilities {names, version}
  submit       spec (JobSpec dict)       -> submitted {id, warning, deduplicated}
  own_job      id                        -> ok   (cancels its queued job when the link ends)
  list                                   -> jobs {jobs: [JobStatus dict]}
  status       id                        -> status {status}
  wait         id                        -> status {status} once the job is final
  kill         id, signal, grace_secs    -> ok
  cancel       id                        -> ok
  clean        id                        -> ok
  events       since                     -> a stream of `event` answers
  pause        target, reason, until, by_pid, drain -> pause_state
  resume       target                    -> pause_state
  pause_state                            -> pause_state
  job_changed  id                        -> ok   (a supervisor wrote a record; read it now)
Errors: {"result": "error", "kind": no_such_job | wrong_state | internal | refused, "message"}.
"""

from __future__ import annotations

import json
from typing import Any

from qex import __version__

#: What this build can obey. The CLI refuses an option whose capability is missing.
CAPABILITIES: tuple[str, ...] = (
    "dedupe", "dependencies", "events", "groups", "history", "learn", "locks",
    "max-queue-time", "own-job", "pause", "politeness", "pools", "retries",
    "job-changed", "oom-retry", "enforce", "engine-slurm",
)

#: A coordinator below this version cannot say what it can do, so the CLI refuses it.
CAPABILITY_FLOOR = "0.6.0"

#: Error kinds.
NO_SUCH_JOB = "no_such_job"
WRONG_STATE = "wrong_state"
INTERNAL = "internal"
REFUSED = "refused"

MAX_LINE = 64 * 1024 * 1024


class ProtocolError(RuntimeError):
    """A line that is not one JSON object."""


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"the line is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ProtocolError("the line is not a JSON object")
    return value


def error(kind: str, message: str) -> dict[str, Any]:
    return {"result": "error", "kind": kind, "message": message}


def ok(**fields: Any) -> dict[str, Any]:
    return {"result": "ok", **fields}


def version_tuple(version: str) -> tuple[int, int, int]:
    """Leading digits of each dotted part; missing parts are 0 (`0.0.0-dev+g1` -> (0, 0, 0))."""
    parts: list[int] = []
    for piece in version.split("+", 1)[0].split(".")[:3]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def is_development(version: str) -> bool:
    return version == "0.0.0-dev" or version.startswith("0.0.0-dev+")


def below_floor(version: str) -> bool:
    return version_tuple(version) < version_tuple(CAPABILITY_FLOOR)


VERSION = __version__
