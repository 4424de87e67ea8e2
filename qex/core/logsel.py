"""Choosing which lines of a job's log to show, and saying what was left out.

Pure: the caller reads the file and prints. `qex logs` and `qex status` both use this, so
the two commands select lines in exactly one way.

The usual reader has a small context (an agent, or a person in a terminal), and a job can
write millions of lines. So every path here has a limit, and every result carries the
counts that let the caller say what it did not show: a reader must never take a part of a
log for the whole of it.

Order of operations: `--grep` (with `-C`) picks candidate lines first; then one range
option (`--lines`, else `--head`, else `--tail`, else `--all`, else the default tail) cuts
the candidates. `--max-matches` limits the matches before the range is applied.
"""

from __future__ import annotations

from qex.core.log_words import DEFAULT_TAIL, count, hidden_sentence
from qex.core.model import dataclass

# `re` and `collections` are imported where they are used: a lean `qex logs` with a plain
# range needs neither, and together they cost about as much as the rest of its start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable

#: Matches of `--grep` shown when the reader gives no `--max-matches` (and no `--all`).
DEFAULT_MAX_MATCHES = 100
#: Lines `--follow` shows from the existing file before it waits for new ones.
FOLLOW_LEAD = 20
#: The mark between two groups of context lines (`-C N`) that are not neighbours in the file,
#: as grep writes it.
GAP_MARK = "--"


class SelectionError(ValueError):
    """Options that cannot be applied; the message names the option and the remedy."""


def parse_range(text: str) -> tuple[int, int]:
    """`400:430` -> (400, 430): 1-based and inclusive, the way a person counts lines."""
    first, sep, last = text.partition(":")
    if not sep:
        raise SelectionError(
            f"--lines takes a range such as 400:430, and `{text}` has no colon"
        )
    try:
        start = int(first.strip())
        end = int(last.strip())
    except ValueError:
        raise SelectionError(
            f"--lines takes two whole numbers such as 400:430, and `{text}` is not that"
        ) from None
    if start < 1 or end < 1:
        raise SelectionError(f"--lines counts from 1, so `{text}` names no line; give 1:N or more")
    if start > end:
        raise SelectionError(
            f"--lines `{text}` starts after it ends; give the smaller number first"
        )
    return start, end


@dataclass(frozen=True)
class Selection:
    """The reader's options. All default to "nothing given": the last DEFAULT_TAIL lines."""

    tail: int | None = None
    head: int | None = None
    lines: tuple[int, int] | None = None
    grep: str | None = None
    fixed: bool = False
    context: int = 0
    number: bool = False
    max_matches: int | None = None
    all: bool = False

    def __post_init__(self) -> None:
        for name in ("tail", "head", "max_matches"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise SelectionError(f"--{name.replace('_', '-')} takes a count of 0 or more")
        if self.context < 0:
            raise SelectionError("-C/--context takes a count of 0 or more")
        if self.context and self.grep is None:
            raise SelectionError("-C/--context gives lines around each match, so it needs --grep")
        if self.fixed and self.grep is None:
            raise SelectionError("--fixed says how to read the --grep pattern, so it needs --grep")
        if self.max_matches is not None and self.grep is None:
            raise SelectionError("--max-matches limits the matches of --grep, so it needs --grep")
        ranges = [n for n, v in (("--tail", self.tail), ("--head", self.head),
                                 ("--lines", self.lines)) if v is not None]
        if self.all:
            ranges.append("--all")
        if len(ranges) > 1:
            raise SelectionError(
                f"{' and '.join(ranges)} each choose a range of lines; give one of them"
            )
        self.matcher()  # a pattern that is not a regular expression is named before any read

    @property
    def explicit(self) -> bool:
        """True when the reader chose lines (a range or a search), not the default tail."""
        return (self.tail is not None or self.head is not None or self.lines is not None
                or self.grep is not None or self.all)

    def check_follow(self) -> None:
        """A followed stream has no end and no total, so the options that need one are refused."""
        if self.max_matches is not None:
            raise SelectionError(
                "--max-matches counts the matches of a whole file, and --follow reads a stream "
                "with no end; use --grep alone to filter the stream"
            )
        for name, given in (("--head", self.head is not None), ("--lines", self.lines is not None),
                            ("--all", self.all)):
            if given:
                raise SelectionError(
                    f"{name} needs the end of the file, and --follow reads a stream with no end; "
                    "use --tail N for the lines before the new ones"
                )

    def matcher(self) -> Callable[[str], bool]:
        """The test for one line. A bad regular expression is a SelectionError, raised here."""
        if self.grep is None:
            return lambda _line: True
        if self.fixed:
            needle = self.grep
            return lambda line: needle in line
        from qex.core.grep_pattern import simple_test

        simple = simple_test(self.grep)  # text, `.` and `.*`, perhaps in anchored branches
        if simple is not None:
            return simple
        import re

        try:
            pattern = re.compile(self.grep)
        except re.error as exc:
            raise SelectionError(
                f"--grep `{self.grep}` is not a regular expression ({exc}); "
                "add --fixed to search for the text as it stands"
            ) from None
        return lambda line: pattern.search(line) is not None


@dataclass(frozen=True)
class Selected:
    """The chosen lines, ready to print, and the counts a notice needs."""

    #: Output lines without newlines: numbered when asked, with GAP_MARK between gaps.
    lines: list[str]
    #: Lines in the whole stream (including any the caller did not load).
    total: int
    #: Candidate lines the range option left out.
    hidden: int
    #: Where the hidden lines are: "before", "after", "around" (for --lines), or "" when none.
    hidden_where: str
    #: Lines that matched --grep in the whole stream; None without --grep.
    matches: int | None
    #: Matches that the output holds.
    matches_shown: int

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def notice(self) -> str | None:
        """One sentence about what is missing, or None when the output is the whole selection."""
        if self.matches is not None:
            found = count(self.matches, "line matches", "lines match")
            if self.matches > self.matches_shown:
                return (f"... {found} the pattern, and qex shows {self.matches_shown} of them; "
                        "use --max-matches N, --all or a narrower pattern to see others.")
            if self.hidden:
                return f"... {found} the pattern; {self._hidden_sentence()}"
            return f"... {found} the pattern."
        if self.hidden:
            return f"... {self._hidden_sentence()}"
        return None

    def _hidden_sentence(self) -> str:
        where = {"before": "earlier ", "after": "later "}.get(self.hidden_where, "")
        if self.hidden_where == "around":
            lines = count(self.hidden, f"{where}line is", f"{where}lines are")
            return f"{lines} outside the range and not shown; use --all to see every line."
        return hidden_sentence(self.hidden, where)


def split_lines(text: str) -> list[str]:
    """Lines as the log holds them: split on newline only, and a final newline ends a line."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return parts


def select_lines(lines: list[str], sel: Selection, *, default_tail: int = DEFAULT_TAIL,
                 line_offset: int = 0) -> Selected:
    """Apply `sel` to the lines of one stream.

    `line_offset` is the number of lines of the stream that precede `lines` and that the
    caller did not load (a fast read of the end of a large file). It is only meaningful for a
    tail selection without --grep: those lines count as hidden and the numbering continues
    after them.
    """
    if line_offset and (sel.grep is not None or sel.head is not None or sel.lines is not None
                        or sel.all):
        raise ValueError("line_offset is only valid for a tail selection without --grep")
    total = line_offset + len(lines)
    test = sel.matcher()

    matches: int | None = None
    shown_matches = 0
    kept_hit_set: set[int] = set()
    if sel.grep is not None:
        hits = [i for i, line in enumerate(lines) if test(line)]
        matches = len(hits)
        if sel.all:
            limit = len(hits)
        elif sel.max_matches is not None:
            limit = sel.max_matches
        else:
            limit = DEFAULT_MAX_MATCHES
        kept_hits = hits[:limit]
        kept_hit_set = set(kept_hits)
        wanted: set[int] = set()
        for i in kept_hits:
            wanted.update(range(max(0, i - sel.context), min(len(lines), i + sel.context + 1)))
        candidates = sorted(wanted)
    else:
        candidates = list(range(len(lines)))

    hidden_where = ""
    if sel.lines is not None:
        start, end = sel.lines
        picked = [i for i in candidates if start - 1 <= i <= end - 1]
        hidden = len(candidates) - len(picked)
        hidden_where = "around"
    elif sel.head is not None:
        picked = candidates[: sel.head]
        hidden = len(candidates) - len(picked)
        hidden_where = "after"
    elif sel.all:
        picked = candidates
        hidden = 0
    else:
        count = sel.tail if sel.tail is not None else default_tail
        cut = max(0, len(candidates) - count)
        picked = candidates[cut:] if count else []
        hidden = len(candidates) - len(picked) + line_offset
        hidden_where = "before"
    if sel.grep is not None:
        # Count the matches that survived the range, not the context lines around them.
        shown_matches = sum(1 for i in picked if i in kept_hit_set)

    out: list[str] = []
    previous: int | None = None
    marks = sel.grep is not None and sel.context > 0
    for i in picked:
        if marks and previous is not None and i > previous + 1:
            out.append(GAP_MARK)
        number = line_offset + i + 1
        out.append(f"{number:>6}  {lines[i]}" if sel.number else lines[i])
        previous = i
    if hidden == 0:
        hidden_where = ""
    return Selected(lines=out, total=total, hidden=hidden, hidden_where=hidden_where,
                    matches=matches, matches_shown=shown_matches)


class StreamFilter:
    """`--follow --grep PATTERN -C N`: filter lines as they arrive, with context on both sides.

    Lines before a match come from a small ring; lines after it are counted down. A gap mark
    separates two shown lines that were not neighbours, as in a whole-file selection.
    """

    def __init__(self, sel: Selection, *, first_number: int = 1) -> None:
        from collections import deque

        self._sel = sel
        self._test = sel.matcher()
        self._before: deque[tuple[int, str]] = deque(maxlen=sel.context)
        self._after_left = 0
        self._next_number = first_number
        self._last_shown: int | None = None

    def feed(self, line: str) -> list[str]:
        """The output lines (numbered when asked, with gap marks) that this new line releases."""
        number = self._next_number
        self._next_number += 1
        if self._sel.grep is None:
            return self._emit([(number, line)])
        if self._test(line):
            pending = [*self._before, (number, line)]
            self._before.clear()
            self._after_left = self._sel.context
            return self._emit(pending)
        if self._after_left > 0:
            self._after_left -= 1
            return self._emit([(number, line)])
        self._before.append((number, line))
        return []

    def _emit(self, items: list[tuple[int, str]]) -> list[str]:
        out: list[str] = []
        for number, line in items:
            if self._sel.context > 0 and self._last_shown is not None \
                    and number > self._last_shown + 1:
                out.append(GAP_MARK)
            out.append(f"{number:>6}  {line}" if self._sel.number else line)
            self._last_shown = number
        return out
