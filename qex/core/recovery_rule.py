"""The one rule that says what an active record means when no coordinator watched it.

Pure. A record that says `starting` or `running` is a claim made by processes that may be
gone: the coordinator and the supervisor can be killed (`kill -9`, the OOM killer, a reboot).
The coordinator applies this rule to every active record when it starts, and every command
that reads records without a coordinator applies the SAME rule to what it reads, so a read
never shows a dead job as running, and both agree on what the record will say once a
coordinator writes it. The facts (boot id, process identity) are gathered by
`qex.platform.liveness`; this module only decides.
"""

from __future__ import annotations

from qex.core.model import dataclass

#: What the rule can decide for an active record.
ALIVE = "alive"          # a process of the job still runs under a supervisor: trust the record
REQUEUE = "requeue"      # the job was never launched: it goes back to the queue
FAIL = "fail"            # nothing will ever write the result: the job failed

#: What a probe of a job's `supervisor.lock` found (`qex.store.jobs.supervisor_lock`). A
#: supervisor takes that lock after its go and before it touches anything of the job, so a
#: lock that was never made is proof that no supervisor of this job ever passed its go.
LOCK_MISSING = "missing"  # no such file: no supervisor of this job has passed its go
LOCK_FREE = "free"        # the file is there and nobody holds it: its supervisor has ended
LOCK_HELD = "held"        # held, or it could not be probed: no evidence either way


@dataclass(frozen=True)
class Facts:
    """What was observed about one active record's processes."""

    #: The record was written in this boot (or says nothing about its boot).
    same_boot: bool
    #: The supervisor (pid and start token) is still that process, and not a zombie.
    supervisor_alive: bool
    #: The job's own process group leader is still that process.
    job_alive: bool
    #: The record or the job directory shows that a supervisor was ever started.
    launched: bool


@dataclass(frozen=True)
class Verdict:
    """The rule's answer; `error` is the record's sentence for a failure."""

    action: str
    error: str | None = None
    #: A job process survived its supervisor, and must be stopped: nothing can record it.
    stop_job: bool = False


def judge(state: str, has_pid: bool, facts: Facts, supervisor_said: str | None = None) -> Verdict:
    """The verdict for an active record (`starting` or `running`) in state `state`."""
    if facts.supervisor_alive:
        return Verdict(ALIVE)
    if facts.job_alive:
        error = "the coordinator stopped, and the supervisor of this job did not continue"
        if supervisor_said:
            error += f". The supervisor said: {supervisor_said}"
        return Verdict(FAIL, error=error, stop_job=True)
    if state == "starting" and not has_pid and not facts.launched:
        return Verdict(REQUEUE)
    if facts.same_boot:
        error = "the coordinator stopped, and neither the job nor its supervisor continued"
        if supervisor_said:
            error += f". The supervisor said: {supervisor_said}"
        return Verdict(FAIL, error=error)
    return Verdict(FAIL, error=(
        "the machine restarted while the job was active, and no process of the job survived "
        "the restart; submit it again with `qex rerun` if you still need it"
    ))


def stopped_note(error: str, stopped: bool) -> str:
    """The failure sentence once qex has (or has not) stopped a job that outlived its supervisor."""
    if stopped:
        return error + "; qex stopped the job process, because nothing could record its result"
    return error
