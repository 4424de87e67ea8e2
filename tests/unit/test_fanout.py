"""--each-line: input parsing, `{}` substitution and job names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.core import fanout, fanout_source
from qex.core.fanout_source import MAX_INPUT_BYTES
from qex.core.names import is_safe_name


def test_lines_are_trimmed_and_comments_and_blanks_counted() -> None:
    data = b"  a.csv  \r\n\n# a comment\n b c \n   \n#x\nlast"
    parsed = fanout.parse_input(data, source="in.txt")
    assert parsed.lines == ["a.csv", "b c", "last"]
    assert parsed.line_numbers == [1, 4, 7]
    assert parsed.empty == 2
    assert parsed.comments == 2
    assert "3 job(s)" in parsed.summary()
    assert "2 empty" in parsed.summary()


def test_final_newline_does_not_add_an_empty_line() -> None:
    parsed = fanout.parse_input(b"a\nb\n", source="x")
    assert parsed.lines == ["a", "b"]
    assert parsed.empty == 0


def test_bad_utf8_names_the_line() -> None:
    with pytest.raises(fanout.FanoutError, match="line 3"):
        fanout.parse_input(b"ok\nfine\nbad \xff here\n", source="x")


def test_no_job_lines_is_an_error() -> None:
    with pytest.raises(fanout.FanoutError, match="no line"):
        fanout.parse_input(b"\n# only\n\n", source="x")


def test_max_jobs_is_enforced_with_the_remedy() -> None:
    data = b"".join(f"{i}\n".encode() for i in range(5))
    with pytest.raises(fanout.FanoutError, match="--max-jobs 5"):
        fanout.parse_input(data, source="x", max_jobs=4)
    assert len(fanout.parse_input(data, source="x", max_jobs=5).lines) == 5


def test_input_cap() -> None:
    with pytest.raises(fanout.FanoutError, match="64 MiB"):
        fanout.parse_input(b"a" * (MAX_INPUT_BYTES + 1), source="x")


def test_template_needs_a_placeholder() -> None:
    with pytest.raises(fanout.FanoutError, match="no `\\{\\}`"):
        fanout.check_template(["echo", "hello"])
    with pytest.raises(fanout.FanoutError, match="no `\\{\\}`"):
        fanout.check_template(["echo", "{{}}"])
    fanout.check_template(["echo", "x{}y"])


def test_substitution_keeps_one_argument_per_argument() -> None:
    line = 'a b"; rm -rf ~; echo $HOME'
    out = fanout.substitute(["./process", "--", "{}", "out-{}.txt", "{{}}", "{"], line)
    assert out == ["./process", "--", line, f"out-{line}.txt", "{}", "{"]


def test_substitution_in_program_name() -> None:
    assert fanout.substitute(["{}", "--version"], "python3") == ["python3", "--version"]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1))
def test_a_line_is_never_split(line: str) -> None:
    out = fanout.substitute(["cmd", "{}"], line)
    assert out == ["cmd", line]


def test_job_names() -> None:
    names = fanout.job_names("process", ["data/a.csv", "data/b.csv"])
    assert names == ["process-01-data-a.csv", "process-02-data-b.csv"]
    many = fanout.job_names("p", [str(i) for i in range(120)])
    assert many[0] == "p-001-0"
    assert many[119] == "p-120-119"


def test_job_names_are_safe_and_short() -> None:
    names = fanout.job_names("a very long program name!!", ["\x1b[31mred\x1b[0m" * 10, "-v", "###"])
    for name in names:
        assert is_safe_name(name)
        assert len(name) <= fanout.NAME_WIDTH
    assert names[2].endswith("-03")


@given(st.text(), st.lists(st.text(), min_size=1, max_size=20))
def test_names_always_safe(base: str, lines: list[str]) -> None:
    for name in fanout.job_names(base, lines):
        assert is_safe_name(name)
        assert len(name) <= fanout.NAME_WIDTH


def test_group_name() -> None:
    assert fanout.group_name("mine", "inputs.txt") == "mine"
    assert fanout.group_name(None, "/x/inputs.txt") == "inputs"
    assert fanout.group_name(None, "-") == "stdin"
    assert fanout.group_name(None, "noext") == "noext"


_LINE = st.one_of(st.sampled_from(["", "  ", "# note", " #x", "\r"]),
                  st.text(alphabet="ab #\t\u00a0\u2003é", min_size=1, max_size=12))


@given(st.lists(_LINE, max_size=60), st.integers(1, 7), st.integers(1, 40),
       st.booleans())
def test_parts_cut_an_input_at_line_ends_and_keep_every_job_in_order(
        lines: list[str], per_part: int, max_chars: int, final_newline: bool) -> None:
    """Whatever the lines (Unicode spaces, CRs, comments), the parts' texts read back as the
    input's lines; every part holds at most `per_part` jobs, and more than `max_chars`
    characters (up to its last job) only with a single job; each part's first job follows the jobs before it;
    and the parts' counts are what `parse_input` finds in each and in the whole."""
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    parts = fanout_source.split_parts(text, per_part=per_part, max_chars=max_chars)
    assert parts
    rejoined = [line for part in parts for line in fanout_source.input_lines(part.text)]
    assert rejoined == fanout_source.input_lines(text) or (not text and rejoined == [""])
    first = 1
    for part in parts:
        assert part.first == first
        assert part.jobs <= per_part
        assert part.jobs >= 1 or len(parts) == 1
        own = fanout_source.input_lines(part.text)
        kinds = [fanout_source.line_kind(line)[0] for line in own]
        if part.jobs >= 2:  # a second job joins only within the characters allowed
            last = len(kinds) - 1 - kinds[::-1].index(fanout_source.JOB)
            assert sum(len(line) + 1 for line in own[:last + 1]) <= max_chars
        first += part.jobs
        if part.jobs:
            parsed = fanout.parse_input(part.text.encode(), source="in")
            assert (len(parsed.lines), parsed.empty, parsed.comments) == (
                part.jobs, part.empty, part.comments)
    if any(part.jobs for part in parts):
        whole = fanout.parse_input(text.encode(), source="in", max_jobs=10_000)
        assert sum(part.jobs for part in parts) == len(whole.lines)
        assert sum(part.empty for part in parts) == whole.empty
        assert sum(part.comments for part in parts) == whole.comments


def test_a_long_input_is_cut_into_parts_of_part_jobs() -> None:
    size = fanout_source.PART_JOBS
    text = "# head\n" + "".join(f"line{i}\n" + ("\n" if i % 400 == 0 else "")
                                for i in range(1, 2 * size + 101))
    parts = fanout_source.split_parts(text)
    assert [(p.first, p.jobs) for p in parts] == [(1, size), (size + 1, size),
                                                  (2 * size + 1, 100)]
    assert parts[0].text.startswith("# head\nline1\n")
    assert parts[1].text.startswith(f"line{size + 1}\n")
    assert sum(p.empty for p in parts) == (2 * size + 100) // 400 and parts[0].comments == 1


@given(st.lists(st.text(alphabet="ab c.-", max_size=8), min_size=1, max_size=40),
       st.integers(1, 9))
def test_a_part_names_its_jobs_as_the_whole_input_would(lines: list[str], size: int) -> None:
    """Names of a part, given its first job's number and the total, are the slice of the
    whole input's names: the same numbers and the same width."""
    whole = fanout.job_names("base", lines)
    for start in range(0, len(lines), size):
        chunk = lines[start:start + size]
        assert fanout.job_names("base", chunk, first=start + 1, total=len(lines)) == (
            whole[start:start + size])


def test_the_sentences_are_shared_by_both_readers() -> None:
    parsed = fanout.parse_input(b"a\n\n# c\nb\n", source="in")
    assert parsed.summary() == fanout_source.summary(2, 1, 1)
    with pytest.raises(fanout.FanoutError) as caught:
        fanout.parse_input(b"a\nb\nc\n", source="in", max_jobs=2)
    assert str(caught.value) == fanout_source.too_many("in", 3, 2)
