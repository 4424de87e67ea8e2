"""What the lean submit path needs of `--each-line` without `qex.core.fanout` (which
imports `re`): the limits of the input, how its lines are told apart, how messages name it,
and how a long input is cut into the parts that go to the coordinator one request each.
Pure."""

from __future__ import annotations

#: The whole input is held in memory, so it is capped whether it comes from a file or a pipe.
MAX_INPUT_BYTES = 64 * 1024 * 1024
#: Each job holds a directory on disk; a runaway input must not fill it.
DEFAULT_MAX_JOBS = 1000
#: How `--each-line` names the standard input.
STDIN = "-"
#: The most jobs of one fan-out that one request to the coordinator carries. Its answer
#: comes once every job of it is durable, about 0.2 s for this many here: within the time
#: that the lean client waits for an answer (`qex.cli.wire.QUICK_ANSWER_SECS`), and often
#: enough for the command to print its progress. A longer input goes in several parts of
#: one group.
PART_JOBS = 250
#: The most characters of input that one request carries (its JSON stays far below the
#: protocol's line limit whatever the characters are).
PART_CHARS = 1024 * 1024

#: The kinds of an input line (`line_kind`).
EMPTY = "empty"
COMMENT = "comment"
JOB = "job"


def shown_source(source: str) -> str:
    """How messages name the input: the path as typed, or the standard input."""
    return "the standard input" if source == STDIN else source


def input_lines(text: str) -> list[str]:
    """The input's lines, LF or CRLF: a final newline ends the last line and starts none."""
    pieces = text.split("\n")
    if pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


def line_kind(raw: str) -> tuple[str, str]:
    """(kind, the line trimmed): blank lines and `#` comments give no job."""
    line = raw.strip()
    if not line:
        return EMPTY, line
    if line.startswith("#"):
        return COMMENT, line
    return JOB, line


def summary(jobs: int, empty: int, comments: int) -> str:
    """The sentence that says what an input gave."""
    return (f"this input gives {jobs} job(s); qex passed over {empty} empty line(s) and "
            f"{comments} comment line(s)")


def too_many(source: str, jobs: int, max_jobs: int) -> str:
    """The refusal of an input that gives more jobs than `--max-jobs` allows."""
    return (f"{source} gives {jobs} jobs and the limit is {max_jobs}, because each job keeps a "
            f"directory on disk; raise the limit with `--max-jobs {jobs}` if you mean it")


class Part:
    """A run of whole input lines sent in one request: its text, the number of its first
    job in the whole input (from 1), and how many jobs, blanks and comments it holds."""

    __slots__ = ("comments", "empty", "first", "jobs", "text")

    def __init__(self, text: str, first: int, jobs: int, empty: int, comments: int) -> None:
        self.text = text
        self.first = first
        self.jobs = jobs
        self.empty = empty
        self.comments = comments


def split_parts(text: str, *, per_part: int = PART_JOBS,
                max_chars: int = PART_CHARS) -> list[Part]:
    """The input cut at line ends into parts of at most `per_part` jobs and, where a line
    allows it, `max_chars` characters; each part's text ends with a newline. A part that
    would hold no job joins the one before it, so every part but a lone one gives a job."""
    parts: list[Part] = []
    lines: list[str] = []
    size = jobs = empty = comments = 0
    first = 1

    def close() -> None:
        nonlocal lines, size, jobs, empty, comments, first
        parts.append(Part("\n".join(lines) + "\n", first, jobs, empty, comments))
        first += jobs
        lines, size, jobs, empty, comments = [], 0, 0, 0, 0

    for raw in input_lines(text):
        kind = line_kind(raw)[0]
        if kind == JOB and jobs and (jobs == per_part or size + len(raw) + 1 > max_chars):
            close()
        lines.append(raw)
        size += len(raw) + 1
        if kind == JOB:
            jobs += 1
        elif kind == EMPTY:
            empty += 1
        else:
            comments += 1
    if lines or not parts:
        close()
    return parts
