"""What `qex status` reads besides the record: the excerpts of a job's logs and its captured
environment; and the printing of one or more records.

Split from `qex.cli.render_status`, which stays pure and light for the fast path: this
module needs `pathlib`, the log selection and the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.cli.render_status import status_json, status_text
from qex.core import logsel
from qex.core import state_words as words
from qex.core.log_words import STATUS_LINES, STATUS_STREAMS
from qex.core.model import dataclass
from qex.core.record_view import JobView, view

if TYPE_CHECKING:
    from qex.core.record_view import RecordLike
    from qex.core.records import LogsDropped
    from qex.store.paths import Paths


@dataclass
class Excerpt:
    """The chosen lines of one stream, with what the log lost to `[logs] max_bytes`."""

    stream: str
    path: Path
    selected: logsel.Selected
    dropped: LogsDropped | None = None

    def to_dict(self) -> dict[str, Any]:
        from qex.cli import log_files

        return log_files.stream_json(self.path, self.selected, self.dropped, self.stream)

    def notes(self) -> list[str]:
        from qex.cli import log_files

        found = [self.selected.notice(), log_files.dropped_note(self.dropped, self.stream)]
        return [n for n in found if n]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def load_excerpts(job_dir: Path, record: RecordLike, *,
                  sel: logsel.Selection | None, streams: tuple[str, ...] = STATUS_STREAMS,
                  always: bool = False) -> list[Excerpt]:
    """The log excerpts `qex status` shows for `record`.

    Without an explicit selection, only a job that stopped without completing gets them: the
    last lines of stderr then stdout, 20 lines in all (10 each when both have text).
    """
    job = view(record)
    explicit = sel is not None and sel.explicit
    final_bad = job.final and job.state != words.COMPLETED
    if not (explicit or always or final_bad):
        return []
    from qex.cli import log_files

    chosen = sel if sel is not None else logsel.Selection()
    paths = {stream: log_files.log_path(job_dir, stream) for stream in streams}
    non_empty = [s for s in streams if _size(paths[s]) > 0]
    tail = STATUS_LINES // 2 if len(non_empty) > 1 else STATUS_LINES
    excerpts: list[Excerpt] = []
    for stream in streams:
        if stream not in non_empty and not explicit:
            continue
        selected = log_files.select_file(paths[stream], chosen, default_tail=tail)
        excerpts.append(Excerpt(stream, paths[stream], selected, job.logs_dropped))
    return excerpts




def read_env(job_dir: Path) -> dict[str, str]:
    """The captured environment from spec.json (0600; shown only with --show-env)."""
    from qex.store import atomic, jobs

    data = atomic.read_json(job_dir / jobs.SPEC)
    env = data.get("env") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def print_records(paths: Paths, records: list[dict[str, Any]], *, as_json: bool,
                  show_env: bool = False, no_logs: bool = False,
                  sel: logsel.Selection | None = None, streams: tuple[str, ...] = STATUS_STREAMS,
                  group: bool = False) -> None:
    """Print records as `qex status` does: text blocks, or JSON (an array for a group)."""
    import sys
    import time

    from qex.core.jsontext import dumps

    now = time.time()
    blocks: list[str] = []
    documents: list[dict[str, Any]] = []
    for record in records:
        job = JobView(record)
        job_dir = paths.job_dir(job.id)
        env = read_env(job_dir) if show_env else None
        excerpts = [] if no_logs else load_excerpts(job_dir, job, sel=sel, streams=streams)
        if as_json:
            documents.append(status_json(record, env=env, excerpts=excerpts))
        else:
            shown = [(e.stream, e.selected.lines, e.notes()) for e in excerpts]
            blocks.append(status_text(job, now=now, env=env, excerpts=shown))
    text = dumps(documents if group else documents[0]) if as_json else "\n\n".join(blocks)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
