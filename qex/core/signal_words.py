"""Signals as people write them (`TERM`, `SIGKILL`, `9`) and as qex names them (`SIGTERM`).

Read from the C module `_signal`: the `signal` module builds its enums at import, and
`qex kill` and `qex status` run once per call, where that import would cost more than the
command's own work (`docs/performance.md`). Pure naming, with no I/O, so it sits with the
core: the coordinator, the supervisor and the lean commands read and name signals with the
same code, and the NOTE of `qex list` can be made in the coordinator (`core.record_view`).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]

#: The signals `qex kill --signal` takes by name (with or without `SIG`).
SIGNALS: dict[str, int] = {
    name: int(getattr(_signal, f"SIG{name}"))
    for name in ("TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2")
}


def parse_signal(text: str) -> int:
    """`TERM`, `SIGKILL`, `9`: a signal number; ValueError with the accepted forms."""
    word = text.strip().upper()
    if word.startswith("SIG"):
        word = word[3:]
    if word in SIGNALS:
        return SIGNALS[word]
    if word.isdigit() and 1 <= int(word) <= 64:
        return int(word)
    raise ValueError(
        f"`{text}` is not a signal; give TERM, KILL, INT, HUP, QUIT, USR1, USR2 "
        "or a number from 1 to 64"
    )


def signal_name(number: int) -> str:
    """`SIGTERM` for 15: the name `signal.Signals(number).name` gives. Where names share a
    number, the enum's first is the smallest name; a number without a name is `signal N`."""
    names = [name for name in dir(_signal) if name.startswith("SIG") and not
             name.startswith("SIG_") and getattr(_signal, name) == number]
    return min(names) if names else f"signal {number}"
