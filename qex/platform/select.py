"""Choose the sandbox for one job: a delegated cgroup when the supervisor sits in a qex
systemd scope and enforcement is on, else a plain process group.

Loaded by every supervisor, so it stays light: the cgroup sandbox is imported only when the
supervisor really is in a scope, and `detect()` runs only to explain why it is not.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from qex.platform.sandbox import Limits, Sandbox

if TYPE_CHECKING:
    from qex.core.states import EnforceMode
    from qex.platform.cgroup import CgroupFS

ENFORCING_MODES = ("soft", "hard")


def limits_for(mode: EnforceMode, claim: int, overcommit: float) -> Limits:
    """The limits of `[enforce] mode` for a memory claim in bytes.

    hard: memory.max = claim and no swap (so the claim is a ceiling); soft: memory.high =
    claim and memory.max = claim x overcommit, swap as the machine has it; off: none.
    """
    if mode == "hard":
        return Limits(mode="hard", memory_max=claim, memory_high=None, swap_max=0)
    if mode == "soft":
        ceiling = max(claim, int(claim * max(1.0, overcommit)))
        return Limits(mode="soft", memory_max=ceiling, memory_high=claim, swap_max=None)
    return Limits(mode=mode)


def _why_no_scope(use_systemd: bool) -> str:
    from qex.platform.detect import detect

    caps = detect(use_systemd)
    if not caps.enforcement_possible and caps.reason:
        return caps.reason
    return ("the coordinator started this supervisor outside a qex scope (it ran with "
            "[enforce] mode = \"off\" or use_systemd = false when the job started)")


def open_sandbox(job_id: str, mode: EnforceMode, *, use_systemd: bool = True,
                 own_cgroup: str | None = None, fs: CgroupFS | None = None) -> Sandbox:
    """The sandbox for this supervisor's job. `mode` is `[enforce] mode` (off/soft/hard).

    Call once, before the first attempt, and before starting any thread: the supervisor
    moves itself into the scope's `supervisor/` leaf here.
    """
    from qex.platform.procgroup import ProcessGroupSandbox

    if mode not in ENFORCING_MODES:
        return ProcessGroupSandbox(reason=f"[enforce] mode is \"{mode}\", so qex sets no limit")
    from qex.platform import host

    if not host.linux():
        # No cgroup to look for (macOS, or the portable switch): say why, read no /proc.
        return ProcessGroupSandbox(reason=_why_no_scope(use_systemd))
    from qex.platform.cgroup import CgroupError, CgroupFS, cgroup_of
    from qex.platform.scope import scope_in_path

    own = own_cgroup if own_cgroup is not None else cgroup_of("self")
    found = scope_in_path(own) if own else None
    if found is None:
        note = os.environ.get("QEX_SCOPE_NOTE")
        return ProcessGroupSandbox(reason=note or _why_no_scope(use_systemd))
    scope, unit = found
    from qex.platform.cgroup_sandbox import CgroupSandbox

    try:
        opened = CgroupSandbox.open(fs or CgroupFS(), scope, unit, mode)
        from qex.platform import chaintrace

        chaintrace.mark("sup.cgroup", job_id)
        return opened
    except CgroupError as exc:
        return ProcessGroupSandbox(reason=f"the scope {unit} gave no usable job cgroup: {exc}")
