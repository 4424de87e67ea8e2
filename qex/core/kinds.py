"""The closed sets of words that records, job files and the configuration use.

Pure and import-light (only `typing`). Each set is spelled once, as a `Literal` for mypy and
as a tuple for the code that checks user text against it; `tests/unit/test_records.py`
checks that the two agree, and `qex.core.schemas` lists the same tuples.
"""

from __future__ import annotations

from typing import Literal, TypeVar

#: Where a job's claim came from: the user, the learner, the defaults, or a fan-out sibling.
ClaimSource = Literal["explicit", "learned", "default", "fan-out"]
CLAIM_SOURCES: tuple[ClaimSource, ...] = ("explicit", "learned", "default", "fan-out")

#: How much of the submitting shell's environment a job gets.
EnvCapture = Literal["all", "minimal", "none"]
ENV_CAPTURES: tuple[EnvCapture, ...] = ("all", "minimal", "none")

#: `[enforce] mode`: no limit, a soft limit (memory.high, with a higher memory.max), or hard.
EnforceMode = Literal["off", "soft", "hard"]
ENFORCE_MODES: tuple[EnforceMode, ...] = ("off", "soft", "hard")

#: Where an `oom` verdict came from: the job's own cgroup (proven) or the login session.
OomEvidence = Literal["cgroup", "session"]
OOM_EVIDENCE: tuple[OomEvidence, ...] = ("cgroup", "session")

W = TypeVar("W", bound=str)


def pick(word: str, choices: tuple[W, ...]) -> W | None:
    """The member of `choices` equal to `word`, typed as the set's Literal; None if none is."""
    for choice in choices:
        if choice == word:
            return choice
    return None
