"""What the lean submit path needs of `--each-line` without `qex.core.fanout` (which
imports `re`): the limits of the input and how messages name it. Pure."""

from __future__ import annotations

#: The whole input is held in memory, so it is capped whether it comes from a file or a pipe.
MAX_INPUT_BYTES = 64 * 1024 * 1024
#: Each job holds a directory on disk; a runaway input must not fill it.
DEFAULT_MAX_JOBS = 1000
#: How `--each-line` names the standard input.
STDIN = "-"


def shown_source(source: str) -> str:
    """How messages name the input: the path as typed, or the standard input."""
    return "the standard input" if source == STDIN else source
