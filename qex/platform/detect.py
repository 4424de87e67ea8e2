"""What enforcement this machine can offer, probed once per process.

`detect()` answers for the whole of qex: `qex config show` prints it, the coordinator uses it
to decide whether a supervisor goes into a scope, and the record of each job repeats it.
The order of the checks follows the order in which things fail in practice: not Linux,
cgroup v1/hybrid, no user manager, controller not delegated, no scope backend.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Capabilities:
    os: str
    cgroup_v2: bool = False
    systemd_user: bool = False
    delegated: tuple[str, ...] = ()
    psi: bool = False
    pystemd: bool = False
    systemd_run: bool = False
    scope_backend: str | None = None     # "pystemd" | "systemd-run" | None
    enforcement_possible: bool = False
    reason: str | None = None            # why enforcement is NOT ACTIVE
    fix: str | None = None               # what would make it active
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["delegated"] = list(self.delegated)
        return data


_cached: Capabilities | None = None


def detect(use_systemd: bool = True) -> Capabilities:
    """Probe once; later calls return the same answer."""
    global _cached
    if _cached is None:
        _cached = Capabilities(
            os=sys.platform,
            reason="the Linux enforcement layer is not built yet",
            fix="none yet",
        )
    return _cached
