"""Recognise hand-written monitor loops and say what to use in their place.

Pure: the caller lists the processes (`qex.platform.proclist`) and passes them in, so the
rules can be tested on plain strings. A monitor is a shell loop that sleeps and looks at a
PROXY for the work (a process list, a log line, a file). A proxy can stay true or false for
ever after the work is gone, which is why qex offers `qex wait` instead: it waits on the
process itself and always gets an answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

from qex.core.model import dataclass


class Kind(StrEnum):
    """What the loop looks at; each kind fails in its own way."""

    PROCESS_COUNT = "count-of-processes"
    REMOTE_PROCESS_LIST = "remote-process-list"
    PROCESS_PATTERN = "process-list-pattern"
    LOG_LINE = "log-line"
    FILE_TEST = "file-test"
    UNKNOWN = "unknown"


#: Words that open a shell loop. The trailing space keeps `format` or `fortune` out.
_LOOP_WORDS = ("while ", "until ", "for ")

# A command word: at the start, or after a space, a shell operator, a quote or a path.
_BEFORE = r"(?:^|(?<=[\s;|&(`$'\"/]))"
_AFTER = r"(?=$|[\s;|&)`'\"])"


def _word(*names: str) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(_BEFORE + "(?:" + alternatives + ")" + _AFTER)


_SLEEP = _word("sleep")
_PROCESS_TOOLS = _word("ps", "pgrep", "pidof")
_COUNTERS = re.compile(r"grep\s+(?:-[A-Za-z]*c[A-Za-z]*|--count)\b|\bwc\s+-l\b|--count\b")
_SSH = _word("ssh")
_LOG_TOOLS = _word("grep", "egrep", "fgrep", "tail", "rg")
_FILE_TEST = re.compile(r"(?:\btest|\[\[?)\s+!?\s*-[efs]\s")

_WHY: dict[Kind, str] = {
    Kind.PROCESS_COUNT: (
        "it counts processes whose command matches a pattern, and on a shared machine "
        "another agent's work (or the loop itself) can keep that count above zero for ever"
    ),
    Kind.REMOTE_PROCESS_LIST: (
        "it reads another machine's process list over ssh, so a dropped connection or a "
        "reused name looks exactly like work that is still going"
    ),
    Kind.PROCESS_PATTERN: (
        "it searches the process list for a pattern, and the loop's own command line "
        "holds that pattern, so the search can match the loop itself"
    ),
    Kind.LOG_LINE: (
        "it waits for a line in a log, and if the program that writes the line dies first "
        "the line never comes"
    ),
    Kind.FILE_TEST: (
        "it waits for a file to appear or vanish, and a crash leaves the file in whatever "
        "state it had"
    ),
    Kind.UNKNOWN: (
        "it sleeps in a loop and tests something that is not the process it waits for"
    ),
}

_INSTEAD: dict[Kind, str] = {
    Kind.PROCESS_COUNT: "submit the work with `qex submit` and wait with `qex wait <id>`",
    Kind.REMOTE_PROCESS_LIST: (
        "run the work under qex on that machine and wait there: `ssh HOST qex wait <id>`"
    ),
    Kind.PROCESS_PATTERN: "submit the work with `qex submit` and wait with `qex wait <id>`",
    Kind.LOG_LINE: (
        "wait for the job with `qex wait <id>`, then search its output with "
        "`qex logs <id> --grep PATTERN`"
    ),
    Kind.FILE_TEST: (
        "wait for the job that makes the file with `qex wait <id>`, or submit with "
        "`qex submit --wait`"
    ),
    Kind.UNKNOWN: "submit the work with `qex submit` and wait with `qex wait <id>`",
}


def is_monitor(command: str) -> bool:
    """A command that sleeps inside a shell loop."""
    return bool(_SLEEP.search(command)) and any(word in command for word in _LOOP_WORDS)


def classify(command: str) -> Kind:
    """The proxy a monitor looks at, from the tools its command line names."""
    if _PROCESS_TOOLS.search(command):
        if _SSH.search(command):
            return Kind.REMOTE_PROCESS_LIST
        if _COUNTERS.search(command):
            return Kind.PROCESS_COUNT
        return Kind.PROCESS_PATTERN
    if _LOG_TOOLS.search(command):
        return Kind.LOG_LINE
    if _FILE_TEST.search(command):
        return Kind.FILE_TEST
    return Kind.UNKNOWN


def why(kind: Kind) -> str:
    return _WHY[kind]


def instead(kind: Kind) -> str:
    return _INSTEAD[kind]


@dataclass(frozen=True)
class ProcessRow:
    """One process as the platform layer saw it."""

    pid: int
    ppid: int
    pgid: int
    started_at: float | None      # epoch seconds; None when the platform could not tell
    command: str                  # the argument vector joined by spaces


@dataclass(frozen=True)
class Watcher:
    """A monitor loop found on the machine, with the advice for it."""

    pid: int
    ppid: int
    started_at: float | None
    command: str
    kind: Kind

    def to_dict(self, now: float) -> dict[str, object]:
        age = None if self.started_at is None else max(0.0, now - self.started_at)
        return {
            "pid": self.pid,
            "ppid": self.ppid,
            "started_at": self.started_at,
            "age_secs": age,
            "command": self.command,
            "kind": self.kind.value,
            "why": why(self.kind),
            "instead": instead(self.kind),
        }


def ancestry(pid: int, parents: dict[int, int]) -> set[int]:
    """`pid` and every ancestor of it that the table knows (guards against loops)."""
    seen: set[int] = set()
    current = pid
    while current > 0 and current not in seen:
        seen.add(current)
        current = parents.get(current, 0)
    return seen


def find_watchers(rows: Iterable[ProcessRow], *, self_pid: int) -> list[Watcher]:
    """Every monitor loop in `rows`, oldest first.

    Left out: this process, its ancestors (a loop that runs `qex watchers` is the user's own
    shell), its process group, and any command that runs `qex watchers` itself.
    """
    table = list(rows)
    parents = {row.pid: row.ppid for row in table}
    excluded = ancestry(self_pid, parents)
    own_group = next((row.pgid for row in table if row.pid == self_pid), None)
    found: list[Watcher] = []
    for row in table:
        if row.pid in excluded or (own_group is not None and row.pgid == own_group):
            continue
        if "qex watchers" in row.command or not is_monitor(row.command):
            continue
        found.append(Watcher(row.pid, row.ppid, row.started_at, row.command, classify(row.command)))
    # Oldest first; a row with no start time sorts last, then by pid for a stable order.
    found.sort(key=lambda w: (w.started_at is None, w.started_at or 0.0, w.pid))
    return found
