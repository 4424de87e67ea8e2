"""`qex logs ID` for a job that has stopped, straight from its files; and the excerpts of
its logs that `qex status` shows.

The common calls read a job that has finished: `qex logs <id>` (the last lines of both
streams, each under its `==> stream <==` head), any selection of lines (`--tail`, `--head`,
`--lines`, `--all`, `--grep` with its options), one stream, `--json`, and `--follow`, which
for such a job prints the end it would start from and returns. The full body
(`qex.cli.logs_core`) imports the client, `pathlib` and typed records, which cost several
times the interpreter's start-up; this form reads the record and the files with `os`, chooses
the lines with the one selection there is (`qex.core.logsel`, which imports `re` only for a
pattern), and prints the same bytes.

A whole id needs no coordinator: the record on disk is the one the full body shows for a
job in a final state (the coordinator's copy only ever matches it, and no stale-record
judgement applies). The start of an id, or a name, asks a listening coordinator which one
job it names (`fastread.job_id_of_word`). Everything else returns None having printed
nothing: a word that names a group or no single job, a missing or unreadable record, a job
still active, a record that says output was dropped or may be incomplete, a stream still
spilling into `<stream>.log.tail`, a file large enough that the full body reads only its
end. The caller then runs the full body.
"""

from __future__ import annotations

import os
import sys

from qex.core.log_words import (
    DEFAULT_TAIL,
    FAST_TAIL_BYTES,
    STATUS_LINES,
    STATUS_STREAMS,
    STREAMS,
    for_json,
)
from qex.core.state_words import COMPLETED, FINAL_WORDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from qex.core.logsel import Selected, Selection


def _lines(data: bytes) -> list[str]:
    """A log's bytes as its lines (`logsel.split_lines`), undecodable bytes kept."""
    from qex.core.logsel import split_lines

    return split_lines(data.decode("utf-8", "surrogateescape"))


def write_out(text: str) -> None:
    """Write job output exactly as the job wrote it (bytes that are not UTF-8 included)."""
    out = sys.stdout
    out.flush()
    out.buffer.write(text.encode("utf-8", "surrogateescape"))
    out.buffer.flush()


def _read(path: str) -> bytes | None:
    """A log file's bytes: empty when there is none, None when the full body must read it."""
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > FAST_TAIL_BYTES:
                return None
            return handle.read()
    except FileNotFoundError:
        return b""
    except OSError:
        return None


def _read_streams(job_dir: str, streams: tuple[str, ...]) -> list[tuple[str, bytes]] | None:
    """Each stream's whole log; None when one still spills into `<stream>.log.tail` or is too
    large to read whole (the full body then reads it)."""
    found: list[tuple[str, bytes]] = []
    for stream in streams:
        if os.path.exists(os.path.join(job_dir, f"{stream}.log.tail")):
            return None
        data = _read(os.path.join(job_dir, f"{stream}.log"))
        if data is None:
            return None
        found.append((stream, data))
    return found


def _job_dir(job_id: object) -> str | None:
    """The directory of the job with this id, or None without a state directory."""
    from qex.cli.wire import state_dir

    state = state_dir(os.environ)
    return os.path.join(state, "jobs", job_id) if state and isinstance(job_id, str) else None


def _stopped_record(word: str) -> tuple[dict[str, Any], str] | None:
    """The record and directory of the job that `word` names (an id or a name), when it is final
    and its output lost nothing to the limit; None for the full body."""
    from qex.cli.fastwait import is_full_id

    if not is_full_id(word):
        from qex.cli.fastread import job_id_of_word

        whole = job_id_of_word(word)  # `qex logs 1a2b3c4d`, or `qex logs build`
        if whole is None:
            return None
        word = whole
    job_dir = _job_dir(word)
    if job_dir is None:
        return None
    from qex.cli.wire import decode

    try:
        with open(os.path.join(job_dir, "status.json"), "rb") as handle:
            record = decode(handle.read())
    except OSError:
        return None
    from qex.cli.fastread import FINAL_STATES

    if record is None or record.get("id") != word or record.get("state") not in FINAL_STATES:
        return None
    if record.get("logs_dropped"):
        return None  # its notes need the record's counts: the full body words them
    return record, job_dir


def show(word: str, sel: Selection, *, streams: tuple[str, ...] = STREAMS, as_json: bool = False,
         follow: bool = False) -> int | None:
    """Print a stopped job's logs as `logs_core.show_logs` prints them, for any selection, as
    text or `--json`, or `--follow` (which, for a job that will write no more, prints the end
    that a follow starts with): the exit code, or None for the full body (having printed
    nothing)."""
    found = _stopped_record(word)
    if found is None:
        return None
    record, job_dir = found
    logs = _read_streams(job_dir, streams)
    if logs is None:
        return None
    if follow:
        _print_followed(logs, sel)
        return 0
    chosen = [(stream, select_stream(data, sel)) for stream, data in logs]
    if as_json:
        from qex.cli.common import print_json
        from qex.core.record_json import display_record

        shown = display_record(record)
        document: dict[str, Any] = {key: shown.get(key) for key in ("id", "name", "state")}
        for stream, selected in chosen:
            path = os.path.join(job_dir, f"{stream}.log")
            document[stream] = stream_document(path, selected)
        document["incomplete"] = False  # a record with `logs_dropped` went to the full body
        print_json(document)
        return 0
    for stream, selected in chosen:
        print_stream(stream, selected, tagged=len(streams) > 1)
    return 0


def print_stream(stream: str, selected: Selected, *, tagged: bool,
                 notes: list[str] | tuple[str, ...] = ()) -> None:
    """One stream as `qex logs` prints it: its head when both streams are shown, its lines,
    then on stderr the `notes` on what the file lacks and the selection's notice."""
    from qex.cli.common import warn

    write_out((f"==> {stream} <==\n" if tagged else "") + selected.text)
    tag = f"[{stream}] " if tagged else ""
    for note in notes:
        warn(f"{tag}{note}")
    notice = selected.notice()
    if notice:
        warn(tag + notice.removeprefix("... "))


def select_stream(data: bytes, sel: Selection, default_tail: int = DEFAULT_TAIL) -> Selected:
    """`sel` applied to a whole stream's bytes."""
    from qex.core.logsel import select_lines

    return select_lines(_lines(data), sel, default_tail=default_tail)


def follow_lead(data: bytes, sel: Selection, lead: int) -> tuple[list[str], int, bytes]:
    """What `qex logs --follow` prints first from a stream's bytes: the last `lead` lines (or
    matches, with their context) that end in a newline; with the number of such lines, and
    the bytes of a last line still unfinished."""
    from qex.core.logsel import Selection, select_lines

    end = data.rfind(b"\n") + 1
    lines = _lines(data[:end])
    chosen = select_lines(lines, Selection(tail=lead, grep=sel.grep, fixed=sel.fixed,
                                           context=sel.context, number=sel.number))
    return chosen.lines, len(lines), data[end:]


def _print_followed(logs: list[tuple[str, bytes]], sel: Selection) -> None:
    """`qex logs --follow` of a job that will write no more (`log_follow.follow`'s output for
    it): each stream's lead, then each unfinished last line, through the stream's filter."""
    from qex.core.logsel import FOLLOW_LEAD, StreamFilter

    lead = sel.tail if sel.tail is not None else FOLLOW_LEAD
    prefixed = len(logs) > 1
    ends: list[tuple[str, list[str]]] = []
    for stream, data in logs:
        prefix = f"[{stream}] " if prefixed else ""
        shown, count, pending = follow_lead(data, sel, lead)
        if shown:
            write_out("".join(f"{prefix}{line}\n" for line in shown))
        if pending:
            text = pending.decode("utf-8", "surrogateescape")
            last = StreamFilter(sel, first_number=count + 1).feed(text)
            ends.append((prefix, last))
    for prefix, last in ends:
        if last:
            write_out("".join(f"{prefix}{line}\n" for line in last))


def stream_document(path: str, selected: Selected, dropped_bytes: int = 0,
                    dropped_lines: int = 0) -> dict[str, Any]:
    """The JSON object of one stream's selected lines, as `qex logs --json` and the `logs` of
    `qex status --json` give it, with what the limit removed from the stream."""
    return {
        "path": path,
        "text": for_json(selected.text),
        "total_lines": selected.total,
        "hidden_lines": selected.hidden,
        "matches": selected.matches,
        "matches_shown": selected.matches_shown if selected.matches is not None else None,
        "dropped_bytes": dropped_bytes,
        "dropped_lines": dropped_lines,
        "notice": selected.notice(),
    }


class StreamExcerpt:
    """One stream's chosen lines for `qex status` (`status_print.Excerpt` of a job whose
    output lost nothing to the limit)."""

    def __init__(self, stream: str, path: str, selected: Selected) -> None:
        self.stream, self.path, self.selected = stream, path, selected

    def as_text(self) -> tuple[str, list[str], list[str]]:
        """(stream, lines, notes), as `render_status.status_text` takes an excerpt."""
        notice = self.selected.notice()
        return self.stream, self.selected.lines, [notice] if notice else []

    def as_json(self) -> dict[str, Any]:
        """The object `status_print.Excerpt.to_dict` makes."""
        return stream_document(self.path, self.selected)


def status_excerpts(record: dict[str, Any], sel: Selection | None = None,
                    streams: tuple[str, ...] = STATUS_STREAMS) -> list[StreamExcerpt] | None:
    """The excerpts of a job's logs that `qex status` shows, as `status_print.load_excerpts`
    chooses them. Without a selection of lines: for a job that stopped without completing,
    the last lines of each stream with text, `STATUS_LINES` in all, half each when both have
    text; for other jobs none. None (read nothing more) for what the full body must word:
    output the limit cut, a stream still in its spill file, a file too large to read whole."""
    explicit = sel is not None and sel.explicit
    if not (explicit or (record.get("state") in FINAL_WORDS
                         and record.get("state") != COMPLETED)):
        return []
    if record.get("logs_dropped"):
        return None
    job_dir = _job_dir(record.get("id"))
    if job_dir is None:
        return None
    logs = _read_streams(job_dir, streams)
    if logs is None:
        return None
    from qex.core.logsel import Selection

    chosen = sel if sel is not None else Selection()
    if not explicit:
        logs = [(stream, data) for stream, data in logs if data]
    default_tail = STATUS_LINES // 2 if sum(1 for _, data in logs if data) > 1 else STATUS_LINES
    return [StreamExcerpt(stream, os.path.join(job_dir, f"{stream}.log"),
                          select_stream(data, chosen, default_tail)) for stream, data in logs]


#: How much of a log file `count_open` reads at a time.
_COUNT_CHUNK = 1 << 20


def count_open(handle: Any, size: int) -> int:
    """The number of lines in an open log file of `size` bytes (a last line without a
    newline counts), read from its start."""
    handle.seek(0)
    newlines = 0
    last = b""
    while True:
        chunk = handle.read(_COUNT_CHUNK)
        if not chunk:
            break
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
    return newlines + (1 if size and last != b"\n" else 0)


def count_lines(path: str | os.PathLike[str]) -> int:
    """The number of lines in a log file; 0 if there is none."""
    try:
        with open(path, "rb") as handle:
            return count_open(handle, os.fstat(handle.fileno()).st_size)
    except OSError:
        return 0


def output_hint(job_dir: str | os.PathLike[str], job_id: str) -> str | None:
    """What `submit --wait` says after the record: how many lines the job wrote, and the
    command that reads them (None when it never ran, so no log file exists)."""
    counts = {}
    for stream in STREAMS:
        path = os.path.join(job_dir, f"{stream}.log")
        if os.path.exists(path):
            counts[stream] = count_lines(path)
    if not counts:
        return None
    total = sum(counts.values())
    if total == 0:
        return f"the job wrote no output (`qex logs {job_id}` shows it when there is some)"
    parts = ", ".join(f"{n} on {stream}" for stream, n in counts.items() if n)
    noun, them = ("line", "it") if total == 1 else ("lines", "them")
    return f"the job wrote {total} {noun} ({parts}); read {them} with `qex logs {job_id}`"
