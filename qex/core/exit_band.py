"""The exit-code band that every job-speaking command obeys, and the code for one record.

Pure, and free of imports but the state words, because every fast path ends with a code.
The band keeps 0..96 for the job itself and gives 97..127 to qex, so a script can tell "the
job failed" from "my wait stopped" by the code alone (see `qex help exit-codes`).
"""

from __future__ import annotations

from qex.core import state_words as words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


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


def exit_code_for(record: Mapping[str, Any]) -> int:
    """The band code for one status record."""
    state = record.get("state")
    code = record.get("exit_code")
    if state == words.COMPLETED:
        return 0
    if state == words.FAILED:
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
    if state == words.OOM:
        return Exit.OOM
    if state in (words.KILLED, words.TIMEOUT, words.CANCELLED):
        return Exit.STOPPED
    if state == words.EXPIRED:
        return Exit.EXPIRED
    if state == words.SKIPPED:
        return Exit.SKIPPED
    return Exit.NOT_FINISHED


def first_nonzero(codes: list[int]) -> int:
    """Several jobs give the first code that is not 0, in the order they were named."""
    for code in codes:
        if code != 0:
            return code
    return 0
