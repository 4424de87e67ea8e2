"""`re.search(pattern, line) is not None` without the `re` module, for the patterns people
grep logs with most: text in branches (`error|warning`), anchors (`^ERROR`, `done$`), `.` for
any one character and `.*` for any run (`^FAIL.*timeout`).

Why: importing `re` (with `enum` and `functools`) costs a `qex logs --grep` about half of a
bare interpreter's start, and these patterns need none of it. A pattern with a class, a group, an
escape or a repeat other than `.*` goes to `qex.core.regex_subset`, which reads the common
ones; the rest (flags, look-arounds, back-references, lazy forms) is left to `re`:
`simple_test` returns None. Text is found by `str` methods as fast as `re` finds it; a
pattern with `.` is matched in Python only for the first `RE_AFTER_LINES` lines (one with a
class, for the first `RE_AFTER_CHARS` characters), and by `re` after them, so a long log is
not searched much more slowly than before.

A pattern that begins with `(?i)` is read the same way, lowered, for lines that are ASCII,
lowered too; the first line with other characters hands the search to `re`.

The semantics are `re.search`'s without flags: `.` matches any character but a newline,
`^` only the start of the line and `$` its end or the place before a final newline. Since
neither `.` nor `.*` crosses a newline, a branch with them matches inside one newline-free
stretch of the line, where the earliest place for each piece leaves the most room for the
rest. `tests/unit/test_logsel.py` holds all of this to `re` with random patterns and lines.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    #: The test of a line, and the budget that says whether Python may take the next line
    #: before `re` takes over (None: no budget, for text, which `str` finds as fast as `re`).
    Read: TypeAlias = "tuple[Callable[[str], bool], Callable[[str], bool] | None]"

#: The characters that mean more than themselves in a regular expression. A `--grep` pattern
#: without any of them is searched as text, which finds the same lines without `re`.
REGEX_CHARS = frozenset(".^$*+?{}[]\\|()")
#: `.` and `.*`, which a branch may hold besides text.
ANY = "."
ANY_RUN = ".*"
#: Lines that a pattern with `.` is matched on in Python before `re` takes over. Such a line
#: costs about 1.5 µs here against 0.1–0.25 µs with `re`, whose import costs about 4 ms: past
#: a few thousand lines the import pays for itself, and a long log is searched at `re`'s pace.
RE_AFTER_LINES = 2000
#: Characters that a pattern with a class or a repeat (`qex.core.regex_subset`) runs through
#: its states before `re` takes over: 0.2-0.6 µs each against a few ns with `re`, so a
#: long log loses at most about 1.3 ms where a short one saves the import of `re` (4-5 ms).
#: Lines without the text that every match holds are not run through the states.
RE_AFTER_CHARS = 2_500
#: The one flag read without `re`: case is ignored (`(?i)error`), for a pattern of ASCII.
IGNORE_CASE = "(?i)"


def simple_test(pattern: str) -> Callable[[str], bool] | None:
    """The test of one line for `pattern`, or None when only `re` can read it."""
    folded = pattern.startswith(IGNORE_CASE)
    body = pattern[len(IGNORE_CASE):] if folded else pattern
    if folded and not body.isascii():
        return None  # letters beyond ASCII fold by Unicode's tables, which `re` holds
    read = _dotted_test(body.lower() if folded else body) or _subset_test(body, folded)
    if read is None:
        return None
    test, affordable = _for_lowered_ascii(*read) if folded else read
    return test if affordable is None else _then_re(test, pattern, affordable)


def _subset_test(body: str, folded: bool) -> Read | None:
    """Classes, escapes, repeats and groups (`qex.core.regex_subset`), with the budget of
    characters; a line longer than what is left of it is `re`'s at once."""
    from qex.core.regex_subset import compile_search

    search = compile_search(body, fold=folded)
    if search is None:
        return None

    def affordable(line: str) -> bool:
        return search.scanned + len(line) <= RE_AFTER_CHARS

    return search, affordable


def _for_lowered_ascii(test: Callable[[str], bool],
                       affordable: Callable[[str], bool] | None) -> Read:
    """A test read from a lowered `(?i)` pattern, for lines as they come: each ASCII line is
    lowered first, and any other line, with the rest after it, is `re`'s (see
    `qex.core.regex_subset`)."""
    def lowered(line: str) -> bool:
        return test(line.lower())

    def ascii_within(line: str) -> bool:
        return line.isascii() and (affordable is None or affordable(line))

    return lowered, ascii_within


def _dotted_test(pattern: str) -> Read | None:
    """Text, `.` and `.*` in anchored branches, as the test of a line and the budget that
    hands the rest to `re` (None: text, which needs none); None for anything more."""
    tests: list[Callable[[str], bool]] = []
    for branch in pattern.split("|"):
        first = branch.startswith("^")
        last = branch.endswith("$") and len(branch) > first
        body = branch[first:len(branch) - last]
        test = _text_test(body, first, last) if ANY not in body else _wild_test(body, first, last)
        if test is None:
            return None
        tests.append(test)
    whole = tests[0] if len(tests) == 1 else (lambda line: any(test(line) for test in tests))
    if ANY not in pattern:
        return whole, None  # text is found by `str` methods in C, as fast as `re` finds it
    lines = iter(range(RE_AFTER_LINES))
    return whole, lambda _line: next(lines, None) is not None


def _then_re(test: Callable[[str], bool], pattern: str,
             affordable: Callable[[str], bool]) -> Callable[[str], bool]:
    """`test` for as long as `affordable(line)` says that Python may take the next line,
    then `re` for that line and the rest (the same answers)."""
    compiled: Callable[[str], object] | None = None

    def switching(line: str) -> bool:
        nonlocal compiled
        if compiled is None:
            if affordable(line):
                return test(line)
            import re

            compiled = re.compile(pattern).search
        return compiled(line) is not None

    return switching


def _text_test(text: str, first: bool, last: bool) -> Callable[[str], bool] | None:
    if REGEX_CHARS.intersection(text):
        return None
    ended = text + "\n"
    if first and last:
        return lambda line: line in (text, ended)
    if first:
        return lambda line: line.startswith(text)
    if last:
        return lambda line: line.endswith(text) or line.endswith(ended)
    return lambda line: text in line


class _Piece:
    """Text and single `.`s, matched at one place; between two pieces a branch has `.*`."""

    def __init__(self, text: str) -> None:
        self.size = len(text)
        #: (offset, text) of each run of plain characters, longest first: the longest is the
        #: one `str.find` looks for, the rest are checked where it is found.
        self.runs = sorted(_runs(text), key=lambda item: -len(item[1]))

    def at(self, stretch: str, place: int) -> bool:
        return (place + self.size <= len(stretch)
                and all(stretch.startswith(run, place + at) for at, run in self.runs))

    def find(self, stretch: str, start: int) -> int:
        """The first place at or after `start` where the piece matches; -1 if none."""
        if not self.runs:
            return start if start + self.size <= len(stretch) else -1
        at, run = self.runs[0]
        found = stretch.find(run, start + at)
        while found != -1:
            place = found - at
            if place + self.size > len(stretch):
                return -1
            if self.at(stretch, place):
                return place
            found = stretch.find(run, found + 1)
        return -1


def _runs(text: str) -> list[tuple[int, str]]:
    runs: list[tuple[int, str]] = []
    start = 0
    for part in text.split(ANY):
        if part:
            runs.append((start, part))
        start += len(part) + 1
    return runs


def _wild_test(body: str, first: bool, last: bool) -> Callable[[str], bool] | None:
    texts = body.split(ANY_RUN)
    if any("\n" in text or REGEX_CHARS.intersection(text.replace(ANY, "")) for text in texts):
        return None  # a newline in the pattern could join stretches; anything else is `re`'s
    pieces = [_Piece(text) for text in texts]

    def test(line: str) -> bool:
        stretches = line.split("\n")
        if first:
            # With `$` too, the first stretch must also be the last, or the one before a
            # final newline.
            if last and len(stretches) - line.endswith("\n") > 1:
                return False
            chosen = stretches[:1]
        elif last:
            # `$`: the end of the line, or the place before a final newline.
            chosen = stretches[-2:] if line.endswith("\n") else stretches[-1:]
        else:
            chosen = stretches
        return any(_matches(stretch, pieces, first, last) for stretch in chosen)

    return test


def _matches(stretch: str, pieces: list[_Piece], first: bool, last: bool) -> bool:
    """Whether the pieces, joined by `.*`, match in a stretch free of newlines."""
    start = 0
    final = len(pieces) - 1
    for index, piece in enumerate(pieces):
        if index == final and last:
            place = len(stretch) - piece.size
            if first and index == 0 and place != 0:
                return False
            return place >= start and piece.at(stretch, place)
        if index == 0 and first:
            if not piece.at(stretch, 0):
                return False
            place = 0
        else:
            place = piece.find(stretch, start)
            if place < 0:
                return False
        start = place + piece.size
    return True
