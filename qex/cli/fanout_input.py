"""The input of `submit --each-line`, read once per process.

Standard input, a pipe or a process substitution (`<(ls)`) can be read only once. The lean
submit path reads the input to send its text to the coordinator; when it then hands the
command to the full path (an input that is not UTF-8, a coordinator that cannot expand
lines), the full path must see the same bytes, so both read through here.
"""

from __future__ import annotations

import sys

from qex.core.fanout_source import MAX_INPUT_BYTES, STDIN, shown_source

#: What this process read, by the source as typed.
_READ: dict[str, bytes] = {}


def read_input(source: str) -> tuple[bytes, str]:
    """The raw input (at most one byte past the cap, so that the cap can be reported) and
    how messages name it. An unreadable file raises OSError (nothing is kept for it)."""
    data = _READ.get(source)
    if data is None:
        limit = MAX_INPUT_BYTES + 1
        if source == STDIN:
            data = sys.stdin.buffer.read(limit)
        else:
            with open(source, "rb") as handle:
                data = handle.read(limit)
        _READ[source] = data
    return data, shown_source(source)
