"""How one attempt of a job ended: the state it earns, and the sentence that explains it.

Pure. The supervisor gathers the facts (exit status, whether the timer fired, the
`killed-by-user` mark, the sandbox's memory evidence) and this module decides, in a fixed
order, so that the same facts always give the same state:

1. exit code 0 -> `completed`, even when the timer fired at the same moment;
2. the timer fired -> `timeout`;
3. a qex command marked the kill (`qex kill` writes the mark before it signals) ->
   `killed`, whatever the kernel may also have done, and also when the job caught the
   signal and exited with a code of its own: the person asked for a stop, so a `--retries`
   attempt must not start it again;
4. SIGKILL, or a non-zero exit, with a memory kill counted in the job's OWN cgroup ->
   `oom`, proven (evidence "cgroup"): the claim was too small, so qex may raise it;
5. SIGKILL with the login session's counter risen -> `oom` too, but evidence "session": that
   counter also counts other programs of the user, so it proves nothing, and qex neither
   retries nor learns;
6. any other non-zero exit -> `failed`;
7. TERM or KILL from outside -> `killed` (for an unexplained KILL the record says that qex
   could not tell whether memory caused it); any other signal -> `failed`.

The non-zero exit of rule 4 covers a job whose leader survived the kernel killing one of its
children: with the job's own counter the cause is certain, and raising the claim is the fix.
"""

from __future__ import annotations

from qex.core.model import dataclass
from qex.core.states import OomEvidence, State
from qex.core.units import format_duration, format_size

SIGKILL = 9
SIGTERM = 15


@dataclass(frozen=True)
class AttemptEnd:
    """The facts about the end of one attempt."""

    exit_code: int | None
    signal: int | None
    timed_out: bool = False
    killed_by_user: bool = False
    oom_kills: int = 0
    oom_proven: bool = False
    #: "cgroup" (the job's own leaf), "session" (the login session), or None (no counter).
    oom_source: OomEvidence | None = None


@dataclass(frozen=True)
class Verdict:
    state: State
    #: "cgroup" or "session" for an `oom` state, else None.
    oom_evidence: OomEvidence | None = None
    #: A sentence for the record's `error` field, when the state alone does not explain it.
    error: str | None = None


def classify(end: AttemptEnd, *, claim: int, timeout: float | None = None) -> Verdict:
    """The state that one attempt earned (see the module docstring for the order)."""
    if end.exit_code == 0:
        return Verdict(State.COMPLETED)
    if end.timed_out:
        return Verdict(State.TIMEOUT, error=timeout_sentence(timeout))
    if end.killed_by_user:
        return Verdict(State.KILLED)
    proven = end.oom_proven and end.oom_kills > 0
    if proven and (end.signal == SIGKILL or (end.exit_code is not None and end.exit_code != 0)):
        return Verdict(State.OOM, oom_evidence="cgroup")
    if end.signal == SIGKILL and end.oom_kills > 0 and end.oom_source == "session":
        return Verdict(State.OOM, oom_evidence="session", error=session_oom_sentence(claim))
    if end.exit_code is not None:
        return Verdict(State.FAILED)
    if end.signal == SIGKILL:
        return Verdict(State.KILLED, error=unexplained_kill_sentence(end))
    if end.signal == SIGTERM:
        return Verdict(State.KILLED, error=(
            "the signal TERM stopped this job, and no qex command sent it; something outside "
            "qex (a person, a script or the system) stopped it, so look there before you run "
            "it again"
        ))
    return Verdict(State.FAILED)


def timeout_sentence(timeout: float | None) -> str:
    limit = format_duration(timeout) if timeout else "its limit"
    return (
        f"the job ran longer than its time limit of {limit} (`--timeout`), so qex stopped it; "
        "give a larger --timeout if the work needs more time"
    )


def session_oom_sentence(claim: int) -> str:
    return (
        f"the kernel stopped this job for memory (its claim was {format_size(claim)}), but the "
        "only count qex could read is the one of your login session, which other programs of "
        "yours also raise, so qex cannot prove that this job's claim was too small and it "
        "neither started a new attempt nor learned from this one; compare `usage.max_rss` with "
        "the claim, and set `[enforce] mode` to soft or hard to get a count for each job"
    )


def unexplained_kill_sentence(end: AttemptEnd) -> str:
    if end.oom_source == "cgroup":
        why = (
            "the job's own memory counter shows no kill for memory, so something outside qex "
            "sent it"
        )
    elif end.oom_source == "session":
        why = "your login session's count of memory kills did not move, so memory is unlikely"
    else:
        why = (
            "this machine gives qex no count of memory kills for this job, so qex cannot tell "
            "a kill for memory from a `kill -9`"
        )
    return f"the signal KILL stopped this job and no qex command sent it; {why}"


def oom_requeue_sentence(attempt: int, old: int, new: int, left: int) -> str:
    return (
        f"the kernel stopped attempt {attempt} for memory at its claim of {format_size(old)}, "
        f"so the claim was too small; qex raised it to {format_size(new)} and put the job back "
        f"in the queue ({left} raise(s) left)"
    )


def oom_raise_note(attempt: int, old: int, new: int) -> str:
    return (
        f"qex raised the memory claim from {format_size(old)} to {format_size(new)} after the "
        f"kernel stopped attempt {attempt} for memory."
    )


def oom_at_budget_sentence(claim: int, budget: int) -> str:
    return (
        f"the kernel stopped this job for memory at its claim of {format_size(claim)}, which is "
        f"already the whole memory budget of qex ({format_size(budget)}); this job needs a "
        "machine with more memory, or a larger `[budget] mem` in the config file"
    )


def oom_no_raises_sentence(claim: int, on_oom: int) -> str:
    if on_oom <= 0:
        return (
            f"the kernel stopped this job for memory at its claim of {format_size(claim)}, and "
            "`[retry] on_oom` = 0 turns the automatic raise off; give a larger --mem"
        )
    return (
        f"the kernel stopped this job for memory at its claim of {format_size(claim)} after qex "
        f"had raised the claim {on_oom} time(s) (`[retry] on_oom`); give a larger --mem, or "
        "allow more raises"
    )


def retry_sentence(attempt: int, exit_code: int | None, signal: int | None) -> str:
    if exit_code is not None:
        how = f"with the exit code {exit_code}"
    elif signal is not None:
        how = f"from the signal {signal}"
    else:
        how = "without an exit code"
    return f"attempt {attempt} failed {how}; qex starts the job again (`--retries`)"
