"""`qex logs ID`: the part of a job's output that you want, from disk, with no coordinator
needed. Every view says what it left out, so a part of a log is never taken for all of it."""

from __future__ import annotations

from typing import Any

import click

from qex.cli.common import get_paths, print_json, warn
from qex.cli.log_options import pop_selection, selection_options


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("logs")
@click.argument("job", metavar="ID", shell_complete=_complete)
@click.option("-f", "--follow", is_flag=True,
              help="Print the last lines, then each new line until the job stops.")
@click.option("--json", "as_json", is_flag=True, help="Print the selection as one JSON object.")
@click.option("--hook", is_flag=True,
              help="Read the output of the stop hook and qex's verdict on it.")
@click.option("--stdout", "only_stdout", is_flag=True, help="Only the standard output.")
@click.option("--stderr", "only_stderr", is_flag=True, help="Only the standard error.")
@selection_options
def command(*, job: str, follow: bool, as_json: bool, hook: bool, only_stdout: bool,
            only_stderr: bool, **selection: Any) -> None:
    """Print the output of one job: both streams, the last 500 lines of each, unless you
    choose lines. A job named by a group is refused: name one stage."""
    sel = pop_selection(selection)
    if follow and as_json:
        raise click.UsageError(
            "--json prints one document, and --follow never ends; give one of them")
    if only_stdout and only_stderr:
        raise click.UsageError(
            "--stdout and --stderr each choose one stream; give neither for both")
    if hook and (follow or only_stdout or only_stderr):
        raise click.UsageError("--hook reads the stop hook's own log; it does not take --follow, "
                               "--stdout or --stderr")
    if follow:
        try:
            sel.check_follow()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None

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


def _notes(job_dir: Any, stream: str, record: dict[str, Any], tagged: bool) -> list[str]:
    from qex.cli.log_files import dropped_note, pending_tail_note

    tag = f"[{stream}] " if tagged else ""
    notes = [dropped_note(record, stream), pending_tail_note(job_dir, stream)]
    return [f"{tag}{n}" for n in notes if n]


def _show(job_dir: Any, streams: list[str], sel: Any, record: dict[str, Any],
          as_json: bool) -> None:
    from qex.cli.log_files import incomplete_note, log_path, select_file, stream_json, write_out
    from qex.cli.record_view import display_record
    from qex.core.logsel import SelectionError

    results = {}
    for stream in streams:
        try:
            results[stream] = select_file(log_path(job_dir, stream), sel)
        except SelectionError as exc:
            raise click.UsageError(str(exc)) from None
    if as_json:
        shown = display_record(record)
        document: dict[str, Any] = {"id": shown.get("id"), "name": shown.get("name"),
                                    "state": shown.get("state")}
        for stream, selected in results.items():
            document[stream] = stream_json(log_path(job_dir, stream), selected, record, stream)
        document["incomplete"] = incomplete_note(record) is not None
        print_json(document)
        return
    tagged = len(streams) > 1
    for stream, selected in results.items():
        if tagged:
            write_out(f"==> {stream} <==\n")
        write_out(selected.text)
        for note in _notes(job_dir, stream, record, tagged):
            warn(note)
        notice = selected.notice()
        if notice:
            warn(("[" + stream + "] " if tagged else "") + notice.removeprefix("... "))
    extra = incomplete_note(record)
    if extra:
        warn(extra)
    if record.get("state") == "queued" and not record.get("started_at"):
        warn("the job waits in the queue and has not run, so its logs are empty; "
             "`qex status` says what it waits for")


def _show_hook(path: Any, record: dict[str, Any], sel: Any, as_json: bool) -> None:
    from qex.cli.log_files import select_file, stream_json, write_out

    if not path.exists():
        if as_json:
            print_json({"id": record.get("id"), "hook": None})
            return
        warn("qex ran no stop hook for this job, so there is no hook log to read; "
             "`[hooks] on_stop` in the configuration names the hook")
        return
    selected = select_file(path, sel)
    if as_json:
        print_json({"id": record.get("id"), "hook": stream_json(path, selected, {}, "hook")})
        return
    write_out(selected.text)
    notice = selected.notice()
    if notice:
        warn(notice.removeprefix("... "))


def _follow(job_dir: Any, streams: list[str], sel: Any, record: dict[str, Any]) -> None:
    from qex.cli.log_files import incomplete_note
    from qex.cli.log_follow import follow
    from qex.core.logsel import FOLLOW_LEAD, SelectionError
    from qex.core.states import FINAL
    from qex.store import atomic
    from qex.store.jobs import STATUS

    for stream in streams:
        for note in _notes(job_dir, stream, record, len(streams) > 1):
            warn(note)

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
    except SelectionError as exc:
        raise click.UsageError(str(exc)) from None
    except KeyboardInterrupt:
        # The reader chose to stop reading; the job is not touched.
        raise SystemExit(0) from None
    if not job_dir.exists():
        raise SystemExit(1)  # follow() said that the record went away
    extra = incomplete_note(atomic.read_json(job_dir / STATUS) or {})
    if extra:
        warn(extra)
