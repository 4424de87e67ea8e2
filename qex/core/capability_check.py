"""Refusing work that the running coordinator cannot obey.

The protocol is additive: a coordinator ignores a field it does not know. That is safe for
reading and dangerous for submitting, because a job that runs WITHOUT the lock you asked for
looks exactly like one that runs with it. So before a submission the CLI asks the coordinator
what it can do and refuses the job, naming the option, when a capability is missing.

A coordinator below the capability floor cannot even say what it can do, so it is refused
outright; a development build (`0.0.0-dev...`) answers the capability request like any other
build, so it only gets a warning and the exact per-option check still applies.

The sentences about the coordinator itself (too old, another version) live in
`qex.core.coordinator_notes`, which `qex version` reads on the lean path.

Pure: the caller passes the coordinator's `info` answer and capability names. It lives in
the core because both sides use it: the CLI before it submits, and the coordinator's
`submit_words` handler, which builds the spec itself and adds the same version warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qex.core import protocol
from qex.core.coordinator_notes import floor_refusal, replace_advice, version_warning, who
from qex.core.job_fields import options_needing
from qex.core.model import dataclass, field
from qex.core.names import safe_name

#: capability -> the options a person would recognise: from the table of job fields, and the
#: one capability that no option gives.
OPTION_TEXT: dict[str, str] = {
    **options_needing(),
    "groups": "a group (qex pipeline or --each-line)",
    "engine-slurm": "--engine slurm ([engine] kind = \"slurm\")",
}


class CapabilityRefusal(Exception):
    """The coordinator cannot obey this work; `message` says which option and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def required(spec: Mapping[str, Any]) -> list[str]:
    """The capabilities a job spec needs, in a stable order."""
    needs: list[str] = []
    if spec.get("needs") or spec.get("after"):
        needs.append("dependencies")
    if spec.get("locks"):
        needs.append("locks")
    if spec.get("claims"):
        needs.append("pools")
    if int(spec.get("retries") or 0) > 0:
        needs.append("retries")
    if spec.get("max_queue_time") is not None:
        needs.append("max-queue-time")
    if spec.get("group"):
        needs.append("groups")
    if spec.get("nice") is not None:
        needs.append("politeness")
    if spec.get("dedupe_key"):
        needs.append("dedupe")
    if spec.get("engine") == "slurm":
        needs.append("engine-slurm")
    return needs


def _missing_text(missing: Sequence[str]) -> str:
    options = [OPTION_TEXT.get(name, name) for name in missing]
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " and " + options[-1]


def job_refusal(spec: Mapping[str, Any], capabilities: set[str],
                info: Mapping[str, Any]) -> str | None:
    """The refusal for one job whose options the coordinator cannot obey; None when it can."""
    missing = [name for name in required(spec) if name not in capabilities]
    if not missing:
        return None
    pid, version = who(info)
    return (
        f"the coordinator (pid {pid}, version {version}) cannot obey {_missing_text(missing)}, "
        "so qex refuses this job: that coordinator would ignore the option in silence and still "
        f"give you a job id; {replace_advice(pid)}"
    )


@dataclass
class Stage:
    """One stage of a pipeline for the check; `from_config` lists needs caused by defaults."""

    name: str
    spec: Mapping[str, Any]
    from_config: set[str] = field(default_factory=set)


def pipeline_refusal(stages: Sequence[Stage], capabilities: set[str],
                     info: Mapping[str, Any]) -> str | None:
    """One refusal for the whole file, before any stage is submitted; None when all is obeyed."""
    if not stages:
        return None
    reasons: list[str] = []
    if "groups" not in capabilities:
        reasons.append("a group, which every pipeline is")
    per_capability: dict[str, list[Stage]] = {}
    for stage in stages:
        for name in required(stage.spec):
            if name != "groups" and name not in capabilities:
                per_capability.setdefault(name, []).append(stage)
    for name, users in per_capability.items():
        by_file = [s for s in users if name not in s.from_config]
        option = OPTION_TEXT.get(name, name)
        if not by_file:
            reasons.append(
                f"{option}, from a default of the configuration and no stage of this file"
            )
        elif len(by_file) == 1:
            reasons.append(f"{option}, which the stage `{safe_name(by_file[0].name)}` uses")
        else:
            names = ", ".join(f"`{safe_name(s.name)}`" for s in by_file)
            reasons.append(f"{option}, which the stages {names} use")
    if not reasons:
        return None
    pid, version = who(info)
    return (
        f"the coordinator (pid {pid}, version {version}) cannot obey " + "; nor ".join(reasons)
        + ", so qex submits no stage of this pipeline: that coordinator would ignore those "
        f"options in silence; {replace_advice(pid)}"
    )


def preflight(info: Mapping[str, Any], capabilities: set[str], specs: Sequence[Mapping[str, Any]],
              *, own_version: str = protocol.VERSION) -> list[str]:
    """Check a submission: raise CapabilityRefusal, or return the warnings to print."""
    refusal = floor_refusal(info)
    if refusal is not None:
        raise CapabilityRefusal(refusal)
    for spec in specs:
        refusal = job_refusal(spec, capabilities, info)
        if refusal is not None:
            raise CapabilityRefusal(refusal)
    warning = version_warning(info, own_version)
    return [warning] if warning else []
