"""The few log-reading constants and sentences that both the full `qex logs` body
(`qex.core.logsel`, `qex.cli.log_files`) and its import-free fast form (`qex.cli.fastlogs`)
need. Kept apart, with no imports at all, so that the fast form can take them from here
instead of holding copies.
"""

from __future__ import annotations

#: The streams of a job, in the order qex shows them.
STREAMS = ("stdout", "stderr")
#: Lines shown per stream when the reader gives no range option.
DEFAULT_TAIL = 500
#: The streams `qex status` shows, in the order it shows them (the cause is usually on stderr).
STATUS_STREAMS = ("stderr", "stdout")
#: Lines of output `qex status` shows for a job that stopped without completing, in all
#: (half each when both streams have text).
STATUS_LINES = 20
#: A log above this size is read from its end only when just a tail is wanted.
FAST_TAIL_BYTES = 8 * 1024 * 1024


def count(n: int, singular: str, plural: str) -> str:
    """`1 line is` / `3 lines are`: the number with the form that agrees with it."""
    return f"1 {singular}" if n == 1 else f"{n} {plural}"


def hidden_sentence(hidden: int, where: str = "") -> str:
    """What a tail or head left out, and how to see it; `where` is "earlier ", "later " or ""."""
    lines = count(hidden, f"{where}line is", f"{where}lines are")
    return f"{lines} not shown; use --all, --head N or --tail N to see them."


def for_json(text: str) -> str:
    """The same text with undecodable bytes as U+FFFD, which JSON (and a terminal) can carry."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
