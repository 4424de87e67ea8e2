"""After a memory kill that the job's own cgroup proved: raise the claim, or stop at `oom`.

The decision is `qex.core.oom_retry.plan_oom`; this module applies it to the two records. A
raise rewrites spec.json (the claim and the claim hints that qex wrote into the job's
environment, so the next attempt hears the new size in QEX_MEM and the others) and turns
status.json back into a `queued` record: the coordinator re-enqueues it, because the queue
never admitted the larger claim. Everything that says how the job ran stays (attempts,
started_at, usage, the logs), and `queue_time_applies` turns off: `--max-queue-time` limits
a wait for a first start, and this job already ran.
"""

from __future__ import annotations

from pathlib import Path

from qex.core import classify as verdicts
from qex.core.config import Config
from qex.core.oom_retry import plan_oom
from qex.core.records import JobSpec, JobStatus
from qex.core.states import State
from qex.core.units import format_size
from qex.store import jobs


def after_proven_oom(spec: JobSpec, status: JobStatus, config: Config, job_dir: Path,
                     *, attempt: int, budget: int) -> str:
    """Change the records for a proven OOM; returns the sentence for `error`.

    Afterwards `status.state` is `queued` (the claim was raised) or `oom` (it stays).
    """
    left = status.oom_retries_left
    if left is None:
        left = config.retry.on_oom
    plan = plan_oom(status.mem, budget, config.retry.growth, left)
    status.oom_evidence = "cgroup"
    if plan.new_mem is None:
        status.state = State.OOM
        status.oom_retries_left = left
        if plan.at_budget:
            return verdicts.oom_at_budget_sentence(status.mem, budget)
        return verdicts.oom_no_raises_sentence(status.mem, config.retry.on_oom)
    old, new = status.mem, plan.new_mem
    try:
        rewrite_spec(spec, job_dir, new, config.claims.also)
    except OSError as exc:
        status.state = State.OOM
        return (
            f"the kernel stopped this job for memory at its claim of {format_size(old)}, and "
            f"qex could not write the larger claim into spec.json ({exc.strerror or exc}); run "
            "the job again with a larger --mem"
        )
    status.back_to_queue()
    status.mem = new
    status.oom_retries_left = left - 1
    status.queue_time_applies = False
    raised = verdicts.oom_raise_note(attempt, old, new)
    status.note = f"{status.note} {raised}" if status.note else raised
    return verdicts.oom_requeue_sentence(attempt, old, new, left - 1)


def rewrite_spec(spec: JobSpec, job_dir: Path, new_mem: int, also: tuple[str, ...]) -> None:
    """The new claim in spec.json, and in exactly the hint variables that qex wrote there."""
    from qex.core.hints import rewrite_hints

    env = dict(spec.env)
    rewrite_hints(env, spec.hint_keys, spec.cpu, new_mem, also)
    spec.env = env
    spec.mem = new_mem
    jobs.write_spec(job_dir, spec)
