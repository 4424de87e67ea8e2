"""Line selection for `qex logs` and `qex status`: ranges, search, context, counts."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qex.core.grep_pattern import simple_test
from qex.core.logsel import (
    DEFAULT_MAX_MATCHES,
    GAP_MARK,
    Selection,
    SelectionError,
    StreamFilter,
    parse_range,
    select_lines,
    split_lines,
)

LINES = [f"line {i}" for i in range(1, 1001)]


def test_default_is_last_500_with_a_notice() -> None:
    out = select_lines(LINES, Selection())
    assert out.lines == LINES[500:]
    assert out.hidden == 500
    assert out.total == 1000
    notice = out.notice()
    assert notice is not None and "500 earlier lines" in notice


def test_short_log_has_no_notice() -> None:
    out = select_lines(LINES[:10], Selection())
    assert out.lines == LINES[:10]
    assert out.notice() is None


def test_tail_head_lines_all() -> None:
    assert select_lines(LINES, Selection(tail=3)).lines == ["line 998", "line 999", "line 1000"]
    head = select_lines(LINES, Selection(head=2))
    assert head.lines == ["line 1", "line 2"]
    assert head.hidden == 998 and "later" in (head.notice() or "")
    rng = select_lines(LINES, Selection(lines=(400, 402)))
    assert rng.lines == ["line 400", "line 401", "line 402"]
    assert "outside the range" in (rng.notice() or "")
    every = select_lines(LINES, Selection(all=True))
    assert every.lines == LINES and every.notice() is None


def test_tail_zero_shows_nothing_and_counts_everything() -> None:
    out = select_lines(LINES[:5], Selection(tail=0))
    assert out.lines == [] and out.hidden == 5


def test_number_prefixes_the_line_number() -> None:
    out = select_lines(LINES, Selection(tail=1, number=True))
    assert out.lines == ["  1000  line 1000"]


def test_grep_counts_every_match_and_shows_the_first_ones() -> None:
    lines = [f"ERROR {i}" if i % 2 else f"ok {i}" for i in range(1000)]
    out = select_lines(lines, Selection(grep="ERROR"))
    assert out.matches == 500
    assert out.matches_shown == DEFAULT_MAX_MATCHES
    # The FIRST matches: the first failure is usually the cause.
    assert out.lines[0] == "ERROR 1"
    notice = out.notice() or ""
    assert "500 lines match" in notice and "--max-matches" in notice


def test_max_matches_limits_and_all_lifts_the_limit() -> None:
    lines = ["a x", "b", "c x", "d", "e x"]
    out = select_lines(lines, Selection(grep="x", max_matches=2))
    assert out.lines == ["a x", "c x"]  # no context, so no gap marks (as grep)
    assert out.matches == 3 and out.matches_shown == 2
    every = select_lines(lines, Selection(grep="x", all=True))
    assert [line for line in every.lines if line != GAP_MARK] == ["a x", "c x", "e x"]
    assert every.notice() == "... 3 lines match the pattern."


def test_context_lines_and_gap_marks() -> None:
    lines = [str(i) for i in range(1, 21)]
    out = select_lines(lines, Selection(grep="^(5|15)$", context=1, number=True))
    assert out.lines == ["     4  4", "     5  5", "     6  6", GAP_MARK,
                         "    14  14", "    15  15", "    16  16"]


def test_overlapping_context_merges() -> None:
    lines = ["a", "hit", "b", "hit", "c"]
    out = select_lines(lines, Selection(grep="hit", context=1))
    assert out.lines == lines


def test_fixed_reads_the_pattern_as_text() -> None:
    lines = ["a.b", "axb", "[x]"]
    assert select_lines(lines, Selection(grep="a.b")).matches == 2
    assert select_lines(lines, Selection(grep="a.b", fixed=True)).matches == 1
    assert select_lines(lines, Selection(grep="[x]", fixed=True)).lines == ["[x]"]


#: Patterns of text, `.` and `.*` in anchored branches, and patterns that `re` must read.
_PIECES = st.text(alphabet="ab^$|\n.", max_size=8)
_WILD = st.lists(st.sampled_from(["a", "b", ".", ".*", "^", "$", "|", "\n", "*", "ab"]),
                 max_size=7).map("".join)
#: Lines, half of them ending in a newline (where `$` has two places to match).
_LINES = st.lists(st.tuples(st.text(alphabet="ab$^|\n.*", max_size=6), st.booleans()).map(
    lambda drawn: drawn[0] + "\n" * drawn[1]), min_size=1, max_size=5)


@settings(max_examples=400)
@given(st.one_of(_PIECES, _WILD), _LINES)
@example("a.$", ["ab\n"]).via("`$` before a final newline")
@example("^.$", ["ab", "a"]).via("both anchors around one piece")
def test_simple_patterns_match_as_re_search_does(pattern: str, lines: list[str]) -> None:
    import re

    test = simple_test(pattern)
    if test is None:
        return
    for line in lines:
        assert test(line) == (re.search(pattern, line) is not None), (pattern, line)


@settings(max_examples=400)
@given(st.lists(st.sampled_from(["a", "b", ".", ".*", "ab", "ba"]), max_size=6).map("".join),
       st.booleans(), st.booleans(), _LINES)
def test_dotted_branches_are_read_without_re(body: str, first: bool, last: bool,
                                             lines: list[str]) -> None:
    """The companion of the test above: the wildcard patterns it draws are not all left
    to `re`, so the cases it checks are reached."""
    import re

    pattern = ("^" if first else "") + body + ("$" if last else "")
    test = simple_test(pattern)
    assert test is not None, pattern
    for line in lines:
        assert test(line) == (re.search(pattern, line) is not None), (pattern, line)


@pytest.mark.parametrize(("pattern", "simple"), [
    ("error|warning", True), ("^ERROR|Traceback", True), ("done$", True), ("^$", True),
    ("a.b", True), ("^an.*done$", True), ("err.*,|x", True), ("^.*$", True), (".", True),
    ("a(?=b)", False), ("^^a", False), ("a$b", False), ("a.*?b", False), ("e.{,2}", False),
    ("\\berr", False), ("(?i)caf\u00e9", False), ("(?im)error", False),
    # `(?i)` before a pattern of ASCII: read lowered, for ASCII lines.
    ("(?i)error", True), ("(?i)^E.*done$", True), ("(?i)[A-Z]+ then", True),
    # Classes, escapes and repeats: `qex.core.regex_subset`.
    ("a\\|b", True), ("x+", True), ("a.+b", True), ("[ae]n", True), ("a\\.b", True),
    ("a.\nb", True), ("e\\w+ done$", True), ("e.{2}", True), ("(a|b)", True),
])
def test_which_patterns_skip_the_re_module(pattern: str, simple: bool) -> None:
    assert (simple_test(pattern) is not None) is simple
    selection = Selection(grep=pattern)
    for line in ("an error, then done", "an error, then done\n", "a\nb", ""):
        assert selection.matcher()(line) == (
            __import__("re").search(pattern, line) is not None), (pattern, line)


def test_a_long_log_goes_on_with_re(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `RE_AFTER_LINES` lines a dotted pattern is searched by `re` (its import has paid
    for itself by then), with the same answers; a pattern of text never needs it."""
    import re

    from qex.core import grep_pattern

    compiled: list[str] = []
    real_compile = re.compile
    monkeypatch.setattr(re, "compile", lambda pattern, *a: compiled.append(pattern)
                        or real_compile(pattern, *a))
    monkeypatch.setattr(grep_pattern, "RE_AFTER_LINES", 3)
    lines = ["ab", "xc\n", "c", "a-b\n", "cd", "b a", "c\nd", "acb", "", "ca"]
    for pattern, switches in (("a.*b|^c.", True), ("error|^c", False)):
        test = simple_test(pattern)
        assert test is not None
        assert [test(line) for line in lines] == [
            real_compile(pattern).search(line) is not None for line in lines]
        assert (pattern in compiled) is switches, pattern


def test_a_pattern_with_a_class_goes_on_with_re_past_its_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pattern of `qex.core.regex_subset` runs its states over `RE_AFTER_CHARS`
    characters, then `re` reads the rest, with the same answers; a short log needs no `re`."""
    import re

    from qex.core import grep_pattern

    compiled: list[str] = []
    real_compile = re.compile
    monkeypatch.setattr(re, "compile", lambda pattern, *a: compiled.append(pattern)
                        or real_compile(pattern, *a))
    lines = ["ab", "xc\n", "a-b\n", "abc", "b a", "acb", "", "ca", "abcb", "a"]
    expected = [real_compile("a[bc]+$").search(line) is not None for line in lines]
    test = simple_test("a[bc]+$")
    assert test is not None
    assert [test(line) for line in lines] == expected
    assert compiled == []
    monkeypatch.setattr(grep_pattern, "RE_AFTER_CHARS", 6)
    test = simple_test("a[bc]+$")
    assert test is not None
    assert [test(line) for line in lines] == expected
    assert compiled == ["a[bc]+$"]


#: `(?i)` patterns: text and `.` (the dotted reader), classes and groups (the subset), and
#: lines with characters that Unicode folds onto ASCII letters or that `re` folds otherwise.
_FOLDED = st.lists(st.sampled_from(["a", "B", "k", "S", "i", ".", ".*", "^", "$", "|", "[a-c]",
                                    "[^A]", "[Z-a]", "\\W", "(b|K)", "+", "?", "\u00e9"]),
                   max_size=6).map("".join)
_MIXED_LINES = st.lists(st.text(alphabet="aAbBkKsSiIzZ[`_ \n\u212a\u017f\u0131\u0130\u00e9\u00c9",
                                max_size=8), min_size=1, max_size=6)


@settings(max_examples=600)
@given(_FOLDED, _MIXED_LINES)
@example("^B.*a$", ["ba", "BA\n", "xba"]).via("text and `.*` in upper case")
@example("k", ["\u212a"]).via("the Kelvin sign folds onto k")
@example("s", ["x", "\u017f"]).via("the long s folds onto s, after an ASCII line")
@example("[^A]", ["a", "A", "b"]).via("a negated class is negated after the fold")
def test_a_pattern_without_case_matches_as_re_search_does(body: str, lines: list[str]) -> None:
    import re

    pattern = "(?i)" + body
    test = simple_test(pattern)
    if test is None:
        return
    compiled = re.compile(pattern)
    for line in lines:
        assert test(line) == (compiled.search(line) is not None), (pattern, line)


def test_a_line_beyond_ascii_hands_a_folded_search_to_re(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """ASCII lines are lowered and read without `re`; the first other line, and every line
    after it, is `re`'s, for both readers."""
    import re

    compiled: list[str] = []
    real_compile = re.compile
    monkeypatch.setattr(re, "compile", lambda pattern, *a: compiled.append(pattern)
                        or real_compile(pattern, *a))
    for pattern in ("(?i)error|^ok", "(?i)err(or)?[0-9]*$"):
        test = simple_test(pattern)
        assert test is not None
        plain = ["An ERROR", "OK then", "Err42", "fine"]
        assert [test(line) for line in plain] == [
            real_compile(pattern).search(line) is not None for line in plain]
        assert compiled == []
        assert test("\u00c9RROR") is False  # `re` reads it, and every line after it
        assert test("ERROR") is True
        assert compiled == [pattern]
        compiled.clear()


def test_a_long_line_is_searched_from_its_rarest_piece() -> None:
    """`str.find` looks for the longest run of text in a piece; the dots are checked where
    it is found, so a line with many near misses is still found exactly."""
    test = simple_test("x.yzzz")
    assert test is not None
    line = "yzzz" * 1000 + "xqyzzz"
    assert test(line) and not test(line[:-1])


def test_single_match_uses_the_singular() -> None:
    out = select_lines(["one ERROR"], Selection(grep="ERROR"))
    assert out.notice() == "... 1 line matches the pattern."


def test_no_match_says_so() -> None:
    out = select_lines(["a"], Selection(grep="zzz"))
    assert out.lines == [] and out.matches == 0
    assert out.notice() == "... 0 lines match the pattern."


def test_bad_regex_is_a_selection_error_before_any_read() -> None:
    """`qex status ID --grep '(x'` once ended in a traceback: the pattern was compiled only
    while the excerpts were printed. The Selection now refuses it when it is made."""
    with pytest.raises(SelectionError, match="--fixed"):
        Selection(grep="(unclosed")
    assert select_lines(["(unclosed"], Selection(grep="(unclosed", fixed=True)).lines == [
        "(unclosed"]


def test_conflicting_ranges_are_refused() -> None:
    with pytest.raises(SelectionError):
        Selection(tail=1, head=1)
    with pytest.raises(SelectionError):
        Selection(all=True, lines=(1, 2))
    with pytest.raises(SelectionError):
        Selection(context=2)
    with pytest.raises(SelectionError):
        Selection(tail=-1)


def test_follow_refuses_options_that_need_an_end() -> None:
    Selection(tail=5, grep="x").check_follow()
    for sel in (Selection(head=1), Selection(lines=(1, 2)), Selection(grep="x", max_matches=3),
                Selection(all=True)):
        with pytest.raises(SelectionError):
            sel.check_follow()


@pytest.mark.parametrize("text", ["5", "a:b", "0:3", "9:3", ":"])
def test_parse_range_refuses(text: str) -> None:
    with pytest.raises(SelectionError):
        parse_range(text)


def test_parse_range() -> None:
    assert parse_range("4200:4230") == (4200, 4230)
    assert parse_range(" 1 : 1 ") == (1, 1)


def test_split_lines_keeps_a_last_line_without_newline() -> None:
    assert split_lines("") == []
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\r\n\n") == ["a\r", ""]
    # A form feed is text inside a line, not a line break.
    assert split_lines("a\x0cb\n") == ["a\x0cb"]


def test_line_offset_continues_numbers_and_counts_unloaded_lines() -> None:
    out = select_lines(["x", "y"], Selection(tail=1, number=True), line_offset=98)
    assert out.lines == ["   100  y"]
    assert out.total == 100 and out.hidden == 99
    with pytest.raises(ValueError):
        select_lines(["x"], Selection(grep="x"), line_offset=3)


def test_stream_filter_without_grep_passes_everything() -> None:
    flt = StreamFilter(Selection(number=True), first_number=10)
    assert flt.feed("a") == ["    10  a"]
    assert flt.feed("b") == ["    11  b"]


def test_stream_filter_context() -> None:
    flt = StreamFilter(Selection(grep="HIT", context=1))
    out: list[str] = []
    for line in ["a", "b", "HIT", "c", "d", "e", "HIT", "f"]:
        out.extend(flt.feed(line))
    assert out == ["b", "HIT", "c", GAP_MARK, "e", "HIT", "f"]


# --- invariants -----------------------------------------------------------------------

_lines = st.lists(st.sampled_from(["a", "b", "ERR x", "ERR y", ""]), max_size=60)


@given(_lines, st.integers(0, 80), st.sampled_from(["tail", "head", "all"]))
def test_range_shows_plus_hidden_is_total(lines: list[str], n: int, mode: str) -> None:
    sel = Selection(all=True) if mode == "all" else Selection(**{mode: n})
    out = select_lines(lines, sel)
    shown = [line for line in out.lines if line != GAP_MARK]
    assert len(shown) + out.hidden == len(lines)


@given(_lines, st.integers(1, 70), st.integers(0, 70))
def test_lines_range_is_a_contiguous_slice(lines: list[str], start: int, width: int) -> None:
    out = select_lines(lines, Selection(lines=(start, start + width)))
    assert out.lines == lines[start - 1: start + width]


@given(_lines, st.integers(0, 3), st.integers(0, 10))
def test_grep_output_is_an_ordered_subsequence_with_counted_matches(
        lines: list[str], context: int, max_matches: int) -> None:
    out = select_lines(lines, Selection(grep="ERR", context=context, max_matches=max_matches,
                                        number=True))
    numbers = [int(line.split()[0]) for line in out.lines if line != GAP_MARK]
    assert numbers == sorted(set(numbers))
    assert out.matches == sum("ERR" in line for line in lines)
    assert out.matches_shown == min(max_matches, out.matches or 0)


@given(_lines, st.integers(0, 3))
def test_stream_filter_agrees_with_whole_file_search(lines: list[str], context: int) -> None:
    sel = Selection(grep="ERR", context=context, all=True)
    whole = select_lines(lines, sel).lines
    flt = StreamFilter(sel)
    streamed: list[str] = []
    for line in lines:
        streamed.extend(flt.feed(line))
    assert streamed == whole
