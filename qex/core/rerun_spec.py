"""A recorded job made into a new one: the spec that `qex rerun` submits.

Pure. The recorded spec is the exact job that ran (its environment, directory and claim), so
a rerun repeats that work and not a new guess. The new job stands alone: it waits for no
other job, belongs to no group, and carries no dedupe key (a key would hand back the old job
instead of running it again). One definition for the coordinator's `rerun` request and for
the command's own path, which an older coordinator needs.
"""

from __future__ import annotations

from qex.core import model
from qex.core.names import derive_name, is_safe_name, safe_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qex.core.records import JobSpec


def again(spec: JobSpec, *, job_id: str, now: float) -> JobSpec:
    """`spec` as a new job `job_id`, submitted at `now`; `spec.command` is not empty."""
    name = safe_name(spec.name)
    if not is_safe_name(name):
        name = derive_name(spec.command[0])
    return model.replace(
        spec, id=job_id, submitted_at=now, name=name, needs=[], after=[], group=None,
        group_name=None, dedupe_key=None, dedupe_window=0,
    )


def unreadable(job_id: str) -> str:
    """The refusal for a job whose spec cannot be read back."""
    return (f"the spec of the job {job_id} is missing or unreadable, so qex cannot run it "
            "again; submit the command anew with `qex submit`")
