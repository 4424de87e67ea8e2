"""`qex list`: every job, its state, its claim, and why it waits or how it ended."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from qex.cli.common import die, get_paths, print_json, warn
from qex.cli.dir_options import directory_options


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the records as one JSON array.")
@click.option("--state", "states", multiple=True, metavar="STATE",
              help="Only jobs in this state; `done` = every final state, `active` = not final. "
                   "Repeat for several.")
@click.option("--tag", "tags", multiple=True, metavar="TAG",
              help="Only jobs that carry this tag. Repeat to require several.")
@click.option("--group", "group_word", metavar="GROUP",
              help="Only the stages of this group (a group id, its prefix or its name).")
@directory_options
def command(*, as_json: bool, states: tuple[str, ...], tags: tuple[str, ...],
            group_word: str | None, cwd_dir: str | None, under_dir: str | None) -> None:
    """List the jobs in submission order, with their claims and why each waits or how it
    ended. A paused queue is reported on stderr first, so an empty morning has a cause."""
    from qex.cli import job_filters as jf
    from qex.cli.queue_lines import pause_lines
    from qex.cli.reach import list_jobs, open_connection, pause_state
    from qex.cli.record_view import display_record, sort_key
    from qex.cli.render_table import render_jobs, terminal_width, use_color
    from qex.core.states import State, parse_state_filter

    wanted: set[State] = set()
    for word in states:
        try:
            wanted |= parse_state_filter(word)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--state") from None

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    with conn:
        records = list_jobs(conn)
        pauses = pause_state(conn)
    now = time.time()
    for line in pause_lines(pauses, now):
        warn(line)

    chosen: list[dict[str, Any]] = records
    if group_word is not None:
        groups = jf.groups_named(records, group_word)
        if not groups:
            die(f"there is no group with the id or the name `{group_word}`; run `qex list` to "
                "see the groups", 127)
        if len(groups) > 1 and not as_json:
            ids = ", ".join(sorted(groups))
            warn(f"`{group_word}` names {len(groups)} groups, and this list shows all of them: "
                 f"{ids}; give a group id to see one")
        members = {str(r.get("id")) for stages in groups.values() for r in stages}
        chosen = [r for r in chosen if str(r.get("id")) in members]
    if wanted:
        chosen = [r for r in chosen if jf.has_state(r, wanted)]
    if tags:
        chosen = [r for r in chosen if jf.has_tags(r, tags)]
    if cwd_dir is not None:
        here = jf.canonical_dir(cwd_dir)
        chosen = [r for r in chosen if jf.in_dir(r, here, below=False)]
    if under_dir is not None:
        top = jf.canonical_dir(under_dir)
        chosen = [r for r in chosen if jf.in_dir(r, top, below=True)]
    chosen = sorted(chosen, key=sort_key)

    if as_json:
        print_json([display_record(r) for r in chosen])
        return
    if not chosen:
        click.echo("no jobs")
        return
    lines = render_jobs(chosen, now=now, width=terminal_width(sys.stdout),
                        color=use_color(sys.stdout))
    click.echo("\n".join(lines))
