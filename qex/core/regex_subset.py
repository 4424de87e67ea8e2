"""Whether `re.search(pattern, line)` finds a match, without the `re` module, for the
patterns with classes, repeats and groups that people grep logs with: `err[0-9]+`,
`\\d+ failed`, `^[A-Z]+:`, `time ?out`, `\\d{4}-\\d{2}`, `warn(ing)?:`, `(error|fail)ed`.

Why: `qex logs --grep` with such a pattern paid for importing `re` (with `enum` and
`functools`), about half of a bare interpreter's start, to search a log of a few hundred
lines. `qex.core.grep_pattern` already reads text, `.` and `.*` without it; this module
reads the next layer and declines (returns None) anything else, which `re` then reads as
before, error messages included.

What it reads, in top-level branches joined by `|`:
- atoms: a character that is not special, `.`, an escaped punctuation character (`\\.`),
  `\\d \\D \\w \\W \\s \\S`, and a class `[...]` of characters, ranges and those escapes,
  perhaps negated;
- groups, `(...)` or `(?:...)`, of atoms and groups, with alternatives joined by `|`;
- after an atom or a group, one of `*`, `+`, `?` or a count `{m}`, `{m,}`, `{m,n}` (greedy;
  a lazy or possessive form is declined);
- `^` at the start of a top-level branch and `$` at its end.

With `fold` it reads an ASCII pattern as `re` reads it after `(?i)`, for lines that the
caller has lowered and that are ASCII: there, a character matches where its lower case
does (`re`'s own rule), so a literal is lowered once, and a class matches a lowered
character when it holds that character or its upper case. A line with other characters is
the caller's to give to `re`, whose Unicode tables fold some of them onto ASCII letters (the
Kelvin sign onto `k`).

Only whether a match exists is asked, and for that neither a repeat's greed nor what a group
captures matters, so the pattern is run as a set of states over the line (Thompson's
construction): one pass per line, and no backtracking that could take exponential time. The
classes use the same character tests as `re` does for `str` patterns without flags
(`str.isdecimal`, `str.isalnum` or `_`, `str.isspace`). `tests/unit/test_regex_subset.py`
holds every answer to `re`'s.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    CharTest = Callable[[str], bool]
    #: What a pattern is read into: an atom, a repeat, alternatives, or a sequence (a list).
    Part: TypeAlias = "_Atom | _Repeat | _Either | list[Part]"

#: Repeats: (fewest, most); None is "no limit".
_REPEATS = {"*": (0, None), "+": (1, None), "?": (0, 1)}
#: The largest count of a counted repeat read here (`\d{4}`): each is as many states.
MAX_COUNT = 32
#: The most states of one branch: each character costs a test per live state, and a count
#: of a count (`(a{32}){32}`) is better left to `re`.
MAX_STATES = 400
#: What an escape outside a class may name literally: ASCII punctuation, which `re` takes as
#: the character itself. Letters and digits mean other things (or are errors) there.
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ")
#: Characters that end or change an atom; outside a class, a plain atom is none of these.
_SPECIAL = frozenset(".^$*+?{}[]\\|()")
#: Pairs that `re` warns of inside a class (a future set operation), and the start of a
#: nested set: declined, so that `re` says what it says about them.
_CLASS_WARNINGS = ("--", "&&", "~~", "||", "[")


def _digit(char: str) -> bool:
    return char.isdecimal()


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _space(char: str) -> bool:
    return char.isspace()


#: The escapes of a category, with the test `re` uses for each and whether it is negated.
_CATEGORIES: dict[str, tuple[CharTest, bool]] = {
    "d": (_digit, False), "D": (_digit, True),
    "w": (_word, False), "W": (_word, True),
    "s": (_space, False), "S": (_space, True),
}


class _Declined(Exception):
    """The pattern holds something this module does not read; `re` reads it."""


class _Atom:
    """One character test."""

    __slots__ = ("literal", "test")

    def __init__(self, test: CharTest, literal: str | None) -> None:
        self.test = test
        #: The character itself, for an atom that matches only that one.
        self.literal = literal


class _Repeat:
    """A part read `least` to `most` times (None: no limit)."""

    __slots__ = ("least", "most", "part")

    def __init__(self, part: Part, least: int, most: int | None) -> None:
        self.part = part
        self.least = least
        self.most = most


class _Either:
    """Alternatives: `a|b` inside a group."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Part]) -> None:
        self.parts = parts


class _Machine:
    """The states of one branch: a state reads one character (its test, and the state it
    leads to), or reads none (it leads on to others at once)."""

    def __init__(self) -> None:
        self.tests: list[CharTest | None] = []
        self.after: list[int] = []
        self.moves: list[list[int]] = []

    def state(self, test: CharTest | None = None) -> int:
        if len(self.tests) >= MAX_STATES:
            raise _Declined  # a count of a count: `re` reads it faster
        self.tests.append(test)
        self.after.append(-1)
        self.moves.append([])
        return len(self.tests) - 1

    def build(self, part: Part, entry: int) -> int:
        """The states of `part`, entered from the empty state `entry`; returns the empty
        state it leaves by. Each call makes new states, so a part read twice is built
        twice."""
        if isinstance(part, _Atom):
            reading = self.state(part.test)
            self.moves[entry].append(reading)
            self.after[reading] = self.state()
            return self.after[reading]
        if isinstance(part, list):
            for item in part:
                entry = self.build(item, entry)
            return entry
        if isinstance(part, _Either):
            leave = self.state()
            for choice in part.parts:
                self.moves[self.build(choice, entry)].append(leave)
            return leave
        for _ in range(part.least):
            entry = self.build(part.part, entry)
        leave = self.state()
        if part.most is None:
            loop = self.state()
            self.moves[entry].append(loop)
            self.moves[self.build(part.part, loop)].append(loop)
            self.moves[loop].append(leave)
            return leave
        for _ in range(part.most - part.least):
            self.moves[entry].append(leave)
            entry = self.build(part.part, entry)
        self.moves[entry].append(leave)
        return leave

    def reach(self, state: int) -> frozenset[int]:
        """The states that read a character, and the empty states without moves (the end),
        reached from `state` without reading one."""
        found: set[int] = set()
        seen = {state}
        todo = [state]
        while todo:
            here = todo.pop()
            if self.tests[here] is not None or not self.moves[here]:
                found.add(here)
            for there in self.moves[here]:
                if there not in seen:
                    seen.add(there)
                    todo.append(there)
        return frozenset(found)


class _Branch:
    """One top-level branch as a set of states, ready to be run over lines."""

    def __init__(self, parts: list[Part], first: bool, last: bool) -> None:
        self.first = first
        self.last = last
        machine = _Machine()
        entry = machine.state()
        self.final = machine.build(parts, entry)
        #: The states where a match may stand before its first character.
        self.start = machine.reach(entry)
        #: Per state: its test and the states after it reads a character; None for a
        #: state that reads none.
        self.steps: list[tuple[CharTest, frozenset[int]] | None] = [
            None if test is None else (test, machine.reach(machine.after[state]))
            for state, test in enumerate(machine.tests)]
        #: The longest run of single characters that every match holds: a line without it
        #: is answered by `str.__contains__`, in C.
        self.needed = _longest_needed(parts)
        #: The character every match begins with, when the branch begins with one character
        #: that must match: `str.find` skips to it while no match has begun.
        head = parts[0] if parts else None
        if isinstance(head, _Repeat) and head.least:
            head = head.part
        self.jump = (head.literal or "") if isinstance(head, _Atom) and not first else ""

    def search(self, line: str) -> bool:
        """Whether the branch matches in `line` (which holds `needed`, if any)."""
        final = self.final
        steps = self.steps
        start = self.start
        states: frozenset[int] | set[int] = start
        size = len(line)
        # Where `$` may match: the end, and the place before a final newline.
        ends = (size, size - 1) if line.endswith("\n") else (size,)
        if final in states and (not self.last or 0 in ends):
            return True
        jump = self.jump
        place = 0
        while place < size:
            if states is start and jump:
                # Nothing begun: the next match can only begin at the next `jump`.
                place = line.find(jump, place)
                if place < 0:
                    return False
            char = line[place]
            place += 1
            moved: set[int] = set()
            for state in states:
                step = steps[state]
                if step is not None and step[0](char):
                    moved |= step[1]
            if self.first:
                if not moved:
                    return False
                states = moved
            elif moved <= start:
                states = start
            else:
                states = moved | start
            if final in states and (not self.last or place in ends):
                return True
        return False


def _longest_needed(parts: list[Part]) -> str:
    best = ""
    run: list[str] = []
    for part in [*parts, None]:
        if isinstance(part, _Atom) and part.literal is not None:
            run.append(part.literal)
            continue
        if (isinstance(part, _Repeat) and part.least and isinstance(part.part, _Atom)
                and part.part.literal is not None):
            run.append(part.part.literal)  # `x+` holds one x at least, and ends the run
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return best


class Search:
    """The test of one line: `search(line)` is `re.search(pattern, line) is not None`.

    `scanned` counts the characters run through the states, the part that costs Python
    time per character; a caller with a long log hands the rest to `re` once that passes
    what importing `re` would have cost."""

    def __init__(self, branches: list[_Branch]) -> None:
        self.branches = branches
        self.scanned = 0

    def __call__(self, line: str) -> bool:
        for branch in self.branches:
            if branch.needed and branch.needed not in line:
                continue
            self.scanned += len(line)
            if branch.search(line):
                return True
        return False


def compile_search(pattern: str, fold: bool = False) -> Search | None:
    """The test of one line for `pattern`, or None when only `re` can read it. `fold`: the
    pattern as under `(?i)`, for lowered ASCII lines (see the module's docstring)."""
    if fold and not pattern.isascii():
        return None
    try:
        return Search([_parse_branch(text, fold) for text in _split_branches(pattern)])
    except _Declined:
        return None


def _split_branches(pattern: str) -> list[str]:
    """The top-level branches: `|` inside a class or a group, or after a backslash, is not
    a split."""
    branches: list[str] = []
    start = 0
    index = 0
    depth = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("]", index + 1) or pattern.startswith("^]", index + 1):
                raise _Declined  # `]` first in a class is a member: `re`'s reading
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:index])
            start = index + 1
        index += 1
    branches.append(pattern[start:])
    return branches


def _parse_branch(text: str, fold: bool) -> _Branch:
    first = text.startswith("^")
    reader = _Reader(text, 1 if first else 0, fold)
    parts = reader.sequence(0)
    if reader.index != len(text):
        raise _Declined  # a `)` without its `(`: an error that `re` words
    return _Branch(parts, first, reader.last)


class _Reader:
    """Reads one top-level branch into parts, from `index` on."""

    def __init__(self, text: str, index: int, fold: bool) -> None:
        self.text = text
        self.index = index
        self.fold = fold
        #: Whether the branch ends in `$`.
        self.last = False

    def either(self, depth: int) -> Part:
        """Alternatives inside a group, up to its `)`."""
        choices: list[Part] = [self.sequence(depth)]
        while self.text.startswith("|", self.index):
            self.index += 1
            choices.append(self.sequence(depth))
        return choices[0] if len(choices) == 1 else _Either(choices)

    def sequence(self, depth: int) -> list[Part]:
        parts: list[Part] = []
        text = self.text
        while self.index < len(text) and text[self.index] not in "|)":
            if text[self.index] == "$":
                if depth or self.index != len(text) - 1:
                    raise _Declined  # `$` anywhere but at the end of a top-level branch
                self.last = True
                self.index += 1
                break
            part = self.item(depth)
            if self._at_repeat():
                part = self.repeat(part)
                if self._at_repeat():
                    # A repeat after a repeat: an error, or a lazy (`*?`) or possessive
                    # (`*+`) form.
                    raise _Declined
            parts.append(part)
        return parts

    def _at_repeat(self) -> bool:
        """Whether a repeat (`*`, `+`, `?` or a count) comes next."""
        return self.text[self.index:self.index + 1] in (*_REPEATS, "{")

    def repeat(self, part: Part) -> _Repeat:
        text = self.text
        char = text[self.index]
        if char == "{":
            least, most, self.index = _count(text, self.index + 1)
            return _Repeat(part, least, most)
        self.index += 1
        least, most = _REPEATS[char]
        return _Repeat(part, least, most)

    def item(self, depth: int) -> Part:
        text = self.text
        char = text[self.index]
        if char == "(":
            if text.startswith("?", self.index + 1):
                if not text.startswith("?:", self.index + 1):
                    raise _Declined  # flags, look-arounds, named groups: `re`'s
                self.index += 2
            self.index += 1
            inner = self.either(depth + 1)
            if not text.startswith(")", self.index):
                raise _Declined  # a `(` without its `)`: an error that `re` words
            self.index += 1
            return [inner]
        if char == "[":
            atom, self.index = _parse_class(text, self.index + 1, self.fold)
            return atom
        if char == "\\":
            self.index += 2
            return _escape(text[self.index - 1:self.index])
        if char == ".":
            self.index += 1
            return _Atom(lambda c: c != "\n", None)
        if char in _SPECIAL:
            raise _Declined  # `^` past the start, a repeat of nothing, a stray brace
        self.index += 1
        return _literal(char.lower() if self.fold else char)


def _count(text: str, index: int) -> tuple[int, int | None, int]:
    """The counted repeat `{m}`, `{m,}` or `{m,n}` whose `{` is at `index - 1`: (fewest,
    most or None, the index after its `}`). Anything else after a `{` is declined: `re`
    reads some of it as text and some as errors."""
    close = text.find("}", index)
    if close < 0:
        raise _Declined
    low, comma, high = text[index:close].partition(",")
    if not low.isascii() or not low.isdigit() or (high and not (high.isascii()
                                                                and high.isdigit())):
        raise _Declined
    least = int(low)
    most = (int(high) if high else None) if comma else least
    if least > MAX_COUNT or (most is not None and not least <= most <= MAX_COUNT):
        raise _Declined  # `re` refuses a minimum over the maximum; a long count is its own
    return least, most, close + 1


def _literal(char: str) -> _Atom:
    return _Atom(char.__eq__, char)


def _escape(char: str) -> _Atom:
    if char in _CATEGORIES:
        test, negated = _CATEGORIES[char]
        return _Atom((lambda c: not test(c)) if negated else test, None)
    if char and char in _PUNCTUATION:
        return _literal(char)
    raise _Declined  # `\n`, `\b`, a back-reference, an unknown escape: `re`'s


def _parse_class(text: str, index: int, fold: bool) -> tuple[_Atom, int]:
    """The class that starts after the `[` at `index - 1`, and the index after its `]`.
    `fold`: for lowered characters, each also tried in upper case before a negation."""
    end = index
    while end < len(text) and text[end] != "]":
        end += 2 if text[end] == "\\" else 1
    if end >= len(text):
        raise _Declined  # no closing bracket: an error that `re` words
    body = text[index:end]
    negated = body.startswith("^")
    if negated:
        body = body[1:]
    if not body or any(pair in body for pair in _CLASS_WARNINGS):
        raise _Declined
    members: set[str] = set()
    ranges: list[tuple[str, str]] = []
    tests: list[CharTest] = []
    items = _class_items(body)
    dash = ("-", None, False)
    position = 0
    while position < len(items):
        char, category, _escaped = items[position]
        if (position + 2 < len(items) and items[position + 1] == dash
                and category is None and items[position + 2][1] is None):
            high = items[position + 2][0]
            if char > high:
                raise _Declined  # a bad range: `re` says so
            ranges.append((char, high))
            position += 3
            continue
        if items[position] == dash and 0 < position < len(items) - 1:
            raise _Declined  # a dash that is neither a range's nor at an end
        if category is not None:
            tests.append(category)
        else:
            members.add(char)
        position += 1
    frozen = frozenset(members)

    def holds(char: str) -> bool:
        return (char in frozen or any(low <= char <= high for low, high in ranges)
                or any(category(char) for category in tests))

    def test(char: str) -> bool:
        return holds(char) is not negated

    def folded(char: str) -> bool:
        return (holds(char) or holds(char.upper())) is not negated

    only = next(iter(frozen)) if len(frozen) == 1 and not ranges and not tests else None
    if fold and only is not None:
        only = only.lower()
    return _Atom(folded if fold else test, None if negated else only), end + 1


def _class_items(body: str) -> list[tuple[str, CharTest | None, bool]]:
    """The members of a class body in order: (character, None, escaped), or ("", test, True)
    for a category escape. An escaped character is a member as itself, never a range's
    dash."""
    items: list[tuple[str, CharTest | None, bool]] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            atom = _escape(body[index + 1:index + 2])
            items.append((atom.literal, None, True) if atom.literal is not None
                         else ("", atom.test, True))
            index += 2
        else:
            items.append((char, None, False))
            index += 1
    return items
