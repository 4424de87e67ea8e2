"""`qex clean`: delete the records of jobs that stopped, by id, by state, by age or by
directory. A record that unfinished work still needs stays, and the command says why."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from qex.cli.common import canonical_dir, die, get_paths
from qex.cli.dir_options import directory_options

#: `--auto`: the jobs of this directory and below that stopped more than an hour ago.
AUTO_AGE = 3600.0


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from qex.cli.complete_ids import complete_ids

    return complete_ids(ctx, param, incomplete)


@click.command("clean")
@click.argument("words", nargs=-1, metavar="[ID|STATE]...", shell_complete=_complete)
@click.option("--all", "all_jobs", is_flag=True,
              help="Every job that stopped, of every agent of this user.")
@click.option("--state", "states", multiple=True, metavar="STATE",
              help="Jobs that stopped in this state (`done` = any final state). Repeatable.")
@click.option("--older-than", "older_than", metavar="TIME",
              help="Jobs that stopped at least this long ago, such as 7d.")
@directory_options
@click.option("--auto", is_flag=True,
              help="Short for: jobs here and below that stopped more than 1h ago.")
def command(*, words: tuple[str, ...], all_jobs: bool, states: tuple[str, ...],  # noqa: C901, PLR0912 (the options of `qex clean` in turn)
            older_than: str | None, cwd_dir: str | None, under_dir: str | None,
            auto: bool) -> None:
    """Delete job records (the job directory with its logs). A word is a job id, a name or
    a group; a state word such as `done` or `failed` selects every job in that state. The
    filters only ever select jobs that stopped, and together they must all hold. This does
    not stop a running job."""
    from qex.cli.reach import open_connection
    from qex.cli.resolve import resolve
    from qex.core import job_filters as jf
    from qex.core.states import FINAL, Exit, State, parse_state_filter
    from qex.core.units import UnitError, parse_duration

    if auto and (all_jobs or states or older_than):
        raise click.UsageError("--auto already means `--state done --older-than 1h --under .`; "
                               "give it alone, or give those options yourself")
    wanted: set[State] = set()
    for word in states:
        try:
            wanted |= parse_state_filter(word)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--state") from None
    state_words: list[str] = []
    job_words: list[str] = []
    for word in words:
        try:
            wanted |= parse_state_filter(word)
            state_words.append(word)
        except ValueError:
            job_words.append(word)
    age: float | None = None
    if older_than is not None:
        try:
            age = parse_duration(older_than, what="age") or 0.0
        except UnitError as exc:
            raise click.BadParameter(str(exc), param_hint="--older-than") from None
    if auto:
        wanted = set(FINAL)
        age = AUTO_AGE
        under_dir = under_dir or "."
    filtering = bool(all_jobs or wanted or age is not None or cwd_dir is not None
                     or under_dir is not None)
    if not filtering and not job_words:
        raise click.UsageError("say which records to delete: give ids or names, a state such as "
                               "`done`, or --all, --older-than, --cwd, --under or --auto")

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        records = conn.list_jobs()
        for word in state_words:
            if jf.names_something(records, word):
                die(f"`{word}` is a state and also names a job or a group, so qex does not "
                    f"guess; give the job's id to delete that job, or `--state {word}` to "
                    "delete every job in that state", Exit.NO_SUCH_JOB)
        explicit: list[dict[str, Any]] = []
        for word in job_words:
            explicit.extend(resolve(conn, paths, word).jobs)
        picked: list[dict[str, Any]] = []
        if filtering:
            now = time.time()
            here = canonical_dir(cwd_dir) if cwd_dir is not None else None
            top = canonical_dir(under_dir) if under_dir is not None else None
            for record in records:
                if not jf.is_final(record):
                    continue
                if wanted and not jf.has_state(record, wanted):
                    continue
                if age is not None and (jf.age_secs(record, now) or 0.0) < age:
                    continue
                if here is not None and not jf.in_dir(record, here, below=False):
                    continue
                if top is not None and not jf.in_dir(record, top, below=True):
                    continue
                picked.append(record)
        code = _delete(conn, paths, explicit, picked)
    sys.exit(code)


def _delete(conn: Any, paths: Any, explicit: list[dict[str, Any]],
            picked: list[dict[str, Any]]) -> int:
    """Delete each record once, in one request (`reach.cleaned`); report what went, what
    stayed and why."""
    from qex.cli.common import warn
    from qex.cli.disk_usage import tree_size
    from qex.cli.exits import code_for
    from qex.cli.reach import cleaned
    from qex.core import protocol
    from qex.core.record_view import job_label, view
    from qex.core.units import format_size

    code = 0
    deleted = 0
    freed = 0
    stayed: list[tuple[dict[str, Any], str]] = []
    named = {str(r.get("id")) for r in explicit}
    chosen: dict[str, dict[str, Any]] = {}  # each job once, in the order named
    for record in [*explicit, *picked]:
        chosen.setdefault(str(record.get("id")), record)
    sizes = [tree_size(paths.job_dir(job_id)) for job_id in chosen]
    refusals = cleaned(conn, list(chosen))
    for (job_id, record), size, failed in zip(chosen.items(), sizes, refusals, strict=True):
        if failed is None:
            deleted += 1
            freed += size
            continue
        if job_id in named:
            warn(failed.message)
            if code == 0:
                code = code_for(failed, "clean")
        elif failed.kind != protocol.NO_SUCH_JOB:
            stayed.append((record, failed.message))
    noun = "record" if deleted == 1 else "records"
    click.echo(f"qex deleted {deleted} {noun} and freed {format_size(freed)}.")
    if stayed:
        noun = "record" if len(stayed) == 1 else "records"
        click.echo(f"{len(stayed)} {noun} stayed, because work that has not stopped needs them:")
        for record, message in stayed:
            click.echo(f"  {job_label(view(record))}: {message}")
        click.echo("Each of them goes once the work that holds it stops.")
    return code
