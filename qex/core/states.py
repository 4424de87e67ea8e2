"""Job states, the other closed word sets of a record, and the exit-code band that every
job-speaking command obeys.

Pure. The band keeps 0..96 for the job itself and gives 97..127 to qex, so a script can tell
"the job failed" from "my wait stopped" by the code alone (see `qex help exit-codes`).

Each word set (claim sources, environment capture, enforcement modes, OOM evidence) is spelled
once here, as a `Literal` for mypy and as a tuple for the code that checks user text against
it; tests/unit/test_old_records.py checks that the two agree, and `qex.core.schemas` lists the
same tuples. They live in this module because every command already imports it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal, TypeVar


class State(StrEnum):
    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    KILLED = "killed"
    TIMEOUT = "timeout"
    EXPIRED = "expired"
    OOM = "oom"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


#: Where a job's claim came from: the user, the learner, the defaults, or a fan-out sibling.
ClaimSource = Literal["explicit", "learned", "default", "fan-out"]
CLAIM_SOURCES: tuple[ClaimSource, ...] = ("explicit", "learned", "default", "fan-out")

#: How much of the submitting shell's environment a job gets.
EnvCapture = Literal["all", "minimal", "none"]
ENV_CAPTURES: tuple[EnvCapture, ...] = ("all", "minimal", "none")

#: `[enforce] mode`: no limit, a soft limit (memory.high, with a higher memory.max), or hard.
EnforceMode = Literal["off", "soft", "hard"]
ENFORCE_MODES: tuple[EnforceMode, ...] = ("off", "soft", "hard")

#: Where an `oom` verdict came from: the job's own cgroup (proven), the login session, or
#: Slurm's OUT_OF_MEMORY state.
OomEvidence = Literal["cgroup", "session", "slurm"]
OOM_EVIDENCE: tuple[OomEvidence, ...] = ("cgroup", "session", "slurm")

W = TypeVar("W", bound=str)


def pick(word: str, choices: tuple[W, ...]) -> W | None:
    """The member of `choices` equal to `word`, typed as the set's Literal; None if none is."""
    for choice in choices:
        if choice == word:
            return choice
    return None


ACTIVE = frozenset({State.STARTING, State.RUNNING})
NOT_FINAL = frozenset({State.QUEUED, State.STARTING, State.RUNNING})
FINAL = frozenset(set(State) - NOT_FINAL)

#: Order used when a record on disk and one in memory disagree: a state never moves back.
RANK = {State.QUEUED: 0, State.STARTING: 1, State.RUNNING: 2}


def rank(state: str) -> int:
    return RANK.get(State(state), 3)


def parse_state(word: str) -> State:
    """A state from user text: case-insensitive, and the American `canceled` too."""
    text = word.strip().lower()
    if text == "canceled":
        text = "cancelled"
    return State(text)


#: Words that select several states in `list --state` and `clean`.
STATE_GROUPS: dict[str, frozenset[State]] = {
    "done": FINAL,
    "finished": FINAL,
    "terminal": FINAL,
    "active": NOT_FINAL,
}


def parse_state_filter(word: str) -> frozenset[State]:
    """A state or a group word (`done`, `active`); raises ValueError for anything else."""
    text = word.strip().lower()
    if text in STATE_GROUPS:
        return STATE_GROUPS[text]
    try:
        return frozenset({parse_state(text)})
    except ValueError:
        names = ", ".join(s.value for s in State)
        raise ValueError(
            f"`{word}` is not a state; give one of {names}, or done (every final state) or active"
        ) from None


class Exit:
    """The codes of the band (qex help exit-codes)."""

    JOB_HIGH = 97          # the job exited 97..255; the record has the number
    SIGNAL = 98            # a signal that qex did not attribute to a stop
    OOM = 99               # proven memory kill
    NOT_FINISHED = 100     # status --quiet on a job that has not stopped
    RESULT_LOST = 120      # the job ran, but what ended it is unknown (its supervisor died)
    QEX_FAILED = 121       # qex could not do it; no job ran
    WAIT_INTERRUPTED = 122
    EXPIRED = 123
    WAIT_TIMEOUT = 124
    STOPPED = 125          # killed, timeout, cancelled
    SKIPPED = 126
    NO_SUCH_JOB = 127

    # Commands that do not speak for a job.
    OK = 0
    FAILURE = 1
    USAGE = 2


def exit_code_for(record: dict[str, Any]) -> int:
    """The band code for one status record."""
    state = record.get("state")
    code = record.get("exit_code")
    if state == State.COMPLETED:
        return 0
    if state == State.FAILED:
        if isinstance(code, int):
            if 0 < code <= 96:
                return code
            if code >= 97 or code < 0:
                return Exit.JOB_HIGH
            return Exit.QEX_FAILED
        if record.get("signal") is not None:
            return Exit.SIGNAL
        if record.get("attempts"):
            # A process of the job ran (the attempt is counted once it started), and the
            # record has no code because the supervisor was lost: 121 would say nothing ran.
            return Exit.RESULT_LOST
        return Exit.QEX_FAILED
    if state == State.OOM:
        return Exit.OOM
    if state in (State.KILLED, State.TIMEOUT, State.CANCELLED):
        return Exit.STOPPED
    if state == State.EXPIRED:
        return Exit.EXPIRED
    if state == State.SKIPPED:
        return Exit.SKIPPED
    return Exit.NOT_FINISHED


def first_nonzero(codes: list[int]) -> int:
    """Several jobs give the first code that is not 0, in the order they were named."""
    for code in codes:
        if code != 0:
            return code
    return 0
