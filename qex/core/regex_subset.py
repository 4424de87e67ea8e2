"""Whether `re.search(pattern, line)` finds a match, without the `re` module, for the
patterns with classes and repeats that people grep logs with: `err[0-9]+`, `\\d+ failed`,
`^[A-Z]+:`, `time ?out`, `\\d{4}-\\d{2}`.

Why: `qex logs --grep` with such a pattern paid for importing `re` (with `enum` and
`functools`), about half of a bare interpreter's start, to search a log of a few hundred
lines. `qex.core.grep_pattern` already reads text, `.` and `.*` without it; this module
reads the next layer and declines (returns None) anything else, which `re` then reads as
before, error messages included.

What it reads, in top-level branches joined by `|`:
- atoms: a character that is not special, `.`, an escaped punctuation character (`\\.`),
  `\\d \\D \\w \\W \\s \\S`, and a class `[...]` of characters, ranges and those escapes,
  perhaps negated;
- after an atom, one of `*`, `+`, `?` or a count `{m}`, `{m,}`, `{m,n}` (greedy; a lazy or
  possessive form is declined);
- `^` at the start of a branch and `$` at its end.

Only whether a match exists is asked, and for that a repeat's greed does not matter, so
the pattern is run as a set of states over the line (Thompson's construction): one pass
per line, and no backtracking that could take exponential time. The classes use the same
character tests as `re` does for `str` patterns without flags (`str.isdecimal`,
`str.isalnum` or `_`, `str.isspace`). `tests/unit/test_regex_subset.py` holds every answer
to `re`'s.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    CharTest = Callable[[str], bool]

#: Repeats: (fewest, most); None is "no limit".
_REPEATS = {"*": (0, None), "+": (1, None), "?": (0, 1)}
#: The largest count of a counted repeat read here (`\d{4}`): each is as many states.
MAX_COUNT = 32
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
    """One character test with its repeat."""

    __slots__ = ("least", "literal", "most", "test")

    def __init__(self, test: CharTest, literal: str | None) -> None:
        self.test = test
        #: The character itself, for an atom that matches only that one.
        self.literal = literal
        self.least = 1
        self.most: int | None = 1

    def copy(self, least: int = 1, most: int | None = 1) -> _Atom:
        """The same test with another repeat."""
        atom = _Atom(self.test, self.literal)
        atom.least, atom.most = least, most
        return atom


class _Branch:
    """One top-level branch as a list of atoms, ready to be run over lines."""

    def __init__(self, atoms: list[_Atom], first: bool, last: bool) -> None:
        self.atoms = atoms
        self.first = first
        self.last = last
        size = len(atoms)
        # The states reached from each state without reading a character: past every atom
        # that may match nothing.
        self.closure: list[frozenset[int]] = []
        for state in range(size + 1):
            reached = {state}
            while state < size and atoms[state].least == 0:
                state += 1
                reached.add(state)
            self.closure.append(frozenset(reached))
        #: The longest run of single characters that every match holds: a line without it
        #: is answered by `str.__contains__`, in C.
        self.needed = _longest_needed(atoms)
        #: Per state: the atom's test, the states after it matches, and whether it may
        #: match again; None for the state past the last atom.
        self.steps: list[tuple[CharTest, frozenset[int], bool] | None] = [
            (atom.test, self.closure[state + 1], atom.most is None)
            for state, atom in enumerate(atoms)] + [None]
        #: The character every match begins with, when the first atom is one character that
        #: must match: `str.find` skips to it while no match has begun.
        self.jump = (atoms[0].literal or "") if atoms and atoms[0].least and not first else ""

    def search(self, line: str) -> bool:
        """Whether the branch matches in `line` (which holds `needed`, if any)."""
        final = len(self.atoms)
        steps = self.steps
        start = self.closure[0]
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
                    if step[2]:
                        moved.add(state)
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


def _longest_needed(atoms: list[_Atom]) -> str:
    best = ""
    run: list[str] = []
    for atom in [*atoms, None]:
        if atom is not None and atom.literal is not None and atom.least == atom.most == 1:
            run.append(atom.literal)
            continue
        if atom is not None and atom.literal is not None and atom.least == 1:
            run.append(atom.literal)  # `x+` holds one x at least, and ends the run
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


def compile_search(pattern: str) -> Search | None:
    """The test of one line for `pattern`, or None when only `re` can read it."""
    try:
        return Search([_parse_branch(text) for text in _split_branches(pattern)])
    except _Declined:
        return None


def _split_branches(pattern: str) -> list[str]:
    """The top-level branches: `|` inside a class or after a backslash is not a split."""
    branches: list[str] = []
    start = 0
    index = 0
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
        elif char == "|":
            branches.append(pattern[start:index])
            start = index + 1
        index += 1
    branches.append(pattern[start:])
    return branches


def _parse_branch(text: str) -> _Branch:
    first = text.startswith("^")
    index = 1 if first else 0
    last = False
    repeated = False  # the last thing read was a repeat
    atoms: list[_Atom] = []
    while index < len(text):
        char = text[index]
        if char == "$":
            if index != len(text) - 1:
                raise _Declined
            last = True
            index += 1
        elif char in _REPEATS or char == "{":
            if not atoms or repeated:
                # Nothing to repeat, or a repeat after a repeat: an error, or a lazy (`*?`)
                # or possessive (`*+`) form.
                raise _Declined
            if char == "{":
                least, most, index = _count(text, index + 1)
                atoms.extend(_copies(atoms.pop(), least, most))
            else:
                atoms[-1].least, atoms[-1].most = _REPEATS[char]
                index += 1
            repeated = True
            continue
        elif char == "[":
            atom, index = _parse_class(text, index + 1)
            atoms.append(atom)
        elif char == "\\":
            atoms.append(_escape(text[index + 1:index + 2]))
            index += 2
        elif char == ".":
            atoms.append(_Atom(lambda c: c != "\n", None))
            index += 1
        elif char in _SPECIAL:
            raise _Declined  # `^` past the start, groups, a brace without its count
        else:
            atoms.append(_literal(char))
            index += 1
        repeated = False
    return _Branch(atoms, first, last)


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


def _copies(atom: _Atom, least: int, most: int | None) -> list[_Atom]:
    """`atom{least,most}` as atoms with one-character repeats: `least` plain copies, then
    one `*` copy (no maximum) or `most - least` `?` copies."""
    copies = [atom.copy() for _ in range(least)]
    if most is None:
        copies.append(atom.copy(0, None))
    else:
        copies.extend(atom.copy(0, 1) for _ in range(most - least))
    return copies


def _literal(char: str) -> _Atom:
    return _Atom(char.__eq__, char)


def _escape(char: str) -> _Atom:
    if char in _CATEGORIES:
        test, negated = _CATEGORIES[char]
        return _Atom((lambda c: not test(c)) if negated else test, None)
    if char and char in _PUNCTUATION:
        return _literal(char)
    raise _Declined  # `\n`, `\b`, a back-reference, an unknown escape: `re`'s


def _parse_class(text: str, index: int) -> tuple[_Atom, int]:
    """The class that starts after the `[` at `index - 1`, and the index after its `]`."""
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

    def test(char: str) -> bool:
        found = (char in frozen or any(low <= char <= high for low, high in ranges)
                 or any(category(char) for category in tests))
        return found is not negated

    only = next(iter(frozen)) if len(frozen) == 1 and not ranges and not tests else None
    return _Atom(test, None if negated else only), end + 1


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
