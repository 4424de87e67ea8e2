"""The OOM correction: what to do after the job's own cgroup proved a kill for memory.

Pure. A proven kill at the claim says one thing: the claim was too small. So qex raises it by
`[retry] growth` (never above `[budget] mem`) and sends the job back through the queue, which
must admit the larger claim before it runs. This count is `[retry] on_oom`, apart from
`--retries`: the claim is usually qex's own estimate, so qex corrects its own fault without
spending the count the user chose for faults outside the task.
"""

from __future__ import annotations

from qex.core.model import dataclass


@dataclass(frozen=True)
class OomPlan:
    #: The raised claim, or None when the job must stay `oom`.
    new_mem: int | None
    #: True when the claim already fills the budget (the record then asks for a larger one).
    at_budget: bool = False


def plan_oom(mem: int, budget: int, growth: float, raises_left: int) -> OomPlan:
    """Raise `mem` by `growth`, capped at `budget`, while raises are left."""
    if mem >= budget:
        return OomPlan(None, at_budget=True)
    if raises_left <= 0:
        return OomPlan(None)
    raised = min(max(int(mem * growth), mem + 1), budget)
    return OomPlan(raised)
