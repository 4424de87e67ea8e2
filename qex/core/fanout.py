"""`--each-line`: one job per input line, with the line put where the command says `{}`.

Pure. A line is DATA: it becomes exactly one argument (or part of one), never a command, and
no shell reads it, so a file of names from anywhere is safe to fan out. Everything that can be
checked is checked before the first job is submitted (encoding, size, count, the template),
so a fault gives no job at all rather than half a fan-out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from qex.core.fanout_source import (
    DEFAULT_MAX_JOBS,
    EMPTY,
    JOB,
    MAX_INPUT_BYTES,
    STDIN,
    input_lines,
    line_kind,
    summary,
    too_many,
)
from qex.core.model import dataclass, field

PLACEHOLDER = "{}"
LITERAL = "{{}}"

_SLUG_DROP = re.compile(r"[^A-Za-z0-9._]+")
BASE_WIDTH = 16
LINE_WIDTH = 24
NAME_WIDTH = 48


class FanoutError(ValueError):
    """Input or a template that cannot fan out; the message says what to change."""


@dataclass
class FanoutInput:
    """The lines that give jobs, their line numbers, and what was passed over."""

    lines: list[str] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    empty: int = 0
    comments: int = 0

    def summary(self) -> str:
        return summary(len(self.lines), self.empty, self.comments)


def parse_input(data: bytes, *, source: str, max_jobs: int = DEFAULT_MAX_JOBS) -> FanoutInput:
    """Split the input into job lines: trimmed, CRLF or LF, `#` comments and blanks skipped."""
    if len(data) > MAX_INPUT_BYTES:
        raise FanoutError(
            f"{source} holds more than 64 MiB, and qex reads at most that much for --each-line; "
            "split the input and submit each part"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = data[: exc.start].count(b"\n") + 1
        raise FanoutError(
            f"line {bad_line} of {source} is not UTF-8 text, and a job's command must be text; "
            "convert the file (iconv) or remove that line, and nothing was submitted"
        ) from None
    parsed = FanoutInput()
    for number, raw in enumerate(input_lines(text), start=1):
        kind, line = line_kind(raw)
        if kind == JOB:
            parsed.lines.append(line)
            parsed.line_numbers.append(number)
        elif kind == EMPTY:
            parsed.empty += 1
        else:
            parsed.comments += 1
    if not parsed.lines:
        raise FanoutError(
            f"{source} gives no job: it holds no line that is neither empty nor a comment"
        )
    if len(parsed.lines) > max_jobs:
        raise FanoutError(too_many(source, len(parsed.lines), max_jobs))
    return parsed


def _tokens(arg: str) -> list[tuple[bool, str]]:
    """The argument as (is_placeholder, text) pieces; `{{}}` is the literal text `{}`."""
    out: list[tuple[bool, str]] = []
    literal: list[str] = []
    i = 0
    while i < len(arg):
        if arg.startswith(LITERAL, i):
            literal.append(PLACEHOLDER)
            i += len(LITERAL)
        elif arg.startswith(PLACEHOLDER, i):
            if literal:
                out.append((False, "".join(literal)))
                literal = []
            out.append((True, PLACEHOLDER))
            i += len(PLACEHOLDER)
        else:
            literal.append(arg[i])
            i += 1
    if literal:
        out.append((False, "".join(literal)))
    return out


def has_placeholder(command: Sequence[str]) -> bool:
    return any(is_ph for arg in command for is_ph, _ in _tokens(arg))


def check_template(command: Sequence[str]) -> None:
    """A fan-out command must use `{}`; otherwise every job would be the same command."""
    if not command:
        raise FanoutError("--each-line needs a command after `--`, with `{}` where each line goes")
    if not has_placeholder(command):
        raise FanoutError(
            "the command has no `{}`, so every line would run the same command; put `{}` where "
            "the line goes (write `{{}}` for a literal `{}`)"
        )


def substitute(command: Sequence[str], line: str) -> list[str]:
    """The command for one line: every `{}` becomes the line, inside one argument each."""
    return ["".join(line if is_ph else text for is_ph, text in _tokens(arg)) for arg in command]


def template_key(command: Sequence[str]) -> list[str]:
    """The command as the learner keys it: the template itself, with `{}` left in place."""
    return list(command)


def slug(text: str, width: int) -> str:
    """Letters, digits, `.` and `_`; each other run becomes one `-`; trimmed and cut."""
    cut = _SLUG_DROP.sub("-", text).strip("-")[:width]
    return cut.strip("-")


def job_names(base: str, lines: Sequence[str], *, first: int = 1,
              total: int | None = None) -> list[str]:
    """`<base>-<NN>-<slug of the line>` for each line, at most 48 characters, always safe.

    `first` and `total`: for a part of a longer input (`fanout_source.split_parts`), the
    number of its first line's job and the jobs of the whole input, whose count sets the
    numbers' width, so that every part names its jobs as the whole input in one would."""
    stem = slug(base, BASE_WIDTH) or "job"
    width = max(2, len(str(len(lines) if total is None else total)))
    names: list[str] = []
    for index, line in enumerate(lines, start=first):
        name = f"{stem}-{index:0{width}d}"
        part = slug(line, LINE_WIDTH)
        if part:
            name = f"{name}-{part}"
        names.append(name[:NAME_WIDTH].rstrip("-"))
    return names


def group_name(name: str | None, source: str) -> str:
    """The group's name: `--name`, else the input file's stem, else `stdin`."""
    if name:
        return name
    if source == STDIN:
        return "stdin"
    base = source.rstrip("/").rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
    return slug(stem, 64) or "stdin"
