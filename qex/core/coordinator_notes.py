"""What a command says about the coordinator it reached: too old to obey, or another version.

Pure, and light on purpose: `qex version` prints these notes on the lean path, which
imports neither `typing` nor the table of job fields that `qex.core.capability_check` needs
for its per-option refusals (that module builds on these sentences).
"""

from __future__ import annotations

from qex.core import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def who(info: Mapping[str, Any]) -> tuple[str, str]:
    """The coordinator's pid and version from its `info` answer, as text."""
    return str(info.get("pid") or 0), str(info.get("version") or "unknown")


def replace_advice(pid: str) -> str:
    return (
        f"stop it with `kill {pid}` (the jobs that run now continue, and the next qex command "
        "starts a new coordinator that reads the same records), then run this command again"
    )


def floor_refusal(info: Mapping[str, Any]) -> str | None:
    """The refusal for a coordinator too old to say what it can do; None when it can."""
    pid, version = who(info)
    if protocol.is_development(version):
        return None
    if version != "unknown" and not protocol.below_floor(version):
        return None
    return (
        f"the coordinator (pid {pid}) is version {version}, and only a coordinator of version "
        f"{protocol.CAPABILITY_FLOOR} or newer says which options it obeys, so qex gives it no "
        f"work; {replace_advice(pid)}"
    )


def version_warning(info: Mapping[str, Any], own_version: str = protocol.VERSION) -> str | None:
    """A note when the coordinator runs a different (or a replaced) program than this command."""
    pid, version = who(info)
    if version != own_version:
        return (
            f"the coordinator (pid {pid}) is version {version}, and this command is version "
            f"{own_version}; it stops by itself once no job runs, and the next command then "
            "starts the new version"
        )
    if info.get("program_replaced"):
        return (
            f"the qex program was replaced after the coordinator (pid {pid}) started; it keeps "
            "the old code until no job runs, and the next command then starts the new one"
        )
    return None
