"""--each-line: input parsing, `{}` substitution and job names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qex.core import fanout
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
