"""The lean `qex logs ID` prints what the full body prints.

Both choose lines with `qex.core.logsel`, so what is held here is what each adds around it:
the lean `--follow` of a job that will write no more against `log_follow.follow`, a
pattern searched as text against the same pattern through `re`, and the reading of files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qex.cli import fastlogs, log_follow
from qex.core import logsel

#: Log bytes: numbered and repeated lines, blank lines, a missing last newline, bytes that
#: are not UTF-8.
LOG = st.lists(st.sampled_from([b"line 1", b"err", b"", b"\xff\xfe", b"caf\xc3\xa9", b"a\rb",
                                b"x err y"]), max_size=30).map(b"\n".join) | st.binary(max_size=80)
#: The selections a follow takes: a lead (`--tail`), a pattern and its options.
FOLLOWS = st.builds(
    logsel.Selection, tail=st.none() | st.integers(0, 8),
    grep=st.none() | st.sampled_from(["err", "e.r", "^line", "\xe9"]),
    number=st.booleans()).flatmap(
    lambda sel: st.just(sel) if sel.grep is None else st.builds(
        logsel.Selection, tail=st.just(sel.tail), grep=st.just(sel.grep),
        number=st.just(sel.number), fixed=st.booleans(), context=st.integers(0, 2)))


def _lean(logs: list[tuple[str, bytes]], sel: logsel.Selection) -> None:
    fastlogs._print_followed(logs, sel)


def _full(job_dir: Path, streams: list[str], sel: logsel.Selection) -> None:
    lead = sel.tail if sel.tail is not None else logsel.FOLLOW_LEAD
    log_follow.follow(job_dir, streams, sel, lead=lead, job_state=lambda: "completed",
                      is_final=lambda _state: True)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=120)
@given(out=LOG, err=LOG, sel=FOLLOWS, both=st.booleans())
def test_a_lean_follow_of_a_stopped_job_prints_what_the_follower_prints(
        tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes], out: bytes, err: bytes,
        sel: logsel.Selection, both: bool) -> None:
    for stream, data in (("stdout", out), ("stderr", err)):
        (tmp_path / f"{stream}.log").write_bytes(data)
    streams = ["stdout", "stderr"] if both else ["stderr"]
    capfdbinary.readouterr()
    _full(tmp_path, streams, sel)
    full = capfdbinary.readouterr()
    _lean([(s, (tmp_path / f"{s}.log").read_bytes()) for s in streams], sel)
    lean = capfdbinary.readouterr()
    assert lean == full


@pytest.mark.filterwarnings("ignore::FutureWarning")  # `[[` and the like: re's own notes
@given(pattern=st.text(alphabet="ab .*\\[](){}|^$+?é-#", max_size=4),
       lines=st.lists(st.text(alphabet="ab .*\\é-#", max_size=8), max_size=6))
def test_a_pattern_read_as_text_finds_what_the_expression_finds(pattern: str,
                                                              lines: list[str]) -> None:
    try:
        compiled = re.compile(pattern)
    except re.error:
        return
    test = logsel.Selection(grep=pattern).matcher()
    assert [test(line) for line in lines] == [compiled.search(line) is not None
                                             for line in lines]


def test_a_plain_pattern_needs_no_regular_expressions() -> None:
    """`re` costs a lean reader as much as the rest of its imports, so a pattern of plain
    characters is searched without it (the test runs in a fresh interpreter)."""
    import subprocess
    import sys

    code = ("import sys; from qex.core.logsel import Selection; "
            "t = Selection(grep='error: x-1').matcher(); "
            "print(t('an error: x-1 here'), t('none'), 're' in sys.modules)")
    shown = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONPATH": str(Path(fastlogs.__file__).parents[2])})
    assert shown.stdout.split() == ["True", "False", "False"]


def test_the_files_are_read_whole_or_left_to_the_full_body(tmp_path: Path) -> None:
    assert fastlogs._read(str(tmp_path / "missing.log")) == b""
    (tmp_path / "a.log").write_bytes(b"x\n")
    assert fastlogs._read(str(tmp_path / "a.log")) == b"x\n"
    assert fastlogs._read(str(tmp_path)) is None  # a directory: the full body says what it finds
