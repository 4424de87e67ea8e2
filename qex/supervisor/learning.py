"""What a finished attempt teaches the learner (`qex.store.usage`), from the supervisor's side.

Two kinds of lesson, and only these: a COMPLETED run gives its peak (what the command needs);
a memory kill PROVEN by the job's own cgroup gives a lower bound (its claim was too small).
A run that something else stopped shows what it reached, not what it needed, so it teaches
nothing; neither does a kill that only the session's counter saw. Nothing is recorded when
`[learn] enabled` is false. A store that cannot be written never costs the job its result.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from qex.core import learner
from qex.core.records import JobSpec, JobStatus
from qex.store.paths import Paths

if TYPE_CHECKING:
    from qex.core.records import Usage


def _key(spec: JobSpec) -> str:
    # A fan-out learns as one command: its template, not each line's arguments.
    return learner.learn_key(spec.cwd, list(spec.learn_key or spec.command))


def _elapsed(status: JobStatus, finished: float) -> float:
    return max(0.0, finished - (status.started_at or finished))


def record_completed(paths: Paths, spec: JobSpec, status: JobStatus, finished: float) -> None:
    usage: Usage = status.usage or {}
    if not usage.get("max_rss"):
        return
    from qex.store import usage as store

    try:
        store.record_peak(paths, _key(spec), name=spec.name, max_rss=int(usage["max_rss"]),
                          cpu_secs=float(usage.get("cpu_secs") or 0.0),
                          elapsed_secs=_elapsed(status, finished), at=finished, claim=status.mem)
    except OSError as exc:
        print(f"qex: qex could not record what this job used: {exc}", file=sys.stderr)


def record_oom_kill(paths: Paths, spec: JobSpec, status: JobStatus, finished: float) -> None:
    usage: Usage = status.usage or {}
    from qex.store import usage as store

    try:
        store.record_oom(paths, _key(spec), name=spec.name, claim=status.mem,
                         max_rss=int(usage.get("max_rss") or 0),
                         cpu_secs=float(usage.get("cpu_secs") or 0.0),
                         elapsed_secs=_elapsed(status, finished), at=finished)
    except OSError as exc:
        print(f"qex: qex could not record the memory kill of this job: {exc}", file=sys.stderr)
