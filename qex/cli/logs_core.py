"""The body of `qex logs`, without click: the click command and the fast path both call it.

Every mistake in the options is found before this runs (a `logsel.Selection` checks its
pattern when it is made), so the body reads and prints, and words only what it finds on disk.
"""

from __future__ import annotations

from typing import Any

from qex.cli.common import get_paths, print_json, warn


def show_logs(job: str, sel: Any, *, follow: bool, as_json: bool, hook: bool,
              only_stdout: bool, only_stderr: bool) -> None:
    """Print (or follow) the selected output of the job that `job` names."""
    from qex.cli.reach import open_connection
    from qex.cli.resolve import resolve

    paths = get_paths()
    conn = open_connection(paths, start=False)
    try:
        found = resolve(conn, paths, job, one_job=True)
    finally:
        if conn is not None:
            conn.close()
    record = found.jobs[0]
    job_id = str(record.get("id"))
    job_dir = paths.job_dir(job_id)

    from qex.store import atomic
    from qex.store.jobs import HOOK_LOG, STATUS

    fresh = atomic.read_json(job_dir / STATUS)
    if isinstance(fresh, dict):
        from qex.cli.stale import settle

        record = settle(paths, [fresh])[0][0]
    if hook:
        _show_hook(job_dir / HOOK_LOG, record, sel, as_json)
        return
    streams = ["stdout"] if only_stdout else ["stderr"] if only_stderr else ["stdout", "stderr"]
    if follow:
        _follow(job_dir, streams, sel, record)
        return
    _show(job_dir, streams, sel, record, as_json)


def _notes(job_dir: Any, stream: str, record: dict[str, Any]) -> list[str]:
    """What a stream's file lacks: output the limit removed, output still kept aside."""
    from qex.cli.log_files import dropped_note, pending_tail_note

    notes = [dropped_note(record.get("logs_dropped"), stream), pending_tail_note(job_dir, stream)]
    return [n for n in notes if n]


def _show(job_dir: Any, streams: list[str], sel: Any, record: dict[str, Any],
          as_json: bool) -> None:
    from qex.cli.fastlogs import print_stream
    from qex.cli.log_files import incomplete_note, log_path, select_file, stream_json
    from qex.core.record_json import display_record

    results = {stream: select_file(log_path(job_dir, stream), sel) for stream in streams}
    if as_json:
        shown = display_record(record)
        document: dict[str, Any] = {"id": shown.get("id"), "name": shown.get("name"),
                                    "state": shown.get("state")}
        for stream, selected in results.items():
            document[stream] = stream_json(log_path(job_dir, stream), selected,
                                           record.get("logs_dropped"), stream)
        document["incomplete"] = incomplete_note(record.get("logs_dropped")) is not None
        print_json(document)
        return
    for stream, selected in results.items():
        print_stream(stream, selected, tagged=len(streams) > 1,
                     notes=_notes(job_dir, stream, record))
    extra = incomplete_note(record.get("logs_dropped"))
    if extra:
        warn(extra)
    if record.get("state") == "queued" and not record.get("started_at"):
        warn("the job waits in the queue and has not run, so its logs are empty; "
             "`qex status` says what it waits for")


def _show_hook(path: Any, record: dict[str, Any], sel: Any, as_json: bool) -> None:
    from qex.cli.fastlogs import print_stream
    from qex.cli.log_files import select_file, stream_json

    if not path.exists():
        if as_json:
            print_json({"id": record.get("id"), "hook": None})
            return
        warn("qex ran no stop hook for this job, so there is no hook log to read; "
             "`[hooks] on_stop` in the configuration names the hook")
        return
    selected = select_file(path, sel)
    if as_json:
        print_json({"id": record.get("id"), "hook": stream_json(path, selected, None, "hook")})
        return
    print_stream("hook", selected, tagged=False)


def _follow(job_dir: Any, streams: list[str], sel: Any, record: dict[str, Any]) -> None:
    from qex.cli.log_files import incomplete_note
    from qex.cli.log_follow import follow
    from qex.core.logsel import FOLLOW_LEAD
    from qex.core.states import FINAL
    from qex.store import atomic
    from qex.store.jobs import STATUS

    tag = len(streams) > 1
    for stream in streams:
        for note in _notes(job_dir, stream, record):
            warn(f"[{stream}] {note}" if tag else note)

    def job_state() -> str | None:
        data = atomic.read_json(job_dir / STATUS)
        if isinstance(data, dict):
            from qex.cli.stale import settle

            # A job whose processes are gone writes no more output, record or not.
            return str(settle(get_paths(), [data])[0][0].get("state"))
        return None if not job_dir.exists() else str(record.get("state"))

    def final(state: str) -> bool:
        return state in {s.value for s in FINAL}

    lead = sel.tail if sel.tail is not None else FOLLOW_LEAD
    try:
        follow(job_dir, streams, sel, lead=lead, job_state=job_state, is_final=final)
    except KeyboardInterrupt:
        # The reader chose to stop reading; the job is not touched.
        raise SystemExit(0) from None
    if not job_dir.exists():
        raise SystemExit(1)  # follow() said that the record went away
    saved = atomic.read_json(job_dir / STATUS)
    extra = incomplete_note(saved.get("logs_dropped") if isinstance(saved, dict) else None)
    if extra:
        warn(extra)
