"""`qex.core.regex_subset` gives `re.search`'s answer for every pattern it reads, and leaves
to `re` every pattern that it does not (so `re` words the errors and the warnings)."""

from __future__ import annotations

import re
import sys
import warnings

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qex.core import regex_subset
from qex.core.regex_subset import compile_search

#: Pieces of patterns: atoms of every kind the module reads, repeats, anchors, branches, and
#: pieces that it must leave to `re` (groups, braces, `\b`, a stray bracket or backslash).
_TOKENS = st.sampled_from([
    "a", "b", "1", " ", "-", "_", "é", "\n", ".", "\\.", "\\-", "\\\\", "\\|", "\\[",
    "\\d", "\\D", "\\w", "\\W", "\\s", "\\S",
    "[ab]", "[^a]", "[a-c]", "[^\\d]", "[\\s-]", "[-a]", "[a\\-c]", "[\\w.]", "[0-9]+",
    "[]a]", "[a-]", "[c-a]", "[a-c-e]", "[\\d-z]", "[^]", "[", "]",
    "*", "+", "?", "*?", "+?", "??", "*+", "{2}", "{0,2}", "{1,}", "{,2}", "{3,1}", "{x}",
    "{40}", "{2}?",
    "^", "$", "|", "{", "}", "{2}", "(", ")", "\\b", "\\n", "\\1",
    "(a|b)", "(ab)", "(a|)", "()", "(?:", "(?=", "(?P<n>", "(b", "a)", "(^a)", "(a$)",
])
_PATTERNS = st.lists(_TOKENS, max_size=7).map("".join)
#: Lines: the characters the pattern pieces name, digits and spaces of other scripts, and
#: half of the lines ending in a newline (where `$` has two places to match).
#: Runs of one character (`aaab`) too, where a count one too high or too low shows.
_TEXTS = st.one_of(
    st.text(alphabet="ab1c -_é\n.\\|[]\t٣x", max_size=8),
    st.lists(st.tuples(st.sampled_from("ab1 "), st.integers(0, 5)), max_size=3).map(
        lambda runs: "".join(char * times for char, times in runs)))
_LINES = st.lists(st.tuples(_TEXTS, st.booleans()).map(
    lambda drawn: drawn[0] + "\n" * drawn[1]), min_size=1, max_size=6)


@settings(max_examples=1500)
@given(_PATTERNS, _LINES)
@example("a$", ["a\n"]).via("`$` before a final newline")
@example("a$", ["a\n\n"]).via("not before two newlines")
@example("^$", ["\n"]).via("both anchors on an empty stretch")
@example("[^a]", ["\n"]).via("a negated class takes a newline")
@example("\\d+", ["x٣"]).via("a digit of another script")
@example("a|", ["b"]).via("an empty branch matches anywhere")
def test_every_pattern_read_gives_re_searchs_answer(pattern: str, lines: list[str]) -> None:
    search = compile_search(pattern)
    if search is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a pattern read here is one `re` reads in silence
        compiled = re.compile(pattern)
    for line in lines:
        assert search(line) == (compiled.search(line) is not None), (pattern, line)


_ATOMS = st.sampled_from(["a", "b", ".", "\\d", "\\W", "[ab]", "[^b\\s]", "[a-c1]", "\\.",
                          "é", "\n", "(a|b)", "(ab|)", "(?:ba)", "(a(b|1)*)"])
_REPEAT_FORMS = st.sampled_from(["", "", "*", "+", "?", "{2}", "{0,1}", "{1,}", "{1,3}"])


@settings(max_examples=500)
@given(st.lists(st.tuples(_ATOMS, _REPEAT_FORMS), max_size=5),
       st.booleans(), st.booleans(), _LINES)
def test_the_patterns_of_the_subset_are_read(pieces: list[tuple[str, str]], first: bool,
                                             last: bool, lines: list[str]) -> None:
    """The companion of the test above: the subset's patterns are not all declined, so the
    cases it compares are reached."""
    pattern = ("^" if first else "") + "".join(a + r for a, r in pieces) + ("$" if last else "")
    search = compile_search(pattern)
    assert search is not None, pattern
    for line in lines:
        assert search(line) == (re.search(pattern, line) is not None), (pattern, line)


@settings(max_examples=400)
@given(st.sampled_from(["a", "[ab]", "\\w", ".", "[^b]", "(a|b)", "(?:a)", "(a|)"]),
       st.integers(0, 4),
       st.one_of(st.none(), st.integers(0, 4)), st.sampled_from(["{m}", "{m,}", "{m,n}"]),
       st.sampled_from(["^", "^b", "", "b"]), st.sampled_from(["$", "b$", "", "b"]),
       st.lists(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 6)), max_size=3).map(
           lambda runs: "".join(char * times for char, times in runs)), min_size=1, max_size=4))
def test_counted_repeats_count_as_re_counts(atom: str, least: int, extra: int | None,
                                            form: str, before: str, after: str,
                                            lines: list[str]) -> None:
    """Counts beside runs of one character, where one too many or too few shows."""
    most = least + (extra or 0)
    count = form.replace("m", str(least)).replace("n", str(most))
    pattern = before + atom + count + after
    search = compile_search(pattern)
    assert search is not None, pattern
    # Every length of run from none to two past the most, in the pattern's own context.
    runs = [before.strip("^") + "a" * times + after.strip("$") for times in range(most + 3)]
    for line in lines + runs:
        assert search(line) == (re.search(pattern, line) is not None), (pattern, line)


#: Pieces with both cases, and ranges and negations whose fold `re` defines by the lowered
#: character: `[Z-a]` holds `[ \\ ] ^ _ \``, so with `(?i)` it takes `A` and `z` too.
_CASED_TOKENS = st.sampled_from([
    "a", "A", "b", "Z", "z", "1", " ", "_", "[", "\\[", ".", "\\w", "\\W", "\\D", "\\S",
    "[a-c]", "[A-C]", "[^a]", "[^A]", "[Z-a]", "[^Z-a]", "[_A]", "[A]", "[^\\WA]", "[a-Z]",
    "(a|B)", "(?:Ab)", "*", "+", "?", "{2}", "{0,2}", "^", "$", "|", "\u00e9", "(?i)",
])
_ASCII_LINES = st.lists(st.text(alphabet="aAbBcCzZ1 _[\\]^`\n", max_size=8), min_size=1,
                        max_size=6)


@settings(max_examples=1500)
@given(st.lists(_CASED_TOKENS, max_size=7).map("".join), _ASCII_LINES)
@example("[^A]", ["a"]).via("the negation comes after the fold")
@example("[Z-a]", ["A", "z", "b"]).via("a range of punctuation and letters")
@example("[A]", ["xa"]).via("a class of one upper-case letter, found by its lowered text")
def test_a_folded_pattern_gives_re_searchs_answer_on_ascii_lines(
        pattern: str, lines: list[str]) -> None:
    """With `fold`, a lowered ASCII line gets the answer that `re` gives the line itself
    under `(?i)`; a pattern beyond ASCII is declined."""
    search = compile_search(pattern, fold=True)
    if search is None:
        return
    assert pattern.isascii()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = re.compile("(?i)" + pattern)
    for line in lines:
        assert search(line.lower()) == (compiled.search(line) is not None), (pattern, line)


@settings(max_examples=400)
@given(st.lists(st.tuples(st.sampled_from(["a", "B", "[A-C]", "[^b]", "(a|B)", "\\W", "[Z-a]"]),
                          _REPEAT_FORMS), min_size=1, max_size=4), _ASCII_LINES)
def test_the_folded_patterns_of_the_subset_are_read(pieces: list[tuple[str, str]],
                                                    lines: list[str]) -> None:
    """The companion of the test above: folded subset patterns are read, not declined."""
    pattern = "".join(a + r for a, r in pieces)
    search = compile_search(pattern, fold=True)
    assert search is not None, pattern
    for line in lines:
        assert search(line.lower()) == (re.search("(?i)" + pattern, line) is not None), (
            pattern, line)


@pytest.mark.parametrize("letter", sorted(regex_subset._CATEGORIES))
def test_each_category_is_res_over_the_basic_plane(letter: str) -> None:
    """`\\d`, `\\w`, `\\s` and their negations use the character tests of `re`'s `str`
    patterns: checked for every character of the Basic Multilingual Plane."""
    chars = "".join(chr(code) for code in range(0x10000) if not 0xD800 <= code < 0xE000)
    test, negated = regex_subset._CATEGORIES[letter]
    ours = "".join(char for char in chars if test(char) is not negated)
    theirs = "".join(re.findall(f"\\{letter}", chars))
    assert ours == theirs


@given(st.characters(min_codepoint=0x10000, max_codepoint=sys.maxunicode))
def test_each_category_is_res_past_the_basic_plane(char: str) -> None:
    for letter, (test, negated) in regex_subset._CATEGORIES.items():
        assert (test(char) is not negated) == bool(re.fullmatch(f"\\{letter}", char))


@pytest.mark.parametrize(("pattern", "line", "found"), [
    ("err[0-9]+", "an err42 here", True),
    ("err[0-9]+", "an err here", False),
    ("^[A-Z]+:", "FAIL: x", True),
    ("^[A-Z]+:", " FAIL: x", False),
    ("\\d+ failed$", "3 failed\n", True),
    ("time ?out", "timeout", True),
    ("warn[a-z]*|error", "an error", True),
    ("[^ -~]", "plain ascii", False),
    ("[^ -~]", "caf\u00e9", True),
    ("^\\d{4}-\\d{2}-\\d{2} ", "2026-12-06 21:49 start", True),
    ("^\\d{4}-\\d{2}-\\d{2} ", "2026-12-6 21:49 start", False),
    ("x{2,3}y", "axxxy", True),
    ("x{2,3}y", "axy", False),
    ("^a{1,}$", "aaa", True),
    ("^a{1,2}$", "aaa", False),
    ("^ba{0,1}b", "baab", False),
    ("warn(ing)?:", "warning: x", True),
    ("warn(ing)?:", "warnin: x", False),
    ("^(INFO|WARN) ", "WARN x", True),
    ("(error|fail)ed", "it failed", True),
    ("(ab){2}", "abab", True),
    ("(ab){2}", "abxab", False),
    ("(a|b)+$", "xabba\n", True),
    ("x(a|b)|^c", "c", True),
])
def test_patterns_people_grep_with(pattern: str, line: str, found: bool) -> None:
    search = compile_search(pattern)
    assert search is not None
    assert search(line) is found


@pytest.mark.parametrize("pattern", [
    "(?=x)", "(?P<n>x)", "(?i)x", "(a", "a)", "(^a)", "(a$)", "(a{32}){32}", "e{,2}", "e{3,1}", "e{2}?", "e{2}+", "e{2}*", "x{99}", "x{1,2,3}", "{2}", "a*?", "a++", "\\bx", "\\n", "[]x]", "[a-c-e]", "[c-a]", "[x", "x**",
    "^*", "a^b", "a$b", "[[x]", "[a--b]", "\\1", "\\é",
])
def test_the_rest_is_left_to_re(pattern: str) -> None:
    assert compile_search(pattern) is None


def test_a_line_is_read_once_and_without_backtracking() -> None:
    """A pattern that makes a backtracking matcher try every split of a long run is one
    pass over the line here (a wrong answer, or a hang, would show a backtracking
    search)."""
    search = compile_search("a*a*a*a*a*a*b$")
    assert search is not None
    assert not search("a" * 5000 + "bx")
    assert search("a" * 5000 + "b")
    assert search.scanned == 5002 + 5001


def test_a_line_without_the_needed_text_is_not_scanned() -> None:
    search = compile_search("err[0-9]+|^x\\d")
    assert search is not None
    assert [branch.needed for branch in search.branches] == ["err", "x"]
    assert not search("no match here")
    assert search.scanned == 0
    assert search("err7")
    assert search.scanned == 4
