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
from typing import Literal, TypeVar

from qex.core import state_words as words
from qex.core.exit_band import Exit, exit_code_for, first_nonzero

#: The exit-code band lives in `qex.core.exit_band` (free of imports, for the fast paths).
__all__ = ["ACTIVE", "CLAIM_SOURCES", "ENFORCE_MODES", "ENV_CAPTURES", "FINAL", "NOT_FINAL",
           "OOM_EVIDENCE", "RANK", "STATE_GROUPS", "ClaimSource", "EnforceMode", "EnvCapture",
           "Exit", "OomEvidence", "State", "exit_code_for", "first_nonzero", "parse_state",
           "parse_state_filter", "pick", "rank"]


class State(StrEnum):
    """The typed state; its values are the words of `qex.core.state_words`."""

    QUEUED = words.QUEUED
    STARTING = words.STARTING
    RUNNING = words.RUNNING
    COMPLETED = words.COMPLETED
    FAILED = words.FAILED
    KILLED = words.KILLED
    TIMEOUT = words.TIMEOUT
    EXPIRED = words.EXPIRED
    OOM = words.OOM
    CANCELLED = words.CANCELLED
    SKIPPED = words.SKIPPED


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


ACTIVE = frozenset(State(word) for word in words.ACTIVE_WORDS)
NOT_FINAL = frozenset(State(word) for word in words.NOT_FINAL_WORDS)
FINAL = frozenset(State(word) for word in words.FINAL_WORDS)

#: Order used when a record on disk and one in memory disagree: a state never moves back.
RANK = {State.QUEUED: 0, State.STARTING: 1, State.RUNNING: 2}


def rank(state: str) -> int:
    return RANK.get(State(state), 3)


def parse_state(word: str) -> State:
    """A state from user text: case-insensitive, and the American `canceled` too."""
    return State(words.state_word(word))


#: Words that select several states in `list --state` and `clean`.
STATE_GROUPS: dict[str, frozenset[State]] = {
    name: frozenset(State(word) for word in chosen) for name, chosen in words.GROUP_WORDS.items()
}


def parse_state_filter(word: str) -> frozenset[State]:
    """A state or a group word (`done`, `active`); raises ValueError for anything else."""
    return frozenset(State(text) for text in words.filter_words(word))
