"""The job states as plain words, for the code that must not pay for `enum`.

`qex status`, `qex list` and the other hot reads render the coordinator's answer as it came,
where a state is a plain string; importing `enum` and `typing` would cost them more than
their own work (`docs/performance.md`). `qex.core.states.State` is built from these words, so
the typed form and the plain form cannot drift apart. Pure, and free of imports.
"""

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

#: Every state, in the order a job can pass through them (the order of `State`).
ALL_WORDS = (QUEUED, STARTING, RUNNING, COMPLETED, FAILED, KILLED, TIMEOUT, EXPIRED, OOM,
             CANCELLED, SKIPPED)
#: A supervisor exists: the job is about to run, or runs.
ACTIVE_WORDS = frozenset({STARTING, RUNNING})
NOT_FINAL_WORDS = frozenset({QUEUED, STARTING, RUNNING})
#: The states in which a job will not change again.
FINAL_WORDS = frozenset(ALL_WORDS) - NOT_FINAL_WORDS


#: Words that select several states in `list --state` and `clean`.
GROUP_WORDS: dict[str, frozenset[str]] = {
    "done": FINAL_WORDS,
    "finished": FINAL_WORDS,
    "terminal": FINAL_WORDS,
    "active": NOT_FINAL_WORDS,
}


def state_word(word: str) -> str:
    """One state from user text: case-insensitive, and the American `canceled` too; raises
    ValueError for a word that is not a state."""
    text = word.strip().lower()
    if text == "canceled":
        text = CANCELLED
    if text not in ALL_WORDS:
        raise ValueError(text)
    return text


def filter_words(word: str) -> frozenset[str]:
    """The states that a `--state` word selects: one state, or a group word (`done`,
    `active`); raises ValueError, with the sentence to show, for anything else."""
    text = word.strip().lower()
    if text in GROUP_WORDS:
        return GROUP_WORDS[text]
    try:
        return frozenset({state_word(text)})
    except ValueError:
        raise ValueError(
            f"`{word}` is not a state; give one of {', '.join(ALL_WORDS)}, or done (every final "
            "state) or active") from None


def listed_for(state: str, wanted: frozenset[str] | set[str]) -> bool:
    """True when `list` with a state filter sends a record in `state`: one of the `wanted`
    states, or an active one, because `qex list` counts the pools that active jobs hold over
    every job, not only over the jobs it shows."""
    return state in wanted or state in ACTIVE_WORDS
